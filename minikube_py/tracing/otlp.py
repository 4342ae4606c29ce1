"""Spans as OTLP/HTTP JSON: the ExportTraceServiceRequest every OpenTelemetry collector,
Jaeger and Tempo accept at `POST /v1/traces` (Content-Type: application/json).

    {"resourceSpans": [{"resource": {"attributes": [service.name]},
                        "scopeSpans": [{"scope": {"name": "minikube-py"},
                                        "spans": [{traceId, spanId, parentSpanId, name,
                                                   kind, startTimeUnixNano, ...}]}]}]}

Trace and span ids are hex strings and 64-bit integers are decimal strings, as OTLP's
JSON mapping says. `decode` reads such a request back as the receiver keeps its spans,
`flatten` into full records: {traceId, spanId, parentSpanId, name, service, start, end,
attributes, events, status}.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.tracing.tracer import Span

SCOPE = "minikube-py"


def _value(value: Any) -> Obj:
    if type(value) is str:  # most values: the common case first
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_value(item) for item in value]}}
    return {"stringValue": str(value)}


def _attributes(attributes: dict[str, Any]) -> list[Obj]:
    return [{"key": key, "value": _value(value)} for key, value in attributes.items()]


def _span(span: Span) -> Obj:
    encoded: Obj = {
        "traceId": span.context.trace_id, "spanId": span.context.span_id,
        "name": span.name, "kind": span.kind,
        "startTimeUnixNano": str(span.start_ns), "endTimeUnixNano": str(span.end_ns),
        "attributes": _attributes(span.attributes),
        "status": {"code": span.status, **({"message": span.message} if span.message else {})},
    }
    if span.parent_id:
        encoded["parentSpanId"] = span.parent_id
    if span.events:
        encoded["events"] = [{"timeUnixNano": str(at), "name": name,
                              "attributes": _attributes(attributes)}
                             for at, name, attributes in span.events]
    return encoded


def encode(service: str, spans: list[Span]) -> Obj:
    """One ExportTraceServiceRequest for the spans of one service."""
    return {"resourceSpans": [{
        "resource": {"attributes": _attributes({"service.name": service})},
        "scopeSpans": [{"scope": {"name": SCOPE}, "spans": [_span(s) for s in spans]}]}]}


def _read_value(value: Obj) -> Any:
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [_read_value(item) for item in value["arrayValue"].get("values") or []]
    return None


def _read_attributes(attributes: list[Obj] | None) -> dict[str, Any]:
    return {item["key"]: _read_value(item.get("value") or {}) for item in attributes or []}


OBJECT_KEYS = ("k8s.resource", "k8s.namespace", "k8s.name")


def _object_of(attributes: list[Obj]) -> str | None:
    """"resource/namespace/name" of the object a span names, when it names one."""
    found = {}
    for item in attributes:
        if item.get("key") in OBJECT_KEYS:
            found[item["key"]] = (item.get("value") or {}).get("stringValue", "")
    if not found.get("k8s.resource") or not found.get("k8s.name"):
        return None
    return f"{found['k8s.resource']}/{found.get('k8s.namespace', '')}/{found['k8s.name']}"


def decode(request: Obj) -> list[Obj]:
    """The spans of an ExportTraceServiceRequest as the receiver keeps them:
    {traceId, spanId, service, start, object, span}, the span as it came (`flatten`
    reads the rest when someone asks). ValueError when it is not such a request."""
    if not isinstance(request, dict) or not isinstance(request.get("resourceSpans") or [], list):
        raise ValueError("not an ExportTraceServiceRequest: resourceSpans must be a list")
    records = []
    for resource_spans in request.get("resourceSpans") or []:
        resource = _read_attributes((resource_spans.get("resource") or {}).get("attributes"))
        service = str(resource.get("service.name", "unknown"))
        for scope_spans in resource_spans.get("scopeSpans") or []:
            for span in scope_spans.get("spans") or []:
                try:
                    trace_id, span_id = span["traceId"], span["spanId"]
                    if not isinstance(trace_id, str) or not isinstance(span_id, str):
                        raise ValueError("traceId and spanId must be hex strings")
                    records.append({
                        "traceId": trace_id.lower(), "spanId": span_id.lower(),
                        "service": service, "start": int(span.get("startTimeUnixNano", 0)),
                        "object": _object_of(span.get("attributes") or []), "span": span})
                except (KeyError, TypeError, ValueError) as error:
                    raise ValueError(f"a span without a valid {error}") from error
    return records


def flatten(record: Obj) -> Obj:
    """A kept span in full: {traceId, spanId, parentSpanId, name, service, kind, start,
    end, attributes, events, status}, attributes as a plain dict."""
    span = record["span"]
    return {
        "traceId": record["traceId"], "spanId": record["spanId"],
        "parentSpanId": str(span.get("parentSpanId") or "").lower(),
        "name": str(span.get("name", "")), "service": record["service"],
        "kind": int(span.get("kind", 0)), "start": record["start"],
        "end": int(span.get("endTimeUnixNano", 0)),
        "attributes": _read_attributes(span.get("attributes")),
        "events": [{"time": int(e.get("timeUnixNano", 0)), "name": str(e.get("name", "")),
                    "attributes": _read_attributes(e.get("attributes"))}
                   for e in span.get("events") or []],
        "status": span.get("status") or {},
    }
