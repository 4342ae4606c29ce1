"""InterPodAffinity on plain data: PreFilter/Filter statuses, the add/remove extensions,
PreScore/Score/NormalizeScore, args. Cases follow upstream's filtering_test.go and
scoring_test.go (pkg/scheduler/framework/plugins/interpodaffinity)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.scheduler.framework.interface import Code, CycleState, Status
from minikube_py.scheduler.framework.types import NodeInfo, NodeTotals, PodInfo, Snapshot
from minikube_py.scheduler.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PRE_SCORE_STATE_KEY,
    InterPodAffinity,
)

AFFINITY = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ERR_REASON_AFFINITY_RULES_NOT_MATCH])
ANTI = (Code.UNSCHEDULABLE, [ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH])
EXISTING = (Code.UNSCHEDULABLE, [ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH])
OK = (Code.SUCCESS, [])
SKIP = Code.SKIP

# scoring_test.go's namespaces (namespace name -> labels).
NAMESPACE_LABELS = {
    "subteam1.team1": {"team": "team1"}, "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"}, "subteam2.team2": {"team": "team2"},
}


class FakeHandle:
    """The part of the framework handle the plugin uses: this cycle's snapshot."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def snapshot(self) -> Snapshot:
        return self._snapshot


_counter = iter(range(1_000_000))


def make_pod(labels: dict[str, str] | None = None, *, node: str = "", namespace: str = "",
             affinity: Obj | None = None, name: str = "") -> Obj:
    name = name or f"pod-{next(_counter)}"
    spec: Obj = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    if affinity:
        spec["affinity"] = affinity
    return {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                         "labels": dict(labels or {})}, "spec": spec}


def make_node(name: str, labels: dict[str, str]) -> Obj:
    return {"metadata": {"name": name, "labels": dict(labels)}}


def term(key: str, operator: str, values: list[str] | None = None, topology: str = "",
         **extra: Any) -> Obj:
    expression: Obj = {"key": key, "operator": operator}
    if values is not None:
        expression["values"] = values
    return {"labelSelector": {"matchExpressions": [expression]}, "topologyKey": topology,
            **extra}


def term_all(expressions: list[tuple[str, str, list[str] | None]], topology: str) -> Obj:
    """A term whose selector ANDs several expressions."""
    return {"labelSelector": {"matchExpressions": [
        {"key": k, "operator": op, **({"values": v} if v is not None else {})}
        for k, op, v in expressions]}, "topologyKey": topology}


def affinity(required: Sequence[Obj] = (), anti: Sequence[Obj] = (),
             preferred: Sequence[tuple[int, Obj]] = (),
             anti_preferred: Sequence[tuple[int, Obj]] = ()) -> Obj:
    """spec.affinity with required/preferred pod affinity and anti-affinity terms."""
    result: Obj = {}
    if required or preferred:
        result["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(required),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred]}
    if anti or anti_preferred:
        result["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(anti),
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in anti_preferred]}
    return result


def setup(nodes: list[Obj], pods: list[Obj], args: Obj | None = None
          ) -> tuple[InterPodAffinity, Snapshot]:
    snapshot = Snapshot.of(nodes, pods)
    snapshot.namespace_labels = NAMESPACE_LABELS
    return InterPodAffinity(args, FakeHandle(snapshot)), snapshot


def run_filter(pod: Obj, pods: list[Obj], nodes: list[Obj]
               ) -> tuple[Code, list[tuple[Code, list[str]]]]:
    plugin, snapshot = setup(nodes, pods)
    state = CycleState()
    pod_info = PodInfo.of(pod)
    _, status = plugin.pre_filter(state, pod_info, snapshot.node_info_list)
    if not status.is_success():
        return status.code, []
    results = []
    for info in snapshot.node_info_list:
        got = plugin.filter(state, pod_info, info)
        results.append((got.code, got.reasons))
    return status.code, results


# --- Filter: TestRequiredAffinitySingleNode -------------------------------------------------

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = make_node("node1", {"region": "r1", "zone": "z11"})
EXISTING_POD = make_pod(POD_LABEL, node="node1")


def ns_selector_term(topology: str, **extra: Any) -> Obj:
    return term("service", "In", ["securityscan", "value2"], topology,
                namespaceSelector={"matchExpressions": [
                    {"key": "team", "operator": "In", "values": ["team1"]}]}, **extra)


