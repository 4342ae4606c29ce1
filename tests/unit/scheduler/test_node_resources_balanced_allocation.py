"""NodeResourcesBalancedAllocation scores how much a pod improves the balance of a node's
used cpu and memory shares."""

from __future__ import annotations

import pytest

from minikube_py.api import Obj
from minikube_py.scheduler.framework.interface import CycleState, PluginArgsError
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.node_resources_balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balance_score,
)

EXTENDED = "nvidia.com/gpu"


def pod(*requests: dict[str, str]) -> Obj:
    return {"metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": f"c{i}", "image": "i",
                                     "resources": {"requests": r}}
                                    for i, r in enumerate(requests)]}}


def node(name: str, allocatable: dict[str, str], *pods: Obj) -> NodeInfo:
    return NodeInfo.of({"metadata": {"name": name}, "status": {"allocatable": allocatable}},
                       pods)


def scores(plugin: NodeResourcesBalancedAllocation, new_pod: Obj, nodes: list[NodeInfo]
           ) -> dict[str, int]:
    state, pod_info = CycleState(), PodInfo.of(new_pod)
    assert plugin.pre_score(state, pod_info, nodes).is_success()
    return {info.name: plugin.score(state, pod_info, info)[0] for info in nodes}


@pytest.mark.parametrize(("requested", "allocatable", "expected"), [
    ([0, 0], [4, 10], 100),  # empty is balanced
    ([3, 5], [4, 10], 87),  # shares 0.75 and 0.5: std 0.125
    ([4, 0], [4, 10], 50),  # one full, one empty: std 0.5
    ([8, 0], [4, 10], 50),  # shares are capped at 1
    ([3, 5, 0], [4, 10, 0], 87),  # a resource the node lacks is left out
    ([1, 1, 2], [2, 2, 2], 76),  # three shares: std of 0.5, 0.5, 1 is 0.2357
    ([1, 0], [2, 0], 100),  # a single share has no deviation
])
def test_balance_score_is_one_minus_the_std_of_the_used_shares(
        requested: list[int], allocatable: list[int], expected: int) -> None:
    assert balance_score(requested, allocatable) == expected


REQUESTED = pod({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})


# After upstream TestNodeResourcesBalancedAllocation, with the scoring change of
# kubernetes/kubernetes#135573: 50 + (50 + balance with the pod - balance without) / 2.
@pytest.mark.parametrize(("new_pod", "nodes", "expected"), [
    # nothing scheduled, differently sized nodes: node1 ends 0.75/0.5 (87, was 100),
    # node2 ends 0.5/0.5 (100, was 100)
    (REQUESTED, [node("node1", {"cpu": "4000", "memory": "10000"}),
                 node("node2", {"cpu": "6000", "memory": "10000"})],
     {"node1": 68, "node2": 75}),
    # the pod evens out cpu-heavy node1: 0.3/0 (85) becomes 0.3/0.25 (97); it unbalances
    # node2: 0.3/0.3 (100) becomes 0.3/0.55 (87)
    (pod({"memory": "5000"}),
     [node("node1", {"cpu": "10000", "memory": "20000"}, pod({"cpu": "3000"})),
      node("node2", {"cpu": "10000", "memory": "20000"}, pod({"cpu": "3000", "memory": "6000"}))],
     {"node1": 81, "node2": 68}),
    # from perfectly balanced to perfectly unbalanced is the lowest score
    (pod({"cpu": "4"}), [node("node1", {"cpu": "4", "memory": "10"})], {"node1": 50}),
])
def test_score_rewards_nodes_whose_balance_improves(
        new_pod: Obj, nodes: list[NodeInfo], expected: dict[str, int]) -> None:
    assert scores(NodeResourcesBalancedAllocation(), new_pod, nodes) == expected


def test_extended_resources_count_when_configured_and_requested() -> None:
    plugin = NodeResourcesBalancedAllocation({"resources": [
        {"name": "cpu"}, {"name": "memory"}, {"name": EXTENDED}]})
    gpu_node = node("gpu", {"cpu": "4", "memory": "4", EXTENDED: "4"})
    # with the pod: 0.5, 0.5, 1 -> 76; without: 0, 0, 0 -> 100; 50 + (50 - 24) / 2 = 63
    assert scores(plugin, pod({"cpu": "2", "memory": "2", EXTENDED: "4"}), [gpu_node]) == {
        "gpu": 63}
    # not requested: the gpu is left out, cpu and memory stay balanced
    assert scores(plugin, pod({"cpu": "2", "memory": "2"}), [gpu_node]) == {"gpu": 75}


def test_pods_requesting_nothing_are_not_scored() -> None:
    best_effort = PodInfo.of(pod({}))
    status = NodeResourcesBalancedAllocation().pre_score(CycleState(), best_effort, [])
    assert status.is_skip()


def test_args_default_to_cpu_and_memory() -> None:
    assert NodeResourcesBalancedAllocation().resources == ["cpu", "memory"]
    assert NodeResourcesBalancedAllocation({"resources": [{"name": "cpu", "weight": 0}]}
                                           ).resources == ["cpu"]


@pytest.mark.parametrize(("plugin_args", "message"), [
    ({"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]},
     'resources[1].name: Duplicate value: "cpu"'),
    ({"resources": [{"name": "cpu", "weight": 2}]},
     "resources[0].weight: Invalid value: 2: must be 1"),
])
def test_invalid_args_are_rejected_with_upstream_field_errors(
        plugin_args: Obj, message: str) -> None:
    with pytest.raises(PluginArgsError) as error:
        NodeResourcesBalancedAllocation(plugin_args)
    assert str(error.value) == message
