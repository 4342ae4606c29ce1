"""Strategies of batch/v1: Job and CronJob (upstream pkg/registry/batch and batch validation).

A Job's selector is generated at create from its uid: the pod template gets the
`batch.kubernetes.io/controller-uid` and `batch.kubernetes.io/job-name` labels (and
their legacy unprefixed twins), and the selector matches the controller uid. Once
created, a Job's selector and pod template are fixed (a suspended Job that never
started may still change where its pods would be scheduled).
"""

from __future__ import annotations

import copy
import re
import zoneinfo
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.cron import CronSyntaxError, parse_standard
from minikube_py.api.defaulting import as_dict, defaulted_dict, set_default, set_default_if_zero
from minikube_py.api.poddefaults import set_pod_spec_defaults
from minikube_py.api.selectors import SelectorError, label_selector_from_dict
from minikube_py.api.validation import (
    FieldError,
    invalid,
    not_supported,
    required,
    validate_dns1123_label,
    validate_immutable,
    validate_label_selector,
    validate_nonnegative,
)
from minikube_py.apiserver.registry.strategies.base import KindStrategy
from minikube_py.apiserver.registry.strategies.fields import (
    SELECTOR_MISMATCH,
    child,
    semantic,
    template_labels_match,
)
from minikube_py.apiserver.registry.strategies.podspec_validation import validate_pod_template

CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
MAX_PARALLELISM_FOR_INDEXED_JOB = 100000
CONCURRENCY_POLICIES = ["Allow", "Forbid", "Replace"]
# The cronjob controller names its jobs `<cronjob>-<11 characters>`, within 63.
MAX_CRONJOB_NAME_LENGTH = 52
_TIME_ZONE_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
# What a suspended Job that never started may still change in its pod template.
_SCHEDULING_DIRECTIVES = ("nodeSelector", "tolerations", "schedulingGates")


def _template_pod_spec(job_spec: Obj) -> Obj:
    """The pod spec in a Job spec's template (template.spec), created where missing."""
    return defaulted_dict(defaulted_dict(job_spec, "template"), "spec")


# --- Job ---------------------------------------------------------------------------------


class JobStrategy(KindStrategy):
    """Jobs: run pods to completion."""

    # batch/v1 keeps a Job's pods by default, for backwards compatibility.
    default_garbage_collection_policy = "OrphanDependents"

    def prepare_for_create(self, obj: Obj) -> None:
        """Generate the selector and pod labels from the Job's uid (unless manualSelector)."""
        super().prepare_for_create(obj)
        spec = defaulted_dict(obj, "spec")
        if not spec.get("manualSelector"):
            generate_selector(obj)

    def default(self, obj: Obj) -> None:
        """SetDefaults_Job."""
        spec = defaulted_dict(obj, "spec")
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        set_default(spec, "parallelism", 1)
        set_default(
            spec, "backoffLimit", 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
        )
        template_labels = as_dict(defaulted_dict(spec, "template").get("metadata")).get("labels")
        if template_labels and not obj["metadata"].get("labels"):
            obj["metadata"]["labels"] = dict(template_labels)
        set_default(spec, "completionMode", "NonIndexed")
        set_default(spec, "suspend", False)
        has_failure_policy = spec.get("podFailurePolicy") is not None
        set_default(
            spec, "podReplacementPolicy", "Failed" if has_failure_policy else "TerminatingOrFailed"
        )
        set_default(spec, "manualSelector", False)
        for rule in as_dict(spec.get("podFailurePolicy")).get("rules") or []:
            for pattern in as_dict(rule).get("onPodConditions") or []:
                if isinstance(pattern, dict):
                    set_default_if_zero(pattern, "status", "True")
        set_pod_spec_defaults(_template_pod_spec(spec))

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateJob."""
        spec = as_dict(obj.get("spec"))
        errors = _validate_generated_selector(obj)
        errors += _validate_job_spec(spec, "spec")
        selector = spec.get("selector")
        if selector is None:
            errors.append(required("spec.selector"))
        else:
            errors += validate_label_selector(as_dict(selector), "spec.selector")
        if template_labels_match(selector, as_dict(spec.get("template"))) is False:
            labels = as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")
            errors.append(invalid("spec.template.metadata.labels", labels, SELECTOR_MISMATCH))
        completions = spec.get("completions")
        if (
            spec.get("completionMode") == "Indexed"
            and isinstance(completions, int)
            and completions > 0
        ):
            name = obj["metadata"].get("name", "")
            hostname = f"{name}-{completions - 1}"
            if validate_dns1123_label(hostname):
                errors.append(
                    invalid(
                        "metadata.name",
                        name,
                        f"will not able to create pod with invalid DNS label: {hostname}",
                    )
                )
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateJobSpecUpdate: selector, template and modes are fixed."""
        spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
        errors = self.validate(new)
        errors += _validate_completions_update(spec, old_spec)
        errors += validate_immutable(
            spec.get("selector"), old_spec.get("selector"), "spec.selector"
        )
        errors += _validate_template_update(spec, old_spec, old)
        for field in (
            "completionMode",
            "podFailurePolicy",
            "backoffLimitPerIndex",
            "managedBy",
            "successPolicy",
        ):
            errors += validate_immutable(spec.get(field), old_spec.get(field), f"spec.{field}")
        return errors

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """validateJobStatus: the pod counters are never negative."""
        status = as_dict(new.get("status"))
        errors: list[FieldError] = []
        for field in ("active", "succeeded", "failed", "ready", "terminating"):
            if status.get(field) is not None:
                errors += validate_nonnegative(status[field], f"status.{field}")
        return errors

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["status.successful"] = str(as_dict(obj.get("status")).get("succeeded", 0))
        return fields


