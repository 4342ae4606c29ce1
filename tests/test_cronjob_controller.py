"""The CronJob controller against a real API server, driven by a fake clock: a Job per
scheduled minute, concurrency policies, history limits, the starting deadline, suspend,
time zones, the API server rejecting a bad schedule, and a run carried out end to end.

The controller's clock is a `FakeClock` the test moves forward. The controller queues
each CronJob again for its next run in real time, so after moving the clock a test
"pokes" the CronJob (an annotation change, which queues it at once) and waits for that
sync to finish.
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339
from minikube_py.client.errors import Invalid
from minikube_py.client.rest import Client
from minikube_py.controllers.cronjob import (
    SCHEDULED_TIMESTAMP_ANNOTATION,
    CronJobController,
    job_name,
)
from minikube_py.controllers.job import JobController
from minikube_py.controllers.manager import ControllerManager
from tests.api_helpers import eventually
from tests.fake_kubelet import FakeKubelet


class FakeClock:
    """A clock that stands still until the test moves it."""

    def __init__(self) -> None:
        self.moment = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.moment


def minute_boundary(after: datetime, minutes: int = 1) -> datetime:
    """The `minutes`-th whole minute after `after`."""
    return after.replace(second=0, microsecond=0) + timedelta(minutes=minutes)


def cronjob_manifest(name: str, schedule: str = "* * * * *", **spec: Any) -> Obj:
    pod_spec = {"restartPolicy": "Never",
                "containers": [{"name": "work", "image": "busybox:1.36"}]}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": schedule, **spec, "jobTemplate": {
                "metadata": {"labels": {"app": name}},
                "spec": {"template": {"spec": pod_spec}}}}}


class Cron:
    """One CronJob under test: move the clock, poke, and read what the controller did."""

    def __init__(self, client: Client, namespace: str, manager: ControllerManager,
                 clock: FakeClock, name: str) -> None:
        self.cronjobs = client.resource("cronjobs", "batch")
        self.jobs = client.resource("jobs", "batch")
        self.events = client.resource("events")
        self.namespace = namespace
        self.manager = manager
        self.clock = clock
        self.name = name
        self.created = clock.moment
        self.pokes = 0

    async def create(self, manifest: Obj) -> Obj:
        """Create the CronJob and wait for its first sync (at the clock's starting time)."""
        cronjob = await self.synced(self.cronjobs.create(manifest, self.namespace))
        # Runs are due after the creation time, which the API server stamped.
        self.created = datetime.fromisoformat(
            cronjob["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
        return cronjob

    def syncs(self) -> float:
        return self.manager.registry.get_sample_value(
            "controller_syncs_total", {"controller": "cronjob", "result": "success"}) or 0.0

    async def at(self, moment: datetime) -> None:
        """Move the clock to `moment` and wait for the CronJob to be synced at that time."""
        self.clock.moment = moment
        await self.poke()

    async def poke(self) -> None:
        self.pokes += 1
        await self.synced(self.cronjobs.patch(self.name, {"metadata": {"annotations": {
            "test/poke": str(self.pokes)}}}, self.namespace))

    async def synced(self, change: Awaitable[Obj]) -> Obj:
        """Make a change to the CronJob and wait until the controller has synced it."""
        before = self.syncs()
        changed = await change

        async def synced() -> bool:
            return self.syncs() > before

        await eventually(synced, what="a sync of the cronjob")
        return changed

    async def at_minute(self, minutes: int) -> datetime:
        """Move to 5 s past the `minutes`-th whole minute after creation; return the minute."""
        boundary = minute_boundary(self.created, minutes)
        await self.at(boundary + timedelta(seconds=5))
        return boundary

    async def get(self) -> Obj:
        return await self.cronjobs.get(self.name, self.namespace)

    async def job_names(self) -> list[str]:
        listed = await self.jobs.list(self.namespace)
        return sorted(job["metadata"]["name"] for job in listed["items"]
                      if not job["metadata"].get("deletionTimestamp"))

    async def wait_for_jobs(self, *names: str) -> None:
        async def exactly() -> bool:
            return await self.job_names() == sorted(names)
        await eventually(exactly, what=f"jobs {sorted(names)}")

    async def messages(self, reason: str) -> list[str]:
        listed = await self.events.list(self.namespace)
        return [event["message"] for event in listed["items"]
                if event["reason"] == reason and event["involvedObject"]["name"] == self.name]

    async def wait_for_messages(self, reason: str, count: int) -> list[str]:
        """The messages of `reason` once there are `count` (Events are written after what
        they report, so a test that saw the effect waits for them)."""
        async def enough() -> list[str] | None:
            found = await self.messages(reason)
            return found if len(found) >= count else None
        return await eventually(enough, what=f"{count} {reason} events")

    async def wait_for_event(self, reason: str) -> list[str]:
        async def seen() -> list[str]:
            return await self.messages(reason)
        return await eventually(seen, what=f"a {reason} event")

    async def finish(self, name: str, condition_type: str, started: datetime) -> None:
        """Play the Job controller: mark a Job Complete or Failed."""
        job = await self.jobs.get(name, self.namespace)
        stamp = rfc3339(started + timedelta(seconds=10))
        job["status"] = {"startTime": rfc3339(started), "conditions": [
            {"type": condition_type, "status": "True", "lastTransitionTime": stamp}]}
        if condition_type == "Complete":
            job["status"]["completionTime"] = stamp
        await self.jobs.update_status(job)

    def job_for(self, scheduled: datetime) -> str:
        return job_name({"metadata": {"name": self.name}}, scheduled)


@pytest.fixture
async def cron(api_client: Client, namespace: str, run_controllers: Any) -> Any:
    """Start the CronJob controller on a fake clock; `await cron(manifest)` creates one."""
    clock = FakeClock()
    manager = await run_controllers(CronJobController, clock=clock)

    async def create(manifest: Obj) -> Cron:
        under_test = Cron(api_client, namespace, manager, clock, manifest["metadata"]["name"])
        await under_test.create(manifest)
        return under_test

    return create


def test_job_names_are_the_scheduled_minute_since_the_epoch() -> None:
    scheduled = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    assert job_name({"metadata": {"name": "backup"}}, scheduled) == (
        f"backup-{int(scheduled.timestamp()) // 60}")


async def test_server_rejects_an_unparseable_schedule(api_client: Client,
                                                      namespace: str) -> None:
    with pytest.raises(Invalid) as raised:
        await api_client.resource("cronjobs", "batch").create(
            cronjob_manifest("bad", "61 * * * *"), namespace)
    assert raised.value.code == 422
    assert "end of range (61) above maximum (59)" in str(raised.value)


async def test_creates_a_job_at_each_scheduled_minute(cron: Any) -> None:
    under_test = await cron(cronjob_manifest("tick"))
    await under_test.poke()
    assert await under_test.job_names() == []  # nothing due yet

    first = await under_test.at_minute(1)
    await under_test.wait_for_jobs(under_test.job_for(first))
    job = await under_test.jobs.get(under_test.job_for(first), under_test.namespace)
    assert job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION] == rfc3339(first)
    assert job["metadata"]["labels"]["app"] == "tick"
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "tick", True)
    status = (await under_test.get())["status"]
    assert status["lastScheduleTime"] == rfc3339(first)
    assert [ref["name"] for ref in status["active"]] == [under_test.job_for(first)]

    second = await under_test.at_minute(2)
    await under_test.wait_for_jobs(under_test.job_for(first), under_test.job_for(second))
    status = (await under_test.get())["status"]
    assert len(status["active"]) == 2 and status["lastScheduleTime"] == rfc3339(second)
    assert await under_test.wait_for_messages("SuccessfulCreate", 2) == [
        f"Created job {under_test.job_for(first)}", f"Created job {under_test.job_for(second)}"]


async def test_forbid_holds_a_run_back_until_the_active_job_finished(cron: Any) -> None:
    under_test = await cron(cronjob_manifest("single", concurrencyPolicy="Forbid"))
    first = await under_test.at_minute(1)
    await under_test.wait_for_jobs(under_test.job_for(first))

    second = await under_test.at_minute(2)
    assert await under_test.wait_for_event("JobAlreadyActive") == [
        "Not starting job because prior execution is running and concurrency policy is Forbid"]
    assert await under_test.job_names() == [under_test.job_for(first)]

    # Once the first Job finished, the run of minute 2 is still due (no starting deadline).
    await under_test.finish(under_test.job_for(first), "Complete", first)
    await under_test.wait_for_jobs(under_test.job_for(first), under_test.job_for(second))

    async def settled() -> Obj | None:
        status = (await under_test.get())["status"]
        return status if "lastSuccessfulTime" in status else None

    status = await eventually(settled, what="status.lastSuccessfulTime")
    assert status["lastSuccessfulTime"] == rfc3339(first + timedelta(seconds=10))
    assert [ref["name"] for ref in status["active"]] == [under_test.job_for(second)]
    assert await under_test.wait_for_messages("SawCompletedJob", 1) == [
        f"Saw completed job: {under_test.job_for(first)}, status: Complete"]


async def test_replace_deletes_the_running_job_and_starts_a_new_one(cron: Any) -> None:
    under_test = await cron(cronjob_manifest("latest", concurrencyPolicy="Replace"))
    first = await under_test.at_minute(1)
    await under_test.wait_for_jobs(under_test.job_for(first))

    second = await under_test.at_minute(2)
    await under_test.wait_for_jobs(under_test.job_for(second))
    status = (await under_test.get())["status"]
    assert [ref["name"] for ref in status["active"]] == [under_test.job_for(second)]
    assert await under_test.wait_for_messages("SuccessfulDelete", 1) == [
        f"Deleted job {under_test.job_for(first)}"]


async def test_history_limits_delete_the_oldest_finished_jobs(cron: Any) -> None:
    under_test = await cron(cronjob_manifest(
        "history", successfulJobsHistoryLimit=1, failedJobsHistoryLimit=1))
    outcomes = ["Complete", "Complete", "Failed", "Failed"]
    scheduled = []
    for minute, outcome in enumerate(outcomes, start=1):
        moment = await under_test.at_minute(minute)
        scheduled.append(moment)
        await eventually(lambda m=moment: _has_job(under_test, under_test.job_for(m)),
                         what=f"the job of minute {minute}")
        await under_test.finish(under_test.job_for(moment), outcome, moment)
    await under_test.poke()
    # Newest of each kind kept: the second Complete and the second Failed.
    await under_test.wait_for_jobs(under_test.job_for(scheduled[1]),
                                   under_test.job_for(scheduled[3]))
    deleted = await under_test.wait_for_messages("SuccessfulDelete", 2)
    assert sorted(deleted) == sorted(
        [f"Deleted job {under_test.job_for(scheduled[0])}",
         f"Deleted job {under_test.job_for(scheduled[2])}"])


async def _has_job(under_test: Cron, name: str) -> bool:
    return name in await under_test.job_names()


async def test_starting_deadline_skips_runs_that_are_too_late(cron: Any) -> None:
    under_test = await cron(cronjob_manifest("punctual", startingDeadlineSeconds=10))
    first = minute_boundary(under_test.created)
    await under_test.at(first + timedelta(seconds=30))  # 20 s past the deadline
    assert await under_test.job_names() == []

    second = await under_test.at_minute(2)  # 5 s late: within the deadline
    await under_test.wait_for_jobs(under_test.job_for(second))


async def test_suspend_stops_creation_and_resume_catches_up(cron: Any) -> None:
    under_test = await cron(cronjob_manifest("paused", suspend=True))
    first = await under_test.at_minute(1)
    assert await under_test.job_names() == []
    assert "lastScheduleTime" not in (await under_test.get()).get("status", {})

    await under_test.cronjobs.patch("paused", {"spec": {"suspend": False}}, under_test.namespace)
    await under_test.wait_for_jobs(under_test.job_for(first))


async def test_time_zone_sets_when_the_schedule_runs(cron: Any) -> None:
    """09:00 in Tokyo is 00:00 UTC; the Job's scheduled timestamp is in Tokyo time."""
    under_test = await cron(cronjob_manifest("tokyo", "0 9 * * *", timeZone="Asia/Tokyo"))
    midnight = under_test.created.replace(hour=0, minute=0, second=0) + timedelta(days=1)
    await under_test.at(midnight - timedelta(minutes=1))
    assert await under_test.job_names() == []

    await under_test.at(midnight + timedelta(seconds=5))
    await under_test.wait_for_jobs(under_test.job_for(midnight))
    job = await under_test.jobs.get(under_test.job_for(midnight), under_test.namespace)
    assert job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION] == (
        midnight.astimezone(UTC).strftime("%Y-%m-%dT09:00:00+09:00"))


