"""Pod workers: one asyncio task per pod, so one pod's slow step never blocks another's.

Upstream `pkg/kubelet/pod_workers.go`. Anything that may concern a pod (an API update,
a runtime event from the PLEG, a probe result, a back-off expiring) only *wakes* the
pod's worker; the worker then syncs the pod against its latest spec. Wake-ups that
arrive while a sync runs are folded into one more sync, so a worker never falls behind
and never runs two syncs of the same pod at once.

A runtime change may be one the last sync already saw: the PLEG relists while a sync is
starting the pod's containers and reports exactly those. Such a wake-up comes with an
`unless` check, asked when the worker gets to it; if every wake-up folded into the next
sync says it is settled, that sync is skipped.
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
Settled = Callable[[], bool]
ERROR_RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0)


class PodWorker:
    def __init__(self, uid: str, sync: SyncFunc, on_done: Callable[[str], None]) -> None:
        self.uid = uid
        self._sync = sync
        self._on_done = on_done
        self._wake = asyncio.Event()
        self._must_sync = False
        self._unless: list[Settled] = []
        self._timer: asyncio.TimerHandle | None = None
        self._failures = 0
        self._task = asyncio.create_task(self._run(), name=f"pod-worker-{uid}")
        self.wake()  # a new worker syncs at least once

    def wake(self, unless: Settled | None = None) -> None:
        """Sync soon; with `unless`, only if it still returns False by then."""
        if unless is None:
            self._must_sync = True
        else:
            self._unless.append(unless)
        self._wake.set()

    def _settled(self) -> bool:
        """Every wake-up since the last sync was conditional, and no longer needed."""
        unless, self._unless = self._unless, []
        must, self._must_sync = self._must_sync, False
        return not must and all(check() for check in unless)

    def wake_after(self, delay: float) -> None:
        """Run again in `delay` seconds unless an earlier wake-up is already planned."""
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        if self._timer is not None and self._timer.when() <= when:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(when, self.wake)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._settled():
                continue  # a planned retry keeps its timer
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

    def update_pod(self, uid: str, *, unless: Settled | None = None) -> None:
        """UpdatePod: make sure the pod's worker exists and will sync soon (unless
        `unless()` says, when the worker gets to it, that there is nothing to do)."""
        worker = self._workers.get(uid)
        if worker is None:
            worker = self._workers[uid] = PodWorker(uid, self._sync, self._done)
        worker.wake(unless)

    def known(self) -> set[str]:
        return set(self._workers)

    def _done(self, uid: str) -> None:
        self._workers.pop(uid, None)

    async def stop(self) -> None:
        workers, self._workers = list(self._workers.values()), {}
        await asyncio.gather(*(worker.stop() for worker in workers))
