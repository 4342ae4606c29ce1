"""Rollout progress: the Progressing condition and progressDeadlineSeconds (upstream
pkg/controller/deployment/progress.go).

While a rollout runs, every sync that sees progress (more updated, ready or available
pods, fewer old ones) refreshes Progressing's lastUpdateTime (reason ReplicaSetUpdated).
A rollout that shows none for progressDeadlineSeconds gets Progressing=False with reason
ProgressDeadlineExceeded; one that completes gets NewReplicaSetAvailable. Since nothing
may happen on a stuck rollout, the controller requeues it for when the deadline expires.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from minikube_py.api import Obj
from minikube_py.api.meta import parse_rfc3339
from minikube_py.client.store import object_key
from minikube_py.controllers.deployment.sync import calculate_status, wire_status
from minikube_py.controllers.deployment.types import DeploymentControl
from minikube_py.controllers.deployment.util import (
    NEW_RS_AVAILABLE,
    PROGRESSING,
    REPLICA_FAILURE,
    REPLICA_SET_UPDATED,
    TIMED_OUT,
    deployment_complete,
    deployment_progressing,
    deployment_timed_out,
    get_condition,
    has_progress_deadline,
    new_condition,
    remove_condition,
    replica_set_to_deployment_condition,
    set_condition,
)

log = logging.getLogger(__name__)


async def sync_rollout_status(dc: DeploymentControl, all_rss: list[Obj | None],
                              new_rs: Obj | None, d: Obj) -> None:
    """syncRolloutStatus: status plus the Progressing and ReplicaFailure conditions."""
    now = dc.now()
    new_status = calculate_status(all_rss, new_rs, d, now)
    if not has_progress_deadline(d):
        remove_condition(new_status, PROGRESSING)
    current = get_condition(d.get("status") or {}, PROGRESSING)
    complete_already = (new_status.get("replicas", 0) == new_status.get("updatedReplicas", 0)
                        and current is not None and current.get("reason") == NEW_RS_AVAILABLE)
    if has_progress_deadline(d) and not complete_already:
        subject = (f'ReplicaSet "{new_rs["metadata"]["name"]}"' if new_rs is not None
                   else f'Deployment "{d["metadata"]["name"]}"')
        if deployment_complete(d, new_status):
            set_condition(new_status, new_condition(
                PROGRESSING, "True", NEW_RS_AVAILABLE, f"{subject} has successfully progressed.",
                now))
        elif deployment_progressing(d, new_status):
            # Progress refreshes lastUpdateTime even though the reason stays the same.
            condition = new_condition(PROGRESSING, "True", REPLICA_SET_UPDATED,
                                      f"{subject} is progressing.", now)
            if current is not None:
                if current.get("status") == "True":
                    condition["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(new_status, PROGRESSING)
            set_condition(new_status, condition)
        elif deployment_timed_out(d, new_status, now):
            set_condition(new_status, new_condition(
                PROGRESSING, "False", TIMED_OUT, f"{subject} has timed out progressing.", now))
    failures = replica_failures(all_rss, new_rs)
    if failures:
        set_condition(new_status, failures[0])
    else:
        remove_condition(new_status, REPLICA_FAILURE)
    new_status = wire_status(new_status)
    if wire_status(d.get("status") or {}) == new_status:
        requeue_stuck_deployment(dc, d, new_status)
        return
    d["status"] = new_status
    await dc.update_deployment_status(d)


def replica_failures(all_rss: list[Obj | None], new_rs: Obj | None) -> list[Obj]:
    """getReplicaFailures: the new ReplicaSet's ReplicaFailure, else any old one's."""
    def failures_of(rs: Obj | None) -> list[Obj]:
        return [replica_set_to_deployment_condition(c)
                for c in ((rs or {}).get("status") or {}).get("conditions") or []
                if c.get("type") == REPLICA_FAILURE]

    return failures_of(new_rs) or [c for rs in all_rss for c in failures_of(rs)]


def requeue_stuck_deployment(dc: DeploymentControl, d: Obj, new_status: Obj) -> None:
    """requeueStuckDeployment: a rollout with no progress is synced again when its
    deadline passes (a second late, against clock skew), to be marked as timed out."""
    current = get_condition(d.get("status") or {}, PROGRESSING)
    if not has_progress_deadline(d) or current is None:
        return
    if deployment_complete(d, new_status) or current.get("reason") == TIMED_OUT:
        return
    deadline = (parse_rfc3339(current["lastUpdateTime"])
                + timedelta(seconds=d["spec"]["progressDeadlineSeconds"]))
    after = (deadline - dc.now()).total_seconds()
    if after < 1:
        dc.queue.add_rate_limited(object_key(d))
        return
    dc.enqueue_after(d, after + 1)
