"""NodeAffinity: nodeSelector and required node affinity filter, preferred terms score,
matchFields on metadata.name narrow the nodes, and a profile may add affinity to every pod."""

from __future__ import annotations

import pytest

from minikube_py.api import Obj
from minikube_py.scheduler.framework.interface import (
    ClusterEvent,
    Code,
    CycleState,
    PluginArgsError,
    PreFilterResult,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.node_affinity import NodeAffinity

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
ERR_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"


def pod(node_selector: dict[str, str] | None = None, required: list[Obj] | None = None,
        preferred: list[Obj] | None = None) -> PodInfo:
    spec: Obj = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    node_affinity: Obj = {}
    if required is not None:
        node_affinity[REQUIRED] = {"nodeSelectorTerms": required}
    if preferred is not None:
        node_affinity[PREFERRED] = preferred
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    return PodInfo.of({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})


def node(name: str = "node1", **labels: str) -> NodeInfo:
    return NodeInfo.of({"metadata": {"name": name, "labels": labels}})


def expr(key: str, operator: str, *values: str) -> Obj:
    return {"key": key, "operator": operator, "values": list(values)}


def name_is(*names: str, operator: str = "In") -> Obj:
    return {"key": "metadata.name", "operator": operator, "values": list(names)}


def run_filter(plugin: NodeAffinity, pod_info: PodInfo, node_info: NodeInfo) -> tuple[Code, list]:
    """PreFilter then Filter, as the framework does (a PreFilter Skip means "fits")."""
    state = CycleState()
    _, status = plugin.pre_filter(state, pod_info, [node_info])
    if status.is_skip():
        return Code.SUCCESS, []
    if not status.is_success():
        return status.code, status.reasons
    status = plugin.filter(state, pod_info, node_info)
    return status.code, status.reasons


REJECTED = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_POD])
FITS = (Code.SUCCESS, [])


