"""The pod-failure backoff of a Job (upstream pkg/controller/job/backoff_utils.go)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from minikube_py.api import Obj
from minikube_py.api.meta import parse_rfc3339
from minikube_py.api.podutil import pod_condition

# Module constants, as upstream's package variables (tests shorten them).
DEFAULT_POD_FAILURE_BACKOFF = 10.0  # delay before replacing a failed pod, doubling per failure
MAX_POD_FAILURE_BACKOFF = 600.0


def pod_finished_time(pod: Obj) -> datetime:
    """getFinishedTime: when the last container terminated; else when the pod turned not
    Ready; else its deletion time minus the grace period; else its creation time."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    finished = [((s.get("state") or {}).get("terminated") or {}).get("finishedAt")
                for s in statuses]
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
