"""The filters a request passes on its way to its endpoint, as upstream's handler chain
(DefaultBuildHandlerChain in k8s.io/apiserver/pkg/server/config.go). Each filter takes
the next handler and returns a handler that does one step, then calls it.

    with_audit_id                the request's id; Audit-Id on the answer
                                 (endpoints/filters/with_auditid.go)
    with_request_info            the path read as verb, group, resource, namespace, name
                                 (filters/requestinfo.go; requestinfo.py)
    with_tracing                 a span per write request (filters/traces.go; tracing.py)
    with_http_logging            a JSON line per request (server/httplog)
    with_request_metrics         apiserver_request_total and _duration_seconds
                                 (endpoints/metrics: InstrumentHandlerFunc)
    with_status_errors           an error raised further in becomes its Status response,
                                 a crash a 500 (server/filters/wrap.go's
                                 WithPanicRecovery, handlers/responsewriters)
    with_authentication          who asks: 401 (filters/authentication.go)
    with_impersonation           whom they act as: 403 unless allowed
                                 (filters/impersonation.go)
    with_audit                   RequestReceived ... ResponseComplete (filters/audit.go;
                                 auth/audit.py)
    with_authorization           may they: 403 (filters/authorization.go)
    with_priority_and_fairness   seats per priority level, fair queuing, 429 past the
                                 queues (server/filters/priority-and-fairness.go;
                                 flowcontrol/); or, with --enable-priority-and-fairness
                                 =false:
    with_max_inflight_limit      429 past --max-requests-inflight, long-running requests
                                 counted apart (server/filters/maxinflight.go)
    with_audit_response_started  ResponseStarted, for a long-running request

Two places differ from upstream's order. Upstream audits before it impersonates (its
event names the authenticated user and, later, the impersonated one); here the event names
the user the request acts as. Upstream takes an in-flight seat before it authorizes; here a
request refused by authorization never holds one. And where upstream's filters and
handlers each write their error response, ours raise an APIError, which
`with_status_errors` turns into the Status: once inside audit, so that ResponseComplete
records the answer, and once outside authentication, for its 401s and 403s.

The API server lists them in this order in one place (server.py, `handler_chain`), and
`build_handler_chain` nests them once, at start-up: a request runs through closures, not
over a list. A filter without work to do in this server (no audit policy, tracing or
request log configured) returns the next handler itself and costs nothing.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import orjson
from aiohttp import web

from minikube_py.api import errors
from minikube_py.api.meta import new_uid
from minikube_py.apiserver.auth.admission import (
    admission_audit_annotations,
    admission_warnings,
    request_user,
)
from minikube_py.apiserver.auth.audit import AuditEvent, AuditLog
from minikube_py.apiserver.auth.authentication import Authenticator, UserInfo
from minikube_py.apiserver.auth.authorization import Attributes, Authorizer, forbidden
from minikube_py.apiserver.auth.impersonation import impersonated
from minikube_py.apiserver.endpoints import negotiation, tracing
from minikube_py.apiserver.endpoints.metrics import APIServerMetrics, metric_verb
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo, parse_request_info
from minikube_py.apiserver.endpoints.responses import (
    AUDIT_ID,
    RESPONSE_HEADERS,
    WATCH_INITIALIZED,
)
from minikube_py.apiserver.flowcontrol.apf_controller import OBJECTS_PER_SEAT, APFController
from minikube_py.apiserver.flowcontrol.dropped_requests import DroppedRequestsTracker
from minikube_py.apiserver.flowcontrol.queueset import Rejected
from minikube_py.apiserver.flowcontrol.rule import RequestDigest
from minikube_py.tracing import context as tracing_context
from minikube_py.tracing.tracer import Tracer

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
Filter = Callable[[Handler], Handler]

log = logging.getLogger("minikube_py.apiserver")

# What the filters leave on the request for the ones after them and for the endpoint
# (besides AUDIT_ID, the request's id).
REQUEST_INFO = web.RequestKey("request_info", RequestInfo)
USER = web.RequestKey("user", UserInfo)
AUDIT_EVENT = web.RequestKey("audit_event", AuditEvent)
DECISION = web.RequestKey("decision", str)  # "forbid" once authorization said no

MAX_BODY_BYTES = 3 * 1024 * 1024
MUTATING_VERBS = {"create", "update", "patch", "delete", "deletecollection"}
LONG_RUNNING_SUBRESOURCES = ("log", "exec", "attach", "portforward", "proxy")
UNLOGGED_PATHS = ("/healthz", "/livez", "/readyz", "/metrics")
PRIORITY_LEVEL_UID_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"
FLOW_SCHEMA_UID_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
# How long a request may wait in its queue: upstream's default request wait limit, a
# quarter of the 60 s request timeout.
QUEUE_WAIT_LIMIT = 15.0
WATCHES_PER_SEAT = 10  # the mutating work estimator's watchesPerSeat
EVENT_ADDITIONAL_DURATION = 0.005  # eventAdditionalDuration: 5 ms of work per event seat


def build_handler_chain(endpoint: Handler, chain: Sequence[Filter]) -> Handler:
    """The filters nested around the endpoint, the first of `chain` outermost."""
    handler = endpoint
    for wrap in reversed(chain):
        handler = wrap(handler)
    return handler


def is_long_running(info: RequestInfo) -> bool:
    """Watches and streams (logs, exec, attach, port-forward, proxy): upstream's
    LongRunningFunc. They are not held to the in-flight limit, nor traced."""
    return info.verb == "watch" or info.subresource in LONG_RUNNING_SUBRESOURCES


def status_response(err: errors.APIError, extra_headers: dict[str, str] | None = None
                    ) -> web.Response:
    """The error as a Status body, ending in the newline Go's json.Encoder writes."""
    headers = dict(extra_headers or {})
    if err.retry_after:
        headers["Retry-After"] = str(err.retry_after)
    return web.Response(body=orjson.dumps(err.status()) + b"\n", status=err.code,
                        content_type="application/json", headers=headers or None)


