"""batch/v1: jobs and cron jobs."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.api.duration import human_duration
from minikube_py.apiserver.endpoints.tables.cells import (
    NONE,
    UNSET,
    age,
    condition_true,
    container_cells,
    format_label_selector,
    name_of,
    parse_time,
    template_spec,
    translate_timestamp_since,
)
from minikube_py.apiserver.endpoints.tables.table import (
    AGE,
    CONTAINERS,
    IMAGES,
    NAME,
    Cells,
    column,
    selector_column,
)

JOB_COLUMNS = (
    NAME,
    column("Status", "string", "Status of the job."),
    column("Completions", "string", "The number of pods which reached phase Succeeded."),
    column("Duration", "string", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    selector_column("A label query over pods that should match the pod count."),
)


def job_status(job: Obj) -> str:
    """The Job's STATUS: Complete, Failed, Terminating, Suspended, FailureTarget, Running."""
    status = job.get("status") or {}
    if condition_true(status, "Complete"):
        return "Complete"
    if condition_true(status, "Failed"):
        return "Failed"
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    if condition_true(status, "Suspended"):
        return "Suspended"
    if condition_true(status, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def print_job(job: Obj, now: datetime) -> Cells:
    """printJob: status, "succeeded/completions", and how long the job ran."""
    spec, status = (job.get("spec") or {}), (job.get("status") or {})
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif (spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    started = parse_time(status.get("startTime"))
    finished = parse_time(status.get("completionTime"))
    duration = ""
    if started is not None:
        duration = human_duration((finished or now) - started)
    return [
        name_of(job),
        job_status(job),
        completions,
        duration,
        age(job, now),
        *container_cells(template_spec(job)),
        format_label_selector(spec.get("selector")),
    ]


CRON_JOB_COLUMNS = (
    NAME,
    column("Schedule", "string", "The schedule in Cron format."),
    column("Timezone", "string", "The time zone name for the given schedule."),
    column("Suspend", "boolean", "This flag tells the controller to suspend subsequent "
                                 "executions."),
    column("Active", "integer", "A list of pointers to currently running jobs."),
    column("Last Schedule", "string", "Information when was the last time the job was "
                                      "successfully scheduled."),
    AGE,
    CONTAINERS,
    IMAGES,
    selector_column("A label query over pods that should match the pod count."),
)


def print_bool_ptr(value: bool | None) -> str:
    """printBoolPtr: "True", "False" or "<unset>"."""
    if value is None:
        return UNSET
    return "True" if value else "False"


def print_cron_job(cron_job: Obj, now: datetime) -> Cells:
    """printCronJob: schedule, time zone, suspend, active jobs, last schedule."""
    spec, status = (cron_job.get("spec") or {}), (cron_job.get("status") or {})
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    last_schedule = NONE
    if status.get("lastScheduleTime"):
        last_schedule = translate_timestamp_since(status["lastScheduleTime"], now)
    return [
        name_of(cron_job),
        spec.get("schedule", ""),
        spec.get("timeZone") or NONE,
        print_bool_ptr(spec.get("suspend")),
        len(status.get("active") or []),
        last_schedule,
        age(cron_job, now),
        *container_cells((job_spec.get("template") or {}).get("spec") or {}),
        format_label_selector(job_spec.get("selector")),
    ]
