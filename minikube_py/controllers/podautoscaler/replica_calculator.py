"""The replica calculator: how many replicas a metric asks for (upstream's
pkg/controller/podautoscaler/replica_calculator.go and metrics/utilization.go).

Pure: it reads pods and metrics it is handed and talks to nobody. The controller lists the
pods of the target's selector and fetches the metrics, then asks here:

    group_pods:    ready | unready (pending, or CPU samples taken while starting up)
                   | missing (no metric) | ignored (deleted or failed)
    usage ratio:   current / target over the ready pods with a metric
    within the tolerance, or no unready/missing pods: ceil(ratio * ready pods)
    otherwise:     fill the gaps conservatively (missing pods use the target on a
                   scale-down and nothing on a scale-up; unready pods use nothing on a
                   scale-up), re-run the ratio, and refuse any change that now points the
                   other way

Metrics are milli-values (upstream's MilliValue), as ints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from minikube_py.api import Obj
from minikube_py.api.duration import parse_duration
from minikube_py.api.meta import parse_rfc3339
from minikube_py.api.podutil import pod_condition
from minikube_py.api.quantity import QuantityError, cpu_millis

ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)
"""Go's zero time.Time: what an unset timestamp compares as."""
MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1


class ReplicaCalculationError(Exception):
    """The metrics or pods do not allow a recommendation (the message is upstream's)."""


@dataclass(frozen=True)
class PodMetric:
    """One pod's sample: its value (milli-units), when it was taken and over what window."""

    value: int
    timestamp: datetime = ZERO_TIME
    window: timedelta = timedelta(0)


PodMetricsInfo = dict[str, PodMetric]


@dataclass(frozen=True)
class Tolerances:
    """The usage ratios around 1.0 within which nothing scales, per direction."""

    scale_down: float
    scale_up: float

    def is_within(self, usage_ratio: float) -> bool:
        return (1.0 - self.scale_down) <= usage_ratio <= (1.0 + self.scale_up)

    def __str__(self) -> str:
        return f"[down:{self.scale_down * 100:.1f}%, up:{self.scale_up * 100:.1f}%]"


def _time(value: object) -> datetime:
    return parse_rfc3339(value) if isinstance(value, str) and value else ZERO_TIME


def _milli(value: object) -> int:
    if not isinstance(value, (str, int, float)):
        return 0
    try:
        return cpu_millis(value)
    except (QuantityError, TypeError, ValueError):
        return 0


def pod_metrics_info(items: list[Obj], resource: str, container: str = "") -> PodMetricsInfo:
    """The metrics client's step: metrics.k8s.io PodMetrics as one value per pod, the sum of
    its containers' usage (a pod missing the resource in any container is left out), or
    one container's usage when `container` is set."""
    if not items:
        raise ReplicaCalculationError("no metrics returned from resource metrics API")
    metrics: PodMetricsInfo = {}
    for item in items:
        name = (item.get("metadata") or {}).get("name", "")
        timestamp = _time(item.get("timestamp"))
        window = timedelta(seconds=parse_duration(str(item.get("window") or "0s")) or 0)
        containers = [c for c in item.get("containers") or [] if isinstance(c, dict)]
        if container:
            for c in containers:
                if c.get("name") == container:
                    usage = c.get("usage") or {}
                    if resource in usage:
                        metrics[name] = PodMetric(_milli(usage[resource]), timestamp, window)
                    break
            continue
        usages = [c.get("usage") or {} for c in containers]
        if usages and all(resource in usage for usage in usages):
            metrics[name] = PodMetric(sum(_milli(u[resource]) for u in usages), timestamp,
                                      window)
    return metrics


