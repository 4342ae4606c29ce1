"""NodeResourcesFit: a node must hold the pod's requests; the scoring strategies rank the
nodes that do; args are defaulted and validated as upstream's NodeResourcesFitArgs."""

from __future__ import annotations

import pytest

from minikube_py.api import Obj
from minikube_py.scheduler.framework.interface import (
    ClusterEvent,
    Code,
    CycleState,
    PluginArgsError,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.node_resources_fit import (
    NodeResourcesFit,
    broken_linear_function,
)

EXTENDED_A = "example.com/aaa"
EXTENDED_B = "example.com/bbb"
HUGE_PAGES = "hugepages-2Mi"


def pod(*requests: dict[str, str], init: tuple[dict[str, str], ...] = ()) -> Obj:
    """A pod with one container per requests dict (upstream's st.MakePod().Req(...))."""
    def container(name: str, req: dict[str, str]) -> Obj:
        return {"name": name, "image": "i", "resources": {"requests": req}}
    return {"metadata": {"name": "p", "namespace": "default", "uid": "p"},
            "spec": {"containers": [container(f"c{i}", r) for i, r in enumerate(requests)],
                     "initContainers": [container(f"i{i}", r) for i, r in enumerate(init)]}}


def node(name: str, allocatable: dict[str, str], *pods: Obj) -> NodeInfo:
    return NodeInfo.of({"metadata": {"name": name}, "status": {"allocatable": allocatable}},
                       pods)


# Upstream TestEnoughRequests: makeAllocatableResources(10, 20, 32, 5, 20, 5).
ALLOCATABLE = {"cpu": "10m", "memory": "20", "pods": "32", EXTENDED_A: "5",
               "ephemeral-storage": "20", HUGE_PAGES: "5"}


def run_filter(plugin: NodeResourcesFit, new_pod: Obj, node_info: NodeInfo
               ) -> tuple[Code, list[str]]:
    state, pod_info = CycleState(), PodInfo.of(new_pod)
    _, status = plugin.pre_filter(state, pod_info, [node_info])
    assert status.is_success()
    status = plugin.filter(state, pod_info, node_info)
    return status.code, status.reasons


FITS = (Code.SUCCESS, [])


def unschedulable(*reasons: str) -> tuple[Code, list[str]]:
    return Code.UNSCHEDULABLE, list(reasons)


def unresolvable(*reasons: str) -> tuple[Code, list[str]]:
    return Code.UNSCHEDULABLE_AND_UNRESOLVABLE, list(reasons)


# Upstream TestEnoughRequests (noderesources/fit_test.go).
@pytest.mark.parametrize(("new_pod", "existing", "expected"), [
    (pod(), pod({"cpu": "10m", "memory": "20"}), FITS),  # no resources requested always fits
    (pod({"cpu": "1m", "memory": "1"}), pod({"cpu": "10m", "memory": "20"}),
     unschedulable("Insufficient cpu", "Insufficient memory")),  # too many resources fails
    (pod({"cpu": "1m", "memory": "1"}, init=({"cpu": "3m", "memory": "1"},)),
     pod({"cpu": "8m", "memory": "19"}),
     unschedulable("Insufficient cpu")),  # too many resources fails due to init container cpu
    (pod({"cpu": "1m", "memory": "1"}, init=({"cpu": "1m", "memory": "3"},)),
     pod({"cpu": "9m", "memory": "19"}),
     unschedulable("Insufficient memory")),  # ... due to init container memory
    (pod({"cpu": "1m", "memory": "1"}, init=({"cpu": "1m", "memory": "1"},)),
     pod({"cpu": "9m", "memory": "19"}), FITS),  # init container fits because it's the max
    (pod({"cpu": "1m", "memory": "1"}), pod({"cpu": "5m", "memory": "5"}), FITS),  # both fit
    (pod({"cpu": "2m", "memory": "1"}), pod({"cpu": "9m", "memory": "5"}),
     unschedulable("Insufficient cpu")),  # one resource memory fits
    (pod({"cpu": "1m", "memory": "2"}), pod({"cpu": "5m", "memory": "19"}),
     unschedulable("Insufficient memory")),  # one resource cpu fits
    (pod({"cpu": "5m", "memory": "1"}), pod({"cpu": "5m", "memory": "19"}), FITS),  # equal edge
    (pod({EXTENDED_A: "1"}), pod(), FITS),  # extended resource fits
    (pod({EXTENDED_A: "1"}), pod({EXTENDED_A: "5"}),
     unschedulable(f"Insufficient {EXTENDED_A}")),  # extended resource capacity enforced
    (pod({EXTENDED_A: "6"}), pod(),
     unresolvable(f"Insufficient {EXTENDED_A}")),  # more than allocatable: preemption won't help
    (pod({EXTENDED_B: "1"}), pod(),
     unresolvable(f"Insufficient {EXTENDED_B}")),  # unknown extended resource
    (pod({HUGE_PAGES: "6"}), pod(),
     unresolvable(f"Insufficient {HUGE_PAGES}")),  # hugepages are enforced too
    (pod({"ephemeral-storage": "25"}), pod(),
     unresolvable("Insufficient ephemeral-storage")),  # storage ephemeral local storage
    (pod({"ephemeral-storage": "10"}), pod({"ephemeral-storage": "10"}), FITS),
    (pod({"cpu": "11m", "memory": "1"}), pod({"cpu": "9m"}),
     unresolvable("Insufficient cpu")),  # bigger than the node: unresolvable
    (pod({EXTENDED_B: "1", EXTENDED_A: "6", "memory": "1"}), pod({"memory": "20"}),
     unresolvable("Insufficient memory", f"Insufficient {EXTENDED_A}",
                  f"Insufficient {EXTENDED_B}")),  # one reason per missing resource, in order
])
def test_filter_reports_each_insufficient_resource(
        new_pod: Obj, existing: Obj, expected: tuple[Code, list[str]]) -> None:
    node_info = node("machine1", ALLOCATABLE, existing)
    assert run_filter(NodeResourcesFit(), new_pod, node_info) == expected


def test_filter_rejects_a_node_that_holds_its_maximum_number_of_pods() -> None:
    node_info = node("machine1", {**ALLOCATABLE, "pods": "1"}, pod())
    assert run_filter(NodeResourcesFit(), pod(), node_info) == unschedulable("Too many pods")
    assert run_filter(NodeResourcesFit(), pod({"cpu": "11m"}), node_info) == unresolvable(
        "Too many pods", "Insufficient cpu")


@pytest.mark.parametrize(("plugin_args", "requests", "expected"), [
    ({"ignoredResources": [EXTENDED_B]}, {EXTENDED_B: "1"}, FITS),
    ({"ignoredResourceGroups": ["example.com"]}, {EXTENDED_B: "1"}, FITS),
    ({"ignoredResourceGroups": ["example.com"]}, {HUGE_PAGES: "6"},
     unresolvable(f"Insufficient {HUGE_PAGES}")),  # only extended resources can be ignored
    ({"ignoredResources": ["example.com/other"]}, {EXTENDED_B: "1"},
     unresolvable(f"Insufficient {EXTENDED_B}")),
])
def test_ignored_extended_resources_are_not_checked(
        plugin_args: Obj, requests: dict[str, str], expected: tuple[Code, list[str]]) -> None:
    node_info = node("machine1", ALLOCATABLE)
    assert run_filter(NodeResourcesFit(plugin_args), pod(requests), node_info) == expected


def scores(plugin: NodeResourcesFit, new_pod: Obj, nodes: list[NodeInfo]) -> dict[str, int]:
    state, pod_info = CycleState(), PodInfo.of(new_pod)
    assert plugin.pre_score(state, pod_info, nodes).is_success()
    result = {}
    for info in nodes:
        score, status = plugin.score(state, pod_info, info)
        assert status.is_success()
        result[info.name] = score
    assert plugin.normalize_score(state, pod_info, result) is None
    return result


NO_CONTAINERS: Obj = {"metadata": {"name": "e", "namespace": "default"}, "spec": {}}
REQUESTED = pod({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})


def sized(name: str, cpu: str, memory: str, *pods: Obj) -> NodeInfo:
    return node(name, {"cpu": cpu, "memory": memory, "pods": "110"}, *pods)


# Upstream TestLeastAllocatedScoringStrategy (noderesources/least_allocated_test.go).
@pytest.mark.parametrize(("new_pod", "nodes", "resources", "expected"), [
    # nothing scheduled, nothing requested
    (NO_CONTAINERS, [sized("node1", "4000", "10000"), sized("node2", "4000", "10000")],
     None, {"node1": 100, "node2": 100}),
    # nothing scheduled, resources requested, differently sized nodes
    (REQUESTED, [sized("node1", "4000", "10000"), sized("node2", "6000", "10000")],
     None, {"node1": 37, "node2": 50}),
    # no resources requested, pods scheduled with resources
    (NO_CONTAINERS,
     [sized("node1", "10000", "20000", pod({"cpu": "3000", "memory": "0"}),
            pod({"cpu": "3000", "memory": "0"})),
      sized("node2", "10000", "20000", pod({"cpu": "3000", "memory": "0"}),
            pod({"cpu": "3000", "memory": "5000"}))],
     None, {"node1": 70, "node2": 57}),
    # requested resources exceed node capacity
    (pod({"cpu": "3000", "memory": "0"}),
     [sized("node1", "4000", "10000", pod({"cpu": "3000", "memory": "0"})),
      sized("node2", "4000", "10000", pod({"cpu": "3000", "memory": "5000"}))],
     None, {"node1": 50, "node2": 25}),
    # zero node resources
    (NO_CONTAINERS, [node("node1", {}, pod({"cpu": "3000", "memory": "0"}))],
     None, {"node1": 0}),
    # different weights on cpu and memory
    (REQUESTED, [sized("node1", "4000", "10000"), sized("node2", "6000", "10000")],
     [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
     {"node1": 41, "node2": 50}),
    # an extended resource the pod does not request is left out
    (REQUESTED, [sized("node1", "6000", "10000"),
                 node("node2", {"cpu": "6000", "memory": "10000", EXTENDED_A: "4"})],
     [{"name": "cpu"}, {"name": "memory"}, {"name": EXTENDED_A}],
     {"node1": 50, "node2": 50}),
])
def test_least_allocated_prefers_the_emptiest_node(
        new_pod: Obj, nodes: list[NodeInfo], resources: list[Obj] | None,
        expected: dict[str, int]) -> None:
    strategy: Obj = {"type": "LeastAllocated"}
    if resources is not None:
        strategy["resources"] = resources
    plugin = NodeResourcesFit({"scoringStrategy": strategy})
    assert scores(plugin, new_pod, nodes) == expected


def test_pods_without_requests_count_default_requests_when_scoring() -> None:
    """100m cpu and 200Mi memory per container without requests (non-zero requests)."""
    best_effort = {"metadata": {"name": "b", "namespace": "default"},
                   "spec": {"containers": [{"name": "c", "image": "i"}]}}
    nodes = [sized("node1", "1", "1000Mi"), sized("node2", "2", "400Mi")]
    # node1: cpu (1000-100)*100/1000 = 90, memory (1000-200)*100/1000 = 80 -> 85
    # node2: cpu (2000-100)*100/2000 = 95, memory (400-200)*100/400 = 50 -> 72
    assert scores(NodeResourcesFit(), best_effort, nodes) == {"node1": 85, "node2": 72}


# Upstream TestMostAllocatedScoringStrategy (noderesources/most_allocated_test.go).
@pytest.mark.parametrize(("new_pod", "nodes", "expected"), [
    (NO_CONTAINERS, [sized("node1", "4000", "10000"), sized("node2", "4000", "10000")],
     {"node1": 0, "node2": 0}),  # nothing scheduled, nothing requested
    (REQUESTED, [sized("node1", "4000", "10000"), sized("node2", "6000", "10000")],
     {"node1": 62, "node2": 50}),  # nothing scheduled, differently sized nodes
    (pod({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}),
     [sized("node1", "10000", "20000", pod({"cpu": "3000", "memory": "0"})),
      sized("node2", "10000", "20000", pod({"cpu": "3000", "memory": "5000"}))],
     {"node1": 42, "node2": 55}),  # resources requested, pods scheduled with resources
    (pod({"cpu": "5000", "memory": "10000"}),
     [sized("node1", "4000", "10000", pod({"cpu": "3000", "memory": "0"}))],
     {"node1": 100}),  # requested beyond capacity counts as full
])
def test_most_allocated_prefers_the_fullest_node(
        new_pod: Obj, nodes: list[NodeInfo], expected: dict[str, int]) -> None:
    plugin = NodeResourcesFit({"scoringStrategy": {"type": "MostAllocated"}})
    assert scores(plugin, new_pod, nodes) == expected


# Upstream TestBrokenLinearFunction (helper/shape_score_test.go): Go's truncating division.
@pytest.mark.parametrize(("shape", "examples"), [
    ([(10, 1), (90, 9)],
     {0: 1, 9: 1, 10: 1, 15: 1, 19: 1, 20: 2, 89: 8, 90: 9, 99: 9, 100: 9}),
    ([(0, 2), (40, 10), (100, 0)],
     {0: 2, 10: 4, 20: 6, 30: 8, 40: 10, 50: 9, 60: 7, 70: 5, 80: 4, 90: 2, 100: 0}),
    ([(0, 2), (40, 2), (100, 2)], {0: 2, 20: 2, 40: 2, 70: 2, 100: 2}),
])
def test_broken_linear_function_interpolates_between_shape_points(
        shape: list[tuple[int, int]], examples: dict[int, int]) -> None:
    function = broken_linear_function(shape)
    assert {p: function(p) for p in examples} == examples


def test_requested_to_capacity_ratio_scores_through_the_shape() -> None:
    plugin = NodeResourcesFit({"scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10},
                                               {"utilization": 100, "score": 0}]}}})
    nodes = [sized("node1", "4000", "10000"), sized("node2", "6000", "10000")]
    # node1: cpu 75% -> 25, memory 50% -> 50: mean 37.5 rounds to 38
    # node2: cpu 50% -> 50, memory 50% -> 50
    assert scores(plugin, REQUESTED, nodes) == {"node1": 38, "node2": 50}


