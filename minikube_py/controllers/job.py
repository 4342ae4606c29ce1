"""The Job controller: run a Job's pods until enough succeed, count them, finish the Job
(upstream pkg/controller/job: job_controller.go, backoff_utils.go, indexed_job_utils.go).

    job or pod event --> queue "ns/name" --> sync(key):
      1. claim the Job's pods (adopt matching orphans, release strays)
      2. count: active, ready, terminating; pods newly Succeeded or Failed
      3. decide: failed? (more failures than backoffLimit, past activeDeadlineSeconds)
      4. act:    finished -> delete the active pods; suspended -> delete them all;
                 too many -> delete some; too few -> create (after the pod-failure backoff)
      5. track:  finished pods go into status.uncountedTerminatedPods, then lose their
                 finalizer, then move into status.succeeded / status.failed
      6. finish: SuccessCriteriaMet / FailureTarget first; Complete / Failed once no pod
                 is left uncounted or terminating

Finalizer-based tracking: every pod the controller creates carries the
`batch.kubernetes.io/job-tracking` finalizer, so a finished pod cannot disappear (pod GC,
a user's delete) before the Job has counted it. Step 5 writes the pod's uid to the Job
status *before* removing the finalizer, and moves it to the counters only after: a crash
between the writes neither loses a pod nor counts it twice.

Not implemented: podFailurePolicy, backoffLimitPerIndex, successPolicy (pods fail and
succeed by phase alone), the NamespaceTerminating special case of pod creation errors.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from minikube_py.api.meta import parse_rfc3339, rfc3339
from minikube_py.api.podutil import is_pod_active, is_pod_ready, is_pod_terminating, pod_condition
from minikube_py.api.selectors import SelectorError, label_selector_from_dict
from minikube_py.client.errors import NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import object_key
from minikube_py.client.workqueue import RateLimitingQueue, ShutDown
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.controller_ref import (
    claim,
    controller_of,
    is_controlled_by,
    pod_from_template,
)
from minikube_py.controllers.controller_utils import SLOW_START_INITIAL_BATCH_SIZE, slow_start_batch
from minikube_py.controllers.expectations import ControllerExpectations

Obj = dict[str, Any]
log = logging.getLogger(__name__)

JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"  # spec.managedBy of Jobs we sync

# Module constants, as upstream's package variables (tests shorten them).
SYNC_JOB_BATCH_PERIOD = 1.0  # pod events within this many seconds share one sync
DEFAULT_POD_FAILURE_BACKOFF = 10.0  # delay before replacing a failed pod, doubling per failure
MAX_POD_FAILURE_BACKOFF = 600.0
MAX_UNCOUNTED_PODS = 500  # uids in status.uncountedTerminatedPods per sync
MAX_POD_CREATE_DELETE_PER_SYNC = 500

_MAX_GENERATED_NAME_LENGTH = 58  # names.MaxGeneratedNameLength: 63 minus 5 random characters


# --- Job conditions -------------------------------------------------------------------------


def finished_condition(job: Obj) -> str | None:
    """util.FinishedCondition: "Complete" or "Failed" if that condition is True, else None."""
    for condition in job.get("status", {}).get("conditions") or ():
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return condition["type"]
    return None


def is_job_finished(job: Obj) -> bool:
    """util.IsJobFinished: the Complete or the Failed condition is True."""
    return finished_condition(job) is not None


def _find_condition(job: Obj, condition_type: str) -> Obj | None:
    for condition in job.get("status", {}).get("conditions") or ():
        if condition.get("type") == condition_type:
            return condition
    return None


def _new_condition(condition_type: str, status: str, reason: str, message: str,
                   now: datetime) -> Obj:
    stamp = rfc3339(now)
    return {"type": condition_type, "status": status, "lastProbeTime": stamp,
            "lastTransitionTime": stamp, "reason": reason, "message": message}


def _ensure_condition(status: Obj, condition_type: str, value: str, reason: str, message: str,
                      now: datetime) -> bool:
    """ensureJobConditionStatus: set a condition; a missing one is not added as False.

    Returns whether the conditions changed.
    """
    conditions = status.setdefault("conditions", [])
    new = _new_condition(condition_type, value, reason, message, now)
    for i, condition in enumerate(conditions):
        if condition.get("type") == condition_type:
            if (condition.get("status"), condition.get("reason", ""),
                    condition.get("message", "")) == (value, reason, message):
                return False
            conditions[i] = new
            return True
    if value == "False":
        return False
    conditions.append(new)
    return True


# --- Pods -----------------------------------------------------------------------------------


def _uid(obj: Obj) -> str:
    return obj["metadata"]["uid"]


def _phase(pod: Obj) -> str:
    return pod.get("status", {}).get("phase", "")


def has_tracking_finalizer(pod: Obj) -> bool:
    return JOB_TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ())


def _only_replace_failed_pods(job: Obj) -> bool:
    """onlyReplaceFailedPods: podReplacementPolicy Failed waits for terminating pods to end."""
    spec = job["spec"]
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def is_pod_failed(pod: Obj, job: Obj) -> bool:
    """isPodFailed: phase Failed; or, unless only failed pods are replaced, being deleted
    before it succeeded (a pod deleted while running never reaches Failed)."""
    if _phase(pod) == "Failed":
        return True
    if _only_replace_failed_pods(job):
        return False
    return bool(pod["metadata"].get("deletionTimestamp")) and _phase(pod) != "Succeeded"


def _timestamp(text: str | None) -> float:
    return parse_rfc3339(text).timestamp() if text else float("inf")


def pod_finished_time(pod: Obj) -> datetime:
    """getFinishedTime: when the last container terminated; else when the pod turned not
    Ready; else its deletion time minus the grace period; else its creation time."""
    statuses = pod.get("status", {}).get("containerStatuses") or []
    finished = [(s.get("state") or {}).get("terminated", {}).get("finishedAt") for s in statuses]
    if finished and all(finished):
        return max(parse_rfc3339(stamp) for stamp in finished)
    ready = pod_condition(pod, "Ready")
    if ready is not None and ready.get("status") == "False" and ready.get("lastTransitionTime"):
        return parse_rfc3339(ready["lastTransitionTime"])
    meta = pod["metadata"]
    if meta.get("deletionTimestamp"):
        grace = meta.get("deletionGracePeriodSeconds") or 0
        return parse_rfc3339(meta["deletionTimestamp"]) - timedelta(seconds=grace)
    return parse_rfc3339(meta["creationTimestamp"])


_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_order(pod: Obj) -> tuple[bool, int, bool, float, int, float]:
    """controller.ActivePods: delete the pods that got least far first (unscheduled <
    scheduled, Pending < Unknown < Running, not ready < ready, ready for less time, more
    restarts, newer)."""
    ready = is_pod_ready(pod)
    ready_since = (pod_condition(pod, "Ready") or {}).get("lastTransitionTime")
    statuses = pod.get("status", {}).get("containerStatuses") or []
    restarts = max((s.get("restartCount", 0) for s in statuses), default=0)
    return (bool(pod.get("spec", {}).get("nodeName")), _PHASE_ORDINAL.get(_phase(pod), 0), ready,
            -_timestamp(ready_since) if ready else 0.0, -restarts,
            -_timestamp(pod["metadata"].get("creationTimestamp")))


# --- Indexed Jobs ---------------------------------------------------------------------------


def is_indexed(job: Obj) -> bool:
    return job["spec"].get("completionMode") == "Indexed"


def completion_index(pod: Obj) -> int | None:
    """getCompletionIndex: the pod's index annotation, None when missing or not a number."""
    value = (pod["metadata"].get("annotations") or {}).get(JOB_COMPLETION_INDEX, "")
    return int(value) if value.isdigit() else None