def with_audit_id(handler: Handler) -> Handler:
    """WithAuditID: a new id for the request, sent back as Audit-Id (a streamed
    response, a watch, sends it itself before its first byte)."""

    async def identified(request: web.BaseRequest) -> web.StreamResponse:
        request_id = request[AUDIT_ID] = new_uid()
        response = await handler(request)
        if not response.prepared:
            response.headers["Audit-Id"] = request_id
        return response

    return identified


def with_request_info(handler: Handler) -> Handler:
    """WithRequestInfo: the path and query read as a RequestInfo."""

    async def resolved(request: web.BaseRequest) -> web.StreamResponse:
        request[REQUEST_INFO] = parse_request_info(
            request.method, request.path, request.query.get("watch"),
            request.query.get("fieldSelector"))
        return await handler(request)

    return resolved


def with_tracing(handler: Handler, tracer: Tracer) -> Handler:
    """WithTracing: a span for each write request that is not long-running, a child of
    the client's traceparent, naming who asked (endpoints/tracing.py)."""
    if not tracer.enabled:
        return handler

    async def traced(request: web.BaseRequest) -> web.StreamResponse:
        info = request[REQUEST_INFO]
        if (not info.is_resource_request or info.verb not in MUTATING_VERBS
                or is_long_running(info)):
            return await handler(request)
        tokens = tracing.begin(tracer, request.headers.get(tracing_context.HEADER),
                               info.verb, info.resource, info.subresource, info.namespace,
                               info.name)
        response = await handler(request)
        if tokens is not None:
            user = request.get(USER)
            if user is not None:
                tracing.record_user(user.name)
            tracing.end(tokens, response.status)
        return response

    return traced


def with_http_logging(handler: Handler, enabled: bool) -> Handler:
    """WithHTTPLogging: one JSON line per request (health checks and scrapes left out)."""
    if not enabled:
        return handler

    async def logged(request: web.BaseRequest) -> web.StreamResponse:
        received = time.perf_counter()
        response = await handler(request)
        if not request.path.startswith(UNLOGGED_PATHS):
            info = request[REQUEST_INFO]
            log.info(orjson.dumps({
                "msg": "request", "requestID": request[AUDIT_ID],
                "verb": info.verb.upper() if info.is_resource_request else request.method,
                "path": request.path_qs, "code": response.status,
                "latencyMs": round((time.perf_counter() - received) * 1000, 2),
                "userAgent": request.headers.get("User-Agent", ""),
            }).decode())
        return response

    return logged