def test_requested_to_capacity_ratio_bin_packs_with_an_increasing_shape() -> None:
    plugin = NodeResourcesFit({"scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu", "weight": 1}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                               {"utilization": 100, "score": 10}]}}})
    nodes = [sized("node1", "4000", "10000"), sized("node2", "6000", "10000")]
    assert scores(plugin, REQUESTED, nodes) == {"node1": 75, "node2": 50}


def test_args_default_to_least_allocated_on_cpu_and_memory() -> None:
    plugin = NodeResourcesFit()
    assert plugin.strategy_type == "LeastAllocated"
    assert plugin.resources == [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    weighted = NodeResourcesFit({"scoringStrategy": {"type": "MostAllocated",
                                                     "resources": [{"name": "cpu"}]}})
    assert weighted.resources == [{"name": "cpu", "weight": 1}]


STRATEGY_TYPES = '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'


@pytest.mark.parametrize(("plugin_args", "message"), [
    ({"scoringStrategy": {"type": "Foo"}},
     f'scoringStrategy.type: Unsupported value: "Foo": supported values: {STRATEGY_TYPES}'),
    ({"scoringStrategy": {"type": "LeastAllocated",
                          "resources": [{"name": "memory", "weight": 1},
                                        {"name": "cpu", "weight": 101}]}},
     "scoringStrategy.resources[1].weight: Invalid value: 101: resource weight of cpu not in "
     "valid range (0, 100]"),
    ({"scoringStrategy": {"type": "LeastAllocated",
                          "resources": [{"name": "memory", "weight": -1}]}},
     "scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of memory not in "
     "valid range (0, 100]"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
     "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type "
     "is RequestedToCapacityRatio"),
    ({"scoringStrategy": {"type": "MostAllocated", "requestedToCapacityRatio": {"shape": []}}},
     "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not "
     "RequestedToCapacityRatio"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio",
                          "requestedToCapacityRatio": {"shape": []}}},
     "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must "
     "be specified"),
    ({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 50, "score": 5}, {"utilization": 10, "score": 11}]}}},
     "[scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 10: "
     "values must be sorted in increasing order, "
     "scoringStrategy.requestedToCapacityRatio.shape[1].score: Invalid value: 11: "
     "not in valid range [0, 10]]"),
    ({"ignoredResourceGroups": ["example.com/aaa"]},
     'ignoredResourceGroups[0]: Invalid value: "example.com/aaa": resource group name '
     "can't contain '/'"),
])
def test_invalid_args_are_rejected_with_upstream_field_errors(
        plugin_args: Obj, message: str) -> None:
    with pytest.raises(PluginArgsError) as error:
        NodeResourcesFit(plugin_args)
    assert str(error.value) == message


def test_pod_is_retried_when_room_is_freed_or_added() -> None:
    assert NodeResourcesFit().events_to_register() == [
        ClusterEvent("Pod", "Delete"), ClusterEvent("Pod", "UpdatePodScaleDown"),
        ClusterEvent("Node", "Add"), ClusterEvent("Node", "UpdateNodeAllocatable")]