async def test_a_run_is_carried_out_by_the_job_controller(
        api_client: Client, namespace: str, run_controllers: Any) -> None:
    """CronJob, Job controller and kubelet together: the run's success lands in the
    CronJob's status (the Job controller reads the same fake clock)."""
    clock = FakeClock()
    manager = await run_controllers(CronJobController, JobController, clock=clock)
    under_test = Cron(api_client, namespace, manager, clock, "nightly")
    await under_test.create(cronjob_manifest("nightly"))
    async with FakeKubelet(api_client, namespace) as kubelet:
        first = await under_test.at_minute(1)
        name = under_test.job_for(first)

        async def running_pod() -> Obj | None:
            pods = await api_client.resource("pods").list(
                namespace, label_selector=f"batch.kubernetes.io/job-name={name}")
            running = [pod for pod in pods["items"]
                       if pod.get("status", {}).get("phase") == "Running"]
            return running[0] if running else None

        pod = await eventually(running_pod, what="the run's pod running")
        await kubelet.set_phase(pod["metadata"]["name"], "Succeeded")

        async def succeeded() -> Obj | None:
            status = (await under_test.get()).get("status", {})
            return status if "lastSuccessfulTime" in status else None

        status = await eventually(succeeded, what="status.lastSuccessfulTime")
    assert status["lastSuccessfulTime"] == rfc3339(clock.moment)
    assert "active" not in status
