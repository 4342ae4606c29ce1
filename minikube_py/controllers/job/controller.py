"""The Job controller: run a Job's pods until enough succeed, count them, finish the Job
(upstream pkg/controller/job/job_controller.go).

    job or pod event --> queue "ns/name" --> sync(key):
      1. claim the Job's pods (adopt matching orphans, release strays)
      2. count: active, ready, terminating; pods newly Succeeded or Failed
      3. decide: failed? (more failures than backoffLimit, past activeDeadlineSeconds)
      4. act:    finished -> delete the active pods; suspended -> delete them all;
                 too many -> delete some; too few -> create (after the pod-failure backoff,
                 backoff.py; Indexed Jobs pick the lowest pending indexes, indexed.py)
      5. track:  finished pods go into status.uncountedTerminatedPods, then lose their
                 finalizer, then move into status.succeeded / status.failed (tracking.py)
      6. finish: SuccessCriteriaMet / FailureTarget first; Complete / Failed once no pod
                 is left uncounted or terminating (tracking.py)

Not implemented: podFailurePolicy, backoffLimitPerIndex, successPolicy (pods fail and
succeed by phase alone), the NamespaceTerminating special case of pod creation errors.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from minikube_py.api import Obj
from minikube_py.api.meta import parse_rfc3339, rfc3339
from minikube_py.api.podutil import is_pod_active, is_pod_ready, is_pod_terminating, pod_condition
from minikube_py.api.selectors import SelectorError, label_selector_from_dict
from minikube_py.client.errors import NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import object_key
from minikube_py.client.workqueue import RateLimitingQueue, worker
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.controller_ref import (
    claim,
    controller_of,
    is_controlled_by,
    pod_from_template,
    resolve_controller_ref,
)
from minikube_py.controllers.controller_utils import SLOW_START_INITIAL_BATCH_SIZE, slow_start_batch
from minikube_py.controllers.expectations import ControllerExpectations
from minikube_py.controllers.job.backoff import BackoffRecord
from minikube_py.controllers.job.conditions import (
    ensure_condition,
    find_condition,
    is_job_finished,
    new_condition,
)
from minikube_py.controllers.job.indexed import (
    JOB_COMPLETION_INDEX,
    add_completion_index_env,
    calculate_succeeded_indexes,
    completion_index,
    first_pending_indexes,
    is_indexed,
    pod_generate_name_with_index,
)
from minikube_py.controllers.job.pods import (
    JOB_TRACKING_FINALIZER,
    has_tracking_finalizer,
    is_pod_failed,
    only_replace_failed_pods,
    pod_phase,
    uid_of,
)
from minikube_py.controllers.job.tracking import (
    remove_finalizer,
    track_status_and_remove_finalizers,
)
from minikube_py.controllers.job.types import SyncState

log = logging.getLogger(__name__)

JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"  # spec.managedBy of Jobs we sync

# Module constants, as upstream's package variables (tests shorten them).
SYNC_JOB_BATCH_PERIOD = 1.0  # pod events within this many seconds share one sync
MAX_POD_CREATE_DELETE_PER_SYNC = 500


class JobController(Controller):
    """Keep each Job's pods running until it completes or fails (upstream job.Controller)."""

    name = "job"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.jobs = self.informer("jobs", "batch")
        self.traced = self.jobs
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
        orphans = asyncio.create_task(
            worker(self.orphan_queue, self._sync_orphan_pod, self._orphan_pod_failed),
            name="job-orphan-pod-worker")
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
        start = (new.get("status") or {}).get("startTime")
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
        return resolve_controller_ref(self.jobs.store, namespace, reference, "Job")

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
                    self._finalizer_removal_observed(object_key(job), uid_of(new))
                self._enqueue_batched(job)
        if reference is not None:
            job = self._resolve_controller_ref(namespace, reference)
            if job is not None:
                if finalizer_removed:
                    self._finalizer_removal_observed(object_key(job), uid_of(new))
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
            self._finalizer_removal_observed(key, uid_of(pod))
        self._enqueue_batched(job)

    def _finalizer_removal_observed(self, key: str, uid: str) -> None:
        self.finalizer_expectations.get(key, set()).discard(uid)

    # -- orphan pods ---------------------------------------------------------------------------

    def _orphan_pod_failed(self, key: str, error: Exception) -> None:
        """Say why an orphan pod's finalizer stayed (the orphanQueue retries it with backoff)."""
        log.info("job: removing the finalizer of orphan pod %s: %s", key, error)

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
        await remove_finalizer(self, pod)

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
            state.prev_succeeded_indexes, state.succeeded_indexes = calculate_succeeded_indexes(
                job, state.pods)
            state.succeeded = len(state.succeeded_indexes)
        active, suspend_changed, manage_error = await self._act(key, state, satisfied, now)
        needs_flush = started or suspend_changed or (
            (active, state.ready, state.terminating)
            != (status.get("active", 0), status.get("ready"), status.get("terminating")))
        status["active"], status["ready"] = active, state.ready
        status["terminating"] = state.terminating
        await track_status_and_remove_finalizers(self, key, state, needs_flush)
        if manage_error is not None:
            raise manage_error

    async def _observe(self, key: str, job: Obj) -> SyncState:
        """Claim the Job's pods and count them: active, ready, terminating, newly finished."""
        pods = await self._pods_for_job(job)
        status = job["status"]
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        state = SyncState(
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

    async def _act(self, key: str, state: SyncState, satisfied: bool, now: datetime
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
            state.finished = new_condition("SuccessCriteriaMet", "True", "CompletionsReached",
                                           "Reached expected number of succeeded pods", now)
            return active, False, error
        # Only a sync that managed the pods updates the Suspended condition.
        return active, managed and self._update_suspended_condition(job, now), error

    def _new_finished_pods(self, state: SyncState) -> tuple[list[Obj], list[Obj]]:
        """getNewFinishedPods: finished pods not yet counted, in uncounted, or in flight."""
        succeeded: list[Obj] = []
        failed: list[Obj] = []
        completions = state.job["spec"].get("completions")
        for pod in state.pods:
            uid = uid_of(pod)
            if not has_tracking_finalizer(pod) or uid in state.expected_removals:
                continue
            if is_indexed(state.job):
                index = completion_index(pod)
                if index is None or index >= completions:
                    continue
            if pod_phase(pod) == "Succeeded" and uid not in state.uncounted_succeeded:
                succeeded.append(pod)
            elif is_pod_failed(pod, state.job) and uid not in state.uncounted_failed:
                failed.append(pod)
        return succeeded, failed

    def _decide_failure(self, key: str, state: SyncState, now: datetime) -> None:
        """Has the Job failed (too many pod failures, too long active)? A failure or
        success decided in an earlier sync stands."""
        job = state.job
        spec = job["spec"]
        state.finished = find_condition(job, "SuccessCriteriaMet")
        if state.finished is not None and state.finished.get("status") == "True":
            return
        state.finished = None
        target = find_condition(job, "FailureTarget")
        if target is not None and target.get("status") == "True":
            state.finished = new_condition("Failed", "True", target.get("reason", ""),
                                           target.get("message", ""), now)
        elif state.failed > spec["backoffLimit"] or _past_backoff_limit_on_failure(job,
                                                                                   state.pods):
            state.finished = new_condition("FailureTarget", "True", "BackoffLimitExceeded",
                                           "Job has reached the specified backoff limit", now)
        elif self._past_active_deadline(job, now):
            state.finished = new_condition("FailureTarget", "True", "DeadlineExceeded",
                                           "Job was active longer than specified deadline", now)
        elif spec.get("activeDeadlineSeconds") is not None and not spec.get("suspend"):
            elapsed = (now - parse_rfc3339(job["status"]["startTime"])).total_seconds()
            self.queue.add_after(key, spec["activeDeadlineSeconds"] - elapsed)

    @staticmethod
    def _past_active_deadline(job: Obj, now: datetime) -> bool:
        """pastActiveDeadline: active (not suspended) for activeDeadlineSeconds or more."""
        deadline = job["spec"].get("activeDeadlineSeconds")
        start = (job.get("status") or {}).get("startTime")
        if deadline is None or not start or job["spec"].get("suspend"):
            return False
        return (now - parse_rfc3339(start)).total_seconds() >= deadline

    def _update_suspended_condition(self, job: Obj, now: datetime) -> bool:
        """The Suspended condition, its events, and a fresh startTime on resume."""
        status = job["status"]
        if job["spec"].get("suspend"):
            if ensure_condition(status, "Suspended", "True", "JobSuspended", "Job suspended",
                                now):
                self.recorder.event(job, "Normal", "Suspended", "Job suspended")
                return True
            return False
        if ensure_condition(status, "Suspended", "False", "JobResumed", "Job resumed", now):
            self.recorder.event(job, "Normal", "Resumed", "Job resumed")
            # activeDeadlineSeconds counts the time the Job has been running continuously.
            status["startTime"] = rfc3339(now)
            return True
        return False

    async def _pods_for_job(self, job: Obj) -> list[Obj]:
        """getPodsForJob: claim the namespace's pods; adopted pods get the finalizer."""
        selector = label_selector_from_dict(job["spec"].get("selector"))
        candidates = self.pods.store.list(job["metadata"]["namespace"])
        owned_before = {uid_of(pod) for pod in candidates if is_controlled_by(pod, job)}
        pods = []
        for pod in await claim(self.pods_client, job, selector, candidates):
            if uid_of(pod) not in owned_before and not has_tracking_finalizer(pod):
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

    async def _manage_job(self, key: str, state: SyncState) -> tuple[int, Exception | None]:
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
        terminating = state.terminating if only_replace_failed_pods(job) else 0
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
            indexes = list(first_pending_indexes(state, missing, completions))
        created, error = await self._create_pods(key, job, indexes)
        return active + created, error

    async def _delete_for_manage(self, key: str, state: SyncState, doomed: list[Obj],
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
            add_completion_index_env(template)
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
            prefix = pod_generate_name_with_index(job["metadata"]["name"], index)
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
                await remove_finalizer(self, pod)
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


def _timestamp(text: str | None) -> float:
    return parse_rfc3339(text).timestamp() if text else float("inf")


_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_order(pod: Obj) -> tuple[bool, int, bool, float, int, float]:
    """controller.ActivePods: delete the pods that got least far first (unscheduled <
    scheduled, Pending < Unknown < Running, not ready < ready, ready for less time, more
    restarts, newer)."""
    ready = is_pod_ready(pod)
    ready_since = (pod_condition(pod, "Ready") or {}).get("lastTransitionTime")
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    restarts = max((s.get("restartCount", 0) for s in statuses), default=0)
    return (bool((pod.get("spec") or {}).get("nodeName")), _PHASE_ORDINAL.get(pod_phase(pod), 0),
            ready, -_timestamp(ready_since) if ready else 0.0, -restarts,
            -_timestamp(pod["metadata"].get("creationTimestamp")))


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


def _managed_elsewhere(job: Obj) -> bool:
    """spec.managedBy names another controller: this one leaves the Job alone."""
    managed_by = job["spec"].get("managedBy")
    return managed_by is not None and managed_by != JOB_CONTROLLER_NAME


def _past_backoff_limit_on_failure(job: Obj, pods: list[Obj]) -> bool:
    """pastBackoffLimitOnFailure: with restartPolicy OnFailure the kubelet restarts failed
    containers in place, so their restarts count against backoffLimit."""
    spec = job["spec"]
    if (spec["template"].get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for pod in pods:
        if pod_phase(pod) in ("Running", "Pending"):
            status = pod.get("status") or {}
            for container in [*(status.get("initContainerStatuses") or []),
                              *(status.get("containerStatuses") or [])]:
                restarts += container.get("restartCount", 0)
    if spec["backoffLimit"] == 0:
        return restarts > 0
    return restarts >= spec["backoffLimit"]
