"""The bootstrap signer: kube-public/cluster-info carries one signature per signing
token, so a joining node can tell the ConfigMap is genuine (upstream
pkg/controller/bootstrap/bootstrapsigner.go).

    cluster-info added or updated ---------------------------+
    token Secret (kube-system) added, updated or deleted ----+--> queue "kube-public/
                                                                  cluster-info"
    sync: the `kubeconfig` key is the content
          for each token Secret that may sign (usage-bootstrap-signing "true", its name
          matching its token-id, not expired):
              jws-kubeconfig-<id> = detached JWS of the content, HS256 keyed with the
                                    token's secret half (api/bootstraptoken.py)
          signatures of tokens that are gone (or no longer sign) are removed
          anything changed -> UPDATE the ConfigMap

A node that knows a token reads cluster-info anonymously, before it trusts the cluster's
CA, and checks the signature under its token's id: only someone who knows the token
could have made it (cluster/bootstraptoken.py `discover`). The signer never creates
cluster-info (kubeadm does); without it there is nothing to sign. Off unless named:
`--controllers=*,bootstrapsigner`.
"""

from __future__ import annotations

import logging

from minikube_py.api import Obj
from minikube_py.api import bootstraptoken as bt
from minikube_py.client.errors import Conflict, NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.controllers.base import Controller, ControllerContext

log = logging.getLogger(__name__)

CONFIG_MAP_KEY = f"{bt.CLUSTER_INFO_NAMESPACE}/{bt.CLUSTER_INFO}"


class BootstrapSigner(Controller):
    """Keep cluster-info's jws-kubeconfig-<id> signatures current (one key)."""

    name = "bootstrapsigner"
    enabled_by_default = False
    workers = 1  # one ConfigMap: its updates are serialized, as upstream's single worker

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        config_maps = self.informer("configmaps")
        secrets = self.informer("secrets")
        self.config_maps = config_maps.store
        self.secrets = secrets.store
        self.config_maps_api = self.client.resource("configmaps")
        config_maps.add_event_handler(EventHandler(
            on_add=self._config_map_changed,
            on_update=lambda _old, new: self._config_map_changed(new)))
        secrets.add_event_handler(EventHandler(
            on_add=self._secret_changed,
            on_update=lambda _old, new: self._secret_changed(new),
            on_delete=self._secret_changed))

    def _config_map_changed(self, config_map: Obj) -> None:
        metadata = config_map["metadata"]
        if (metadata.get("namespace"), metadata["name"]) == (bt.CLUSTER_INFO_NAMESPACE,
                                                            bt.CLUSTER_INFO):
            self.queue.add(CONFIG_MAP_KEY)

    def _secret_changed(self, secret: Obj) -> None:
        if bt.is_token_secret(secret):
            self.queue.add(CONFIG_MAP_KEY)

    async def sync(self, key: str) -> None:
        """signConfigMap: recompute every signature; update the ConfigMap if any
        differs, is new or is gone."""
        current = self.config_maps.get(key)
        if current is None:
            return
        data = current.get("data") or {}
        content = data.get(bt.KUBECONFIG_KEY)
        if content is None:
            log.debug("bootstrapsigner: %s has no %s key", key, bt.KUBECONFIG_KEY)
            return
        wanted = {name: value for name, value in data.items()
                  if not name.startswith(bt.JWS_PREFIX)}
        for token_id, token_secret in self._signing_tokens().items():
            wanted[bt.JWS_PREFIX + token_id] = bt.detached_signature(
                content, token_id, token_secret)
        if wanted == data:
            return
        try:
            await self.config_maps_api.update({**current, "data": wanted})
        except (Conflict, NotFound):
            return  # changed or gone meanwhile: its informer event queues it again

    def _signing_tokens(self) -> dict[str, str]:
        """getTokens: token id -> secret half, for each token Secret that may sign."""
        tokens: dict[str, str] = {}
        for secret in self.secrets.list(bt.TOKEN_NAMESPACE):
            if secret.get("type") != bt.SECRET_TYPE:
                continue
            token = bt.signing_token(secret, self.now())
            if token is not None:  # one per id: a Secret's name is its token's id
                tokens[token[0]] = token[1]
        return tokens