def _index_order(pod: Obj) -> int:
    """byCompletionIndex: pods without an index first."""
    index = completion_index(pod)
    return -1 if index is None else index


def parse_indexes(text: str, completions: int) -> set[int]:
    """parseIndexesFromString: "1,3-5" -> {1, 3, 4, 5}, ignoring indexes >= completions."""
    indexes: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            continue
        indexes.update(range(int(first), min(int(last or first), completions - 1) + 1))
    return indexes


def format_indexes(indexes: set[int]) -> str:
    """orderedIntervals.String: {0, 1, 2, 5, 6} -> "0-2,5,6" (a range needs three)."""
    parts: list[str] = []
    ordered = sorted(indexes)
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        first, last = ordered[start], ordered[end]
        if last == first:
            parts.append(str(first))
        elif last == first + 1:
            parts += [str(first), str(last)]
        else:
            parts.append(f"{first}-{last}")
        start = end + 1
    return ",".join(parts)


def _pod_generate_name_with_index(job_name: str, index: int) -> str:
    """podGenerateNameWithIndex: `<job>-<index>-`, the job name cut to fit."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > _MAX_GENERATED_NAME_LENGTH:
        prefix = job_name[:_MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix


def _add_completion_index_env(template: Obj) -> None:
    """addCompletionIndexEnvVariables: JOB_COMPLETION_INDEX from the pod's index label."""
    pod_spec = template.setdefault("spec", {})
    for container in [*(pod_spec.get("initContainers") or []), *pod_spec.get("containers", [])]:
        env = container.setdefault("env", [])
        if not any(variable.get("name") == COMPLETION_INDEX_ENV for variable in env):
            env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.labels['{JOB_COMPLETION_INDEX}']"}}})


def _pods_for_removal(job: Obj, pods: list[Obj], at_least: int) -> list[Obj]:
    """activePodsForRemoval: for Indexed Jobs, pods without a valid index and all but one
    pod per index; then, to reach `at_least`, those that got least far."""
    remove: list[Obj] = []
    keep = pods
    if is_indexed(job):
        keep = []
        by_index: dict[int, list[Obj]] = {}
        for pod in pods:
            index = completion_index(pod)
            if index is None or index >= job["spec"]["completions"]:
                remove.append(pod)
            else:
                by_index.setdefault(index, []).append(pod)
        for same_index in by_index.values():
            same_index.sort(key=_deletion_order)
            remove += same_index[:-1]
            keep.append(same_index[-1])
    if len(remove) < at_least:
        remove += sorted(keep, key=_deletion_order)[:at_least - len(remove)]
    return remove


# --- Pod failure backoff --------------------------------------------------------------------


