"""Pod status helpers answer like upstream's podutil and controller utils."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339
from minikube_py.api.podutil import (
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    is_pod_terminating,
    pod_condition,
    pod_key,
)

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def pod(phase: str = "Running", deleting: bool = False, conditions: list[Obj] | None = None) -> Obj:
    metadata: Obj = {"name": "web", "namespace": "default"}
    if deleting:
        metadata["deletionTimestamp"] = rfc3339(NOW)
    return {"metadata": metadata, "status": {"phase": phase, "conditions": conditions or []}}


@pytest.mark.parametrize(
    ("the_pod", "active", "terminating"),
    [
        (pod("Pending"), True, False),
        (pod("Running"), True, False),
        (pod("Unknown"), True, False),
        (pod("Succeeded"), False, False),
        (pod("Failed"), False, False),
        (pod("Running", deleting=True), False, True),
        (pod("Pending", deleting=True), False, True),
        (pod("Succeeded", deleting=True), False, False),
        ({}, True, False),  # no status yet: a pod the API server just created
    ],
)
def test_active_and_terminating_pods(the_pod: Obj, active: bool, terminating: bool) -> None:
    assert is_pod_active(the_pod) is active
    assert is_pod_terminating(the_pod) is terminating


def ready(status: str, seconds_ago: float | None = None) -> Obj:
    condition: Obj = {"type": "Ready", "status": status}
    if seconds_ago is not None:
        condition["lastTransitionTime"] = rfc3339(NOW - timedelta(seconds=seconds_ago))
    return condition


def test_pod_condition_finds_a_condition_by_type() -> None:
    scheduled = {"type": "PodScheduled", "status": "True"}
    the_pod = pod(conditions=[scheduled, ready("False")])
    assert pod_condition(the_pod, "PodScheduled") == scheduled
    assert pod_condition(the_pod, "Ready") == ready("False")
    assert pod_condition(the_pod, "ContainersReady") is None
    assert pod_condition({}, "Ready") is None


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([ready("True")], True),
        ([ready("False")], False),
        ([ready("Unknown")], False),
        ([{"type": "ContainersReady", "status": "True"}], False),
        ([], False),
    ],
)
def test_pod_is_ready_when_its_ready_condition_is_true(
    conditions: list[Obj], expected: bool
) -> None:
    assert is_pod_ready(pod(conditions=conditions)) is expected


# Cases from upstream TestIsPodAvailable, plus the minReadySeconds boundary (<= since 1.34).
@pytest.mark.parametrize(
    ("condition", "min_ready_seconds", "available"),
    [
        (ready("False", 0), 0, False),
        (ready("True", 0), 1, False),
        (ready("True", 0), 0, True),
        (ready("True", 51), 50, True),
        (ready("True", 50), 50, True),  # exactly minReadySeconds ago
        (ready("True", 49), 50, False),
        (ready("True"), 10, False),  # no lastTransitionTime
        (ready("True"), 0, True),
    ],
)
def test_pod_is_available_once_ready_for_min_ready_seconds(
    condition: Obj, min_ready_seconds: int, available: bool
) -> None:
    assert is_pod_available(pod(conditions=[condition]), min_ready_seconds, NOW) is available


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        ({"metadata": {"namespace": "default", "name": "web"}}, "default/web"),
        ({"metadata": {"name": "node-1"}}, "node-1"),  # cluster-scoped
    ],
)
def test_pod_key_is_namespace_slash_name(obj: Obj, key: str) -> None:
    assert pod_key(obj) == key
