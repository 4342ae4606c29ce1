"""Spans as OTLP/HTTP JSON: the ExportTraceServiceRequest every OpenTelemetry collector,
Jaeger and Tempo accept at `POST /v1/traces` (Content-Type: application/json).

    {"resourceSpans": [{"resource": {"attributes": [service.name]},
                        "scopeSpans": [{"scope": {"name": "minikube-py"},
                                        "spans": [{traceId, spanId, parentSpanId, name,
                                                   kind, startTimeUnixNano, ...}]}]}]}

Trace and span ids are hex strings and 64-bit integers are decimal strings, as OTLP's
JSON mapping says. `decode` reads such a request back into flat records, the form the
receiver keeps: {traceId, spanId, parentSpanId, name, service, start, end, attributes,
events, status}.
"""

from __future__ import annotations

from typing import Any

from minikube_py.tracing.tracer import Span

Obj = dict[str, Any]
SCOPE = "minikube-py"


def _value(value: Any) -> Obj:
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


def decode(request: Obj) -> list[Obj]:
    """The spans of an ExportTraceServiceRequest as flat records; ValueError when it is
    not one."""
    if not isinstance(request, dict) or not isinstance(request.get("resourceSpans", []), list):
        raise ValueError("not an ExportTraceServiceRequest: resourceSpans must be a list")
    records = []
    for resource_spans in request.get("resourceSpans") or []:
        resource = _read_attributes((resource_spans.get("resource") or {}).get("attributes"))
        service = str(resource.get("service.name", "unknown"))
        for scope_spans in resource_spans.get("scopeSpans") or []:
            for span in scope_spans.get("spans") or []:
                try:
                    records.append({
                        "traceId": str(span["traceId"]).lower(),
                        "spanId": str(span["spanId"]).lower(),
                        "parentSpanId": str(span.get("parentSpanId") or "").lower(),
                        "name": str(span.get("name", "")), "service": service,
                        "kind": int(span.get("kind", 0)),
                        "start": int(span.get("startTimeUnixNano", 0)),
                        "end": int(span.get("endTimeUnixNano", 0)),
                        "attributes": _read_attributes(span.get("attributes")),
                        "events": [{"time": int(e.get("timeUnixNano", 0)),
                                    "name": str(e.get("name", "")),
                                    "attributes": _read_attributes(e.get("attributes"))}
                                   for e in span.get("events") or []],
                        "status": span.get("status") or {},
                    })
                except (KeyError, TypeError, ValueError) as error:
                    raise ValueError(f"a span without a valid {error}") from error
    return records
