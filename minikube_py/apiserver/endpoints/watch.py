"""The watch verb: a chunked stream of {"type", "object"} lines from the watch cache.

Upstream: k8s.io/apiserver/pkg/endpoints/handlers/watch.go. The stream starts from the
client's resourceVersion (or with the current state, as ADDED events, when it gives none),
carries BOOKMARK events when asked, and ends after timeoutSeconds. A resourceVersion the
cache no longer has gives one ERROR event with a 410 Expired Status.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Callable

import orjson
from aiohttp import web

from minikube_py.api import Obj, errors
from minikube_py.api.resources import Resource
from minikube_py.api.selectors import FieldSelector
from minikube_py.apiserver.endpoints.negotiation import Wanted
from minikube_py.apiserver.endpoints.request_params import (
    check_field_labels,
    list_options,
    object_filter,
    query_int,
)
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo
from minikube_py.apiserver.endpoints.responses import (
    AUDIT_ID,
    RESPONSE_HEADERS,
    WATCH_INITIALIZED,
    from_storage,
    render_one,
)
from minikube_py.apiserver.registry.store import ListOptions, Store
from minikube_py.apiserver.storage.watchcache import BOOKMARK, ERROR, CacheEvent, Watcher
from minikube_py.tracing.context import without_trace_context

MIN_REQUEST_TIMEOUT = 1800  # upstream --min-request-timeout: watches last 1-2x this
BOOKMARK_INTERVAL = 30.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


async def serve_watch(
    request: web.Request, info: RequestInfo, store: Store, namespace: str, wanted: Wanted
) -> web.StreamResponse:
    """Watch: a chunked stream of {"type", "object"} lines from the watch cache.

    options -> which objects (filter) -> a watcher on the cache from the client's
    resourceVersion (a 410 becomes one ERROR event) -> open the stream -> events,
    bookmarks, until the timeout or the client leaves.
    """
    options = list_options(request)
    check_field_labels(store, options)
    selected: Callable[[Obj], bool] | None = None
    if store.strategy.selects_after_conversion and not options.field_selector.empty():
        # the cache selects by everything but the fields; the stream by those, once
        # converted
        fields = options.field_selector
        matches = watch_filter(store, namespace,
                               dataclasses.replace(options, field_selector=FieldSelector()),
                               info.name)
        selected = lambda obj: fields.matches(store.strategy.field_set(obj))  # noqa: E731
    else:
        matches = watch_filter(store, namespace, options, info.name)
    timeout = query_int(request, "timeoutSeconds")
    if timeout is None or timeout <= 0:
        timeout = int(MIN_REQUEST_TIMEOUT * (1 + random.random()))
    bookmarks = request.query.get("allowWatchBookmarks", "").lower() in ("1", "true")
    send_initial = request.query.get("sendInitialEvents", "").lower() in ("1", "true")

    response = web.StreamResponse(headers={"Content-Type": "application/json",
                                           "Audit-Id": request.get(AUDIT_ID, ""),
                                           **request.get(RESPONSE_HEADERS, {})})
    response.enable_chunked_encoding()
    try:
        watcher = await start_watcher(store, namespace, options, matches, send_initial)
    except errors.APIError as err:
        _initialized(request)
        await response.prepare(request)
        await response.write(orjson.dumps({"type": ERROR, "object": err.status()}) + b"\n")
        await response.write_eof()
        return response

    _initialized(request)
    await response.prepare(request)  # sends the headers: the stream is open
    encode = event_encoder(store, wanted, request)
    try:
        await stream_events(request, response, store, watcher, encode, timeout=timeout,
                            bookmarks=bookmarks, send_initial=send_initial,
                            selected=selected)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        store.cache.stop_watching(watcher)
    try:
        await response.write_eof()
    except ConnectionResetError:
        pass
    return response


def watch_filter(
    store: Store, namespace: str, options: ListOptions, name: str
) -> Callable[[Obj], bool] | None:
    """Which objects the watch sends: the selectors', narrowed to one name when the URL
    names an object (None: every object)."""
    matches = object_filter(store, namespace, options)
    if not name:
        return matches
    inner = matches

    def named(obj: Obj) -> bool:
        return obj["metadata"].get("name") == name and (inner is None or inner(obj))

    return named


def _initialized(request: web.Request) -> None:
    """The watch has started: tell API Priority and Fairness (it gives back the seat)."""
    signal = request.get(WATCH_INITIALIZED)
    if signal is not None:
        signal()


async def start_watcher(
    store: Store, namespace: str, options: ListOptions, matches: Callable[[Obj], bool] | None,
    send_initial: bool,
) -> Watcher:
    """Where the watch starts: resourceVersion "" (or sendInitialEvents) is a consistent
    read of etcd, sent as ADDED events, then every change after it; "0" is whatever the
    cache holds now; any other version replays the cache's events after it (410 when the
    cache no longer has them)."""
    version = options.resource_version
    cache = store.cache
    ns_prefix = f"{namespace}/" if namespace and store.resource.namespaced else ""
    if version == "" or (send_initial and version != "0"):
        listed = await store.list(
            namespace, ListOptions(options.label_selector, options.field_selector)
        )
        items = [o for o in listed.items if matches is None or matches(o)]
        return cache.watch(
            listed.resource_version, matches, namespace_prefix=ns_prefix, initial=items
        )
    if version == "0":
        return cache.watch(None, matches, namespace_prefix=ns_prefix)
    return cache.watch(int(version), matches, namespace_prefix=ns_prefix)


async def stream_events(
    request: web.Request, response: web.StreamResponse, store: Store, watcher: Watcher,
    encode: Callable[[str, Obj, CacheEvent | None], bytes], *, timeout: int, bookmarks: bool,
    send_initial: bool, selected: Callable[[Obj], bool] | None = None,
) -> None:
    """Write the watcher's events until the timeout or the watcher closes.

    `selected` (a store that selects after conversion) filters the converted events as
    the watch cache filters its own: an object that comes to match is ADDED, one that
    stops matching DELETED, one that never matched is not sent.

    The initial events go first, then the bookmark that ends them (sendInitialEvents);
    only then may the cache write events straight to the socket (live_writer). With
    allowWatchBookmarks, a BOOKMARK every BOOKMARK_INTERVAL while nothing waits.
    """
    cache = store.cache
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    next_bookmark = loop.time() + BOOKMARK_INTERVAL
    initial_pending = send_initial
    # events that a conversion webhook converts wait for the task: the cache's fan-out
    # cannot call out
    converting = store.strategy.converts_remotely
    deliver = None if converting else live_writer(request, encode, watcher)
    visible: set[tuple[str, str]] = set()
    if not initial_pending:
        watcher.deliver = deliver
    while True:
        now = loop.time()
        if now >= deadline:
            break
        wait = min(deadline, next_bookmark) - now
        if initial_pending:
            wait = 0
        batch = await watcher.next_batch(timeout=wait)
        if batch:
            if converting:
                try:
                    batch = [(t, await from_storage(store, o), None) for t, o, _ in batch]
                    if selected is not None:
                        batch = select_events(batch, selected, visible)
                except errors.APIError as err:
                    # the watch ends (as upstream's, which cannot encode the event);
                    # its last event says why
                    await response.write(
                        orjson.dumps({"type": ERROR, "object": err.status()}) + b"\n")
                    break
            chunk = b"".join(encode(t, o, e) for t, o, e in batch)
            if batch:
                watcher.last_revision = max(
                    watcher.last_revision, int(batch[-1][1]["metadata"]["resourceVersion"])
                )
            # aiohttp hands the chunk to the transport before it waits for the socket,
            # so events that live_writer sends meanwhile go out after it, in order.
            await response.write(chunk)
        elif watcher.closed:
            break
        if initial_pending and not watcher.queue:
            initial_pending = False
            await response.write(
                bookmark(
                    store.resource, max(watcher.last_revision, cache.revision), initial_end=True
                )
            )
            watcher.deliver = deliver
        if bookmarks and loop.time() >= next_bookmark:
            next_bookmark = loop.time() + BOOKMARK_INTERVAL
            if not watcher.queue:
                watcher.last_revision = max(watcher.last_revision, cache.revision)
                await response.write(bookmark(store.resource, watcher.last_revision))


def select_events(batch: list[tuple[str, Obj, CacheEvent | None]],
                  selected: Callable[[Obj], bool], visible: set[tuple[str, str]]
                  ) -> list[tuple[str, Obj, CacheEvent | None]]:
    """The events a field-selected watch sends, from converted events of objects
    `visible` to it so far (the cacher's filterWithAttrsFunction)."""
    out: list[tuple[str, Obj, CacheEvent | None]] = []
    for kind, obj, event in batch:
        metadata = obj["metadata"]
        key = (metadata.get("namespace", ""), metadata["name"])
        if kind == "DELETED":
            if key in visible:
                visible.discard(key)
                out.append((kind, obj, event))
        elif selected(obj):
            out.append(("MODIFIED" if key in visible else "ADDED", obj, event))
            visible.add(key)
        elif key in visible:
            visible.discard(key)
            out.append(("DELETED", obj, event))
    return out


def live_writer(
    request: web.Request, encode: Callable[[str, Obj, CacheEvent | None], bytes], watcher: Watcher
) -> Callable[[str, Obj, CacheEvent | None], bool]:
    """Write one event straight to the client's socket, as one HTTP/1.1 chunk.

    The watch cache calls this while it fans an event out, for every watcher that has
    nothing queued. Waking each watch's task to write each event cost more CPU than
    everything else a watch does. It answers False, and the event waits in the watcher's
    queue for the task (which writes through aiohttp and waits for the socket), when the
    client has not read what it was sent (the transport paused writing) or has gone, or
    when the event cannot be encoded (the task then meets the same error and ends the watch).
    """
    transport = request.transport
    protocol = request.protocol

    def deliver(type: str, obj: Obj, event: CacheEvent | None) -> bool:
        if transport is None or transport.is_closing() or protocol.writing_paused:
            return False
        try:
            data = encode(type, obj, event)
        except Exception:
            return False
        transport.write(b"%x\r\n%b\r\n" % (len(data), data))
        watcher.last_revision = int(obj["metadata"]["resourceVersion"])
        return True

    return deliver


def bookmark(resource: Resource, revision: int, *, initial_end: bool = False) -> bytes:
    metadata: Obj = {"resourceVersion": str(revision)}
    if initial_end:
        metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
    obj = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": metadata}
    return orjson.dumps({"type": BOOKMARK, "object": obj}) + b"\n"


def event_encoder(
    store: Store, wanted: Wanted, request: web.Request
) -> Callable[[str, Obj, CacheEvent | None], bytes]:
    """Each event as the client asked for it; with the trace context or without it."""
    plain = wanted.form == "object" and store.strategy.stored_is_external
    trace_context = wanted.trace_context

    def encode(type: str, obj: Obj, event: CacheEvent | None) -> bytes:
        if plain:
            if event is not None and event.type == type and event.obj is obj:
                return event.wire(trace_context=trace_context)
            shown = obj if trace_context else without_trace_context(obj)
            return orjson.dumps({"type": type, "object": shown}) + b"\n"
        rendered = render_one(store, obj, wanted, request)
        return orjson.dumps({"type": type, "object": rendered}) + b"\n"

    return encode
