"""Sending spans away: batched, in the background, never on the caller's path.

    span.end() -> export(span): append to a bounded queue (the oldest dropped when full)
    background task, every second or every 512 spans:
      POST <endpoint>/v1/traces  (OTLP/HTTP JSON, otlp.py)
      an endpoint that does not answer costs the batch, never the component

Any OTLP/HTTP receiver will do: ours (receiver.py), an OpenTelemetry collector, Jaeger
or Tempo on their port 4318.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

import orjson

from minikube_py.client import transport
from minikube_py.lifecycle import wait_for_event
from minikube_py.tracing import otlp
from minikube_py.tracing.tracer import Span

log = logging.getLogger(__name__)

MAX_QUEUE = 8192
BATCH = 512
INTERVAL = 1.0
PATH = "/v1/traces"


class OTLPExporter:
    """The spans of one service, to one OTLP/HTTP endpoint (`http://host:4318`)."""

    def __init__(self, endpoint: str, service: str, *, max_queue: int = MAX_QUEUE,
                 interval: float = INTERVAL) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.service = service
        self.interval = interval
        self.queue: deque[Span] = deque(maxlen=max_queue)
        self.dropped = 0
        self.sent = 0
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._pool = transport.ConnectionPool(
            self.endpoint, headers={"Content-Type": "application/json"})

    def export(self, span: Span) -> None:
        """Queue an ended span (called from span.end(); cheap, never blocks)."""
        if len(self.queue) == self.queue.maxlen:
            self.dropped += 1
        self.queue.append(span)
        if self._task is None:
            try:
                self._task = asyncio.get_running_loop().create_task(
                    self._run(), name="otlp-exporter")
            except RuntimeError:
                return  # no loop yet: the spans wait for the next export in one
        if len(self.queue) >= BATCH:
            self._wake.set()

    async def _run(self) -> None:
        while True:
            await wait_for_event(self._wake, self.interval)
            self._wake.clear()
            await self.flush()

    async def flush(self) -> None:
        """Send everything queued now, in batches."""
        while self.queue:
            batch = [self.queue.popleft() for _ in range(min(BATCH, len(self.queue)))]
            body = orjson.dumps(otlp.encode(self.service, batch))
            try:
                answer = await self._pool.request("POST", PATH, body=body, timeout=10)
            except (transport.TransportError, TimeoutError, OSError) as error:
                log.debug("tracing: %d spans not sent to %s: %s", len(batch),
                          self.endpoint, error)
                self.dropped += len(batch)
                return
            if answer.status >= 300:
                log.debug("tracing: %s answered %d", self.endpoint, answer.status)
                self.dropped += len(batch)
                return
            self.sent += len(batch)

    async def close(self) -> None:
        """Send what is left, then stop."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()
        await self._pool.close()
