"""The stores of definitions and of custom resources: the generic store, with the two
steps upstream's apiextensions storage adds (pkg/registry/customresourcedefinition/
etcd.go's Delete, and the crdHandler's refusal to create while a definition goes)."""

from __future__ import annotations

import dataclasses
from typing import Any

from minikube_py.api import Obj, errors
from minikube_py.api.selectors import FieldSelector
from minikube_py.apiserver.apiextensions.naming import set_condition
from minikube_py.apiserver.registry.store import DeleteOptions, ListOptions, ListResult, Store

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
    definition is being deleted. A version whose objects a webhook converts selects by
    field on the converted objects: its selectable fields may not exist in the stored
    version (upstream's storage per version decodes into that version first)."""

    terminating = False

    async def create(self, namespace: str, obj: Obj, **kwargs: Any) -> Obj:
        if self.terminating:
            raise errors.APIError(
                405, "MethodNotAllowed",
                "create not allowed while custom resource definition is terminating")
        return await super().create(namespace, obj, **kwargs)

    async def list(self, namespace: str, options: ListOptions, *, raw: bool = False
                   ) -> ListResult:
        """List; selected by field after conversion when the strategy asks for it (the
        items are then in the served version already)."""
        if not self.strategy.selects_after_conversion or options.field_selector.empty():
            return await super().list(namespace, options, raw=raw)
        listed = await super().list(
            namespace, dataclasses.replace(options, field_selector=FieldSelector()))
        converted = await self.strategy.convert_from_storage(listed.items, is_list=True)
        listed.items = [obj for obj in converted
                        if options.field_selector.matches(self.strategy.field_set(obj))]
        return listed
