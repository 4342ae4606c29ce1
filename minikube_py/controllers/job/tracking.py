"""Finalizer-based pod tracking: finished pods pass through status.uncountedTerminatedPods
into the Job's counters (upstream job_controller.go's trackJobStatusAndRemoveFinalizers).

Every pod the controller creates carries the `batch.kubernetes.io/job-tracking`
finalizer, so a finished pod cannot disappear (pod GC, a user's delete) before the Job
has counted it. The pod's uid goes into the Job status *before* its finalizer is removed,
and moves to the counters only after: a crash between the writes neither loses a pod nor
counts it twice. Once no pod is left uncounted or terminating, the Job gets its terminal
Complete or Failed condition.

Functions take the controller `jm` first, as upstream's methods take their receiver
(typed as types.JobControl, the few members they use).
"""

from __future__ import annotations

import asyncio

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.controllers.job.conditions import ensure_condition, find_condition, new_condition
from minikube_py.controllers.job.indexed import (
    completion_index,
    format_indexes,
    index_order,
    is_indexed,
)
from minikube_py.controllers.job.pods import (
    JOB_TRACKING_FINALIZER,
    has_tracking_finalizer,
    is_pod_failed,
    pod_phase,
    uid_of,
)
from minikube_py.controllers.job.types import JobControl, SyncState

MAX_UNCOUNTED_PODS = 500  # uids in status.uncountedTerminatedPods per sync


async def track_status_and_remove_finalizers(jm: JobControl, key: str, state: SyncState,
                                             needs_flush: bool) -> None:
    """trackJobStatusAndRemoveFinalizers: record finished pods in uncountedTerminatedPods,
    remove their finalizers, count them; then finish the Job if it is done."""
    job = state.job
    status = job["status"]
    uncounted = status["uncountedTerminatedPods"]
    indexed = is_indexed(job)
    completions = job["spec"].get("completions")
    pods = sorted(state.pods, key=index_order) if indexed else state.pods
    with_finalizer = {uid_of(pod) for pod in pods if has_tracking_finalizer(pod)
                      and uid_of(pod) not in state.expected_removals}
    needs_flush |= _count_pods_without_finalizers(status, with_finalizer)
    to_release: list[Obj] = []
    new_indexes: set[int] = set()
    reached_max = False
    for pod in pods:
        uid = uid_of(pod)
        if uid not in with_finalizer:
            continue  # counted in an earlier sync
        failed = is_pod_failed(pod, job)
        if not (job["metadata"].get("deletionTimestamp") or state.finished is not None
                or pod_phase(pod) == "Succeeded" or failed):
            continue  # canRemoveFinalizer: the pod still runs
        to_release.append(pod)
        index = completion_index(pod)
        if pod_phase(pod) == "Succeeded" and uid not in state.uncounted_failed:
            if indexed:
                if (index is not None and index < completions
                        and index not in state.prev_succeeded_indexes):
                    new_indexes.add(index)
                    needs_flush = True
            elif uid not in state.uncounted_succeeded:
                uncounted.setdefault("succeeded", []).append(uid)
                needs_flush = True
        elif failed or (state.finished is not None
                        and state.finished["type"] != "SuccessCriteriaMet"):
            # Once the Job has failed, every pod not succeeded counts as failed.
            valid_index = not indexed or (index is not None and index < completions)
            if uid not in state.uncounted_failed and valid_index:
                uncounted.setdefault("failed", []).append(uid)
                needs_flush = True
        if (len(new_indexes) + len(uncounted.get("succeeded") or ())
                + len(uncounted.get("failed") or ())) >= MAX_UNCOUNTED_PODS:
            reached_max = True  # the status updates will bring the Job back
            break
    if indexed:
        state.succeeded_indexes |= new_indexes
        completed = format_indexes(state.succeeded_indexes)
        needs_flush |= completed != status.get("completedIndexes", "")
        status["succeeded"] = len(state.succeeded_indexes)
        status["completedIndexes"] = completed
    needs_flush |= _record_interim_condition(jm, state)
    needs_flush = await _flush_and_remove_finalizers(
        jm, key, state, to_release, with_finalizer, needs_flush)
    finished = not reached_max and _enact_job_finished(jm, state)
    if needs_flush or finished:
        state.job = await _update_status(jm, state.job)
        if finished:
            _record_job_finished(jm, state.job, state.finished)


def _record_interim_condition(jm: JobControl, state: SyncState) -> bool:
    """Write FailureTarget / SuccessCriteriaMet now; the terminal Failed / Complete
    condition (same reason and message) waits until every pod is counted."""
    finished = state.finished
    if finished is None:
        return False
    conditions = state.job["status"].setdefault("conditions", [])
    now = jm.now()
    if finished["type"] == "FailureTarget":
        conditions.append(finished)
        state.finished = new_condition("Failed", "True", finished["reason"],
                                       finished["message"], now)
        return True
    if finished["type"] == "SuccessCriteriaMet":
        changed = find_condition(state.job, "SuccessCriteriaMet") is None
        if changed:
            conditions.append(finished)
        state.finished = new_condition("Complete", "True", finished["reason"],
                                       finished["message"], now)
        return changed
    return False


