"""Container resources for CRI: QoS class, CPU shares and quota, memory limit, OOM score.

Upstream: pkg/apis/core/v1/helper/qos (GetPodQOS), pkg/kubelet/qos/policy.go
(GetContainerOOMScoreAdjust), pkg/kubelet/cm (MilliCPUToShares), pkg/kubelet/kuberuntime
(calculateLinuxResources, milliCPUToQuota) and pkg/api/v1/resource (the downward API's
resourceFieldRef values).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from minikube_py.api import Obj
from minikube_py.api.quantity import QuantityError, cpu_millis, memory_bytes, parse_quantity

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"
QOS_RESOURCES = ("cpu", "memory")

# cgroup CPU shares (cm/helpers_linux.go) and the CFS quota period (100 ms, in µs).
MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
QUOTA_PERIOD = 100000
MIN_QUOTA_PERIOD = 1000

# OOM score adjustments (qos/policy.go): lower is killed later.
GUARANTEED_OOM_SCORE_ADJ = -997
BEST_EFFORT_OOM_SCORE_ADJ = 1000
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
SYSTEM_NODE_CRITICAL = "system-node-critical"


class ResourceFieldError(ValueError):
    """A resourceFieldRef the kubelet cannot answer (unknown resource or container)."""


def _amount(resources: Obj | None, name: str) -> Decimal:
    """The quantity of one resource in a requests/limits map; 0 when absent or invalid."""
    value = (resources or {}).get(name)
    if value is None:
        return Decimal(0)
    try:
        return parse_quantity(value)
    except QuantityError:
        return Decimal(0)


def _requests(container: Obj) -> Obj:
    return (container.get("resources") or {}).get("requests") or {}


def _limits(container: Obj) -> Obj:
    return (container.get("resources") or {}).get("limits") or {}


# -- QoS ----------------------------------------------------------------------------------


def compute_qos_class(pod: Obj) -> str:
    """ComputePodQOS: Guaranteed when every container (init containers too) has cpu and
    memory limits and the pod's requests equal its limits; BestEffort when nothing is
    requested or limited; Burstable otherwise. Only cpu and memory count."""
    spec = pod.get("spec") or {}
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        limited = set()
        for name in QOS_RESOURCES:
            request, limit = _amount(_requests(container), name), _amount(_limits(container), name)
            if request > 0:
                requests[name] = requests.get(name, Decimal(0)) + request
            if limit > 0:
                limited.add(name)
                limits[name] = limits.get(name, Decimal(0)) + limit
        if limited != set(QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and requests.keys() == limits.keys() and all(
            limits[name] == amount for name, amount in requests.items()):
        return GUARANTEED
    return BURSTABLE


def qos_class(pod: Obj) -> str:
    """GetPodQOS: the class the API server wrote into status.qosClass, else computed."""
    return (pod.get("status") or {}).get("qosClass") or compute_qos_class(pod)


# -- OOM score ------------------------------------------------------------------------------


def _is_node_critical(pod: Obj) -> bool:
    """IsNodeCriticalPod: a critical pod (static, mirror, or system priority) of the
    system-node-critical priority class."""
    spec = pod.get("spec") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    critical = (annotations.get("kubernetes.io/config.source", "api") != "api"
                or "kubernetes.io/config.mirror" in annotations
                or (spec.get("priority") or 0) >= SYSTEM_CRITICAL_PRIORITY)
    return critical and spec.get("priorityClassName") == SYSTEM_NODE_CRITICAL


def _is_sidecar(pod: Obj, container: Obj) -> bool:
    """A restartable init container (restartPolicy: Always)."""
    return container.get("restartPolicy") == "Always" and any(
        init.get("name") == container.get("name")
        for init in (pod.get("spec") or {}).get("initContainers") or [])


def oom_score_adj(pod: Obj, container: Obj, memory_capacity: int) -> int:
    """GetContainerOOMScoreAdjust: Guaranteed and node-critical -997, BestEffort 1000,
    Burstable 1000 - 1000*request/capacity kept within [3, 999]; a sidecar scores no
    higher than the pod's regular container with the smallest memory request."""
    if _is_node_critical(pod):
        return GUARANTEED_OOM_SCORE_ADJ
    qos = qos_class(pod)
    if qos == GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos == BEST_EFFORT:
        return BEST_EFFORT_OOM_SCORE_ADJ

    def score(request: int) -> int:
        return 1000 - (1000 * request) // memory_capacity

    adjust = score(memory_bytes(_amount(_requests(container), "memory")))
    regular = (pod.get("spec") or {}).get("containers") or []
    if _is_sidecar(pod, container) and regular:
        smallest = min(memory_bytes(_amount(_requests(c), "memory")) for c in regular)
        adjust = min(adjust, score(smallest))
    if adjust < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return 1000 + GUARANTEED_OOM_SCORE_ADJ
    if adjust == BEST_EFFORT_OOM_SCORE_ADJ:
        return adjust - 1
    return adjust


