"""The watch cache: one etcd watch per resource, fanned out to every API watcher.

Upstream's `Cacher` in k8s.io/apiserver/pkg/storage/cacher, in small:

    etcd --(one Watch on /registry/<resource>/)--> WatchCache --+--> Watcher (kubectl -w)
                                                                +--> Watcher (an informer)
                                                                +--> ...

The cache lists the prefix once, then applies every etcd event to an in-memory copy of
all objects and to a bounded history of recent events. A client watch starting at
resourceVersion N is served from that history (events with revision > N) and then live,
so 100 watchers cost one etcd watch. A watcher that does not keep up gets a bounded
buffer and is closed when it overflows; it never slows the others.

A consistent list may be served from the objects too, once consistent_read.py has shown
them to be etcd's current state: `applied_revision` and `wait_until_applied` are for it.
"""

from __future__ import annotations

import asyncio
import logging
from bisect import bisect_left
from collections import deque
from collections.abc import Callable

import orjson

from minikube_py.api import Obj, errors
from minikube_py.apiserver.storage.etcd import (
    CompactedError,
    EtcdClient,
    EtcdError,
    KeyValue,
    WatchEvent,
    prefix_end,
)
from minikube_py.lifecycle import wait_for_event
from minikube_py.tracing.context import without_trace_context

log = logging.getLogger(__name__)


ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"


def decode(kv: KeyValue) -> Obj:
    """An etcd value is the object's JSON; its resourceVersion is the key's mod_revision."""
    obj = orjson.loads(kv.value)
    obj.setdefault("metadata", {})["resourceVersion"] = str(kv.mod_revision)
    return obj


def with_resource_version(obj: Obj, revision: int) -> Obj:
    """A shallow copy of obj whose metadata.resourceVersion is `revision`."""
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(revision)}}


class CacheEvent:
    """One change to one object, as the cache saw it from etcd."""

    __slots__ = ("type", "key", "obj", "prev", "revision", "_wire", "_shown_wire")

    def __init__(self, type: str, key: str, obj: Obj, prev: Obj | None, revision: int) -> None:
        self.type = type
        self.key = key
        self.obj = obj
        self.prev = prev
        self.revision = revision
        self._wire: bytes | None = None
        self._shown_wire: bytes | None = None

    def wire(self, *, trace_context: bool) -> bytes:
        """The watch event as JSON, encoded once however many watchers receive it: with
        the object's trace context for the components that asked, without it for clients."""
        if trace_context:
            if self._wire is None:
                self._wire = orjson.dumps({"type": self.type, "object": self.obj}) + b"\n"
            return self._wire
        if self._shown_wire is None:
            self._shown_wire = orjson.dumps(
                {"type": self.type, "object": without_trace_context(self.obj)}) + b"\n"
        return self._shown_wire


class Watcher:
    """One client's watch: a bounded queue of events that pass its filter.

    `deliver`, when the watch's handler sets it, sends an event to the client at once and
    answers whether it could. A watcher with nothing queued tries it first, so a live event
    reaches an idle watch without waking the task that serves it; events queue (in order)
    only while the client is behind.
    """

    def __init__(
        self,
        start_revision: int,
        matches: Callable[[Obj], bool] | None,
        capacity: int,
    ) -> None:
        self.start_revision = start_revision
        self.matches = matches
        self.capacity = capacity
        self.queue: deque[tuple[str, Obj, CacheEvent | None]] = deque()
        self.last_revision = start_revision
        self.closed = False
        self.deliver: Callable[[str, Obj, CacheEvent | None], bool] | None = None
        self._wakeup = asyncio.Event()

    def push(self, type: str, obj: Obj, event: CacheEvent | None) -> None:
        if self.closed:
            return
        if self.deliver is not None and not self.queue and self.deliver(type, obj, event):
            return
        if len(self.queue) >= self.capacity:
            self.close()
            return
        self.queue.append((type, obj, event))
        self._wakeup.set()

    def offer(self, event: CacheEvent) -> None:
        """Deliver `event` if it concerns this watcher, as upstream's cacheWatcher does.

        With a filter, an object that starts matching arrives as ADDED and one that stops
        matching as DELETED (carrying its last matching state at the event's revision).
        """
        if event.revision <= self.start_revision:
            return
        if self.matches is None:
            self.push(event.type, event.obj, event)
            return
        now_matches = event.type != DELETED and self.matches(event.obj)
        before_matches = event.prev is not None and self.matches(event.prev)
        if event.type == DELETED:
            if before_matches:
                self.push(DELETED, event.obj, event)
        elif now_matches and before_matches:
            self.push(event.type, event.obj, event)
        elif now_matches:
            self.push(ADDED, event.obj, event if event.type == ADDED else None)
        elif before_matches:
            assert event.prev is not None
            self.push(DELETED, with_resource_version(event.prev, event.revision), None)

    def close(self) -> None:
        self.closed = True
        self.deliver = None
        self._wakeup.set()

    async def next_batch(self, timeout: float | None) -> list[tuple[str, Obj, CacheEvent | None]]:
        """Everything queued so far; waits up to `timeout` for at least one event."""
        if not self.queue and not self.closed:
            self._wakeup.clear()
            if not await wait_for_event(self._wakeup, timeout):
                return []
        batch = list(self.queue)
        self.queue.clear()
        return batch


