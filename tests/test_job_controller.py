"""The Job and TTL-after-finished controllers against a real API server, with a fake
kubelet: parallelism, completions, retries up to backoffLimit, activeDeadlineSeconds,
suspend and resume, Indexed Jobs, finalizer-based tracking, and cleanup after the TTL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.errors import Invalid, NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers.job import (
    JOB_COMPLETION_INDEX,
    JOB_TRACKING_FINALIZER,
    BackoffRecord,
    JobController,
    format_indexes,
    parse_indexes,
)
from minikube_py.controllers.job import backoff as job_backoff
from minikube_py.controllers.job import controller as job_controller
from minikube_py.controllers.ttlafterfinished import TTLAfterFinishedController
from tests.api_helpers import eventually
from tests.fake_kubelet import FakeKubelet


@pytest.fixture(autouse=True)
def fast_job_timers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sync pod events at once and replace failed pods after a short backoff."""
    monkeypatch.setattr(job_controller, "SYNC_JOB_BATCH_PERIOD", 0.02)
    monkeypatch.setattr(job_backoff, "DEFAULT_POD_FAILURE_BACKOFF", 0.1)


def job_manifest(name: str, *, completions: int | None = 1, parallelism: int = 1,
                 **spec: Any) -> Obj:
    pod_spec = {"restartPolicy": "Never",
                "containers": [{"name": "work", "image": "busybox:1.36"}]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"completions": completions, "parallelism": parallelism,
                     "template": {"spec": pod_spec}, **spec}}


def condition(job: Obj, condition_type: str) -> Obj | None:
    for item in job.get("status", {}).get("conditions") or ():
        if item["type"] == condition_type:
            return item
    return None


def phase(pod: Obj) -> str:
    return pod.get("status", {}).get("phase", "")


class JobView:
    """Read a Job, its pods and its events through the API, as a user would."""

    def __init__(self, client: Client, namespace: str, name: str) -> None:
        self.jobs = client.resource("jobs", "batch")
        self.pods_client = client.resource("pods")
        self.events_client = client.resource("events")
        self.namespace = namespace
        self.name = name

    async def create(self, manifest: Obj) -> Obj:
        return await self.jobs.create(manifest, self.namespace)

    async def get(self) -> Obj:
        return await self.jobs.get(self.name, self.namespace)

    async def pods(self, where: Callable[[Obj], bool] = lambda pod: True) -> list[Obj]:
        listed = await self.pods_client.list(
            self.namespace, label_selector=f"batch.kubernetes.io/job-name={self.name}")
        return sorted((pod for pod in listed["items"] if where(pod)),
                      key=lambda pod: pod["metadata"]["creationTimestamp"])

    async def reasons(self) -> list[str]:
        listed = await self.events_client.list(self.namespace)
        return [event["reason"] for event in listed["items"]
                if event["involvedObject"]["name"] == self.name]

    async def wait_for_condition(self, condition_type: str, timeout: float = 10.0) -> Obj:
        async def finished() -> Obj | None:
            job = await self.get()
            found = condition(job, condition_type)
            return job if found and found["status"] == "True" else None
        return await eventually(finished, timeout, what=f"job condition {condition_type}")

    async def wait_for_running(self, count: int, *, at_most_active: int | None = None
                               ) -> list[Obj]:
        """Wait until `count` pods run; fail if more than `at_most_active` are ever active."""
        async def running() -> list[Obj] | None:
            pods = await self.pods()
            active = [pod for pod in pods if phase(pod) not in ("Succeeded", "Failed")
                      and not pod["metadata"].get("deletionTimestamp")]
            if at_most_active is not None:
                assert len(active) <= at_most_active, [p["metadata"]["name"] for p in active]
            ready = [pod for pod in active if phase(pod) == "Running"]
            return ready if len(ready) == count else None
        return await eventually(running, what=f"{count} running pods of {self.name}")


# -- pure helpers -------------------------------------------------------------------------


@pytest.mark.parametrize(("indexes", "text"), [
    (set(), ""),
    ({3}, "3"),
    ({0, 1}, "0,1"),
    ({0, 1, 2, 5, 6, 9}, "0-2,5,6,9"),
])
def test_completed_indexes_are_written_as_intervals(indexes: set[int], text: str) -> None:
    assert format_indexes(indexes) == text
    assert parse_indexes(text, 10) == indexes


