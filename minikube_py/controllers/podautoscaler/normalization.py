"""From the metrics' recommendation to the replicas the HPA sets (upstream's
normalizeDesiredReplicas / normalizeDesiredReplicasWithBehaviors in horizontal.go).

Without spec.behavior (an HPA made through autoscaling/v1 before defaults filled it):

    stabilize:  the highest recommendation of the downscale stabilization window
    limit:      [minReplicas, min(maxReplicas, max(2 * current, 4))]

With behavior (every HPA the API server defaulted):

    stabilize:  up to the lowest recommendation of the scale-up window, down to the
                highest of the scale-down window, never past the current count
    limit:      each policy allows, from the replicas at the start of its period (the
                scale events of that period undone), a number of Pods or a Percent;
                selectPolicy picks the largest change (Max), the smallest (Min) or none
                (Disabled); then minReplicas and maxReplicas

Recommendations and scale events are the controller's only memory, per HPA key, as
upstream keeps them in the controller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from minikube_py.api import Obj

MAX_INT32 = 2**31 - 1
MIN_INT32 = -(2**31)
SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0


@dataclass
class TimestampedRecommendation:
    recommendation: int
    timestamp: datetime


@dataclass
class TimestampedScaleEvent:
    replica_change: int  # absolute value
    timestamp: datetime
    outdated: bool = False


@dataclass
class NormalizationArg:
    """What normalization needs (upstream's NormalizationArg); behaviors are HPAScalingRules
    dicts with every field set (generate_scale_up_rules / generate_scale_down_rules)."""

    key: str
    scale_up_behavior: Obj
    scale_down_behavior: Obj
    min_replicas: int
    max_replicas: int
    current_replicas: int
    desired_replicas: int


def calculate_scale_up_limit(current_replicas: int) -> int:
    """The old fixed rate: double, or 4 pods, whichever is more."""
    return int(max(SCALE_UP_LIMIT_FACTOR * current_replicas, SCALE_UP_LIMIT_MINIMUM))


def convert_desired_replicas_with_rules(current: int, desired: int, hpa_min: int, hpa_max: int
                                        ) -> tuple[int, str, str]:
    """convertDesiredReplicasWithRules: the limits of an HPA without behavior."""
    scale_up_limit = calculate_scale_up_limit(current)
    if hpa_max > scale_up_limit:
        maximum, reason, message = (
            scale_up_limit, "ScaleUpLimit",
            "the desired replica count is increasing faster than the maximum scale rate")
    else:
        maximum, reason, message = (
            hpa_max, "TooManyReplicas",
            "the desired replica count is more than the maximum replica count")
    if desired < hpa_min:
        return (hpa_min, "TooFewReplicas",
                "the desired replica count is less than the minimum replica count")
    if desired > maximum:
        return maximum, reason, message
    return desired, "DesiredWithinRange", "the desired count is within the acceptable range"


def get_replicas_change_per_period(period_seconds: int, events: list[TimestampedScaleEvent],
                                   now: datetime) -> int:
    """getReplicasChangePerPeriod: the replicas the events of the last period changed."""
    cutoff = now - timedelta(seconds=period_seconds)
    return sum(event.replica_change for event in events if event.timestamp > cutoff)


def _policies(rules: Obj) -> list[Obj]:
    return [p for p in rules.get("policies") or [] if isinstance(p, dict)]


def calculate_scale_up_limit_with_scaling_rules(
        current: int, up_events: list[TimestampedScaleEvent],
        down_events: list[TimestampedScaleEvent], rules: Obj, now: datetime) -> int:
    """calculateScaleUpLimitWithScalingRules: the most replicas the policies allow now."""
    select = rules.get("selectPolicy")
    if select == "Disabled":
        return current
    pick, result = (min, MAX_INT32) if select == "Min" else (max, MIN_INT32)
    for policy in _policies(rules):
        period = int(policy.get("periodSeconds") or 0)
        start = (current - get_replicas_change_per_period(period, up_events, now)
                 + get_replicas_change_per_period(period, down_events, now))
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposed = start + value
        else:
            proposed = math.ceil(start * (1 + value / 100))
        result = pick(result, proposed)
    return result


def calculate_scale_down_limit_with_behaviors(
        current: int, up_events: list[TimestampedScaleEvent],
        down_events: list[TimestampedScaleEvent], rules: Obj, now: datetime) -> int:
    """calculateScaleDownLimitWithBehaviors: the fewest replicas the policies allow now."""
    select = rules.get("selectPolicy")
    if select == "Disabled":
        return current
    pick, result = (max, MIN_INT32) if select == "Min" else (min, MAX_INT32)
    for policy in _policies(rules):
        period = int(policy.get("periodSeconds") or 0)
        start = (current - get_replicas_change_per_period(period, up_events, now)
                 + get_replicas_change_per_period(period, down_events, now))
        value = int(policy.get("value") or 0)
        if policy.get("type") == "Pods":
            proposed = start - value
        else:
            proposed = int(start * (1 - value / 100))
        result = pick(result, proposed)
    return result


def get_longest_policy_period(rules: Obj) -> int:
    return max((int(p.get("periodSeconds") or 0) for p in _policies(rules)), default=0)


def mark_scale_events_outdated(events: list[TimestampedScaleEvent], longest_period: int,
                               now: datetime) -> None:
    """Events older than every policy's period are marked for reuse."""
    cutoff = now - timedelta(seconds=longest_period)
    for event in events:
        if event.timestamp < cutoff:
            event.outdated = True


@dataclass
class ScalingHistory:
    """The controller's memory per HPA key: recent recommendations and scale events."""

    downscale_stabilisation_window: timedelta = timedelta(minutes=5)
    recommendations: dict[str, list[TimestampedRecommendation]] = field(default_factory=dict)
    scale_up_events: dict[str, list[TimestampedScaleEvent]] = field(default_factory=dict)
    scale_down_events: dict[str, list[TimestampedScaleEvent]] = field(default_factory=dict)

    def forget(self, key: str) -> None:
        """An HPA was deleted: drop what was kept for it."""
        for memory in (self.recommendations, self.scale_up_events, self.scale_down_events):
            memory.pop(key, None)

    def stabilize_recommendation(self, key: str, prenormalized: int, now: datetime) -> int:
        """stabilizeRecommendation: the highest recommendation of the downscale window;
        the new one replaces an expired one, or is added."""
        highest = prenormalized
        cutoff = now - self.downscale_stabilisation_window
        records = self.recommendations.setdefault(key, [])
        old_index: int | None = None
        for i, record in enumerate(records):
            if record.timestamp < cutoff:
                old_index = i
            elif record.recommendation > highest:
                highest = record.recommendation
        new = TimestampedRecommendation(prenormalized, now)
        if old_index is not None:
            records[old_index] = new
        else:
            records.append(new)
        return highest

    def stabilize_recommendation_with_behaviors(self, args: NormalizationArg, now: datetime
                                                ) -> tuple[int, str, str]:
        """stabilizeRecommendationWithBehaviors: the recommendation kept between the lowest
        of the scale-up window and the highest of the scale-down window."""
        up_window = int(args.scale_up_behavior.get("stabilizationWindowSeconds") or 0)
        down_window = int(args.scale_down_behavior.get("stabilizationWindowSeconds") or 0)
        up_cutoff = now - timedelta(seconds=up_window)
        down_cutoff = now - timedelta(seconds=down_window)
        up_recommendation = down_recommendation = args.desired_replicas
        records = self.recommendations.setdefault(args.key, [])
        old_index: int | None = None
        for i, record in enumerate(records):
            if record.timestamp > up_cutoff:
                up_recommendation = min(record.recommendation, up_recommendation)
            if record.timestamp > down_cutoff:
                down_recommendation = max(record.recommendation, down_recommendation)
            if record.timestamp < up_cutoff and record.timestamp < down_cutoff:
                old_index = i
        recommendation = max(args.current_replicas, up_recommendation)
        recommendation = min(recommendation, down_recommendation)
        new = TimestampedRecommendation(args.desired_replicas, now)
        if old_index is not None:
            records[old_index] = new
        else:
            records.append(new)
        if args.desired_replicas >= args.current_replicas:
            return (recommendation, "ScaleUpStabilized",
                    "recent recommendations were lower than current one, applying the lowest "
                    "recent recommendation")
        return (recommendation, "ScaleDownStabilized",
                "recent recommendations were higher than current one, applying the highest "
                "recent recommendation")

    def convert_desired_replicas_with_behavior_rate(self, args: NormalizationArg,
                                                    now: datetime) -> tuple[int, str, str]:
        """convertDesiredReplicasWithBehaviorRate: the policies' limit, then min/max."""
        up_events = self.scale_up_events.get(args.key, [])
        down_events = self.scale_down_events.get(args.key, [])
        if args.desired_replicas > args.current_replicas:
            limit = calculate_scale_up_limit_with_scaling_rules(
                args.current_replicas, up_events, down_events, args.scale_up_behavior, now)
            limit = max(limit, args.current_replicas)
            if args.max_replicas > limit:
                maximum, reason, message = (
                    limit, "ScaleUpLimit",
                    "the desired replica count is increasing faster than the maximum scale "
                    "rate")
            else:
                maximum, reason, message = (
                    args.max_replicas, "TooManyReplicas",
                    "the desired replica count is more than the maximum replica count")
            if args.desired_replicas > maximum:
                return maximum, reason, message
        elif args.desired_replicas < args.current_replicas:
            limit = calculate_scale_down_limit_with_behaviors(
                args.current_replicas, up_events, down_events, args.scale_down_behavior, now)
            limit = min(limit, args.current_replicas)
            if args.min_replicas < limit:
                minimum, reason, message = (
                    limit, "ScaleDownLimit",
                    "the desired replica count is decreasing faster than the maximum scale "
                    "rate")
            else:
                minimum, reason, message = (
                    args.min_replicas, "TooFewReplicas",
                    "the desired replica count is less than the minimum replica count")
            if args.desired_replicas < minimum:
                return minimum, reason, message
        return (args.desired_replicas, "DesiredWithinRange",
                "the desired count is within the acceptable range")

    def store_scale_event(self, behavior: Obj | None, key: str, previous: int, new: int,
                          now: datetime) -> None:
        """storeScaleEvent: remember a scale (only HPAs with behavior use them), reusing an
        event older than every policy's period."""
        if behavior is None:
            return
        if new > previous:
            events = self.scale_up_events.setdefault(key, [])
            rules, change = behavior.get("scaleUp") or {}, new - previous
        else:
            events = self.scale_down_events.setdefault(key, [])
            rules, change = behavior.get("scaleDown") or {}, previous - new
        mark_scale_events_outdated(events, get_longest_policy_period(rules), now)
        old_index: int | None = None
        for i, event in enumerate(events):
            if event.outdated:
                old_index = i
        event = TimestampedScaleEvent(change, now)
        if old_index is not None:
            events[old_index] = event
        else:
            events.append(event)
