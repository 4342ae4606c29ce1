"""The expand controller (persistentvolume-expander, upstream
pkg/controller/volume/expand/expand_controller.go): it grows the volumes of claims that
ask for more storage, when an in-tree plugin can.

    a Bound claim whose request grew, or whose capacity did (the informer's update)
        -> request <= status.capacity: nothing to do
        -> its PV, from the API server; bound back to this claim? (else retry)
        -> no in-tree plugin here grows a volume: the event ExternalExpanding
           "waiting for an external controller to expand this PVC" (Normal), and the
           claim is left to its external resizer (the local-path provisioner's for the
           class standard: minikube_py/provisioner/resizer.py)

Whether a claim may grow at all was decided by admission (PersistentVolumeClaimResize:
a Bound claim whose class says allowVolumeExpansion).
"""

from __future__ import annotations

from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import claim_key, requested_storage
from minikube_py.api.volumeresize import status_capacity
from minikube_py.client.errors import NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.controllers.base import Controller, ControllerContext, ExpectedSyncError

EXTERNAL_EXPANDING_MESSAGE = "waiting for an external controller to expand this PVC"


def _bound(claim: Obj) -> bool:
    return (claim.get("status") or {}).get("phase") == "Bound"


class ExpandController(Controller):
    """Hands claims that grew to the volume's resizer (expandController)."""

    name: ClassVar[str] = "persistentvolume-expander"
    event_source: ClassVar[str] = "volume_expand"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.claims = self.informer("persistentvolumeclaims")
        self.volumes_client = self.client.resource("persistentvolumes")
        self.claims.add_event_handler(EventHandler(
            on_add=self._enqueue_bound, on_update=self._claim_updated))

    def _enqueue_bound(self, claim: Obj) -> None:
        if _bound(claim):
            self.enqueue(claim)

    def _claim_updated(self, old: Obj, new: Obj) -> None:
        """A bigger request (a volume to grow) or a bigger capacity (a resize done)."""
        try:
            grew = (requested_storage(new) > requested_storage(old)
                    or status_capacity(new) > status_capacity(old))
        except (ValueError, ArithmeticError):
            return
        if grew:
            self._enqueue_bound(new)

    async def sync(self, key: str) -> None:
        """syncHandler: a claim that asks for more than it has goes to its resizer."""
        namespace, _, name = key.partition("/")
        claim = self.claims.store.get_by_name(namespace, name)
        if claim is None:
            return
        if requested_storage(claim) <= status_capacity(claim):
            # upstream reads the PV first, for its pre-resize-capacity annotation, which
            # nothing here writes: a claim that asks for no more needs no PV read
            return
        volume_name = (claim.get("spec") or {}).get("volumeName") or ""
        try:
            volume = await self.volumes_client.get(volume_name)
        except NotFound as error:
            raise ExpectedSyncError(f'failed to get PV "{volume_name}": {error}') from error
        claim_ref = (volume.get("spec") or {}).get("claimRef") or {}
        if (claim_ref.get("namespace") != namespace
                or claim_ref.get("uid") != claim["metadata"]["uid"]):
            raise ExpectedSyncError(
                f"persistent Volume is not bound to PVC being updated : {claim_key(claim)}")
        self.recorder.event(claim, "Normal", "ExternalExpanding", EXTERNAL_EXPANDING_MESSAGE)
