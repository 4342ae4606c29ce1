"""The replica calculator against upstream's replica_calculator_test.go table: the same pods
(two containers each), metrics, targets and expected replicas, utilization and usage.

Upstream's test clock: a CPU initialization period of 2 minutes, an initial readiness
delay of 10 seconds, "hot" pods started now and "cool" ones 3 minutes ago; pods without
a start time start at Go's zero time, and metrics carry the zero timestamp and a 1-minute
window.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339
from minikube_py.controllers.podautoscaler.replica_calculator import (
    PodMetric,
    PodMetricsInfo,
    ReplicaCalculationError,
    ReplicaCalculator,
    Tolerances,
    pod_metrics_info,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
HOT = NOW
COOL = NOW - timedelta(minutes=3)
CONTAINERS_PER_POD = 2
DEFAULT_TOLERANCES = Tolerances(0.1, 0.1)
CALCULATOR = ReplicaCalculator(cpu_initialization_period=timedelta(minutes=2),
                               delay_of_initial_readiness_status=timedelta(seconds=10))


def levels(*per_container: int) -> list[list[int]]:
    """makePodMetricLevels: each pod's value for every one of its containers."""
    return [[value] * CONTAINERS_PER_POD for value in per_container]


@dataclass
class Case:
    current_replicas: int
    expected_replicas: int = 0
    readiness: list[str] = field(default_factory=list)
    start_times: list[datetime] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)
    deleted: list[bool] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    levels: list[list[int]] = field(default_factory=list)
    pod_names: list[str] = field(default_factory=list)
    target_utilization: int = 0
    expected_utilization: int = 0
    expected_value: int = 0
    container: str = ""
    error: str = ""

    def pods(self) -> list[Obj]:
        """prepareTestClientSet: currentReplicas pods (more when phases name more)."""
        count = max(self.current_replicas, len(self.phases))
        pods = []
        for i in range(count):
            containers: list[Obj] = [{"name": "container1"}, {"name": "container2"}]
            if i < len(self.requests):
                for container in containers:
                    container["resources"] = {"requests": {"cpu": self.requests[i]}}
            status: Obj = {
                "phase": self.phases[i] if self.phases else "Running",
                "conditions": [{"type": "Ready", "status": self.readiness[i]
                                if i < len(self.readiness) else "True"}]}
            if self.start_times:
                status["startTime"] = rfc3339(self.start_times[i])
            else:
                status["startTime"] = "0001-01-01T00:00:00Z"
            metadata: Obj = {"name": f"test-pod-{i}", "namespace": "test-namespace"}
            if self.deleted and self.deleted[i]:
                metadata["deletionTimestamp"] = rfc3339(NOW)
            pods.append({"metadata": metadata, "spec": {"containers": containers},
                         "status": status})
        return pods

    def metric_items(self) -> list[Obj]:
        """prepareTestMetricsClient: PodMetrics with one usage per container."""
        items = []
        for i, values in enumerate(self.levels):
            name = self.pod_names[i] if i < len(self.pod_names) else f"test-pod-{i}"
            items.append({"metadata": {"name": name, "namespace": "test-namespace"},
                          "timestamp": "0001-01-01T00:00:00Z", "window": "1m0s",
                          "containers": [{"name": f"container{j + 1}",
                                          "usage": {"cpu": f"{value}m"}}
                                         for j, value in enumerate(values)]})
        return items

    def run(self) -> tuple[int, int, int]:
        metrics = pod_metrics_info(self.metric_items(), "cpu", self.container)
        replicas, utilization, value, _ = CALCULATOR.get_resource_replicas(
            self.current_replicas, self.target_utilization, "cpu", DEFAULT_TOLERANCES,
            self.pods(), metrics, self.container, now=NOW)
        return replicas, utilization, value