SINGLE_NODE_CASES = [
    ("a pod without required affinity rules schedules onto an empty node",
     make_pod(), [], SKIP),
    ("affinity In matches the existing pod",
     make_pod(POD_LABEL2, affinity=affinity(
         [term("service", "In", ["securityscan", "value2"], "region")])),
     [EXISTING_POD], OK),
    ("affinity NotIn matches the existing pod",
     make_pod(POD_LABEL2, affinity=affinity(
         [term("service", "NotIn", ["securityscan3", "value3"], "region")])),
     [EXISTING_POD], OK),
    ("affinity does not match a pod of another namespace",
     make_pod(POD_LABEL2, affinity=affinity(
         [term("service", "In", ["securityscan", "value2"], namespaces=["DiffNameSpace"])])),
     [make_pod(POD_LABEL, node="node1", namespace="ns")], AFFINITY),
    ("affinity selector matches no existing pod",
     make_pod(POD_LABEL, affinity=affinity(
         [term("service", "In", ["antivirusscan", "value2"])])),
     [EXISTING_POD], AFFINITY),
    ("several required affinity terms with different operators all match",
     make_pod(POD_LABEL2, affinity=affinity([
         term_all([("service", "Exists", None), ("wrongkey", "DoesNotExist", None)], "region"),
         term_all([("service", "In", ["securityscan"]), ("service", "NotIn", ["WrongValue"])],
                  "region")])),
     [EXISTING_POD], OK),
    ("the expressions of one selector are ANDed: one mismatch fails the term",
     make_pod(POD_LABEL2, affinity=affinity([
         term_all([("service", "Exists", None), ("wrongkey", "DoesNotExist", None)], "region"),
         term_all([("service", "In", ["securityscan2"]), ("service", "NotIn", ["WrongValue"])],
                  "region")])),
     [EXISTING_POD], AFFINITY),
    ("affinity and anti-affinity both satisfied",
     make_pod(POD_LABEL2, affinity=affinity(
         [term("service", "In", ["securityscan", "value2"], "region")],
         [term("service", "In", ["antivirusscan", "value2"], "node")])),
     [EXISTING_POD], OK),
    ("affinity, anti-affinity and the existing pod's anti-affinity all satisfied",
     make_pod(POD_LABEL2, affinity=affinity(
         [term("service", "In", ["securityscan", "value2"], "region")],
         [term("service", "In", ["antivirusscan", "value2"], "node")])),
     [make_pod(POD_LABEL, node="node1", affinity=affinity(
         anti=[term("service", "In", ["antivirusscan", "value2"], "node")]))], OK),
    ("affinity satisfied but the pod's anti-affinity is not",
     make_pod(POD_LABEL2, affinity=affinity(
         [term("service", "In", ["securityscan", "value2"], "region")],
         [term("service", "In", ["securityscan", "value2"], "zone")])),
     [EXISTING_POD], ANTI),
    ("the existing pod's anti-affinity rejects the pod (symmetry)",
     make_pod(POD_LABEL, affinity=affinity(
         [term("service", "In", ["securityscan", "value2"], "region")],
         [term("service", "In", ["antivirusscan", "value2"], "node")])),
     [make_pod(POD_LABEL, node="node1", affinity=affinity(
         anti=[term("service", "In", ["securityscan", "value2"], "zone")]))], EXISTING),
    ("a pod whose affinity does not match itself is not a first pod of its group",
     make_pod(POD_LABEL, affinity=affinity(
         [term("service", "NotIn", ["securityscan", "value2"], "region")])),
     [make_pod({"service": "securityscan"}, node="node2")], AFFINITY),
    ("an existing pod's anti-affinity applies to a pod without any affinity",
     make_pod(POD_LABEL),
     [make_pod(POD_LABEL, node="node1", affinity=affinity(
         anti=[term("service", "In", ["securityscan", "value2"], "zone")]))], EXISTING),
    ("an existing pod's anti-affinity that does not match the pod skips the plugin",
     make_pod(POD_LABEL),
     [make_pod(POD_LABEL, node="node1", affinity=affinity(
         anti=[term("service", "NotIn", ["securityscan", "value2"], "zone")]))], SKIP),
    ("the pod's anti-affinity matches the existing pod, not the other way round",
     make_pod(POD_LABEL, affinity=affinity(anti=[term("service", "Exists", None, "region"),
                                                 term("security", "Exists", None, "region")])),
     [make_pod(POD_LABEL2, node="node1", affinity=affinity(
         anti=[term("security", "Exists", None, "zone")]))], ANTI),
    ("symmetry a1: partial match on both sides, the pod's own rule is checked first",
     make_pod(POD_LABEL, affinity=affinity(anti=[term("service", "Exists", None, "zone"),
                                                 term("security", "Exists", None, "zone")])),
     [make_pod(POD_LABEL2, node="node1", affinity=affinity(
         anti=[term("security", "Exists", None, "zone")]))], ANTI),
    ("symmetry a2: only the existing pod's anti-affinity matches",
     make_pod(POD_LABEL2, affinity=affinity(anti=[term("security", "Exists", None, "zone")])),
     [make_pod(POD_LABEL, node="node1", affinity=affinity(
         anti=[term("service", "Exists", None, "zone"),
               term("security", "Exists", None, "zone")]))], EXISTING),
    ("symmetry b1",
     make_pod({"abc": "", "xyz": ""}, affinity=affinity(
         anti=[term("abc", "Exists", None, "zone"), term("def", "Exists", None, "zone")])),
     [make_pod({"def": "", "xyz": ""}, node="node1", affinity=affinity(
         anti=[term("abc", "Exists", None, "zone"), term("def", "Exists", None, "zone")]))],
     ANTI),
    ("symmetry b2",
     make_pod({"def": "", "xyz": ""}, affinity=affinity(
         anti=[term("abc", "Exists", None, "zone"), term("def", "Exists", None, "zone")])),
     [make_pod({"abc": "", "xyz": ""}, node="node1", affinity=affinity(
         anti=[term("abc", "Exists", None, "zone"), term("def", "Exists", None, "zone")]))],
     ANTI),
    ("affinity with a namespaceSelector matching the existing pod's namespace",
     make_pod(POD_LABEL2, affinity=affinity([ns_selector_term("region")])),
     [make_pod(POD_LABEL, node="node1", namespace="subteam1.team1")], OK),
    ("affinity with a namespaceSelector not matching the existing pod's namespace",
     make_pod(POD_LABEL2, affinity=affinity([ns_selector_term("region")])),
     [make_pod(POD_LABEL, node="node1", namespace="subteam1.team2")], AFFINITY),
    ("anti-affinity with a matching namespaceSelector",
     make_pod(POD_LABEL2, namespace="subteam1.team1",
              affinity=affinity(anti=[ns_selector_term("zone")])),
     [make_pod(POD_LABEL, node="node1", namespace="subteam2.team1")], ANTI),
    ("anti-affinity with an empty namespaceSelector matches every namespace",
     make_pod(POD_LABEL2, namespace="subteam1.team1", affinity=affinity(anti=[
         term("service", "In", ["securityscan", "value2"], "zone", namespaceSelector={})])),
     [make_pod(POD_LABEL, node="node1", namespace="subteam2.team1")], ANTI),
    ("anti-affinity with a non-matching namespaceSelector",
     make_pod(POD_LABEL2, namespace="subteam1.team1",
              affinity=affinity(anti=[ns_selector_term("zone")])),
     [make_pod(POD_LABEL, node="node1", namespace="subteam1.team2")], OK),
]


