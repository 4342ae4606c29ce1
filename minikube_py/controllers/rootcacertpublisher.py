"""The root CA certificate publisher: every namespace has a ConfigMap kube-root-ca.crt
holding the cluster's CA.

    namespace added or updated ---------------+
    kube-root-ca.crt changed or deleted ------+--> queue the namespace --> sync: create
                                                   the ConfigMap, or put back its ca.crt

Pods trust the API server with it: the ServiceAccount admission plugin mounts it next to
the pod's token, at /var/run/secrets/kubernetes.io/serviceaccount/ca.crt. The CA comes
from the controller-manager's --root-ca-file; without one, the controller does not run.
Upstream: pkg/controller/certificates/rootcacertpublisher/publisher.go.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.client.errors import AlreadyExists, Forbidden, NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.endpoints import NAMESPACE_TERMINATING_CAUSE, has_status_cause

CONFIG_MAP = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using "
    "internal endpoints such as the internal service IP or kubernetes.default.svc. No "
    "other usage is guaranteed across distributions of Kubernetes clusters.")


class RootCACertPublisher(Controller):
    """Keep kube-root-ca.crt in every namespace (keys: namespace)."""

    name = "root-ca-cert-publisher"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.root_ca = ctx.options.root_ca
        self.config_maps_api = self.client.resource("configmaps")
        namespaces = self.informer("namespaces")
        config_maps = self.informer("configmaps")
        self.namespaces = namespaces.store
        self.config_maps = config_maps.store
        namespaces.add_event_handler(EventHandler(
            on_add=self.enqueue, on_update=lambda _old, new: self.enqueue(new)))
        config_maps.add_event_handler(EventHandler(
            on_update=lambda _old, new: self.config_map_changed(new),
            on_delete=self.config_map_changed))

    def config_map_changed(self, config_map: Obj) -> None:
        metadata = config_map["metadata"]
        if metadata["name"] == CONFIG_MAP:
            self.queue.add(metadata["namespace"])

    async def run(self, workers: int | None = None) -> None:
        if not self.root_ca:
            return  # no --root-ca-file: nothing to publish
        await super().run(workers)

    async def sync(self, key: str) -> None:
        """syncNamespace: create the ConfigMap, or restore its data and description."""
        namespace = self.namespaces.get(key)
        if namespace is None or (namespace.get("status") or {}).get("phase") != "Active":
            return
        data = {"ca.crt": self.root_ca}
        current = self.config_maps.get_by_name(key, CONFIG_MAP)
        if current is None:
            wanted = {"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": CONFIG_MAP, "namespace": key,
                                   "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                      "data": data}
            try:
                await self.config_maps_api.create(wanted)
            except AlreadyExists:
                return
            except Forbidden as error:
                if not has_status_cause(error, NAMESPACE_TERMINATING_CAUSE):
                    raise
            return
        annotations = current["metadata"].get("annotations") or {}
        if current.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION) == DESCRIPTION:
            return
        updated = {**current, "data": data, "metadata": {
            **current["metadata"],
            "annotations": {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}}}
        updated.pop("binaryData", None)
        try:
            await self.config_maps_api.update(updated)
        except NotFound:
            self.queue.add(key)
