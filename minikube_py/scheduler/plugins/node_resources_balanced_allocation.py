"""NodeResourcesBalancedAllocation (upstream plugins/noderesources/balanced_allocation.go):
prefer nodes whose resources end up used in equal shares, so none runs out first."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from minikube_py.api import Obj
from minikube_py.api.validation import FieldError, duplicate, invalid
from minikube_py.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SUCCESS,
    ClusterEvent,
    CycleState,
    PluginArgsError,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from minikube_py.scheduler.framework.types import CPU, MEMORY, NodeInfo, PodInfo
from minikube_py.scheduler.plugins.node_resources_fit import allocation_vectors, default_resources

if TYPE_CHECKING:
    from minikube_py.scheduler.framework.handle import Handle

_PRE_SCORE_STATE_KEY = "PreScoreNodeResourcesBalancedAllocation"


def balance_score(requested: list[int], allocatable: list[int]) -> int:
    """(1 - std) x 100, where std is the standard deviation of the used shares
    (requested / allocatable, at most 1) of the resources the node has."""
    fractions = [min(requested[i] / capacity, 1.0)
                 for i, capacity in enumerate(allocatable) if capacity != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin):
    """Score: how much placing the pod improves the balance of the node's used shares
    (75 for no change, 100 for perfect balance gained, 50 for perfect balance lost)."""

    name = "NodeResourcesBalancedAllocation"
    node_local = True  # answers depend on the pod's spec and the node alone

    def __init__(self, args: Obj | None = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        resources = [{"name": r.get("name", ""), "weight": r.get("weight") or 1}
                     for r in self.args.get("resources") or default_resources()]
        errors = _validate_args(resources)
        if errors:
            raise PluginArgsError([str(e) for e in errors])
        self.resources = [r["name"] for r in resources]

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        """The pod's requests (not the non-zero defaults); a pod requesting nothing is
        skipped, or every such pod would pile onto the same best-balanced node."""
        requests = [pod.requests.get(name) for name in self.resources]
        if not any(requests):
            return Status.skip()
        state.write(_PRE_SCORE_STATE_KEY, requests)
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        """50 + (50 + balance with the pod - balance without it) / 2."""
        requests: list[int] = state.read(_PRE_SCORE_STATE_KEY)
        with_pod, without_pod, allocatable = allocation_vectors(
            node_info, self.resources, requests, use_requested=True)
        change = balance_score(with_pod, allocatable) - balance_score(without_pod, allocatable)
        half = MAX_NODE_SCORE // 2
        return half + (half + change) // 2, SUCCESS

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                    ) -> tuple[list[int], Status]:
        """Score for many nodes: with the default resources (cpu and memory) the two used
        shares are computed inline; nodes lacking either go through score()."""
        if self.resources != [CPU, MEMORY]:
            return super().score_nodes(state, pod, nodes)
        cpu, memory = state.read(_PRE_SCORE_STATE_KEY)
        half = MAX_NODE_SCORE // 2
        scores = []
        for info in nodes:
            allocatable, used = info.allocatable, info.requested
            cpu_capacity, memory_capacity = allocatable.milli_cpu, allocatable.memory
            if not cpu_capacity or not memory_capacity:
                scores.append(self.score(state, pod, info)[0])
                continue
            # The used shares (at most 1) without and with the pod.
            cpu_before = used.milli_cpu / cpu_capacity
            memory_before = used.memory / memory_capacity
            cpu_after = (used.milli_cpu + cpu) / cpu_capacity
            memory_after = (used.memory + memory) / memory_capacity
            before = int((1 - abs((cpu_before if cpu_before < 1.0 else 1.0)
                                  - (memory_before if memory_before < 1.0 else 1.0)) / 2)
                         * MAX_NODE_SCORE)
            after = int((1 - abs((cpu_after if cpu_after < 1.0 else 1.0)
                                 - (memory_after if memory_after < 1.0 else 1.0)) / 2)
                        * MAX_NODE_SCORE)
            scores.append(half + (half + after - before) // 2)
        return scores, SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        """None: a score plugin never rejects a pod."""
        return []


def _validate_args(resources: list[Obj]) -> list[FieldError]:
    """ValidateNodeResourcesBalancedAllocationArgs: each resource once, weight 1."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, resource in enumerate(resources):
        if resource["name"] in seen:
            errors.append(duplicate(f"resources[{i}].name", resource["name"]))
        seen.add(resource["name"])
        if resource["weight"] != 1:
            errors.append(invalid(f"resources[{i}].weight", resource["weight"], "must be 1"))
    return errors
