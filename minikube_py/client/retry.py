"""Retrying while the API server is away (client-go's util/retry and wait.Backoff).

Every loop of every component that talks to the API server meets the same two
questions when a call fails:

    is it worth retrying?   unavailable(error): the server could not be reached, was
                            shutting down, overloaded (429) or could not reach etcd (5xx):
                            it will likely answer later. Anything else (NotFound, Invalid,
                            Forbidden, Conflict) is an answer, and retrying the same call
                            changes nothing.
    how long to wait?       Backoff: 0.8 s, 1.6 s, 3.2 s ... up to a cap, each step with
                            jitter so that a hundred clients of a restarted server do not
                            all come back in the same millisecond; reset() after a success.

    on_error(what, call)    both together: call until it succeeds, waiting out what
                            `unavailable` accepts, raising anything else.

A component logs one klog line per failure, without a traceback: an unreachable server is
a condition to wait out, not a bug.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from minikube_py.client.errors import (
    APIStatusError,
    InternalError,
    ServerTimeout,
    ServiceUnavailable,
    TooManyRequests,
)
from minikube_py.client.rest import ConnectionFailed

T = TypeVar("T")
log = logging.getLogger(__name__)


def unavailable(error: BaseException) -> bool:
    """Whether `error` says the API server is away (gone, stopping, overloaded, or cut off
    from etcd) rather than answering: retry the call later."""
    if isinstance(error, ConnectionFailed | TimeoutError):
        return True
    if isinstance(error, TooManyRequests | ServiceUnavailable | ServerTimeout | InternalError):
        return True
    return isinstance(error, APIStatusError) and error.code >= 500


class Backoff:
    """wait.Backoff: `initial` seconds, times `factor` after each step, at most `cap`;
    each wait is stretched by up to `jitter` times itself (client-go's Jitter)."""

    def __init__(self, initial: float = 0.8, cap: float = 30.0, *, factor: float = 2.0,
                 jitter: float = 1.0) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self._current = initial

    def step(self) -> float:
        """The next wait, in seconds; the one after it grows by `factor` (up to `cap`)."""
        duration = self._current
        self._current = min(self._current * self.factor, self.cap)
        return duration * (1 + random.random() * self.jitter)

    def reset(self) -> None:
        """After a success: the next failure waits `initial` again."""
        self._current = self.initial


async def on_error(what: str, call: Callable[[], Awaitable[T]], *,
                   retriable: Callable[[BaseException], bool] = unavailable,
                   backoff: Backoff | None = None) -> T:
    """retry.OnError: `call()` until it succeeds, backing off after each failure that
    `retriable` accepts (one warning line each, naming `what`); any other error is
    raised at once."""
    backoff = backoff or Backoff()
    while True:
        try:
            return await call()
        except Exception as error:
            if not retriable(error):
                raise
            delay = backoff.step()
            log.warning("%s failed (retrying in %.1fs): %s", what, delay, error)
        await asyncio.sleep(delay)
