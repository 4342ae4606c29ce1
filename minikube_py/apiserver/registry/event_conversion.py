"""Conversion between the two API shapes of an Event.

core/v1 Events and events.k8s.io/v1 Events are the same objects in storage (both under
/registry/events/), as upstream. They are stored in the core/v1 shape; a client of
events.k8s.io/v1 reads and writes the newer field names.
"""

from __future__ import annotations

from minikube_py.api import Obj

# events.k8s.io/v1 field -> core/v1 field, for fields that only changed name.
_RENAMED = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_SAME = ("metadata", "eventTime", "series", "reportingInstance", "action", "reason", "related",
         "type")


def core_event_to_events_v1(event: Obj) -> Obj:
    out: Obj = {"kind": "Event", "apiVersion": "events.k8s.io/v1"}
    for name in _SAME:
        if name in event:
            out[name] = event[name]
    for new, old in _RENAMED.items():
        if old in event:
            out[new] = event[old]
    return out


def events_v1_to_core_event(event: Obj) -> Obj:
    out: Obj = {"kind": "Event", "apiVersion": "v1"}
    for name in _SAME:
        if name in event:
            out[name] = event[name]
    for new, old in _RENAMED.items():
        if new in event:
            out[old] = event[new]
    return out