def generate_selector(job: Obj) -> None:
    """generateSelector: label the pod template with the Job's name and uid, select the uid.

    Labels the user already set are kept (validation then rejects a conflict).
    """
    metadata = job["metadata"]
    uid, name = metadata.get("uid", ""), metadata.get("name", "")
    template = defaulted_dict(defaulted_dict(job, "spec"), "template")
    labels = defaulted_dict(defaulted_dict(template, "metadata"), "labels")
    for label, value in (
        (LEGACY_JOB_NAME_LABEL, name),
        (JOB_NAME_LABEL, name),
        (LEGACY_CONTROLLER_UID_LABEL, uid),
        (CONTROLLER_UID_LABEL, uid),
    ):
        labels.setdefault(label, value)
    match_labels = defaulted_dict(defaulted_dict(job["spec"], "selector"), "matchLabels")
    match_labels.setdefault(CONTROLLER_UID_LABEL, uid)


def _validate_generated_selector(job: Obj) -> list[FieldError]:
    """validateGeneratedSelector: the generated labels are there and the selector uses them."""
    spec = as_dict(job.get("spec"))
    if spec.get("manualSelector") is True or spec.get("selector") is None:
        return []
    metadata = job["metadata"]
    uid, name = metadata.get("uid", ""), metadata.get("name", "")
    errors: list[FieldError] = []
    if not uid:
        errors.append(required("metadata.uid"))
    labels = as_dict(as_dict(as_dict(spec.get("template")).get("metadata")).get("labels"))
    expected = {
        LEGACY_CONTROLLER_UID_LABEL: uid,
        LEGACY_JOB_NAME_LABEL: name,
        CONTROLLER_UID_LABEL: uid,
        JOB_NAME_LABEL: name,
    }
    for label, value in expected.items():
        label_path = f"spec.template.metadata.labels[{label}]"
        if label not in labels:
            errors.append(required(label_path, f"must be '{value}'"))
        elif labels[label] != value:
            errors.append(invalid(label_path, labels, f"must be '{value}'"))
    try:
        selects_expected = label_selector_from_dict(spec["selector"]).matches(expected)
    except SelectorError:
        return errors
    if not selects_expected:
        errors.append(invalid("spec.selector", spec["selector"], "`selector` not auto-generated"))
    return errors


