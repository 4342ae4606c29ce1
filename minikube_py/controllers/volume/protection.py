"""The storage-object-in-use protection controllers (upstream
pkg/controller/volume/pvcprotection and pvprotection).

StorageObjectInUseProtection admission gives every claim the finalizer
kubernetes.io/pvc-protection and every volume kubernetes.io/pv-protection; these
controllers add it to objects created before, and take it off a deleted object once
nothing uses it:

    claim being deleted --> a scheduled pod, not shut down, uses it?  (the pod informer,
                            then a live list of the namespace's pods to be sure)
                        --> no: remove kubernetes.io/pvc-protection, the claim goes
    volume being deleted --> still Bound to a claim? no: remove kubernetes.io/pv-protection
"""

from __future__ import annotations

import copy
import logging
from abc import abstractmethod
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import (
    PV_PROTECTION_FINALIZER,
    PVC_PROTECTION_FINALIZER,
    claim_names_of_pod,
)
from minikube_py.client.errors import NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import object_key
from minikube_py.controllers.base import Controller, ControllerContext

log = logging.getLogger(__name__)


def is_deletion_candidate(obj: Obj, finalizer: str) -> bool:
    """IsDeletionCandidate: being deleted, and still held by the finalizer."""
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers") or [])


def need_to_add_finalizer(obj: Obj, finalizer: str) -> bool:
    """NeedToAddFinalizer: not being deleted, and without the finalizer."""
    meta = obj["metadata"]
    return not meta.get("deletionTimestamp") and finalizer not in (meta.get("finalizers") or [])


def pod_is_shut_down(pod: Obj) -> bool:
    """podIsShutDown: deleted with a zero grace period (the kubelet is done with it, or it
    was force-deleted); it uses no volume any more."""
    meta = pod["metadata"]
    return bool(meta.get("deletionTimestamp")) and meta.get("deletionGracePeriodSeconds") == 0


def pod_uses_claim(pod: Obj, claim_name: str) -> bool:
    """podUsesPVC: only a scheduled pod can have the claim mounted."""
    return (bool((pod.get("spec") or {}).get("nodeName")) and not pod_is_shut_down(pod)
            and claim_name in claim_names_of_pod(pod))


class _FinalizerController(Controller):
    """Adds its finalizer to objects of its kind, removes it once they are unused."""

    workers: ClassVar[int] = 1
    finalizer: ClassVar[str] = ""
    plural: ClassVar[str] = ""

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.objects = self.informer(self.plural)
        self.objects_client = self.client.resource(self.plural)
        self.objects.add_event_handler(EventHandler(
            on_add=self._changed, on_update=lambda _old, new: self._changed(new)))

    def _changed(self, obj: Obj) -> None:
        if need_to_add_finalizer(obj, self.finalizer) \
                or is_deletion_candidate(obj, self.finalizer):
            self.enqueue(obj)

    async def sync(self, key: str) -> None:
        """processPVC / processPV."""
        obj = self.objects.store.get(key)
        if obj is None:
            return
        if is_deletion_candidate(obj, self.finalizer):
            if not await self.is_being_used(obj):
                await self._set_finalizer(obj, present=False)
        elif need_to_add_finalizer(obj, self.finalizer):
            await self._set_finalizer(obj, present=True)

    @abstractmethod
    async def is_being_used(self, obj: Obj) -> bool:
        """Does anything still use the object?"""

    async def _set_finalizer(self, obj: Obj, *, present: bool) -> None:
        """addFinalizer / removeFinalizer, by an update of the object."""
        updated = copy.deepcopy(obj)
        finalizers = [each for each in updated["metadata"].get("finalizers") or []
                      if each != self.finalizer]
        if present:
            finalizers.append(self.finalizer)
        updated["metadata"]["finalizers"] = finalizers
        try:
            await self.objects_client.update(updated)
        except NotFound:
            return
        log.info("%s: %s finalizer %s %s", self.name, "added" if present else "removed",
                 self.finalizer, object_key(obj))


class PVCProtectionController(_FinalizerController):
    """Keeps a claim while a pod uses it (pvcprotection.Controller)."""

    name: ClassVar[str] = "pvc-protection"
    finalizer: ClassVar[str] = PVC_PROTECTION_FINALIZER
    plural: ClassVar[str] = "persistentvolumeclaims"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.pods = self.informer("pods")
        self.pods_client = self.client.resource("pods")
        self.pods.add_event_handler(EventHandler(
            on_add=self._pod_changed, on_update=lambda _old, new: self._pod_changed(new),
            on_delete=self._pod_changed))

    def _pod_changed(self, pod: Obj) -> None:
        """podAddedDeletedUpdated: a claim being deleted may have lost its last user."""
        namespace = pod["metadata"].get("namespace", "")
        for claim_name in claim_names_of_pod(pod):
            claim = self.objects.store.get_by_name(namespace, claim_name)
            if claim is not None and is_deletion_candidate(claim, self.finalizer):
                self.enqueue(claim)

    async def is_being_used(self, obj: Obj) -> bool:
        """isBeingUsed: the informer's pods first, then the API server's, to be sure."""
        namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
        if any(pod_uses_claim(pod, name) for pod in self.pods.store.list(namespace)):
            return True
        listed = await self.pods_client.list(namespace)
        return any(pod_uses_claim(pod, name) for pod in listed["items"])


class PVProtectionController(_FinalizerController):
    """Keeps a volume while a claim is bound to it (pvprotection.Controller)."""

    name: ClassVar[str] = "pv-protection"
    finalizer: ClassVar[str] = PV_PROTECTION_FINALIZER
    plural: ClassVar[str] = "persistentvolumes"

    async def is_being_used(self, obj: Obj) -> bool:
        """isBeingUsed: the PV controller says Bound."""
        return (obj.get("status") or {}).get("phase") == "Bound"
