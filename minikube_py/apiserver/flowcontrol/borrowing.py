"""Borrowing and lending of seats between priority levels (upstream's conc_alloc.go and
apf_controller.go's updateBorrowing): every 10 s each level's currentCL is set from its
seat demand over the last period.

    seat demand: seats executing plus seats waiting, integrated over time (average,
    deviation, high watermark); smoothed = max(avg + dev, 0.977 * smoothed + 0.023 *
    (avg + dev))
    exempt levels take max(minCL, high watermark) first
    each limited level gets between max(minCL, min(nominalCL, high watermark)) and maxCL,
    the seats left shared in proportion to max(that lower bound, smoothed demand):
    computeConcurrencyAllocation finds the one proportion that makes them sum up
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

MIN_TARGET = 0.001
EPSILON = 0.0000001
SMOOTHING_COEFFICIENT = 0.977  # seatDemandSmoothingCoefficient
ADJUSTMENT_PERIOD = 10.0  # borrowingAdjustmentPeriod, seconds


@dataclass(frozen=True)
class AllocItem:
    """One level of the allocation problem: its target and bounds."""

    target: float
    lower_bound: float
    upper_bound: float


def compute_concurrency_allocation(required_sum: int, items: list[AllocItem]
                                   ) -> tuple[list[float], float]:
    """computeConcurrencyAllocation: allocations within each item's bounds, summing to
    `required_sum`, each the same proportion (returned too) of its target unless a bound
    holds it. ValueError when the bounds make that impossible."""
    targets = []
    for index, item in enumerate(items):
        if item.lower_bound < 0:
            raise ValueError(f"lower bound {index} is {item.lower_bound} but negative lower "
                             "bounds are not allowed")
        if item.target < item.lower_bound:
            raise ValueError(f"target {index} is {item.target}, which is below its lower "
                             f"bound of {item.lower_bound}")
        if item.upper_bound < item.lower_bound:
            raise ValueError(f"upper bound {index} is {item.upper_bound} but should not be "
                             f"less than the lower bound {item.lower_bound}")
        targets.append(max(item.target, MIN_TARGET))
    low_sum = sum(item.lower_bound for item in items)
    high_sum = sum(item.upper_bound for item in items)
    if low_sum - required_sum > EPSILON:
        raise ValueError(f"lower bounds sum to {low_sum}, which is higher than the required "
                         f"sum of {required_sum}")
    if required_sum - high_sum > EPSILON:
        raise ValueError(f"upper bounds sum to {high_sum}, which is lower than the required "
                         f"sum of {required_sum}")
    if required_sum == 0:
        return [0.0] * len(items), 0.0
    relative_lows = [item.lower_bound / target for item, target in zip(items, targets,
                                                                         strict=True)]
    relative_highs = [item.upper_bound / target for item, target in zip(items, targets,
                                                                          strict=True)]
    if low_sum - required_sum > -EPSILON:
        return [item.lower_bound for item in items], min(relative_lows)
    if required_sum - high_sum > -EPSILON:
        return [item.upper_bound for item in items], max(relative_highs)

    def allocations(proportion: float) -> list[float]:
        return [max(item.lower_bound, min(item.upper_bound, proportion * target))
                for item, target in zip(items, targets, strict=True)]

    # The sum is piecewise linear and non-decreasing in the proportion, with its bends at
    # the relative bounds: find the segment that reaches the required sum.
    bends = sorted(set(relative_lows + relative_highs))
    previous, previous_sum = bends[0], sum(allocations(bends[0]))
    proportion = bends[-1]
    for bend in bends[1:]:
        bend_sum = sum(allocations(bend))
        if bend_sum >= required_sum:
            proportion = previous + (required_sum - previous_sum) * (bend - previous) / (
                bend_sum - previous_sum)
            break
        previous, previous_sum = bend, bend_sum
    return allocations(proportion), proportion


@dataclass(frozen=True)
class IntegratorResults:
    """A period's seat demand: how long, its average, deviation and maximum."""

    duration: float
    average: float
    deviation: float
    maximum: float


class SeatDemandIntegrator:
    """Integrates a level's seat demand over time (upstream's fairqueuing Integrator)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.value = 0.0
        self._start = self._last = clock()
        self._integral = self._squares = 0.0
        self._maximum = 0.0

    def set(self, value: float) -> None:
        """The demand changed to `value`."""
        self._advance()
        self.value = value
        self._maximum = max(self._maximum, value)

    def reset(self) -> IntegratorResults:
        """The period's results; a new period starts at the current value."""
        self._advance()
        duration = self._last - self._start
        average = self._integral / duration if duration > 0 else 0.0
        variance = self._squares / duration - average * average if duration > 0 else 0.0
        results = IntegratorResults(duration, average, math.sqrt(max(0.0, variance)),
                                    self._maximum)
        self._start = self._last
        self._integral = self._squares = 0.0
        self._maximum = self.value
        return results

    def _advance(self) -> None:
        now = self.clock()
        elapsed = now - self._last
        self._integral += self.value * elapsed
        self._squares += self.value * self.value * elapsed
        self._last = now


@dataclass
class SeatDemandStats:
    """seatDemandStats: the last period's demand, and its smoothed envelope."""

    average: float = 0.0
    deviation: float = 0.0
    high_watermark: int = 0
    smoothed: float = 0.0

    def update(self, results: IntegratorResults) -> None:
        """update: the high watermark always; the rest when the period had a duration."""
        self.high_watermark = math.floor(results.maximum + 0.5)
        if results.duration <= 0:
            return
        self.average, self.deviation = results.average, results.deviation
        envelope = results.average + results.deviation
        self.smoothed = max(envelope, SMOOTHING_COEFFICIENT * self.smoothed
                            + (1 - SMOOTHING_COEFFICIENT) * envelope)