def _validate_job_spec(spec: Obj, path: str) -> list[FieldError]:
    """validateJobSpec: counts, completion mode, replacement policy and the pod template."""
    errors: list[FieldError] = []
    for field in (
        "parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
        "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes",
    ):  # fmt: skip
        if spec.get(field) is not None:
            errors += validate_nonnegative(spec[field], child(path, field))
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        errors.append(not_supported(child(path, "completionMode"), mode, ["NonIndexed", "Indexed"]))
    if mode == "Indexed":
        if spec.get("completions") is None:
            errors.append(required(child(path, "completions"), "when completion mode is Indexed"))
        parallelism = spec.get("parallelism")
        if isinstance(parallelism, int) and parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB:
            errors.append(
                invalid(
                    child(path, "parallelism"),
                    parallelism,
                    f"must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} when "
                    "completion mode is Indexed",
                )
            )
    else:
        for field in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(field) is not None:
                errors.append(
                    invalid(child(path, field), spec[field], "requires indexed completion mode")
                )
    errors += _validate_replacement_policy(spec, child(path, "podReplacementPolicy"))
    template = as_dict(spec.get("template"))
    errors += validate_pod_template(template, child(path, "template"))
    errors += _validate_job_restart_policy(spec, child(path, "template", "spec", "restartPolicy"))
    return errors


def _validate_replacement_policy(spec: Obj, path: str) -> list[FieldError]:
    policy = spec.get("podReplacementPolicy")
    if policy is None:
        return []
    if spec.get("podFailurePolicy") is not None:
        if policy != "Failed":
            return [not_supported(path, policy, ["Failed"])]
    elif policy not in ("Failed", "TerminatingOrFailed"):
        return [not_supported(path, policy, ["Failed", "TerminatingOrFailed"])]
    return []


def _validate_job_restart_policy(spec: Obj, path: str) -> list[FieldError]:
    """A Job's pods must not restart forever: OnFailure or Never."""
    policy = as_dict(as_dict(spec.get("template")).get("spec")).get("restartPolicy")
    if policy in ("Always", "", None):
        return [required(path, 'valid values: "OnFailure", "Never"')]
    if policy not in ("OnFailure", "Never"):
        return [not_supported(path, policy, ["OnFailure", "Never"])]
    if spec.get("podFailurePolicy") is not None and policy != "Never":
        return [
            invalid(path, policy, 'only "Never" is supported when podFailurePolicy is specified')
        ]
    return []


def _validate_completions_update(spec: Obj, old_spec: Obj) -> list[FieldError]:
    """validateCompletions: an Indexed Job may scale, keeping completions == parallelism."""
    completions, old_completions = spec.get("completions"), old_spec.get("completions")
    if spec.get("completionMode") != "Indexed":
        return validate_immutable(completions, old_completions, "spec.completions")
    if completions == old_completions or completions is None:
        return []
    if completions != spec.get("parallelism"):
        return [
            invalid(
                "spec.completions",
                completions,
                "can only be modified in tandem with spec.parallelism",
            )
        ]
    return []


def _validate_template_update(spec: Obj, old_spec: Obj, old: Obj) -> list[FieldError]:
    """validatePodTemplateUpdate: frozen, except scheduling directives of a Job never run."""
    template = semantic(as_dict(spec.get("template")))
    old_template = copy.deepcopy(semantic(as_dict(old_spec.get("template"))))
    suspended = old_spec.get("suspend") is True
    never_started = as_dict(old.get("status")).get("startTime") is None
    if suspended and never_started:
        new_pod_spec = as_dict(template.get("spec"))
        old_pod_spec = old_template.setdefault("spec", {})
        for field in _SCHEDULING_DIRECTIVES:
            _copy_field(new_pod_spec, old_pod_spec, field)
        new_affinity = as_dict(new_pod_spec.get("affinity"))
        old_affinity = as_dict(old_pod_spec.get("affinity"))
        old_affinity = {k: v for k, v in old_affinity.items() if k != "nodeAffinity"}
        if "nodeAffinity" in new_affinity:
            old_affinity["nodeAffinity"] = new_affinity["nodeAffinity"]
        if old_affinity or "affinity" in new_pod_spec:
            old_pod_spec["affinity"] = old_affinity
        else:
            old_pod_spec.pop("affinity", None)
        for field in ("labels", "annotations"):
            _copy_field(
                as_dict(template.get("metadata")), old_template.setdefault("metadata", {}), field
            )
    return validate_immutable(template, old_template, "spec.template")


def _copy_field(source: Obj, target: Obj, field: str) -> None:
    if field in source:
        target[field] = source[field]
    else:
        target.pop(field, None)


# --- CronJob -----------------------------------------------------------------------------


