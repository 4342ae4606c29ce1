"""Event strategies: core/v1 Events and events.k8s.io/v1 Events (upstream ValidateEventCreate).

Both APIs store the same objects under /registry/events. Old-style events (no
eventTime) are checked loosely for compatibility; new-style ones must say who reported
them (reportingController/reportingInstance) and what happened (action, reason).
Error paths use upstream's internal field names (`involvedObject`, `message`) as it does.
"""

from __future__ import annotations

from minikube_py.api.validation import (
    FieldError,
    invalid,
    required,
    validate_dns1123_subdomain,
    validate_immutable,
    validate_qualified_name,
)
from minikube_py.apiserver.strategies.common import (
    NoGenerationStrategy,
    as_dict,
    format_errors,
    path_segment_name,
    text,
)
from minikube_py.apiserver.strategy import Obj

REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024
EVENT_TYPES = ("Normal", "Warning")
# events.k8s.io/v1 fields that never change, with the (internal) names upstream reports.
_V1_IMMUTABLE_FIELDS = (
    ("regarding", "involvedObject"),
    ("reason", "reason"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingController"),
    ("type", "type"),
    ("eventTime", "eventTime"),
    ("action", "action"),
    ("related", "related"),
    ("reportingInstance", "reportingInstance"),
)


class EventStrategy(NoGenerationStrategy):
    """core/v1 Events (what `kubectl describe` and the event recorder use)."""

    # The generic path-segment rule: event names like `web.17a8...` carry dots.
    name_validator = staticmethod(path_segment_name)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateEventCreate for v1: only the legacy rules."""
        return _legacy_errors(
            namespace=obj["metadata"].get("namespace", ""),
            regarding=as_dict(obj.get("involvedObject")),
            event_time=obj.get("eventTime"),
            reporting_controller=text(obj.get("reportingComponent")),
            reporting_controller_path="reportingComponent",
            reporting_instance=text(obj.get("reportingInstance")),
            action=text(obj.get("action")),
            reason=text(obj.get("reason")),
            note=text(obj.get("message")),
        )

    def field_set(self, obj: Obj) -> dict[str, str]:
        """event.ToSelectableFields."""
        involved = as_dict(obj.get("involvedObject"))
        fields = super().field_set(obj)
        for name in (
            "kind",
            "namespace",
            "name",
            "uid",
            "apiVersion",
            "resourceVersion",
            "fieldPath",
        ):
            fields[f"involvedObject.{name}"] = str(involved.get(name, ""))
        fields["reason"] = obj.get("reason", "")
        fields["reportingComponent"] = obj.get("reportingComponent", "")
        fields["source"] = as_dict(obj.get("source")).get("component", "")
        fields["type"] = obj.get("type", "")
        return fields


class EventsV1EventStrategy(NoGenerationStrategy):
    """events.k8s.io/v1 Events: the structured, rate-friendly event API."""

    name_validator = staticmethod(validate_dns1123_subdomain)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateEventCreate for events.k8s.io/v1: the legacy rules, then strict ones."""
        errors = _legacy_errors(
            namespace=obj["metadata"].get("namespace", ""),
            regarding=as_dict(obj.get("regarding")),
            event_time=obj.get("eventTime"),
            reporting_controller=text(obj.get("reportingController")),
            reporting_controller_path="reportingController",
            reporting_instance=text(obj.get("reportingInstance")),
            action=text(obj.get("action")),
            reason=text(obj.get("reason")),
            note=text(obj.get("note")),
        )
        if not obj.get("eventTime"):
            errors.append(required("eventTime"))
        if obj.get("type") not in EVENT_TYPES:
            errors.append(invalid("type", "", f"has invalid value: {obj.get('type') or ''}"))
        for field, path in (
            ("deprecatedFirstTimestamp", "firstTimestamp"),
            ("deprecatedLastTimestamp", "lastTimestamp"),
            ("deprecatedCount", "count"),
        ):
            if obj.get(field):
                errors.append(invalid(path, "", "needs to be unset"))
        source = as_dict(obj.get("deprecatedSource"))
        if source.get("component") or source.get("host"):
            errors.append(invalid("source", "", "needs to be unset"))
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateEventUpdate for events.k8s.io/v1: only the series may change."""
        errors = self.validate(new)
        for field, path in _V1_IMMUTABLE_FIELDS:
            errors += validate_immutable(new.get(field), old.get(field), path)
        return errors

    def field_set(self, obj: Obj) -> dict[str, str]:
        regarding = as_dict(obj.get("regarding"))
        fields = super().field_set(obj)
        for name in (
            "kind",
            "namespace",
            "name",
            "uid",
            "apiVersion",
            "resourceVersion",
            "fieldPath",
        ):
            fields[f"regarding.{name}"] = str(regarding.get(name, ""))
        fields["reason"] = obj.get("reason", "")
        fields["reportingController"] = obj.get("reportingController", "")
        fields["type"] = obj.get("type", "")
        return fields


def _legacy_errors(
    *,
    namespace: str,
    regarding: Obj,
    event_time: object,
    reporting_controller: str,
    reporting_controller_path: str,
    reporting_instance: str,
    action: str,
    reason: str,
    note: str,
) -> list[FieldError]:
    """legacyValidateEvent: the involved object's namespace, and the new-style fields."""
    errors: list[FieldError] = []
    involved_namespace = regarding.get("namespace") or ""
    mismatch = invalid(
        "involvedObject.namespace", involved_namespace, "does not match event.namespace"
    )
    if not event_time:
        if involved_namespace:
            if namespace != involved_namespace:
                errors.append(mismatch)
        elif namespace not in ("", "default"):
            errors.append(mismatch)
        return errors
    if not involved_namespace and namespace not in ("default", "kube-system"):
        errors.append(mismatch)
    if not reporting_controller:
        errors.append(required(reporting_controller_path))
    errors += format_errors(
        validate_qualified_name, reporting_controller, reporting_controller_path
    )
    for value, field, limit in (
        (reporting_instance, "reportingInstance", REPORTING_INSTANCE_LIMIT),
        (action, "action", ACTION_LIMIT),
        (reason, "reason", REASON_LIMIT),
    ):
        if not value:
            errors.append(required(field))
        if len(value) > limit:
            errors.append(invalid(field, "", f"can have at most {limit} characters"))
    if len(note) > NOTE_LIMIT:
        errors.append(invalid("message", "", f"can have at most {NOTE_LIMIT} characters"))
    return errors
