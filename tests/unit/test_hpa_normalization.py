"""Stabilization windows and behavior policies against upstream's horizontal_test.go tables
(TestNormalizeDesiredReplicas, TestScalingWithRules, TestNormalizeDesiredReplicasWithBehavior,
TestStoreScaleEvents): the same inputs, the same replicas and conditions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.autoscaling import generate_scale_down_rules, generate_scale_up_rules
from minikube_py.controllers.podautoscaler.normalization import (
    NormalizationArg,
    ScalingHistory,
    TimestampedRecommendation,
    TimestampedScaleEvent,
    calculate_scale_down_limit_with_behaviors,
    convert_desired_replicas_with_rules,
    get_replicas_change_per_period,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def ago(**delta: float) -> datetime:
    return NOW - timedelta(**delta)


def rules(pods: int, pods_period: int, percent: int, percent_period: int, window: int) -> Obj:
    """generateScalingRules."""
    generated: Obj = {"stabilizationWindowSeconds": window, "selectPolicy": "Max",
                      "policies": []}
    if pods:
        generated["policies"].append({"type": "Pods", "value": pods,
                                      "periodSeconds": pods_period})
    if percent:
        generated["policies"].append({"type": "Percent", "value": percent,
                                      "periodSeconds": percent_period})
    return generated


def uniform_events(changes: list[int], period_seconds: int) -> list[TimestampedScaleEvent]:
    """generateEventsUniformDistribution: each event in the middle of its share of the
    last period (Go truncates the offset to whole seconds)."""
    segment = period_seconds / len(changes)
    return [TimestampedScaleEvent(change, ago(seconds=int(
        period_seconds - segment * (i + 1) + segment / 2))) for i, change in enumerate(changes)]


# (name, recommendations, prenormalized, expected, expected log length)
NORMALIZE_CASES = [
    ("empty log", [], 5, 5, 1),
    ("stabilize", [(4, ago(minutes=2)), (5, ago(minutes=1))], 3, 5, 3),
    ("no stabilize", [(1, ago(minutes=2)), (2, ago(minutes=1))], 3, 3, 3),
    ("no stabilize - old recommendations", [(10, ago(minutes=10)), (9, ago(minutes=9))], 3,
     3, 2),
    ("stabilize - old recommendations", [(10, ago(minutes=10)), (4, ago(minutes=1)),
                                         (5, ago(minutes=2)), (9, ago(minutes=9))], 3, 5, 4),
]


@pytest.mark.parametrize(("name", "records", "prenormalized", "expected", "length"),
                         NORMALIZE_CASES, ids=[case[0] for case in NORMALIZE_CASES])
def test_normalize_desired_replicas(name: str, records: list[tuple[int, datetime]],
                                    prenormalized: int, expected: int, length: int) -> None:
    history = ScalingHistory(timedelta(minutes=5), {
        "": [TimestampedRecommendation(r, t) for r, t in records]})
    assert history.stabilize_recommendation("", prenormalized, NOW) == expected
    assert len(history.recommendations[""]) == length


E = uniform_events
SCALING_CASES: list[dict[str, Any]] = [
    dict(name="prenormalized desired replicas within range", current=5, desired=7, min=3,
         max=8, replicas=7, condition="DesiredWithinRange"),
    dict(name="prenormalized desired replicas < minReplicas", current=3, desired=1, min=2,
         max=8, replicas=2, condition="TooFewReplicas"),
    dict(name="prenormalized desired replicas within range when minReplicas is 0", current=1,
         desired=0, min=0, max=10, replicas=0, condition="DesiredWithinRange"),
    dict(name="maxReplicas is the limit because maxReplicas < scaleUpLimit", current=20,
         desired=1000, min=1, max=10, replicas=10, condition="TooManyReplicas"),
    dict(name="desired replica count is more than the maximum replica count", current=100,
         desired=1000, min=100, max=150, replicas=150, condition="TooManyReplicas"),
    dict(name="scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user "
         "policies", current=3, desired=1000, min=1, max=2000, replicas=4,
         condition="ScaleUpLimit", up=rules(0, 0, 1, 60, 0)),
    dict(name="scaleUp with default behavior", min=1, max=1000, current=10, desired=50,
         replicas=20, condition="ScaleUpLimit"),
    dict(name="scaleUp with pods policy larger than percent policy", min=1, max=1000,
         up=rules(100, 60, 100, 60, 0), current=10, desired=500, replicas=110,
         condition="ScaleUpLimit"),
    dict(name="scaleUp with percent policy larger than pods policy", min=1, max=1000,
         up=rules(2, 60, 100, 60, 0), current=10, desired=500, replicas=20,
         condition="ScaleUpLimit"),
    dict(name="scaleUp with spec MaxReplicas limitation with large pod policy", min=1,
         max=1000, up=rules(100, 60, 0, 0, 0), current=10, desired=50, replicas=50,
         condition="DesiredWithinRange"),
    dict(name="scaleUp with spec MaxReplicas limitation with large percent policy", min=1,
         max=1000, up=rules(10000, 60, 0, 0, 0), current=10, desired=50, replicas=50,
         condition="DesiredWithinRange"),
    dict(name="scaleUp with pod policy limitation", min=1, max=1000,
         up=rules(30, 60, 0, 0, 0), current=10, desired=50, replicas=40,
         condition="ScaleUpLimit"),
    dict(name="scaleUp with percent policy limitation", min=1, max=1000,
         up=rules(0, 0, 200, 60, 0), current=10, desired=50, replicas=30,
         condition="ScaleUpLimit"),
    dict(name="scaleDown with percent policy larger than pod policy", min=1, max=1000,
         down=rules(20, 60, 1, 60, 300), current=100, desired=2, replicas=80,
         condition="ScaleDownLimit"),
    dict(name="scaleDown with pod policy larger than percent policy", min=1, max=1000,
         down=rules(2, 60, 1, 60, 300), current=100, desired=2, replicas=98,
         condition="ScaleDownLimit"),
    dict(name="scaleDown with spec MinReplicas=nil limitation with large pod policy", min=1,
         max=1000, down=rules(100, 60, 0, 0, 300), current=10, desired=0, replicas=1,
         condition="TooFewReplicas"),
    dict(name="scaleDown with spec MinReplicas limitation with large percent policy", min=5,
         max=1000, down=rules(0, 0, 100, 60, 300), current=10, desired=2, replicas=5,
         condition="TooFewReplicas"),
    dict(name="scaleDown with pod policy limitation", min=1, max=1000,
         down=rules(5, 60, 0, 0, 300), current=10, desired=2, replicas=5,
         condition="ScaleDownLimit"),
    dict(name="scaleDown with percent policy limitation", min=1, max=1000,
         down=rules(0, 0, 50, 60, 300), current=10, desired=5, replicas=5,
         condition="DesiredWithinRange"),
    dict(name="scaleUp with spec MaxReplicas limitation with large pod policy and events",
         up_events=E([1, 5, 9], 120), min=1, max=200, up=rules(300, 60, 0, 0, 0),
         current=100, desired=500, replicas=200, condition="TooManyReplicas"),
    dict(name="scaleUp with spec MaxReplicas limitation with large percent policy and "
         "events", up_events=E([1, 5, 9], 120), min=1, max=200,
         up=rules(0, 0, 10000, 60, 0), current=100, desired=500, replicas=200,
         condition="TooManyReplicas"),
    dict(name="scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of "
         "recent scale up events", up_events=E([1, 5, 9], 120), min=1, max=1000,
         up=rules(5, 120, 0, 0, 0), current=100, desired=500, replicas=100,
         condition="ScaleUpLimit"),
    dict(name="scaleUp with pod policy and previous scale up events",
         up_events=E([1, 5, 9], 120), min=1, max=1000, up=rules(150, 120, 0, 0, 0),
         current=100, desired=500, replicas=235, condition="ScaleUpLimit"),
    dict(name="scaleUp with percent policy and previous scale up events",
         up_events=E([1, 5, 9], 120), min=1, max=1000, up=rules(0, 0, 200, 120, 0),
         current=100, desired=500, replicas=255, condition="ScaleUpLimit"),
    dict(name="scaleUp with percent policy and previous scale up and down events",
         up_events=E([4], 120), down_events=E([2], 120), min=1, max=1000,
         up=rules(0, 0, 300, 300, 0), current=6, desired=24, replicas=16,
         condition="ScaleUpLimit"),
    dict(name="scaleDown with default policy and previous events",
         down_events=E([1, 5, 9], 120), min=1, max=1000, current=10, desired=5, replicas=5,
         condition="DesiredWithinRange"),
    dict(name="scaleDown with spec MinReplicas=nil limitation with large pod policy and "
         "previous events", down_events=E([1, 5, 9], 120), min=1, max=1000,
         down=rules(115, 120, 0, 0, 300), current=100, desired=0, replicas=1,
         condition="TooFewReplicas"),
    dict(name="scaleDown with spec MinReplicas limitation with large pod policy and previous "
         "events", down_events=E([1, 5, 9], 120), min=5, max=1000,
         down=rules(130, 120, 0, 0, 300), current=100, desired=0, replicas=5,
         condition="TooFewReplicas"),
    dict(name="scaleDown with spec MinReplicas limitation with large percent policy and "
         "previous events", down_events=E([1, 5, 9], 120), min=5, max=1000,
         down=rules(0, 0, 100, 120, 300), current=100, desired=2, replicas=5,
         condition="TooFewReplicas"),
    dict(name="scaleDown with pod policy limitation and previous events",
         down_events=E([1, 5, 9], 120), min=1, max=1000, down=rules(5, 120, 0, 0, 300),
         current=100, desired=2, replicas=100, condition="ScaleDownLimit"),
    dict(name="scaleDown with percent policy limitation and previous events",
         down_events=E([2, 4, 6], 120), min=1, max=1000, down=rules(0, 0, 50, 120, 300),
         current=100, desired=0, replicas=56, condition="ScaleDownLimit"),
    dict(name="scaleDown with percent policy and previous scale up and down events",
         up_events=E([2], 120), down_events=E([4], 120), min=1, max=1000,
         down=rules(0, 0, 50, 180, 0), current=10, desired=1, replicas=6,
         condition="ScaleDownLimit"),
    dict(name="scaleDown with previous events preventing further scale down",
         down_events=E([10, 10, 10], 120), min=1, max=1000, down=rules(0, 0, 10, 120, 300),
         current=100, desired=0, replicas=100, condition="ScaleDownLimit"),
    dict(name="scaleDown with with previous events still allowing more scale down",
         down_events=E([10, 10, 10], 120), min=1, max=1000,
         down=rules(0, 0, 1000, 120, 300), current=10, desired=5, replicas=5,
         condition="DesiredWithinRange"),
    dict(name="check 'outdated' flag for events for one behavior for up",
         up_events=E([8, 12, 9, 11], 120), min=1, max=1000, up=rules(1000, 60, 0, 0, 0),
         current=100, desired=200, replicas=200, condition="DesiredWithinRange"),
    dict(name="check that events were not marked 'outdated' for two different policies in "
         "the behavior for up", up_events=E([8, 12, 9, 11], 120), min=1, max=1000,
         up=rules(1000, 120, 100, 60, 0), current=100, desired=200, replicas=200,
         condition="DesiredWithinRange"),
    dict(name="check that events were marked 'outdated' for two different policies in the "
         "behavior for up", up_events=E([8, 12, 9, 11], 120), min=1, max=1000,
         up=rules(1000, 30, 100, 60, 0), current=100, desired=200, replicas=200,
         condition="DesiredWithinRange"),
    dict(name="check 'outdated' flag for events for one behavior for down",
         down_events=E([8, 12, 9, 11], 120), min=1, max=1000,
         down=rules(1000, 60, 0, 0, 300), current=100, desired=5, replicas=5,
         condition="DesiredWithinRange"),
    dict(name="check that events were not marked 'outdated' for two different policies in "
         "the behavior for down", down_events=E([8, 12, 9, 11], 120), min=1, max=1000,
         down=rules(1000, 120, 100, 60, 300), current=100, desired=5, replicas=5,
         condition="DesiredWithinRange"),
    dict(name="check that events were marked 'outdated' for two different policies in the "
         "behavior for down", down_events=E([8, 12, 9, 11], 120), min=1, max=1000,
         down=rules(1000, 30, 100, 60, 300), current=100, desired=5, replicas=5,
         condition="DesiredWithinRange"),
]


@pytest.mark.parametrize("case", SCALING_CASES, ids=[c["name"] for c in SCALING_CASES])
def test_scaling_with_rules(case: dict[str, Any]) -> None:
    history = ScalingHistory(scale_up_events={"": case.get("up_events", [])},
                             scale_down_events={"": case.get("down_events", [])})
    arg = NormalizationArg("", generate_scale_up_rules(case.get("up")),
                           generate_scale_down_rules(case.get("down")), case["min"],
                           case["max"], case["current"], case["desired"])
    replicas, condition, _ = history.convert_desired_replicas_with_behavior_rate(arg, NOW)
    assert (replicas, condition) == (case["replicas"], case["condition"])


def test_scale_down_limit_with_min_change_policy() -> None:
    """TestCalculateScaleDownLimitWithBehaviors...: selectPolicy Min picks the smaller drop."""
    scaling = {"stabilizationWindowSeconds": 300, "selectPolicy": "Min", "policies": [
        {"type": "Pods", "value": 2, "periodSeconds": 60},
        {"type": "Percent", "value": 50, "periodSeconds": 60}]}
    assert calculate_scale_down_limit_with_behaviors(5, [], [], scaling, NOW) == 3


def test_disabled_select_policy_holds_the_current_count() -> None:
    """selectPolicy Disabled: no scale in that direction at all."""
    up = generate_scale_up_rules({"selectPolicy": "Disabled"})
    arg = NormalizationArg("", up, generate_scale_down_rules(None), 1, 10, 3, 8)
    assert ScalingHistory().convert_desired_replicas_with_behavior_rate(arg, NOW)[:2] == (
        3, "ScaleUpLimit")


# (name, recommendations, current, prenormalized, expected, expected stored, up, down)
BEHAVIOR_STABILIZATION_CASES: list[tuple[Any, ...]] = [
    ("empty recommendations for scaling down", [], 100, 5, 5, [5], 0, 0),
    ("simple scale down stabilization", [(4, ago(minutes=2)), (5, ago(minutes=1))], 100, 3, 5,
     [4, 5, 3], 0, 180),
    ("simple scale up stabilization", [(4, ago(minutes=2)), (5, ago(minutes=1))], 1, 7, 4,
     [4, 5, 7], 300, 0),
    ("no scale down stabilization", [(1, ago(minutes=2)), (2, ago(minutes=1))], 100, 3, 3,
     [1, 2, 3], 300, 0),
    ("no scale up stabilization", [(4, ago(minutes=2)), (5, ago(minutes=1))], 1, 3, 3,
     [4, 5, 3], 0, 300),
    ("no scale down stabilization, reuse recommendation element",
     [(10, ago(minutes=10)), (9, ago(minutes=9))], 100, 3, 3, [10, 3], 0, 0),
    ("no scale up stabilization, reuse recommendation element",
     [(10, ago(minutes=10)), (9, ago(minutes=9))], 1, 100, 100, [10, 100], 0, 0),
    ("scale down stabilization, reuse one of obsolete recommendation element",
     [(10, ago(minutes=10)), (4, ago(minutes=1)), (5, ago(minutes=2)), (9, ago(minutes=9))],
     100, 3, 5, [10, 4, 5, 3], 0, 180),
    ("scale up stabilization, reuse one of obsolete recommendation element",
     [(10, ago(minutes=100)), (6, ago(minutes=1)), (5, ago(minutes=2)), (9, ago(minutes=3))],
     1, 100, 5, [100, 6, 5, 9], 300, 0),
    ("scale up and down stabilization, do not scale up when prenormalized rec goes down",
     [(2, ago(minutes=100)), (3, ago(minutes=3))], 2, 1, 2, None, 300, 300),
    ("scale up and down stabilization, do not scale down when prenormalized rec goes up",
     [(2, ago(minutes=100)), (1, ago(minutes=3))], 2, 3, 2, None, 300, 300),
]


@pytest.mark.parametrize("case", BEHAVIOR_STABILIZATION_CASES,
                         ids=[c[0] for c in BEHAVIOR_STABILIZATION_CASES])
def test_normalize_desired_replicas_with_behavior(case: tuple[Any, ...]) -> None:
    _, records, current, prenormalized, expected, stored, up_window, down_window = case
    history = ScalingHistory(recommendations={
        "": [TimestampedRecommendation(r, t) for r, t in records]})
    arg = NormalizationArg("", {"stabilizationWindowSeconds": up_window},
                           {"stabilizationWindowSeconds": down_window}, 0, 0, current,
                           prenormalized)
    replicas, _, _ = history.stabilize_recommendation_with_behaviors(arg, NOW)
    assert replicas == expected
    if stored is not None:
        assert [r.recommendation for r in history.recommendations[""]] == stored


# (name, change, previous events (change, seconds ago), new events (change, outdated),
#  rules, expected change in the last 60 s)
STORE_CASES: list[tuple[Any, ...]] = [
    ("empty entries with default behavior", 5, [], [], None, 0),
    ("empty entries with two-policy-behavior", 5, [], [(5, False)],
     rules(10, 60, 100, 60, 0), 0),
    ("one outdated entry to be kept untouched without behavior", 5, [(7, 61)], [(7, False)],
     None, 0),
    ("one outdated entry to be replaced with behavior", 5, [(7, 61)], [(5, False)],
     rules(10, 60, 100, 60, 0), 0),
    ("one actual entry to be not touched with behavior", 5, [(7, 58)],
     [(7, False), (5, False)], rules(10, 60, 100, 60, 0), 7),
    ("two entries, one of them to be replaced", 5, [(7, 61), (6, 59)],
     [(5, False), (6, False)], rules(10, 60, 0, 0, 0), 6),
    ("replace one entry, use policies with different periods", 5,
     [(8, 29), (6, 59), (7, 61), (9, 61)], [(8, False), (6, False), (7, True), (5, False)],
     rules(10, 60, 100, 30, 0), 14),
    ("two entries, both actual", 5, [(7, 58), (6, 59)], [(7, False), (6, False), (5, False)],
     rules(10, 120, 100, 30, 0), 13),
]


@pytest.mark.parametrize("case", STORE_CASES, ids=[c[0] for c in STORE_CASES])
@pytest.mark.parametrize("direction", ["scaleUp", "scaleDown"])
def test_store_scale_events(case: tuple[Any, ...], direction: str) -> None:
    _, change, previous, expected, scaling, expected_change = case
    events = [TimestampedScaleEvent(c, ago(seconds=s)) for c, s in previous]
    history = ScalingHistory()
    memory = history.scale_up_events if direction == "scaleUp" else history.scale_down_events
    memory[""] = events
    assert get_replicas_change_per_period(60, memory[""], NOW) == expected_change
    behavior = {direction: scaling} if scaling is not None else None
    new = 10 + change if direction == "scaleUp" else 10 - change
    history.store_scale_event(behavior, "", 10, new, NOW)
    assert [(e.replica_change, e.outdated) for e in memory[""]] == expected


def test_rules_without_behavior_double_or_add_four() -> None:
    """convertDesiredReplicasWithRules: an HPA without behavior grows at most to
    max(2 * current, 4)."""
    assert convert_desired_replicas_with_rules(1, 10, 1, 10)[:2] == (4, "ScaleUpLimit")
    assert convert_desired_replicas_with_rules(3, 10, 1, 5)[:2] == (5, "TooManyReplicas")
