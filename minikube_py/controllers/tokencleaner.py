"""The token cleaner: bootstrap token Secrets are deleted once they expire (upstream
pkg/controller/bootstrap/tokencleaner.go).

    token Secret (type bootstrap.kubernetes.io/token, in kube-system) added or updated
      --> queue "kube-system/bootstrap-token-<id>"
    sync: expired (its `expiration` has passed, or does not parse)
            -> DELETE, with the uid as precondition (a Secret recreated under that name
               meanwhile is not ours to delete)
          expires later -> look again then
          no expiration -> nothing, ever

The API server refuses an expired token anyway (apiserver/auth/bootstraptoken.py); this
controller tidies up, so `kubeadm token list` shows only live tokens. Off unless named:
`--controllers=*,tokencleaner`.
"""

from __future__ import annotations

import logging

from minikube_py.api import Obj
from minikube_py.api import bootstraptoken as bt
from minikube_py.client.errors import Conflict, NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import split_key
from minikube_py.controllers.base import Controller, ControllerContext

log = logging.getLogger(__name__)


class TokenCleaner(Controller):
    """Delete expired bootstrap token Secrets (keys: "kube-system/<name>")."""

    name = "tokencleaner"
    enabled_by_default = False

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        secrets = self.informer("secrets")
        self.secrets = secrets.store
        self.secrets_api = self.client.resource("secrets")
        secrets.add_event_handler(EventHandler(
            on_add=self._secret_changed,
            on_update=lambda _old, new: self._secret_changed(new)))

    def _secret_changed(self, secret: Obj) -> None:
        if bt.is_token_secret(secret):
            self.enqueue(secret)

    async def sync(self, key: str) -> None:
        """evalSecret: delete the Secret if it expired, else come back when it does."""
        secret = self.secrets.get(key)
        if secret is None or secret.get("type") != bt.SECRET_TYPE:
            return
        remaining, expired = bt.time_to_expiry(secret, self.now())
        if not expired:
            if remaining > 0:
                self.queue.add_after(key, remaining)
            return
        namespace, name = split_key(key)
        log.info("tokencleaner: deleting expired bootstrap token Secret %s", key)
        try:
            await self.secrets_api.delete(name, namespace,
                                          preconditions={"uid": secret["metadata"]["uid"]})
        except (NotFound, Conflict):
            return  # gone already, or another Secret now has the name
