"""Status conditions as controllers read and write them: GetPodCondition /
GetNodeCondition, IsNodeReady, UpdatePodCondition, PatchPodStatus (upstream
pkg/api/v1/pod/util.go, pkg/api/v1/node/util.go, pkg/util/pod/pod.go)."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339
from minikube_py.client.rest import ResourceClient


def get_condition(status: Obj, condition_type: str) -> Obj | None:
    """GetNodeCondition / GetPodCondition: the condition of that type, or None."""
    for condition in status.get("conditions") or ():
        if condition.get("type") == condition_type:
            return condition
    return None


def update_pod_condition(status: Obj, condition: Obj, now: datetime) -> bool:
    """UpdatePodCondition: set a condition in place; True when anything changed.

    The lastTransitionTime moves only when the condition's status changes.
    """
    condition = {**condition, "lastTransitionTime": rfc3339(now)}
    conditions = status.setdefault("conditions", [])
    for i, old in enumerate(conditions):
        if old.get("type") != condition["type"]:
            continue
        if old.get("status") == condition.get("status"):
            if old.get("lastTransitionTime") is None:
                condition.pop("lastTransitionTime")
            else:
                condition["lastTransitionTime"] = old["lastTransitionTime"]
        conditions[i] = {**old, **condition}
        return conditions[i] != old
    conditions.append(condition)
    return True


async def patch_pod_status(pods: ResourceClient, pod: Obj, status: Obj) -> None:
    """PatchPodStatus: a strategic merge patch of what changed, with the pod's uid."""
    old = pod.get("status") or {}
    changed = {key: value for key, value in status.items() if old.get(key) != value}
    if not changed:
        return
    metadata = pod["metadata"]
    await pods.patch(metadata["name"], {"metadata": {"uid": metadata["uid"]}, "status": changed},
                     metadata["namespace"], patch_type="strategic", subresource="status")


def is_node_ready(node: Obj) -> bool:
    ready = get_condition(node.get("status") or {}, "Ready")
    return ready is not None and ready.get("status") == "True"
