"""The workqueue's promises: dedup, one worker per key, per-key backoff, token bucket."""

from __future__ import annotations

import asyncio
import logging

import pytest

from minikube_py.client.errors import Conflict, ConnectionFailed, Invalid
from minikube_py.client.logs import level_of
from minikube_py.client.workqueue import (
    BucketRateLimiter,
    ExpectedSyncError,
    ItemExponentialFailureRateLimiter,
    RateLimitingQueue,
    ShutDown,
    default_controller_rate_limiter,
    log_sync_error,
    run_workers,
)


async def test_a_key_added_many_times_is_processed_once() -> None:
    queue = RateLimitingQueue("t")
    for _ in range(10):
        queue.add("ns/a")
    queue.add("ns/b")
    assert len(queue) == 2
    assert await queue.get() == "ns/a"
    assert await queue.get() == "ns/b"
    assert len(queue) == 0


async def test_a_key_added_while_processing_waits_for_done_then_runs_once_more() -> None:
    queue = RateLimitingQueue("t")
    queue.add("k")
    key = await queue.get()
    queue.add("k")
    queue.add("k")
    assert len(queue) == 0, "never two workers on one key"
    queue.done(key)
    assert len(queue) == 1
    assert await queue.get() == "k"
    queue.done("k")
    assert len(queue) == 0


async def test_two_workers_never_hold_the_same_key() -> None:
    queue = RateLimitingQueue("t")
    holding: set[str] = set()
    overlaps = 0
    processed = 0

    async def worker() -> None:
        nonlocal overlaps, processed
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            if key in holding:
                overlaps += 1
            holding.add(key)
            await asyncio.sleep(0.001)
            holding.discard(key)
            processed += 1
            queue.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(4)]
    for round_ in range(50):
        for key in ("a", "b", "c"):
            queue.add(key)
        await asyncio.sleep(0.0005 * (round_ % 3))
    await asyncio.sleep(0.05)
    queue.shut_down()
    await asyncio.gather(*workers)
    assert overlaps == 0
    assert 3 <= processed <= 150


async def test_get_waits_for_an_add() -> None:
    queue = RateLimitingQueue("t")
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0.01)
    assert not getter.done()
    queue.add("x")
    async with asyncio.timeout(1):
        assert await getter == "x"


async def test_shut_down_releases_waiting_workers() -> None:
    queue = RateLimitingQueue("t")
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0.01)
    queue.shut_down()
    with pytest.raises(ShutDown):
        async with asyncio.timeout(1):
            await getter
    queue.add("ignored")
    assert len(queue) == 0


async def test_add_after_delays_and_the_earliest_pending_add_wins() -> None:
    queue = RateLimitingQueue("t")
    queue.add_after("k", 10.0)
    queue.add_after("k", 0.02)
    queue.add_after("k", 5.0)
    assert len(queue) == 0
    async with asyncio.timeout(1):
        assert await queue.get() == "k"
    queue.done("k")
    await asyncio.sleep(0.05)
    assert len(queue) == 0, "the later adds were folded into the earlier one"


def test_per_key_backoff_doubles_from_5ms_to_1000s_and_forget_resets() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("k") for _ in range(4)]
    assert delays == [0.005, 0.01, 0.02, 0.04]
    assert limiter.num_requeues("k") == 4
    assert limiter.when("other") == 0.005
    for _ in range(40):
        last = limiter.when("k")
    assert last == 1000.0
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0
    assert limiter.when("k") == 0.005


def test_token_bucket_allows_a_burst_then_paces_at_qps() -> None:
    bucket = BucketRateLimiter(qps=10, burst=100)
    burst = [bucket.when(str(i)) for i in range(100)]
    assert max(burst) == 0.0
    waits = [bucket.when(str(i)) for i in range(3)]
    assert waits[0] == pytest.approx(0.1, abs=0.01)
    assert waits[2] == pytest.approx(0.3, abs=0.01)


def test_default_controller_rate_limiter_is_the_max_of_both() -> None:
    limiter = default_controller_rate_limiter()
    assert limiter.when("k") == 0.005
    assert limiter.when("k") == 0.01
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0


async def test_add_rate_limited_requeues_after_the_backoff() -> None:
    queue = RateLimitingQueue("t")
    queue.add("k")
    key = await queue.get()
    queue.add_rate_limited(key)
    queue.done(key)
    assert queue.num_requeues("k") == 1
    async with asyncio.timeout(1):
        assert await queue.get() == "k"
    queue.forget("k")
    assert queue.num_requeues("k") == 0


async def test_workers_retry_a_failed_key_with_backoff_and_forget_it_once_it_syncs() -> None:
    queue = RateLimitingQueue("t")
    attempts: list[str] = []
    failures: list[tuple[str, str]] = []
    synced = asyncio.Event()

    async def sync(key: str) -> None:
        attempts.append(key)
        if attempts.count(key) < 3:
            raise ValueError(f"attempt {attempts.count(key)}")
        synced.set()

    workers = asyncio.create_task(run_workers(
        queue, 2, sync, lambda key, error: failures.append((key, str(error)))))
    queue.add("k")
    async with asyncio.timeout(5):
        await synced.wait()
    assert attempts == ["k", "k", "k"]
    assert failures == [("k", "attempt 1"), ("k", "attempt 2")]
    assert queue.num_requeues("k") == 0, "a key that synced is forgotten"
    workers.cancel()
    with pytest.raises(asyncio.CancelledError):
        await workers
    with pytest.raises(ShutDown):
        async with asyncio.timeout(5):
            await queue.get()


async def test_a_failed_sync_is_one_line_whose_level_says_whether_it_is_a_bug(
        caplog: pytest.LogCaptureFixture) -> None:
    """A Conflict is routine (-v 2), an API server away a warning, an answer of the API's or
    a reported failure info until the key failed 5 times, anything else an error with its
    traceback."""
    logger = logging.getLogger("test.sync")
    queue = RateLimitingQueue("t")
    caplog.set_level(1, logger="test.sync")
    failures: list[Exception] = [
        Conflict({"message": "changed"}, 409), ConnectionFailed("away"),
        Invalid({"message": "bad"}, 422), ExpectedSyncError("said"), KeyError("bug")]
    for error in failures:
        log_sync_error(logger, "t", queue, "ns/a", error)
    assert [(record.levelno, bool(record.exc_info)) for record in caplog.records] == [
        (level_of(2), False), (logging.WARNING, False), (logging.INFO, False),
        (logging.INFO, False), (logging.ERROR, True)]
    assert caplog.records[0].getMessage() == "t: error syncing 'ns/a' (retry 0): changed"
    for _ in range(5):
        queue.add_rate_limited("ns/a")
    caplog.clear()
    log_sync_error(logger, "t", queue, "ns/a", ExpectedSyncError("said"))
    assert [record.levelno for record in caplog.records] == [logging.WARNING]
    queue.shut_down()