class CronJobStrategy(KindStrategy):
    """CronJobs: create a Job from a template on a schedule."""

    def default(self, obj: Obj) -> None:
        """SetDefaults_CronJob; the job template's pod template is defaulted like a pod's."""
        spec = defaulted_dict(obj, "spec")
        set_default_if_zero(spec, "concurrencyPolicy", "Allow")
        set_default(spec, "suspend", False)
        set_default(spec, "successfulJobsHistoryLimit", 3)
        set_default(spec, "failedJobsHistoryLimit", 1)
        job_spec = defaulted_dict(defaulted_dict(spec, "jobTemplate"), "spec")
        set_pod_spec_defaults(_template_pod_spec(job_spec))

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateCronJobCreate."""
        errors = _validate_cronjob_spec(as_dict(obj.get("spec")), None)
        name = obj["metadata"].get("name", "")
        if len(name) > MAX_CRONJOB_NAME_LENGTH:
            errors.append(invalid("metadata.name", name, "must be no more than 52 characters"))
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateCronJobUpdate: as on create, but long names (from older releases) pass."""
        return _validate_cronjob_spec(as_dict(new.get("spec")), as_dict(old.get("spec")))


def _validate_cronjob_spec(spec: Obj, old_spec: Obj | None) -> list[FieldError]:
    """validateCronJobSpec."""
    errors: list[FieldError] = []
    schedule = spec.get("schedule")
    if not schedule:
        errors.append(required("spec.schedule"))
    else:
        allow_tz = old_spec is not None and "TZ" in str(old_spec.get("schedule", ""))
        errors += _validate_schedule(str(schedule), allow_tz, spec.get("timeZone"))
    if spec.get("startingDeadlineSeconds") is not None:
        errors += validate_nonnegative(
            spec["startingDeadlineSeconds"], "spec.startingDeadlineSeconds"
        )
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        errors += _validate_time_zone(spec.get("timeZone"))
    policy = spec.get("concurrencyPolicy")
    if not policy:
        errors.append(required("spec.concurrencyPolicy"))
    elif policy not in CONCURRENCY_POLICIES:
        errors.append(not_supported("spec.concurrencyPolicy", policy, CONCURRENCY_POLICIES))
    errors += _validate_job_template(as_dict(spec.get("jobTemplate")), "spec.jobTemplate")
    for field in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        if spec.get(field) is not None:
            errors += validate_nonnegative(spec[field], f"spec.{field}")
    return errors


def _validate_schedule(schedule: str, allow_tz: bool, time_zone: Any) -> list[FieldError]:
    """validateScheduleFormat: five cron fields; a time zone goes in spec.timeZone."""
    errors: list[FieldError] = []
    try:
        parse_standard(schedule)
    except CronSyntaxError as error:
        errors.append(invalid("spec.schedule", schedule, str(error)))
    if allow_tz and "TZ" in schedule and time_zone is not None:
        errors.append(
            invalid(
                "spec.schedule",
                schedule,
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            )
        )
    elif not allow_tz and "TZ" in schedule:
        errors.append(
            invalid(
                "spec.schedule",
                schedule,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            )
        )
    return errors


def _validate_time_zone(time_zone: Any) -> list[FieldError]:
    """validateTimeZone: an explicit IANA time zone name."""
    if time_zone is None:
        return []
    path = "spec.timeZone"
    if not time_zone:
        return [invalid(path, time_zone, "timeZone must be nil or non-empty string")]
    name = str(time_zone)
    for part in name.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.match(part):
            return [invalid(path, name, f"unknown time zone {name}")]
    if name.lower() == "local":
        return [
            invalid(
                path,
                name,
                "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            )
        ]
    try:
        zoneinfo.ZoneInfo(name)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        return [invalid(path, name, f"unknown time zone {name}")]
    return []


def _validate_job_template(job_template: Obj, path: str) -> list[FieldError]:
    """ValidateJobTemplateSpec: a Job spec whose selector the controller will generate."""
    spec = as_dict(job_template.get("spec"))
    spec_path = child(path, "spec")
    errors = _validate_job_spec(spec, spec_path)
    if spec.get("selector") is not None:
        errors.append(
            invalid(
                child(spec_path, "selector"), spec["selector"], "`selector` will be auto-generated"
            )
        )
    if spec.get("manualSelector") is True:
        errors.append(not_supported(child(spec_path, "manualSelector"), True, ["nil", "false"]))
    return errors