def with_request_metrics(handler: Handler, metrics: APIServerMetrics) -> Handler:
    """MonitorRequest: count the request by verb, resource and code, and time it."""

    async def measured(request: web.BaseRequest) -> web.StreamResponse:
        received = time.perf_counter()
        response = await handler(request)
        info = request[REQUEST_INFO]
        metrics.observe_request(
            (metric_verb(request, info), info.group, info.resource, info.subresource),
            response.status, time.perf_counter() - received)
        return response

    return measured


def with_status_errors(handler: Handler) -> Handler:
    """An APIError raised further in becomes its Status response; any other error is a
    bug, logged and answered as upstream's panic recovery does, with a 500 Status."""

    async def answered(request: web.BaseRequest) -> web.StreamResponse:
        try:
            return await handler(request)
        except errors.APIError as err:
            return status_response(err, request.get(RESPONSE_HEADERS))
        except web.HTTPRequestEntityTooLarge:
            return status_response(errors.request_entity_too_large(MAX_BODY_BYTES))
        except web.HTTPException as err:
            return status_response(errors.APIError(err.status, err.reason,
                                                   err.text or err.reason))
        except ConnectionResetError:
            raise
        except Exception as err:
            log.error(orjson.dumps({"msg": "internal error", "requestID": request[AUDIT_ID],
                                    "error": repr(err),
                                    "traceback": traceback.format_exc()}).decode())
            return status_response(errors.internal_error(repr(err)))

    return answered


def with_authentication(handler: Handler, authenticator: Authenticator) -> Handler:
    """WithAuthentication: the user the credentials name (401 when they name none)."""

    async def authenticated(request: web.BaseRequest) -> web.StreamResponse:
        user = request[USER] = authenticator.authenticate(request)
        request_user.set(user)  # what admission sees as the request's user
        admission_warnings.set([])  # a fresh list: one connection serves many requests
        admission_audit_annotations.set({})
        return await handler(request)

    return authenticated


def with_impersonation(handler: Handler, authorizer: Authorizer) -> Handler:
    """WithImpersonation: the user the Impersonate-* headers name, if the
    authenticated user may act as them (403 otherwise)."""

    async def impersonating(request: web.BaseRequest) -> web.StreamResponse:
        user = request[USER]
        acting = impersonated(request, user, authorizer)
        if acting is not user:
            request[USER] = acting
            request_user.set(acting)
        return await handler(request)

    return impersonating


def with_audit(handler: Handler, audit: AuditLog | None) -> Handler:
    """WithAudit: RequestReceived as the request comes in, ResponseComplete with its
    answer, at the level the policy gives it (auth/audit.py)."""
    if audit is None:
        return handler

    async def audited(request: web.BaseRequest) -> web.StreamResponse:
        event = audit.begin(request[AUDIT_ID], request[USER], request[REQUEST_INFO],
                            request.method, request.path_qs, request.path,
                            request.remote or "", request.headers.get("User-Agent", ""))
        if event is None:
            return await handler(request)
        request[AUDIT_EVENT] = event
        response = await handler(request)
        await _audit_complete(audit, event, request, response)
        return response

    return audited


async def _audit_complete(audit: AuditLog, event: AuditEvent, request: web.BaseRequest,
                          response: web.StreamResponse) -> None:
    """ResponseComplete, with the request's and the response's objects when the level
    asks for them (JSON bodies only)."""
    request_object = response_object = None
    if event.level in ("Request", "RequestResponse") and request.body_exists:
        request_object = _object_or_none(request.headers.get("Content-Type", ""),
                                         await request.read())
    if event.level == "RequestResponse" and isinstance(response, web.Response):
        body = response.body
        if isinstance(body, bytes | bytearray):
            response_object = _object_or_none(response.content_type, bytes(body))
    audit.complete(event, response.status, request_object, response_object,
                   request.get(DECISION, "allow"), admission_audit_annotations.get() or {})


def _object_or_none(content_type: str, body: bytes) -> Any:
    """A body as the object it carries (JSON, YAML or protobuf; a patch as its JSON), for
    the audit log."""
    if not body:
        return None
    try:
        return negotiation.decode_body(content_type, body)
    except (errors.APIError, ValueError):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            return None


def with_authorization(handler: Handler, authorizer: Authorizer) -> Handler:
    """WithAuthorization: may the user do this verb on this resource (403 if not)."""

    async def authorized(request: web.BaseRequest) -> web.StreamResponse:
        attributes = Attributes.of_request(request[USER], request[REQUEST_INFO],
                                           request.method, request.path)
        verdict = authorizer.authorize(attributes)
        if not verdict.allowed:
            request[DECISION] = "forbid"
            raise forbidden(attributes, verdict.reason)
        return await handler(request)

    return authorized


