"""The scheduling queue: which pending pod is scheduled next (upstream PriorityQueue).

Three places a pending pod can be:

    activeQ          a heap, ordered by the QueueSort plugin (priority, then age);
                     the scheduling loop pops from here
    backoffQ         pods that failed recently, each waiting out its backoff
                     (1 s, doubling per attempt, at most 10 s) before going back to activeQ
    unschedulable    pods no node could take; they wait for a cluster event that could
                     change that (a node added, a pod deleted, ...) for one of the plugins
                     that rejected them, or for the periodic flush after 5 minutes

A background task moves pods from backoffQ to activeQ when their backoff ends (every
second, as upstream's flushBackoffQCompleted) and flushes pods stuck in unschedulable.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable, KeysView
from dataclasses import dataclass, field
from typing import Any

from minikube_py.api import Obj
from minikube_py.scheduler.framework.interface import ClusterEvent, QueuedPodInfo
from minikube_py.scheduler.framework.types import PodInfo

Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_IN_UNSCHEDULABLE = 300.0  # podMaxInUnschedulablePodsDuration
FLUSH_PERIOD = 1.0

# Events that may help any pod; used when a plugin registered nothing narrower.
WILDCARD = ClusterEvent("*", "*")


@dataclass(order=False)
class _HeapItem:
    """A heap entry ordered by the profile's QueueSort `less` (sequence breaks ties)."""

    queued: QueuedPodInfo
    less: Less
    sequence: int
    removed: bool = field(default=False)

    def __lt__(self, other: _HeapItem) -> bool:
        if self.less(self.queued, other.queued):
            return True
        if self.less(other.queued, self.queued):
            return False
        return self.sequence < other.sequence


def pod_uid(pod: Obj) -> str:
    return (pod.get("metadata") or {}).get("uid", "")


