"""The API server's part in tracing (docs/tracing.md): a span per request, and the trace
each object carries from its first write.

    write request (create, update, patch, delete) -> span "<verb> <resource>", kind SERVER,
             a child of the client's traceparent when it sent one; current while the
             request is served
    create   the object records the request's span in the annotation
             tracing.minikube-py.io/traceparent
    update   no traceparent, or one of the object's own trace: the span joins the
             object's trace and the annotation stays as it is (a controller's status
             update does not rewrite it, so it never makes a write of its own)
             a traceparent of another trace: the object takes that trace from now on
             (with tracing off too, an update that leaves the annotation out keeps it)
    admission  an attribute per phase on the span (admission.mutating, admission.validating):
             the plugins the write passed, in order
    written  the span notes the etcd revision the write made

Reads are not traced: an object's trace is the story of its changes, and informers and
`kubectl get -w` would bury it. Upstream's API server traces every request
(--tracing-config-file); it does not record traces on objects. Here they make one trace
of an object's whole life, across the components that act on it later.

    answers  the annotation stays with the stored object, but every object the server
             sends (get, list, watch events, tables, a write's answer, an admission
             review) goes without it, unless the request asked with the header
             X-Minikube-Py-Trace-Context: include, as the components' client does
             (wants_trace_context; tracing/context.py: without_trace_context). The field
             manager never records it as anyone's (Store: UNOWNED_FIELDS), so no
             managedFields entry names it either
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from dataclasses import dataclass

from aiohttp import web

from minikube_py.api import Obj
from minikube_py.tracing import context
from minikube_py.tracing.context import ANNOTATION, SpanContext
from minikube_py.tracing.tracer import SERVER, Span, Tracer


@dataclass
class RequestTrace:
    span: Span
    carried: SpanContext | None  # the traceparent the client sent


_request: ContextVar[RequestTrace | None] = ContextVar("minikube_py_request_trace",
                                                       default=None)


def wants_trace_context(request: web.BaseRequest) -> bool:
    """Whether the client asked to see the objects' trace context (the components do)."""
    return request.headers.get(context.OBJECT_HEADER, "").lower() == context.INCLUDE


def begin(tracer: Tracer, traceparent: str | None, verb: str, resource: str,
          subresource: str, namespace: str, name: str
          ) -> tuple[Token[RequestTrace | None], Token[SpanContext | None]] | None:
    """Start the request's span and make it current; None when tracing is off."""
    if not tracer.enabled:
        return None
    carried = context.parse(traceparent)
    attributes = {"k8s.verb": verb, "k8s.resource": resource}
    if subresource:
        attributes["k8s.subresource"] = subresource
    if namespace:
        attributes["k8s.namespace"] = namespace
    if name:
        attributes["k8s.name"] = name
    span = tracer.start(f"{verb} {resource}{'/' + subresource if subresource else ''}",
                        parent=carried, kind=SERVER, attributes=attributes)
    return _request.set(RequestTrace(span, carried)), context.activate(span.context)


def record_user(name: str) -> None:
    """Who asked, once authentication has said."""
    trace = _request.get()
    if trace is not None:
        trace.span.set("user.name", name)


def end(tokens: tuple[Token[RequestTrace | None], Token[SpanContext | None]],
        status: int) -> None:
    trace = _request.get()
    _request.reset(tokens[0])
    context.deactivate(tokens[1])
    if trace is not None:
        trace.span.set("http.status_code", status)
        if status >= 500:
            trace.span.fail(f"HTTP {status}")
        trace.span.end()


def record_admission(phase: str, plugins: list[str], name: str) -> None:
    """The admission plugins a write passed in one phase ("mutating", "validating").
    The span names the object from here on, so a create that admission refuses can be
    found by its object's name too."""
    trace = _recording()
    if trace is None:
        return
    if name:
        trace.span.attributes.setdefault("k8s.name", name)
    if plugins:  # an attribute, one string: events cost the export several times more
        trace.span.attributes[f"admission.{phase}"] = ",".join(plugins)


def _recording() -> RequestTrace | None:
    trace = _request.get()
    return trace if trace is not None and trace.span.recording else None


def _annotations(obj: Obj) -> dict[str, str]:
    metadata = obj.setdefault("metadata", {})
    if metadata.get("annotations") is None:
        metadata["annotations"] = {}
    return metadata["annotations"]


def record_create(obj: Obj) -> None:
    """A new object starts its life in the request's trace."""
    trace = _recording()
    if trace is None:
        return
    _annotations(obj)[ANNOTATION] = trace.span.context.traceparent()
    trace.span.set("k8s.name", obj["metadata"].get("name", ""))
    _record_uid(trace, obj)


def _record_uid(trace: RequestTrace, obj: Obj) -> None:
    """Which life of the object the span is part of (one name, many lives: mkctl trace)."""
    if uid := (obj.get("metadata") or {}).get("uid"):
        trace.span.set("k8s.uid", uid)


def record_update(new: Obj, current: Obj) -> None:
    """Keep the object's trace, joining it; or move the object to the request's own.
    Clients never see the annotation, so what they send lacks it: it is kept all the same."""
    trace = _recording()
    if trace is None:
        stored = ((current.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
        if stored is not None:
            _annotations(new).setdefault(ANNOTATION, stored)
        return
    _record_uid(trace, current)
    kept = context.of_object(current)
    if kept is not None and (trace.carried is None or trace.carried.trace_id == kept.trace_id):
        if trace.carried is None:
            _join(trace, kept)
        _annotations(new)[ANNOTATION] = current["metadata"]["annotations"][ANNOTATION]
        return
    _annotations(new)[ANNOTATION] = trace.span.context.traceparent()


def _join(trace: RequestTrace, kept: SpanContext) -> None:
    trace.span.continue_trace(kept)
    context.activate(trace.span.context)  # undone with the request's token in end()


def record_delete(current: Obj) -> None:
    """A delete without a trace of its own joins the object's."""
    trace = _recording()
    if trace is None:
        return
    _record_uid(trace, current)
    kept = context.of_object(current)
    if kept is not None and trace.carried is None:
        _join(trace, kept)


def record_revision(revision: int) -> None:
    trace = _recording()
    if trace is not None:
        trace.span.set("k8s.revision", revision)