def with_max_inflight_limit(handler: Handler, max_requests: int, max_mutating: int,
                            metrics: APIServerMetrics) -> Handler:
    """WithMaxInFlightLimit: at most `max_requests` reads and `max_mutating` writes served
    at once (0: no limit); one more is refused with 429 and Retry-After. Long-running
    requests are not limited, but counted in apiserver_longrunning_requests."""
    limits = {"readOnly": max_requests, "mutating": max_mutating}
    inflight = dict.fromkeys(limits, 0)
    for kind in inflight:  # read when /metrics is scraped, not set per request
        metrics.inflight.labels(kind).set_function(lambda kind=kind: inflight[kind])

    async def limited(request: web.BaseRequest) -> web.StreamResponse:
        info = request[REQUEST_INFO]
        if is_long_running(info):
            return await serve_long_running(handler, request, metrics)
        kind = "mutating" if info.verb in MUTATING_VERBS else "readOnly"
        limit = limits[kind]
        if limit > 0 and inflight[kind] >= limit:
            metrics.rejected.labels(kind).inc()
            raise errors.too_many_requests(1)
        inflight[kind] += 1
        try:
            return await handler(request)
        finally:
            inflight[kind] -= 1

    return limited


async def serve_long_running(handler: Handler, request: web.BaseRequest,
                             metrics: APIServerMetrics) -> web.StreamResponse:
    """A long-running request, counted in apiserver_longrunning_requests while it runs."""
    info = request[REQUEST_INFO]
    watchers = metrics.watchers.labels(info.verb.upper(), info.group, info.resource)
    watchers.inc()
    try:
        return await handler(request)
    finally:
        watchers.dec()


class FlowMetrics:
    """The apiserver_flowcontrol_* series of one (priority level, FlowSchema), looked up
    once: a labels() call costs more than the counting it leads to."""

    def __init__(self, metrics: APIServerMetrics, labels: tuple[str, str]) -> None:
        self.waiting = metrics.flowcontrol_inqueue.labels(*labels)
        self.dispatched_wait = metrics.flowcontrol_wait_duration.labels(*labels, "true")
        self.rejected_wait = metrics.flowcontrol_wait_duration.labels(*labels, "false")
        self.dispatched = metrics.flowcontrol_dispatched.labels(*labels)
        self.executing = metrics.flowcontrol_executing.labels(*labels)
        self.executing_seats = metrics.flowcontrol_executing_seats.labels(*labels)


