"""How every long-running part of a process lives: the API server, the controller-manager
and each controller, the scheduler, the kubelet, an informer, the proxy, cluster DNS.

    run()         does the work in the foreground until cancelled, and releases what it
                  holds on the way out (python -m <component> calls this)
    start()       runs run() in the background and returns once the part serves
    stop()        cancels that background run() and waits for its clean-up
    async with    start() on entry, stop() on exit (tests, benchmarks)

A part says when it serves by overriding wait_started(); by default it serves at once.
Its loops sleep with wait_for_event(), so that stopping it does not wait out a sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

log = logging.getLogger(__name__)


async def wait_for_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait until `event` is set or `timeout` seconds have passed (None: no limit);
    whether it is set.
    With asyncio.timeout rather than asyncio.wait_for, which on Python 3.11 can swallow a
    cancel that comes just as the wait ends, so that a cancelled loop would run on."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await event.wait()
    return event.is_set()


class StoppedBeforeStarted(Exception):
    """run() returned before the part served."""


class Component(ABC):
    """A long-running part with one lifecycle: run(), start(), stop(), async with."""

    _background: asyncio.Task[None] | None = None

    @abstractmethod
    async def run(self) -> None:
        """Do the work until cancelled; release everything in a `finally`.

        Must not return early while there is work to do: the part stops when run() ends.
        """

    async def wait_started(self) -> None:
        """Return once run() serves (its caches synced, its port bound). Must not start
        anything itself. Default: at once."""
        return

    @property
    def running(self) -> bool:
        """Whether run() runs in the background (after start(), before stop())."""
        return self._background is not None and not self._background.done()

    def run_in_background(self) -> None:
        """Begin run() in a task of its own, without waiting for it to serve; a no-op if it
        runs already."""
        if not self.running:
            self._background = asyncio.create_task(self.run(), name=type(self).__name__)

    async def start(self) -> None:
        """Run run() in the background and return once it serves. If run() fails first,
        its error is raised here."""
        if self.running:
            return
        self.run_in_background()
        background = self._background
        assert background is not None
        started = asyncio.ensure_future(self.wait_started())
        try:
            await asyncio.wait({background, started}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            started.cancel()
            await self.stop()
            raise
        if not started.done():
            started.cancel()
            self._background = None
            if not background.cancelled() and background.exception() is not None:
                raise background.exception()  # type: ignore[misc]
            raise StoppedBeforeStarted(f"{type(self).__name__} stopped before it served")
        started.result()

    async def stop(self) -> None:
        """Cancel the background run() and wait until it has cleaned up; a no-op if it does
        not run. An error run() ended with is logged, not raised: stopping always works."""
        task, self._background = self._background, None
        if task is None:
            return
        task.cancel()
        (result,) = await asyncio.gather(task, return_exceptions=True)
        if isinstance(result, Exception):
            log.error("%s had stopped with an error: %s", type(self).__name__, result,
                      exc_info=result)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()
