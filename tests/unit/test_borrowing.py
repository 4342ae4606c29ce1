"""Borrowing and lending between priority levels: computeConcurrencyAllocation with
upstream's randomized property test (conc_alloc_test.go, fewer rounds), the seat demand
integrator, and a busy level borrowing the seats idle ones lend."""

from __future__ import annotations

import math
import random

import pytest

from minikube_py.apiserver.flowcontrol.borrowing import (
    MIN_TARGET,
    AllocItem,
    SeatDemandIntegrator,
    compute_concurrency_allocation,
)
from tests.unit.test_apf import ALICE, FLOODER, bootstrap_controller, digest

SLACK = 1e-10


def partition(rng: random.Random, n: int, total: float) -> list[float]:
    """n non-negative floats summing to total."""
    cuts = sorted(rng.random() for _ in range(n - 1))
    points = [0.0, *cuts, 1.0]
    return [(b - a) * total for a, b in zip(points, points[1:], strict=False)]


def random_problem(rng: random.Random) -> tuple[int, list[AllocItem]]:
    """test1ConcAlloc's three styles of problem, and zero-target classes."""
    size = rng.choice([0, 1, 2, 3, 4, 6, 9])
    items: list[AllocItem] = []
    required = 0
    style = rng.randrange(20) if size else -1
    if style == 0:  # bound from below
        required = rng.randrange(size * 3)
        for low in partition(rng, size, required):
            items.append(AllocItem(low + 2 * rng.random(), low, low + 3 * rng.random()))
    elif style == 1:  # bound from above
        required = rng.randrange(size * 3) + 1
        for high in partition(rng, size, required):
            low = high * max(0.0, 1.25 * rng.random() - 1)
            items.append(AllocItem(low + rng.random(), low, high))
    elif style > 1:
        for _ in range(size):
            low = max(0.0, rng.random() * 5 - 1)
            items.append(AllocItem(low + 2 * rng.random(), low, low + 3 * rng.random()))
        low_sum = sum(item.lower_bound for item in items)
        high_sum = sum(item.upper_bound for item in items)
        required = math.floor(low_sum + (high_sum - low_sum) * rng.random() + 0.5)
    while rng.random() < 0.25:
        items.insert(rng.randrange(len(items) + 1),
                     AllocItem(0.0, 0.0, rng.random() + 0.00001))
    return required, items


def relative_difference(x: float, y: float) -> float:
    return abs(x - y) / max(abs(x), abs(y)) if x != y else 0.0


def test_allocations_sum_up_within_bounds_in_proportion_to_targets() -> None:
    rng = random.Random(1234567890)
    for _ in range(2000):
        required, items = random_problem(rng)
        low_sum = sum(item.lower_bound for item in items)
        high_sum = sum(item.upper_bound for item in items)
        impossible = low_sum - required > SLACK or required - high_sum > SLACK
        try:
            allocations, proportion = compute_concurrency_allocation(required, items)
        except ValueError:
            assert impossible, (required, items)
            continue
        assert not impossible, (required, items)
        assert relative_difference(required, sum(allocations)) <= SLACK, (required, items)
        for item, allocation in zip(items, allocations, strict=True):
            fair = proportion * max(item.target, MIN_TARGET)
            if fair <= item.lower_bound:
                assert allocation == item.lower_bound
            elif fair >= item.upper_bound:
                assert allocation == item.upper_bound
            else:
                assert relative_difference(fair, allocation) <= SLACK


def test_bounds_that_cannot_be_met_are_an_error() -> None:
    with pytest.raises(ValueError, match="lower bounds sum to 6"):
        compute_concurrency_allocation(5, [AllocItem(3, 3, 4), AllocItem(3, 3, 4)])
    with pytest.raises(ValueError, match="target 0 is 1, which is below its lower bound"):
        compute_concurrency_allocation(5, [AllocItem(1, 2, 4)])


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_integrator_averages_demand_over_time() -> None:
    clock = Clock()
    integrator = SeatDemandIntegrator(clock)
    integrator.set(4)
    clock.now += 1
    integrator.set(0)
    clock.now += 3
    results = integrator.reset()
    assert (results.duration, results.average, results.maximum) == (4, 1, 4)
    assert results.deviation == pytest.approx(math.sqrt(4 * 4 / 4 - 1))
    clock.now += 2
    assert integrator.reset().maximum == 0


def test_a_busy_level_borrows_what_idle_levels_lend() -> None:
    controller = bootstrap_controller(600)
    controller.classify(digest(ALICE, "GET", "/version"))
    clock = Clock()
    for queue_set in controller.queue_sets.values():
        queue_set.seat_demand = SeatDemandIntegrator(clock)
    busy = controller.queue_sets["workload-low"]
    busy.seat_demand.set(500)
    clock.now += 10
    controller.update_borrowing()
    limits = controller.limits
    assert controller.current["workload-low"] > limits["workload-low"].nominal
    assert controller.current["workload-low"] <= limits["workload-low"].maximum
    assert busy.concurrency_limit == controller.current["workload-low"]
    for idle in ("global-default", "workload-high", "system", "node-high"):
        assert controller.current[idle] == limits[idle].minimum, idle
    assert controller.current["leader-election"] == limits["leader-election"].nominal
    limited = [name for name in controller.queue_sets if name != "exempt"]
    assert sum(controller.current[name] for name in limited) == pytest.approx(
        sum(limit.nominal for limit in limits.values()), abs=len(limited))
    assert controller.classify(digest(FLOODER, "GET", "/api/v1/pods")).queue_set is busy
