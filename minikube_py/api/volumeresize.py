"""What a claim's status says while its volume grows: the conditions and the
allocatedResourceStatuses the resizer and the kubelet write (upstream
pkg/volume/util/resize_util.go and external-resizer's resize_status.go).

    user asks for more storage (spec.resources.requests.storage > status.capacity)
    resizer:  Resizing=True, allocatedResources.storage = the new size,
              allocatedResourceStatuses.storage = ControllerResizeInProgress
              ... grows the volume, then the PV's spec.capacity ...
              FileSystemResizePending=True ("Waiting for user to (re-)start a pod ..."),
              allocatedResourceStatuses.storage = NodeResizePending
    kubelet:  (mounting the volume for a pod) NodeResizeInProgress, grows the file
              system, then status.capacity = the PV's capacity, the resize conditions and
              the storage entry of allocatedResourceStatuses removed

Each function returns the claim's new status; the callers PATCH it to /status.
"""

from __future__ import annotations

import copy
from decimal import Decimal

from minikube_py.api import Obj
from minikube_py.api.meta import now_rfc3339
from minikube_py.api.storagehelpers import storage_of

RESIZING = "Resizing"
FILE_SYSTEM_RESIZE_PENDING = "FileSystemResizePending"
RESIZE_CONDITIONS = (RESIZING, FILE_SYSTEM_RESIZE_PENDING)

# ClaimResourceStatus values of allocatedResourceStatuses["storage"]
CONTROLLER_RESIZE_IN_PROGRESS = "ControllerResizeInProgress"
CONTROLLER_RESIZE_INFEASIBLE = "ControllerResizeInfeasible"
NODE_RESIZE_PENDING = "NodeResizePending"
NODE_RESIZE_IN_PROGRESS = "NodeResizeInProgress"
NODE_RESIZE_INFEASIBLE = "NodeResizeInfeasible"
CLAIM_RESOURCE_STATUSES = (CONTROLLER_RESIZE_IN_PROGRESS, CONTROLLER_RESIZE_INFEASIBLE,
                           NODE_RESIZE_PENDING, NODE_RESIZE_IN_PROGRESS,
                           NODE_RESIZE_INFEASIBLE)

FS_RESIZE_PENDING_MESSAGE = ("Waiting for user to (re-)start a pod to finish file system "
                             "resize of volume on node.")


def _status(claim: Obj) -> Obj:
    return copy.deepcopy(claim.get("status") or {})


def resize_status(claim: Obj) -> str:
    """allocatedResourceStatuses["storage"], "" when no resize is under way."""
    return str(((claim.get("status") or {}).get("allocatedResourceStatuses") or {})
               .get("storage", ""))


def allocated_size(claim: Obj) -> Decimal | None:
    """allocatedResources["storage"], None when never set."""
    allocated = (claim.get("status") or {}).get("allocatedResources") or {}
    return storage_of(allocated) if "storage" in allocated else None


def status_capacity(claim: Obj) -> Decimal:
    return storage_of((claim.get("status") or {}).get("capacity"))


def has_condition(claim: Obj, condition_type: str) -> bool:
    return any(c.get("type") == condition_type and c.get("status") == "True"
               for c in (claim.get("status") or {}).get("conditions") or [])


def merge_resize_conditions(conditions: list[Obj], resize: list[Obj]) -> list[Obj]:
    """MergeResizeConditionsOfPVC: the resize conditions become `resize`, a condition
    of the same type keeping its lastTransitionTime; other conditions stay."""
    old = {c.get("type"): c for c in conditions if c.get("type") in RESIZE_CONDITIONS}
    merged = [c for c in conditions if c.get("type") not in RESIZE_CONDITIONS]
    for condition in resize:
        previous = old.get(condition["type"])
        if previous is not None and previous.get("status") == condition["status"]:
            condition = {**condition,
                         "lastTransitionTime": previous.get("lastTransitionTime",
                                                            condition["lastTransitionTime"])}
        merged.append(condition)
    return merged


def _with_resize(claim: Obj, resize: list[Obj], storage_status: str | None) -> Obj:
    status = _status(claim)
    conditions = merge_resize_conditions(status.get("conditions") or [], resize)
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)
    statuses = dict(status.get("allocatedResourceStatuses") or {})
    if storage_status is None:
        statuses.pop("storage", None)
    else:
        statuses["storage"] = storage_status
    if statuses:
        status["allocatedResourceStatuses"] = statuses
    else:
        status.pop("allocatedResourceStatuses", None)
    return status


def _condition(condition_type: str, message: str = "") -> Obj:
    condition = {"type": condition_type, "status": "True",
                 "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
    if message:
        condition["message"] = message
    return condition


def controller_resize_in_progress(claim: Obj, new_size: str) -> Obj:
    """markControllerResizeInProgress: Resizing, the size being allocated."""
    status = _with_resize(claim, [_condition(RESIZING)], CONTROLLER_RESIZE_IN_PROGRESS)
    status["allocatedResources"] = {**(status.get("allocatedResources") or {}),
                                    "storage": new_size}
    return status


def node_expansion_pending(claim: Obj) -> Obj:
    """markForPendingNodeExpansion: the kubelet grows the file system next."""
    return _with_resize(claim, [_condition(FILE_SYSTEM_RESIZE_PENDING,
                                           FS_RESIZE_PENDING_MESSAGE)], NODE_RESIZE_PENDING)


def resize_finished(claim: Obj, new_size: str) -> Obj:
    """markOverallExpansionAsFinished / MarkFSResizeFinished: the claim has its new
    capacity; no resize condition and no storage resize status are left."""
    status = _with_resize(claim, [], None)
    status["capacity"] = {**(status.get("capacity") or {}), "storage": new_size}
    return status


def node_expansion_in_progress(claim: Obj) -> Obj:
    """MarkNodeExpansionInProgress: the kubelet is growing the file system."""
    status = _status(claim)
    status["allocatedResourceStatuses"] = {**(status.get("allocatedResourceStatuses") or {}),
                                           "storage": NODE_RESIZE_IN_PROGRESS}
    return status