ONE = ["1.0"]
RESOURCE_CASES = {
    "ScaleUp": Case(3, 5, requests=ONE * 3, levels=levels(300, 500, 700),
                    target_utilization=30, expected_utilization=50,
                    expected_value=CONTAINERS_PER_POD * 500),
    "ContainerScaleUp": Case(3, 5, requests=ONE * 3,
                             levels=[[1000, 300], [1000, 500], [1000, 700]],
                             target_utilization=30, expected_utilization=50,
                             expected_value=500, container="container2"),
    "ScaleUpUnreadyLessScale": Case(3, 4, readiness=["False", "True", "True"],
                                    requests=ONE * 3, levels=levels(300, 500, 700),
                                    target_utilization=30, expected_utilization=60,
                                    expected_value=CONTAINERS_PER_POD * 600),
    "ScaleUpContainerHotCpuLessScale": Case(3, 4, start_times=[HOT, COOL, COOL],
                                            requests=ONE * 3,
                                            levels=[[0, 300], [0, 500], [0, 700]],
                                            target_utilization=30, expected_utilization=60,
                                            expected_value=600, container="container2"),
    "ScaleUpHotCpuLessScale": Case(3, 4, start_times=[HOT, COOL, COOL], requests=ONE * 3,
                                   levels=levels(300, 500, 700), target_utilization=30,
                                   expected_utilization=60,
                                   expected_value=CONTAINERS_PER_POD * 600),
    "ScaleUpUnreadyNoScale": Case(3, 3, readiness=["True", "False", "False"],
                                  requests=ONE * 3, levels=levels(400, 500, 700),
                                  target_utilization=30, expected_utilization=40,
                                  expected_value=CONTAINERS_PER_POD * 400),
    "ScaleHotCpuNoScale": Case(3, 3, readiness=["True", "False", "False"],
                               start_times=[COOL, HOT, HOT], requests=ONE * 3,
                               levels=levels(400, 500, 700), target_utilization=30,
                               expected_utilization=40,
                               expected_value=CONTAINERS_PER_POD * 400),
    "ScaleUpIgnoresFailedPods": Case(2, 4, readiness=["True", "True", "False", "False"],
                                     phases=["Running", "Running", "Failed", "Failed"],
                                     requests=ONE * 4, levels=levels(500, 700),
                                     target_utilization=30, expected_utilization=60,
                                     expected_value=CONTAINERS_PER_POD * 600),
    "MissingContainerMetricScaleUpIgnoresFailedPods": Case(
        2, 4, readiness=["True", "True", "False", "False"],
        phases=["Running", "Running", "Failed", "Failed"], requests=ONE * 4,
        levels=[[1000, 500], [9000, 700], [1000], [9000]], target_utilization=30,
        expected_utilization=60, expected_value=600, container="container2"),
    "ScaleUpContainerIgnoresFailedPods": Case(
        2, 4, readiness=["True", "True", "False", "False"],
        phases=["Running", "Running", "Failed", "Failed"], requests=ONE * 4,
        levels=[[1000, 500], [9000, 700]], target_utilization=30, expected_utilization=60,
        expected_value=600, container="container2"),
    "ScaleUpIgnoresDeletionPods": Case(
        2, 4, readiness=["True", "True", "False", "False"], phases=["Running"] * 4,
        deleted=[False, False, True, True], requests=ONE * 4, levels=levels(500, 700),
        target_utilization=30, expected_utilization=60,
        expected_value=CONTAINERS_PER_POD * 600),
    "ScaleUpContainerIgnoresDeletionPods": Case(
        2, 4, readiness=["True", "True", "False", "False"], phases=["Running"] * 4,
        deleted=[False, False, True, True], requests=ONE * 4, levels=levels(500, 700),
        target_utilization=30, expected_utilization=60, expected_value=600,
        container="container1"),
    "ScaleDown": Case(5, 3, requests=ONE * 5, levels=levels(100, 300, 500, 250, 250),
                      target_utilization=50, expected_utilization=28,
                      expected_value=CONTAINERS_PER_POD * 280),
    "ContainerScaleDown": Case(5, 3, requests=ONE * 5,
                               levels=[[1000, 100], [1000, 300], [1000, 500], [1000, 250],
                                       [1000, 250]],
                               target_utilization=50, expected_utilization=28,
                               expected_value=280, container="container2"),
    "ScaleDownExcludeUnreadyPods": Case(5, 2, readiness=["True"] * 3 + ["False"] * 2,
                                        requests=ONE * 5,
                                        levels=levels(100, 300, 500, 250, 250),
                                        target_utilization=50, expected_utilization=30,
                                        expected_value=CONTAINERS_PER_POD * 300),
    "ScaleDownExcludeUnscheduledPods": Case(5, 1, readiness=["True"] + ["False"] * 4,
                                            phases=["Running"] + ["Pending"] * 4,
                                            requests=ONE * 5, levels=levels(100),
                                            target_utilization=50, expected_utilization=10,
                                            expected_value=CONTAINERS_PER_POD * 100),
    "ScaleDownContainerExcludeUnscheduledPods": Case(
        5, 1, readiness=["True"] + ["False"] * 4, phases=["Running"] + ["Pending"] * 4,
        requests=ONE * 5,
        levels=[[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
        target_utilization=50, expected_utilization=10, expected_value=100,
        container="container2"),
    "ScaleDownIgnoreHotCpuPods": Case(5, 2, start_times=[COOL, COOL, COOL, HOT, HOT],
                                      requests=ONE * 5,
                                      levels=levels(100, 300, 500, 250, 250),
                                      target_utilization=50, expected_utilization=30,
                                      expected_value=CONTAINERS_PER_POD * 300),
    "ScaleDownContainerIgnoreHotCpuPods": Case(
        5, 2, start_times=[COOL, COOL, COOL, HOT, HOT], requests=ONE * 5,
        levels=[[1000, 100], [1000, 300], [1000, 500], [1000, 1000], [1000, 1000]],
        target_utilization=50, expected_utilization=30, expected_value=300,
        container="container2"),
    "ScaleDownIgnoresFailedPods": Case(
        5, 3, readiness=["True"] * 5 + ["False"] * 2,
        phases=["Running"] * 5 + ["Failed"] * 2, requests=ONE * 7,
        levels=levels(100, 300, 500, 250, 250), target_utilization=50,
        expected_utilization=28, expected_value=CONTAINERS_PER_POD * 280),
    "ScaleDownIgnoresDeletionPods": Case(
        5, 3, readiness=["True"] * 5 + ["False"] * 2, phases=["Running"] * 7,
        deleted=[False] * 5 + [True] * 2, requests=ONE * 7,
        levels=levels(100, 300, 500, 250, 250), target_utilization=50,
        expected_utilization=28, expected_value=CONTAINERS_PER_POD * 280),
    "ScaleDownIgnoresDeletionPods_StillRunning": Case(
        5, 3, readiness=["True"] * 5 + ["False"] * 2, phases=["Running"] * 7,
        deleted=[False] * 5 + [True] * 2, requests=ONE * 7,
        levels=[[1000, 100], [1000, 300], [1000, 500], [1000, 250], [1000, 250]],
        target_utilization=50, expected_utilization=28, expected_value=280,
        container="container2"),
    "Tolerance": Case(3, 3, requests=["0.9", "1.0", "1.1"], levels=levels(1010, 1030, 1020),
                      target_utilization=100, expected_utilization=102,
                      expected_value=CONTAINERS_PER_POD * 1020),
    "SuperfluousMetrics": Case(4, 24, requests=ONE * 4,
                               levels=levels(4000, 9500, 3000, 7000, 3200, 2000),
                               target_utilization=100, expected_utilization=587,
                               expected_value=CONTAINERS_PER_POD * 5875),
    "MissingMetrics": Case(4, 3, requests=ONE * 4, levels=levels(400, 95),
                           target_utilization=100, expected_utilization=24,
                           expected_value=495),
    "MissingMetricsNoChangeEq": Case(2, 2, requests=ONE * 2, levels=levels(1000),
                                     target_utilization=100, expected_utilization=100,
                                     expected_value=CONTAINERS_PER_POD * 1000),
    "MissingMetricsNoChangeGt": Case(2, 2, requests=ONE * 2, levels=levels(1900),
                                     target_utilization=100, expected_utilization=190,
                                     expected_value=CONTAINERS_PER_POD * 1900),
    "MissingMetricsNoChangeLt": Case(2, 2, requests=ONE * 2, levels=levels(600),
                                     target_utilization=100, expected_utilization=60,
                                     expected_value=CONTAINERS_PER_POD * 600),
    "MissingMetricsUnreadyChange": Case(3, 3, readiness=["False", "True", "True"],
                                        requests=ONE * 3, levels=levels(100, 450),
                                        target_utilization=50, expected_utilization=45,
                                        expected_value=CONTAINERS_PER_POD * 450),
}


@pytest.mark.parametrize("case", RESOURCE_CASES.values(), ids=RESOURCE_CASES.keys())
def test_resource_utilization_cases(case: Case) -> None:
    assert case.run() == (case.expected_replicas, case.expected_utilization,
                          case.expected_value)


ERROR_CASES = {
    "DisjointResourcesMetrics": (Case(1, requests=ONE, levels=levels(100),
                                      pod_names=["an-older-pod-name"], target_utilization=100),
                                 "no metrics returned matched known pods"),
    "EmptyMetrics": (Case(4, requests=ONE * 3, levels=[], target_utilization=100),
                     "no metrics returned from resource metrics API"),
    "EmptyCPURequest": (Case(1, requests=[], levels=levels(200), target_utilization=100),
                        "missing request for"),
}


@pytest.mark.parametrize(("case", "message"), ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_resource_error_cases(case: Case, message: str) -> None:
    with pytest.raises(ReplicaCalculationError, match=message):
        case.run()


def plain_pods(count: int, readiness: list[str] | None = None,
               start_times: list[datetime] | None = None) -> list[Obj]:
    return Case(count, readiness=readiness or [], start_times=start_times or []).pods()


def plain_metrics(values: list[int]) -> PodMetricsInfo:
    return {f"test-pod-{i}": PodMetric(value) for i, value in enumerate(values)}


# (current, expected, pod levels, target, expected usage, readiness, start times)
POD_METRIC_CASES = {
    "ScaleUpCM": (3, 4, [20000, 10000, 30000], 15000, 20000, None, None),
    "ScaleUpCMUnreadyHotCpuNoLessScale": (3, 6, [50000, 10000, 30000], 15000, 30000,
                                          ["True", "True", "False"], [COOL, COOL, HOT]),
    "ScaleUpCMUnreadyHotCpuScaleWouldScaleDown": (3, 7, [50000, 15000, 30000], 15000, 31666,
                                                  ["False", "True", "False"],
                                                  [HOT, COOL, HOT]),
    "ScaleUpCMExternalNoLabels": (1, 2, [8600], 4400, 8600, None, None),
    "ScaleDownCM": (5, 3, [12000] * 5, 20000, 12000, None, None),
    "ToleranceCM": (3, 3, [20000, 21000, 21000], 20000, 20666, None, None),
    "PlainMetricMissingMetricsNoChangeEq": (5, 5, [20000, 19000, 21000], 20000, 20000, None,
                                            None),
}


@pytest.mark.parametrize("case", POD_METRIC_CASES.values(), ids=POD_METRIC_CASES.keys())
def test_pods_metric_cases(case: tuple[Any, ...]) -> None:
    current, expected, values, target, usage, readiness, starts = case
    replicas, average, _ = CALCULATOR.get_metric_replicas(
        current, target, DEFAULT_TOLERANCES, plain_pods(current, readiness, starts),
        plain_metrics(values), now=NOW)
    assert (replicas, average) == (expected, usage)


# (current, expected, object value, target, readiness)
OBJECT_METRIC_CASES = {
    "ScaleUpCMObject": (3, 4, 20000, 15000, None),
    "ScaleUpCMObjectIgnoresUnreadyPods": (3, 5, 50000, 10000, ["False", "True", "False"]),
    "ScaleDownCMObject": (5, 3, 12000, 20000, None),
    "ToleranceCMObject": (3, 3, 20666, 20000, None),
}


@pytest.mark.parametrize("case", OBJECT_METRIC_CASES.values(),
                         ids=OBJECT_METRIC_CASES.keys())
def test_object_metric_cases(case: tuple[Any, ...]) -> None:
    current, expected, value, target, readiness = case
    replicas, usage = CALCULATOR.get_object_metric_replicas(
        current, value, target, DEFAULT_TOLERANCES, plain_pods(current, readiness))
    assert (replicas, usage) == (expected, value)


# (status replicas, expected, object value, per-pod target, expected usage)
OBJECT_PER_POD_CASES = {
    "ScaleUpCMPerPodObject": (3, 4, 20000, 5000, 6667),
    "ScaleDownPerPodCMObject": (5, 3, 6000, 2000, 1200),
    "TolerancePerPodCMObject": (4, 4, 20166, 5000, 5042),
}


@pytest.mark.parametrize("case", OBJECT_PER_POD_CASES.values(),
                         ids=OBJECT_PER_POD_CASES.keys())
def test_object_per_pod_metric_cases(case: tuple[Any, ...]) -> None:
    replicas_now, expected, value, target, usage = case
    assert ReplicaCalculator.get_object_per_pod_metric_replicas(
        replicas_now, value, target, DEFAULT_TOLERANCES) == (expected, usage)


# (current, expected, series values, target, expected usage, readiness, tolerances)
EXTERNAL_METRIC_CASES = {
    "ScaleUpCMExternal": (1, 2, [8600], 4400, 8600, None, DEFAULT_TOLERANCES),
    "ScaleUpCMExternalIgnoresUnreadyPods": (3, 2, [8600], 4400, 8600,
                                            ["False", "True", "False"], DEFAULT_TOLERANCES),
    "ScaleDownCMExternal": (5, 3, [8600], 14334, 8600, None, DEFAULT_TOLERANCES),
    "ToleranceCMExternal": (3, 3, [8600], 8888, 8600, None, DEFAULT_TOLERANCES),
    "ConfigurableToleranceCMExternal": (3, 4, [8900], 8800, 8900, None,
                                        Tolerances(0.1, 0.01)),
}


@pytest.mark.parametrize("case", EXTERNAL_METRIC_CASES.values(),
                         ids=EXTERNAL_METRIC_CASES.keys())
def test_external_metric_cases(case: tuple[Any, ...]) -> None:
    current, expected, values, target, usage, readiness, tolerances = case
    assert CALCULATOR.get_external_metric_replicas(
        current, values, target, tolerances, plain_pods(current, readiness)) == (
        expected, usage)


MAX_INT64 = 2**63 - 1
# (status replicas, expected, series values, per-pod target, expected usage, tolerances)
EXTERNAL_PER_POD_CASES = {
    "ScaleUpPerPodCMExternal": (3, 4, [8600], 2150, 2867, DEFAULT_TOLERANCES),
    "ScaleDownPerPodCMExternal": (5, 3, [8600], 2867, 1720, DEFAULT_TOLERANCES),
    "TolerancePerPodCMExternal": (3, 3, [8600], 2900, 2867, DEFAULT_TOLERANCES),
    "ConfigurableTolerancePerPodCMExternal": (3, 4, [8600], 2800, 2867,
                                              Tolerances(0.1, 0.01)),
    "ExternalPerPodMetricReplicaOverflow": (1, 2**31 - 1, [MAX_INT64], 1, MAX_INT64,
                                            DEFAULT_TOLERANCES),
    "ExternalPerPodMetricUsageOverflow": (1, 1, [MAX_INT64], MAX_INT64, MAX_INT64,
                                          DEFAULT_TOLERANCES),
}


@pytest.mark.parametrize("case", EXTERNAL_PER_POD_CASES.values(),
                         ids=EXTERNAL_PER_POD_CASES.keys())
def test_external_per_pod_metric_cases(case: tuple[Any, ...]) -> None:
    replicas_now, expected, values, target, usage, tolerances = case
    assert ReplicaCalculator.get_external_per_pod_metric_replicas(
        replicas_now, values, target, tolerances) == (expected, usage)


def _ten_pods_at(utilization: int, tolerances: Tolerances) -> int:
    case = Case(10, requests=ONE * 10, levels=levels(*[utilization * 10] * 10),
                target_utilization=100)
    replicas, _, _, _ = CALCULATOR.get_resource_replicas(
        10, 100, "cpu", tolerances, case.pods(), pod_metrics_info(case.metric_items(), "cpu"),
        now=NOW)
    return replicas


def test_per_direction_tolerances_decide_each_side_alone() -> None:
    """A behavior's own tolerance per direction (25% down, 5% up) against the default 10%:
    ten pods at 80% stay, at 110% grow to 11; with 10% they go to 8 and stay at 10."""
    own = Tolerances(scale_down=0.25, scale_up=0.05)
    assert (_ten_pods_at(80, own), _ten_pods_at(110, own)) == (10, 11)
    assert (_ten_pods_at(80, DEFAULT_TOLERANCES), _ten_pods_at(110, DEFAULT_TOLERANCES)) == (
        8, 10)
    assert str(own) == "[down:25.0%, up:5.0%]"


def test_a_pod_ready_after_the_initialization_period_counts_once_it_was_ever_ready() -> None:
    """After the CPU initialization period, a not-ready pod whose readiness changed long
    after its start (it was ready once) still counts; one that never became ready does not."""
    calculator = ReplicaCalculator()
    pod_start = NOW - timedelta(minutes=10)
    pods = Case(2, readiness=["False", "False"], start_times=[pod_start, pod_start]).pods()
    pods[0]["status"]["conditions"][0]["lastTransitionTime"] = rfc3339(
        pod_start + timedelta(minutes=5))
    pods[1]["status"]["conditions"][0]["lastTransitionTime"] = rfc3339(
        pod_start + timedelta(seconds=20))
    for pod in pods:
        pod["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]
    metrics = plain_metrics([2000, 2000])
    replicas, utilization, _, _ = calculator.get_resource_replicas(
        2, 100, "cpu", DEFAULT_TOLERANCES, pods, metrics, now=NOW)
    assert utilization == 200
    assert replicas == 2  # pod 1 is unready: 0% for it on a scale-up -> ratio 1.0