@dataclass
class BackoffRecord:
    """backoffRecord: pod failures since the last success, and when the latest happened."""

    failures_after_last_success: int = 0
    last_failure_time: datetime | None = None

    def with_new_pods(self, succeeded: list[Obj], failed: list[Obj]) -> BackoffRecord:
        """newBackoffRecord: a success resets the count; failures after it add up."""
        failed_times = sorted(pod_finished_time(pod) for pod in failed)
        if not succeeded:
            if not failed_times:
                return self
            return BackoffRecord(self.failures_after_last_success + len(failed_times),
                                 failed_times[-1])
        last_success = max(pod_finished_time(pod) for pod in succeeded)
        after = [moment for moment in failed_times if moment > last_success]
        return BackoffRecord(len(after), after[-1] if after else None)

    def remaining(self, now: datetime) -> float:
        """getRemainingTime: seconds until a replacement pod may be created: the base
        delay doubled per failure after the first, capped."""
        if self.failures_after_last_success == 0 or self.last_failure_time is None:
            return 0.0
        delay = min(DEFAULT_POD_FAILURE_BACKOFF * 2 ** (self.failures_after_last_success - 1),
                    MAX_POD_FAILURE_BACKOFF)
        return max(0.0, delay - (now - self.last_failure_time).total_seconds())


# --- One sync -------------------------------------------------------------------------------


@dataclass
class _SyncState:
    """syncJobCtx: what one sync has learned about a Job and its pods."""

    job: Obj
    pods: list[Obj]
    active_pods: list[Obj]
    uncounted_succeeded: set[str]
    uncounted_failed: set[str]
    expected_removals: set[str]  # pods whose finalizer removal the cache has not shown yet
    ready: int = 0
    terminating: int = 0
    succeeded: int = 0
    failed: int = 0
    finished: Obj | None = None  # the condition the Job is heading for
    backoff: BackoffRecord = field(default_factory=BackoffRecord)
    prev_succeeded_indexes: set[int] = field(default_factory=set)
    succeeded_indexes: set[int] = field(default_factory=set)


