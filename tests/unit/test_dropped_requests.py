"""The Retry-After of rejected requests: upstream's dropped_requests_tracker_test.go."""

from __future__ import annotations

from minikube_py.apiserver.flowcontrol.dropped_requests import DroppedRequestsTracker


class Clock:
    def __init__(self) -> None:
        self.seconds = 1_700_000_000.25

    def __call__(self) -> float:
        return self.seconds


def test_retry_after_doubles_under_drops_and_decays_without() -> None:
    clock = Clock()
    tracker = DroppedRequestsTracker(clock)
    start = clock.seconds
    # (seconds elapsed, requests dropped then, Retry-After expected after them)
    for elapsed, dropped, retry_after in [
            (0, 5, 1), (1, 11, 2), (2, 1, 2), (3, 11, 4), (4, 1, 4), (7, 1, 8), (11, 1, 8),
            (15, 1, 7), (17, 1, 6), (21, 14, 5), (22, 1, 10)]:
        clock.seconds = start + elapsed
        for _ in range(dropped):
            tracker.record_dropped_request("pl")
        assert tracker.retry_after("pl") == retry_after, elapsed


def test_each_priority_level_has_its_own_retry_after() -> None:
    clock = Clock()
    tracker = DroppedRequestsTracker(clock)
    levels = [f"pl-{i}" for i in range(10)]
    for level in levels:
        tracker.record_dropped_request(level)
    clock.seconds += 1
    for level in levels:
        tracker.record_dropped_request(level)
        assert tracker.retry_after(level) == 1
    for _ in range(5):
        tracker.record_dropped_request("pl-0")
    clock.seconds += 1
    for level in levels:
        tracker.record_dropped_request(level)
        assert tracker.retry_after(level) == (2 if level == "pl-0" else 1)
    assert tracker.retry_after("other-pl") == 1
