"""Who may use the kubelet's API (upstream pkg/kubelet/server/auth.go).

The kubelet runs containers as root: its port must not answer just anyone. Every
request but /healthz passes two questions, both answered by the API server:

    who?   a client certificate signed by --client-ca-file (CN user, O groups),
           or a bearer token, checked with a TokenReview (--authentication-token-webhook),
           or else system:anonymous (401 with --anonymous-auth=false)
    may they?  with --authorization-mode=Webhook, a SubjectAccessReview for
           the verb (GET get, POST create, PUT update, PATCH patch, DELETE delete)
           on nodes/<subresource> named after this node:
               /stats/...   -> nodes/stats      /metrics/... -> nodes/metrics
               /logs/...    -> nodes/log        /spec/...    -> nodes/spec
               anything else (exec, containerLogs, pods, ...)  -> nodes/proxy
           refused: 403 "Forbidden (user=..., verb=..., resource=nodes,
                    subresource=...)"

Answers are cached as upstream's defaults say: a token for 2 minutes, an allowed
decision for 5 minutes, a refusal for 30 seconds. /healthz is left open (upstream
serves it on a port of its own, 10248, without either question).
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web

from minikube_py.api import Obj
from minikube_py.security.pki import peer_subject

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

TOKEN_TTL = 120.0
ALLOWED_TTL = 300.0
DENIED_TTL = 30.0
AUTHENTICATED = "system:authenticated"
VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
         "DELETE": "delete"}
SUBRESOURCES = (("/stats", "stats"), ("/metrics", "metrics"), ("/logs", "log"),
                ("/spec", "spec"))
UNAUTHENTICATED_PATHS = ("/healthz",)


class ReviewClient(Protocol):
    """The kubelet's API client, as far as reviews go."""

    async def request(self, method: str, path: str, *, body: Any = None) -> Obj: ...


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict, hash=False)


ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))


@dataclass
class KubeletAuthConfig:
    """The kubelet's authentication and authorization flags."""

    anonymous: bool = True
    token_webhook: bool = False
    authorization_mode: str = "AlwaysAllow"  # or Webhook


def subresource_of(path: str) -> str:
    """The nodes subresource a kubelet path is authorized as."""
    for prefix, subresource in SUBRESOURCES:
        if path == prefix or path.startswith(prefix + "/"):
            return subresource
    return "proxy"


class KubeletAuth:
    """The filter in front of every kubelet endpoint."""

    def __init__(self, config: KubeletAuthConfig, client: ReviewClient, node_name: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.client = client
        self.node_name = node_name
        self.clock = clock
        self._tokens: dict[str, tuple[float, User | None]] = {}
        self._decisions: dict[tuple[Any, ...], tuple[float, bool, str]] = {}

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in UNAUTHENTICATED_PATHS:
            return await handler(request)
        user = await self.authenticate(request)
        if user is None:
            return web.Response(status=401, text="Unauthorized")
        verb = VERBS.get(request.method, request.method.lower())
        subresource = subresource_of(request.path)
        allowed, reason = await self.authorize(user, verb, subresource, request.path)
        if not allowed:
            message = (f"Forbidden (user={user.name}, verb={verb}, resource=nodes, "
                       f"subresource={subresource})")
            log.info('{"msg": "kubelet request forbidden", "user": "%s", "path": "%s", '
                     '"reason": "%s"}', user.name, request.path, reason)
            return web.Response(status=403, text=message)
        return await handler(request)

    # -- who? -----------------------------------------------------------------------------

    async def authenticate(self, request: web.Request) -> User | None:
        """The request's user, or None for 401."""
        transport = request.transport
        ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
        if isinstance(ssl_object, ssl.SSLObject | ssl.SSLSocket):
            subject = peer_subject(ssl_object.getpeercert())
            if subject is not None:
                return User(subject[0], (*subject[1], AUTHENTICATED))
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            if not self.config.token_webhook:
                return None
            return await self._review_token(token.strip())
        return ANONYMOUS if self.config.anonymous else None

    async def _review_token(self, token: str) -> User | None:
        now = self.clock()
        cached = self._tokens.get(token)
        if cached is not None and cached[0] > now:
            return cached[1]
        review = await self.client.request(
            "POST", "/apis/authentication.k8s.io/v1/tokenreviews",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                  "spec": {"token": token}})
        status = review.get("status") or {}
        user = None
        if status.get("authenticated"):
            info = status.get("user") or {}
            user = User(info.get("username", ""), tuple(info.get("groups") or ()),
                        info.get("uid", ""), info.get("extra") or {})
        self._tokens[token] = (now + TOKEN_TTL, user)
        return user

    # -- may they? ------------------------------------------------------------------------

    async def authorize(self, user: User, verb: str, subresource: str, path: str
                        ) -> tuple[bool, str]:
        if self.config.authorization_mode != "Webhook":
            return True, ""
        key = (user.name, user.groups, verb, subresource)
        now = self.clock()
        cached = self._decisions.get(key)
        if cached is not None and cached[0] > now:
            return cached[1], cached[2]
        spec: Obj = {"user": user.name, "groups": list(user.groups),
                     "resourceAttributes": {"verb": verb, "group": "", "version": "v1",
                                            "resource": "nodes", "subresource": subresource,
                                            "name": self.node_name}}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = user.extra
        review = await self.client.request(
            "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            body={"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": spec})
        status = review.get("status") or {}
        allowed = bool(status.get("allowed"))
        reason = str(status.get("reason") or "")
        self._decisions[key] = (now + (ALLOWED_TTL if allowed else DENIED_TTL), allowed, reason)
        return allowed, reason