# TestRequiredAffinitySingleNode
@pytest.mark.parametrize("name,pod,pods,want", SINGLE_NODE_CASES,
                         ids=[case[0] for case in SINGLE_NODE_CASES])
def test_required_affinity_on_a_single_node(name: str, pod: Obj, pods: list[Obj],
                                            want: Any) -> None:
    pre_filter_code, results = run_filter(pod, pods, [NODE1])
    if want == SKIP:
        assert pre_filter_code == Code.SKIP
    else:
        assert pre_filter_code == Code.SUCCESS
        assert results == [want]


# --- Filter: TestRequiredAffinityMultipleNodes ----------------------------------------------

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}

MULTIPLE_NODES_CASES = [
    ("all nodes in the region of a matching pod fit",
     make_pod(affinity=affinity([term("foo", "In", ["bar"], "region")])),
     [make_pod({"foo": "bar"}, node="node1")],
     [make_node("node1", CHINA), make_node("node2", CHINA_AZ1), make_node("node3", INDIA)],
     [OK, OK, AFFINITY]),
    ("the first pod of a group with affinity to itself may go anywhere",
     make_pod({"foo": "bar", "service": "securityscan"}, affinity=affinity([
         term("foo", "In", ["bar"], "zone"), term("service", "In", ["securityscan"], "zone")])),
     [make_pod({"foo": "bar"}, node="nodeA")],
     [make_node("nodeA", {"zone": "az1", "hostname": "h1"}),
      make_node("nodeB", {"zone": "az2", "hostname": "h2"})],
     [OK, OK]),
    ("the first pod of a group still needs nodes with the topology keys",
     make_pod({"foo": "bar", "service": "securityscan"}, affinity=affinity([
         term("foo", "In", ["bar"], "zone"), term("service", "In", ["securityscan"], "zone")])),
     [make_pod({"foo": "bar"}, node="nodeA")],
     [make_node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
      make_node("nodeB", {"zoneLabel": "az2", "hostname": "h2"})],
     [AFFINITY, AFFINITY]),
    ("anti-affinity keeps the pod off every node of the matching pod's region",
     make_pod(affinity=affinity(anti=[term("foo", "In", ["abc"], "region")])),
     [make_pod({"foo": "abc"}, node="nodeA")],
     [make_node("nodeA", {"region": "r1", "hostname": "nodeA"}),
      make_node("nodeB", {"region": "r1", "hostname": "nodeB"})],
     [ANTI, ANTI]),
    ("anti-affinity applies when any one of its terms matches",
     make_pod(affinity=affinity(anti=[term("foo", "In", ["abc"], "region"),
                                      term("service", "In", ["securityscan"], "zone")])),
     [make_pod({"foo": "abc", "service": "securityscan"}, node="nodeA")],
     [make_node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
      make_node("nodeB", {"region": "r1", "zone": "z2", "hostname": "nodeB"})],
     [ANTI, ANTI]),
    ("a node in another region escapes the anti-affinity",
     make_pod(affinity=affinity(anti=[term("foo", "In", ["abc"], "region")])),
     [make_pod({"foo": "abc"}, node="nodeA")],
     [make_node("nodeA", CHINA), make_node("nodeB", CHINA_AZ1), make_node("nodeC", INDIA)],
     [ANTI, ANTI, OK]),
    ("an existing pod's anti-affinity only looks at its own namespace",
     make_pod({"foo": "123"}, namespace="NS1",
              affinity=affinity(anti=[term("foo", "In", ["bar"], "region")])),
     [make_pod({"foo": "bar"}, node="nodeA", namespace="NS1"),
      make_pod(node="nodeC", namespace="NS2",
               affinity=affinity(anti=[term("foo", "In", ["123"], "region")]))],
     [make_node("nodeA", CHINA), make_node("nodeB", CHINA_AZ1), make_node("nodeC", INDIA)],
     [ANTI, ANTI, OK]),
    ("an existing pod's anti-affinity on a topology key no node has rejects nothing",
     make_pod({"foo": ""}),
     [make_pod(node="nodeA", affinity=affinity(
         anti=[term("foo", "Exists", None, "invalid-node-label")]))],
     [make_node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
      make_node("nodeB", {"region": "r1", "zone": "z1", "hostname": "nodeB"})],
     SKIP),
    ("the pod's anti-affinity on a topology key no node has rejects nothing",
     make_pod(affinity=affinity(anti=[term("foo", "Exists", None, "invalid-node-label")])),
     [make_pod({"foo": ""}, node="nodeA")],
     [make_node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
      make_node("nodeB", {"region": "r1", "zone": "z1", "hostname": "nodeB"})],
     [OK, OK]),
    ("two existing pods' anti-affinity on zone and on region",
     make_pod({"foo": "", "bar": ""}),
     [make_pod(node="nodeA", affinity=affinity(anti=[term("foo", "Exists", None, "zone")])),
      make_pod(node="nodeA", affinity=affinity(anti=[term("bar", "Exists", None, "region")]))],
     [make_node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
      make_node("nodeB", {"region": "r1", "zone": "z2", "hostname": "nodeB"})],
     [EXISTING, EXISTING]),
]


