"""The APF configuration controller (upstream's util/flowcontrol/apf_controller.go):
reads FlowSchemas and priority levels from the watch caches, splits the server's seats
among the levels, keeps one QueueSet per level, and classifies each request.

    seats: ServerCL = --max-requests-inflight + --max-mutating-requests-inflight
        per level  nominalCL = ceil(ServerCL * shares / sum of every level's shares)
                   lendableCL = round(nominalCL * lendablePercent / 100)
                   borrowingCL = round(nominalCL * borrowingLimitPercent / 100),
                                 ServerCL when unset
                   minCL = nominalCL - lendableCL, maxCL = nominalCL + borrowingCL
                   currentCL = nominalCL - lendableCL / 2 at first, then every 10 s
                   between minCL and maxCL by the levels' seat demand (borrowing.py)
    the configuration is read again when either cache changed since the last request;
    the mandatory objects are used as built in while the cluster lacks them (upstream)
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from minikube_py.api import Obj
from minikube_py.apiserver.flowcontrol.bootstrap import (
    CATCH_ALL,
    EXEMPT,
    MANDATORY_FLOW_SCHEMAS,
    MANDATORY_PRIORITY_LEVELS,
)
from minikube_py.apiserver.flowcontrol.borrowing import (
    ADJUSTMENT_PERIOD,
    AllocItem,
    SeatDemandStats,
    compute_concurrency_allocation,
)
from minikube_py.apiserver.flowcontrol.queueset import QueueSet
from minikube_py.apiserver.flowcontrol.rule import (
    RequestDigest,
    flow_distinguisher,
    hash_flow_id,
    matches_flow_schema,
    sort_flow_schemas,
)

log = logging.getLogger("minikube_py.apiserver")

MAX_SEATS_PERCENT = 0.15  # priorityLevelMaxSeatsPercent
MAX_SEATS_CAP = 10  # the work estimator's own cap
OBJECTS_PER_SEAT = 100  # the LIST work estimator's objectsPerSeat
CLASSIFIED_KEPT = 4096
"""How many request shapes' classifications are kept (all are forgotten when full)."""


class ConfigCache(Protocol):
    """What the controller reads of a watch cache."""

    changes: int

    def list(self, namespace_prefix: str = "") -> list[Obj]: ...


@dataclass(frozen=True)
class ConcurrencyLimits:
    """One level's share of the server's seats."""

    nominal: int
    lendable: int
    borrowing: int

    @property
    def minimum(self) -> int:
        return self.nominal - self.lendable

    @property
    def maximum(self) -> int:
        return self.nominal + self.borrowing

    @property
    def initial(self) -> int:
        """The currentCL a new level starts with."""
        return self.nominal - self.lendable // 2


def _shares(level: Obj) -> tuple[int, int | None, int | None]:
    """plSpecCommons: (nominalConcurrencyShares, lendablePercent, borrowingLimitPercent)."""
    spec = level.get("spec") or {}
    if spec.get("type") == "Exempt":
        exempt = spec.get("exempt") or {}
        return exempt.get("nominalConcurrencyShares", 0), exempt.get("lendablePercent"), None
    limited = spec.get("limited") or {}
    return (limited.get("nominalConcurrencyShares", 30), limited.get("lendablePercent"),
            limited.get("borrowingLimitPercent"))


def go_round(value: float) -> int:
    """Go's math.Round: halves away from zero (Python's round takes halves to even)."""
    return int(math.floor(value + 0.5)) if value >= 0 else -int(math.floor(-value + 0.5))


def compute_concurrency_limits(levels: list[Obj], server_concurrency_limit: int
                               ) -> dict[str, ConcurrencyLimits]:
    """finishQueueSetReconfigsLocked: each level's nominal, lendable and borrowing seats."""
    share_sum = sum(_shares(level)[0] for level in levels)
    limits = {}
    for level in levels:
        shares, lendable_percent, borrowing_percent = _shares(level)
        nominal = (math.ceil(server_concurrency_limit * shares / share_sum)
                   if share_sum else 0)
        lendable = go_round(nominal * lendable_percent / 100) if lendable_percent else 0
        borrowing = (go_round(nominal * borrowing_percent / 100) if borrowing_percent is not None
                     else server_concurrency_limit)
        limits[level["metadata"]["name"]] = ConcurrencyLimits(nominal, lendable, borrowing)
    return limits