class WatchCache:
    """The in-memory state and recent history of one resource, kept by an etcd watch."""

    def __init__(
        self,
        etcd: EtcdClient,
        prefix: str,
        *,
        history_size: int = 10_000,
        watcher_capacity: int = 10_000,
        on_event: Callable[[CacheEvent], None] | None = None,
        consistent_list_from_cache: bool = True,
        on_consistent_read: Callable[[bool, bool], None] | None = None,
    ) -> None:
        self.etcd = etcd
        self.prefix = prefix
        self.objects: dict[str, Obj] = {}
        # The newest revision the cache knows etcd has reached: events applied, or a
        # progress notification (etcd 3.4.23 may send one ahead of events it still owes).
        self.revision = 0
        # The revision the objects are etcd's state at, shown by the list and the events
        # alone: every event on the prefix up to it is applied, none after it.
        self.applied_revision = 0
        # The feature gate ConsistentListFromCache, and what counts each consistent read
        # (success, fallback): apiserver_watch_cache_consistent_read_total.
        self.consistent_list_from_cache = consistent_list_from_cache
        self.on_consistent_read = on_consistent_read
        self._applied: asyncio.Event | None = None  # set (and dropped) when it advances
        # A revision past applied_revision at which etcd's objects were shown to be the
        # cache's, and `changes` then: the objects stay etcd's at it until they change.
        self._fresh_at = (0, -1, "")
        # Every key, sorted, while no key comes or goes: pages of a large list bisect it.
        self._sorted_keys: list[str] | None = None
        # How many times the objects changed: what a reader that derives something from
        # them (RBAC's index of rules) compares to know whether to derive again.
        self.changes = 0
        # A watch may start at any revision >= oldest_revision.
        self.oldest_revision = 0
        self.history: deque[CacheEvent] = deque(maxlen=history_size)
        self.watchers: set[Watcher] = set()
        self.watcher_capacity = watcher_capacity
        self.ready = asyncio.Event()
        # set once the server shuts down: watches end, and a new one ends at once
        self.ending_watches = False
        self._on_event = on_event

    async def run(self) -> None:
        """List, then watch from the list's revision; relist when etcd has compacted it."""
        backoff = 0.1
        while True:
            try:
                await self._list_and_watch()
            except CompactedError:
                log.warning("watch cache %s: revision compacted, relisting", self.prefix)
            except EtcdError as err:
                log.warning("watch cache %s: etcd error %s, retrying", self.prefix, err)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)

    async def _list_and_watch(self) -> None:
        start = self.prefix.encode()
        result = await self.etcd.range(start, prefix_end(start))
        self._replace({kv.key.decode(): decode(kv) for kv in result.kvs}, result.revision)
        async with self.etcd.watch(start, prefix_end(start), result.revision + 1) as watch:
            async for batch in watch:
                for event in batch.events:
                    self._apply(event)
                if batch.events:
                    self._advance(batch.events[-1].kv.mod_revision, applied=True)
                else:
                    self._advance(batch.revision, applied=False)

    def _replace(self, objects: dict[str, Obj], revision: int) -> None:
        """A fresh list: watchers of the old state must start over (they get 410 if too old)."""
        for watcher in list(self.watchers):
            watcher.close()
        self.watchers.clear()
        self.objects = objects
        self._sorted_keys = None
        self.changes += 1
        self.history.clear()
        self.revision = revision
        self.oldest_revision = revision
        self._mark_applied(revision)
        self.ready.set()

    def _apply(self, event: WatchEvent) -> None:
        key = event.kv.key.decode()
        revision = event.kv.mod_revision
        prev = self.objects.get(key)
        if event.type == "PUT":
            obj = decode(event.kv)
            self.objects[key] = obj
            if prev is None:
                self._sorted_keys = None
            cache_event = CacheEvent(ADDED if prev is None else MODIFIED, key, obj, prev, revision)
        else:
            if prev is None:
                return
            del self.objects[key]
            self._sorted_keys = None
            obj = with_resource_version(prev, revision)
            cache_event = CacheEvent(DELETED, key, obj, prev, revision)
        self.changes += 1
        if len(self.history) == self.history.maxlen:
            self.oldest_revision = self.history[0].revision
        self.history.append(cache_event)
        for watcher in list(self.watchers):
            watcher.offer(cache_event)
            if watcher.closed:
                self.watchers.discard(watcher)
        if self._on_event is not None:
            self._on_event(cache_event)

    def _advance(self, revision: int, *, applied: bool) -> None:
        """A batch is done: `revision` is its last event's (applied) or a progress
        notification's."""
        if revision > self.revision:
            self.revision = revision
        if applied:
            self._mark_applied(revision)

    def _mark_applied(self, revision: int) -> None:
        self.applied_revision = revision
        if self._applied is not None:
            self._applied.set()
            self._applied = None

    def note_fresh_at(self, revision: int, namespace_prefix: str = "") -> None:
        """A consistent read showed the objects under `namespace_prefix` ("": all of them)
        to be etcd's at `revision`."""
        self._fresh_at = (revision, self.changes, namespace_prefix)

    def holds_state_at(self, revision: int, namespace_prefix: str = "") -> bool:
        """Whether the objects under `namespace_prefix` are etcd's at `revision`: the
        revision they were applied up to, or one a consistent read showed them (or all
        objects) to be at, if nothing changed since (what continues a list from the
        cache)."""
        if revision == self.applied_revision:
            return True
        fresh_revision, changes, fresh_prefix = self._fresh_at
        return ((fresh_revision, changes) == (revision, self.changes)
                and namespace_prefix.startswith(fresh_prefix))

    async def wait_until_applied(self, revision: int, timeout: float) -> bool:
        """Wait (up to `timeout` seconds) until the events up to `revision` are applied;
        whether they are."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.applied_revision < revision:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            if self._applied is None:
                self._applied = asyncio.Event()
            await wait_for_event(self._applied, remaining)
        return True

    def list(self, namespace_prefix: str = "") -> list[Obj]:
        """Current objects, sorted by key as etcd returns them."""
        if not self.objects:  # what admission asks of most kinds for every write
            return []
        objects = self.objects
        return [objects[key] for key in self.keys(namespace_prefix)]

    def keys(self, namespace_prefix: str = "") -> list[str]:
        """The current objects' keys, sorted as etcd sorts them (UTF-8 sorts as its code
        points do). Read-only: the list is kept until a key comes or goes."""
        if self._sorted_keys is None:
            self._sorted_keys = sorted(self.objects)
        keys = self._sorted_keys
        if not namespace_prefix:
            return keys
        prefix = self.prefix + namespace_prefix
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)  # the first string past the prefix's
        return keys[bisect_left(keys, prefix):bisect_left(keys, end)]

    def get(self, key: str) -> Obj | None:
        return self.objects.get(key)

    def watch(
        self,
        resource_version: int | None,
        matches: Callable[[Obj], bool] | None,
        *,
        namespace_prefix: str = "",
        initial: list[Obj] | None = None,
    ) -> Watcher:
        """A new watcher.

        resource_version None: first an ADDED event for every object in the cache, then
        changes. resource_version N: every change with revision > N (410 Expired if N is
        too old), after an ADDED event for each object of `initial` (a list read at N).
        """
        if resource_version is None:
            watcher = Watcher(self.revision, matches, self.watcher_capacity + len(self.objects))
            for obj in self.list(namespace_prefix):
                if matches is None or matches(obj):
                    watcher.push(ADDED, obj, None)
        else:
            if resource_version < self.oldest_revision:
                raise errors.resource_expired(
                    f"too old resource version: {resource_version} ({self.oldest_revision})"
                )
            initial = initial or []
            watcher = Watcher(resource_version, matches, self.watcher_capacity + len(initial))
            for obj in initial:
                watcher.push(ADDED, obj, None)
            for event in self.history:
                if event.revision > resource_version and event.key.startswith(
                    self.prefix + namespace_prefix
                ):
                    watcher.offer(event)
        if self.ending_watches:
            watcher.close()
        else:
            self.watchers.add(watcher)
        return watcher

    def stop_watching(self, watcher: Watcher) -> None:
        watcher.close()
        self.watchers.discard(watcher)

    def end_watches(self) -> None:
        """The server shuts down: close every watcher, and each one started from now on,
        so that their streams end (after what they hold queued) and clients watch again
        from the last version they saw."""
        self.ending_watches = True
        for watcher in list(self.watchers):
            watcher.close()
        self.watchers.clear()
