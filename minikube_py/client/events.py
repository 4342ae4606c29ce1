"""The event recorder: core/v1 Events about objects, repeats folded into one (client-go's).

    recorder.event(replica_set, "Normal", "SuccessfulCreate", "Created pod: web-7x2kq")

Recording never blocks the caller: events go on a queue that a background task writes.
An event identical to one recorded before (same object, type, reason, message and
source) is not written again; the existing Event gets `count + 1` and a new
`lastTimestamp`, which is what `kubectl describe` shows as "x5 over 2m".

A spam filter, as upstream's, protects the API server: each object may have 25 events
recorded in a burst, then one more every 5 minutes; the rest are dropped. (A ReplicaSet
scaled to 1,000 records 25 `SuccessfulCreate` events, not 1,000.)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from datetime import UTC, datetime

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339
from minikube_py.client.errors import ClientError, ConnectionFailed, NotFound
from minikube_py.client.rest import Client

log = logging.getLogger(__name__)

CACHE_SIZE = 4096
MAX_ATTEMPTS = 3
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0


class SpamFilter:
    """EventSourceObjectSpamFilter: a token bucket per (source, object)."""

    def __init__(self, burst: int = SPAM_BURST, refill_seconds: float = SPAM_REFILL_SECONDS
                 ) -> None:
        self.burst = burst
        self.refill_seconds = refill_seconds
        self._buckets: OrderedDict[tuple[str, ...], tuple[float, float]] = OrderedDict()

    def allow(self, key: tuple[str, ...]) -> bool:
        now = time.monotonic()
        tokens, last = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) / self.refill_seconds)
        allowed = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
        self._buckets.move_to_end(key)
        while len(self._buckets) > CACHE_SIZE:
            self._buckets.popitem(last=False)
        return allowed


def object_reference(obj: Obj) -> Obj:
    """The involvedObject of an Event: who the event is about."""
    meta = obj.get("metadata") or {}
    reference = {
        "kind": obj.get("kind", ""),
        "apiVersion": obj.get("apiVersion", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    if meta.get("namespace"):
        reference["namespace"] = meta["namespace"]
    return reference


class EventRecorder:
    """Record Events for one component (`source.component`) on one host."""

    def __init__(self, client: Client, component: str, host: str = "") -> None:
        self.events = client.resource("events")
        self.component = component
        self.host = host
        self._pending: asyncio.Queue[Obj] = asyncio.Queue()
        # aggregation key -> (namespace, event name, count) of the Event already written
        self._seen: OrderedDict[tuple[str, ...], tuple[str, str, int]] = OrderedDict()
        self._task: asyncio.Task[None] | None = None
        self._spam_filter = SpamFilter()

    def event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        """Record that `reason` happened to `obj` (type Normal or Warning)."""
        now = datetime.now(UTC)
        reference = object_reference(obj)
        if not self._spam_filter.allow((self.component, self.host, reference["kind"],
                                        reference.get("namespace", ""), reference["name"],
                                        reference["uid"], reference["apiVersion"])):
            log.debug("dropped event %s on %s: spam filter", reason, reference["name"])
            return
        namespace = reference.get("namespace") or "default"
        self._pending.put_nowait({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{reference['name']}.{time.time_ns():x}",
                         "namespace": namespace},
            "involvedObject": reference,
            "reason": reason, "message": message, "type": event_type,
            "source": {"component": self.component, **({"host": self.host} if self.host
                                                       else {})},
            "firstTimestamp": rfc3339(now), "lastTimestamp": rfc3339(now), "count": 1,
            "reportingComponent": self.component, "reportingInstance": self.host,
        })
        if self._task is None:
            self._task = asyncio.create_task(self._write_all(), name=f"events-{self.component}")

    async def flush(self) -> None:
        """Wait until every recorded event has been written (tests, shutdown)."""
        await self._pending.join()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _write_all(self) -> None:
        while True:
            event = await self._pending.get()
            try:
                await self._write(event)
            except ClientError as failure:
                log.warning("could not record event %s %s: %s", event["reason"],
                            event["involvedObject"].get("name"), failure)
            finally:
                self._pending.task_done()

    @staticmethod
    def _aggregation_key(event: Obj) -> tuple[str, ...]:
        ref = event["involvedObject"]
        return (event["source"]["component"], event["source"].get("host", ""), ref["kind"],
                ref.get("namespace", ""), ref["name"], ref["uid"], ref["apiVersion"],
                event["type"], event["reason"], event["message"])

    async def _write(self, event: Obj) -> None:
        """Create the Event, or bump the count of the identical one written before."""
        key = self._aggregation_key(event)
        seen = self._seen.get(key)
        for attempt in range(MAX_ATTEMPTS):
            try:
                if seen is not None:
                    namespace, name, count = seen
                    await self.events.patch(
                        name, {"count": count + 1, "lastTimestamp": event["lastTimestamp"]},
                        namespace, patch_type="strategic")
                    self._remember(key, (namespace, name, count + 1))
                else:
                    written = await self.events.create(event)
                    meta = written["metadata"]
                    self._remember(key, (meta["namespace"], meta["name"], 1))
                return
            except NotFound:
                seen = None  # the Event expired or was deleted: start a new one
            except ConnectionFailed:
                if attempt == MAX_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(1.0)

    def _remember(self, key: tuple[str, ...], value: tuple[str, str, int]) -> None:
        self._seen[key] = value
        self._seen.move_to_end(key)
        while len(self._seen) > CACHE_SIZE:
            self._seen.popitem(last=False)
