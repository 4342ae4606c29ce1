"""NodeResourcesFit (upstream plugins/noderesources/fit.go): does the pod fit in what the
node has left, and how full would the node be? Also the resource-allocation arithmetic
that NodeResourcesBalancedAllocation shares (upstream resource_allocation.go)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minikube_py.api import Obj
from minikube_py.api.validation import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_qualified_name,
)
from minikube_py.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PluginArgsError,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from minikube_py.scheduler.framework.types import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    NodeInfo,
    PodInfo,
    Resource,
    is_scalar_resource_name,
)

if TYPE_CHECKING:
    from minikube_py.scheduler.framework.handle import Handle

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

# Shape scores run 0..10 (MaxCustomPriorityScore); the scheduler's run 0..100.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100

_PRE_FILTER_STATE_KEY = "PreFilterNodeResourcesFit"
_PRE_SCORE_STATE_KEY = "PreScoreNodeResourcesFit"

Scorer = Callable[[list[int], list[int]], int]  # (requested, allocatable) -> 0..100


def default_resources() -> list[Obj]:
    """defaultResourceSpec: cpu and memory, weight 1 each."""
    return [{"name": CPU, "weight": 1}, {"name": MEMORY, "weight": 1}]


def is_extended_resource_name(name: str) -> bool:
    """IsExtendedResourceName: `domain/name` outside kubernetes.io, such as nvidia.com/gpu
    (hugepages-* are scalar resources too, but not extended ones)."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not validate_qualified_name("requests." + name)


@dataclass(slots=True)
class _FitState:
    """PreFilter's result: the pod's requests, and the extended resources to check."""

    requests: Resource
    scalars: list[tuple[str, int]]  # (name, amount), ignored ones left out, sorted


