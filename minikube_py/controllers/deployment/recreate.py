"""The Recreate strategy (upstream pkg/controller/deployment/recreate.go): scale every old
ReplicaSet to zero, wait until none of their pods runs any more, and only then create
and scale up the new ReplicaSet, so old and new pods never run side by side.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.controllers.deployment.progress import sync_rollout_status
from minikube_py.controllers.deployment.sync import (
    cleanup_deployment,
    get_all_replica_sets_and_sync_revision,
    scale_replica_set_and_record_event,
)
from minikube_py.controllers.deployment.types import DeploymentControl
from minikube_py.controllers.deployment.util import (
    active,
    deployment_complete,
    replicas,
    status_replicas,
    uid,
)


async def rollout_recreate(dc: DeploymentControl, d: Obj, rs_list: list[Obj],
                           pod_map: dict[str, list[Obj]]) -> None:
    """rolloutRecreate: old down, wait for their pods to be gone, then new up."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    all_rss: list[Obj | None] = [*old_rss, new_rs]
    if await scale_down_old_replica_sets_for_recreate(dc, active(old_rss), d):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return
    if old_pods_running(new_rs, old_rss, pod_map):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return
    if new_rs is None:
        new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, True)
        assert new_rs is not None  # created above (a failure raised)
        all_rss = [*old_rss, new_rs]
    await scale_replica_set_and_record_event(dc, new_rs, replicas(d), d)
    if deployment_complete(d, d.get("status") or {}):
        await cleanup_deployment(dc, old_rss, d)
    await sync_rollout_status(dc, all_rss, new_rs, d)


async def scale_down_old_replica_sets_for_recreate(dc: DeploymentControl,
                                                   old_rss: list[Obj], d: Obj) -> bool:
    """scaleDownOldReplicaSetsForRecreate: every active old ReplicaSet to zero."""
    scaled = False
    for rs in old_rss:
        if replicas(rs) == 0:
            continue
        changed, _ = await scale_replica_set_and_record_event(dc, rs, 0, d)
        scaled = scaled or changed
    return scaled


def old_pods_running(new_rs: Obj | None, old_rss: list[Obj],
                     pod_map: dict[str, list[Obj]]) -> bool:
    """oldPodsRunning: an old ReplicaSet still reports pods, or one of its pods (even a
    terminating one) has not finished: Succeeded and Failed pods no longer run."""
    if status_replicas(old_rss) > 0:
        return True
    for rs_uid, pods in pod_map.items():
        if new_rs is not None and rs_uid == uid(new_rs):
            continue
        for pod in pods:
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                return True
    return False
