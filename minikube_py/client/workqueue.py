"""The workqueue between informer handlers and a controller's workers (client-go's).

Three promises, as upstream:
- **deduplicated**: a key added ten times before a worker takes it is processed once;
- **one worker per key**: a key added while a worker holds it waits until `done(key)`,
  then goes back on the queue once;
- **rate limited retries**: `add_rate_limited(key)` after a failed sync waits per key
  (5 ms doubling up to 1,000 s) and never faster than an overall token bucket
  (10 per second, bursts of 100); `forget(key)` after a success resets the key's delay.

    key = await queue.get()
    try:
        await sync(key); queue.forget(key)
    except Exception:
        queue.add_rate_limited(key)
    finally:
        queue.done(key)

`worker` is that loop, `run_workers` runs several of them (a controller's `Run(workers)`);
`log_sync_error` says in one line why a key failed, as every controller says it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from minikube_py.client.errors import APIStatusError, Conflict
from minikube_py.client.logs import level_of
from minikube_py.client.retry import unavailable


class ShutDown(Exception):
    """The queue was shut down: workers return."""


class ItemExponentialFailureRateLimiter:
    """Per key: base * 2^failures, capped (upstream: 5 ms base, 1,000 s cap)."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[str, int] = {}

    def when(self, key: str) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        return min(self.base_delay * 2 ** failures, self.max_delay)

    def num_requeues(self, key: str) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)


class BucketRateLimiter:
    """An overall token bucket: `qps` tokens per second, at most `burst` saved up."""

    def __init__(self, qps: float = 10.0, burst: int = 100) -> None:
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last = time.monotonic()

    def when(self, key: str) -> float:
        """Reserve a token; the delay is how long until it exists."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def num_requeues(self, key: str) -> int:
        return 0

    def forget(self, key: str) -> None:
        return None


class MaxOfRateLimiter:
    """The longest delay any of the limiters asks for (DefaultControllerRateLimiter)."""

    def __init__(self, *limiters: ItemExponentialFailureRateLimiter | BucketRateLimiter
                 ) -> None:
        self.limiters = limiters

    def when(self, key: str) -> float:
        return max(limiter.when(key) for limiter in self.limiters)

    def num_requeues(self, key: str) -> int:
        return max(limiter.num_requeues(key) for limiter in self.limiters)

    def forget(self, key: str) -> None:
        for limiter in self.limiters:
            limiter.forget(key)


def default_controller_rate_limiter() -> MaxOfRateLimiter:
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0),
                            BucketRateLimiter(10.0, 100))


class WorkqueueMetrics:
    """workqueue_* metrics, one label `name` per queue, as upstream exposes them."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.depth = Gauge("workqueue_depth", "Current depth of workqueue", ["name"],
                           registry=registry)
        self.adds = Counter("workqueue_adds", "Total number of adds handled by workqueue",
                            ["name"], registry=registry)
        self.retries = Counter("workqueue_retries",
                               "Total number of retries handled by workqueue", ["name"],
                               registry=registry)
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name"], registry=registry)
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes", ["name"],
            registry=registry)


