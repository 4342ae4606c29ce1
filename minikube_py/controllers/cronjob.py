"""The CronJob controller: create a Job at each scheduled time (upstream
pkg/controller/cronjob: cronjob_controllerv2.go, utils.go).

    cronjob or job event, or the time of the next run --> queue "ns/name" --> sync(key):
      1. prune history: delete the oldest finished Jobs beyond the history limits
      2. update status.active from the Jobs (finished ones leave it, vanished ones too)
      3. suspended, or nothing due since status.lastScheduleTime? -> wait for the next run
      4. due: too late (startingDeadlineSeconds)? already running and Forbid? -> skip;
         Replace -> delete the running Jobs first; then create `<cronjob>-<minutes>`
      5. write status; queue the CronJob again for the next scheduled time

A Job's name is the CronJob's name and its scheduled time in minutes since the epoch,
so a scheduled time never gets two Jobs, even after a crash between creating the Job
and writing status. Every decision uses `self.now()`, so tests can drive time.
Without spec.timeZone the schedule runs in UTC (upstream: the controller-manager's
local time zone).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from minikube_py.api import Obj
from minikube_py.api.cron import CronSchedule, CronSyntaxError, most_recent_schedule_time
from minikube_py.api.meta import parse_rfc3339, rfc3339
from minikube_py.client.errors import AlreadyExists, NotFound
from minikube_py.client.events import object_reference
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import object_key
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.controller_ref import (
    controller_of,
    is_controlled_by,
    owner_reference,
    resolve_controller_ref,
)
from minikube_py.controllers.job import finished_condition

log = logging.getLogger(__name__)

SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NEXT_SCHEDULE_DELTA = 0.1  # seconds past the scheduled time to wake up (clock skew)
MANY_MISSED = 100  # more missed runs than this is reported as TooManyMissedTimes


def job_name(cronjob: Obj, scheduled: datetime) -> str:
    """getJobName: `<cronjob>-<scheduled time in minutes since the epoch>`."""
    return f"{cronjob['metadata']['name']}-{int(scheduled.timestamp()) // 60}"


def _time_zone(cronjob: Obj) -> tzinfo:
    """spec.timeZone as a tzinfo (UTC when unset); ZoneInfoNotFoundError if unknown."""
    name = cronjob["spec"].get("timeZone")
    if name is None:
        return UTC
    try:
        return ZoneInfo(name)
    except ValueError as error:
        raise ZoneInfoNotFoundError(str(error)) from None


def _rfc3339_in_zone(moment: datetime) -> str:
    """Go's time.RFC3339 format: the zone's offset, or Z for UTC."""
    text = moment.isoformat(timespec="seconds")
    return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text


def _rfc1123z(moment: datetime) -> str:
    """Go's time.RFC1123Z, in UTC: "Mon, 02 Jan 2006 15:04:05 +0000"."""
    return moment.astimezone(UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")


def _earliest_time(cronjob: Obj) -> datetime:
    """status.lastScheduleTime, else the CronJob's creation: runs before it are not due."""
    status = cronjob.get("status") or {}
    stamp = status.get("lastScheduleTime") or cronjob["metadata"]["creationTimestamp"]
    return parse_rfc3339(stamp)


def _most_recent(cronjob: Obj, schedule: CronSchedule, now: datetime, zone: tzinfo,
                 with_deadline: bool) -> tuple[datetime, datetime | None, int]:
    """mostRecentScheduleTime: (earliest time considered, latest due run or None, about how
    many runs were due); ValueError for a schedule that never fires."""
    earliest = _earliest_time(cronjob)
    deadline = cronjob["spec"].get("startingDeadlineSeconds")
    if with_deadline and deadline is not None:
        earliest = max(earliest, now - timedelta(seconds=deadline))
    latest, count = most_recent_schedule_time(schedule, earliest.astimezone(zone),
                                              now.astimezone(zone))
    return earliest, latest, count


def next_schedule_delay(cronjob: Obj, schedule: CronSchedule, now: datetime,
                        zone: tzinfo) -> float | None:
    """nextScheduleTimeDuration: seconds until the next run after the latest due one (plus
    a little); None when the schedule never fires again."""
    try:
        earliest, latest, count = _most_recent(cronjob, schedule, now, zone, False)
    except ValueError:
        latest = now
    else:
        if latest is None:
            latest = earliest if count == 0 else now
    upcoming = schedule.next_after(latest.astimezone(zone))
    if upcoming is None:
        return None
    return (upcoming - now).total_seconds() + NEXT_SCHEDULE_DELTA


def _job_start_order(job: Obj) -> tuple[bool, float, str]:
    """byJobStartTime: oldest status.startTime first, Jobs never started last, then name."""
    start = (job.get("status") or {}).get("startTime")
    return (start is None, parse_rfc3339(start).timestamp() if start else 0.0,
            job["metadata"]["name"])


@dataclass
class _SyncOutcome:
    """What syncCronJob decided besides the status: whether to write it, when to return."""

    status_changed: bool = False
    requeue_after: float | None = None


class CronJobController(Controller):
    """Create Jobs on a schedule and keep their history short (upstream ControllerV2)."""

    name = "cronjob"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.cronjobs = self.informer("cronjobs", "batch")
        self.traced = self.cronjobs
        self.jobs = self.informer("jobs", "batch")
        self.cronjobs_client = self.client.resource("cronjobs", "batch")
        self.jobs_client = self.client.resource("jobs", "batch")
        self.cronjobs.add_event_handler(EventHandler(
            on_add=self.enqueue, on_update=self._cronjob_updated, on_delete=self.enqueue))
        self.jobs.add_event_handler(EventHandler(
            on_add=self._job_added, on_update=self._job_updated, on_delete=self._job_deleted))

    # -- event handlers ----------------------------------------------------------------------

    def _cronjob_updated(self, old: Obj, new: Obj) -> None:
        """A new schedule or time zone: come back at its next run; other changes: now."""
        if (old["spec"].get("schedule"), old["spec"].get("timeZone")) == (
                new["spec"].get("schedule"), new["spec"].get("timeZone")):
            self.enqueue(new)
            return
        try:
            schedule = CronSchedule.parse(new["spec"].get("schedule", ""))
            zone = _time_zone(new)
        except (CronSyntaxError, ZoneInfoNotFoundError):
            self.recorder.event(new, "Warning", "UnParseableCronJobSchedule",
                                f"unparseable schedule for cronjob: {new['spec'].get('schedule')}")
            return
        delay = next_schedule_delay(new, schedule, self.now(), zone)
        if delay is not None:
            self.enqueue_after(new, delay)

    def _resolve_controller_ref(self, namespace: str, reference: Obj) -> Obj | None:
        """resolveControllerRef: the CronJob an ownerReference names, if it is that one."""
        return resolve_controller_ref(self.cronjobs.store, namespace, reference, "CronJob")

    def _enqueue_controller_of(self, job: Obj, reference: Obj | None) -> None:
        """A Job was added, changed or deleted: sync the CronJob that controls it."""
        if reference is not None:
            cronjob = self._resolve_controller_ref(job["metadata"]["namespace"], reference)
            if cronjob is not None:
                self.enqueue(cronjob)

    def _job_added(self, job: Obj) -> None:
        self._enqueue_controller_of(job, controller_of(job))

    def _job_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        reference, old_reference = controller_of(new), controller_of(old)
        if reference != old_reference:
            self._enqueue_controller_of(old, old_reference)
        self._enqueue_controller_of(new, reference)

    def _job_deleted(self, job: Obj) -> None:
        self._enqueue_controller_of(job, controller_of(job))

    # -- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """sync: prune history, reconcile status.active, start the due Job, requeue."""
        cronjob = self.cronjobs.store.get(key)
        if cronjob is None:
            return
        namespace, name = cronjob["metadata"]["namespace"], cronjob["metadata"]["name"]
        jobs = [job for job in self.jobs.store.list(namespace)
                if (reference := controller_of(job)) is not None
                and reference.get("kind") == "CronJob" and reference.get("name") == name]
        cronjob = copy.deepcopy(cronjob)
        cronjob.setdefault("status", {})
        status_changed = await self._cleanup_finished_jobs(cronjob, jobs)
        outcome = _SyncOutcome()
        try:
            cronjob = await self._sync_cronjob(cronjob, jobs, outcome)
        finally:  # even after a failure, keep what was done before it
            if status_changed or outcome.status_changed:
                status = cronjob["status"]
                if not status.get("active"):
                    status.pop("active", None)
                await self.cronjobs_client.update_status(cronjob)
        if outcome.requeue_after is not None:
            self.enqueue_after(cronjob, outcome.requeue_after)

    async def _sync_cronjob(self, cronjob: Obj, jobs: list[Obj], outcome: _SyncOutcome) -> Obj:
        """syncCronJob: match the active list with the Jobs, then start the run that is due,
        if any. Returns the CronJob whose status is to be written (maybe re-read)."""
        now = self.now()
        cronjob = await self._reconcile_active(cronjob, jobs, outcome)
        if cronjob["metadata"].get("deletionTimestamp"):
            return cronjob
        due = self._due_run(cronjob, now, outcome)
        if due is not None:
            await self._start_run(cronjob, *due, outcome)
        return cronjob

    async def _reconcile_active(self, cronjob: Obj, jobs: list[Obj], outcome: _SyncOutcome
                                ) -> Obj:
        """The active list against the CronJob's Jobs: finished ones leave it, unknown ones
        and vanished ones get an Event, lastSuccessfulTime follows the newest completion.
        Returns the CronJob (re-read when the cache lagged our own status write)."""
        status = cronjob["status"]
        children = set()
        for job in jobs:
            uid = job["metadata"]["uid"]
            children.add(uid)
            found = _in_active_list(cronjob, uid)
            finished = finished_condition(job)
            if not found and finished is None:
                fresh = await self.cronjobs_client.get(cronjob["metadata"]["name"],
                                                       cronjob["metadata"]["namespace"])
                if _in_active_list(fresh, uid):  # our cache lags our own status write
                    cronjob, status = fresh, fresh.setdefault("status", {})
                    continue
                self.recorder.event(cronjob, "Warning", "UnexpectedJob",
                                    "Saw a job that the controller did not create or forgot: "
                                    f"{job['metadata']['name']}")
            elif found and finished is not None:
                _delete_from_active_list(cronjob, uid)
                self.recorder.event(cronjob, "Normal", "SawCompletedJob",
                                    f"Saw completed job: {job['metadata']['name']}, "
                                    f"status: {finished}")
                outcome.status_changed = True
            elif finished == "Complete":
                completed = (job.get("status") or {}).get("completionTime")
                last = status.get("lastSuccessfulTime")
                if completed and (not last or parse_rfc3339(completed) > parse_rfc3339(last)):
                    status["lastSuccessfulTime"] = completed
                    outcome.status_changed = True

        for reference in list(status.get("active") or ()):
            if reference.get("uid") in children:
                continue
            try:  # the cache may not have the Job yet: ask the API server
                await self.jobs_client.get(reference["name"], reference.get("namespace"))
            except NotFound:
                self.recorder.event(cronjob, "Normal", "MissingJob",
                                    f"Active job went missing: {reference['name']}")
                _delete_from_active_list(cronjob, reference.get("uid"))
                outcome.status_changed = True
        return cronjob

    def _due_run(self, cronjob: Obj, now: datetime, outcome: _SyncOutcome
                 ) -> tuple[datetime, tzinfo] | None:
        """The scheduled time of the run to start now, with the CronJob's time zone; None
        when suspended, invalid (an Event says why), not due, or past its starting deadline.
        Sets when to look again."""
        spec = cronjob["spec"]
        try:
            zone = _time_zone(cronjob)
        except ZoneInfoNotFoundError as error:
            self.recorder.event(cronjob, "Warning", "UnknownTimeZone",
                                f'invalid timeZone: "{spec.get("timeZone")}": {error}')
            return None
        if spec.get("suspend"):
            return None
        try:
            schedule = CronSchedule.parse(spec.get("schedule", ""))
        except CronSyntaxError as error:
            self.recorder.event(cronjob, "Warning", "UnparseableSchedule",
                                f'unparseable schedule: "{spec.get("schedule")}" : {error}')
            return None
        try:
            scheduled = self._next_schedule_time(cronjob, schedule, now, zone)
        except ValueError as error:
            self.recorder.event(cronjob, "Warning", "InvalidSchedule",
                                f"invalid schedule: {spec.get('schedule')} : {error}")
            return None
        outcome.requeue_after = next_schedule_delay(cronjob, schedule, now, zone)
        if scheduled is None:
            return None
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + timedelta(seconds=deadline) < now:
            self.recorder.event(cronjob, "Warning", "MissSchedule",
                                f"Missed scheduled time to start a job: {_rfc1123z(scheduled)}")
            return None
        return scheduled, zone

    async def _start_run(self, cronjob: Obj, scheduled: datetime, zone: tzinfo,
                         outcome: _SyncOutcome) -> None:
        """Start the Job for the run scheduled at `scheduled`, unless it was started already
        or the concurrency policy says no (Forbid) or first deletes the active ones
        (Replace); the active list and lastScheduleTime record it."""
        spec, status = cronjob["spec"], cronjob["status"]
        name = job_name(cronjob, scheduled)
        last = status.get("lastScheduleTime")
        if any(reference.get("name") == name for reference in status.get("active") or ()) or (
                last and parse_rfc3339(last) == scheduled):
            return  # this run was started already
        if spec.get("concurrencyPolicy") == "Forbid" and status.get("active"):
            self.recorder.event(cronjob, "Normal", "JobAlreadyActive",
                                "Not starting job because prior execution is running and "
                                "concurrency policy is Forbid")
            return
        if spec.get("concurrencyPolicy") == "Replace":
            for reference in list(status.get("active") or ()):
                await self._replace_active_job(cronjob, reference)
                outcome.status_changed = True

        job = await self._create_job(cronjob, scheduled, zone)
        if job is None:
            outcome.requeue_after = None
            return
        status.setdefault("active", []).append(object_reference(job))
        status["lastScheduleTime"] = rfc3339(scheduled)
        outcome.status_changed = True

    def _next_schedule_time(self, cronjob: Obj, schedule: CronSchedule, now: datetime,
                            zone: tzinfo) -> datetime | None:
        """nextScheduleTime: the latest run due now (within the starting deadline), if any."""
        _, latest, count = _most_recent(cronjob, schedule, now, zone, True)
        if latest is None or latest > now:
            return None
        if count > MANY_MISSED:
            self.recorder.event(cronjob, "Warning", "TooManyMissedTimes",
                                "too many missed start times. Set or decrease "
                                ".spec.startingDeadlineSeconds or check clock skew")
        return latest

    async def _replace_active_job(self, cronjob: Obj, reference: Obj) -> None:
        """concurrencyPolicy Replace: delete a Job still running at the next run."""
        try:
            job = await self.jobs_client.get(reference["name"], reference.get("namespace"))
        except Exception as error:
            self.recorder.event(cronjob, "Warning", "FailedGet", f"Get job: {error}")
            raise
        if not await self._delete_job(cronjob, job):
            meta = job["metadata"]
            raise RuntimeError(f"could not replace job {meta['namespace']}/{meta['name']}")

    async def _create_job(self, cronjob: Obj, scheduled: datetime, zone: tzinfo) -> Obj | None:
        """Create the Job of one scheduled time. None: it exists and needs no status change."""
        job = _job_from_template(cronjob, scheduled, zone)
        try:
            created = await self.jobs_client.create(job)
        except AlreadyExists:
            existing = await self.jobs_client.get(job["metadata"]["name"],
                                                  job["metadata"]["namespace"])
            # Ours but not in status.active: we created it, then failed to write status.
            if not is_controlled_by(existing, cronjob) or _in_active_list(
                    cronjob, existing["metadata"]["uid"]):
                return None
            log.info("cronjob: Job %s already exists", object_key(existing))
            return existing
        except Exception as error:
            self.recorder.event(cronjob, "Warning", "FailedCreate", f"Error creating job: {error}")
            raise
        self.recorder.event(cronjob, "Normal", "SuccessfulCreate",
                            f"Created job {created['metadata']['name']}")
        return created

    async def _delete_job(self, cronjob: Obj, job: Obj) -> bool:
        """deleteJob: delete a Job (Background: the garbage collector removes its pods)."""
        name = job["metadata"]["name"]
        try:
            await self.jobs_client.delete(name, job["metadata"]["namespace"],
                                          propagation_policy="Background")
        except Exception as error:
            self.recorder.event(cronjob, "Warning", "FailedDelete", f"Deleted job: {error}")
            log.warning("cronjob: deleting Job %s of %s: %s", name, object_key(cronjob), error)
            return False
        _delete_from_active_list(cronjob, job["metadata"]["uid"])
        self.recorder.event(cronjob, "Normal", "SuccessfulDelete", f"Deleted job {name}")
        return True

    async def _cleanup_finished_jobs(self, cronjob: Obj, jobs: list[Obj]) -> bool:
        """cleanupFinishedJobs: keep the newest successfulJobsHistoryLimit Complete Jobs and
        failedJobsHistoryLimit Failed ones. Returns whether status changed."""
        changed = False
        for condition, limit_field in (("Complete", "successfulJobsHistoryLimit"),
                                       ("Failed", "failedJobsHistoryLimit")):
            limit = cronjob["spec"].get(limit_field)
            if limit is None:
                continue
            finished = sorted((job for job in jobs if finished_condition(job) == condition),
                              key=_job_start_order)
            for job in finished[:max(0, len(finished) - limit)]:
                changed |= await self._delete_job(cronjob, job)
        return changed


def _in_active_list(cronjob: Obj, uid: str) -> bool:
    return any(reference.get("uid") == uid
               for reference in (cronjob.get("status") or {}).get("active") or ())


def _delete_from_active_list(cronjob: Obj, uid: str | None) -> None:
    status = cronjob.setdefault("status", {})
    status["active"] = [reference for reference in status.get("active") or ()
                        if reference.get("uid") != uid]


def _job_from_template(cronjob: Obj, scheduled: datetime, zone: tzinfo) -> Obj:
    """getJobFromTemplate2: the Job for one scheduled time, owned by the CronJob."""
    template = cronjob["spec"].get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    annotations = dict(template_meta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = _rfc3339_in_zone(scheduled.astimezone(zone))
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {
            "name": job_name(cronjob, scheduled),
            "namespace": cronjob["metadata"]["namespace"],
            "labels": dict(template_meta.get("labels") or {}),
            "annotations": annotations,
            "ownerReferences": [owner_reference(cronjob)],
        },
        "spec": copy.deepcopy(template.get("spec") or {}),
    }