def with_priority_and_fairness(handler: Handler, controller: APFController,
                               object_count: Callable[[RequestInfo], int],
                               watch_count: Callable[[RequestInfo], int],
                               metrics: APIServerMetrics) -> Handler:
    """WithPriorityAndFairness: classify the request (flowcontrol/), wait for seats in
    its priority level's queues, or answer 429 with Retry-After (1 s, more while the
    level drops many: flowcontrol/dropped_requests.py); exempt levels never wait.

    Long-running requests other than watches are not held; a watch holds its seat until
    it has started (its initial list read: watch.py signals WATCH_INITIALIZED), as with
    upstream's initialization signal. Every answer names the matched FlowSchema's and
    level's UIDs. apiserver_current_inflight_requests counts the requests executing,
    read-only and mutating, as with the in-flight limits."""
    dropped = DroppedRequestsTracker()
    flows: dict[tuple[str, str], FlowMetrics] = {}
    executing_by_kind = {"readOnly": 0, "mutating": 0}
    for kind in executing_by_kind:
        metrics.inflight.labels(kind).set_function(lambda kind=kind: executing_by_kind[kind])

    async def fair(request: web.BaseRequest) -> web.StreamResponse:
        info = request[REQUEST_INFO]
        is_watch = info.verb == "watch"
        if is_long_running(info) and not is_watch:
            return await serve_long_running(handler, request, metrics)
        classification = controller.classify(RequestDigest(
            request[USER], info.verb or request.method.lower(), info.is_resource_request,
            info.group, info.resource, info.subresource, info.namespace, info.path))
        headers = request[RESPONSE_HEADERS] = {
            PRIORITY_LEVEL_UID_HEADER: classification.priority_level_uid,
            FLOW_SCHEMA_UID_HEADER: classification.flow_schema_uid}
        labels = (classification.priority_level_name, classification.flow_schema_name)
        seats, final_seats, additional_latency = 1, 0, 0.0
        if info.verb == "list":
            seats = list_seats(request.query, object_count(info), classification.max_seats)
        elif info.verb in MUTATING_VERBS and (info.resource, info.subresource) != (
                "serviceaccounts", "token"):
            final_seats, additional_latency = mutating_seats(watch_count(info),
                                                             classification.max_seats)
            seats = max(seats, final_seats)
        queue_set = classification.queue_set
        flow = flows.get(labels) or flows.setdefault(labels, FlowMetrics(metrics, labels))
        flow.waiting.inc()
        arrived = time.monotonic()
        try:
            queue = await queue_set.acquire(classification.flow_hash, seats, QUEUE_WAIT_LIMIT)
        except Rejected as rejected:
            flow.rejected_wait.observe(time.monotonic() - arrived)
            metrics.flowcontrol_rejected.labels(*labels, rejected.reason).inc()
            dropped.record_dropped_request(labels[0])
            return too_many_requests(headers, dropped.retry_after(labels[0]))
        finally:
            flow.waiting.dec()
        flow.dispatched_wait.observe(time.monotonic() - arrived)
        flow.dispatched.inc()
        executing, executing_seats = flow.executing, flow.executing_seats
        executing.inc()
        executing_seats.inc(seats)
        kind = "mutating" if info.verb in MUTATING_VERBS else "readOnly"
        executing_by_kind[kind] += 1
        finished = False

        def finish() -> None:
            """Give the seats back, once: after the request, or a watch's start."""
            nonlocal finished
            if not finished:
                finished = True
                executing_by_kind[kind] -= 1
                executing.dec()
                executing_seats.dec(seats)
                queue_set.release(queue, seats, final_seats=final_seats,
                                  additional_latency=additional_latency)

        try:
            if is_watch:
                request[WATCH_INITIALIZED] = finish
                return await serve_long_running(handler, request, metrics)
            response = await handler(request)
        finally:
            finish()
        if not response.prepared:
            response.headers.update(headers)
        return response

    return fair


def mutating_seats(watches: int, max_seats: int) -> tuple[int, float]:
    """The mutating work estimator: a write that every watch of its resource will hear
    of keeps a seat per 10 watches (at most the level's max seats) after it is done,
    for 5 ms of each seat's work; (final seats, seconds held). Below 10 watches, none."""
    if watches < WATCHES_PER_SEAT:
        return 0, 0.0
    wanted = math.ceil(watches / WATCHES_PER_SEAT)
    final_seats = min(wanted, max_seats)
    return final_seats, wanted * EVENT_ADDITIONAL_DURATION / final_seats


def list_seats(query: Mapping[str, str], stored: int, max_seats: int) -> int:
    """The LIST work estimator: one seat per 100 objects it will go through, at least
    one, at most the level's max seats. A list served from the watch cache
    (resourceVersion=0) goes through every stored object; one from etcd twice its
    limit, or every object plus the limit when it filters by selector."""
    limit = stored
    with contextlib.suppress(ValueError):
        asked = int(query.get("limit", "0"))
        if 0 < asked < stored:
            limit = asked
    if query.get("resourceVersion") == "0":
        objects = stored
    elif query.get("labelSelector") or query.get("fieldSelector"):
        objects = stored + limit
    else:
        objects = 2 * limit
    return max(1, min(max_seats, math.ceil(objects / OBJECTS_PER_SEAT)))


def too_many_requests(headers: dict[str, str], retry_after: int) -> web.Response:
    """tooManyRequests: upstream's APF answers 429 in plain text, with Retry-After."""
    return web.Response(status=429, text="Too many requests, please try again later.\n",
                        headers={**headers, "Retry-After": str(retry_after),
                                 "X-Content-Type-Options": "nosniff"},
                        content_type="text/plain", charset="utf-8")


def with_audit_response_started(handler: Handler, audit: AuditLog | None) -> Handler:
    """ResponseStarted: a long-running request, authorized, begins answering."""
    if audit is None:
        return handler

    async def started(request: web.BaseRequest) -> web.StreamResponse:
        event = request.get(AUDIT_EVENT)
        if event is not None and is_long_running(request[REQUEST_INFO]):
            audit.started(event)
        return await handler(request)

    return started
