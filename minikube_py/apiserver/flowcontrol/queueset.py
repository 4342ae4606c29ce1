"""One priority level's queues (upstream's fairqueuing/queueset): shuffle-sharded fair
queuing of requests that each need some seats.

    a request of flow hash H asking for W seats:
        exempt level                        -> run at once
        nothing waiting, W seats free       -> run at once
        level rejects instead of queuing    -> rejected (concurrency-limit)
        else: deal H a hand of queues; take the one with the fewest seats waiting
              plus executing; full (queueLengthLimit) -> rejected (queue-full)
              else wait there, until dispatched, or the wait limit (time-out)
    dispatch, whenever seats free up or a request arrives:
        from the non-empty queue with the least virtual start (virtual time advances
        by the seats each dispatched request takes), while its head fits (a request
        wider than the whole limit runs alone when nothing else does)

Upstream measures virtual time in seat-seconds with each request's expected duration;
here every request counts as the same duration, so a queue's virtual start grows by the
seats of what it dispatched: start-time fair queuing over seats.
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass, field

from minikube_py.apiserver.flowcontrol.borrowing import SeatDemandIntegrator
from minikube_py.apiserver.flowcontrol.shufflesharding import Dealer


@dataclass(eq=False)
class Waiting:
    """A request in a queue: its flow, its seats, the future its handler awaits, and the
    queue that dispatched it."""

    flow_hash: int
    seats: int
    dispatched: asyncio.Future[None] = field(default_factory=lambda: (
        asyncio.get_running_loop().create_future()))
    queue: Queue | None = None


@dataclass(eq=False)
class Queue:
    """One queue: its waiting requests, its virtual start, its seats executing."""

    waiting: collections.deque[Waiting] = field(default_factory=collections.deque)
    virtual_start: float = 0.0
    seats_in_use: int = 0
    requests_executing: int = 0
    seats_waiting: int = 0
    """The seats of the requests in `waiting`."""

    def push(self, request: Waiting) -> None:
        self.waiting.append(request)
        self.seats_waiting += request.seats

    def pop(self) -> Waiting:
        request = self.waiting.popleft()
        self.seats_waiting -= request.seats
        return request

    def remove(self, request: Waiting) -> None:
        self.waiting.remove(request)
        self.seats_waiting -= request.seats


class Rejected(Exception):
    """The request is not served; `reason` as upstream's rejected_requests_total labels it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class QueueSet:
    """The queues and seats of one priority level."""

    def __init__(self, name: str, *, exempt: bool = False) -> None:
        self.name = name
        self.exempt = exempt
        self.concurrency_limit = 0
        self.queue_length_limit = 0
        self.dealer: Dealer | None = None
        self.queues: list[Queue] = []
        self.seats_in_use = 0
        self.seats_waiting = 0
        self.waiting_requests = 0
        self.seat_demand = SeatDemandIntegrator()
        self.requests_executing = 0
        self.virtual_time = 0.0
        self.dispatched_total = 0
        self.rejected_total: collections.Counter[str] = collections.Counter()

    def configure(self, concurrency_limit: int, queues: int = 0, hand_size: int = 0,
                  queue_length_limit: int = 0) -> None:
        """Set the seats and the queuing (queues=0: reject instead of queuing). Requests
        already waiting are dealt again to the new queues."""
        self.concurrency_limit = concurrency_limit
        self.queue_length_limit = queue_length_limit
        if queues != len(self.queues) or (self.dealer is not None
                                          and self.dealer.hand_size != hand_size):
            waiting = [request for queue in self.queues for request in queue.waiting]
            self.dealer = Dealer(queues, hand_size) if queues else None
            self.queues = [Queue(virtual_start=self.virtual_time) for _ in range(queues)]
            for request in waiting:
                if self.dealer is None:  # the level rejects now: so do its queues
                    self._note_waiting(-request.seats, -1)
                    self.rejected_total["concurrency-limit"] += 1
                    request.dispatched.set_exception(Rejected("concurrency-limit"))
                    continue
                self._choose_queue(request.flow_hash).push(request)
        self._dispatch()

    def active_queues(self) -> int:
        """Queues with requests waiting."""
        return sum(1 for queue in self.queues if queue.waiting)

    async def acquire(self, flow_hash: int, seats: int, wait_limit: float) -> Queue | None:
        """StartRequest: return once the request may run (the queue it was dispatched
        from, None if it never queued); raise Rejected if it may not (a reconfiguration
        that stops the level queuing rejects its waiting requests too)."""
        if self.exempt:
            self._start(None, seats)
            return None
        if self.waiting_requests == 0 and self._fits(seats):
            self._start(None, seats)
            return None
        if self.dealer is None:
            self.rejected_total["concurrency-limit"] += 1
            raise Rejected("concurrency-limit")
        queue = self._choose_queue(flow_hash)
        if len(queue.waiting) >= self.queue_length_limit:
            self.rejected_total["queue-full"] += 1
            raise Rejected("queue-full")
        request = Waiting(flow_hash, seats)
        if not queue.waiting and not queue.seats_in_use:
            queue.virtual_start = max(queue.virtual_start, self.virtual_time)
        queue.push(request)
        self._note_waiting(seats, 1)
        self._dispatch()
        try:
            async with asyncio.timeout(wait_limit):
                await asyncio.shield(request.dispatched)
        except TimeoutError:
            if self._withdraw(request):
                self.rejected_total["time-out"] += 1
                raise Rejected("time-out") from None
        except asyncio.CancelledError:
            if not self._withdraw(request):
                self.release(request.queue, seats)
            self.rejected_total["cancelled"] += 1
            raise
        return request.queue

    def set_concurrency_limit(self, concurrency_limit: int) -> None:
        """A new currentCL (borrowing.py): dispatch whatever now fits."""
        self.concurrency_limit = concurrency_limit
        self._dispatch()

    def release(self, queue: Queue | None, seats: int, *, final_seats: int = 0,
                additional_latency: float = 0.0) -> None:
        """FinishRequest: the request is done; its seats come back now, but for
        `final_seats`, held `additional_latency` seconds more (the watch events a write
        sends out); then dispatch whatever fits."""
        self.requests_executing -= 1
        if queue is not None:
            queue.requests_executing -= 1
        if final_seats and additional_latency > 0:
            asyncio.get_running_loop().call_later(additional_latency, self._free, queue,
                                                  final_seats)
            seats -= final_seats
        self._free(queue, seats)

    def _free(self, queue: Queue | None, seats: int) -> None:
        self.seats_in_use -= seats
        self.seat_demand.set(self.seats_in_use + self.seats_waiting)
        if queue is not None:
            queue.seats_in_use -= seats
        self._dispatch()

    def _fits(self, seats: int) -> bool:
        return self.seats_in_use + seats <= self.concurrency_limit or self.seats_in_use == 0

    def _note_waiting(self, seats: int, requests: int) -> None:
        """Seats and requests that started (positive) or stopped (negative) waiting."""
        self.seats_waiting += seats
        self.waiting_requests += requests
        self.seat_demand.set(self.seats_in_use + self.seats_waiting)

    def _start(self, queue: Queue | None, seats: int) -> None:
        self.seats_in_use += seats
        self.seat_demand.set(self.seats_in_use + self.seats_waiting)
        self.requests_executing += 1
        self.dispatched_total += 1
        if queue is not None:
            queue.seats_in_use += seats
            queue.requests_executing += 1

    def _choose_queue(self, flow_hash: int) -> Queue:
        """shuffleShardAndRejectOrEnqueue's choice: of the flow's hand, the queue with the
        fewest seats waiting plus executing (the first such)."""
        assert self.dealer is not None
        best: Queue | None = None
        best_load = 0
        for card in self.dealer.deal_into_hand(flow_hash):
            queue = self.queues[card]
            load = queue.seats_waiting + queue.seats_in_use
            if best is None or load < best_load:
                best, best_load = queue, load
        assert best is not None
        return best

    def _dispatch(self) -> None:
        """dispatchAsMuchAsPossible: the fairest queue's head, while it fits."""
        while self.waiting_requests:
            queue = min((queue for queue in self.queues if queue.waiting),
                        key=lambda q: q.virtual_start)
            head = queue.waiting[0]
            if not self._fits(head.seats):
                return
            queue.pop()
            self.seats_waiting -= head.seats
            self.waiting_requests -= 1
            self.virtual_time = max(self.virtual_time, queue.virtual_start)
            queue.virtual_start += head.seats
            self._start(queue, head.seats)
            head.queue = queue
            head.dispatched.set_result(None)

    def _withdraw(self, request: Waiting) -> bool:
        """Take a request that stops waiting out of its queue; False if it was dispatched
        meanwhile (then it holds seats)."""
        if request.queue is not None:
            return False
        for queue in self.queues:
            if request in queue.waiting:
                queue.remove(request)
                self._note_waiting(-request.seats, -1)
                break
        if not request.dispatched.done():
            request.dispatched.cancel()
        return True