def test_completed_indexes_beyond_completions_are_ignored() -> None:
    assert parse_indexes("1,3-7,9", 5) == {1, 3, 4}


START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(("failures", "since_failure", "remaining"), [
    (0, 0, 0.0),
    (1, 0, 10.0),
    (1, 4, 6.0),
    (3, 0, 40.0),
    (3, 60, 0.0),
    (20, 0, 600.0),  # capped at MAX_POD_FAILURE_BACKOFF
])
def test_pod_failure_backoff_doubles_per_failure_up_to_a_cap(
        monkeypatch: pytest.MonkeyPatch, failures: int, since_failure: int,
        remaining: float) -> None:
    monkeypatch.setattr(job_backoff, "DEFAULT_POD_FAILURE_BACKOFF", 10.0)
    record = BackoffRecord(failures, START)
    assert record.remaining(START + timedelta(seconds=since_failure)) == remaining


def finished_pod(phase_: str, at: datetime) -> Obj:
    return {"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": phase_, "containerStatuses": [
                {"state": {"terminated": {"finishedAt": at.strftime("%Y-%m-%dT%H:%M:%SZ")}}}]}}


def test_a_success_resets_the_backoff_but_later_failures_count() -> None:
    record = BackoffRecord(2, START)
    failed_before = finished_pod("Failed", START + timedelta(seconds=1))
    succeeded = finished_pod("Succeeded", START + timedelta(seconds=2))
    failed_after = finished_pod("Failed", START + timedelta(seconds=3))
    assert record.with_new_pods([succeeded], []) == BackoffRecord(0, None)
    assert record.with_new_pods([succeeded], [failed_before, failed_after]) == BackoffRecord(
        1, START + timedelta(seconds=3))
    assert record.with_new_pods([], [failed_after]) == BackoffRecord(
        3, START + timedelta(seconds=3))


# -- the API server's Job strategy --------------------------------------------------------


async def test_server_generates_the_selector_and_pod_labels(api_client: Client,
                                                            namespace: str) -> None:
    view = JobView(api_client, namespace, "labels")
    job = await view.create(job_manifest("labels"))
    uid = job["metadata"]["uid"]
    assert job["spec"]["manualSelector"] is False
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "labels",
        "controller-uid": uid, "job-name": "labels"}


