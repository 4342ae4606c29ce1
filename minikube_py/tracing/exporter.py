"""Sending spans away: batched, in the background, never on the caller's path.

    span.end() -> export(span): append to a bounded queue (the oldest dropped when full)
    background task, every second or every 512 spans:
      POST <endpoint>/v1/traces  (OTLP/HTTP JSON, otlp.py)
      an endpoint that does not answer costs the batch, never the component: one
      warning line, and the next try after 1 s, 2 s, 4 s ... up to 30 s

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
from minikube_py.client.retry import Backoff
from minikube_py.lifecycle import wait_for_event
from minikube_py.tracing import otlp
from minikube_py.tracing.tracer import Span

log = logging.getLogger(__name__)

MAX_QUEUE = 8192
BATCH = 512
INTERVAL = 1.0
MAX_RETRY_INTERVAL = 30.0  # seconds between tries while the endpoint does not answer
EXPORT_TIMEOUT = 10.0  # seconds one POST may take
CLOSE_TIMEOUT = 0.5  # seconds a stopping component gives its last spans
PATH = "/v1/traces"


class ExportFailed(Exception):
    """The endpoint did not take a batch of spans."""


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
        """Every interval (or every BATCH spans), send what is queued. An endpoint that
        does not take a batch costs that batch and one warning line; the next try waits
        1 s, 2 s, 4 s ... up to 30 s (with jitter) while the spans made meanwhile wait in
        the queue."""
        backoff = Backoff(self.interval, MAX_RETRY_INTERVAL, jitter=0.2)
        while True:
            await wait_for_event(self._wake, self.interval)
            self._wake.clear()
            try:
                await self.flush()
            except ExportFailed as failure:
                delay = backoff.step()
                log.warning("traces export: %s; retrying in %.1fs", failure, delay)
                await asyncio.sleep(delay)
            else:
                backoff.reset()

    async def flush(self) -> None:
        """Send everything queued now, in batches; ExportFailed when the endpoint does not
        take one (that batch is dropped, the rest stays queued)."""
        while self.queue:
            batch = [self.queue.popleft() for _ in range(min(BATCH, len(self.queue)))]
            body = orjson.dumps(otlp.encode(self.service, batch))
            try:
                answer = await self._pool.request("POST", PATH, body=body,
                                                  timeout=EXPORT_TIMEOUT)
            except (transport.TransportError, TimeoutError, OSError) as error:
                self.dropped += len(batch)
                raise ExportFailed(f"{len(batch)} spans not sent to {self.endpoint}: "
                                   f"{str(error) or type(error).__name__}") from error
            if answer.status >= 300:
                self.dropped += len(batch)
                raise ExportFailed(f"{self.endpoint} answered {answer.status}; "
                                   f"{len(batch)} spans dropped")
            self.sent += len(batch)

    async def close(self) -> None:
        """Send what is left, for CLOSE_TIMEOUT seconds at most (a component stopping must
        not wait on a receiver that is away), then stop."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await self.flush()
        except (ExportFailed, TimeoutError) as failure:
            self.dropped += len(self.queue)
            log.info("traces export: spans not sent at exit (%d dropped in all): %s",
                     self.dropped, str(failure) or f"no answer within {CLOSE_TIMEOUT}s")
        await self._pool.close()