# Upstream TestNodeAffinity (nodeaffinity/node_affinity_test.go).
@pytest.mark.parametrize(("pod_info", "node_info", "expected"), [
    (pod(), node(), FITS),  # no selector
    (pod({"foo": "bar"}), node(), REJECTED),  # missing labels
    (pod({"foo": "bar"}), node(foo="bar"), FITS),  # same labels
    (pod({"foo": "bar"}), node(foo="bar", baz="blah"), FITS),  # node labels are superset
    (pod({"foo": "bar", "baz": "blah"}), node(foo="bar"), REJECTED),  # node labels are subset
    (pod(required=[{"matchExpressions": [expr("foo", "In", "bar", "value2")]}]),
     node(foo="bar"), FITS),  # In operator matches
    (pod(required=[{"matchExpressions": [expr("kernel-version", "Gt", "0204")]}]),
     node(**{"kernel-version": "0206"}), FITS),  # Gt compares integers
    (pod(required=[{"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]}]),
     node(**{"mem-type": "DDR3"}), FITS),
    (pod(required=[{"matchExpressions": [expr("GPU", "Exists")]}]), node(GPU="NVIDIA-GRID-K1"),
     FITS),
    (pod(required=[{"matchExpressions": [expr("foo", "In", "value1", "value2")]}]),
     node(foo="bar"), REJECTED),  # affinity that doesn't match the node's labels
    (pod(required=[]), node(foo="bar"), REJECTED),  # empty nodeSelectorTerms match nothing
    (pod(required=[{}]), node(foo="bar"), REJECTED),  # an empty term matches nothing
    (pod(required=[{"matchExpressions": [expr("foo", "In", "bar")]},
                   {"matchExpressions": [expr("diffkey", "In", "wrong")]}]),
     node(foo="bar"), FITS),  # terms are ORed
    (pod({"foo": "bar"}, [{"matchExpressions": [expr("foo", "Exists")]}]), node(foo="bar"),
     FITS),  # nodeSelector and affinity both match
    (pod({"foo": "bar"}, [{"matchExpressions": [expr("foo", "Exists")]}]), node(foo="barrrrrr"),
     REJECTED),  # affinity matches but the nodeSelector does not
    (pod(required=[{"matchFields": [name_is("node1")]}]), node("node1"), FITS),
    (pod(required=[{"matchFields": [name_is("node1")]}]), node("node2"), REJECTED),
    (pod(required=[{"matchFields": [name_is("node1")]},
                   {"matchExpressions": [expr("foo", "In", "bar")]}]),
     node("node2", foo="bar"), FITS),  # matchFields misses but the other term matches
    (pod(required=[{"matchFields": [name_is("node1")],
                    "matchExpressions": [expr("foo", "In", "bar")]}]),
     node("node1", foo="bar"), FITS),  # one term with both fields and expressions
    (pod(required=[{"matchFields": [name_is("node1")],
                    "matchExpressions": [expr("foo", "In", "bar")]}]),
     node("node1", foo="baz"), REJECTED),  # both must hold
])
def test_filter_checks_node_selector_and_required_affinity(
        pod_info: PodInfo, node_info: NodeInfo, expected: tuple[Code, list]) -> None:
    assert run_filter(NodeAffinity(), pod_info, node_info) == expected


@pytest.mark.parametrize(("pod_info", "expected_result", "expected_code"), [
    (pod(), None, Code.SKIP),  # nothing to check: Filter is skipped
    (pod({}), None, Code.SUCCESS),  # an (empty) nodeSelector is still something to check
    (pod(required=[{"matchExpressions": [expr("foo", "In", "bar")]}]), None, Code.SUCCESS),
    (pod(required=[{"matchFields": [name_is("node1")]}]), PreFilterResult({"node1"}),
     Code.SUCCESS),
    (pod(required=[{"matchFields": [name_is("node1")]}, {"matchFields": [name_is("node2")]}]),
     PreFilterResult({"node1", "node2"}), Code.SUCCESS),  # terms are ORed: union
    (pod(required=[{"matchFields": [name_is("node1", "node2"), name_is("node2", "node3")]}]),
     PreFilterResult({"node2"}), Code.SUCCESS),  # requirements are ANDed: intersection
    (pod(required=[{"matchFields": [name_is("node1")]},
                   {"matchExpressions": [expr("foo", "In", "bar")]}]),
     None, Code.SUCCESS),  # a term without a name requirement may match any node
    (pod(required=[{"matchFields": [name_is("node1", operator="NotIn")]}]), None,
     Code.SUCCESS),  # NotIn names no node
    (pod(required=[{"matchFields": [name_is("node1"), name_is("node2")]}]), None,
     Code.UNSCHEDULABLE_AND_UNRESOLVABLE),  # no name can be both: the terms conflict
])
def test_pre_filter_narrows_nodes_to_names_required_by_match_fields(
        pod_info: PodInfo, expected_result: PreFilterResult | None,
        expected_code: Code) -> None:
    result, status = NodeAffinity().pre_filter(CycleState(), pod_info, [])
    assert result == expected_result
    assert status.code == expected_code
    if expected_code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        assert status.reasons == ["pod affinity terms conflict"]


ADDED = {"addedAffinity": {REQUIRED: {"nodeSelectorTerms": [
    {"matchExpressions": [expr("zone", "In", "foo")]}]}}}


# Upstream TestNodeAffinity, the addedAffinity cases.
@pytest.mark.parametrize(("pod_info", "node_info", "expected"), [
    (pod(), node(zone="foo"), FITS),  # matches added affinity, pod has none
    (pod(), node(zone="bar"), (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_ENFORCED])),
    (pod({"foo": "bar"}), node(zone="foo", foo="bar"), FITS),  # both match
    (pod({"foo": "bar"}), node(zone="foo"), REJECTED),  # added matches, pod's does not
    (pod({"foo": "bar"}), node(zone="bar", foo="bar"),
     (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_ENFORCED])),  # the added check comes first
])
def test_added_affinity_filters_every_pod(
        pod_info: PodInfo, node_info: NodeInfo, expected: tuple[Code, list]) -> None:
    assert run_filter(NodeAffinity(ADDED), pod_info, node_info) == expected


def scores(plugin: NodeAffinity, pod_info: PodInfo, nodes: list[NodeInfo]) -> dict[str, int]:
    state = CycleState()
    assert plugin.pre_score(state, pod_info, nodes).is_success()
    result = {}
    for info in nodes:
        score, status = plugin.score(state, pod_info, info)
        assert status.is_success()
        result[info.name] = score
    assert plugin.normalize_score(state, pod_info, result).is_success()
    return result


def preferred(weight: int, *expressions: Obj) -> Obj:
    return {"weight": weight, "preference": {"matchExpressions": list(expressions)}}


AFFINITY1 = [preferred(2, expr("foo", "In", "bar"))]
AFFINITY2 = [preferred(2, expr("foo", "In", "bar")),
             preferred(4, expr("key", "In", "value")),
             preferred(5, expr("foo", "In", "bar"), expr("key", "In", "value"),
                       expr("az", "In", "az1"))]


# Upstream TestNodeAffinityPriority.
@pytest.mark.parametrize(("plugin_args", "pod_info", "nodes", "expected"), [
    # all nodes are same priority when no preferred terms match
    (None, pod(preferred=[preferred(2, expr("foo", "In", "bar"))]),
     [node("node1", foo="baz"), node("node2", key="value"), node("node3", az="az1")],
     {"node1": 0, "node2": 0, "node3": 0}),
    # only the node matching the preferred term scores
    (None, pod(preferred=AFFINITY1),
     [node("node1", foo="bar"), node("node2", key="value"), node("node3", az="az1")],
     {"node1": 100, "node2": 0, "node3": 0}),
    # all nodes match some terms: scores follow the summed weights
    (None, pod(preferred=AFFINITY2),
     [node("node1", foo="bar"), node("node5", foo="bar", key="value", az="az1"),
      node("node2", key="value")],
     {"node1": 18, "node5": 100, "node2": 36}),
    # added preferences count for every pod
    ({"addedAffinity": {PREFERRED: [preferred(3, expr("key", "In", "value"))]}},
     pod(preferred=AFFINITY1),
     [node("node1", foo="bar"), node("node2", key="value"), node("node3", az="az1")],
     {"node1": 66, "node2": 100, "node3": 0}),
    ({"addedAffinity": {PREFERRED: [preferred(3, expr("key", "In", "value"))]}},
     pod(), [node("node1", foo="bar"), node("node2", key="value")],
     {"node1": 0, "node2": 100}),
])
def test_score_sums_weights_of_matching_preferred_terms(
        plugin_args: Obj | None, pod_info: PodInfo, nodes: list[NodeInfo],
        expected: dict[str, int]) -> None:
    assert scores(NodeAffinity(plugin_args), pod_info, nodes) == expected


def test_pre_score_skips_pods_without_preferred_terms() -> None:
    assert NodeAffinity().pre_score(CycleState(), pod(), []).is_skip()
    assert NodeAffinity().pre_score(CycleState(), pod(preferred=[]), []).is_success()


@pytest.mark.parametrize(("plugin_args", "message"), [
    ({"addedAffinity": {REQUIRED: {"nodeSelectorTerms": [
        {"matchExpressions": [expr("foo", "Equal", "bar")]}]}}},
     f"addedAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].operator: "
     'Unsupported value: "Equal": supported values: "In", "NotIn", "Exists", '
     '"DoesNotExist", "Gt", "Lt"'),
    ({"addedAffinity": {REQUIRED: {"nodeSelectorTerms": [
        {"matchFields": [name_is("a", "b")]}]}}},
     f"addedAffinity.{REQUIRED}.nodeSelectorTerms[0].matchFields[0].values: "
     'Invalid value: []string{"a", "b"}: must have one element'),
    ({"addedAffinity": {PREFERRED: [preferred(1, expr("foo", "In"))]}},
     f"addedAffinity.{PREFERRED}[0].matchExpressions[0].values: Invalid value: []string{{}}: "
     "for 'in', 'notin' operators, values set can't be empty"),
])
def test_invalid_added_affinity_is_rejected_with_upstream_field_errors(
        plugin_args: Obj, message: str) -> None:
    with pytest.raises(PluginArgsError) as error:
        NodeAffinity(plugin_args)
    assert str(error.value) == message


def test_pod_is_retried_when_a_node_is_added_or_relabeled() -> None:
    assert NodeAffinity().events_to_register() == [
        ClusterEvent("Node", "Add"), ClusterEvent("Node", "UpdateNodeLabel")]