# -- CPU and memory for CRI ------------------------------------------------------------------


def milli_cpu_to_shares(milli_cpu: int) -> int:
    """MilliCPUToShares: 1 CPU is 1024 shares, within [2, 262144]; no request is 2."""
    if milli_cpu == 0:
        return MIN_SHARES
    return max(MIN_SHARES, min(MAX_SHARES, milli_cpu * SHARES_PER_CPU // 1000))


def milli_cpu_to_quota(milli_cpu: int, period: int = QUOTA_PERIOD) -> int:
    """milliCPUToQuota: the CFS quota (µs per period) for a CPU limit, at least 1 ms;
    0 (no quota) without a limit."""
    if milli_cpu == 0:
        return 0
    return max(MIN_QUOTA_PERIOD, milli_cpu * period // 1000)


@dataclass(frozen=True)
class ContainerResources:
    """The LinuxContainerResources the kubelet sends in CreateContainer."""

    cpu_shares: int
    cpu_quota: int
    cpu_period: int
    memory_limit_in_bytes: int
    oom_score_adj: int


def container_resources(pod: Obj, container: Obj, memory_capacity: int) -> ContainerResources:
    """calculateLinuxResources: shares from the CPU request (or the limit when only a
    limit is set), quota from the CPU limit, the memory limit in bytes (0: none), and
    the OOM score adjustment from the pod's QoS class. `memory_capacity` is the node's."""
    cpu_request = cpu_millis(_amount(_requests(container), "cpu"))
    cpu_limit = cpu_millis(_amount(_limits(container), "cpu"))
    shares = milli_cpu_to_shares(cpu_limit if cpu_request == 0 and cpu_limit else cpu_request)
    return ContainerResources(
        cpu_shares=shares,
        cpu_quota=milli_cpu_to_quota(cpu_limit),
        cpu_period=QUOTA_PERIOD,
        memory_limit_in_bytes=memory_bytes(_amount(_limits(container), "memory")),
        oom_score_adj=oom_score_adj(pod, container, memory_capacity),
    )


def pod_memory_limit(pod: Obj) -> int | None:
    """The pod cgroup's memory limit (ResourceConfigForPod): the sum of the containers'
    limits, at least the largest init container's; None unless every container has one."""
    spec = pod.get("spec") or {}
    limits = [memory_bytes(_amount(_limits(c), "memory")) for c in spec.get("containers") or []]
    if not limits or not all(limits):
        return None
    init_limits = [memory_bytes(_amount(_limits(c), "memory"))
                   for c in spec.get("initContainers") or []]
    return max([sum(limits), *init_limits])


# -- downward API: resourceFieldRef ------------------------------------------------------------

_MERGED_FROM_ALLOCATABLE = ("cpu", "memory", "ephemeral-storage")


def _find_container(pod: Obj, name: str) -> Obj:
    spec = pod.get("spec") or {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        if container.get("name") == name:
            return container
    raise ResourceFieldError(f"container {name} not found")


def resource_field_value(selector: Obj, pod: Obj, container_name: str,
                         allocatable: Obj) -> str:
    """ExtractResourceValueByContainerNameAndNodeAllocatable: a container's request or
    limit divided by the divisor, rounded up. A missing limit reads as the node's
    allocatable amount (MergeContainerResourceLimits)."""
    container = _find_container(pod, container_name)
    limits = dict(_limits(container))
    for name in _MERGED_FROM_ALLOCATABLE:
        if _amount(limits, name) == 0 and name in allocatable:
            limits[name] = allocatable[name]
    divisor = selector.get("divisor") or "1"
    if parse_quantity(divisor) == 0:
        divisor = "1"
    kind, _, name = selector.get("resource", "").partition(".")
    values = {"limits": limits, "requests": _requests(container)}
    if kind not in values or name not in _MERGED_FROM_ALLOCATABLE:
        raise ResourceFieldError(f"unsupported container resource : {selector.get('resource')}")
    amount = _amount(values[kind], name)
    if name == "cpu":
        numerator, denominator = cpu_millis(amount), cpu_millis(divisor)
    else:
        numerator, denominator = memory_bytes(amount), memory_bytes(divisor)
    return str(-(-numerator // denominator))
