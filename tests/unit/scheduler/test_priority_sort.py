"""PrioritySort orders the scheduling queue as upstream's queuesort plugin."""

from __future__ import annotations

import pytest

from minikube_py.scheduler.framework.interface import QueuedPodInfo
from minikube_py.scheduler.framework.types import PodInfo
from minikube_py.scheduler.plugins.priority_sort import PrioritySort


def queued(priority: int | None, timestamp: float) -> QueuedPodInfo:
    spec = {} if priority is None else {"priority": priority}
    pod = {"metadata": {"name": "p", "namespace": "default"}, "spec": spec}
    return QueuedPodInfo(PodInfo.of(pod), timestamp)


# Upstream TestLess (queuesort/priority_sort_test.go).
@pytest.mark.parametrize(("first", "second", "expected"), [
    (queued(100, 1.0), queued(200, 2.0), False),  # p1.priority less than p2.priority
    (queued(200, 1.0), queued(100, 2.0), True),  # p1.priority greater than p2.priority
    (queued(100, 1.0), queued(100, 2.0), True),  # equal priority, p1 queued earlier
    (queued(100, 2.0), queued(100, 1.0), False),  # equal priority, p2 queued earlier
    (queued(None, 1.0), queued(-1, 2.0), True),  # no priority counts as 0
    (queued(None, 1.0), queued(None, 1.0), False),  # never less than an equal
])
def test_higher_priority_first_then_earlier_timestamp(
        first: QueuedPodInfo, second: QueuedPodInfo, expected: bool) -> None:
    assert PrioritySort().less(first, second) is expected


def test_queue_sort_registers_no_events() -> None:
    assert PrioritySort().events_to_register() == []
