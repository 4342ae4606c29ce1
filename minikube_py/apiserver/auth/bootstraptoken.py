"""Bootstrap token authentication, --enable-bootstrap-token-auth (upstream
plugin/pkg/auth/authenticator/token/bootstrap).

    Authorization: Bearer abcdef.0123456789abcdef
      -> the token's shape: [a-z0-9]{6}.[a-z0-9]{16}, else not ours
      -> the Secret kube-system/bootstrap-token-abcdef, from the watch cache
      -> not being deleted; type bootstrap.kubernetes.io/token
      -> token-secret matches (compared in constant time), token-id matches
      -> not expired; usage-bootstrap-authentication is "true"
      -> auth-extra-groups all of the form system:bootstrappers:*
      -> user system:bootstrap:abcdef, groups system:bootstrappers and the extra ones

How a node joins: kubeadm writes such a Secret, the new node's kubelet uses the token to
ask for its own certificate, and RBAC gives the token's groups just that. Every
failure is 401 to the client; why is only logged, as upstream logs it.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from minikube_py.api import Obj
from minikube_py.api import bootstraptoken as bt
from minikube_py.apiserver.auth.authentication import AUTHENTICATED, UserInfo

log = logging.getLogger("minikube_py.apiserver")


class BootstrapTokenAuthenticator:
    """Checks bootstrap tokens against their Secrets in kube-system."""

    def __init__(self, secret: Callable[[str], Obj | None],
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        """`secret`: the kube-system Secret of that name, None if there is none (upstream
        reads a lister; here the API server's watch cache)."""
        self.secret = secret
        self.clock = clock

    def authenticate(self, token: str) -> UserInfo:
        """AuthenticateToken: the user the token names; ValueError saying why not."""
        try:
            token_id, token_secret = bt.parse_token(token)
        except ValueError:
            raise ValueError("not a bootstrap token") from None
        name = bt.secret_name(token_id)
        secret = self.secret(name)
        if secret is None:
            raise _refused(name, "does not exist")
        if secret["metadata"].get("deletionTimestamp"):
            raise _refused(name, "is deleted and awaiting removal")
        if secret.get("type") != bt.SECRET_TYPE or not secret.get("data"):
            raise _refused(name, f"has invalid type, expected {bt.SECRET_TYPE}")
        if not hmac.compare_digest(bt.secret_value(secret, bt.TOKEN_SECRET_KEY).encode(),
                                   token_secret.encode()):
            raise _refused(name, f"has invalid value for key {bt.TOKEN_SECRET_KEY}")
        if bt.secret_value(secret, bt.TOKEN_ID_KEY) != token_id:
            raise _refused(name, f"has invalid value for key {bt.TOKEN_ID_KEY}")
        if bt.time_to_expiry(secret, self.clock())[1]:
            raise _refused(name, "has expired")
        if bt.secret_value(secret, bt.USAGE_AUTHENTICATION) != "true":
            raise _refused(name, f"is not marked {bt.USAGE_AUTHENTICATION}=true")
        try:
            groups = bt.token_groups(secret)
        except ValueError as error:
            raise _refused(name, f"has invalid value for key {bt.EXTRA_GROUPS_KEY}: "
                                 f"{error}") from None
        return UserInfo(bt.USER_PREFIX + token_id, groups=(*groups, AUTHENTICATED))


def _refused(name: str, why: str) -> ValueError:
    """tokenErrorf: log which check failed (never the secret); the error to raise."""
    log.info("bootstrap secret %s/%s matching bearer token %s", bt.TOKEN_NAMESPACE, name,
             why)
    return ValueError("invalid bootstrap token")