class NodeResourcesFit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """Filter: drop nodes whose allocatable cannot hold the pod's requests.
    Score: LeastAllocated (spread), MostAllocated (pack) or RequestedToCapacityRatio."""

    name = "NodeResourcesFit"
    node_local = True  # answers depend on the pod's spec and the node alone

    def __init__(self, args: Obj | None = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        configured = self.args.get("scoringStrategy")
        strategy = {"type": LEAST_ALLOCATED} if configured is None else dict(configured)
        strategy["resources"] = [{"name": r.get("name", ""), "weight": r.get("weight") or 1}
                                 for r in strategy.get("resources") or default_resources()]
        errors = _validate_fit_args(self.args, strategy)
        if errors:
            raise PluginArgsError(errors)
        self.ignored_resources = set(self.args.get("ignoredResources") or [])
        self.ignored_resource_groups = set(self.args.get("ignoredResourceGroups") or [])
        self.strategy_type: str = strategy["type"]
        self.resources: list[Obj] = strategy["resources"]
        self.resource_names = [r["name"] for r in self.resources]
        self.weights = [int(r["weight"]) for r in self.resources]
        if self.strategy_type == LEAST_ALLOCATED:
            self.scorer = _least_allocated_scorer(self.weights)
        elif self.strategy_type == MOST_ALLOCATED:
            self.scorer = _most_allocated_scorer(self.weights)
        else:
            shape = strategy["requestedToCapacityRatio"]["shape"]
            self.scorer = _requested_to_capacity_ratio_scorer(self.weights, shape)

    # -- PreFilter / Filter ------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        """Decide once which of the pod's extended resources the Filter checks."""
        scalars = sorted((name, amount) for name, amount in pod.requests.scalar_resources.items()
                         if amount != 0 and not self._ignored(name))
        state.write(_PRE_FILTER_STATE_KEY, _FitState(pod.requests, scalars))
        return None, SUCCESS

    def _ignored(self, name: str) -> bool:
        """ignoredResources / ignoredResourceGroups apply to extended resources only."""
        if not is_extended_resource_name(name):
            return False
        return name in self.ignored_resources or name.split("/")[0] in self.ignored_resource_groups

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        """One reason per missing resource. When the pod asks for more than the node's
        whole allocatable, evicting pods cannot help: UnschedulableAndUnresolvable."""
        fit: _FitState = state.read(_PRE_FILTER_STATE_KEY)
        requests, allocatable, used = fit.requests, node_info.allocatable, node_info.requested
        reasons: list[str] = []
        unresolvable = False
        if len(node_info.pods) + 1 > allocatable.allowed_pod_number:
            reasons.append("Too many pods")
        for reason, want, have, in_use in (
                ("Insufficient cpu", requests.milli_cpu, allocatable.milli_cpu, used.milli_cpu),
                ("Insufficient memory", requests.memory, allocatable.memory, used.memory),
                ("Insufficient ephemeral-storage", requests.ephemeral_storage,
                 allocatable.ephemeral_storage, used.ephemeral_storage)):
            if want > 0 and want > have - in_use:
                reasons.append(reason)
                unresolvable = unresolvable or want > have
        for name, want in fit.scalars:
            have = allocatable.scalar_resources.get(name, 0)
            if want > have - used.scalar_resources.get(name, 0):
                reasons.append(f"Insufficient {name}")
                unresolvable = unresolvable or want > have
        if not reasons:
            return SUCCESS
        return Status.unschedulable(*reasons, unresolvable=unresolvable)

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                     ) -> dict[str, Status]:
        """Filter for many nodes: the common case (pods, cpu, memory, storage) checked
        inline; filter() words the reasons for the nodes that are out."""
        fit: _FitState = state.read(_PRE_FILTER_STATE_KEY)
        if fit.scalars:  # extended resources: node by node
            return super().filter_nodes(state, pod, nodes)
        cpu, memory = fit.requests.milli_cpu, fit.requests.memory
        storage = fit.requests.ephemeral_storage
        rejected = {}
        for info in nodes:
            allocatable, used = info.allocatable, info.requested
            if (len(info.pods) >= allocatable.allowed_pod_number
                    or cpu > allocatable.milli_cpu - used.milli_cpu and cpu > 0
                    or memory > allocatable.memory - used.memory and memory > 0
                    or storage > 0
                    and storage > allocatable.ephemeral_storage - used.ephemeral_storage):
                status = self.filter(state, pod, info)
                if status.code:  # anything but Code.SUCCESS (0)
                    rejected[info.name] = status
        return rejected

    # -- PreScore / Score -----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        """The pod's request for each scored resource; cpu and memory count as at least
        100m and 200Mi per container, so pods without requests still spread."""
        state.write(_PRE_SCORE_STATE_KEY,
                    [pod.non_zero_requests.get(name) for name in self.resource_names])
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        """The strategy's score of the node with the pod on it."""
        pod_requests: list[int] = state.read(_PRE_SCORE_STATE_KEY)
        requested, _, allocatable = allocation_vectors(
            node_info, self.resource_names, pod_requests, use_requested=False)
        return self.scorer(requested, allocatable), SUCCESS

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                    ) -> tuple[list[int], Status]:
        """Score for many nodes: with the default resources (cpu and memory, which come
        from the non-zero sums) the vectors are read inline."""
        if self.resource_names != [CPU, MEMORY]:
            return super().score_nodes(state, pod, nodes)
        cpu, memory = state.read(_PRE_SCORE_STATE_KEY)
        scorer = self.scorer
        least_allocated = self.strategy_type == LEAST_ALLOCATED
        cpu_weight, memory_weight = self.weights
        weight_sum = cpu_weight + memory_weight
        scores = []
        for info in nodes:
            allocatable, used = info.allocatable, info.non_zero_requested
            cpu_capacity, memory_capacity = allocatable.milli_cpu, allocatable.memory
            cpu_wanted, memory_wanted = used.milli_cpu + cpu, used.memory + memory
            if least_allocated and cpu_capacity and memory_capacity:
                # leastResourceScorer, written out for the two resources every node has.
                total = 0
                if cpu_wanted <= cpu_capacity:
                    total += ((cpu_capacity - cpu_wanted) * MAX_NODE_SCORE // cpu_capacity
                              * cpu_weight)
                if memory_wanted <= memory_capacity:
                    total += ((memory_capacity - memory_wanted) * MAX_NODE_SCORE
                              // memory_capacity * memory_weight)
                scores.append(total // weight_sum)
            else:
                scores.append(scorer([cpu_wanted, memory_wanted],
                                     [cpu_capacity, memory_capacity]))
        return scores, SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        """Room is freed by a pod leaving or shrinking, or a node added or grown."""
        return [ClusterEvent("Pod", "Delete"), ClusterEvent("Pod", "UpdatePodScaleDown"),
                ClusterEvent("Node", "Add"), ClusterEvent("Node", "UpdateNodeAllocatable")]


# -- resource allocation (upstream resource_allocation.go) ------------------------------------


def allocation_vectors(node_info: NodeInfo, names: list[str], pod_requests: list[int], *,
                       use_requested: bool) -> tuple[list[int], list[int], list[int]]:
    """calculateResourceAllocatableRequest for each scored resource: (requested with the
    pod, requested without it, allocatable). A resource the node does not have, or an
    extended resource the pod does not ask for, is (0, 0, 0) and left out of the score.

    cpu and memory come from the non-zero sums unless `use_requested`."""
    allocatable, requested = node_info.allocatable, node_info.requested
    sums = requested if use_requested else node_info.non_zero_requested
    with_pod, without_pod, capacities = [0] * len(names), [0] * len(names), [0] * len(names)
    for i, name in enumerate(names):
        pod_request = pod_requests[i]
        if name == CPU:
            alloc, used = allocatable.milli_cpu, sums.milli_cpu
        elif name == MEMORY:
            alloc, used = allocatable.memory, sums.memory
        elif name == EPHEMERAL_STORAGE:
            alloc, used = allocatable.ephemeral_storage, requested.ephemeral_storage
        elif pod_request == 0 and is_scalar_resource_name(name):
            continue
        elif name in allocatable.scalar_resources:
            alloc = allocatable.scalar_resources[name]
            used = requested.scalar_resources.get(name, 0)
        else:
            continue
        if alloc != 0:
            with_pod[i], without_pod[i], capacities[i] = used + pod_request, used, alloc
    return with_pod, without_pod, capacities


def _least_allocated_scorer(weights: list[int]) -> Scorer:
    """leastResourceScorer: the weighted mean of the free share of each resource."""
    def score(requested: list[int], allocatable: list[int]) -> int:
        total = weight_sum = 0
        for i, capacity in enumerate(allocatable):
            if capacity == 0:
                continue
            if requested[i] <= capacity:
                total += (capacity - requested[i]) * MAX_NODE_SCORE // capacity * weights[i]
            weight_sum += weights[i]
        return total // weight_sum if weight_sum else 0
    return score


def _most_allocated_scorer(weights: list[int]) -> Scorer:
    """mostResourceScorer: the weighted mean of the used share of each resource (capped
    at full: pods without requests may count for more than the node has)."""
    def score(requested: list[int], allocatable: list[int]) -> int:
        total = weight_sum = 0
        for i, capacity in enumerate(allocatable):
            if capacity == 0:
                continue
            total += min(requested[i], capacity) * MAX_NODE_SCORE // capacity * weights[i]
            weight_sum += weights[i]
        return total // weight_sum if weight_sum else 0
    return score


def _go_div(a: int, b: int) -> int:
    """Go's integer division, which truncates toward zero (Python's // floors)."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def broken_linear_function(shape: list[tuple[int, int]]) -> Callable[[int], int]:
    """helper.BuildBrokenLinearFunction: straight segments between the (utilization,
    score) points; flat before the first point and after the last."""
    def value(p: int) -> int:
        for i, (utilization, score) in enumerate(shape):
            if p <= utilization:
                if i == 0:
                    return score
                last_utilization, last_score = shape[i - 1]
                return last_score + _go_div((score - last_score) * (p - last_utilization),
                                            utilization - last_utilization)
        return shape[-1][1]
    return value


def _requested_to_capacity_ratio_scorer(weights: list[int], shape: list[Obj]) -> Scorer:
    """requestedToCapacityRatioScorer: each resource's utilization (0..100) through the
    shape (its 0..10 scores scaled to 0..100); the rounded weighted mean of the resources
    that score above 0."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = broken_linear_function([(int(p.get("utilization", 0)), int(p.get("score", 0)) * scale)
                                  for p in shape])

    def score(requested: list[int], allocatable: list[int]) -> int:
        total = weight_sum = 0
        for i, capacity in enumerate(allocatable):
            if capacity == 0:
                continue
            utilization = min(requested[i], capacity) * MAX_UTILIZATION // capacity
            value = raw(utilization)
            if value > 0:
                total += value * weights[i]
                weight_sum += weights[i]
        # math.Round of the mean: halves round up (all values are non-negative).
        return (2 * total + weight_sum) // (2 * weight_sum) if weight_sum else 0
    return score


