"""Pod workers: one asyncio task per pod, so one pod's slow step never blocks another's.

Upstream `pkg/kubelet/pod_workers.go`. Anything that may concern a pod (an API update,
a runtime event from the PLEG, a probe result, a back-off expiring) only *wakes* the
pod's worker; the worker then syncs the pod against its latest spec. Wake-ups that
arrive while a sync runs are folded into one more sync, so a worker never falls behind
and never runs two syncs of the same pod at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)
# What a sync returns: seconds until it wants to run again, None (only when woken), or
# DONE when the pod is gone for good and its worker can end.
DONE = -1.0
SyncFunc = Callable[[str], Awaitable[float | None]]
ERROR_RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0)


class PodWorker:
    def __init__(self, uid: str, sync: SyncFunc, on_done: Callable[[str], None]) -> None:
        self.uid = uid
        self._sync = sync
        self._on_done = on_done
        self._wake = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._task = asyncio.create_task(self._run(), name=f"pod-worker-{uid}")
        self._failures = 0

    def wake(self) -> None:
        self._wake.set()

    def wake_after(self, delay: float) -> None:
        """Run again in `delay` seconds unless an earlier wake-up is already planned."""
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        if self._timer is not None and self._timer.when() <= when:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(when, self._wake.set)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            try:
                retry = await self._sync(self.uid)
                self._failures = 0
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("sync of pod %s failed; retrying", self.uid)
                retry = ERROR_RETRY_SECONDS[min(self._failures, len(ERROR_RETRY_SECONDS) - 1)]
                self._failures += 1
            if retry == DONE:
                self._on_done(self.uid)
                return
            if retry is not None:
                self.wake_after(retry)

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


class PodWorkers:
    """The set of pod workers, keyed by pod uid."""

    def __init__(self, sync: SyncFunc) -> None:
        self._sync = sync
        self._workers: dict[str, PodWorker] = {}

    def update_pod(self, uid: str) -> None:
        """UpdatePod: make sure the pod's worker exists and will sync soon."""
        worker = self._workers.get(uid)
        if worker is None:
            worker = self._workers[uid] = PodWorker(uid, self._sync, self._done)
        worker.wake()

    def wake_after(self, uid: str, delay: float) -> None:
        worker = self._workers.get(uid)
        if worker is not None:
            worker.wake_after(delay)

    def known(self) -> set[str]:
        return set(self._workers)

    def _done(self, uid: str) -> None:
        self._workers.pop(uid, None)

    async def stop(self) -> None:
        workers, self._workers = list(self._workers.values()), {}
        await asyncio.gather(*(worker.stop() for worker in workers))
