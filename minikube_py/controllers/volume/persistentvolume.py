"""The PersistentVolume controller: bind claims to volumes, ask provisioners for new
ones, and reclaim volumes whose claims are gone (upstream
pkg/controller/volume/persistentvolume/pv_controller.go).

    claim (no pv.kubernetes.io/bind-completed)          syncUnboundClaim
        spec.volumeName ""   -> the pre-bound or smallest matching volume: bind
                             -> none: the default class, if it has none; then
                                WaitForFirstConsumer (no selected node yet): an event;
                                a class: its provisioner is asked (the annotation
                                volume.kubernetes.io/storage-provisioner); no class: an event
        spec.volumeName set  -> that volume, if it is free and fits: bind
    claim (bound before)                                 syncBoundClaim
        its volume is gone, or bound to another claim -> Lost
    volume                                               syncVolume
        no claimRef -> Available; its claim is gone -> Released, then the reclaim policy:
        Retain keeps it, Delete is the provisioner's job (pv.kubernetes.io/provisioned-by)

Binding writes, in order: the volume's claimRef, the volume's phase (Bound), the claim's
volumeName and annotations, the claim's phase, capacity and access modes. Each write is
optimistic (resourceVersion): a conflict means someone else came first, and the key is
synced again. The controller remembers what it wrote last (upstream's storeVolumeUpdate)
so that its next read does not go back to an older object from the informer.

Every volume and claim is synced again each --pvclaimbinder-sync-period (15 s). Queue
keys: a claim's "namespace/name", a volume's "name" (a volume name never has a "/").
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    check_volume_mode_mismatches,
    check_volume_satisfies_claim,
    claim_class,
    claim_has_class,
    claim_key,
    claim_names_of_pod,
    claim_ref_key,
    default_class,
    find_best_match_for_claim,
    is_volume_bound_to_claim,
)
from minikube_py.client.errors import NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.controllers.base import Controller, ControllerContext, ExpectedSyncError
from minikube_py.controllers.podgc import is_pod_terminated

log = logging.getLogger(__name__)

STORAGE_CLASS_GROUP = "storage.k8s.io"


def _annotations(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def _phase(obj: Obj) -> str:
    return (obj.get("status") or {}).get("phase", "")


def _resource_version(obj: Obj) -> int:
    return int(obj["metadata"].get("resourceVersion") or 0)


def claim_reference(claim: Obj) -> Obj:
    """reference.GetReference of a claim: what a bound volume's claimRef holds."""
    meta = claim["metadata"]
    return {"kind": "PersistentVolumeClaim", "namespace": meta["namespace"],
            "name": meta["name"], "uid": meta["uid"], "apiVersion": "v1",
            "resourceVersion": meta["resourceVersion"]}