# TestRequiredAffinityMultipleNodes
@pytest.mark.parametrize("name,pod,pods,nodes,want", MULTIPLE_NODES_CASES,
                         ids=[case[0] for case in MULTIPLE_NODES_CASES])
def test_required_affinity_on_several_nodes(name: str, pod: Obj, pods: list[Obj],
                                            nodes: list[Obj], want: Any) -> None:
    pre_filter_code, results = run_filter(pod, pods, nodes)
    if want == SKIP:
        assert pre_filter_code == Code.SKIP
    else:
        assert results == want


def test_filter_without_pre_filter_state_is_an_error() -> None:
    plugin, snapshot = setup([NODE1], [])
    status = plugin.filter(CycleState(), PodInfo.of(make_pod()), snapshot.node_info_list[0])
    assert status.code == Code.ERROR


# --- PreFilter extensions (TestPreFilterStateAddRemovePod) ------------------------------


def test_add_pod_and_remove_pod_update_the_incoming_pods_anti_affinity_counts() -> None:
    nodes = [make_node("nodeA", {"region": "r1", "hostname": "nodeA"}),
             make_node("nodeB", {"region": "r1", "hostname": "nodeB"}),
             make_node("nodeC", {"region": "r2", "hostname": "nodeC"})]
    pod = PodInfo.of(make_pod(affinity=affinity(anti=[term("foo", "In", ["bar"], "region")])))
    plugin, snapshot = setup(nodes, [])
    state = CycleState()
    assert plugin.pre_filter(state, pod, snapshot.node_info_list)[1].is_success()
    node_a = snapshot.get("nodeA")
    victim = PodInfo.of(make_pod({"foo": "bar"}, node="nodeA"))

    assert plugin.add_pod(state, pod, victim, node_a).is_success()
    assert [plugin.filter(state, pod, info).code for info in snapshot.node_info_list] == [
        Code.UNSCHEDULABLE, Code.UNSCHEDULABLE, Code.SUCCESS]

    assert plugin.remove_pod(state, pod, victim, node_a).is_success()
    assert all(plugin.filter(state, pod, info).is_success()
               for info in snapshot.node_info_list)


def test_removing_a_victim_with_anti_affinity_frees_its_topology() -> None:
    nodes = [make_node("nodeA", {"zone": "z1"}), make_node("nodeB", {"zone": "z2"})]
    victim_pod = make_pod(node="nodeA",
                          affinity=affinity(anti=[term("app", "In", ["web"], "zone")]))
    plugin, snapshot = setup(nodes, [victim_pod])
    pod = PodInfo.of(make_pod({"app": "web"}))
    state = CycleState()
    assert plugin.pre_filter(state, pod, snapshot.node_info_list)[1].is_success()
    node_a = snapshot.get("nodeA")
    assert plugin.filter(state, pod, node_a).reasons == [
        ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH]

    what_if = state.clone()
    plugin.remove_pod(what_if, pod, PodInfo.of(victim_pod), node_a)
    assert plugin.filter(what_if, pod, node_a).is_success()
    assert not plugin.filter(state, pod, node_a).is_success()  # the clone did not leak back