async def test_server_rejects_pods_that_restart_always(api_client: Client,
                                                       namespace: str) -> None:
    manifest = job_manifest("always")
    manifest["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(Invalid) as raised:
        await api_client.resource("jobs", "batch").create(manifest, namespace)
    assert "spec.template.spec.restartPolicy" in str(raised.value)


# -- the Job controller -------------------------------------------------------------------


async def test_completions_never_run_more_pods_than_parallelism(
        api_client: Client, namespace: str, run_controllers: Any) -> None:
    await run_controllers(JobController)
    view = JobView(api_client, namespace, "batch")
    async with FakeKubelet(api_client, namespace) as kubelet:
        await view.create(job_manifest("batch", completions=4, parallelism=2))
        for remaining in (4, 3, 2, 1):
            running = await view.wait_for_running(min(2, remaining), at_most_active=2)
            assert all(JOB_TRACKING_FINALIZER in pod["metadata"]["finalizers"]
                       for pod in running)
            await kubelet.set_phase(running[0]["metadata"]["name"], "Succeeded")
        job = await view.wait_for_condition("Complete")

    status = job["status"]
    assert (status["succeeded"], status.get("active", 0), status["ready"]) == (4, 0, 0)
    assert status["uncountedTerminatedPods"] == {}
    assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert {c["reason"] for c in status["conditions"]} == {"CompletionsReached"}
    assert status["completionTime"] >= status["startTime"]
    pods = await view.pods()
    assert len(pods) == 4  # never a pod more than completions
    assert all(phase(pod) == "Succeeded" for pod in pods)
    assert not any(pod["metadata"].get("finalizers") for pod in pods)  # counted, released
    owner = pods[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "batch", True)
    reasons = await eventually(
        lambda: _reasons_with(view, "Completed"), what="the Completed event")
    assert reasons.count("SuccessfulCreate") == 4


async def _reasons_with(view: JobView, reason: str) -> list[str] | None:
    reasons = await view.reasons()
    return reasons if reason in reasons else None


async def test_status_counts_active_and_ready_pods(api_client: Client, namespace: str,
                                                   run_controllers: Any) -> None:
    await run_controllers(JobController)
    view = JobView(api_client, namespace, "counts")
    async with FakeKubelet(api_client, namespace):
        await view.create(job_manifest("counts", completions=3, parallelism=2))

        async def counted() -> Obj | None:
            job = await view.get()
            status = job.get("status", {})
            return job if (status.get("active"), status.get("ready")) == (2, 2) else None

        job = await eventually(counted, what="active 2, ready 2")
    assert job["status"]["startTime"]
    assert job["status"]["terminating"] == 0
    assert "succeeded" not in job["status"]  # zero counters are left out, as upstream


async def test_failed_pods_are_replaced_until_the_backoff_limit(
        api_client: Client, namespace: str, run_controllers: Any) -> None:
    await run_controllers(JobController)
    view = JobView(api_client, namespace, "flaky")
    async with FakeKubelet(api_client, namespace) as kubelet:
        await view.create(job_manifest("flaky", backoffLimit=1))
        first = (await view.wait_for_running(1, at_most_active=1))[0]
        await kubelet.set_phase(first["metadata"]["name"], "Failed", exit_code=1)
        second = (await view.wait_for_running(1, at_most_active=1))[0]
        assert second["metadata"]["uid"] != first["metadata"]["uid"]
        await eventually(lambda: _status_field(view, "failed", 1), what="failed: 1")
        await kubelet.set_phase(second["metadata"]["name"], "Failed", exit_code=1)
        job = await view.wait_for_condition("Failed")

    status = job["status"]
    assert status["failed"] == 2
    assert [c["type"] for c in status["conditions"]] == ["FailureTarget", "Failed"]
    failed = condition(job, "Failed")
    assert (failed["reason"], failed["message"]) == (
        "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert condition(job, "Complete") is None and "completionTime" not in status
    pods = await view.pods()
    assert len(pods) == 2 and not any(pod["metadata"].get("finalizers") for pod in pods)
    await eventually(lambda: _reasons_with(view, "BackoffLimitExceeded"),
                     what="the BackoffLimitExceeded event")


async def _status_field(view: JobView, name: str, value: Any) -> bool:
    return (await view.get()).get("status", {}).get(name) == value


async def test_active_deadline_fails_the_job_and_stops_its_pods(
        api_client: Client, namespace: str, run_controllers: Any) -> None:
    await run_controllers(JobController)
    view = JobView(api_client, namespace, "slow")
    async with FakeKubelet(api_client, namespace):
        await view.create(job_manifest("slow", completions=2, parallelism=2,
                                       activeDeadlineSeconds=3))
        await view.wait_for_running(2)
        job = await view.wait_for_condition("Failed")
        assert await view.pods() == []  # deleted; their finalizers removed once counted

    failed = condition(job, "Failed")
    assert (failed["reason"], failed["message"]) == (
        "DeadlineExceeded", "Job was active longer than specified deadline")
    assert (job["status"]["failed"], job["status"].get("active", 0)) == (2, 0)
    reasons = await eventually(lambda: _reasons_with(view, "DeadlineExceeded"),
                               what="the DeadlineExceeded event")
    assert reasons.count("SuccessfulDelete") == 2


async def test_suspend_holds_pods_back_and_resume_starts_them(
        api_client: Client, namespace: str, run_controllers: Any) -> None:
    await run_controllers(JobController)
    view = JobView(api_client, namespace, "paused")
    async with FakeKubelet(api_client, namespace):
        await view.create(job_manifest("paused", completions=2, parallelism=2, suspend=True))
        job = await view.wait_for_condition("Suspended")
        assert condition(job, "Suspended")["reason"] == "JobSuspended"
        assert "startTime" not in job["status"] and await view.pods() == []

        await view.jobs.patch("paused", {"spec": {"suspend": False}}, namespace)
        await view.wait_for_running(2, at_most_active=2)
        job = await view.get()
        resumed = condition(job, "Suspended")
        assert (resumed["status"], resumed["reason"]) == ("False", "JobResumed")
        assert job["status"]["startTime"]

        await view.jobs.patch("paused", {"spec": {"suspend": True}}, namespace)

        async def stopped() -> Obj | None:
            job = await view.get()
            idle = not await view.pods() and not job["status"].get("active")
            return job if idle and condition(job, "Suspended")["status"] == "True" else None

        job = await eventually(stopped, what="the pods of the suspended job deleted")
    assert "failed" not in job["status"]  # pods deleted by suspension are not failures
    reasons = await view.reasons()
    assert {"Suspended", "Resumed", "SuccessfulDelete"} <= set(reasons)


async def test_work_queue_job_completes_when_a_pod_succeeded_and_none_runs(
        api_client: Client, namespace: str, run_controllers: Any) -> None:
    await run_controllers(JobController)
    view = JobView(api_client, namespace, "queue")
    async with FakeKubelet(api_client, namespace) as kubelet:
        await view.create(job_manifest("queue", completions=None, parallelism=2))
        first, second = await view.wait_for_running(2)
        await kubelet.set_phase(first["metadata"]["name"], "Succeeded")
        await eventually(lambda: _status_field(view, "succeeded", 1), what="succeeded: 1")
        assert condition(await view.get(), "Complete") is None  # the other still runs
        await kubelet.set_phase(second["metadata"]["name"], "Succeeded")
        job = await view.wait_for_condition("Complete")
    assert job["status"]["succeeded"] == 2
    assert len(await view.pods()) == 2  # no pod replaced the first one


async def test_indexed_job_gives_each_pod_its_completion_index(
        api_client: Client, namespace: str, run_controllers: Any) -> None:
    await run_controllers(JobController)
    view = JobView(api_client, namespace, "shards")
    async with FakeKubelet(api_client, namespace) as kubelet:
        await view.create(job_manifest("shards", completions=3, parallelism=2,
                                       completionMode="Indexed"))
        running = await view.wait_for_running(2, at_most_active=2)
        by_index = {int(pod["metadata"]["annotations"][JOB_COMPLETION_INDEX]): pod
                    for pod in running}
        assert set(by_index) == {0, 1}
        for index, pod in by_index.items():
            assert pod["metadata"]["labels"][JOB_COMPLETION_INDEX] == str(index)
            assert pod["metadata"]["name"].startswith(f"shards-{index}-")
            assert pod["spec"]["hostname"] == f"shards-{index}"
            env = pod["spec"]["containers"][0]["env"]
            assert env == [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                "apiVersion": "v1",
                "fieldPath": f"metadata.labels['{JOB_COMPLETION_INDEX}']"}}}]

        await kubelet.set_phase(by_index[1]["metadata"]["name"], "Succeeded")
        await eventually(lambda: _status_field(view, "completedIndexes", "1"),
                         what='completedIndexes "1"')
        running = await view.wait_for_running(2, at_most_active=2)
        indexes = {pod["metadata"]["annotations"][JOB_COMPLETION_INDEX] for pod in running}
        assert indexes == {"0", "2"}
        for pod in running:
            await kubelet.set_phase(pod["metadata"]["name"], "Succeeded")
        job = await view.wait_for_condition("Complete")
    assert (job["status"]["completedIndexes"], job["status"]["succeeded"]) == ("0-2", 3)


