"""persistentVolumeClaim volume: the PersistentVolume the pod's claim is bound to.

Upstream: the desired state of world populator resolves claim -> spec.volumeName -> PV
(getPVCExtractPV, getPVSpec), and the PV's own plugin sets it up; the operation
generator checks the PV's node affinity first (checkNodeAffinity). Two PV sources are
served here, as a node's kubelet mounts them with no device to attach:

    hostPath   the hostPath plugin: the path, checked against its type
    local      the local plugin: the path must exist (a directory or a file)

A claim that grew is finished here (the NodeExpander, node_expander.go): once its
resizer gave the PV its new capacity and left the claim NodeResizePending, the kubelet
that mounts it (at mount, and at each later sync of a pod using it) grows the file
system, then writes the claim's new status.capacity. A folder has no file system of its
own to grow, so that step is the bookkeeping alone.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import check_node_affinity, storage_of
from minikube_py.api.volumeresize import (
    NODE_RESIZE_IN_PROGRESS,
    NODE_RESIZE_PENDING,
    node_expansion_in_progress,
    resize_finished,
    resize_status,
    status_capacity,
)
from minikube_py.kubelet.volumes import hostpath
from minikube_py.kubelet.volumes.plugin import GetObject, ProcessVolumeError

# get_volume: PV name -> the PersistentVolume, None if absent.
GetVolume = Callable[[str], Awaitable[Obj | None]]
# get_node_labels: the labels of this kubelet's Node.
GetNodeLabels = Callable[[], Awaitable[dict[str, str]]]
# update_claim_status: PUT a claim's /status (the claim with its new status) -> the claim.
UpdateClaimStatus = Callable[[Obj], Awaitable[Obj]]
# record_event: (object with its kind, type, reason, message).
RecordEvent = Callable[[Obj, str, str, str], None]


class NodeAffinityError(Exception):
    """MountVolume.NodeAffinity check failed: the PV may not be used on this node."""


class NewMounterError(Exception):
    """MountVolume.NewMounter initialization failed: the local path is not there."""


async def bound_volume(namespace: str, source: Obj, get_claim: GetObject,
                       get_volume: GetVolume) -> tuple[Obj, Obj]:
    """getPVCExtractPV then getPVSpec: the claim must be Bound, its PV bound back to it;
    (claim, volume)."""
    name = source["claimName"]
    claim = await get_claim(namespace, name)
    prefix = f"error processing PVC {namespace}/{name}"
    if claim is None:
        raise ProcessVolumeError(f"{prefix}: failed to fetch PVC from API server: "
                                 f'persistentvolumeclaims "{name}" not found')
    if claim["metadata"].get("deletionTimestamp"):
        raise ProcessVolumeError(f"{prefix}: PVC is being deleted")
    if (claim.get("status") or {}).get("phase") != "Bound":
        raise ProcessVolumeError(f"{prefix}: PVC is not bound")
    volume_name = (claim.get("spec") or {}).get("volumeName") or ""
    if not volume_name:
        raise ProcessVolumeError(f"{prefix}: PVC has empty pvc.Spec.VolumeName")
    volume = await get_volume(volume_name)
    if volume is None:
        raise ProcessVolumeError(f"{prefix}: failed to fetch PV {volume_name} from API server: "
                                 f'persistentvolumes "{volume_name}" not found')
    claim_ref = (volume.get("spec") or {}).get("claimRef")
    if claim_ref is None:
        raise ProcessVolumeError(
            f"{prefix}: found PV object {volume_name} but it has a nil pv.Spec.ClaimRef "
            "indicating it is not yet bound to the claim")
    if claim_ref.get("uid") != claim["metadata"]["uid"]:
        raise ProcessVolumeError(
            f"{prefix}: found PV object {volume_name} but its pv.Spec.ClaimRef.UID "
            f"({claim_ref.get('uid', '')}) does not point to claim.UID "
            f"({claim['metadata']['uid']})")
    return claim, volume


def check_affinity(volume: Obj, node_labels: dict[str, str]) -> None:
    """checkNodeAffinity: the PV's required node affinity must select this node."""
    if not check_node_affinity(volume, {"metadata": {"labels": node_labels}}):
        raise NodeAffinityError("no matching NodeSelectorTerms")


def set_up(volume: Obj) -> Path:
    """SetUp with the PV's plugin: hostPath as a hostPath volume, local as its path."""
    spec = volume.get("spec") or {}
    if "hostPath" in spec:
        return hostpath.set_up(spec["hostPath"])
    if "local" in spec:
        path = spec["local"].get("path") or ""
        if not path:
            raise NewMounterError("local volume source is nil or local path is not set")
        if not os.path.exists(path):
            raise NewMounterError(f'path "{path}" does not exist')
        return Path(path)
    raise ProcessVolumeError(f'failed to get Plugin from volumeSpec for volume '
                             f'"{volume["metadata"]["name"]}" err=no volume plugin matched')


def needs_node_expansion(claim: Obj, volume: Obj) -> bool:
    """nodeExpandVolume's test, then runPreCheck: the PV is bigger than the claim's
    capacity, and its resizer left the node's part to do (an older resizer, which wrote
    no resize status, is not followed)."""
    volume_size = storage_of((volume.get("spec") or {}).get("capacity"))
    return (status_capacity(claim) < volume_size
            and resize_status(claim) in (NODE_RESIZE_PENDING, NODE_RESIZE_IN_PROGRESS))


async def node_expand(pod: Obj, claim: Obj, volume: Obj, node_name: str,
                      update_claim_status: UpdateClaimStatus, record_event: RecordEvent) -> bool:
    """expandOnPlugin: NodeResizeInProgress, grow (nothing to do for a folder), then the
    claim's capacity is the PV's; the events on the pod and the claim. True if it ran."""
    if not needs_node_expansion(claim, volume):
        return False
    claim = await update_claim_status({**claim, "status": node_expansion_in_progress(claim)})
    message = (f'MountVolume.NodeExpandVolume succeeded for volume '
               f'"{volume["metadata"]["name"]}" {node_name}')
    record_event({"kind": "Pod", "apiVersion": "v1", **pod}, "Normal",
                 "FileSystemResizeSuccessful", message)
    record_event({"kind": "PersistentVolumeClaim", "apiVersion": "v1", **claim}, "Normal",
                 "FileSystemResizeSuccessful", message)
    size = str(volume["spec"]["capacity"]["storage"])
    await update_claim_status({**claim, "status": resize_finished(claim, size)})
    return True