class RateLimitingQueue:
    """A deduplicating, delaying, rate-limited queue of string keys."""

    def __init__(self, name: str = "", *, rate_limiter: MaxOfRateLimiter | None = None,
                 metrics: WorkqueueMetrics | None = None) -> None:
        self.name = name
        self.rate_limiter = rate_limiter or default_controller_rate_limiter()
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._added_at: dict[str, float] = {}
        self._started_at: dict[str, float] = {}
        self._waiting: dict[str, tuple[float, asyncio.TimerHandle]] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        self._metrics = metrics

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, key: str) -> None:
        """Queue a key unless it is already queued; a key being processed waits for done."""
        if self._shutting_down or key in self._dirty:
            return
        if self._metrics:
            self._metrics.adds.labels(self.name).inc()
        self._dirty.add(key)
        if key in self._processing:
            return
        self._push(key)

    def _push(self, key: str) -> None:
        self._queue.append(key)
        self._added_at.setdefault(key, time.monotonic())
        if self._metrics:
            self._metrics.depth.labels(self.name).set(len(self._queue))
        self._wake_one()

    def _wake_one(self) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def add_after(self, key: str, delay: float) -> None:
        """Add the key after `delay` seconds (an earlier pending add for it wins)."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        ready_at = loop.time() + delay
        pending = self._waiting.get(key)
        if pending is not None:
            if pending[0] <= ready_at:
                return
            pending[1].cancel()
        handle = loop.call_at(ready_at, self._delayed_add, key)
        self._waiting[key] = (ready_at, handle)

    def _delayed_add(self, key: str) -> None:
        self._waiting.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: str) -> None:
        """Retry the key after its backoff (per-key exponential, overall token bucket)."""
        if self._metrics:
            self._metrics.retries.labels(self.name).inc()
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: str) -> None:
        """The key synced: its next failure starts again from the shortest backoff."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        return self.rate_limiter.num_requeues(key)

    async def get(self) -> str:
        """The next key to process; it is then this worker's until `done(key)`."""
        while not self._queue:
            if self._shutting_down:
                raise ShutDown()
            getter = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            await getter
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        now = time.monotonic()
        self._started_at[key] = now
        added = self._added_at.pop(key, now)
        if self._metrics:
            self._metrics.depth.labels(self.name).set(len(self._queue))
            self._metrics.queue_duration.labels(self.name).observe(now - added)
        return key

    def done(self, key: str) -> None:
        """The worker finished with the key; if it was added meanwhile, queue it again."""
        self._processing.discard(key)
        started = self._started_at.pop(key, None)
        if self._metrics and started is not None:
            self._metrics.work_duration.labels(self.name).observe(time.monotonic() - started)
        if key in self._dirty:
            self._push(key)

    def shut_down(self) -> None:
        """Stop handing out keys; workers blocked in `get` raise ShutDown."""
        self._shutting_down = True
        for _, handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)


async def worker(queue: RateLimitingQueue, sync: Callable[[str], Awaitable[None]],
                 failed: Callable[[str, Exception], None]) -> None:
    """processNextWorkItem until the queue shuts down: a key that syncs is forgotten by the
    rate limiter; one that fails is handed to `failed` (to say why), then retried with
    backoff; either way it is done."""
    while True:
        try:
            key = await queue.get()
        except ShutDown:
            return
        try:
            await sync(key)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            failed(key, error)
            queue.add_rate_limited(key)
        else:
            queue.forget(key)
        finally:
            queue.done(key)


async def run_workers(queue: RateLimitingQueue, workers: int,
                      sync: Callable[[str], Awaitable[None]],
                      failed: Callable[[str, Exception], None]) -> None:
    """`workers` workers of the queue until cancelled; then the queue shuts down."""
    tasks = [asyncio.create_task(worker(queue, sync, failed), name=f"{queue.name}-worker-{i}")
             for i in range(workers)]
    try:
        await asyncio.gather(*tasks)
    finally:
        queue.shut_down()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class ExpectedSyncError(Exception):
    """A sync failed for a reason already reported (an Event); retry without a traceback."""


def log_sync_error(logger: logging.Logger, name: str, queue: RateLimitingQueue, key: str,
                   error: Exception) -> None:
    """Say in one line why the key failed (it is retried with backoff, other keys are
    served meanwhile): a Conflict (another writer came first) is an ordinary requeue,
    logged at -v 2 as upstream's controllers log it; an API server that is away, a
    warning; another answer of the API's, info (a warning once the key failed 5 times in a
    row); anything else is a bug, logged as an error with its traceback."""
    requeues = queue.num_requeues(key)
    if isinstance(error, Conflict):
        level = level_of(2)
    elif unavailable(error):
        level = logging.WARNING
    elif isinstance(error, ExpectedSyncError | APIStatusError):
        level = logging.INFO if requeues < 5 else logging.WARNING
    else:
        level = logging.ERROR
    logger.log(level, "%s: error syncing %r (retry %d): %s", name, key, requeues, error,
               exc_info=level == logging.ERROR)
