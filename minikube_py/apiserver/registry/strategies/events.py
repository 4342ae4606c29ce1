"""Event strategies: core/v1 Events and events.k8s.io/v1 Events (upstream ValidateEventCreate).

Both APIs store the same objects under /registry/events. Old-style events (no
eventTime) are checked loosely for compatibility; new-style ones must say who reported
them (reportingController/reportingInstance) and what happened (action, reason).
Error paths use upstream's internal field names (`involvedObject`, `message`) as it does.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, text
from minikube_py.api.validation import (
    FieldError,
    invalid,
    required,
    validate_dns1123_subdomain,
    validate_immutable,
    validate_qualified_name,
)
from minikube_py.apiserver.registry.event_conversion import (
    core_event_to_events_v1,
    events_v1_to_core_event,
)
from minikube_py.apiserver.registry.strategies.base import NoGenerationStrategy
from minikube_py.apiserver.registry.strategies.fields import format_errors, path_segment_name

REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024
EVENT_TYPES = ("Normal", "Warning")
# The fields of an event's object reference that field selectors may name.
_REFERENCE_FIELDS = (
    "kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath",
)  # fmt: skip
# events.k8s.io/v1 fields that never change, by the (core/v1) names they are stored and
# reported under: regarding is involvedObject, note is message, deprecatedX is x.
_V1_IMMUTABLE_FIELDS = (
    "involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp",
    "count", "reportingComponent", "type", "eventTime", "action", "related",
    "reportingInstance",
)  # fmt: skip


class EventStrategy(NoGenerationStrategy):
    """core/v1 Events (what `kubectl describe` and the event recorder use)."""

    default_garbage_collection_policy = "Unsupported"

    # The generic path-segment rule: event names like `web.17a8...` carry dots.
    name_validator = staticmethod(path_segment_name)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateEventCreate for v1: only the legacy rules."""
        return _legacy_errors(
            obj, regarding_field="involvedObject", reporter_field="reportingComponent",
            note_field="message",
        )  # fmt: skip

    def field_set(self, obj: Obj) -> dict[str, str]:
        """event.ToSelectableFields."""
        fields = super().field_set(obj)
        fields.update(_reference_fields("involvedObject", obj))
        fields["reason"] = obj.get("reason", "")
        fields["reportingComponent"] = obj.get("reportingComponent", "")
        fields["source"] = as_dict(obj.get("source")).get("component", "")
        fields["type"] = obj.get("type", "")
        return fields


class EventsV1EventStrategy(NoGenerationStrategy):
    """events.k8s.io/v1 Events: the structured, rate-friendly event API.

    The API server converts them to the stored core/v1 shape before any hook runs
    (apiserver/registry/event_conversion.py), so the hooks read core/v1 field names: regarding is
    involvedObject, note is message, deprecatedSource is source, and so on.
    """

    default_garbage_collection_policy = "Unsupported"
    storage_kind = ("v1", "Event")
    stored_is_external = False

    def to_internal(self, obj: Obj) -> Obj:
        return events_v1_to_core_event(obj)

    def to_external(self, obj: Obj) -> Obj:
        return core_event_to_events_v1(obj)

    name_validator = staticmethod(validate_dns1123_subdomain)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateEventCreate for events.k8s.io/v1: the legacy rules, then strict ones."""
        errors = _legacy_errors(
            obj, regarding_field="involvedObject", reporter_field="reportingComponent",
            note_field="message",
        )  # fmt: skip
        if not obj.get("eventTime"):
            errors.append(required("eventTime"))
        if obj.get("type") not in EVENT_TYPES:
            errors.append(invalid("type", "", f"has invalid value: {obj.get('type') or ''}"))
        for path in ("firstTimestamp", "lastTimestamp", "count"):
            if obj.get(path):
                errors.append(invalid(path, "", "needs to be unset"))
        source = as_dict(obj.get("source"))
        if source.get("component") or source.get("host"):
            errors.append(invalid("source", "", "needs to be unset"))
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateEventUpdate for events.k8s.io/v1: only the series may change."""
        errors = self.validate(new)
        for path in _V1_IMMUTABLE_FIELDS:
            errors += validate_immutable(new.get(path), old.get(path), path)
        return errors

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields.update(_reference_fields("regarding", obj, stored_as="involvedObject"))
        fields["reason"] = obj.get("reason", "")
        fields["reportingController"] = obj.get("reportingComponent", "")
        fields["type"] = obj.get("type", "")
        return fields


def _reference_fields(field: str, event: Obj, stored_as: str = "") -> dict[str, str]:
    """The selectable fields of the object an event is about (`involvedObject.kind`, ...);
    `stored_as`: the name of the field in the stored (core/v1) event, when it differs."""
    reference = as_dict(event.get(stored_as or field))
    return {f"{field}.{name}": str(reference.get(name, "")) for name in _REFERENCE_FIELDS}


def _legacy_errors(
    event: Obj, *, regarding_field: str, reporter_field: str, note_field: str
) -> list[FieldError]:
    """legacyValidateEvent: the involved object's namespace, and the new-style fields.

    The two APIs name three of the fields differently: the object the event is about
    (involvedObject, regarding), who reported it (reportingComponent, reportingController)
    and what it says (message, note).
    """
    namespace = event["metadata"].get("namespace", "")
    reporting_controller = text(event.get(reporter_field))
    errors: list[FieldError] = []
    involved_namespace = as_dict(event.get(regarding_field)).get("namespace") or ""
    mismatch = invalid(
        "involvedObject.namespace", involved_namespace, "does not match event.namespace"
    )
    if not event.get("eventTime"):
        if involved_namespace:
            if namespace != involved_namespace:
                errors.append(mismatch)
        elif namespace not in ("", "default"):
            errors.append(mismatch)
        return errors
    if not involved_namespace and namespace not in ("default", "kube-system"):
        errors.append(mismatch)
    if not reporting_controller:
        errors.append(required(reporter_field))
    errors += format_errors(validate_qualified_name, reporting_controller, reporter_field)
    for field, limit in (
        ("reportingInstance", REPORTING_INSTANCE_LIMIT),
        ("action", ACTION_LIMIT),
        ("reason", REASON_LIMIT),
    ):
        value = text(event.get(field))
        if not value:
            errors.append(required(field))
        if len(value) > limit:
            errors.append(invalid(field, "", f"can have at most {limit} characters"))
    if len(text(event.get(note_field))) > NOTE_LIMIT:
        errors.append(invalid("message", "", f"can have at most {NOTE_LIMIT} characters"))
    return errors