class PersistentVolumeController(Controller):
    """Binds claims and volumes, and reclaims released volumes (PersistentVolumeController)."""

    name: ClassVar[str] = "persistentvolume-binder"
    event_source: ClassVar[str] = "persistentvolume-controller"
    # Upstream runs one claim and one volume worker; a sync here waits on up to four
    # writes of Python round trips, and 200 claims at once queued seconds behind two
    # workers (benchmarks/storage.py). A key is still never synced by two at once.
    workers: ClassVar[int] = 8
    sync_period: ClassVar[float] = 15.0  # --pvclaimbinder-sync-period

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.volumes = self.informer("persistentvolumes")
        self.claims = self.informer("persistentvolumeclaims")
        self.classes = self.informer("storageclasses", STORAGE_CLASS_GROUP)
        self.pods = self.informer("pods")
        self.volumes_client = self.client.resource("persistentvolumes")
        self.claims_client = self.client.resource("persistentvolumeclaims")
        # What this controller wrote last, newer than the informer until it catches up.
        self._written_volumes: dict[str, Obj] = {}
        self._written_claims: dict[str, Obj] = {}
        # key -> the resourceVersion its last traced sync saw (traced_object)
        self._traced_versions: dict[str, str] = {}
        self.volumes.add_event_handler(EventHandler(
            on_add=self.enqueue, on_update=lambda _old, new: self.enqueue(new),
            on_delete=self._volume_deleted))
        self.claims.add_event_handler(EventHandler(
            on_add=self.enqueue, on_update=lambda _old, new: self.enqueue(new),
            on_delete=self._claim_deleted))

    def _volume_deleted(self, volume: Obj) -> None:
        """deleteVolume: forget it; its claim, if any, learns it is Lost."""
        self._written_volumes.pop(volume["metadata"]["name"], None)
        self._traced_versions.pop(volume["metadata"]["name"], None)
        claim_ref = volume["spec"].get("claimRef")
        if claim_ref is not None:
            self.queue.add(claim_ref_key(claim_ref))

    def _claim_deleted(self, claim: Obj) -> None:
        """deleteClaim: forget it; its volume is released now, not at the next resync."""
        self._written_claims.pop(claim_key(claim), None)
        self._traced_versions.pop(claim_key(claim), None)
        if volume_name := claim["spec"].get("volumeName"):
            self.queue.add(volume_name)

    # -- reading: the informer, or this controller's own newer write ------------------------

    def _volume(self, name: str) -> Obj | None:
        cached, written = self.volumes.store.get(name), self._written_volumes.get(name)
        if written is None or (cached is not None
                               and _resource_version(cached) >= _resource_version(written)):
            self._written_volumes.pop(name, None)
            return cached
        return written

    def _claim(self, key: str) -> Obj | None:
        cached, written = self.claims.store.get(key), self._written_claims.get(key)
        if written is None or (cached is not None
                               and _resource_version(cached) >= _resource_version(written)):
            self._written_claims.pop(key, None)
            return cached
        return written

    def _all_volumes(self) -> list[Obj]:
        names = {volume["metadata"]["name"] for volume in self.volumes.store.list()}
        names |= set(self._written_volumes)
        return [volume for name in sorted(names) if (volume := self._volume(name)) is not None]

    # -- the loop ----------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        """The workers, and the resync of every volume and claim each sync period."""
        resync = asyncio.create_task(self._resync(), name=f"{self.name}-resync")
        try:
            await super().run(workers)
        finally:
            resync.cancel()
            await asyncio.gather(resync, return_exceptions=True)

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(self.sync_period)
            for obj in (*self.volumes.store.list(), *self.claims.store.list()):
                self.enqueue(obj)

    def traced_object(self, key: str) -> tuple[str, Obj | None] | None:
        """A claim's or a volume's sync is a span of its trace (a StatefulSet's claim:
        the StatefulSet's; a provisioned volume: its claim's), once per version of it:
        the resync of an object that did not change adds no span."""
        if "/" in key:
            traced = "persistentvolumeclaims", self._claim(key)
        else:
            traced = "persistentvolumes", self._volume(key)
        version = traced[1]["metadata"].get("resourceVersion") if traced[1] else None
        if version is not None and self._traced_versions.get(key) == version:
            return None
        if version is not None:
            self._traced_versions[key] = version
        return traced

    async def sync(self, key: str) -> None:
        """A claim's key has a "/", a volume's does not."""
        if "/" in key:
            claim = self._claim(key)
            if claim is not None:
                await self.sync_claim(claim)
        else:
            volume = self._volume(key)
            if volume is not None:
                await self.sync_volume(volume)

    # -- claims ------------------------------------------------------------------------------

    async def sync_claim(self, claim: Obj) -> None:
        """syncClaim: the bind-completed annotation says whether it was ever bound."""
        if ANN_BIND_COMPLETED not in _annotations(claim):
            await self.sync_unbound_claim(claim)
        else:
            await self.sync_bound_claim(claim)

    def _is_delay_binding_mode(self, claim: Obj) -> bool:
        """IsDelayBindingMode: the claim's class binds WaitForFirstConsumer."""
        class_name = claim_class(claim)
        if not class_name:
            return False
        storage_class = self.classes.store.get(class_name)
        if storage_class is None:
            return False
        mode = storage_class.get("volumeBindingMode")
        if mode is None:
            raise ExpectedSyncError(f'VolumeBindingMode not set for StorageClass "{class_name}"')
        return bool(mode == "WaitForFirstConsumer")

    async def sync_unbound_claim(self, claim: Obj) -> None:
        """syncUnboundClaim: find the claim a volume, or ask for one."""
        volume_name = claim["spec"].get("volumeName") or ""
        if not volume_name:
            delay_binding = self._is_delay_binding_mode(claim)
            try:
                volume = find_best_match_for_claim(claim, self._all_volumes(),
                                                   delay_binding=delay_binding)
            except ValueError as error:
                raise ExpectedSyncError(
                    f'error finding PV for claim "{claim_key(claim)}": {error}') from error
            if volume is not None:
                await self.bind(volume, claim)
                return
            if await self._assign_default_storage_class(claim):
                return
            if delay_binding and ANN_SELECTED_NODE not in _annotations(claim):
                self._emit_event_for_unbound_delay_binding_claim(claim)
            elif claim_class(claim):
                await self.provision_claim(claim)
                return
            else:
                self.recorder.event(claim, "Normal", "FailedBinding",
                                    "no persistent volumes available for this claim and no "
                                    "storage class is set")
            await self.update_claim_status(claim, "Pending", None)
            return
        volume = self._volume(volume_name)
        if volume is None:
            await self.update_claim_status(claim, "Pending", None)
            return
        if volume["spec"].get("claimRef") is None:
            problem = check_volume_satisfies_claim(volume, claim)
            if problem:
                self.recorder.event(claim, "Warning", "VolumeMismatch",
                                    f'Cannot bind to requested volume "{volume_name}": {problem}')
                await self.update_claim_status(claim, "Pending", None)
            else:
                await self.bind(volume, claim)
            return
        if is_volume_bound_to_claim(volume, claim):
            await self.bind(volume, claim)
            return
        self.recorder.event(claim, "Warning", "FailedBinding",
                            f'volume "{volume_name}" already bound to a different claim.')
        if ANN_BOUND_BY_CONTROLLER not in _annotations(claim):
            await self.update_claim_status(claim, "Pending", None)
            return
        raise ExpectedSyncError(
            f'invalid binding of claim "{claim_key(claim)}" to volume "{volume_name}": volume '
            f'already claimed by "{claim_ref_key(volume["spec"]["claimRef"])}"')

    def _emit_event_for_unbound_delay_binding_claim(self, claim: Obj) -> None:
        """emitEventForUnboundDelayBindingClaim: waiting for a pod, or for its scheduling."""
        names = self._non_scheduled_pods_of(claim)
        if not names:
            self.recorder.event(claim, "Normal", "WaitForFirstConsumer",
                                "waiting for first consumer to be created before binding")
        elif len(names) == 1:
            self.recorder.event(claim, "Normal", "WaitForPodScheduled",
                                f"waiting for pod {names[0]} to be scheduled")
        else:
            self.recorder.event(claim, "Normal", "WaitForPodScheduled",
                                f"waiting for pods {','.join(names)} to be scheduled")

    def _pods_of(self, namespace: str, claim_name: str) -> list[Obj]:
        """The pods of the namespace whose volumes use the claim (upstream's PodPVCIndex)."""
        return [pod for pod in self.pods.store.list(namespace)
                if claim_name in claim_names_of_pod(pod)]

    def _non_scheduled_pods_of(self, claim: Obj) -> list[str]:
        """findNonScheduledPodsByPVC: the live pods using the claim not yet on a node."""
        meta = claim["metadata"]
        return [pod["metadata"]["name"] for pod in self._pods_of(meta["namespace"], meta["name"])
                if not is_pod_terminated(pod) and not pod["spec"].get("nodeName")]

    async def _assign_default_storage_class(self, claim: Obj) -> bool:
        """assignDefaultStorageClass: a claim created before any default class existed
        gets the default now (the sync that follows its update goes on)."""
        if claim_has_class(claim):
            return False
        default = default_class(self.classes.store.list())
        if default is None:
            return False
        updated = copy.deepcopy(claim)
        updated["spec"]["storageClassName"] = default["metadata"]["name"]
        self._store_claim(await self.claims_client.update(updated))
        return True

    async def sync_bound_claim(self, claim: Obj) -> None:
        """syncBoundClaim: a claim bound before stays bound, or is Lost."""
        volume_name = claim["spec"].get("volumeName") or ""
        if not volume_name:
            await self.update_claim_status_with_event(
                claim, "Lost", None, "Warning", "ClaimLost",
                "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
            return
        volume = self._volume(volume_name)
        if volume is None:
            await self.update_claim_status_with_event(
                claim, "Lost", None, "Warning", "ClaimLost",
                "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
            return
        claim_ref = volume["spec"].get("claimRef")
        if claim_ref is None or claim_ref.get("uid") == claim["metadata"]["uid"]:
            await self.bind(volume, claim)
            return
        await self.update_claim_status_with_event(
            claim, "Lost", None, "Warning", "ClaimMisbound",
            "Two claims are bound to the same volume, this one is bound incorrectly")

    # -- volumes -----------------------------------------------------------------------------

    async def sync_volume(self, volume: Obj) -> None:
        """syncVolume: Available when free, Bound with its claim, Released without it."""
        claim_ref = volume["spec"].get("claimRef")
        if claim_ref is None or not claim_ref.get("uid"):
            # unused, or pre-bound to a claim whose sync will finish the binding
            await self.update_volume_phase(volume, "Available")
            return
        key = claim_ref_key(claim_ref)
        claim = self._claim(key)
        if claim is None and _phase(volume) not in ("Released", "Failed"):
            claim = await self._live_claim(claim_ref)
        if claim is not None and claim["metadata"]["uid"] != claim_ref["uid"]:
            # maybe the cache is behind: ask the API server before giving the volume up
            claim = await self._live_claim(claim_ref)
            if claim is not None and claim["metadata"]["uid"] != claim_ref["uid"]:
                claim = None
        if claim is None:
            if _phase(volume) not in ("Released", "Failed"):
                log.info("%s: volume %s is released and reclaim policy %s will be executed",
                         self.name, volume["metadata"]["name"],
                         volume["spec"].get("persistentVolumeReclaimPolicy"))
                volume = await self.update_volume_phase(volume, "Released")
            await self.reclaim_volume(volume)
            return
        claimed_volume = claim["spec"].get("volumeName") or ""
        if not claimed_volume:
            if check_volume_mode_mismatches(claim, volume):
                self.recorder.event(
                    volume, "Warning", "VolumeMismatch",
                    "Cannot bind PersistentVolume to requested PersistentVolumeClaim "
                    f'"{claim["metadata"]["name"]}" due to incompatible volumeMode.')
                self.recorder.event(
                    claim, "Warning", "VolumeMismatch",
                    f'Cannot bind PersistentVolume "{volume["metadata"]["name"]}" to requested '
                    "PersistentVolumeClaim due to incompatible volumeMode.")
                return
            # the claim's sync finishes the binding (a provisioned volume is bound so)
            self.queue.add(key)
            return
        if claimed_volume == volume["metadata"]["name"]:
            await self.update_volume_phase(volume, "Bound")
            return
        # the claim is bound to another volume
        if ANN_DYNAMICALLY_PROVISIONED in _annotations(volume) \
                and volume["spec"].get("persistentVolumeReclaimPolicy") == "Delete":
            if _phase(volume) not in ("Released", "Failed"):
                volume = await self.update_volume_phase(volume, "Released")
            await self.reclaim_volume(volume)
            return
        await self.unbind_volume(volume)

    async def _live_claim(self, claim_ref: Obj) -> Obj | None:
        """The claim from the API server, None when it does not exist."""
        try:
            claim: Obj = await self.claims_client.get(claim_ref.get("name", ""),
                                                      claim_ref.get("namespace", ""))
        except NotFound:
            return None
        return claim

    async def reclaim_volume(self, volume: Obj) -> None:
        """reclaimVolume: Retain keeps the volume; Delete deletes it (a provisioner's
        volume is left to that provisioner); Recycle has no recycler here."""
        policy = volume["spec"].get("persistentVolumeReclaimPolicy")
        if policy == "Retain":
            return
        if policy == "Recycle":
            await self.update_volume_phase_with_event(
                volume, "Failed", "Warning", "VolumeFailedRecycle",
                "No recycler plugin found for the volume!")
            return
        if policy == "Delete":
            await self._delete_volume_operation(volume)
            return
        await self.update_volume_phase_with_event(
            volume, "Failed", "Warning", "VolumeUnknownReclaimPolicy",
            "Volume has unrecognized PersistentVolumeReclaimPolicy")

    async def _delete_volume_operation(self, volume: Obj) -> None:
        """deleteVolumeOperation: still released? Then its deleter: an external
        provisioner's volume waits for that provisioner; no in-tree deleter is built, so
        any other volume fails to delete, and says so."""
        name = volume["metadata"]["name"]
        try:
            current = await self.volumes_client.get(name)
        except NotFound:
            return
        if not self._is_volume_released(current):
            return
        provisioner = _annotations(current).get(ANN_DYNAMICALLY_PROVISIONED, "")
        if provisioner and not provisioner.startswith("kubernetes.io/"):
            return  # the external provisioner deletes it
        if current["spec"].get("csi") is not None:
            return
        await self.update_volume_phase_with_event(
            current, "Failed", "Warning", "VolumeFailedDelete",
            f'error getting deleter volume plugin for volume "{name}": no deletable volume '
            "plugin matched")

    def _is_volume_released(self, volume: Obj) -> bool:
        """isVolumeReleased: bound once, and its claim is gone or bound elsewhere."""
        claim_ref = volume["spec"].get("claimRef")
        if claim_ref is None or not claim_ref.get("uid"):
            return False
        claim = self._claim(claim_ref_key(claim_ref))
        if claim is not None and claim["metadata"]["uid"] == claim_ref["uid"]:
            bound_to = claim["spec"].get("volumeName") or ""
            return bool(bound_to) and bound_to != volume["metadata"]["name"]
        return True

    # -- provisioning ------------------------------------------------------------------------

    async def provision_claim(self, claim: Obj) -> None:
        """provisionClaim: the claim's class names an external provisioner; annotate the
        claim so that provisioner picks it up, and say so. A class that does not exist,
        or names an in-tree plugin (none is built), is an event and nothing more."""
        class_name = claim_class(claim)
        storage_class = self.classes.store.get(class_name)
        if storage_class is None:
            self.recorder.event(claim, "Warning", "ProvisioningFailed",
                                f'storageclass.storage.k8s.io "{class_name}" not found')
            return
        provisioner = storage_class.get("provisioner", "")
        if provisioner.startswith("kubernetes.io/"):
            self.recorder.event(claim, "Warning", "ProvisioningFailed",
                                f"no volume plugin matched name: {provisioner}")
            return
        claim = await self._set_claim_provisioner(claim, provisioner)
        self.recorder.event(
            claim, "Normal", "ExternalProvisioning",
            f"Waiting for a volume to be created either by the external provisioner "
            f"'{provisioner}' or manually by the system administrator. If volume creation is "
            "delayed, please verify that the provisioner is running and correctly registered.")

    async def _set_claim_provisioner(self, claim: Obj, provisioner: str) -> Obj:
        """setClaimProvisioner: both provisioner annotations name it."""
        annotations = _annotations(claim)
        if (annotations.get(ANN_STORAGE_PROVISIONER) == provisioner
                and annotations.get(ANN_BETA_STORAGE_PROVISIONER) == provisioner):
            return claim
        updated = copy.deepcopy(claim)
        updated["metadata"].setdefault("annotations", {}).update({
            ANN_STORAGE_PROVISIONER: provisioner, ANN_BETA_STORAGE_PROVISIONER: provisioner})
        return self._store_claim(await self.claims_client.update(updated))

    # -- binding -----------------------------------------------------------------------------

    async def bind(self, volume: Obj, claim: Obj) -> None:
        """bind: the volume first (claimRef, then phase), then the claim (volumeName and
        annotations, then phase and capacity)."""
        volume = await self._bind_volume_to_claim(volume, claim)
        volume = await self.update_volume_phase(volume, "Bound")
        claim = await self._bind_claim_to_volume(claim, volume)
        await self.update_claim_status(claim, "Bound", volume)

    async def _bind_volume_to_claim(self, volume: Obj, claim: Obj) -> Obj:
        """GetBindVolumeToClaim: the claimRef, and bound-by-controller unless the volume
        was pre-bound to this claim."""
        updated = copy.deepcopy(volume)
        dirty = False
        claim_ref = volume["spec"].get("claimRef")
        meta = claim["metadata"]
        if claim_ref is None or (claim_ref.get("name"), claim_ref.get("namespace"),
                                 claim_ref.get("uid")) != (meta["name"], meta["namespace"],
                                                           meta["uid"]):
            updated["spec"]["claimRef"] = claim_reference(claim)
            dirty = True
        if not is_volume_bound_to_claim(volume, claim) \
                and ANN_BOUND_BY_CONTROLLER not in _annotations(volume):
            updated["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
            dirty = True
        if not dirty:
            return volume
        log.info("%s: claim %s bound to volume %s", self.name, claim_key(claim),
                 volume["metadata"]["name"])
        return self._store_volume(await self.volumes_client.update(updated))

    async def _bind_claim_to_volume(self, claim: Obj, volume: Obj) -> Obj:
        """bindClaimToVolume: volumeName (bound-by-controller when this controller chose
        it), and bind-completed."""
        updated = copy.deepcopy(claim)
        annotations = updated["metadata"].setdefault("annotations", {})
        dirty = False
        if claim["spec"].get("volumeName") != volume["metadata"]["name"]:
            updated["spec"]["volumeName"] = volume["metadata"]["name"]
            annotations.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
            dirty = True
        if ANN_BIND_COMPLETED not in annotations:
            annotations[ANN_BIND_COMPLETED] = "yes"
            dirty = True
        if not dirty:
            return claim
        return self._store_claim(await self.claims_client.update(updated))

    async def unbind_volume(self, volume: Obj) -> None:
        """unbindVolume: a volume this controller bound loses its claimRef; a volume
        pre-bound by its creator only the claim's UID. Then it is Available."""
        updated = copy.deepcopy(volume)
        annotations = updated["metadata"].get("annotations") or {}
        if ANN_BOUND_BY_CONTROLLER in annotations:
            updated["spec"].pop("claimRef", None)
            del annotations[ANN_BOUND_BY_CONTROLLER]
            if not annotations:
                updated["metadata"].pop("annotations", None)
        else:
            updated["spec"]["claimRef"].pop("uid", None)
        saved = self._store_volume(await self.volumes_client.update(updated))
        await self.update_volume_phase(saved, "Available")

    # -- status writes -----------------------------------------------------------------------

    async def update_claim_status(self, claim: Obj, phase: str, volume: Obj | None) -> Obj:
        """updateClaimStatus: the phase; the volume's access modes, and its capacity when
        the claim becomes bound (none without a volume)."""
        updated = copy.deepcopy(claim)
        status = updated.setdefault("status", {})
        dirty = False
        if status.get("phase") != phase:
            status["phase"] = phase
            dirty = True
        if volume is None:
            for field in ("accessModes", "capacity"):
                if status.get(field) is not None:
                    del status[field]
                    dirty = True
        else:
            modes = volume["spec"].get("accessModes")
            if status.get("accessModes") != modes:
                status["accessModes"] = modes
                dirty = True
            if _phase(claim) != phase:
                capacity = volume["spec"].get("capacity") or {}
                if "storage" not in capacity:
                    raise ExpectedSyncError(
                        f'PersistentVolume "{volume["metadata"]["name"]}" is without a '
                        "storage capacity")
                if (status.get("capacity") or {}).get("storage") != capacity["storage"]:
                    status["capacity"] = capacity
                    dirty = True
        if not dirty:
            return claim
        saved = self._store_claim(await self.claims_client.update_status(updated))
        log.info("%s: claim %s entered phase %s", self.name, claim_key(claim), phase)
        return saved

    async def update_claim_status_with_event(self, claim: Obj, phase: str,
                                             volume: Obj | None, event_type: str,
                                             reason: str, message: str) -> None:
        """updateClaimStatusWithEvent: the event only when the phase changes."""
        if _phase(claim) == phase:
            return
        saved = await self.update_claim_status(claim, phase, volume)
        self.recorder.event(saved, event_type, reason, message)

    async def update_volume_phase(self, volume: Obj, phase: str, message: str = "") -> Obj:
        """updateVolumePhase: the phase and its message (the API server stamps
        lastPhaseTransitionTime)."""
        if _phase(volume) == phase:
            return volume
        updated = copy.deepcopy(volume)
        status = updated.setdefault("status", {})
        status["phase"] = phase
        if message:
            status["message"] = message
        else:
            status.pop("message", None)
        saved = self._store_volume(await self.volumes_client.update_status(updated))
        log.info("%s: volume %s entered phase %s", self.name, volume["metadata"]["name"], phase)
        return saved

    async def update_volume_phase_with_event(self, volume: Obj, phase: str, event_type: str,
                                             reason: str, message: str) -> None:
        """updateVolumePhaseWithEvent: the event only when the phase changes."""
        if _phase(volume) == phase:
            return
        saved = await self.update_volume_phase(volume, phase, message)
        self.recorder.event(saved, event_type, reason, message)

    def _store_volume(self, volume: Obj) -> Obj:
        self._written_volumes[volume["metadata"]["name"]] = volume
        return volume

    def _store_claim(self, claim: Obj) -> Obj:
        self._written_claims[claim_key(claim)] = claim
        return claim