def test_adding_a_matching_pod_satisfies_affinity() -> None:
    nodes = [make_node("nodeA", {"zone": "z1"}), make_node("nodeB", {"zone": "z2"})]
    plugin, snapshot = setup(nodes, [make_pod({"app": "db"}, node="nodeB")])
    pod = PodInfo.of(make_pod(affinity=affinity([term("app", "In", ["db"], "zone")])))
    state = CycleState()
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    node_a = snapshot.get("nodeA")
    assert plugin.filter(state, pod, node_a).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    plugin.add_pod(state, pod, PodInfo.of(make_pod({"app": "db"}, node="nodeA")), node_a)
    assert plugin.filter(state, pod, node_a).is_success()


def test_add_pod_without_pre_filter_state_is_an_error() -> None:
    plugin, snapshot = setup([NODE1], [])
    pod = PodInfo.of(make_pod())
    assert plugin.add_pod(CycleState(), pod, pod, snapshot.node_info_list[0]).code == Code.ERROR


# --- Scoring: TestPreferredAffinity -------------------------------------------------------

S1 = {"security": "S1"}
S2 = {"security": "S2"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
STAY_WITH_S1_IN_REGION = affinity(preferred=[(5, term("security", "In", ["S1"], "region"))])
STAY_WITH_S2_IN_REGION = affinity(preferred=[(6, term("security", "In", ["S2"], "region"))])
AFFINITY3 = affinity(preferred=[
    (8, term_all([("security", "NotIn", ["S1"]), ("security", "In", ["S2"])], "region")),
    (2, term_all([("security", "Exists", None), ("wrongkey", "DoesNotExist", None)],
                 "region"))])
HARD_AFFINITY = affinity([
    term("security", "In", ["S1", "value2"], "region"),
    term_all([("security", "Exists", None), ("wrongkey", "DoesNotExist", None)], "region")])
AWAY_FROM_S1_IN_AZ = affinity(anti_preferred=[(5, term("security", "In", ["S1"], "az"))])
AWAY_FROM_S2_IN_AZ = affinity(anti_preferred=[(5, term("security", "In", ["S2"], "az"))])
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = affinity(
    preferred=[(8, term("security", "In", ["S1"], "region"))],
    anti_preferred=[(5, term("security", "In", ["S2"], "az"))])
_TEAM1 = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]}
AFFINITY_NAMESPACE_SELECTOR = affinity(preferred=[(5, term(
    "security", "In", ["S1"], "region", namespaces=["subteam2.team2"],
    namespaceSelector=_TEAM1))])
ANTI_AFFINITY_NAMESPACE_SELECTOR = affinity(anti_preferred=[(5, term(
    "security", "In", ["S1"], "region", namespaces=["subteam2.team2"],
    namespaceSelector=_TEAM1))])


def score_nodes(pod: Obj, pods: list[Obj], nodes: list[Obj], args: Obj | None = None
                ) -> tuple[Status, dict[str, int]]:
    plugin, snapshot = setup(nodes, pods, args)
    state = CycleState()
    pod_info = PodInfo.of(pod)
    status = plugin.pre_score(state, pod_info, snapshot.node_info_list)
    if not status.is_success():
        return status, {}
    scores = {}
    for info in snapshot.node_info_list:
        score, score_status = plugin.score(state, pod_info, info)
        assert score_status.is_success()
        scores[info.name] = score
    assert plugin.normalize_score(state, pod_info, scores) is None
    return status, scores


