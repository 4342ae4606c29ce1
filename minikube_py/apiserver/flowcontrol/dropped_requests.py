"""The Retry-After of a rejected request (upstream's dropped_requests_tracker.go): per
priority level, 1 s while few requests are dropped, doubled (up to 32 s) while many are,
and brought down a second at a time once they are few again.

    each second with drops closes the previous one into the history, then:
        dropped in the last retryAfter seconds (this one excluded) >= 3 * retryAfter,
        and retryAfter seconds since the last raise      -> retryAfter *= 2 (max 32)
        dropped < retryAfter                             -> retryAfter -= 1 (min 1)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_RETRY_AFTER = 32


@dataclass
class _LevelStats:
    """One level's drops per second, and its Retry-After."""

    history: list[tuple[int, int]] = field(default_factory=list)  # (unix second, drops)
    current_second: int = 0
    current_count: int = 0
    retry_after: int = 1
    retry_after_updated: int = 0

    def record(self, second: int) -> None:
        """recordDroppedRequest."""
        if second == self.current_second:
            self.current_count += 1
            return
        self._update_history(self.current_second, self.current_count)
        self.current_second, self.current_count = second, 1
        self._update_retry_after(second)

    def _update_history(self, second: int, count: int) -> None:
        """updateHistory: keep at most 2 * retryAfter seconds (at most 32)."""
        self.history.append((second, count))
        longest = min(2 * self.retry_after, MAX_RETRY_AFTER)
        self.history = [(at, drops) for at, drops in self.history if second - at <= longest]

    def _update_retry_after(self, second: int) -> None:
        """updateRetryAfterIfNeededLocked."""
        dropped = 0
        for at, drops in reversed(self.history):
            if second - at > self.retry_after:
                break
            if at < second:
                dropped += drops
        if (second - self.retry_after_updated >= self.retry_after
                and dropped >= 3 * self.retry_after):
            self.retry_after = min(self.retry_after * 2, MAX_RETRY_AFTER)
            self.retry_after_updated = second
        elif dropped < self.retry_after and self.retry_after > 1:
            self.retry_after -= 1


class DroppedRequestsTracker:
    """The Retry-After of each priority level, from its recent drops."""

    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self.now = now
        self._levels: dict[str, _LevelStats] = {}

    def record_dropped_request(self, level: str) -> None:
        """RecordDroppedRequest: one more request of the level refused this second."""
        self._levels.setdefault(level, _LevelStats()).record(int(self.now()))

    def retry_after(self, level: str) -> int:
        """GetRetryAfter: seconds a refused client of the level should wait."""
        stats = self._levels.get(level)
        return stats.retry_after if stats is not None else 1