def max_seats(nominal: int, hand_size: int) -> int:
    """The most seats one request of a queuing level may take: max(1, min(15% of
    nominalCL, nominalCL / handSize)), and at most the work estimator's 10 (which is
    all a level that does not queue is held to)."""
    return min(MAX_SEATS_CAP, max(1, min(math.ceil(nominal * MAX_SEATS_PERCENT),
                                         nominal // hand_size)))


@dataclass(frozen=True)
class Classification:
    """Where a request goes: its schema, level, flow, and the level's queues."""

    flow_schema_name: str
    flow_schema_uid: str
    priority_level_name: str
    priority_level_uid: str
    flow_hash: int
    queue_set: QueueSet
    max_seats: int


class APFController:
    """Classifies requests and owns every level's QueueSet."""

    def __init__(self, server_concurrency_limit: int, flow_schemas: ConfigCache,
                 priority_levels: ConfigCache,
                 on_configured: Callable[[dict[str, ConcurrencyLimits], dict[str, int]], None]
                 | None = None) -> None:
        """`on_configured` hears each level's limits and currentCL whenever they change
        (the server's apiserver_flowcontrol_*_limit_seats gauges)."""
        self.server_concurrency_limit = server_concurrency_limit
        self.on_configured = on_configured
        self.caches = (flow_schemas, priority_levels)
        self.queue_sets: dict[str, QueueSet] = {}
        self.limits: dict[str, ConcurrencyLimits] = {}
        self.current: dict[str, int] = {}
        self.demand: dict[str, SeatDemandStats] = {}
        self._levels: dict[str, Obj] = {}
        self._max_seats: dict[str, int] = {}
        self._schemas: list[Obj] = []
        self._seen: tuple[int, int] | None = None
        self._classified: dict[tuple[object, ...], Classification] = {}

    def classify(self, digest: RequestDigest) -> Classification:
        """The first schema, by precedence, whose rules match and whose level exists
        (catch-all matches everyone), and the request's flow in it. The answer depends
        on the request's user, verb and resource, and only a non-resource request's path:
        it is kept for the next request alike until the configuration changes."""
        self._refresh()
        key = (digest.user.name, tuple(digest.user.groups), digest.verb, digest.is_resource_request,
               digest.api_group, digest.resource, digest.subresource, digest.namespace,
               "" if digest.is_resource_request else digest.path)
        known = self._classified.get(key)
        if known is None:
            if len(self._classified) >= CLASSIFIED_KEPT:
                self._classified.clear()
            known = self._classified[key] = self._match(digest)
        return known

    def _match(self, digest: RequestDigest) -> Classification:
        for flow_schema in self._schemas:
            level_name = flow_schema["spec"]["priorityLevelConfiguration"]["name"]
            level = self._levels.get(level_name)
            if level is None or not matches_flow_schema(digest, flow_schema):
                continue
            name = flow_schema["metadata"]["name"]
            return Classification(
                name, flow_schema["metadata"].get("uid", ""), level_name,
                level["metadata"].get("uid", ""),
                hash_flow_id(name, flow_distinguisher(digest, flow_schema)),
                self.queue_sets[level_name], self._max_seats.get(level_name, 1))
        raise AssertionError("the catch-all FlowSchema matches every request")

    def _refresh(self) -> None:
        """Read the configuration again if either cache changed."""
        seen = (self.caches[0].changes, self.caches[1].changes)
        if seen == self._seen:
            return
        self._seen = seen
        self._classified.clear()
        levels = {level["metadata"]["name"]: level for level in self.caches[1].list()}
        for mandatory in MANDATORY_PRIORITY_LEVELS:
            levels.setdefault(mandatory["metadata"]["name"], copy.deepcopy(mandatory))
        schemas = {schema["metadata"]["name"]: schema for schema in self.caches[0].list()}
        for mandatory in MANDATORY_FLOW_SCHEMAS:
            schemas.setdefault(mandatory["metadata"]["name"], copy.deepcopy(mandatory))
        self._levels = levels
        self._schemas = sort_flow_schemas(list(schemas.values()))
        self.limits = compute_concurrency_limits(list(levels.values()),
                                                 self.server_concurrency_limit)
        for name, level in levels.items():
            spec = level.get("spec") or {}
            exempt = spec.get("type") == "Exempt"
            queue_set = self.queue_sets.get(name)
            if queue_set is None or queue_set.exempt != exempt:
                queue_set = self.queue_sets[name] = QueueSet(name, exempt=exempt)
            queuing = ((spec.get("limited") or {}).get("limitResponse") or {}).get("queuing")
            limits = self.limits[name]
            current = self.current.setdefault(name, limits.initial)
            self.demand.setdefault(name, SeatDemandStats())
            if isinstance(queuing, dict):
                queue_set.configure(current, queuing.get("queues", 0),
                                    queuing.get("handSize", 0),
                                    queuing.get("queueLengthLimit", 0))
                self._max_seats[name] = max_seats(limits.nominal, queuing.get("handSize", 1))
            else:
                queue_set.configure(current)
                self._max_seats[name] = MAX_SEATS_CAP
        for name in list(self.queue_sets):
            if name not in levels and name not in (EXEMPT, CATCH_ALL):
                del self.queue_sets[name]
                self.current.pop(name, None)
                self.demand.pop(name, None)
        if self.on_configured is not None:
            self.on_configured(self.limits, self.current)

    async def run(self) -> None:
        """updateBorrowing every ADJUSTMENT_PERIOD, until cancelled."""
        while True:
            await asyncio.sleep(ADJUSTMENT_PERIOD)
            self.update_borrowing()

    def update_borrowing(self) -> None:
        """updateBorrowingLocked: each level's currentCL from its seat demand of the last
        period (borrowing.py's pipeline)."""
        self._refresh()
        remaining = sum(limits.nominal for limits in self.limits.values())
        lower_bounds: dict[str, int] = {}
        items: dict[str, AllocItem] = {}
        for name, queue_set in self.queue_sets.items():
            limits, stats = self.limits[name], self.demand[name]
            stats.update(queue_set.seat_demand.reset())
            if queue_set.exempt:
                self.current[name] = max(limits.minimum, stats.high_watermark)
                remaining -= self.current[name]
                continue
            lower = lower_bounds[name] = max(limits.minimum,
                                             min(limits.nominal, stats.high_watermark))
            items[name] = AllocItem(max(lower, stats.smoothed), lower, limits.maximum)
        minimum_sum = sum(self.limits[name].minimum for name in items)
        lower_sum = sum(lower_bounds.values())
        if remaining <= minimum_sum:
            for name in items:
                self.current[name] = self.limits[name].minimum
        elif remaining <= lower_sum:
            share = (remaining - minimum_sum) / (lower_sum - minimum_sum)
            for name in items:
                minimum = self.limits[name].minimum
                self.current[name] = minimum + go_round((lower_bounds[name] - minimum) * share)
        else:
            try:
                allocations, _ = compute_concurrency_allocation(remaining, list(items.values()))
            except ValueError as err:  # upstream's backstop: keep the current limits
                log.error("unable to derive new concurrency limits: %s", err)
                allocations = [float(self.current[name]) for name in items]
            for name, allocation in zip(items, allocations, strict=True):
                self.current[name] = go_round(allocation)
        for name, queue_set in self.queue_sets.items():
            queue_set.set_concurrency_limit(self.current[name])
        if self.on_configured is not None:
            self.on_configured(self.limits, self.current)

    def dump_priority_levels(self) -> str:
        """/debug/api_priority_and_fairness/dump_priority_levels: one row per level."""
        self._refresh()
        rows = [["PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing",
                 "WaitingRequests", "ExecutingRequests", "DispatchedRequests",
                 "RejectedRequests", "TimedoutRequests", "CancelledRequests"]]
        for name in sorted(self.queue_sets):
            queue_set = self.queue_sets[name]
            idle = queue_set.waiting_requests == 0 and queue_set.requests_executing == 0
            rejected = queue_set.rejected_total
            rows.append([name, str(queue_set.active_queues()), str(idle).lower(), "false",
                         str(queue_set.waiting_requests), str(queue_set.requests_executing),
                         str(queue_set.dispatched_total),
                         str(rejected["queue-full"] + rejected["concurrency-limit"]),
                         str(rejected["time-out"]), str(rejected["cancelled"])])
        return tab_rows(rows)

    def dump_queues(self) -> str:
        """/debug/api_priority_and_fairness/dump_queues: one row per queue. Virtual time
        and work are in seats (every request counts as the same duration), printed as
        upstream prints its seat-seconds."""
        self._refresh()
        rows = [["PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests",
                 "SeatsInUse", "NextDispatchR", "InitialSeatsSum", "MaxSeatsSum",
                 "TotalWorkSum"]]
        for name in sorted(self.queue_sets):
            for index, queue in enumerate(self.queue_sets[name].queues):
                waiting = queue.seats_waiting
                rows.append([name, str(index), str(len(queue.waiting)),
                             str(queue.requests_executing), str(queue.seats_in_use),
                             f"{queue.virtual_start:.9f}ss", str(waiting), str(waiting),
                             f"{float(waiting):.9f}ss"])
        return tab_rows(rows)


def tab_rows(rows: list[list[str]]) -> str:
    """Rows as upstream's debug dumps write them: cells joined by ",\t" through a
    tabwriter (columns at least 8 wide, one space of padding)."""
    widths = [max(8, *(len(row[i]) + 2 for row in rows)) for i in range(len(rows[0]) - 1)]
    return "".join("".join(f"{cell},".ljust(width) for cell, width in zip(
        row[:-1], widths, strict=True)) + row[-1] + "\n" for row in rows)
