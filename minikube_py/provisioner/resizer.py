"""The local-path resizer, the external-resizer way (kubernetes-csi's external-resizer,
its expandAndRecover, around a driver that grows a volume as the CSI hostpath driver
does): a local-path volume is a folder, so growing it is recording its new size, and
the file system's part is left to the kubelet that mounts it.

    claim: Bound, spec.resources.requests.storage > status.capacity, its PV ours and
           bound back to it
        -> markControllerResizeInProgress: Resizing=True, allocatedResources.storage,
           allocatedResourceStatuses.storage=ControllerResizeInProgress; event Resizing
        -> "ControllerExpandVolume": the PV's spec.capacity.storage = the new size
        -> markForPendingNodeExpansion: FileSystemResizePending=True,
           NodeResizePending; event FileSystemResizeRequired
    the kubelet finishes (kubelet/volumes/persistent_claim.py: node_expand).

A claim whose node part is still pending or running is left alone until the kubelet is
done; asking again for more then starts a new round.
"""

from __future__ import annotations

import functools
import logging
from decimal import Decimal
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import (
    ANN_DYNAMICALLY_PROVISIONED,
    LOCAL_PATH_PROVISIONER,
    requested_storage,
    storage_of,
)
from minikube_py.api.volumeresize import (
    CONTROLLER_RESIZE_IN_PROGRESS,
    NODE_RESIZE_IN_PROGRESS,
    NODE_RESIZE_PENDING,
    allocated_size,
    controller_resize_in_progress,
    node_expansion_pending,
    resize_status,
    status_capacity,
)
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import EventHandler, SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.client.store import object_key
from minikube_py.client.workqueue import RateLimitingQueue, run_workers
from minikube_py.provisioner.localpath import log_sync_error

log = logging.getLogger(__name__)

RESIZER_NAME = LOCAL_PATH_PROVISIONER
EVENT_SOURCE = f"external-resizer {RESIZER_NAME}"


def needs_resize(claim: Obj) -> bool:
    """pvcNeedResize: Bound, with a volume, asking for more than it has."""
    return ((claim.get("status") or {}).get("phase") == "Bound"
            and bool((claim.get("spec") or {}).get("volumeName"))
            and requested_storage(claim) > status_capacity(claim))


def new_size(claim: Obj, volume_size: Decimal) -> str | None:
    """expandAndRecover's choice of the size to grow to (as the claim writes it), None to
    leave the claim be: a round whose node part is pending or running finishes first; a
    controller round that was cut short resumes at the size it had allocated."""
    requested = str(claim["spec"]["resources"]["requests"]["storage"])
    allocated = ((claim.get("status") or {}).get("allocatedResources") or {}).get("storage")
    allocated_amount, status = allocated_size(claim), resize_status(claim)
    node_part = status in (NODE_RESIZE_PENDING, NODE_RESIZE_IN_PROGRESS)
    if volume_size < requested_storage(claim):
        if node_part and allocated_amount is not None:
            return None if volume_size >= allocated_amount else str(allocated)
        if status == CONTROLLER_RESIZE_IN_PROGRESS and allocated is not None:
            return str(allocated)
        return requested
    if node_part:
        return None
    return str(allocated) if allocated is not None else requested


class LocalPathResizer:
    """Grows the local-path volumes of claims that ask for more (resizeController)."""

    name: ClassVar[str] = "local-path-resizer"
    workers: ClassVar[int] = 2

    def __init__(self, client: Client, informers: SharedInformerFactory) -> None:
        self.claims_client = client.resource("persistentvolumeclaims")
        self.volumes_client = client.resource("persistentvolumes")
        self.recorder = EventRecorder(client, EVENT_SOURCE)
        self.queue = RateLimitingQueue(self.name)
        self.claims = informers.informer("persistentvolumeclaims")
        self.volumes = informers.informer("persistentvolumes")
        self.claims.add_event_handler(EventHandler(
            on_add=self.enqueue, on_update=self._claim_updated))

    def enqueue(self, claim: Obj) -> None:
        self.queue.add(object_key(claim))

    def _claim_updated(self, old: Obj, new: Obj) -> None:
        """updatePVC: a bigger request, or a resync; the claim's own status writes are not
        news (each round is driven from the request)."""
        try:
            grew = requested_storage(new) > requested_storage(old)
        except (ValueError, ArithmeticError):
            return
        if grew or new["metadata"].get("resourceVersion") == old["metadata"].get(
                "resourceVersion"):
            self.enqueue(new)

    async def run(self) -> None:
        """The workers, until cancelled (the informers must have synced first)."""
        try:
            await run_workers(self.queue, self.workers, self.sync,
                              functools.partial(log_sync_error, self.name))
        finally:
            await self.recorder.stop()

    async def sync(self, key: str) -> None:
        """syncPVC: a claim of ours that asks for more gets it, up to the node's part."""
        claim = self.claims.store.get(key)
        if claim is None or not needs_resize(claim):
            return
        volume = self.volumes.store.get(claim["spec"]["volumeName"])
        if volume is None or not self.can_expand(volume, claim):
            return
        size = new_size(claim, storage_of((volume.get("spec") or {}).get("capacity")))
        if size is not None:
            await self.resize(claim, volume, size)

    @staticmethod
    def can_expand(volume: Obj, claim: Obj) -> bool:
        """pvCanBeExpanded: the volume is one this provisioner made, bound to this claim."""
        annotations = volume["metadata"].get("annotations") or {}
        claim_ref = (volume.get("spec") or {}).get("claimRef") or {}
        return (annotations.get(ANN_DYNAMICALLY_PROVISIONED) == RESIZER_NAME
                and claim_ref.get("namespace") == claim["metadata"]["namespace"]
                and claim_ref.get("uid") == claim["metadata"]["uid"])

    async def resize(self, claim: Obj, volume: Obj, size: str) -> None:
        """The three steps: mark in progress, grow the volume, leave the rest to the node."""
        meta = claim["metadata"]
        claim = await self._patch_status(claim, controller_resize_in_progress(claim, size))
        self.recorder.event(claim, "Normal", "Resizing",
                            f"External resizer is resizing volume {volume['metadata']['name']}")
        await self.volumes_client.patch(volume["metadata"]["name"],
                                        {"spec": {"capacity": {"storage": size}}})
        log.info("resized volume %s of claim %s/%s to %s", volume["metadata"]["name"],
                 meta["namespace"], meta["name"], size)
        claim = await self._patch_status(claim, node_expansion_pending(claim))
        self.recorder.event(claim, "Normal", "FileSystemResizeRequired",
                            "Require file system resize of volume on node")

    async def _patch_status(self, claim: Obj, status: Obj) -> Obj:
        """patchClaim with the resourceVersion check (a PUT of /status here): a claim
        changed meanwhile is a Conflict, and the key is synced again."""
        saved: Obj = await self.claims_client.update_status({**claim, "status": status})
        return saved
