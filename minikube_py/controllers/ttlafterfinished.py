"""The TTL-after-finished controller: delete finished Jobs once their
spec.ttlSecondsAfterFinished has passed (upstream pkg/controller/ttlafterfinished).

    job added or updated --> finished and has a TTL? --> queue "ns/name"
    sync: TTL not yet expired -> look again when it expires
          expired -> re-read the Job from the API server (the TTL may have changed)
                     -> still expired: DELETE with propagationPolicy Foreground

The finish time is the lastTransitionTime of the Job's Complete or Failed condition.
Foreground deletion lets the garbage collector remove the Job's pods before the Job.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from minikube_py.api import Obj
from minikube_py.api.meta import parse_rfc3339
from minikube_py.client.errors import NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import split_key
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.job import is_job_finished

log = logging.getLogger(__name__)


def needs_cleanup(job: Obj) -> bool:
    """needsCleanup: the Job has finished and has a TTL."""
    return job["spec"].get("ttlSecondsAfterFinished") is not None and is_job_finished(job)


def finish_time(job: Obj) -> str:
    """jobFinishTime: when the Complete or Failed condition turned True."""
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            if not condition.get("lastTransitionTime"):
                break
            return condition["lastTransitionTime"]
    meta = job["metadata"]
    raise ValueError(f"unable to find the time when the Job {meta['namespace']}/{meta['name']} "
                     "finished")


class TTLAfterFinishedController(Controller):
    """Clean up finished Jobs after their TTL (upstream ttlafterfinished.Controller)."""

    name = "ttl-after-finished"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.jobs = self.informer("jobs", "batch")
        self.jobs_client = self.client.resource("jobs", "batch")
        self.jobs.add_event_handler(EventHandler(
            on_add=self._job_changed, on_update=lambda _old, new: self._job_changed(new)))

    def _job_changed(self, job: Obj) -> None:
        if not job["metadata"].get("deletionTimestamp") and needs_cleanup(job):
            self.enqueue(job)

    async def sync(self, key: str) -> None:
        """processJob: delete the Job if its TTL truly expired, else come back then."""
        job = self.jobs.store.get(key)
        if job is None or not self._expired(job):
            return
        namespace, name = split_key(key)
        try:
            fresh = await self.jobs_client.get(name, namespace)
        except NotFound:
            return
        if not self._expired(fresh):  # the TTL may have been changed meanwhile
            return
        log.info("ttl-after-finished: cleaning up Job %s", key)
        try:
            await self.jobs_client.delete(name, namespace, propagation_policy="Foreground",
                                          preconditions={"uid": fresh["metadata"]["uid"]})
        except NotFound:
            return

    def _expired(self, job: Obj) -> bool:
        """processTTL: has the TTL expired? If it will later, queue the Job for then."""
        if job["metadata"].get("deletionTimestamp") or not needs_cleanup(job):
            return False
        ttl = timedelta(seconds=job["spec"]["ttlSecondsAfterFinished"])
        finished_at = parse_rfc3339(finish_time(job))
        now = self.now()
        if finished_at > now:
            log.warning("ttl-after-finished: Job %s/%s finished in the future (clock skew?); "
                        "cleanup deferred", job["metadata"]["namespace"], job["metadata"]["name"])
        remaining = (finished_at + ttl - now).total_seconds()
        if remaining <= 0:
            return True
        self.enqueue_after(job, remaining)
        return False
