"""The rate-limited queue of nodes waiting for a NoExecute taint (upstream
pkg/controller/nodelifecycle/scheduler/rate_limited_queue.go)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta


class TokenBucket:
    """flowcontrol.NewTokenBucketRateLimiter: `qps` tokens a second, at most `burst`
    saved up (it starts full); qps 0 accepts nothing (NewFakeNeverRateLimiter)."""

    def __init__(self, qps: float, burst: int = 1) -> None:
        self.qps = qps
        self.burst = burst
        self.tokens = float(burst) if qps > 0 else 0.0
        self.last = time.monotonic()

    def try_accept(self) -> bool:
        if self.qps <= 0:
            return False
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.qps)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass
class TimedValue:
    value: str
    uid: str
    added_at: datetime
    process_at: datetime


@dataclass
class RateLimitedTimedQueue:
    """A set of node names to act on, oldest first, at most as fast as a token bucket."""

    limiter: TokenBucket
    items: list[TimedValue] = field(default_factory=list)

    def add(self, value: str, uid: str, now: datetime) -> bool:
        """Add unless already queued; True when added."""
        if any(item.value == value for item in self.items):
            return False
        self.items.append(TimedValue(value, uid, now, now))
        return True

    def remove(self, value: str) -> bool:
        before = len(self.items)
        self.items = [item for item in self.items if item.value != value]
        return len(self.items) != before

    def swap_limiter(self, qps: float) -> None:
        """SwapLimiter: a new rate; with burst 1, a limiter out of tokens stays so."""
        if self.limiter.qps == qps:
            return
        replacement = TokenBucket(qps)
        if qps > 0 and not self.limiter.try_accept():
            replacement.try_accept()
        self.limiter = replacement

    async def try_each(self, action: Callable[[TimedValue], Awaitable[tuple[bool, float]]],
                       now: Callable[[], datetime]) -> None:
        """Try: act on due items while tokens last; `action` answers (done, retry_after)."""
        while self.items:
            head = min(self.items, key=lambda item: item.process_at)
            if not self.limiter.try_accept():
                return
            moment = now()
            if moment < head.process_at:
                return
            done, wait = await action(head)
            if done:
                self.remove(head.value)
            else:
                head.process_at = moment + timedelta(seconds=wait)