async def test_deleting_a_running_job_releases_its_pods(
        api_client: Client, namespace: str, run_controllers: Any) -> None:
    """The garbage collector deletes the pods; the Job controller only removes its
    tracking finalizer, so they can go."""
    await run_controllers(JobController)
    view = JobView(api_client, namespace, "dropped")
    async with FakeKubelet(api_client, namespace):
        await view.create(job_manifest("dropped"))
        await view.wait_for_running(1)
        await view.jobs.delete("dropped", namespace)

        async def released() -> bool:
            pods = await view.pods()
            return bool(pods) and not any(pod["metadata"].get("finalizers") for pod in pods)

        await eventually(released, what="the tracking finalizer removed")


async def test_ttl_after_finished_deletes_the_finished_job(
        api_client: Client, namespace: str, run_controllers: Any) -> None:
    await run_controllers(JobController, TTLAfterFinishedController)
    view = JobView(api_client, namespace, "short-lived")
    async with FakeKubelet(api_client, namespace) as kubelet:
        await view.create(job_manifest("short-lived", ttlSecondsAfterFinished=1))
        pod = (await view.wait_for_running(1))[0]
        await kubelet.set_phase(pod["metadata"]["name"], "Succeeded")
        await view.wait_for_condition("Complete")

        async def deleted() -> bool:
            try:
                job = await view.get()
            except NotFound:  # gone: a garbage collector finished the foreground deletion
                return True
            meta = job["metadata"]
            return bool(meta.get("deletionTimestamp")) and "foregroundDeletion" in (
                meta.get("finalizers") or ())

        await eventually(deleted, timeout=10, what="the job deleted in the foreground")
