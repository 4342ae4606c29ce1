"""The trace context: which trace a piece of work belongs to, and which span caused it
(W3C Trace Context, https://www.w3.org/TR/trace-context/).

    on a request     traceparent: 00-<trace id, 32 hex>-<parent span id, 16 hex>-<flags>
    on an object     metadata.annotations["tracing.minikube-py.io/traceparent"], the same
                     form: the span of the request that first wrote it, so that whoever
                     acts on the object later continues the object's trace. The API server
                     keeps it with the stored object and shows it only to a component that
                     asks with the request header X-Minikube-Py-Trace-Context: include
                     (upstream writes no such annotation, so clients never see one)
    in a task        a ContextVar: the span running now, inherited by the tasks it starts
"""

from __future__ import annotations

import os
import re
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

import orjson

ANNOTATION = "tracing.minikube-py.io/traceparent"
HEADER = "traceparent"
OBJECT_HEADER = "X-Minikube-Py-Trace-Context"
"""The request header with which a component asks for the objects' trace context."""
INCLUDE = "include"
_MARKER = b'"' + ANNOTATION.encode() + b'":'  # only a JSON key has unescaped quotes
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_INVALID_TRACE = "0" * 32
_INVALID_SPAN = "0" * 16


@dataclass(frozen=True, slots=True)
class SpanContext:
    trace_id: str
    span_id: str
    sampled: bool = True

    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"


def new_trace_id() -> str:
    return os.urandom(16).hex()


def new_span_id() -> str:
    return os.urandom(8).hex()


def parse(header: str | None) -> SpanContext | None:
    """A traceparent header's context, or None when there is none or it is malformed
    (then the receiver starts a new trace, as the specification says)."""
    if not header:
        return None
    found = _TRACEPARENT.match(header.strip().lower())
    if found is None:
        return None
    version, trace_id, span_id, flags = found.groups()
    if version == "ff" or trace_id == _INVALID_TRACE or span_id == _INVALID_SPAN:
        return None
    return SpanContext(trace_id, span_id, bool(int(flags, 16) & 1))


def of_object(obj: dict[str, Any]) -> SpanContext | None:
    """The trace an object carries (the annotation its first write left)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return parse(annotations.get(ANNOTATION))


def without_trace_context(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as a client sees it: without the annotation (and without annotations
    at all when that was the only one). The object itself when it carries none; else a
    copy that shares everything but metadata."""
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict) or ANNOTATION not in annotations:
        return obj
    shown = dict(metadata)
    rest = {key: value for key, value in annotations.items() if key != ANNOTATION}
    if rest:
        shown["annotations"] = rest
    else:
        del shown["annotations"]
    return {**obj, "metadata": shown}


def may_carry_trace_context(data: bytes) -> bool:
    """Whether JSON bytes (one object, or many) may hold an object's trace context: no
    object in them does when this says no."""
    return _MARKER in data


def json_without_trace_context(data: bytes) -> bytes:
    """without_trace_context on an object's JSON: the same bytes when it carries none."""
    if not may_carry_trace_context(data):
        return data
    obj = orjson.loads(data)
    shown = without_trace_context(obj)
    return data if shown is obj else orjson.dumps(shown)


_current: ContextVar[SpanContext | None] = ContextVar("minikube_py_span", default=None)


def current() -> SpanContext | None:
    """The context of the span running in this task (None outside any span)."""
    return _current.get()


def activate(span: SpanContext) -> Token[SpanContext | None]:
    """Make `span` the current one in this task, until `deactivate`."""
    return _current.set(span)


def deactivate(token: Token[SpanContext | None]) -> None:
    _current.reset(token)
