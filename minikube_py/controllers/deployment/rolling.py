"""The RollingUpdate strategy (upstream pkg/controller/deployment/rolling.go).

Each sync takes one step and returns:

    scale the new ReplicaSet up, as far as maxSurge allows   -> done for this sync
    scale old ReplicaSets down, as far as maxUnavailable allows -> done for this sync
    nothing to do: the rollout is complete; clean up old revisions

so that at every moment the pods asked for stay within
[spec.replicas - maxUnavailable available, spec.replicas + maxSurge in total].
"""

from __future__ import annotations

import logging

from minikube_py.api import Obj
from minikube_py.client.errors import ClientError
from minikube_py.controllers.deployment.progress import sync_rollout_status
from minikube_py.controllers.deployment.sync import (
    cleanup_deployment,
    get_all_replica_sets_and_sync_revision,
    scale_replica_set_and_record_event,
)
from minikube_py.controllers.deployment.types import DeploymentControl
from minikube_py.controllers.deployment.util import (
    active,
    by_creation,
    deployment_complete,
    max_unavailable,
    new_rs_new_replicas,
    replicas,
    spec_replicas,
    status_count,
)

log = logging.getLogger(__name__)


async def rollout_rolling(dc: DeploymentControl, d: Obj, rs_list: list[Obj]) -> None:
    """rolloutRolling: one step of a rolling update, then the status."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, True)
    assert new_rs is not None  # created above when missing (a failure raised)
    all_rss: list[Obj | None] = [*old_rss, new_rs]
    if await reconcile_new_replica_set(dc, all_rss, new_rs, d):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return
    if await reconcile_old_replica_sets(dc, all_rss, active(old_rss), new_rs, d):
        await sync_rollout_status(dc, all_rss, new_rs, d)
        return
    if deployment_complete(d, d.get("status") or {}):
        await cleanup_deployment(dc, old_rss, d)
    await sync_rollout_status(dc, all_rss, new_rs, d)


async def reconcile_new_replica_set(dc: DeploymentControl, all_rss: list[Obj | None],
                                    new_rs: Obj, d: Obj) -> bool:
    """reconcileNewReplicaSet: grow the new ReplicaSet within maxSurge (or shrink it to
    spec.replicas); True if it was resized."""
    if replicas(new_rs) == replicas(d):
        return False
    if replicas(new_rs) > replicas(d):
        scaled, _ = await scale_replica_set_and_record_event(dc, new_rs, replicas(d), d)
        return scaled
    count = new_rs_new_replicas(d, all_rss, new_rs)
    scaled, _ = await scale_replica_set_and_record_event(dc, new_rs, count, d)
    return scaled


async def reconcile_old_replica_sets(dc: DeploymentControl, all_rss: list[Obj | None],
                                     old_rss: list[Obj], new_rs: Obj, d: Obj) -> bool:
    """reconcileOldReplicaSets: shrink old ReplicaSets within maxUnavailable.

    At most allPods - minAvailable - (new pods not yet available) may go: counting the
    new ReplicaSet's unavailable pods keeps a broken new template from eating into the
    old, working pods. Unhealthy old pods go first, since removing them costs nothing.
    """
    if spec_replicas(old_rss) == 0:
        return False
    min_available = replicas(d) - max_unavailable(d)
    new_unavailable = replicas(new_rs) - status_count(new_rs, "availableReplicas")
    max_scaled_down = spec_replicas(all_rss) - min_available - new_unavailable
    if max_scaled_down <= 0:
        return False
    try:
        old_rss, cleaned = await cleanup_unhealthy_replicas(dc, old_rss, d, max_scaled_down)
        scaled_down = await scale_down_old_replica_sets_for_rolling_update(
            dc, [*old_rss, new_rs], old_rss, d)
    except ClientError as error:
        # Upstream drops this error: the ReplicaSet update requeues the Deployment anyway.
        log.info("deployment %s: scaling down old replica sets: %s", d["metadata"]["name"], error)
        return False
    return cleaned + scaled_down > 0


async def cleanup_unhealthy_replicas(dc: DeploymentControl, old_rss: list[Obj], d: Obj,
                                     max_cleanup: int) -> tuple[list[Obj], int]:
    """cleanupUnhealthyReplicas: scale old ReplicaSets down by their unavailable pods
    (the ReplicaSet controller deletes not-ready pods first)."""
    old_rss = by_creation(old_rss)
    total = 0
    for index, rs in enumerate(old_rss):
        if total >= max_cleanup:
            break
        unhealthy = replicas(rs) - status_count(rs, "availableReplicas")
        if replicas(rs) == 0 or unhealthy <= 0:
            continue
        count = min(max_cleanup - total, unhealthy)
        _, old_rss[index] = await scale_replica_set_and_record_event(
            dc, rs, replicas(rs) - count, d)
        total += count
    return old_rss, total


async def scale_down_old_replica_sets_for_rolling_update(
        dc: DeploymentControl, all_rss: list[Obj | None], old_rss: list[Obj], d: Obj) -> int:
    """scaleDownOldReplicaSetsForRollingUpdate: remove available old pods while more
    than spec.replicas - maxUnavailable pods are available, oldest ReplicaSet first.

    One difference from upstream, which sums status.availableReplicas: a ReplicaSet
    counts at most spec.replicas available pods. A ReplicaSet just scaled down still
    reports the pods it is deleting (its status is computed before its deletes land),
    and counting those let two quick syncs take the same availability away twice.
    """
    min_available = replicas(d) - max_unavailable(d)
    available = sum(min(status_count(rs, "availableReplicas"), replicas(rs))
                    for rs in all_rss if rs is not None)
    if available <= min_available:
        return 0
    to_scale_down = available - min_available
    total = 0
    for rs in by_creation(old_rss):
        if total >= to_scale_down:
            break
        if replicas(rs) == 0:
            continue
        count = min(replicas(rs), to_scale_down - total)
        await scale_replica_set_and_record_event(dc, rs, replicas(rs) - count, d)
        total += count
    return total