async def _flush_and_remove_finalizers(jm: JobControl, key: str, state: SyncState,
                                       to_release: list[Obj], with_finalizer: set[str],
                                       needs_flush: bool) -> bool:
    """flushUncountedAndRemoveFinalizers: write the uncounted uids, remove the pods'
    finalizers, then move the released uids into the counters.

    Returns whether the status has changes still to write.
    """
    if needs_flush:
        state.job = await _update_status(jm, state.job)
        jm.backoff_records[key] = state.backoff
        needs_flush = False
    error: Exception | None = None
    if to_release:
        released, error = await _remove_tracking_finalizers(jm, key, to_release)
        with_finalizer -= released
    if _count_pods_without_finalizers(state.job["status"], with_finalizer):
        needs_flush = True
    if error is not None:
        if needs_flush:  # keep the partial progress
            state.job = await _update_status(jm, state.job)
        raise error
    return needs_flush


async def _remove_tracking_finalizers(jm: JobControl, key: str, pods: list[Obj]
                                      ) -> tuple[set[str], Exception | None]:
    """removeTrackingFinalizerFromPods: returns the uids released and the first error."""
    expected = jm.finalizer_expectations.setdefault(key, set())
    expected.update(uid_of(pod) for pod in pods)
    results = await asyncio.gather(*(remove_finalizer(jm, pod) for pod in pods),
                                   return_exceptions=True)
    released: set[str] = set()
    first_error: Exception | None = None
    for pod, result in zip(pods, results, strict=True):
        if isinstance(result, Exception):
            expected.discard(uid_of(pod))  # no update will show this removal
            first_error = first_error or result
        else:
            released.add(uid_of(pod))
    return released, first_error


def _enact_job_finished(jm: JobControl, state: SyncState) -> bool:
    """enactJobFinished: set Complete or Failed once no pod is uncounted or terminating."""
    finished = state.finished
    if finished is None:
        return False
    status = state.job["status"]
    uncounted = status.get("uncountedTerminatedPods") or {}
    if uncounted.get("succeeded") or uncounted.get("failed") or state.terminating > 0:
        return False
    ensure_condition(status, finished["type"], finished["status"], finished["reason"],
                     finished["message"], jm.now())
    if finished["type"] == "Complete":
        status["completionTime"] = find_condition(state.job, "Complete")[
            "lastTransitionTime"]
    return True


def _record_job_finished(jm: JobControl, job: Obj, condition: Obj) -> None:
    """recordJobFinished: the events of a finished Job."""
    if condition["type"] == "Complete":
        completions = job["spec"].get("completions")
        if completions is not None and job["status"].get("succeeded", 0) > completions:
            jm.recorder.event(job, "Warning", "TooManySucceededPods",
                              "Too many succeeded pods running after completion count "
                              "reached")
        jm.recorder.event(job, "Normal", "Completed", "Job completed")
    else:
        jm.recorder.event(job, "Warning", condition["reason"], condition["message"])


async def _update_status(jm: JobControl, job: Obj) -> Obj:
    """PUT /status; returns the Job as stored, whose resourceVersion the next write needs."""
    updated = await jm.jobs_client.update_status(_wire_status(job))
    updated.setdefault("status", {}).setdefault("uncountedTerminatedPods", {})
    return updated


async def remove_finalizer(jm: JobControl, pod: Obj) -> None:
    """removeTrackingFinalizerPatch; a pod already gone needs nothing."""
    if not has_tracking_finalizer(pod):
        return
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}}
    try:
        await jm.pods_client.patch(pod["metadata"]["name"], patch,
                                   pod["metadata"]["namespace"], patch_type="strategic")
    except NotFound:
        pass


def _count_pods_without_finalizers(status: Obj, with_finalizer: set[str]) -> bool:
    """cleanUncountedPodsWithoutFinalizers: uncounted pods whose finalizer is gone move
    into status.succeeded / status.failed. Returns whether anything moved."""
    uncounted = status["uncountedTerminatedPods"]
    changed = False
    for kind in ("succeeded", "failed"):
        uids = uncounted.get(kind) or []
        still = [uid for uid in uids if uid in with_finalizer]
        if len(still) != len(uids):
            status[kind] = status.get(kind, 0) + len(uids) - len(still)
            uncounted[kind] = still
            changed = True
    return changed


def _wire_status(job: Obj) -> Obj:
    """The Job with its status as upstream serializes it: zero counters and empty lists
    left out (omitempty); ready, terminating and uncountedTerminatedPods always there."""
    status = job["status"]
    for name in ("active", "succeeded", "failed"):
        if not status.get(name):
            status.pop(name, None)
    if not status.get("completedIndexes"):
        status.pop("completedIndexes", None)
    if not status.get("conditions"):
        status.pop("conditions", None)
    uncounted = status.setdefault("uncountedTerminatedPods", {})
    for kind in ("succeeded", "failed"):
        if not uncounted.get(kind):
            uncounted.pop(kind, None)
    return job

