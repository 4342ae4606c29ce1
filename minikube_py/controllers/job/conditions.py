"""Job conditions: reading Complete / Failed (upstream pkg/controller/job/util) and setting
them (job_controller.go's newCondition, ensureJobConditionStatus)."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339


def finished_condition(job: Obj) -> str | None:
    """util.FinishedCondition: "Complete" or "Failed" if that condition is True, else None."""
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return condition["type"]
    return None


def is_job_finished(job: Obj) -> bool:
    """util.IsJobFinished: the Complete or the Failed condition is True."""
    return finished_condition(job) is not None


def find_condition(job: Obj, condition_type: str) -> Obj | None:
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") == condition_type:
            return condition
    return None


def new_condition(condition_type: str, status: str, reason: str, message: str,
                  now: datetime) -> Obj:
    stamp = rfc3339(now)
    return {"type": condition_type, "status": status, "lastProbeTime": stamp,
            "lastTransitionTime": stamp, "reason": reason, "message": message}


def ensure_condition(status: Obj, condition_type: str, value: str, reason: str, message: str,
                     now: datetime) -> bool:
    """ensureJobConditionStatus: set a condition; a missing one is not added as False.

    Returns whether the conditions changed.
    """
    conditions = status.setdefault("conditions", [])
    new = new_condition(condition_type, value, reason, message, now)
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
