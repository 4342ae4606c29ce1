"""Per-key exponential back-off: how long CrashLoopBackOff and ImagePullBackOff wait.

client-go `util/flowcontrol/backoff.go` (Backoff), as the kubelet uses it. Each key (a
container of a pod, an image) has a current delay and the time it was last moved on:

    next(key)            first failure: the initial delay; each further one doubles it,
                         up to the maximum (10, 20, 40, 80, 160, 300, 300, ... seconds)
    is_in_backoff(key)   is that delay still running?
    reset(key)           forget the key (an image was pulled after all)

An entry expires when the failure being recorded comes more than `reset_after` after the
previous one (client-go's default is twice the maximum); the next failure then starts over
at the initial delay. The kubelet's crash-loop back-off sets `reset_after` to 600 s and
passes the container's finishedAt as the event time, so a container that ran for ten
minutes before crashing restarts at once, without back-off.

Times are seconds on the back-off's clock (wall time by default, like upstream's, so that
container timestamps from the runtime can serve as event times). No jitter: the kubelet
uses none.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Entry:
    delay: float
    last_update: float


class Backoff:
    """flowcontrol.Backoff: an exponentially growing delay per key."""

    def __init__(self, initial: float = 10.0, maximum: float = 300.0, *,
                 clock: Callable[[], float] = time.time,
                 reset_after: float | None = None) -> None:
        self.initial = initial
        self.maximum = maximum
        self.clock = clock
        self.reset_after = 2 * maximum if reset_after is None else reset_after
        self._entries: dict[str, _Entry] = {}

    def current(self, key: str) -> float:
        """Get: the key's current delay (0 when it has none)."""
        entry = self._entries.get(key)
        return entry.delay if entry is not None else 0.0

    def next(self, key: str, event_time: float | None = None) -> float:
        """Next: record a failure at event_time (default now); returns the new delay."""
        now = self.clock()
        event_time = now if event_time is None else event_time
        entry = self._entries.get(key)
        if entry is None or self._expired(event_time, entry):
            entry = self._entries[key] = _Entry(self.initial, now)
        else:
            entry.delay = min(entry.delay * 2, self.maximum)
            entry.last_update = now
        return entry.delay

    def reset(self, key: str) -> None:
        """Reset: forget everything about the key."""
        self._entries.pop(key, None)

    def is_in_backoff(self, key: str, since: float | None = None) -> bool:
        """Whether the key must still wait. With `since` (IsInBackOffSince, e.g. the time
        the container finished) the delay counts from then; without it
        (IsInBackOffSinceUpdate) from the last call to next()."""
        return self.remaining(key, since) > 0

    def remaining(self, key: str, since: float | None = None) -> float:
        """Seconds left of the key's delay, counted as in is_in_backoff (0 when none)."""
        entry = self._entries.get(key)
        now = self.clock()
        if entry is None or self._expired(now if since is None else since, entry):
            return 0.0
        start = entry.last_update if since is None else since
        return max(0.0, start + entry.delay - now)

    def gc(self) -> None:
        """GC: drop the keys whose last failure is older than reset_after."""
        now = self.clock()
        for key in [k for k, entry in self._entries.items() if self._expired(now, entry)]:
            del self._entries[key]

    def _expired(self, event_time: float, entry: _Entry) -> bool:
        """hasExpired: the event comes so long after the last update that it starts over."""
        return event_time - entry.last_update > self.reset_after