class JobController(Controller):
    """Keep each Job's pods running until it completes or fails (upstream job.Controller)."""

    name = "job"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.jobs = self.informer("jobs", "batch")
        self.pods = self.informer("pods")
        self.jobs_client = self.client.resource("jobs", "batch")
        self.pods_client = self.client.resource("pods")
        self.expectations = ControllerExpectations()
        # uidTrackingExpectations: per Job, pods whose finalizer we removed but the cache
        # still shows; they are not counted again meanwhile.
        self.finalizer_expectations: dict[str, set[str]] = {}
        self.backoff_records: dict[str, BackoffRecord] = {}
        # Pods that still carry the tracking finalizer but whose Job is gone or finished.
        self.orphan_queue = RateLimitingQueue("job_orphan_pod", metrics=ctx.workqueue_metrics)
        self.jobs.add_event_handler(EventHandler(
            on_add=self._enqueue_now, on_update=self._job_updated, on_delete=self._job_deleted))
        self.pods.add_event_handler(EventHandler(
            on_add=self._pod_added, on_update=self._pod_updated,
            on_delete=lambda pod: self._pod_deleted(pod, final=True)))

    async def run(self, workers: int | None = None) -> None:
        """The Job workers, plus one worker removing finalizers from orphaned pods."""
        orphans = asyncio.create_task(self._orphan_worker(), name="job-orphan-pod-worker")
        try:
            await super().run(workers)
        finally:
            self.orphan_queue.shut_down()
            orphans.cancel()
            await asyncio.gather(orphans, return_exceptions=True)

    # -- event handlers ----------------------------------------------------------------------

    def _enqueue_now(self, job: Obj) -> None:
        """Job created, deleted, or its spec changed: sync at once."""
        self.queue.add(object_key(job))

    def _enqueue_batched(self, job: Obj) -> None:
        """Pod events and status updates: one sync per batch period."""
        self.queue.add_after(object_key(job), SYNC_JOB_BATCH_PERIOD)

    def _job_updated(self, old: Obj, new: Obj) -> None:
        """updateJob: a new spec syncs at once, a status change batched; a finished Job's
        pods lose their finalizer; a changed activeDeadlineSeconds needs a timer."""
        if new["metadata"].get("generation") == old["metadata"].get("generation"):
            self._enqueue_batched(new)
        else:
            self._enqueue_now(new)
        if is_job_finished(new):
            self._cleanup_pod_finalizers(new)
        deadline = new["spec"].get("activeDeadlineSeconds")
        start = new.get("status", {}).get("startTime")
        if start and deadline is not None and deadline != old["spec"].get(
                "activeDeadlineSeconds"):
            elapsed = (self.now() - parse_rfc3339(start)).total_seconds()
            self.queue.add_after(object_key(new), deadline - elapsed)

    def _job_deleted(self, job: Obj) -> None:
        """deleteJob: forget the Job and release its pods' finalizers."""
        self._enqueue_now(job)
        self._cleanup_pod_finalizers(job)

    def _cleanup_pod_finalizers(self, job: Obj) -> None:
        """Pods of a finished or deleted Job that still have the finalizer: let them go."""
        for pod in self.pods.store.list(job["metadata"]["namespace"]):
            if is_controlled_by(pod, job) and has_tracking_finalizer(pod):
                self.orphan_queue.add(object_key(pod))

    def _resolve_controller_ref(self, namespace: str, reference: Obj) -> Obj | None:
        """resolveControllerRef: the Job an ownerReference names, if it is that very Job."""
        if reference.get("kind") != "Job":
            return None
        job = self.jobs.store.get_by_name(namespace, reference.get("name", ""))
        if job is None or _uid(job) != reference.get("uid"):
            return None
        return job

    def _jobs_selecting(self, pod: Obj) -> list[Obj]:
        """GetPodJobs: the Jobs whose selector matches the pod (candidates to adopt it)."""
        labels = pod["metadata"].get("labels")
        if not labels:
            return []
        matching = []
        for job in self.jobs.store.list(pod["metadata"]["namespace"]):
            try:
                selector = label_selector_from_dict(job["spec"].get("selector"))
            except SelectorError:
                continue
            if not selector.empty() and selector.matches(labels):
                matching.append(job)
        return matching

    def _pod_added(self, pod: Obj) -> None:
        """addPod: a creation we expected; an orphan may be adopted or released."""
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod, final=False)
            return
        reference = controller_of(pod)
        if reference is not None:
            job = self._resolve_controller_ref(pod["metadata"]["namespace"], reference)
            if job is not None:
                self.expectations.creation_observed(object_key(job))
                self._enqueue_batched(job)
            return
        if has_tracking_finalizer(pod):
            self.orphan_queue.add(object_key(pod))
        for job in self._jobs_selecting(pod):
            self._enqueue_batched(job)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        """updatePod: wake the Job (old and new owner); note finalizer removals we await."""
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if new["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new, final=False)
            return
        namespace = new["metadata"]["namespace"]
        finalizer_removed = not has_tracking_finalizer(new)
        reference, old_reference = controller_of(new), controller_of(old)
        reference_changed = reference != old_reference
        if reference_changed and old_reference is not None:
            job = self._resolve_controller_ref(namespace, old_reference)
            if job is not None:
                if finalizer_removed:
                    self._finalizer_removal_observed(object_key(job), _uid(new))
                self._enqueue_batched(job)
        if reference is not None:
            job = self._resolve_controller_ref(namespace, reference)
            if job is not None:
                if finalizer_removed:
                    self._finalizer_removal_observed(object_key(job), _uid(new))
                self._enqueue_batched(job)
            return
        if has_tracking_finalizer(new):
            self.orphan_queue.add(object_key(new))
        if reference_changed or old["metadata"].get("labels") != new["metadata"].get("labels"):
            for job in self._jobs_selecting(new):
                self._enqueue_batched(job)

    def _pod_deleted(self, pod: Obj, *, final: bool) -> None:
        """A pod is gone (final) or being deleted: its Job may need a replacement."""
        reference = controller_of(pod)
        has_finalizer = has_tracking_finalizer(pod)
        if reference is None:
            if has_finalizer:
                self.orphan_queue.add(object_key(pod))
            return
        job = self._resolve_controller_ref(pod["metadata"]["namespace"], reference)
        if job is None or is_job_finished(job):
            if has_finalizer:
                self.orphan_queue.add(object_key(pod))
            return
        key = object_key(job)
        self.expectations.deletion_observed(key, object_key(pod))
        if final or not has_finalizer:
            self._finalizer_removal_observed(key, _uid(pod))
        self._enqueue_batched(job)

    def _finalizer_removal_observed(self, key: str, uid: str) -> None:
        self.finalizer_expectations.get(key, set()).discard(uid)

    # -- orphan pods ---------------------------------------------------------------------------

    async def _orphan_worker(self) -> None:
        """The orphanQueue's worker: one key at a time, retried with backoff."""
        while True:
            try:
                key = await self.orphan_queue.get()
            except ShutDown:
                return
            try:
                await self._sync_orphan_pod(key)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.info("job: removing the finalizer of orphan pod %s: %s", key, error)
                self.orphan_queue.add_rate_limited(key)
            else:
                self.orphan_queue.forget(key)
            finally:
                self.orphan_queue.done(key)

    async def _sync_orphan_pod(self, key: str) -> None:
        """syncOrphanPod: remove the finalizer unless a running Job (still) owns the pod."""
        pod = self.pods.store.get(key)
        if pod is None:
            return
        reference = controller_of(pod)
        if reference is not None:
            if reference.get("kind") != "Job" or reference.get("apiVersion") != "batch/v1":
                return
            job = self._resolve_controller_ref(pod["metadata"]["namespace"], reference)
            if job is not None and (_managed_elsewhere(job) or not is_job_finished(job)):
                return
        await self._remove_finalizer(pod)

    async def _remove_finalizer(self, pod: Obj) -> None:
        """removeTrackingFinalizerPatch; a pod already gone needs nothing."""
        if not has_tracking_finalizer(pod):
            return
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}}
        try:
            await self.pods_client.patch(pod["metadata"]["name"], patch,
                                         pod["metadata"]["namespace"], patch_type="strategic")
        except NotFound:
            pass

    # -- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """syncJob: reconcile one Job with its pods and write what happened to its status."""
        shared = self.jobs.store.get(key)
        if shared is None:
            self.expectations.delete(key)
            self.finalizer_expectations.pop(key, None)
            self.backoff_records.pop(key, None)
            return
        if _managed_elsewhere(shared):
            return
        if is_job_finished(shared):
            self.backoff_records.pop(key, None)
            return
        job = copy.deepcopy(shared)
        spec = job["spec"]
        if spec.get("completionMode", "NonIndexed") not in ("NonIndexed", "Indexed"):
            self.recorder.event(job, "Warning", "UnknownCompletionMode",
                                "Skipped Job sync because completion mode is unknown")
            return
        status = job.setdefault("status", {})
        # Check expectations before reading pods: a pod created after this is seen next sync.
        satisfied = self.expectations.satisfied(key)
        state = await self._observe(key, job)
        now = self.now()
        started = not status.get("startTime") and not spec.get("suspend")
        if started:
            status["startTime"] = rfc3339(now)
        self._decide_failure(key, state, now)
        if is_indexed(job):
            state.prev_succeeded_indexes, state.succeeded_indexes = _succeeded_indexes(
                job, state.pods)
            state.succeeded = len(state.succeeded_indexes)
        active, suspend_changed, manage_error = await self._act(key, state, satisfied, now)
        needs_flush = started or suspend_changed or (
            (active, state.ready, state.terminating)
            != (status.get("active", 0), status.get("ready"), status.get("terminating")))
        status["active"], status["ready"] = active, state.ready
        status["terminating"] = state.terminating
        await self._track_status_and_remove_finalizers(key, state, needs_flush)
        if manage_error is not None:
            raise manage_error

    async def _observe(self, key: str, job: Obj) -> _SyncState:
        """Claim the Job's pods and count them: active, ready, terminating, newly finished."""
        pods = await self._pods_for_job(job)
        status = job["status"]
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        state = _SyncState(
            job=job, pods=pods, active_pods=[pod for pod in pods if is_pod_active(pod)],
            uncounted_succeeded=set(uncounted.get("succeeded") or ()),
            uncounted_failed=set(uncounted.get("failed") or ()),
            expected_removals=set(self.finalizer_expectations.get(key, ())))
        state.ready = sum(1 for pod in state.active_pods if is_pod_ready(pod))
        state.terminating = sum(1 for pod in pods if is_pod_terminating(pod))
        new_succeeded, new_failed = self._new_finished_pods(state)
        state.succeeded = (status.get("succeeded", 0) + len(new_succeeded)
                           + len(state.uncounted_succeeded))
        state.failed = status.get("failed", 0) + len(new_failed) + len(state.uncounted_failed)
        state.backoff = self.backoff_records.get(key, BackoffRecord()).with_new_pods(
            new_succeeded, new_failed)
        return state

    async def _act(self, key: str, state: _SyncState, satisfied: bool, now: datetime
                   ) -> tuple[int, bool, Exception | None]:
        """Stop the pods of a finished Job, or manage them and see whether it completed.

        Returns the active pods left, whether the Suspended condition changed, and the
        first error (reported after the status is written).
        """
        job = state.job
        active = len(state.active_pods)
        if state.finished is not None:
            deleted_ready, deleted, error = await self._delete_active_pods(
                job, state.active_pods)
            if deleted != active or not satisfied:
                state.finished = None  # pods or finalizers left to see first
            state.terminating += deleted
            state.ready -= deleted_ready
            return active - deleted, False, error
        error = None
        managed = satisfied and not job["metadata"].get("deletionTimestamp")
        if managed:
            active, error = await self._manage_job(key, state)
        completions = job["spec"].get("completions")
        if completions is None:  # a work queue: done when any pod succeeded and none runs
            complete = state.succeeded > 0 and active == 0
        else:
            complete = state.succeeded >= completions and active == 0
        if complete:
            state.finished = _new_condition("SuccessCriteriaMet", "True", "CompletionsReached",
                                            "Reached expected number of succeeded pods", now)
            return active, False, error
        # Only a sync that managed the pods updates the Suspended condition.
        return active, managed and self._update_suspended_condition(job, now), error

    def _new_finished_pods(self, state: _SyncState) -> tuple[list[Obj], list[Obj]]:
        """getNewFinishedPods: finished pods not yet counted, in uncounted, or in flight."""
        succeeded: list[Obj] = []
        failed: list[Obj] = []
        completions = state.job["spec"].get("completions")
        for pod in state.pods:
            uid = _uid(pod)
            if not has_tracking_finalizer(pod) or uid in state.expected_removals:
                continue
            if is_indexed(state.job):
                index = completion_index(pod)
                if index is None or index >= completions:
                    continue
            if _phase(pod) == "Succeeded" and uid not in state.uncounted_succeeded:
                succeeded.append(pod)
            elif is_pod_failed(pod, state.job) and uid not in state.uncounted_failed:
                failed.append(pod)
        return succeeded, failed

    def _decide_failure(self, key: str, state: _SyncState, now: datetime) -> None:
        """Has the Job failed (too many pod failures, too long active)? A failure or
        success decided in an earlier sync stands."""
        job = state.job
        spec = job["spec"]
        state.finished = _find_condition(job, "SuccessCriteriaMet")
        if state.finished is not None and state.finished.get("status") == "True":
            return
        state.finished = None
        target = _find_condition(job, "FailureTarget")
        if target is not None and target.get("status") == "True":
            state.finished = _new_condition("Failed", "True", target.get("reason", ""),
                                            target.get("message", ""), now)
        elif state.failed > spec["backoffLimit"] or _past_backoff_limit_on_failure(job,
                                                                                  state.pods):
            state.finished = _new_condition("FailureTarget", "True", "BackoffLimitExceeded",
                                            "Job has reached the specified backoff limit", now)
        elif self._past_active_deadline(job, now):
            state.finished = _new_condition("FailureTarget", "True", "DeadlineExceeded",
                                            "Job was active longer than specified deadline", now)
        elif spec.get("activeDeadlineSeconds") is not None and not spec.get("suspend"):
            elapsed = (now - parse_rfc3339(job["status"]["startTime"])).total_seconds()
            self.queue.add_after(key, spec["activeDeadlineSeconds"] - elapsed)

    @staticmethod
    def _past_active_deadline(job: Obj, now: datetime) -> bool:
        """pastActiveDeadline: active (not suspended) for activeDeadlineSeconds or more."""
        deadline = job["spec"].get("activeDeadlineSeconds")
        start = job.get("status", {}).get("startTime")
        if deadline is None or not start or job["spec"].get("suspend"):
            return False
        return (now - parse_rfc3339(start)).total_seconds() >= deadline

    def _update_suspended_condition(self, job: Obj, now: datetime) -> bool:
        """The Suspended condition, its events, and a fresh startTime on resume."""
        status = job["status"]
        if job["spec"].get("suspend"):
            if _ensure_condition(status, "Suspended", "True", "JobSuspended", "Job suspended",
                                 now):
                self.recorder.event(job, "Normal", "Suspended", "Job suspended")
                return True
            return False
        if _ensure_condition(status, "Suspended", "False", "JobResumed", "Job resumed", now):
            self.recorder.event(job, "Normal", "Resumed", "Job resumed")
            # activeDeadlineSeconds counts the time the Job has been running continuously.
            status["startTime"] = rfc3339(now)
            return True
        return False

    async def _pods_for_job(self, job: Obj) -> list[Obj]:
        """getPodsForJob: claim the namespace's pods; adopted pods get the finalizer."""
        selector = label_selector_from_dict(job["spec"].get("selector"))
        candidates = self.pods.store.list(job["metadata"]["namespace"])
        owned_before = {_uid(pod) for pod in candidates if is_controlled_by(pod, job)}
        pods = []
        for pod in await claim(self.pods_client, job, selector, candidates):
            if _uid(pod) not in owned_before and not has_tracking_finalizer(pod):
                try:
                    pod = await self.pods_client.patch(
                        pod["metadata"]["name"],
                        {"metadata": {"finalizers": [JOB_TRACKING_FINALIZER]}},
                        pod["metadata"]["namespace"], patch_type="strategic")
                except NotFound:
                    continue
            pods.append(pod)
        return pods

    # -- manageJob ---------------------------------------------------------------------------

    async def _manage_job(self, key: str, state: _SyncState) -> tuple[int, Exception | None]:
        """manageJob: delete pods beyond what is wanted, or create the missing ones.

        Returns the number of active pods afterwards and the first error.
        """
        job = state.job
        spec = job["spec"]
        active = len(state.active_pods)
        if spec.get("suspend"):
            doomed = _pods_for_removal(job, state.active_pods, active)
            return await self._delete_for_manage(key, state, doomed, active)
        completions = spec.get("completions")
        if completions is None:  # keep whatever runs once one pod succeeded
            wanted = active if state.succeeded > 0 else spec["parallelism"]
        else:
            wanted = max(0, min(completions - state.succeeded, spec["parallelism"]))
        doomed = _pods_for_removal(job, state.active_pods, max(0, active - wanted))
        if doomed:  # deleting takes precedence over creating within one sync
            return await self._delete_for_manage(
                key, state, doomed[:MAX_POD_CREATE_DELETE_PER_SYNC], active)
        terminating = state.terminating if _only_replace_failed_pods(job) else 0
        missing = wanted - terminating - active
        if missing <= 0:
            return active, None
        remaining = state.backoff.remaining(self.now())
        if remaining > 0:
            self.queue.add_after(key, max(remaining, SYNC_JOB_BATCH_PERIOD))
            return active, None
        missing = min(missing, MAX_POD_CREATE_DELETE_PER_SYNC)
        indexes: list[int | None] = [None] * missing
        if is_indexed(job):
            indexes = list(_first_pending_indexes(state, missing, completions))
        created, error = await self._create_pods(key, job, indexes)
        return active + created, error

    async def _delete_for_manage(self, key: str, state: _SyncState, doomed: list[Obj],
                                 active: int) -> tuple[int, Exception | None]:
        """Delete pods manageJob no longer wants, expecting to see each deletion."""
        self.expectations.expect_deletions(key, [object_key(pod) for pod in doomed])
        deleted_ready, deleted, error = await self._delete_job_pods(key, state.job, doomed)
        state.terminating += deleted
        state.ready -= deleted_ready
        return active - deleted, error

    async def _create_pods(self, key: str, job: Obj, indexes: list[int | None]
                           ) -> tuple[int, Exception | None]:
        """Create pods in slow-start batches (1, 2, 4, ...); stop after a failing batch.

        Returns how many were created and the first error.
        """
        self.expectations.expect_creations(key, len(indexes))
        template = copy.deepcopy(job["spec"]["template"])
        if is_indexed(job):
            _add_completion_index_env(template)
        finalizers = template.setdefault("metadata", {}).setdefault("finalizers", [])
        if JOB_TRACKING_FINALIZER not in finalizers:
            finalizers.append(JOB_TRACKING_FINALIZER)
        created, errors = await slow_start_batch(
            len(indexes), SLOW_START_INITIAL_BATCH_SIZE,
            lambda i: self._create_pod(job, template, indexes[i]))
        # Failed creations, and those never attempted, will never be observed.
        self.expectations.lower_creations(key, len(indexes) - created)
        return created, errors[0] if errors else None

    async def _create_pod(self, job: Obj, template: Obj, index: int | None) -> None:
        """CreatePodsWithGenerateName: one pod, named `<job>-` (`<job>-<index>-` when
        Indexed), owned by the Job; an Indexed pod carries its index and hostname."""
        prefix = None
        if index is not None:
            template = copy.deepcopy(template)
            metadata = template["metadata"]
            metadata.setdefault("annotations", {})[JOB_COMPLETION_INDEX] = str(index)
            metadata.setdefault("labels", {})[JOB_COMPLETION_INDEX] = str(index)
            template.setdefault("spec", {})["hostname"] = f"{job['metadata']['name']}-{index}"
            prefix = _pod_generate_name_with_index(job["metadata"]["name"], index)
        pod = pod_from_template(template, job, name_prefix=prefix)
        try:
            created = await self.pods_client.create(pod)
        except Exception as error:
            self.recorder.event(job, "Warning", "FailedCreate", f"Error creating: {error}")
            raise
        self.recorder.event(job, "Normal", "SuccessfulCreate",
                            f"Created pod: {created['metadata']['name']}")

    async def _delete_job_pods(self, key: str, job: Obj, pods: list[Obj]
                               ) -> tuple[int, int, Exception | None]:
        """deleteJobPods: remove the finalizer (the pod is not counted), then delete.

        Returns (ready pods deleted, pods deleted, first error).
        """
        async def delete(pod: Obj) -> None:
            try:
                await self._remove_finalizer(pod)
                deleted = await self._delete_pod(job, pod)
            except Exception:
                self.expectations.lower_deletion(key, object_key(pod))
                raise
            if not deleted:  # gone already: no informer event will report it
                self.expectations.lower_deletion(key, object_key(pod))

        return await self._delete_all(pods, delete)

    async def _delete_active_pods(self, job: Obj, pods: list[Obj]
                                  ) -> tuple[int, int, Exception | None]:
        """deleteActivePods: delete, keeping the finalizers: the pods are counted as failed."""
        return await self._delete_all(pods, lambda pod: self._delete_pod(job, pod))

    @staticmethod
    async def _delete_all(pods: list[Obj], delete: Callable[[Obj], Awaitable[object]]
                          ) -> tuple[int, int, Exception | None]:
        """Delete concurrently: (ready pods among them, deletions that worked, first error)."""
        results = await asyncio.gather(*(delete(pod) for pod in pods), return_exceptions=True)
        errors = [result for result in results if isinstance(result, Exception)]
        ready = sum(1 for pod in pods if is_pod_ready(pod))
        return ready, len(pods) - len(errors), errors[0] if errors else None

    async def _delete_pod(self, job: Obj, pod: Obj) -> bool:
        """PodControl.DeletePod. A pod already gone counts as deleted; returns False then."""
        name = pod["metadata"]["name"]
        try:
            await self.pods_client.delete(name, pod["metadata"]["namespace"])
        except NotFound:
            return False
        except Exception as error:
            self.recorder.event(job, "Warning", "FailedDelete", f"Error deleting: {error}")
            raise
        self.recorder.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")
        return True

    # -- status tracking ---------------------------------------------------------------------

    async def _track_status_and_remove_finalizers(self, key: str, state: _SyncState,
                                                  needs_flush: bool) -> None:
        """trackJobStatusAndRemoveFinalizers: record finished pods in uncountedTerminatedPods,
        remove their finalizers, count them; then finish the Job if it is done."""
        job = state.job
        status = job["status"]
        uncounted = status["uncountedTerminatedPods"]
        indexed = is_indexed(job)
        completions = job["spec"].get("completions")
        pods = sorted(state.pods, key=_index_order) if indexed else state.pods
        with_finalizer = {_uid(pod) for pod in pods if has_tracking_finalizer(pod)
                          and _uid(pod) not in state.expected_removals}
        needs_flush |= _count_pods_without_finalizers(status, with_finalizer)
        to_release: list[Obj] = []
        new_indexes: set[int] = set()
        reached_max = False
        for pod in pods:
            uid = _uid(pod)
            if uid not in with_finalizer:
                continue  # counted in an earlier sync
            failed = is_pod_failed(pod, job)
            if not (job["metadata"].get("deletionTimestamp") or state.finished is not None
                    or _phase(pod) == "Succeeded" or failed):
                continue  # canRemoveFinalizer: the pod still runs
            to_release.append(pod)
            index = completion_index(pod)
            if _phase(pod) == "Succeeded" and uid not in state.uncounted_failed:
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
        needs_flush |= self._record_interim_condition(state)
        needs_flush = await self._flush_and_remove_finalizers(
            key, state, to_release, with_finalizer, needs_flush)
        finished = not reached_max and self._enact_job_finished(state)
        if needs_flush or finished:
            state.job = await self._update_status(state.job)
            if finished:
                self._record_job_finished(state.job, state.finished)

    def _record_interim_condition(self, state: _SyncState) -> bool:
        """Write FailureTarget / SuccessCriteriaMet now; the terminal Failed / Complete
        condition (same reason and message) waits until every pod is counted."""
        finished = state.finished
        if finished is None:
            return False
        conditions = state.job["status"].setdefault("conditions", [])
        now = self.now()
        if finished["type"] == "FailureTarget":
            conditions.append(finished)
            state.finished = _new_condition("Failed", "True", finished["reason"],
                                            finished["message"], now)
            return True
        if finished["type"] == "SuccessCriteriaMet":
            changed = _find_condition(state.job, "SuccessCriteriaMet") is None
            if changed:
                conditions.append(finished)
            state.finished = _new_condition("Complete", "True", finished["reason"],
                                            finished["message"], now)
            return changed
        return False

    async def _flush_and_remove_finalizers(self, key: str, state: _SyncState,
                                           to_release: list[Obj], with_finalizer: set[str],
                                           needs_flush: bool) -> bool:
        """flushUncountedAndRemoveFinalizers: write the uncounted uids, remove the pods'
        finalizers, then move the released uids into the counters.

        Returns whether the status has changes still to write.
        """
        if needs_flush:
            state.job = await self._update_status(state.job)
            self.backoff_records[key] = state.backoff
            needs_flush = False
        error: Exception | None = None
        if to_release:
            released, error = await self._remove_tracking_finalizers(key, to_release)
            with_finalizer -= released
        if _count_pods_without_finalizers(state.job["status"], with_finalizer):
            needs_flush = True
        if error is not None:
            if needs_flush:  # keep the partial progress
                state.job = await self._update_status(state.job)
            raise error
        return needs_flush

    async def _remove_tracking_finalizers(self, key: str, pods: list[Obj]
                                          ) -> tuple[set[str], Exception | None]:
        """removeTrackingFinalizerFromPods: returns the uids released and the first error."""
        expected = self.finalizer_expectations.setdefault(key, set())
        expected.update(_uid(pod) for pod in pods)
        results = await asyncio.gather(*(self._remove_finalizer(pod) for pod in pods),
                                       return_exceptions=True)
        released: set[str] = set()
        first_error: Exception | None = None
        for pod, result in zip(pods, results, strict=True):
            if isinstance(result, Exception):
                expected.discard(_uid(pod))  # no update will show this removal
                first_error = first_error or result
            else:
                released.add(_uid(pod))
        return released, first_error

    def _enact_job_finished(self, state: _SyncState) -> bool:
        """enactJobFinished: set Complete or Failed once no pod is uncounted or terminating."""
        finished = state.finished
        if finished is None:
            return False
        status = state.job["status"]
        uncounted = status.get("uncountedTerminatedPods") or {}
        if uncounted.get("succeeded") or uncounted.get("failed") or state.terminating > 0:
            return False
        _ensure_condition(status, finished["type"], finished["status"], finished["reason"],
                          finished["message"], self.now())
        if finished["type"] == "Complete":
            status["completionTime"] = _find_condition(state.job, "Complete")[
                "lastTransitionTime"]
        return True

    def _record_job_finished(self, job: Obj, condition: Obj) -> None:
        """recordJobFinished: the events of a finished Job."""
        if condition["type"] == "Complete":
            completions = job["spec"].get("completions")
            if completions is not None and job["status"].get("succeeded", 0) > completions:
                self.recorder.event(job, "Warning", "TooManySucceededPods",
                                    "Too many succeeded pods running after completion count "
                                    "reached")
            self.recorder.event(job, "Normal", "Completed", "Job completed")
        else:
            self.recorder.event(job, "Warning", condition["reason"], condition["message"])

    async def _update_status(self, job: Obj) -> Obj:
        """PUT /status; returns the Job as stored, whose resourceVersion the next write needs."""
        updated = await self.jobs_client.update_status(_wire_status(job))
        updated.setdefault("status", {}).setdefault("uncountedTerminatedPods", {})
        return updated