PREFERRED_CASES = [
    ("all nodes are the same when nobody has affinity",
     make_pod(S1), [],
     [make_node("node1", CHINA), make_node("node2", INDIA), make_node("node3", AZ1)],
     None, SKIP),
    ("a matching pod in the preferred topology scores high",
     make_pod(S1, affinity=STAY_WITH_S1_IN_REGION),
     [make_pod(S1, node="node1"), make_pod(S2, node="node2"), make_pod(S1, node="node3")],
     [make_node("node1", CHINA), make_node("node2", INDIA), make_node("node3", AZ1)],
     None, {"node1": 100, "node2": 0, "node3": 0}),
    ("nodes sharing the matching pod's topology value score the same",
     make_pod(affinity=STAY_WITH_S1_IN_REGION), [make_pod(S1, node="node1")],
     [make_node("node1", CHINA), make_node("node2", CHINA_AZ1), make_node("node3", INDIA)],
     None, {"node1": 100, "node2": 100, "node3": 0}),
    ("the region with more matching pods wins",
     make_pod(S1, affinity=STAY_WITH_S2_IN_REGION),
     [make_pod(S2, node="node1"), make_pod(S2, node="node1"), make_pod(S2, node="node2"),
      make_pod(S2, node="node3"), make_pod(S2, node="node4"), make_pod(S2, node="node5")],
     [make_node("node1", CHINA), make_node("node2", INDIA), make_node("node3", CHINA),
      make_node("node4", CHINA), make_node("node5", INDIA)],
     None, {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0}),
    ("different operators and values, some failing to match",
     make_pod(S1, affinity=AFFINITY3),
     [make_pod(S1, node="node1"), make_pod(S2, node="node2"), make_pod(S1, node="node3")],
     [make_node("node1", CHINA), make_node("node2", INDIA), make_node("node3", AZ1)],
     None, {"node1": 20, "node2": 100, "node3": 0}),
    ("symmetry: an existing pod's preferred affinity toward the pod",
     make_pod(S2),
     [make_pod(S1, node="node1", affinity=STAY_WITH_S1_IN_REGION),
      make_pod(S2, node="node2", affinity=STAY_WITH_S2_IN_REGION)],
     [make_node("node1", CHINA), make_node("node2", INDIA), make_node("node3", AZ1)],
     None, {"node1": 0, "node2": 100, "node3": 0}),
    ("symmetry with a namespace selector matching the pod's namespace",
     make_pod(S1, namespace="subteam1.team1"),
     [make_pod(S1, node="node1", affinity=AFFINITY_NAMESPACE_SELECTOR),
      make_pod(S2, node="node2", affinity=STAY_WITH_S2_IN_REGION)],
     [make_node("node1", CHINA), make_node("node2", INDIA), make_node("node3", AZ1)],
     None, {"node1": 100, "node2": 0, "node3": 0}),
    ("anti-affinity symmetry with a namespace selector",
     make_pod(S1, namespace="subteam1.team1"),
     [make_pod(S1, node="node1", affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
      make_pod(S2, node="node2", affinity=STAY_WITH_S2_IN_REGION)],
     [make_node("node1", CHINA), make_node("node2", INDIA), make_node("node3", AZ1)],
     None, {"node1": 0, "node2": 100, "node3": 100}),
    ("symmetry: existing pods' required affinity counts at hardPodAffinityWeight",
     make_pod(S1),
     [make_pod(S1, node="node1", affinity=HARD_AFFINITY),
      make_pod(S2, node="node2", affinity=HARD_AFFINITY)],
     [make_node("node1", CHINA), make_node("node2", INDIA), make_node("node3", AZ1)],
     None, {"node1": 100, "node2": 100, "node3": 0}),
    ("anti-affinity: the node without matching pods scores high",
     make_pod(S1, affinity=AWAY_FROM_S1_IN_AZ),
     [make_pod(S1, node="node1"), make_pod(S2, node="node2")],
     [make_node("node1", AZ1), make_node("node2", CHINA)],
     None, {"node1": 0, "node2": 100}),
    ("anti-affinity: a node without the topology key scores high",
     make_pod(S1, affinity=AWAY_FROM_S1_IN_AZ),
     [make_pod(S1, node="node1"), make_pod(S1, node="node2")],
     [make_node("node1", AZ1), make_node("node2", CHINA)],
     None, {"node1": 0, "node2": 100}),
    ("anti-affinity: more matching pods, lower score",
     make_pod(S1, affinity=AWAY_FROM_S1_IN_AZ),
     [make_pod(S1, node="node1"), make_pod(S1, node="node1"), make_pod(S2, node="node2")],
     [make_node("node1", AZ1), make_node("node2", INDIA)],
     None, {"node1": 0, "node2": 100}),
    ("anti-affinity symmetry: the existing pod's preferred anti-affinity pushes away",
     make_pod(S2),
     [make_pod(S1, node="node1", affinity=AWAY_FROM_S2_IN_AZ),
      make_pod(S2, node="node2", affinity=AWAY_FROM_S1_IN_AZ)],
     [make_node("node1", AZ1), make_node("node2", AZ2)],
     None, {"node1": 0, "node2": 100}),
    ("preferred affinity and anti-affinity together",
     make_pod(S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
     [make_pod(S1, node="node1"), make_pod(S1, node="node2")],
     [make_node("node1", CHINA), make_node("node2", AZ1)],
     None, {"node1": 100, "node2": 0}),
    ("same region together, apart per az, for pods of one service",
     make_pod(S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
     [make_pod(S1, node="node1"), make_pod(S1, node="node1"), make_pod(S1, node="node2"),
      make_pod(S1, node="node3"), make_pod(S1, node="node3"), make_pod(S1, node="node4"),
      make_pod(S1, node="node5")],
     [make_node("node1", CHINA_AZ1), make_node("node2", INDIA), make_node("node3", CHINA),
      make_node("node4", CHINA), make_node("node5", INDIA)],
     None, {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0}),
    ("affinity, anti-affinity and both symmetries",
     make_pod(S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
     [make_pod(S1, node="node1"), make_pod(S2, node="node2"),
      make_pod(node="node3", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
      make_pod(node="node4", affinity=AWAY_FROM_S1_IN_AZ)],
     [make_node("node1", CHINA), make_node("node2", AZ1), make_node("node3", INDIA),
      make_node("node4", AZ2)],
     None, {"node1": 100, "node2": 0, "node3": 100, "node4": 0}),
    ("nodes of one topology without pods with affinity (issue 82796)",
     make_pod(S1),
     [make_pod(S1, node="node1"),
      make_pod(node="node2", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
     [make_node("node1", CHINA), make_node("node2", CHINA)],
     None, {"node1": 0, "node2": 0}),
    ("preferred affinity with pods matching the namespace selector",
     make_pod(S1, namespace="subteam1.team1", affinity=AFFINITY_NAMESPACE_SELECTOR),
     [make_pod(S1, node="node1", namespace="subteam1.team1"),
      make_pod(S1, node="node1", namespace="subteam1.team1"),
      make_pod(S1, node="node1", namespace="subteam1.team2"),
      make_pod(S1, node="node2", namespace="subteam2.team1")],
     [make_node("node1", CHINA), make_node("node2", INDIA)],
     None, {"node1": 100, "node2": 0}),
    ("preferred anti-affinity with pods matching selector and namespaces",
     make_pod(S1, namespace="subteam1.team1", affinity=ANTI_AFFINITY_NAMESPACE_SELECTOR),
     [make_pod(S1, node="node1", namespace="subteam1.team1"),
      make_pod(S1, node="node1", namespace="subteam1.team1"),
      make_pod(S1, node="node1", namespace="subteam2.team2"),
      make_pod(S1, node="node2", namespace="subteam2.team1")],
     [make_node("node1", CHINA), make_node("node2", INDIA)],
     None, {"node1": 0, "node2": 100}),
    ("ignorePreferredTermsOfExistingPods skips a pod without preferences",
     make_pod(S2),
     [make_pod(S1, node="node1", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
      make_pod(S2, node="node2", affinity=STAY_WITH_S2_IN_REGION)],
     [make_node("node1", CHINA), make_node("node2", INDIA)],
     {"ignorePreferredTermsOfExistingPods": True}, SKIP),
    ("existing pods' preferred terms count by default",
     make_pod(S2),
     [make_pod(S1, node="node1", affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
      make_pod(S2, node="node2", affinity=STAY_WITH_S2_IN_REGION)],
     [make_node("node1", CHINA), make_node("node2", INDIA)],
     None, {"node1": 0, "node2": 100}),
    ("no nodes to score", make_pod(S2), [], [], None, SKIP),
]


# TestPreferredAffinity
@pytest.mark.parametrize("name,pod,pods,nodes,args,want", PREFERRED_CASES,
                         ids=[case[0] for case in PREFERRED_CASES])
def test_preferred_affinity_scores(name: str, pod: Obj, pods: list[Obj], nodes: list[Obj],
                                   args: Obj | None, want: Any) -> None:
    status, scores = score_nodes(pod, pods, nodes, args)
    if want == SKIP:
        assert status.code == Code.SKIP
    else:
        assert status.is_success()
        assert scores == want


HARD_POD_AFFINITY = affinity([term(
    "service", "In", ["S1"], "region", namespaces=["", "subteam2.team2"],
    namespaceSelector=_TEAM1)])
HARD_NODES = [make_node("node1", CHINA), make_node("node2", INDIA), make_node("node3", AZ1)]
HARD_CASES = [
    ("with the default weight", "", None, {"node1": 100, "node2": 100, "node3": 0}),
    ("with zero weight", "", 0, SKIP),
    ("with no matching namespace", "subteam1.team2", None, SKIP),
    ("with a matching namespace selector", "subteam1.team1", None,
     {"node1": 100, "node2": 100, "node3": 0}),
    ("with matching namespaces", "subteam2.team2", None,
     {"node1": 100, "node2": 100, "node3": 0}),
]


# TestPreferredAffinityWithHardPodAffinitySymmetricWeight
@pytest.mark.parametrize("name,namespace,weight,want", HARD_CASES,
                         ids=[case[0] for case in HARD_CASES])
def test_existing_pods_required_affinity_scores_at_hard_pod_affinity_weight(
        name: str, namespace: str, weight: int | None, want: Any) -> None:
    existing = [make_pod(node="node1", affinity=HARD_POD_AFFINITY),
                make_pod(node="node2", affinity=HARD_POD_AFFINITY)]
    args = None if weight is None else {"hardPodAffinityWeight": weight}
    status, scores = score_nodes(make_pod({"service": "S1"}, namespace=namespace), existing,
                                 HARD_NODES, args)
    if want == SKIP:
        assert status.code == Code.SKIP
    else:
        assert scores == want


def test_a_larger_hard_pod_affinity_weight_outweighs_preferred_anti_affinity() -> None:
    """Raw scores before normalizing: weight 10 for the required term, -5 for the
    incoming pod's preferred anti-affinity toward the same pod."""
    nodes = [make_node("node1", CHINA), make_node("node2", INDIA)]
    existing = [make_pod(S1, node="node1", affinity=affinity(
        [term("service", "In", ["S1"], "region")]))]
    pod = make_pod({"service": "S1"}, affinity=affinity(
        anti_preferred=[(5, term("security", "In", ["S1"], "region"))]))
    plugin, snapshot = setup(nodes, existing, {"hardPodAffinityWeight": 10})
    state = CycleState()
    pod_info = PodInfo.of(pod)
    assert plugin.pre_score(state, pod_info, snapshot.node_info_list).is_success()
    assert [plugin.score(state, pod_info, info)[0] for info in snapshot.node_info_list] == [5, 0]


# --- args ---------------------------------------------------------------------------------


def test_args_default_to_upstreams_values() -> None:
    plugin = InterPodAffinity()
    assert plugin.hard_pod_affinity_weight == 1
    assert plugin.ignore_preferred_terms_of_existing_pods is False
    assert InterPodAffinity({"hardPodAffinityWeight": 0}).hard_pod_affinity_weight == 0


@pytest.mark.parametrize("weight", [-1, 101])
def test_hard_pod_affinity_weight_out_of_range_is_rejected(weight: int) -> None:
    with pytest.raises(ValueError) as error:
        InterPodAffinity({"hardPodAffinityWeight": weight})
    assert str(error.value) == (
        f"hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0, 100]")


def test_events_to_register_cover_pod_and_node_changes() -> None:
    events = {(e.resource, e.action) for e in InterPodAffinity().events_to_register()}
    assert events == {("Pod", "Add"), ("Pod", "UpdatePodLabel"), ("Pod", "Delete"),
                      ("Node", "Add"), ("Node", "UpdateNodeLabel")}


def test_the_next_cycle_sees_a_matching_pod_added_to_a_node() -> None:
    """Per-node results are remembered across cycles only while a node is unchanged."""
    nodes = [make_node("nodeA", {"zone": "z1"}), make_node("nodeB", {"zone": "z2"})]
    plugin, first = setup(nodes, [])
    pod = PodInfo.of(make_pod(affinity=affinity(anti=[term("app", "In", ["db"], "zone")]),
                              name="incoming"))
    state = CycleState()
    plugin.pre_filter(state, pod, first.node_info_list)
    assert all(plugin.filter(state, pod, info).is_success() for info in first.node_info_list)

    node_b = first.get("nodeB").clone()
    node_b.add_pod(PodInfo.of(make_pod({"app": "db"}, node="nodeB")))
    second = Snapshot([first.get("nodeA"), node_b])
    plugin.handle = FakeHandle(second)
    state = CycleState()
    plugin.pre_filter(state, pod, second.node_info_list)
    assert [plugin.filter(state, pod, info).code for info in second.node_info_list] == [
        Code.SUCCESS, Code.UNSCHEDULABLE]


# --- PreScore's sums kept across cycles (NodeTotals) -------------------------------------


def test_node_totals_equal_sums_added_up_afresh() -> None:
    """Nodes change, leave and come back between calls: the kept sums are always those of
    adding up every node's part again, with a pair kept while some node adds to it."""
    rng = random.Random(7)
    pairs = [("zone", "a"), ("zone", "b"), ("host", "x")]

    def part(info: NodeInfo) -> dict[tuple[str, str], int]:
        """Some shared pairs, and the node's own while it has an even number of pods."""
        weight = sum(len(p.uid) % 3 - 1 for p in info.pods)
        own = {("host", info.name): weight} if len(info.pods) % 2 == 0 else {}
        return own | {pair: weight for pair in pairs
                      if (sum(ord(c) for c in info.name) + len(info.pods)) % len(pairs)
                      != pairs.index(pair)}

    totals: NodeTotals[tuple[str, str]] = NodeTotals()
    nodes = [NodeInfo.of(make_node(f"node-{i}", {})) for i in range(8)]
    for step in range(200):
        listed = [info for info in nodes if rng.random() < 0.7]
        fresh: dict[tuple[str, str], int] = {}
        for info in listed:
            for pair, value in part(info).items():
                fresh[pair] = fresh.get(pair, 0) + value
        assert totals.sums("key", part, listed) == fresh, f"step {step}"
        index = rng.randrange(len(nodes))
        changed = nodes[index].clone()
        changed.add_pod(PodInfo.of(make_pod(node=changed.name)))
        nodes[index] = changed


def test_the_next_cycles_pre_score_equals_a_fresh_plugins() -> None:
    """One plugin kept across cycles, pods placed and nodes leaving and coming back between
    them, gives every cycle the topology score of a plugin that sums every node afresh."""
    rng = random.Random(3)
    pod = make_pod({"app": "web"}, affinity=affinity(
        preferred=[(10, term("app", "In", ["web"], "zone"))],
        anti_preferred=[(3, term("app", "In", ["web"], "kubernetes.io/hostname"))]))
    nodes = [make_node(f"node-{i}", {"zone": f"z{i % 3}", "kubernetes.io/hostname": f"node-{i}"})
             for i in range(9)]
    infos = Snapshot.of(nodes, [make_pod({"app": "web"}, node="node-0")]).node_info_list
    kept = InterPodAffinity()
    for step in range(60):
        snapshot = Snapshot([info for info in infos if rng.random() < 0.7])
        answers = []
        for plugin in (kept, InterPodAffinity()):
            plugin.handle = FakeHandle(snapshot)
            state = CycleState()
            status = plugin.pre_score(state, PodInfo.of(pod), snapshot.node_info_list)
            answers.append((status.code, state.read(PRE_SCORE_STATE_KEY).topology_score
                            if status.is_success() else None))
        assert answers[0] == answers[1], f"step {step}"
        index = rng.randrange(len(infos))
        infos[index] = infos[index].clone()
        infos[index].add_pod(PodInfo.of(make_pod(rng.choice([{"app": "web"}, {"app": "db"}]),
                                                 node=infos[index].name)))
