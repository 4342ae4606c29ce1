"""Spans: one timed step of one component's work, in a trace (OpenTelemetry's model).

    with tracer.span("scheduler Filter", **{"k8s.name": "web-1"}) as span:
        ...                      # spans started in here are its children (ContextVar)
        span.set("nodes.feasible", 2)
    -> ended: handed to the exporter (exporter.py), which sends it in a batch later

A tracer without an exporter (tracing off) hands out one shared span that records
nothing, so instrumented code costs almost nothing when nobody listens.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from minikube_py.tracing.context import (
    SpanContext,
    activate,
    current,
    deactivate,
    new_span_id,
    new_trace_id,
)

# OTLP's SpanKind and StatusCode numbers
INTERNAL, SERVER, CLIENT = 1, 2, 3
UNSET, OK, ERROR = 0, 1, 2


_current_span: ContextVar[Span | None] = ContextVar("minikube_py_span_object", default=None)


class SpanExporter(Protocol):
    def export(self, span: Span) -> None: ...


class Span:
    """One step: its name, its place in the trace, when it ran, and what it found."""

    __slots__ = ("context", "parent_id", "name", "kind", "start_ns", "end_ns", "attributes",
                 "events", "status", "message", "_exporter")

    def __init__(self, name: str, context: SpanContext, parent_id: str, kind: int,
                 attributes: dict[str, Any], exporter: SpanExporter | None) -> None:
        self.name = name
        self.context = context
        self.parent_id = parent_id
        self.kind = kind
        self.attributes = attributes
        self.events: list[tuple[int, str, dict[str, Any]]] = []
        self.status = UNSET
        self.message = ""
        self.start_ns = time.time_ns()
        self.end_ns = 0
        self._exporter = exporter

    @property
    def recording(self) -> bool:
        return self._exporter is not None

    def set(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def event(self, name: str, **attributes: Any) -> None:
        """Something that happened at one moment during the span."""
        if self._exporter is not None:
            self.events.append((time.time_ns(), name, attributes))

    def fail(self, message: str) -> None:
        self.status, self.message = ERROR, message

    def continue_trace(self, parent: SpanContext) -> None:
        """Join `parent`'s trace after the span started (the API server learns which
        object a request is about, and so its trace, only once it reads it)."""
        self.context = SpanContext(parent.trace_id, self.context.span_id, parent.sampled)
        self.parent_id = parent.span_id

    def end(self) -> None:
        if self._exporter is not None and not self.end_ns:
            self.end_ns = time.time_ns()
            self._exporter.export(self)


class Tracer:
    """Starts the spans of one component (`service`, e.g. "kube-scheduler")."""

    def __init__(self, service: str, exporter: SpanExporter | None = None, *,
                 sampling: float = 1.0) -> None:
        """`sampling`: the share of new traces recorded (upstream's
        samplingRatePerMillion / 10^6); a span continuing a trace follows its parent."""
        self.service = service
        self.exporter = exporter
        self.sampling = sampling

    @property
    def enabled(self) -> bool:
        return self.exporter is not None

    def start(self, name: str, *, parent: SpanContext | None = None, kind: int = INTERNAL,
              attributes: dict[str, Any] | None = None) -> Span:
        """A span, child of `parent` (or of the span running now, or a new trace's
        root). It is not made current: see `span` for that."""
        parent = parent or current()
        if parent is None:
            sampled = self.sampling >= 1.0 or random.random() < self.sampling
            context, parent_id = SpanContext(new_trace_id(), new_span_id(), sampled), ""
        else:
            context = SpanContext(parent.trace_id, new_span_id(), parent.sampled)
            parent_id = parent.span_id
        return Span(name, context, parent_id, kind, attributes or {},
                    self.exporter if context.sampled else None)

    @contextmanager
    def span(self, name: str, *, parent: SpanContext | None = None, kind: int = INTERNAL,
             **attributes: Any) -> Iterator[Span]:
        """Run a block as a span: current while it runs, failed if it raises, ended after."""
        if self.exporter is None:
            yield NOT_RECORDING
            return
        with _running(self.start(name, parent=parent, kind=kind, attributes=attributes)
                      ) as span:
            yield span


@contextmanager
def child_span(name: str, **attributes: Any) -> Iterator[Span]:
    """A span under the current one, sent where it goes (library code that has no tracer
    of its own: the kubelet's CRI calls); nothing when no span records."""
    parent = _current_span.get()
    if parent is None or not parent.recording:
        yield NOT_RECORDING
        return
    with _running(Span(name, SpanContext(parent.context.trace_id, new_span_id(),
                                         parent.context.sampled),
                       parent.context.span_id, CLIENT, attributes, parent._exporter)
                  ) as span:
        yield span


@contextmanager
def _running(span: Span) -> Iterator[Span]:
    """The span current while the block runs, failed if it raises, ended after."""
    token, span_token = activate(span.context), _current_span.set(span)
    try:
        yield span
    except BaseException as error:
        span.fail(f"{type(error).__name__}: {error}")
        raise
    finally:
        _current_span.reset(span_token)
        deactivate(token)
        span.end()


def current_span() -> Span:
    """The span `Tracer.span` runs now in this task, to add events and attributes to
    (one that records nothing outside any)."""
    return _current_span.get() or NOT_RECORDING


NOT_RECORDING = Span("", SpanContext("0" * 32, "0" * 16, False), "", INTERNAL, {}, None)
DISABLED = Tracer("disabled")
