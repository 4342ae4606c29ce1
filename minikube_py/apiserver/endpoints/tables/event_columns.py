"""core/v1 and events.k8s.io/v1 events, both printed as `kubectl get events` shows them."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.apiserver.endpoints.tables.cells import name_of, translate_timestamp_since
from minikube_py.apiserver.endpoints.tables.table import NAME, Cells, column

EVENT_COLUMNS = (
    column("Last Seen", "string", "The time at which the most recent occurrence of this event "
                                  "was recorded."),
    column("Type", "string", "Type of this event (Normal, Warning), new types could be added "
                             "in the future"),
    column("Reason", "string", "This should be a short, machine understandable string that "
                               "gives the reason for the transition into the object's current "
                               "status."),
    column("Object", "string", "The object that this event is about."),
    column("Subobject", "string", "The field of the involved object this event is about.",
           priority=1),
    column("Source", "string", "The component reporting this event.", priority=1),
    column("Message", "string", "A human-readable description of the status of this "
                                "operation."),
    column("First Seen", "string", "The time at which the event was first recorded.",
           priority=1),
    column("Count", "string", "The number of times this event has occurred.", priority=1),
    {**NAME, "priority": 1},
)


def event_as_core(event: Obj) -> Obj:
    """An events.k8s.io/v1 Event in core/v1 field names (upstream prints the internal type)."""
    return {
        "metadata": event.get("metadata") or {},
        "involvedObject": event.get("regarding") or {},
        "reason": event.get("reason", ""),
        "message": event.get("note", ""),
        "source": event.get("deprecatedSource") or {},
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp"),
        "count": event.get("deprecatedCount", 0),
        "type": event.get("type", ""),
        "eventTime": event.get("eventTime"),
        "series": event.get("series"),
        "reportingController": event.get("reportingController", ""),
        "reportingInstance": event.get("reportingInstance", ""),
    }


def event_source(event: Obj) -> str:
    """formatEventSource: "component, host", falling back to the reporting fields."""
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingController", "")
    instance = source.get("host") or event.get("reportingInstance", "")
    return f"{component}, {instance}" if instance else component


def print_event(event: Obj, now: datetime) -> Cells:
    """printEvent: LAST SEEN, TYPE, REASON, OBJECT (kind/name), MESSAGE; wide adds the rest."""
    first_seen = translate_timestamp_since(
        event.get("firstTimestamp") or event.get("eventTime"), now
    )
    last_seen = first_seen
    if event.get("lastTimestamp"):
        last_seen = translate_timestamp_since(event["lastTimestamp"], now)
    count = event.get("count", 0)
    series = event.get("series")
    if series is not None:
        last_seen = translate_timestamp_since(series.get("lastObservedTime"), now)
        count = series.get("count", 0)
    elif count == 0:
        count = 1  # singleton events of the new API carry no count
    involved = event.get("involvedObject") or {}
    target = involved.get("kind", "").lower()
    if involved.get("name"):
        target = f"{target}/{involved['name']}"
    return [
        last_seen,
        event.get("type", ""),
        event.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        event_source(event),
        event.get("message", "").strip(),
        first_seen,
        count,
        name_of(event),
    ]


def print_events_v1_event(event: Obj, now: datetime) -> Cells:
    """events.k8s.io/v1 Events print exactly as core ones."""
    return print_event(event_as_core(event), now)