def _managed_elsewhere(job: Obj) -> bool:
    """spec.managedBy names another controller: this one leaves the Job alone."""
    managed_by = job["spec"].get("managedBy")
    return managed_by is not None and managed_by != JOB_CONTROLLER_NAME


def _past_backoff_limit_on_failure(job: Obj, pods: list[Obj]) -> bool:
    """pastBackoffLimitOnFailure: with restartPolicy OnFailure the kubelet restarts failed
    containers in place, so their restarts count against backoffLimit."""
    spec = job["spec"]
    if spec["template"].get("spec", {}).get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for pod in pods:
        if _phase(pod) in ("Running", "Pending"):
            status = pod.get("status", {})
            for container in [*(status.get("initContainerStatuses") or []),
                              *(status.get("containerStatuses") or [])]:
                restarts += container.get("restartCount", 0)
    if spec["backoffLimit"] == 0:
        return restarts > 0
    return restarts >= spec["backoffLimit"]


def _succeeded_indexes(job: Obj, pods: list[Obj]) -> tuple[set[int], set[int]]:
    """calculateSucceededIndexes: the indexes in status.completedIndexes, and those plus
    the indexes of succeeded pods not yet counted."""
    completions = job["spec"]["completions"]
    previous = parse_indexes(job["status"].get("completedIndexes", ""), completions)
    current = set(previous)
    for pod in pods:
        index = completion_index(pod)
        if (_phase(pod) == "Succeeded" and index is not None and index < completions
                and has_tracking_finalizer(pod)):
            current.add(index)
    return previous, current


def _first_pending_indexes(state: _SyncState, count: int, completions: int) -> list[int]:
    """firstPendingIndexes: the lowest indexes neither succeeded nor running (nor, when
    only failed pods are replaced, terminating)."""
    taken = set(state.succeeded_indexes)
    taken.update(completion_index(pod) for pod in state.active_pods)
    if _only_replace_failed_pods(state.job):
        taken.update(completion_index(pod) for pod in state.pods if is_pod_terminating(pod))
    pending = (index for index in range(completions) if index not in taken)
    return list(itertools.islice(pending, count))


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

