"""The stores of definitions and of custom resources: the generic store, with the two
steps upstream's apiextensions storage adds (pkg/registry/customresourcedefinition/
etcd.go's Delete, and the crdHandler's refusal to create while a definition goes)."""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj, errors
from minikube_py.apiserver.apiextensions.naming import set_condition
from minikube_py.apiserver.registry.store import DeleteOptions, Store

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


class CustomResourceDefinitionStore(Store):
    """Deleting a definition first adds the finalizer customresourcecleanup, so that
    its instances go before it does (the finalizer controller removes it)."""

    def _mark_for_deletion(self, obj: Obj, options: DeleteOptions) -> Obj | None:
        metadata = obj["metadata"]
        if not metadata.get("deletionTimestamp"):
            finalizers = list(metadata.get("finalizers") or [])
            if CLEANUP_FINALIZER not in finalizers:
                metadata["finalizers"] = [*finalizers, CLEANUP_FINALIZER]
            set_condition(obj, "Terminating", True, "InstanceDeletionPending",
                          "CustomResourceDefinition marked for deletion; CustomResource "
                          "deletion will begin soon")
        return super()._mark_for_deletion(obj, options)


class CustomResourceStore(Store):
    """The generic store of one custom resource version; creates are refused while its
    definition is being deleted."""

    terminating = False

    async def create(self, namespace: str, obj: Obj, **kwargs: Any) -> Obj:
        if self.terminating:
            raise errors.APIError(
                405, "MethodNotAllowed",
                "create not allowed while custom resource definition is terminating")
        return await super().create(namespace, obj, **kwargs)
