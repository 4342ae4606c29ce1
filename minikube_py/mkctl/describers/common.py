"""The pieces every describer shares (describe.go): labels, annotations, taints and
tolerations printed one per line, ages, and the Events table."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.writer import LEVEL_0, LEVEL_1, PrefixWriter

MAX_ANNOTATION_LEN = 140
SKIP_ANNOTATIONS = {"kubectl.kubernetes.io/last-applied-configuration"}


def go_bool(value: object) -> str:
    """%v of a Go bool."""
    return "true" if value else "false"


def print_bool(value: object) -> str:
    """printBool: "True" or "False"."""
    return "True" if value else "False"


def string_or_none(text: str) -> str:
    return text or "<none>"


def _parse_time(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def since(timestamp: str | None, now: datetime | None = None) -> str:
    """translateTimestampSince: the age of a timestamp ("10s", "2m3s"), "<unknown>" for
    none."""
    from minikube_py.api.duration import human_duration

    if not timestamp:
        return "<unknown>"
    return human_duration((now or datetime.now(UTC)) - _parse_time(timestamp))


def print_labels_multiline(w: PrefixWriter, title: str, labels: Mapping[str, str] | None,
                           initial_indent: str = "", inner_indent: str = "\t") -> None:
    """printLabelsMultilineWithIndent: `Title:<tab>k=v`, one label per line, sorted."""
    w.write(LEVEL_0, f"{initial_indent}{title}:{inner_indent}")
    if not labels:
        w.write_line("<none>")
        return
    for index, key in enumerate(sorted(labels)):
        if index:
            w.write(LEVEL_0, initial_indent + inner_indent)
        w.write(LEVEL_0, f"{key}={labels[key]}\n")


def _shorten(text: str, length: int) -> str:
    return text[:length] + "..." if len(text) > length else text


def print_annotations_multiline(w: PrefixWriter, title: str,
                                annotations: Mapping[str, str] | None) -> None:
    """printAnnotationsMultiline: sorted, last-applied-configuration left out; a value
    too long for one line, or of several lines, starts on the next line, each line cut
    at 138 characters."""
    w.write(LEVEL_0, f"{title}:\t")
    keys = sorted(key for key in annotations or {} if key not in SKIP_ANNOTATIONS)
    if not keys:
        w.write_line("<none>")
        return
    for index, key in enumerate(keys):
        if index:
            w.write(LEVEL_0, "\t")
        value = annotations[key].removesuffix("\n")  # type: ignore[index]
        if len(value) + len(key) + 2 > MAX_ANNOTATION_LEN or "\n" in value:
            w.write(LEVEL_0, f"{key}:\n")
            for line in value.split("\n"):
                w.write(LEVEL_0, f"\t  {_shorten(line, MAX_ANNOTATION_LEN - 2)}\n")
        else:
            w.write(LEVEL_0, f"{key}: {value}\n")


def taint_string(taint: Obj) -> str:
    """Taint.ToString: key=value:effect, key:effect, or key when it has no effect."""
    text = taint.get("key", "")
    if taint.get("value"):
        text += "=" + taint["value"]
    if taint.get("effect"):
        text += ":" + taint["effect"]
    return text


def print_taints_multiline(w: PrefixWriter, title: str, taints: list[Obj] | None) -> None:
    """printNodeTaintsMultiline: sorted by effect, then key."""
    w.write(LEVEL_0, f"{title}:\t")
    if not taints:
        w.write_line("<none>")
        return
    ordered = sorted(taints, key=lambda t: t.get("effect", "") + "," + t.get("key", ""))
    for index, taint in enumerate(ordered):
        if index:
            w.write(LEVEL_0, "\t")
        w.write(LEVEL_0, taint_string(taint) + "\n")


def toleration_string(toleration: Obj) -> str:
    """One toleration as describe writes it: key=value:effect, "op=Exists", "for 300s"."""
    text = toleration.get("key", "")
    if toleration.get("value"):
        text += "=" + toleration["value"]
    if toleration.get("effect"):
        text += ":" + toleration["effect"]
    if toleration.get("operator") == "Exists" and not toleration.get("value"):
        text += " op=Exists" if toleration.get("key") or toleration.get("effect") else "op=Exists"
    if toleration.get("tolerationSeconds") is not None:
        text += f" for {toleration['tolerationSeconds']}s"
    return text


def print_tolerations_multiline(w: PrefixWriter, title: str, tolerations: list[Obj] | None
                                ) -> None:
    """printPodTolerationsMultiline: sorted by key."""
    w.write(LEVEL_0, f"{title}:\t")
    if not tolerations:
        w.write_line("<none>")
        return
    for index, toleration in enumerate(sorted(tolerations, key=lambda t: t.get("key", ""))):
        if index:
            w.write(LEVEL_0, "\t")
        w.write(LEVEL_0, toleration_string(toleration) + "\n")


def event_interval(event: Obj, now: datetime | None = None) -> str:
    """The Age cell of an event: "10s", or "2m3s (x4 over 5m)" for a repeated one."""
    first = since(event.get("eventTime"), now)
    if not event.get("eventTime"):
        first = since(event.get("firstTimestamp"), now)
    series = event.get("series")
    if series is not None:
        return (f"{since(series.get('lastObservedTime'), now)} "
                f"(x{series.get('count', 0)} over {first})")
    if (event.get("count") or 0) > 1:
        return f"{since(event.get('lastTimestamp'), now)} (x{event['count']} over {first})"
    return first


def describe_events(events: list[Obj] | None, w: PrefixWriter) -> None:
    """DescribeEvents: "Events: <none>", or the table, oldest lastTimestamp first."""
    if events is None:
        return
    if not events:
        w.write(LEVEL_0, "Events:\t<none>\n")
        return
    w.flush()
    ordered = sorted(events, key=lambda e: _parse_time(e["lastTimestamp"]).timestamp()
                     if e.get("lastTimestamp") else float("-inf"))
    w.write(LEVEL_0, "Events:\n  Type\tReason\tAge\tFrom\tMessage\n")
    w.write(LEVEL_1, "----\t------\t----\t----\t-------\n")
    for event in ordered:
        source = (event.get("source") or {}).get("component") or event.get(
            "reportingComponent", "")
        message = (event.get("message") or "").strip()
        field_path = (event.get("involvedObject") or {}).get("fieldPath")
        if field_path:
            message = f"{field_path}: {message}"
        w.write(LEVEL_1, f"{event.get('type', '')}\t{event.get('reason', '')}\t"
                         f"{event_interval(event)}\t{source}\t{message}\n")


def print_controller(obj: Obj) -> str:
    """printController: "ReplicaSet/web-5d4f" for the object's controller, or ""."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{ref.get('kind', '')}/{ref.get('name', '')}"
    return ""


def search_events(lookups: Lookups, namespace: str, name: str, kind: str, uid: str,
                  settings: Settings) -> list[Obj] | None:
    """searchEvents: the events whose involvedObject is this object, asked with a field
    selector on involvedObject (kind left out when empty, as for pods); None when
    events are not shown or could not be read."""
    from minikube_py.api.selectors import escape_field_value
    from minikube_py.mkctl.errors import MkctlError

    if not settings.show_events:
        return None
    fields = {"involvedObject.name": name, "involvedObject.namespace": namespace}
    if kind:
        fields["involvedObject.kind"] = kind
    if uid:
        fields["involvedObject.uid"] = uid
    selector = ",".join(f"{key}={escape_field_value(value)}"
                        for key, value in sorted(fields.items()))
    path = f"/api/v1/namespaces/{namespace}/events" if namespace else "/api/v1/events"
    params = {"fieldSelector": selector}
    if settings.chunk_size > 0:
        params["limit"] = str(settings.chunk_size)
    try:
        return lookups.list(path, params)
    except MkctlError:
        return []