def group_pods(pods: list[Obj], metrics: PodMetricsInfo, resource: str,
               cpu_initialization_period: timedelta, delay_of_initial_readiness_status: timedelta,
               now: datetime) -> tuple[int, set[str], set[str], set[str]]:
    """groupPods: (ready count, unready, missing, ignored).

    Deleted and failed pods are ignored; pending pods are unready. For CPU a sample is
    not trusted while the pod starts: within the CPU initialization period a pod counts as
    unready until it is Ready and a full metric window has passed since it became so; after
    it, only a pod that was never ready (its readiness last changed within the initial
    readiness delay of its start) counts as unready.
    """
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        name = pod["metadata"]["name"]
        status = pod.get("status") or {}
        if pod["metadata"].get("deletionTimestamp") or status.get("phase") == "Failed":
            ignored.add(name)
            continue
        if status.get("phase") == "Pending":
            unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu":
            condition = pod_condition(pod, "Ready")
            start = status.get("startTime")
            if condition is None or not start:
                is_unready = True
            else:
                started = _time(start)
                transition = _time(condition.get("lastTransitionTime"))
                if started + cpu_initialization_period > now:
                    is_unready = (condition.get("status") == "False"
                                  or metric.timestamp < transition + metric.window)
                else:
                    is_unready = (condition.get("status") == "False"
                                  and started + delay_of_initial_readiness_status > transition)
            if is_unready:
                unready.add(name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def calculate_requests(pods: list[Obj], container: str, resource: str) -> dict[str, int]:
    """calculateRequests: each pod's request (milli-units) for the resource, summed over its
    containers (and restartable init containers), or the one named `container`."""
    requests: dict[str, int] = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        spec = pod.get("spec") or {}
        containers = list(spec.get("containers") or [])
        containers += [c for c in spec.get("initContainers") or []
                       if c.get("restartPolicy") == "Always"]
        request = 0
        found = False
        for c in containers:
            if not container or container == c.get("name"):
                wanted = ((c.get("resources") or {}).get("requests") or {}).get(resource)
                if wanted is None:
                    raise ReplicaCalculationError(
                        f"missing request for {resource} in container {c.get('name')} of Pod "
                        f"{name}")
                request += _milli(wanted)
            if container == c.get("name"):
                found = True
                break
        if container and not found:
            raise ReplicaCalculationError(f"container {container} not found in Pod {name}")
        requests[name] = request
    return requests


def get_resource_utilization_ratio(metrics: PodMetricsInfo, requests: dict[str, int],
                                   target_utilization: int) -> tuple[float, int, int]:
    """GetResourceUtilizationRatio: (usage ratio, utilization %, average raw value) over the
    pods that have both a metric and a request."""
    metrics_total = requests_total = entries = 0
    for name, metric in metrics.items():
        if name not in requests:
            continue
        metrics_total += metric.value
        requests_total += requests[name]
        entries += 1
    if requests_total == 0:
        raise ReplicaCalculationError("no metrics returned matched known pods")
    utilization = metrics_total * 100 // requests_total
    return utilization / target_utilization, utilization, metrics_total // entries


def get_metric_usage_ratio(metrics: PodMetricsInfo, target_usage: int) -> tuple[float, int]:
    """GetMetricUsageRatio: (usage ratio, average usage)."""
    usage = sum(metric.value for metric in metrics.values()) // len(metrics)
    return usage / target_usage, usage


def _sample_timestamp(metrics: PodMetricsInfo) -> datetime:
    """When the metrics were taken: the first sample's time, as upstream reports it."""
    return next((metric.timestamp for metric in metrics.values()), ZERO_TIME)


@dataclass
class ReplicaCalculator:
    """Upstream's ReplicaCalculator, with the pods and metrics handed in by the caller."""

    cpu_initialization_period: timedelta = timedelta(minutes=5)
    delay_of_initial_readiness_status: timedelta = timedelta(seconds=30)

    def get_resource_replicas(self, current_replicas: int, target_utilization: int,
                              resource: str, tolerances: Tolerances, pods: list[Obj],
                              metrics: PodMetricsInfo, container: str = "",
                              now: datetime | None = None
                              ) -> tuple[int, int, int, datetime]:
        """GetResourceReplicas: (replicas, utilization %, raw average, timestamp) for a
        target utilization of the pods' requests."""
        metrics = dict(metrics)
        timestamp = _sample_timestamp(metrics)
        if not pods:
            raise ReplicaCalculationError(
                "no pods returned by selector while calculating replica count")
        ready, unready, missing, ignored = group_pods(
            pods, metrics, resource, self.cpu_initialization_period,
            self.delay_of_initial_readiness_status, now or datetime.now(UTC))
        for name in ignored | unready:
            metrics.pop(name, None)
        if not metrics:
            raise ReplicaCalculationError(
                "did not receive metrics for targeted pods (pods might be unready)")
        requests = calculate_requests(pods, container, resource)
        ratio, utilization, raw = get_resource_utilization_ratio(metrics, requests,
                                                                 target_utilization)
        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if tolerances.is_within(ratio):
                return current_replicas, utilization, raw, timestamp
            return math.ceil(ratio * ready), utilization, raw, timestamp
        if missing:
            if ratio < 1.0:
                fallback = max(100, target_utilization)
                for name in missing:
                    metrics[name] = PodMetric(requests[name] * fallback // 100)
            elif ratio > 1.0:
                for name in missing:
                    metrics[name] = PodMetric(0)
        if scale_up_with_unready:
            for name in unready:
                metrics[name] = PodMetric(0)
        new_ratio, _, _ = get_resource_utilization_ratio(metrics, requests, target_utilization)
        replicas = _conservative_replicas(current_replicas, ratio, new_ratio, len(metrics),
                                          tolerances)
        return replicas, utilization, raw, timestamp

    def get_metric_replicas(self, current_replicas: int, target_usage: int,
                            tolerances: Tolerances, pods: list[Obj], metrics: PodMetricsInfo,
                            resource: str = "", now: datetime | None = None
                            ) -> tuple[int, int, datetime]:
        """GetMetricReplicas / GetRawResourceReplicas (calcPlainMetricReplicas): (replicas,
        average usage, timestamp) for a target average value per pod."""
        metrics = dict(metrics)
        timestamp = _sample_timestamp(metrics)
        if not pods:
            raise ReplicaCalculationError(
                "no pods returned by selector while calculating replica count")
        ready, unready, missing, ignored = group_pods(
            pods, metrics, resource, self.cpu_initialization_period,
            self.delay_of_initial_readiness_status, now or datetime.now(UTC))
        for name in ignored | unready:
            metrics.pop(name, None)
        if not metrics:
            raise ReplicaCalculationError(
                "did not receive metrics for targeted pods (pods might be unready)")
        ratio, usage = get_metric_usage_ratio(metrics, target_usage)
        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if tolerances.is_within(ratio):
                return current_replicas, usage, timestamp
            return math.ceil(ratio * ready), usage, timestamp
        if missing and ratio != 1.0:
            for name in missing:
                metrics[name] = PodMetric(target_usage if ratio < 1.0 else 0)
        if scale_up_with_unready:
            for name in unready:
                metrics[name] = PodMetric(0)
        new_ratio, _ = get_metric_usage_ratio(metrics, target_usage)
        replicas = _conservative_replicas(current_replicas, ratio, new_ratio, len(metrics),
                                          tolerances)
        return replicas, usage, timestamp

    def get_object_metric_replicas(self, current_replicas: int, usage: int, target_usage: int,
                                   tolerances: Tolerances, pods: list[Obj]) -> tuple[int, int]:
        """GetObjectMetricReplicas: (replicas, usage) for one object's value against a
        target value."""
        ratio = usage / target_usage
        return self.get_usage_ratio_replica_count(current_replicas, ratio, tolerances,
                                                  pods), usage

    @staticmethod
    def get_object_per_pod_metric_replicas(status_replicas: int, usage: int,
                                           target_average_usage: int, tolerances: Tolerances
                                           ) -> tuple[int, int]:
        """GetObjectPerPodMetricReplicas: (replicas, usage per replica) for one object's
        value against a target average per pod."""
        replicas = status_replicas
        ratio = usage / (target_average_usage * replicas)
        if not tolerances.is_within(ratio):
            replicas = math.ceil(usage / target_average_usage)
        return replicas, math.ceil(usage / status_replicas)

    def get_external_metric_replicas(self, current_replicas: int, values: list[int],
                                     target_usage: int, tolerances: Tolerances,
                                     pods: list[Obj]) -> tuple[int, int]:
        """GetExternalMetricReplicas: (replicas, usage) for the sum of an external metric's
        values (capped at MaxInt64) against a target value."""
        usage = min(MAX_INT64, sum(values))
        ratio = usage / target_usage
        return self.get_usage_ratio_replica_count(current_replicas, ratio, tolerances,
                                                  pods), usage

    @staticmethod
    def get_external_per_pod_metric_replicas(status_replicas: int, values: list[int],
                                             target_usage_per_pod: int, tolerances: Tolerances
                                             ) -> tuple[int, int]:
        """GetExternalPerPodMetricReplicas: (replicas, usage per replica) for the sum of an
        external metric's values against a target average per pod (both capped as Go's
        int32 and int64 are)."""
        usage = min(MAX_INT64, sum(values))
        replicas = status_replicas
        ratio = usage / (target_usage_per_pod * replicas) if replicas else math.inf
        if not tolerances.is_within(ratio):
            replicas = min(MAX_INT32, math.ceil(usage / target_usage_per_pod))
        if usage >= MAX_INT64 or not status_replicas:
            return replicas, MAX_INT64 if usage >= MAX_INT64 else usage
        return replicas, math.ceil(usage / status_replicas)

    @staticmethod
    def get_usage_ratio_replica_count(current_replicas: int, ratio: float,
                                      tolerances: Tolerances, pods: list[Obj]) -> int:
        """getUsageRatioReplicaCount: ceil(ratio * ready pods) outside the tolerance; from
        zero replicas, ceil(ratio)."""
        if current_replicas == 0:
            return math.ceil(ratio)
        if tolerances.is_within(ratio):
            return current_replicas
        if not pods:
            raise ReplicaCalculationError(
                "unable to calculate ready pods: no pods returned by selector while "
                "calculating replica count")
        ready = sum(1 for pod in pods if (pod.get("status") or {}).get("phase") == "Running"
                    and (pod_condition(pod, "Ready") or {}).get("status") == "True")
        return min(MAX_INT32, math.ceil(ratio * ready))


def _conservative_replicas(current: int, ratio: float, new_ratio: float, counted: int,
                           tolerances: Tolerances) -> int:
    """The end of both calculations once gaps were filled: no change when the new ratio is
    within the tolerance or points the other way, nor when the count would."""
    if (tolerances.is_within(new_ratio) or (ratio < 1.0 < new_ratio)
            or (ratio > 1.0 > new_ratio)):
        return current
    replicas = math.ceil(new_ratio * counted)
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current
    return replicas
