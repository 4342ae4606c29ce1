"""`describe job` and `describe cronjob` (describe.go: describeJob, describeCronJob):
a job's spec, timing and pod counts; a cron job's schedule, job template and active
jobs; then the pod template and the events."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    describe_events,
    go_bool,
    print_annotations_multiline,
    print_bool,
    print_controller,
    print_labels_multiline,
    search_events,
)
from minikube_py.mkctl.describers.workloads import describe_pod_template
from minikube_py.mkctl.describers.writer import LEVEL_0, PrefixWriter, rfc1123z

INDEXES_SOFT_LIMIT = 50


def _cap_indexes(indexes: str) -> str:
    """capIndexesListOrNone: the completed indexes, cut at the first comma after 50
    characters."""
    if not indexes:
        return "<none>"
    cut = indexes.find(",", INDEXES_SOFT_LIMIT)
    return indexes if cut == -1 else indexes[:cut + 1] + "..."


def _duration(start: str, end: str) -> str:
    from minikube_py.api.duration import human_duration

    def parse(text: str) -> datetime:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    return human_duration(parse(end) - parse(start))


def job_describer(job: Obj, lookups: Lookups, settings: Settings) -> str:
    """JobDescriber + describeJob."""
    from minikube_py.api.selectors import label_selector_to_string

    meta, spec, status = job.get("metadata") or {}, job.get("spec") or {}, job.get(
        "status") or {}
    events = search_events(lookups, meta.get("namespace", ""), meta.get("name", ""), "Job",
                           meta.get("uid", ""), settings)
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    w.write(LEVEL_0, f"Selector:\t{label_selector_to_string(spec.get('selector'))}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    controlled_by = print_controller(job)
    if controlled_by:
        w.write(LEVEL_0, f"Controlled By:\t{controlled_by}\n")
    if spec.get("parallelism") is not None:
        w.write(LEVEL_0, f"Parallelism:\t{spec['parallelism']}\n")
    completions = spec.get("completions")
    w.write(LEVEL_0, f"Completions:\t{'<unset>' if completions is None else completions}\n")
    if spec.get("completionMode") is not None:
        w.write(LEVEL_0, f"Completion Mode:\t{spec['completionMode']}\n")
    if spec.get("suspend") is not None:
        w.write(LEVEL_0, f"Suspend:\t{go_bool(spec['suspend'])}\n")
    if spec.get("backoffLimit") is not None:
        w.write(LEVEL_0, f"Backoff Limit:\t{spec['backoffLimit']}\n")
    if spec.get("ttlSecondsAfterFinished") is not None:
        w.write(LEVEL_0, f"TTL Seconds After Finished:\t{spec['ttlSecondsAfterFinished']}\n")
    if status.get("startTime"):
        w.write(LEVEL_0, f"Start Time:\t{rfc1123z(status['startTime'])}\n")
    if status.get("completionTime"):
        w.write(LEVEL_0, f"Completed At:\t{rfc1123z(status['completionTime'])}\n")
    if status.get("startTime") and status.get("completionTime"):
        w.write(LEVEL_0, f"Duration:\t{_duration(status['startTime'], status['completionTime'])}\n")
    if spec.get("activeDeadlineSeconds") is not None:
        w.write(LEVEL_0, f"Active Deadline Seconds:\t{spec['activeDeadlineSeconds']}s\n")
    counts = (status.get("active", 0), status.get("succeeded", 0), status.get("failed", 0))
    if status.get("ready") is None:
        w.write(LEVEL_0, f"Pods Statuses:\t{counts[0]} Active / {counts[1]} Succeeded / "
                         f"{counts[2]} Failed\n")
    else:
        w.write(LEVEL_0, f"Pods Statuses:\t{counts[0]} Active ({status['ready']} Ready) / "
                         f"{counts[1]} Succeeded / {counts[2]} Failed\n")
    if spec.get("completionMode") == "Indexed":
        indexes = _cap_indexes(status.get("completedIndexes", ""))
        w.write(LEVEL_0, f"Completed Indexes:\t{indexes}\n")
    describe_pod_template(spec.get("template"), w)
    describe_events(events, w)
    return w.tabbed()


def _or_unset(value: object, suffix: str = "") -> str:
    return "<unset>" if value is None else f"{value}{suffix}"


def cron_job_describer(cron_job: Obj, lookups: Lookups, settings: Settings) -> str:
    """CronJobDescriber + describeCronJob: the schedule and its policies, the job
    template, the last schedule time and the active jobs."""
    from minikube_py.api.selectors import label_selector_to_string

    meta, spec = cron_job.get("metadata") or {}, cron_job.get("spec") or {}
    status = cron_job.get("status") or {}
    events = search_events(lookups, meta.get("namespace", ""), meta.get("name", ""),
                           "CronJob", meta.get("uid", ""), settings)
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    w.write(LEVEL_0, f"Schedule:\t{spec.get('schedule', '')}\n")
    w.write(LEVEL_0, f"Concurrency Policy:\t{spec.get('concurrencyPolicy', '')}\n")
    suspend = spec.get("suspend")
    w.write(LEVEL_0, f"Suspend:\t{'<unset>' if suspend is None else print_bool(suspend)}\n")
    w.write(LEVEL_0, f"Time Zone:\t{_or_unset(spec.get('timeZone'))}\n")
    w.write(LEVEL_0, "Successful Job History Limit:\t"
                     f"{_or_unset(spec.get('successfulJobsHistoryLimit'))}\n")
    w.write(LEVEL_0, "Failed Job History Limit:\t"
                     f"{_or_unset(spec.get('failedJobsHistoryLimit'))}\n")
    w.write(LEVEL_0, "Starting Deadline Seconds:\t"
                     f"{_or_unset(spec.get('startingDeadlineSeconds'), 's')}\n")
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    selector = job_spec.get("selector")
    w.write(LEVEL_0, "Selector:\t"
                     f"{'<unset>' if selector is None else label_selector_to_string(selector)}\n")
    w.write(LEVEL_0, f"Parallelism:\t{_or_unset(job_spec.get('parallelism'))}\n")
    w.write(LEVEL_0, f"Completions:\t{_or_unset(job_spec.get('completions'))}\n")
    if job_spec.get("activeDeadlineSeconds") is not None:
        w.write(LEVEL_0, f"Active Deadline Seconds:\t{job_spec['activeDeadlineSeconds']}s\n")
    describe_pod_template(job_spec.get("template"), w)
    last = status.get("lastScheduleTime")
    w.write(LEVEL_0, f"Last Schedule Time:\t{rfc1123z(last) if last else '<unset>'}\n")
    active = status.get("active") or []
    w.write(LEVEL_0, "Active Jobs:\t")
    w.write_line(", ".join(job.get("name", "") for job in active) if active else "<none>")
    describe_events(events, w)
    return w.tabbed()