# -- args ---------------------------------------------------------------------------------------


def _validate_fit_args(args: Obj, strategy: Obj) -> list[str]:
    """ValidateNodeResourcesFitArgs, on the args after upstream's defaulting."""
    errors: list[FieldError] = []
    for i, name in enumerate(args.get("ignoredResources") or []):
        errors += [invalid(f"ignoredResources[{i}]", name, m)
                   for m in validate_qualified_name(name)]
    for i, group in enumerate(args.get("ignoredResourceGroups") or []):
        path = f"ignoredResourceGroups[{i}]"
        if "/" in group:
            errors.append(invalid(path, group, "resource group name can't contain '/'"))
        errors += [invalid(path, group, m) for m in validate_qualified_name(group)]
    kind = strategy.get("type") or ""
    if kind not in SCORING_STRATEGIES:
        errors.append(not_supported("scoringStrategy.type", kind, sorted(SCORING_STRATEGIES)))
    for i, resource in enumerate(strategy["resources"]):
        weight = resource["weight"]
        if not isinstance(weight, int) or not 0 < weight <= 100:
            errors.append(invalid(f"scoringStrategy.resources[{i}].weight", weight,
                                  f"resource weight of {resource['name']} not in valid range "
                                  "(0, 100]"))
    ratio_path = "scoringStrategy.requestedToCapacityRatio"
    ratio = strategy.get("requestedToCapacityRatio")
    if kind == REQUESTED_TO_CAPACITY_RATIO:
        if ratio is None:
            errors.append(required(ratio_path,
                                   "must be specified when type is RequestedToCapacityRatio"))
        else:
            errors += _validate_shape(ratio.get("shape") or [], f"{ratio_path}.shape")
    elif ratio is not None:
        errors.append(forbidden(ratio_path, "must be nil when type is not "
                                            "RequestedToCapacityRatio"))
    return [str(e) for e in errors]


def _validate_shape(shape: list[Obj], path: str) -> list[FieldError]:
    """validateFunctionShape: at least one point, utilizations increasing within 0..100,
    scores within 0..10."""
    if not shape:
        return [required(path, "at least one point must be specified")]
    errors = []
    for i in range(1, len(shape)):
        if shape[i - 1].get("utilization", 0) >= shape[i].get("utilization", 0):
            errors.append(invalid(f"{path}[{i}].utilization", shape[i].get("utilization", 0),
                                  "values must be sorted in increasing order"))
            break
    for i, point in enumerate(shape):
        utilization, score = point.get("utilization", 0), point.get("score", 0)
        if not 0 <= utilization <= MAX_UTILIZATION:
            errors.append(invalid(f"{path}[{i}].utilization", utilization,
                                  f"not in valid range [0, {MAX_UTILIZATION}]"))
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(invalid(f"{path}[{i}].score", score,
                                  f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"))
    return errors
