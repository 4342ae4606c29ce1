"""A trace as a timeline: one line per span, oldest first, indented under its parent.

    TIME           +MS   DURATION   COMPONENT                 SPAN
    10:12:01.123   0     4.1ms      kube-apiserver            create deployments default/web
    10:12:01.130   7     2.0ms      kube-controller-manager     deployment sync default/web
    10:12:01.131   8     3.2ms      kube-apiserver                create replicasets ...
    ...
    10:12:01.190   67    1.1ms      kube-scheduler                    schedule default/web-7d4b9-x2x
                                                                        Filter node-1: fits
                                                                        Score node-1: 180

The columns are the span's start (local time), its start after the trace's first span,
how long it took, the component that did it, and what it did, with the attributes a
reader needs (who asked, the etcd revision, the node chosen...) and, under it, its events
(the scheduler's Filter result and Score per node, with the plugin that rejected a
node and each Score plugin's weighted part of a node's score).
"""

from __future__ import annotations

import datetime
from typing import Any

from minikube_py.api import Obj

# the attributes shown after a span's name, in this order, under these words
SHOWN = (("user.name", "user"), ("http.status_code", "code"), ("k8s.revision", "revision"),
         ("node", "node"), ("queue.wait_ms", "queue-wait-ms"), ("attempts", "attempts"),
         ("result", "result"), ("message", "message"), ("changed_lines", "changed-lines"),
         ("endpoints", "endpoints"), ("volume", "volume"), ("persistentvolume", "pv"))
HEADER = ("TIME", "+MS", "DURATION", "COMPONENT", "SPAN")


def _duration(span: Obj) -> str:
    nanoseconds = max(0, span["end"] - span["start"])
    if nanoseconds < 1_000_000:
        return f"{nanoseconds / 1000:.0f}us"
    if nanoseconds < 1_000_000_000:
        return f"{nanoseconds / 1_000_000:.1f}ms"
    return f"{nanoseconds / 1_000_000_000:.2f}s"


def _clock(nanoseconds: int) -> str:
    moment = datetime.datetime.fromtimestamp(nanoseconds / 1e9)
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def _object(span: Obj) -> str:
    attributes = span["attributes"]
    name = attributes.get("k8s.name", "")
    namespace = attributes.get("k8s.namespace", "")
    return f"{namespace}/{name}" if namespace and name else name


def _value(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(item) for item in value) or "none"
    return str(value)


def describe(span: Obj) -> str:
    """The span's name, its object, and the attributes worth reading."""
    words = [span["name"]]
    if (obj := _object(span)) and obj not in span["name"]:
        words.append(obj)
    attributes = span["attributes"]
    details = [f"{label}={_value(attributes[key])}" for key, label in SHOWN
               if key in attributes and attributes[key] not in ("", None)]
    status = span.get("status") or {}
    if status.get("code") == 2:
        details.append(f"error={status.get('message', '')}")
    return "  ".join([" ".join(words), *details]) if details else " ".join(words)


def depths(spans: list[Obj]) -> dict[str, int]:
    """How deep each span sits under the trace's spans that have no parent in it."""
    parents = {span["spanId"]: span["parentSpanId"] for span in spans}
    found: dict[str, int] = {}
    for span_id in parents:
        depth, seen, current = 0, {span_id}, parents[span_id]
        while current in parents and current not in seen:
            depth += 1
            seen.add(current)
            current = parents[current]
        found[span_id] = depth
    return found


ADMISSION_PHASES = ("mutating", "validating")


def event_lines(span: Obj) -> list[str]:
    """One line per admission phase a request passed (`mutating admission: LimitRanger,
    ...`, from its attributes), then one per event: `Filter node-1: fits`, its first
    attribute's value, then the others by name (`Score node-1: 597  TaintToleration=300
    ...`, each Score plugin's part; `Filter node-2: Insufficient cpu
    plugin=NodeResourcesFit`)."""
    attributes = span.get("attributes") or {}
    lines = [f"{phase} admission: {attributes[f'admission.{phase}']}"
             for phase in ADMISSION_PHASES if attributes.get(f"admission.{phase}")]
    for event in span.get("events") or []:
        attributes = dict(event.get("attributes") or {})
        node = attributes.pop("node", "")
        values = list(attributes.items())
        value = _value(values[0][1]) if values else ""
        value += "".join(f"  {key}={_value(v)}" for key, v in values[1:])
        lines.append(f"{event['name']}{' ' + node if node else ''}"
                     f"{': ' + value if value else ''}")
    return lines


def span_rows(span: Obj, depth: int, first: int) -> list[tuple[str, ...]]:
    """One span's row, then a row per event, indented `depth` steps."""
    indent = "  " * depth
    return [(_clock(span["start"]), str((span["start"] - first) // 1_000_000),
             _duration(span), span["service"], indent + describe(span)),
            *(("", "", "", "", f"{indent}  {line}") for line in event_lines(span))]


def rows(spans: list[Obj], first: int | None = None) -> list[tuple[str, ...]]:
    """The timeline's rows (the columns of HEADER), oldest span first."""
    if not spans:
        return []
    ordered = sorted(spans, key=lambda span: span["start"])
    first = ordered[0]["start"] if first is None else first
    depth = depths(ordered)
    return [row for span in ordered for row in span_rows(span, depth[span["spanId"]], first)]


# the widths of a followed timeline, whose lines are printed before the next is known
FOLLOW_WIDTHS = (12, 6, 9, 24)


def table(lines: list[tuple[str, ...]], header: bool = True,
          widths: tuple[int, ...] | None = None) -> str:
    """Columns three spaces apart, as kubectl pads them, the last one free."""
    every = [HEADER, *lines] if header else lines
    if widths is None:
        widths = tuple(max(len(line[column]) for line in every)
                       for column in range(len(HEADER) - 1))
    return "".join("   ".join([*(cell.ljust(width) for cell, width in zip(
        line, widths, strict=False)), line[-1]]).rstrip() + "\n" for line in every)
