"""Authentication: who is asking (upstream k8s.io/apiserver/pkg/authentication).

    request
      -> a client certificate, which TLS already checked against --client-ca-file:
         the subject's CN is the user, each O a group
      -> else `Authorization: Bearer <token>`, tried in upstream's order: the
         --token-auth-file, then ServiceAccount tokens (serviceaccount_tokens.py), then
         bootstrap tokens (bootstraptoken.py, with --enable-bootstrap-token-auth);
         the first that knows the token names the user
      -> else nobody: system:anonymous, in the group system:unauthenticated (with
         --anonymous-auth, the default), or 401 without it
    A credential that does not check out is 401, even when anonymous requests are allowed:
    the request said who it was, wrongly. Everyone authenticated is also in
    system:authenticated.

Authentication only names the user; what they may do is authorization's question
(authorization.py).
"""

from __future__ import annotations

import csv
import ssl
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from minikube_py.api import errors
from minikube_py.security.pki import peer_subject

AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
# What a TLS connection's "ssl_object" is (a tuple: isinstance of an `X | Y` union is
# slower, and the union would be built again on every request).
SSL_CONNECTIONS = (ssl.SSLObject, ssl.SSLSocket)


@dataclass(frozen=True)
class UserInfo:
    """What the rest of the request pipeline knows of the user (user.Info)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False)


ANONYMOUS = UserInfo("system:anonymous", groups=(UNAUTHENTICATED,))


def unauthorized() -> errors.APIError:
    """401, worded as upstream: the message says nothing about why."""
    return errors.APIError(401, "Unauthorized", "Unauthorized", {})


def read_token_file(path: Path) -> dict[str, UserInfo]:
    """--token-auth-file: CSV lines `token,user,uid[,"group1,group2"]`."""
    tokens: dict[str, UserInfo] = {}
    with path.open(newline="") as file:
        for number, row in enumerate(csv.reader(file), 1):
            if not row or row[0].startswith("#"):
                continue
            if len(row) < 3 or not row[0] or not row[1]:
                raise ValueError(f"{path}:{number}: want token,user,uid[,groups]")
            groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if (
                len(row) > 3) else ()
            tokens[row[0]] = UserInfo(row[1], row[2], groups)
    return tokens


class Authenticator:
    """The chain above, for one API server."""

    def __init__(self, tokens: dict[str, UserInfo] | None = None, *,
                 anonymous: bool = True,
                 service_account_tokens: Callable[[str], UserInfo] | None = None,
                 bootstrap_tokens: Callable[[str], UserInfo] | None = None) -> None:
        """`service_account_tokens`: checks a ServiceAccount JWT (serviceaccount_tokens.py) and
        names its user; `bootstrap_tokens` the same for a bootstrap token
        (bootstraptoken.py). Each raises ValueError when the token is bad."""
        self.tokens = tokens or {}
        self.anonymous = anonymous
        self.service_account_tokens = service_account_tokens
        self.bootstrap_tokens = bootstrap_tokens
        # The user a connection's certificate names, read once per connection (keep-alive
        # connections carry many requests; decoding the certificate each time costs more
        # than authorizing the request).
        self._by_connection: weakref.WeakKeyDictionary[Any, UserInfo | None] = (
            weakref.WeakKeyDictionary())

    def authenticate(self, request: web.BaseRequest) -> UserInfo:
        """The request's user; 401 (APIError) when its credential is bad or missing and
        anonymous requests are off."""
        certified = self._certified_user(request)
        if certified is not None:
            return certified
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            try:
                return self.authenticate_token(token.strip())
            except ValueError:
                raise unauthorized() from None
        if self.anonymous:
            return ANONYMOUS
        raise unauthorized()


    def authenticate_token(self, token: str) -> UserInfo:
        """The user a bearer token names (the token file first, then ServiceAccount
        tokens, then bootstrap tokens); ValueError saying why not (a TokenReview's
        error)."""
        user = self.tokens.get(token)
        if user is not None:
            return UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED), user.extra)
        if self.service_account_tokens is not None and token.count(".") == 2:
            return self.service_account_tokens(token)
        if self.bootstrap_tokens is not None and token.count(".") == 1:
            return self.bootstrap_tokens(token)
        raise ValueError("invalid bearer token")

    def _certified_user(self, request: web.BaseRequest) -> UserInfo | None:
        """The user the connection's client certificate names (None without one)."""
        transport = request.transport
        ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
        if ssl_object is None or not isinstance(ssl_object, SSL_CONNECTIONS):
            return None
        if ssl_object in self._by_connection:
            return self._by_connection[ssl_object]
        subject = peer_subject(ssl_object.getpeercert())
        user = None if subject is None else UserInfo(subject[0],
                                                     groups=(*subject[1], AUTHENTICATED))
        self._by_connection[ssl_object] = user
        return user