class SchedulingQueue:
    """activeQ, backoffQ and the unschedulable pods, with upstream's moves between them."""

    def __init__(self, less: Less, *,
                 events_for_plugin: Callable[[str], list[ClusterEvent]] | None = None,
                 initial_backoff: float = INITIAL_BACKOFF, max_backoff: float = MAX_BACKOFF
                 ) -> None:
        self._less = less
        self._events_for_plugin = events_for_plugin or (lambda _name: [WILDCARD])
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._active: list[_HeapItem] = []
        self._active_items: dict[str, _HeapItem] = {}
        self._backoff: dict[str, QueuedPodInfo] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._sequence = itertools.count()
        self._getters: list[asyncio.Future[None]] = []
        self.scheduling_cycle = 0
        self._move_request_cycle = -1
        self._closed = False
        # nominated node names (set by preemption): node -> uids of pods nominated there
        self.nominated: dict[str, dict[str, PodInfo]] = {}

    # -- sizes, for the scheduler_pending_pods metric ------------------------------------------

    def pending_pods(self) -> dict[str, int]:
        return {"active": len(self._active_items), "backoff": len(self._backoff),
                "unschedulable": len(self._unschedulable)}

    def __contains__(self, uid: object) -> bool:
        return uid in self._active_items or uid in self._backoff or uid in self._unschedulable

    # -- adding and popping ---------------------------------------------------------------------

    def add(self, pod: Obj) -> None:
        """A new pending pod (informer add): straight to activeQ."""
        uid = pod_uid(pod)
        self._backoff.pop(uid, None)
        self._unschedulable.pop(uid, None)
        self._push_active(QueuedPodInfo(PodInfo.of(pod), time.monotonic()))

    def _push_active(self, queued: QueuedPodInfo) -> None:
        uid = pod_uid(queued.pod)
        old = self._active_items.pop(uid, None)
        if old is not None:
            old.removed = True
        item = _HeapItem(queued, self._less, next(self._sequence))
        self._active_items[uid] = item
        heapq.heappush(self._active, item)
        while self._getters:
            getter = self._getters.pop()
            if not getter.done():
                getter.set_result(None)
                break

    async def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule (waits for one); None once the queue is closed."""
        while True:
            while self._active:
                item = heapq.heappop(self._active)
                if item.removed:
                    continue
                uid = pod_uid(item.queued.pod)
                del self._active_items[uid]
                item.queued.attempts += 1
                if item.queued.initial_attempt_timestamp is None:
                    item.queued.initial_attempt_timestamp = time.monotonic()
                self.scheduling_cycle += 1
                return item.queued
            if self._closed:
                return None
            getter = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            await getter

    def update(self, old: Obj, new: Obj) -> None:
        """A pending pod changed: refresh it where it waits; a changed spec, labels or
        annotations may make it schedulable, so an unschedulable pod is retried."""
        uid = pod_uid(new)
        item = self._active_items.get(uid)
        if item is not None:
            item.queued.pod_info = PodInfo.of(new)
            return
        if uid in self._backoff:
            self._backoff[uid].pod_info = PodInfo.of(new)
            return
        queued = self._unschedulable.get(uid)
        if queued is not None:
            queued.pod_info = PodInfo.of(new)
            if _scheduling_relevant(old) != _scheduling_relevant(new):
                del self._unschedulable[uid]
                self._requeue(queued)
            return
        self.add(new)

    def delete(self, pod: Obj) -> None:
        uid = pod_uid(pod)
        item = self._active_items.pop(uid, None)
        if item is not None:
            item.removed = True
        self._backoff.pop(uid, None)
        self._unschedulable.pop(uid, None)
        self.delete_nominated(pod)

    # -- after a failed attempt -----------------------------------------------------------------

    def backoff_duration(self, queued: QueuedPodInfo) -> float:
        """1 s doubling per attempt, capped at 10 s (podInitialBackoff, podMaxBackoff)."""
        return min(self.initial_backoff * 2 ** max(queued.attempts - 1, 0), self.max_backoff)

    def _backoff_expired(self, queued: QueuedPodInfo) -> bool:
        return time.monotonic() >= queued.timestamp + self.backoff_duration(queued)

    def add_unschedulable(self, queued: QueuedPodInfo, cycle: int) -> None:
        """A pod the cycle could not place: wait in unschedulable for a helpful event, or
        in backoffQ if such an event already arrived while it was being scheduled (or the
        failure was an error rather than a rejection)."""
        uid = pod_uid(queued.pod)
        if uid in self:
            return
        queued.timestamp = time.monotonic()
        if self._move_request_cycle >= cycle or not queued.unschedulable_plugins:
            self._backoff[uid] = queued
        else:
            self._unschedulable[uid] = queued

    def _requeue(self, queued: QueuedPodInfo) -> None:
        if self._backoff_expired(queued):
            self._push_active(queued)
        else:
            self._backoff[pod_uid(queued.pod)] = queued

    def move_all_to_active_or_backoff(self, event: ClusterEvent,
                                      pre_check: Callable[[Obj], bool] | None = None) -> None:
        """A cluster event happened: retry the unschedulable pods it may help (those
        rejected by a plugin that registered this event)."""
        moved = [uid for uid, queued in self._unschedulable.items()
                 if self._may_help(queued, event) and (pre_check is None or
                                                        pre_check(queued.pod))]
        for uid in moved:
            self._requeue(self._unschedulable.pop(uid))
        self._move_request_cycle = self.scheduling_cycle

    def _may_help(self, queued: QueuedPodInfo, event: ClusterEvent) -> bool:
        if event == WILDCARD or not queued.unschedulable_plugins:
            return True
        for plugin in queued.unschedulable_plugins:
            for registered in self._events_for_plugin(plugin):
                if registered == WILDCARD:
                    return True
                if registered.resource in (event.resource, "*") and _actions_match(
                        registered.action, event.action):
                    return True
        return False

    def flush(self) -> None:
        """flushBackoffQCompleted and flushUnschedulablePodsLeftover."""
        now = time.monotonic()
        for uid in [uid for uid, q in self._backoff.items() if self._backoff_expired(q)]:
            self._push_active(self._backoff.pop(uid))
        stale = [uid for uid, q in self._unschedulable.items()
                 if now - q.timestamp > MAX_IN_UNSCHEDULABLE]
        for uid in stale:
            self._requeue(self._unschedulable.pop(uid))

    async def run_flusher(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_PERIOD)
            self.flush()

    def close(self) -> None:
        self._closed = True
        for getter in self._getters:
            if not getter.done():
                getter.set_result(None)
        self._getters.clear()

    # -- nominated pods (preemption) -------------------------------------------------------------

    def add_nominated(self, pod_info: PodInfo, node_name: str) -> None:
        self.delete_nominated(pod_info.pod)
        if node_name:
            self.nominated.setdefault(node_name, {})[pod_info.uid] = pod_info

    def delete_nominated(self, pod: Obj) -> None:
        uid = pod_uid(pod)
        for node in list(self.nominated):
            self.nominated[node].pop(uid, None)
            if not self.nominated[node]:
                del self.nominated[node]

    def nominated_node_names(self) -> KeysView[str]:
        """The nodes that have pods nominated to them."""
        return self.nominated.keys()

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list((self.nominated.get(node_name) or {}).values())


def _actions_match(registered: str, happened: str) -> bool:
    """A plugin registered for "Update" hears every update; one registered for
    "UpdateNodeLabel" only that kind of update."""
    return registered in ("*", happened) or (
        registered == "Update" and happened.startswith("Update"))


def _scheduling_relevant(pod: Obj) -> tuple[Any, ...]:
    """What in a pending pod can change whether it fits (upstream isPodUpdated ignores
    resourceVersion, generation and status)."""
    meta = pod.get("metadata") or {}
    return (meta.get("labels"), meta.get("annotations"), pod.get("spec"))
