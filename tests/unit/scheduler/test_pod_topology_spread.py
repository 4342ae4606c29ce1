"""PodTopologySpread on plain data: PreFilter counts, Filter statuses, the add/remove
extensions, PreScore/Score/NormalizeScore, default constraints and args. Cases follow
upstream's filtering_test.go and scoring_test.go (pkg/scheduler/framework/plugins/
podtopologyspread)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.store import Indexer
from minikube_py.scheduler.framework.interface import Code, CycleState
from minikube_py.scheduler.framework.types import NodeInfo, NodeMemo, PodInfo, Snapshot
from minikube_py.scheduler.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    PodTopologySpread,
    topology_normalizing_weight,
)

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
NO_SCHEDULE_TAINT = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
LIST = {"defaultingType": "List"}

OK, SKEW, LABEL = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


class FakeInformers:
    """SharedInformerFactory stand-in: an Indexer per resource, filled from plain objects."""

    def __init__(self, objects: dict[str, list[Obj]]) -> None:
        self.stores: dict[str, Indexer] = {}
        for plural, items in objects.items():
            self.stores[plural] = Indexer()
            for item in items:
                self.stores[plural].put(item)

    def informer(self, plural: str, group: str | None = None) -> SimpleNamespace:
        return SimpleNamespace(store=self.stores.setdefault(plural, Indexer()))


class FakeHandle:
    def __init__(self, snapshot: Snapshot, informers: FakeInformers | None = None) -> None:
        self._snapshot = snapshot
        self.informers = informers

    def snapshot(self) -> Snapshot:
        return self._snapshot


_counter = iter(range(1_000_000))


def make_pod(labels: dict[str, str] | None = None, *, node: str = "", namespace: str = "",
             constraints: Sequence[Obj] = (), name: str = "",
             node_selector: dict[str, str] | None = None, node_affinity: Obj | None = None,
             terminating: bool = False, owner: Obj | None = None) -> Obj:
    name = name or f"p-{next(_counter)}"
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                 "labels": dict(labels or {})}
    if terminating:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    if owner:
        meta["ownerReferences"] = [owner]
    spec: Obj = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    if constraints:
        spec["topologySpreadConstraints"] = list(constraints)
    if node_selector:
        spec["nodeSelector"] = node_selector
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": node_affinity}}
    return {"metadata": meta, "spec": spec}


def spread(max_skew: int, key: str, when: str, selector: Obj | None, **extra: Any) -> Obj:
    constraint: Obj = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
                       **extra}
    if selector is not None:
        constraint["labelSelector"] = selector
    return constraint


def hard(max_skew: int, key: str, selector: Obj | None = FOO, **extra: Any) -> Obj:
    return spread(max_skew, key, "DoNotSchedule", selector, **extra)


def soft(max_skew: int, key: str, selector: Obj | None = FOO, **extra: Any) -> Obj:
    return spread(max_skew, key, "ScheduleAnyway", selector, **extra)


def make_node(name: str, labels: dict[str, str], taints: list[Obj] | None = None) -> Obj:
    node: Obj = {"metadata": {"name": name, "labels": dict(labels)}}
    if taints:
        node["spec"] = {"taints": taints}
    return node


def zone_node(name: str, zone: str) -> Obj:
    return make_node(name, {"zone": zone, "node": name})


def foo_pods(namespace: str = "", **per_node: int) -> list[Obj]:
    """`foo_pods(node_a=2)`: two pods labelled foo on node-a."""
    return [make_pod({"foo": ""}, node=node.replace("_", "-"), namespace=namespace)
            for node, count in per_node.items() for _ in range(count)]


FOUR_NODES = [zone_node("node-a", "zone1"), zone_node("node-b", "zone1"),
              zone_node("node-x", "zone2"), zone_node("node-y", "zone2")]


def setup(nodes: list[Obj], pods: list[Obj], args: Obj | None = None,
          objects: dict[str, list[Obj]] | None = None) -> tuple[PodTopologySpread, Snapshot]:
    snapshot = Snapshot.of(nodes, pods)
    informers = FakeInformers(objects) if objects is not None else None
    return PodTopologySpread(args, FakeHandle(snapshot, informers)), snapshot


def filter_codes(pod: Obj, nodes: list[Obj], pods: list[Obj]) -> dict[str, Code]:
    plugin, snapshot = setup(nodes, pods, LIST)
    state = CycleState()
    pod_info = PodInfo.of(pod)
    _, status = plugin.pre_filter(state, pod_info, snapshot.node_info_list)
    assert status.is_success()
    return {info.name: plugin.filter(state, pod_info, info).code
            for info in snapshot.node_info_list}


# --- PreFilter (TestPreFilterState) ----------------------------------------------------------

PRE_FILTER_CASES = [
    ("clean cluster with one constraint",
     make_pod({"foo": ""}, constraints=[hard(5, "zone", {"matchLabels": {"foo": "bar"}})]),
     FOUR_NODES, [], [{"zone1": 0, "zone2": 0}], [0]),
    ("normal case with one constraint",
     make_pod({"foo": ""}, constraints=[hard(1, "zone")]),
     FOUR_NODES, foo_pods(node_a=2, node_b=1, node_y=2), [{"zone1": 3, "zone2": 2}], [2]),
    ("a null label selector matches no pod",
     make_pod({"foo": ""}, constraints=[hard(1, "zone", None)]),
     FOUR_NODES, foo_pods(node_a=2, node_b=1, node_y=2), [{"zone1": 0, "zone2": 0}], [0]),
    ("pods of other namespaces do not count",
     make_pod({"foo": ""}, constraints=[hard(1, "zone")]), FOUR_NODES,
     [make_pod({"foo": ""}, node="node-a"), make_pod({"foo": ""}, node="node-a", namespace="ns1"),
      make_pod({"foo": ""}, node="node-b"), make_pod({"foo": ""}, node="node-y", namespace="ns2"),
      make_pod({"foo": ""}, node="node-y")],
     [{"zone1": 2, "zone2": 1}], [1]),
    ("two constraints",
     make_pod({"foo": ""}, constraints=[hard(1, "zone"), hard(1, "node")]),
     FOUR_NODES, foo_pods(node_a=2, node_b=1, node_y=4),
     [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}], [3, 0]),
    ("soft constraints are left to scoring",
     make_pod({"foo": ""}, constraints=[soft(1, "zone"), hard(1, "zone"), soft(1, "node"),
                                        hard(1, "node")]),
     [zone_node("node-a", "zone1"), zone_node("node-b", "zone1"), zone_node("node-y", "zone2")],
     foo_pods(node_a=2, node_b=1, node_y=4),
     [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}], [3, 1]),
    ("nodes failing the pod's node affinity hold no domain (nodeAffinityPolicy Honor)",
     make_pod({"foo": ""}, constraints=[hard(1, "zone"), hard(1, "node")],
              node_affinity={"nodeSelectorTerms": [{"matchExpressions": [
                  {"key": "zone", "operator": "NotIn", "values": ["zone2"]}]}]}),
     FOUR_NODES, foo_pods(node_a=2, node_b=1, node_y=4),
     [{"zone1": 3}, {"node-a": 2, "node-b": 1}], [3, 1]),
    ("matchLabelKeys ANDs the pod's own values into the selector",
     make_pod({"foo": "a", "rev": "1"}, constraints=[hard(1, "zone", matchLabelKeys=["rev"])]),
     FOUR_NODES,
     [make_pod({"foo": "", "rev": "1"}, node="node-a"), make_pod({"foo": ""}, node="node-a"),
      make_pod({"foo": "", "rev": "2"}, node="node-x"), make_pod({"rev": "1"}, node="node-y")],
     [{"zone1": 1, "zone2": 0}], [0]),
]


@pytest.mark.parametrize("name,pod,nodes,pods,want_counts,want_minimums", PRE_FILTER_CASES,
                         ids=[case[0] for case in PRE_FILTER_CASES])
def test_pre_filter_counts_matching_pods_per_domain(
        name: str, pod: Obj, nodes: list[Obj], pods: list[Obj],
        want_counts: list[dict[str, int]], want_minimums: list[int]) -> None:
    plugin, snapshot = setup(nodes, pods, LIST)
    state = CycleState()
    _, status = plugin.pre_filter(state, PodInfo.of(pod), snapshot.node_info_list)
    assert status.is_success()
    pre_filter_state = state.read(PRE_FILTER_STATE_KEY)
    assert pre_filter_state.tp_value_to_match_num == want_counts
    assert [p.paths[0][1] for p in pre_filter_state.critical_paths] == want_minimums


def test_a_pod_without_hard_constraints_skips_filtering() -> None:
    plugin, snapshot = setup(FOUR_NODES, [], LIST)
    pod = PodInfo.of(make_pod({"foo": ""}, constraints=[soft(1, "zone")]))
    assert plugin.pre_filter(CycleState(), pod, snapshot.node_info_list)[1].code == Code.SKIP


# --- Filter (TestSingleConstraint, TestMultipleConstraints) ---------------------------------

SINGLE_CONSTRAINT_CASES = [
    ("no existing pods", make_pod({"foo": ""}, constraints=[hard(1, "zone")]), FOUR_NODES, [],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("no existing pods, the pod does not match itself",
     make_pod({"foo": ""}, constraints=[hard(1, "zone", BAR)]), FOUR_NODES, [],
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("existing pods in a different namespace do not count",
     make_pod({"foo": ""}, constraints=[hard(1, "zone")]), FOUR_NODES,
     [make_pod({"foo": ""}, node="node-a", namespace="ns1"),
      make_pod({"foo": ""}, node="node-a", namespace="ns2"),
      make_pod({"foo": ""}, node="node-x"), make_pod({"foo": ""}, node="node-y")],
     {"node-a": OK, "node-b": OK, "node-x": SKEW, "node-y": SKEW}),
    ("existing pods do not match a null selector",
     make_pod({"foo": ""}, constraints=[hard(1, "zone", None)]), FOUR_NODES,
     foo_pods(node_x=1, node_y=1), {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("pods spread across zones as 3/3: every node fits",
     make_pod({"foo": ""}, constraints=[hard(1, "zone")]), FOUR_NODES,
     foo_pods(node_a=2, node_b=1, node_y=3),
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("a node without the zone label is unresolvable and does not count (1/2)",
     make_pod({"foo": ""}, constraints=[hard(1, "zone")]),
     [zone_node("node-a", "zone1"), make_node("node-b", {"zon": "zone1", "node": "node-b"}),
      zone_node("node-x", "zone2"), zone_node("node-y", "zone2")],
     foo_pods(node_a=1, node_b=1, node_x=1, node_y=1),
     {"node-a": OK, "node-b": LABEL, "node-x": SKEW, "node-y": SKEW}),
    ("no node has the rack label",
     make_pod({"foo": ""}, constraints=[hard(1, "rack")]),
     [zone_node("node-a", "zone1"), zone_node("node-x", "zone2")], [],
     {"node-a": LABEL, "node-x": LABEL}),
    ("pods spread across nodes as 2/1/0/3: only node-x fits",
     make_pod({"foo": ""}, constraints=[hard(1, "node")]), FOUR_NODES,
     foo_pods(node_a=2, node_b=1, node_y=3),
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
    ("2/1/0/3 with maxSkew 2: node-b and node-x fit",
     make_pod({"foo": ""}, constraints=[hard(2, "node")]), FOUR_NODES,
     foo_pods(node_a=2, node_b=1, node_y=3),
     {"node-a": SKEW, "node-b": OK, "node-x": OK, "node-y": SKEW}),
    ("2/1/0/3 but the pod does not match itself",
     make_pod({"bar": ""}, constraints=[hard(1, "node")]), FOUR_NODES,
     foo_pods(node_a=2, node_b=1, node_y=3),
     {"node-a": SKEW, "node-b": OK, "node-x": OK, "node-y": SKEW}),
    ("node affinity leaves 2/~1~/~0~/3: node-a fits",
     make_pod({"foo": ""}, constraints=[hard(1, "node")], node_affinity={"nodeSelectorTerms": [
         {"matchExpressions": [{"key": "node", "operator": "In",
                                "values": ["node-a", "node-y"]}]}]}), FOUR_NODES,
     foo_pods(node_a=2, node_b=1, node_y=3),
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": SKEW}),
    ("terminating pods are not counted",
     make_pod({"foo": ""}, constraints=[hard(1, "node")]),
     [make_node("node-a", {"node": "node-a"}), make_node("node-b", {"node": "node-b"})],
     [make_pod({"foo": ""}, node="node-a", terminating=True), make_pod({"foo": ""}, node="node-b")],
     {"node-a": OK, "node-b": SKEW}),
    ("node affinity leaves 0/~2~/0/1: node-a fits",
     make_pod({"foo": ""}, constraints=[hard(1, "zone")], node_affinity={"nodeSelectorTerms": [
         {"matchExpressions": [{"key": "node", "operator": "NotIn", "values": ["node-b"]}]}]}),
     FOUR_NODES, foo_pods(node_b=2, node_y=1),
     {"node-a": OK, "node-b": OK, "node-x": SKEW, "node-y": SKEW}),
    ("2/2/1, maxSkew 2, fewer domains than minDomains: the minimum is 0",
     make_pod({"foo": ""}, constraints=[hard(2, "node", minDomains=4)]),
     [make_node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
     foo_pods(node_a=2, node_b=2, node_c=1),
     {"node-a": SKEW, "node-b": SKEW, "node-c": OK}),
    ("2/2/1, maxSkew 2, more domains than minDomains: every node fits",
     make_pod({"foo": ""}, constraints=[hard(2, "node", minDomains=2)]),
     [make_node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
     foo_pods(node_a=2, node_b=2, node_c=1),
     {"node-a": OK, "node-b": OK, "node-c": OK}),
    ("zones 2/1, maxSkew 2, fewer domains than minDomains",
     make_pod({"foo": ""}, constraints=[hard(2, "zone", minDomains=3)]), FOUR_NODES,
     foo_pods(node_a=1, node_b=1, node_y=1),
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK}),
    ("zones 2/1, maxSkew 2, more domains than minDomains",
     make_pod({"foo": ""}, constraints=[hard(2, "zone", minDomains=1)]), FOUR_NODES,
     foo_pods(node_a=1, node_b=1, node_y=1),
     {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK}),
    ("nodeAffinityPolicy Honor with a nodeSelector: 1/1/0/~0~",
     make_pod({"foo": ""}, constraints=[hard(1, "node")], node_selector={"foo": ""}),
     [make_node("node-a", {"node": "node-a", "foo": ""}),
      make_node("node-b", {"node": "node-b", "foo": ""}),
      make_node("node-x", {"node": "node-x", "foo": ""}), make_node("node-y", {"node": "node-y"})],
     foo_pods(node_a=1, node_b=1, node_y=1),
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK}),
    ("nodeAffinityPolicy Ignore with a nodeSelector: 1/1/0/1",
     make_pod({"foo": ""}, constraints=[hard(1, "node", nodeAffinityPolicy="Ignore")],
              node_selector={"foo": ""}),
     [make_node("node-a", {"node": "node-a", "foo": ""}),
      make_node("node-b", {"node": "node-b", "foo": ""}),
      make_node("node-x", {"node": "node-x", "foo": ""}), make_node("node-y", {"node": "node-y"})],
     foo_pods(node_a=1, node_b=1, node_y=1),
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
    ("nodeTaintsPolicy Honor: the tainted node holds no domain",
     make_pod({"foo": ""}, constraints=[hard(1, "node", nodeTaintsPolicy="Honor")]),
     [make_node("node-a", {"node": "node-a"}), make_node("node-b", {"node": "node-b"}),
      make_node("node-x", {"node": "node-x"}),
      make_node("node-y", {"node": "node-y"}, NO_SCHEDULE_TAINT)],
     foo_pods(node_a=1, node_b=1, node_y=1),
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": OK}),
    ("nodeTaintsPolicy Ignore (the default): the tainted node counts",
     make_pod({"foo": ""}, constraints=[hard(1, "node")]),
     [make_node("node-a", {"node": "node-a"}), make_node("node-b", {"node": "node-b"}),
      make_node("node-x", {"node": "node-x"}),
      make_node("node-y", {"node": "node-y"}, NO_SCHEDULE_TAINT)],
     foo_pods(node_a=1, node_b=1, node_y=1),
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
]


@pytest.mark.parametrize("name,pod,nodes,pods,want", SINGLE_CONSTRAINT_CASES,
                         ids=[case[0] for case in SINGLE_CONSTRAINT_CASES])
def test_filter_with_a_single_constraint(name: str, pod: Obj, nodes: list[Obj],
                                         pods: list[Obj], want: dict[str, Code]) -> None:
    assert filter_codes(pod, nodes, pods) == want


MULTIPLE_CONSTRAINTS_CASES = [
    ("zone and node, spreads [3/3, 2/1/0/3]: node-x",
     make_pod({"foo": ""}, constraints=[hard(1, "zone"), hard(1, "node")]), FOUR_NODES,
     foo_pods(node_a=2, node_b=1, node_y=3),
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
    ("zone and node, spreads [3/4, 2/1/0/4]: no node",
     make_pod({"foo": ""}, constraints=[hard(1, "zone"), hard(1, "node")]), FOUR_NODES,
     foo_pods(node_a=2, node_b=1, node_y=4),
     {"node-a": SKEW, "node-b": SKEW, "node-x": SKEW, "node-y": SKEW}),
    ("different selectors, spreads [1/0, 1/0/0/1]: node-x",
     make_pod({"foo": "", "bar": ""}, constraints=[hard(1, "zone"), hard(1, "node", BAR)]),
     FOUR_NODES, [make_pod({"foo": ""}, node="node-a"), make_pod({"bar": ""}, node="node-y")],
     {"node-a": SKEW, "node-b": SKEW, "node-x": OK, "node-y": SKEW}),
    ("different selectors, spreads [1/0, 0/0/1/1]: no node",
     make_pod({"foo": "", "bar": ""}, constraints=[hard(1, "zone"), hard(1, "node", BAR)]),
     FOUR_NODES, [make_pod({"foo": ""}, node="node-a"), make_pod({"bar": ""}, node="node-x"),
                  make_pod({"bar": ""}, node="node-y")],
     {"node-a": SKEW, "node-b": SKEW, "node-x": SKEW, "node-y": SKEW}),
]


@pytest.mark.parametrize("name,pod,nodes,pods,want", MULTIPLE_CONSTRAINTS_CASES,
                         ids=[case[0] for case in MULTIPLE_CONSTRAINTS_CASES])
def test_filter_with_several_constraints(name: str, pod: Obj, nodes: list[Obj],
                                         pods: list[Obj], want: dict[str, Code]) -> None:
    assert filter_codes(pod, nodes, pods) == want


def test_filter_reasons_are_upstreams() -> None:
    pod = PodInfo.of(make_pod({"foo": ""}, constraints=[hard(1, "zone")]))
    nodes = [zone_node("node-a", "zone1"), zone_node("node-b", "zone2"),
             make_node("node-c", {"node": "node-c"})]
    plugin, snapshot = setup(nodes, foo_pods(node_a=1), LIST)
    state = CycleState()
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    assert plugin.filter(state, pod, snapshot.get("node-a")).reasons == [
        "node(s) didn't match pod topology spread constraints"]
    assert plugin.filter(state, pod, snapshot.get("node-c")).reasons == [
        "node(s) didn't match pod topology spread constraints (missing required label)"]
    assert ERR_REASON_CONSTRAINTS_NOT_MATCH in ERR_REASON_NODE_LABEL_NOT_MATCH


# --- PreFilter extensions (TestPreFilterStateAddPod / RemovePod) ------------------------------


def test_add_pod_and_remove_pod_move_the_critical_paths() -> None:
    pod = PodInfo.of(make_pod({"foo": ""}, constraints=[hard(1, "node")]))
    nodes = [make_node(n, {"node": n}) for n in ("node-a", "node-b")]
    plugin, snapshot = setup(nodes, foo_pods(node_a=1), LIST)
    state = CycleState()
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    node_a, node_b = snapshot.get("node-a"), snapshot.get("node-b")
    assert plugin.filter(state, pod, node_a).code == Code.UNSCHEDULABLE

    added = PodInfo.of(make_pod({"foo": ""}, node="node-b"))
    assert plugin.add_pod(state, pod, added, node_b).is_success()
    pre_filter_state = state.read(PRE_FILTER_STATE_KEY)
    assert pre_filter_state.tp_value_to_match_num == [{"node-a": 1, "node-b": 1}]
    assert plugin.filter(state, pod, node_a).is_success()

    assert plugin.remove_pod(state, pod, added, node_b).is_success()
    assert pre_filter_state.critical_paths[0].paths[0] == ("node-b", 0)
    assert plugin.filter(state, pod, node_a).code == Code.UNSCHEDULABLE


def test_add_pod_ignores_pods_of_other_namespaces_and_non_matching_labels() -> None:
    pod = PodInfo.of(make_pod({"foo": ""}, constraints=[hard(1, "node")]))
    nodes = [make_node(n, {"node": n}) for n in ("node-a", "node-b")]
    plugin, snapshot = setup(nodes, [], LIST)
    state = CycleState()
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    node_b = snapshot.get("node-b")
    plugin.add_pod(state, pod, PodInfo.of(make_pod({"foo": ""}, namespace="other")), node_b)
    plugin.add_pod(state, pod, PodInfo.of(make_pod({"bar": ""})), node_b)
    assert state.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num == [
        {"node-a": 0, "node-b": 0}]


def test_a_cloned_state_keeps_its_own_counts() -> None:
    pod = PodInfo.of(make_pod({"foo": ""}, constraints=[hard(1, "node")]))
    nodes = [make_node(n, {"node": n}) for n in ("node-a", "node-b")]
    plugin, snapshot = setup(nodes, foo_pods(node_a=1), LIST)
    state = CycleState()
    plugin.pre_filter(state, pod, snapshot.node_info_list)
    what_if = state.clone()
    plugin.remove_pod(what_if, pod, snapshot.get("node-a").pods[0], snapshot.get("node-a"))
    assert what_if.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num == [
        {"node-a": 0, "node-b": 0}]
    assert state.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num == [
        {"node-a": 1, "node-b": 0}]


# --- Scoring (TestPodTopologySpreadScore) ---------------------------------------------------


def host_node(name: str, **labels: str) -> Obj:
    return make_node(name, {LABEL_HOSTNAME: name, **labels})


def score(pod: Obj, nodes: list[Obj], failed: list[Obj], pods: list[Obj],
          args: Obj | None = None, objects: dict[str, list[Obj]] | None = None
          ) -> dict[str, int]:
    plugin, snapshot = setup(nodes + failed, pods, args or {"defaultingType": "System"},
                             objects)
    state = CycleState()
    pod_info = PodInfo.of(pod)
    candidates = [snapshot.get(node["metadata"]["name"]) for node in nodes]
    assert plugin.pre_score(state, pod_info, candidates).is_success()
    scores = {}
    for info in candidates:
        raw, status = plugin.score(state, pod_info, info)
        assert status.is_success()
        scores[info.name] = raw
    assert plugin.normalize_score(state, pod_info, scores) is None
    return scores


HOSTS_ABCD = [host_node(n) for n in ("node-a", "node-b", "node-c", "node-d")]
ZONE_HOSTS = [host_node("node-a", zone="zone1"), host_node("node-b", zone="zone1"),
              host_node("node-x", zone="zone2"), host_node("node-y", zone="zone2")]

SCORE_CASES = [
    ("one constraint on node, no existing pods",
     make_pod({"foo": ""}, constraints=[soft(1, LABEL_HOSTNAME)]),
     [host_node("node-a"), host_node("node-b")], [], [], {"node-a": 100, "node-b": 100}),
    ("one constraint on node, only one node is a candidate",
     make_pod({"foo": ""}, constraints=[soft(1, LABEL_HOSTNAME)]),
     [host_node("node-a")], [host_node("node-b")], foo_pods(node_a=2, node_b=1),
     {"node-a": 100}),
    ("one constraint on node, all nodes have the same number of matching pods",
     make_pod({"foo": ""}, constraints=[soft(1, LABEL_HOSTNAME)]),
     [host_node("node-a"), host_node("node-b")], [], foo_pods(node_a=1, node_b=1),
     {"node-a": 100, "node-b": 100}),
    ("one constraint on node, 2/1/0/3",
     make_pod({"foo": ""}, constraints=[soft(1, LABEL_HOSTNAME)]), HOSTS_ABCD, [],
     foo_pods(node_a=2, node_b=1, node_d=3),
     {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0}),
    ("one constraint on node, null selector",
     make_pod({"foo": ""}, constraints=[soft(1, LABEL_HOSTNAME, None)]), HOSTS_ABCD, [],
     foo_pods(node_a=2, node_b=1, node_d=3),
     {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100}),
    ("one constraint on node, 2/1/0/3, maxSkew 2",
     make_pod({"foo": ""}, constraints=[soft(2, LABEL_HOSTNAME)]), HOSTS_ABCD, [],
     foo_pods(node_a=2, node_b=1, node_d=3),
     {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16}),
    ("one constraint on node, 4/3/2/1, maxSkew 3",
     make_pod({"foo": ""}, constraints=[soft(3, LABEL_HOSTNAME)]), HOSTS_ABCD, [],
     foo_pods(node_a=4, node_b=3, node_c=2, node_d=1),
     {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}),
    ("one constraint on node, 4/2/1/~3~",
     make_pod({"foo": ""}, constraints=[soft(1, LABEL_HOSTNAME)]),
     [host_node("node-a"), host_node("node-b"), host_node("node-x")], [host_node("node-y")],
     foo_pods(node_a=4, node_b=2, node_x=1, node_y=3),
     {"node-a": 33, "node-b": 83, "node-x": 100}),
    ("one constraint on node, 4/?2?/1/~3~: node-b lacks the key",
     make_pod({"foo": ""}, constraints=[soft(1, LABEL_HOSTNAME)]),
     [host_node("node-a"), make_node("node-b", {"n": "node-b"}), host_node("node-x")],
     [host_node("node-y")], foo_pods(node_a=4, node_b=2, node_x=1, node_y=3),
     {"node-a": 16, "node-b": 0, "node-x": 100}),
    ("one constraint on zone, 4/2/1/~3~",
     make_pod({"foo": ""}, constraints=[soft(1, "zone")]), ZONE_HOSTS[:3], ZONE_HOSTS[3:],
     foo_pods(node_a=4, node_b=2, node_x=1, node_y=3),
     {"node-a": 75, "node-b": 75, "node-x": 100}),
    ("zone and node, 2/~1~/2/~4~",
     make_pod({"foo": ""}, constraints=[soft(1, "zone"), soft(1, LABEL_HOSTNAME)]),
     [ZONE_HOSTS[0], ZONE_HOSTS[2]], [ZONE_HOSTS[1], ZONE_HOSTS[3]],
     foo_pods(node_a=2, node_b=1, node_x=2, node_y=4),
     {"node-a": 100, "node-x": 63}),
    ("zone and node with different selectors",
     make_pod({"foo": "", "bar": ""}, constraints=[soft(1, "zone"), soft(1, LABEL_HOSTNAME, BAR)]),
     ZONE_HOSTS, [],
     [make_pod({"foo": ""}, node="node-a"), make_pod({"foo": "", "bar": ""}, node="node-b"),
      make_pod({"foo": ""}, node="node-y"), make_pod({"bar": ""}, node="node-y")],
     {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60}),
    ("zone and node with different selectors, some nodes without pods",
     make_pod({"foo": "", "bar": ""}, constraints=[soft(1, "zone"), soft(1, LABEL_HOSTNAME, BAR)]),
     ZONE_HOSTS, [],
     [make_pod({"bar": ""}, node="node-b"), make_pod({"foo": ""}, node="node-x"),
      make_pod({"foo": "", "bar": ""}, node="node-y")],
     {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0}),
    ("zone and node with different selectors, 3 of 4 nodes are candidates",
     make_pod({"foo": "", "bar": ""}, constraints=[soft(1, "zone"), soft(1, LABEL_HOSTNAME, BAR)]),
     ZONE_HOSTS[:3], ZONE_HOSTS[3:],
     [make_pod({"foo": ""}, node="node-a"), make_pod({"foo": "", "bar": ""}, node="node-b"),
      make_pod({"foo": ""}, node="node-y"), make_pod({"bar": ""}, node="node-y")],
     {"node-a": 50, "node-b": 25, "node-x": 100}),
    ("existing pods in a different namespace do not count",
     make_pod({"foo": ""}, constraints=[soft(1, LABEL_HOSTNAME)]),
     [host_node("node-a"), host_node("node-b")], [],
     [make_pod({"foo": ""}, node="node-a", namespace="ns1"),
      make_pod({"foo": ""}, node="node-a")] + foo_pods(node_b=2),
     {"node-a": 100, "node-b": 33}),
    ("terminating pods are not counted",
     make_pod({"foo": ""}, constraints=[soft(1, LABEL_HOSTNAME)]),
     [host_node("node-a"), host_node("node-b")], [],
     [make_pod({"foo": ""}, node="node-a", terminating=True),
      make_pod({"foo": ""}, node="node-b")],
     {"node-a": 100, "node-b": 0}),
    ("minDomains has no effect on ScheduleAnyway",
     make_pod({"foo": ""}, constraints=[soft(2, "node", minDomains=10)]),
     [make_node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")], [],
     foo_pods(node_a=2, node_b=2, node_c=1),
     {"node-a": 75, "node-b": 75, "node-c": 100}),
    ("nodeAffinityPolicy Honor with a nodeSelector",
     make_pod({"foo": ""}, constraints=[soft(1, "node")], node_selector={"foo": ""}),
     [make_node("node-a", {"node": "node-a", "foo": ""}),
      make_node("node-b", {"node": "node-b", "foo": ""}), make_node("node-c", {"node": "node-c"})],
     [], foo_pods(node_a=2, node_b=1, node_c=1),
     {"node-a": 0, "node-b": 33, "node-c": 100}),
    ("nodeAffinityPolicy Ignore with a nodeSelector",
     make_pod({"foo": ""}, constraints=[soft(1, "node", nodeAffinityPolicy="Ignore")],
              node_selector={"foo": ""}),
     [make_node("node-a", {"node": "node-a", "foo": ""}),
      make_node("node-b", {"node": "node-b", "foo": ""}), make_node("node-c", {"node": "node-c"})],
     [], foo_pods(node_a=2, node_b=1, node_c=1),
     {"node-a": 66, "node-b": 100, "node-c": 100}),
    ("nodeTaintsPolicy Honor",
     make_pod({"foo": ""}, constraints=[soft(1, "node", nodeTaintsPolicy="Honor")]),
     [make_node("node-a", {"node": "node-a"}), make_node("node-b", {"node": "node-b"}),
      make_node("node-c", {"node": "node-c"}, NO_SCHEDULE_TAINT)],
     [], foo_pods(node_a=2, node_b=1, node_c=1),
     {"node-a": 0, "node-b": 33, "node-c": 100}),
    ("nodeTaintsPolicy Ignore",
     make_pod({"foo": ""}, constraints=[soft(1, "node")]),
     [make_node("node-a", {"node": "node-a"}), make_node("node-b", {"node": "node-b"}),
      make_node("node-c", {"node": "node-c"}, NO_SCHEDULE_TAINT)],
     [], foo_pods(node_a=2, node_b=1, node_c=1),
     {"node-a": 66, "node-b": 100, "node-c": 100}),
    ("matchLabelKeys ANDed with an empty label selector",
     make_pod({"foo": "", "bar": ""}, constraints=[
         soft(1, "zone", {}, matchLabelKeys=["foo"]),
         soft(1, LABEL_HOSTNAME, {}, matchLabelKeys=["bar"])]),
     [host_node("node-a", zone="zone1"), host_node("node-b", zone="zone1"),
      host_node("node-c", zone="zone2"), host_node("node-d", zone="zone2")], [],
     [make_pod({"foo": ""}, node="node-a"), make_pod({"foo": "", "bar": ""}, node="node-b"),
      make_pod({"foo": ""}, node="node-c"), make_pod({"bar": ""}, node="node-c")],
     {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100}),
    ("matchLabelKeys ANDed with a label selector",
     make_pod({"foo": "", "bar": "", "baz": ""}, constraints=[
         soft(1, "zone"), soft(1, LABEL_HOSTNAME, BAR, matchLabelKeys=["baz"])]),
     [host_node("node-a", zone="zone1"), host_node("node-b", zone="zone1"),
      host_node("node-c", zone="zone2"), host_node("node-d", zone="zone2")], [],
     [make_pod({"foo": ""}, node="node-a"),
      make_pod({"foo": "", "bar": "", "baz": ""}, node="node-b"),
      make_pod({"foo": ""}, node="node-c"), make_pod({"bar": ""}, node="node-c"),
      make_pod({"bar": "", "baz": ""}, node="node-c")],
     {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100}),
]


@pytest.mark.parametrize("name,pod,nodes,failed,pods,want", SCORE_CASES,
                         ids=[case[0] for case in SCORE_CASES])
def test_scores(name: str, pod: Obj, nodes: list[Obj], failed: list[Obj], pods: list[Obj],
                want: dict[str, int]) -> None:
    assert score(pod, nodes, failed, pods) == want


def test_a_pod_without_soft_constraints_skips_scoring() -> None:
    plugin, snapshot = setup(FOUR_NODES, [], LIST)
    pod = PodInfo.of(make_pod({"foo": ""}, constraints=[hard(1, "zone")]))
    assert plugin.pre_score(CycleState(), pod, snapshot.node_info_list).code == Code.SKIP


def test_pre_score_weights_topologies_by_their_number_of_domains() -> None:
    """TestPreScoreStateEmptyNodes "normal case": 2 zones, 3 hostnames."""
    pod = make_pod({"foo": ""}, constraints=[soft(1, "zone"), soft(1, LABEL_HOSTNAME)])
    nodes = [host_node("node-a", zone="zone1"), host_node("node-b", zone="zone1"),
             host_node("node-x", zone="zone2")]
    plugin, snapshot = setup(nodes, [], LIST)
    state = CycleState()
    plugin.pre_score(state, PodInfo.of(pod), snapshot.node_info_list)
    pre_score_state = state.read(PRE_SCORE_STATE_KEY)
    assert pre_score_state.topology_value_to_pod_counts == [{"zone1": 0, "zone2": 0}, {}]
    assert pre_score_state.topology_normalizing_weight == [
        topology_normalizing_weight(2), topology_normalizing_weight(3)]
    assert pre_score_state.ignored_nodes == set()


# --- default constraints -------------------------------------------------------------------

RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs1", "controller": True,
            "uid": "rs1-uid"}


def replica_set(name: str, selector: Obj) -> Obj:
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"selector": selector}}


def test_system_defaults_spread_pods_of_a_service_by_hostname() -> None:
    """"system defaulting, nodes don't have zone, pods match service": the same scores as
    one hostname constraint with maxSkew 3."""
    service = {"metadata": {"name": "svc", "namespace": "default"},
               "spec": {"selector": {"foo": ""}}}
    scores = score(make_pod({"foo": ""}, namespace="default"), HOSTS_ABCD, [],
                   foo_pods("default", node_a=4, node_b=3, node_c=2, node_d=1),
                   objects={"services": [service]})
    assert scores == {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}


def test_system_defaults_take_the_replica_sets_selector_and_count_zoneless_nodes() -> None:
    """TestPreScoreStateEmptyNodes "system default constraints and a replicaset"."""
    pod = make_pod({"foo": "tar", "baz": "sup"}, namespace="default", owner=RS_OWNER)
    nodes = [host_node("node-a", **{LABEL_TOPOLOGY_ZONE: "mars"}),
             host_node("node-b", **{LABEL_TOPOLOGY_ZONE: "mars"}),
             host_node("node-c"), host_node("node-d")]
    plugin, snapshot = setup(nodes, [], None,
                             {"replicasets": [replica_set("rs1", FOO)]})
    state = CycleState()
    assert plugin.pre_score(state, PodInfo.of(pod), snapshot.node_info_list).is_success()
    pre_score_state = state.read(PRE_SCORE_STATE_KEY)
    assert [(c.topology_key, c.max_skew, str(c.selector))
            for c in pre_score_state.constraints] == [
        (LABEL_HOSTNAME, 3, "foo"), (LABEL_TOPOLOGY_ZONE, 5, "foo")]
    assert pre_score_state.topology_value_to_pod_counts == [{}, {"mars": 0, "": 0}]
    assert pre_score_state.topology_normalizing_weight == [
        topology_normalizing_weight(4), topology_normalizing_weight(2)]


def test_system_defaults_do_not_filter() -> None:
    plugin, snapshot = setup(HOSTS_ABCD, [], None, {"replicasets": [replica_set("rs1", FOO)]})
    pod = PodInfo.of(make_pod({"foo": ""}, namespace="default", owner=RS_OWNER))
    assert plugin.pre_filter(CycleState(), pod, snapshot.node_info_list)[1].code == Code.SKIP


def test_list_defaults_apply_only_to_pods_without_constraints() -> None:
    """"default constraints and a replicaset" and "...but pod has constraints"."""
    args = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway"},
        {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": "ScheduleAnyway"}]}
    plugin, _ = setup([], [], args, {"replicasets": [replica_set("rs1", FOO)]})
    defaulted = make_pod({"foo": "tar", "baz": "sup"}, namespace="default", owner=RS_OWNER)
    assert [(c.topology_key, c.max_skew, str(c.selector))
            for c in plugin.get_constraints(defaulted, "ScheduleAnyway")] == [
        (LABEL_HOSTNAME, 1, "foo"), ("planet", 2, "foo")]
    assert [c.topology_key for c in plugin.get_constraints(defaulted, "DoNotSchedule")] == [
        "rack"]
    own = make_pod({"baz": "sup"}, namespace="default", owner=RS_OWNER, constraints=[
        soft(2, "planet", {"matchLabels": {"baz": "sup"}})])
    assert [(c.topology_key, str(c.selector))
            for c in plugin.get_constraints(own, "ScheduleAnyway")] == [("planet", "baz=sup")]


def test_no_default_constraints_without_a_matching_owner_or_service() -> None:
    """"default constraints and a replicaset that doesn't match": an owner that is not
    in the lister leaves an empty selector, hence no constraints."""
    args = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": "ScheduleAnyway"}]}
    plugin, _ = setup([], [], args, {"replicasets": [replica_set("rs1", FOO)]})
    pod = make_pod({"foo": "bar"}, namespace="default", owner=dict(RS_OWNER, name="rs2"))
    assert plugin.get_constraints(pod, "ScheduleAnyway") == []


def test_services_and_a_stateful_set_selectors_are_anded() -> None:
    service = {"metadata": {"name": "web", "namespace": "default"},
               "spec": {"selector": {"app": "web"}}}
    headless = {"metadata": {"name": "none", "namespace": "default"}, "spec": {}}
    stateful_set = {"metadata": {"name": "db", "namespace": "default"},
                    "spec": {"selector": {"matchLabels": {"tier": "db"}}}}
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": True}
    plugin, _ = setup([], [], None, {"services": [service, headless],
                                     "statefulsets": [stateful_set]})
    pod = make_pod({"app": "web", "tier": "db"}, namespace="default", owner=owner)
    assert str(plugin.default_selector(pod)) == "app=web,tier=db"


def test_without_informers_pods_get_no_default_constraints() -> None:
    plugin, _ = setup([], [], None)
    pod = make_pod({"foo": ""}, namespace="default", owner=RS_OWNER)
    assert plugin.get_constraints(pod, "ScheduleAnyway") == []


# --- args ----------------------------------------------------------------------------------


def test_args_default_to_system_defaulting() -> None:
    plugin = PodTopologySpread()
    assert plugin.defaulting_type == "System"
    assert [(c["topologyKey"], c["maxSkew"]) for c in plugin.default_constraints] == [
        (LABEL_HOSTNAME, 3), (LABEL_TOPOLOGY_ZONE, 5)]


ARGS_ERRORS = [
    ({"defaultingType": "Foo"},
     'defaultingType: Unsupported value: "Foo": supported values: "System", "List"'),
    ({"defaultingType": "System", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
     'defaultingType: Invalid value: "System": when .defaultConstraints are not empty'),
    ({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
     "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"),
    ({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "Foo"}]},
     "[defaultConstraints[0].topologyKey: Required value: can not be empty, "
     'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Foo": supported values: '
     '"DoNotSchedule", "ScheduleAnyway"]'),
    ({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {}}]},
     "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, "
     "as they deduced for each pod"),
    ({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
     'defaultConstraints[1]: Duplicate value: "{zone, DoNotSchedule}"'),
]


@pytest.mark.parametrize("args,message", ARGS_ERRORS, ids=[m for _, m in ARGS_ERRORS])
def test_invalid_args_are_rejected_with_upstreams_messages(args: Obj, message: str) -> None:
    with pytest.raises(ValueError) as error:
        PodTopologySpread(args)
    assert str(error.value) == message


def test_events_to_register_cover_pod_and_node_changes() -> None:
    events = {(e.resource, e.action) for e in PodTopologySpread().events_to_register()}
    assert events == {("Pod", "Add"), ("Pod", "UpdatePodLabel"), ("Pod", "Delete"),
                      ("Pod", "UpdatePodToleration"), ("Node", "Add"), ("Node", "Delete"),
                      ("Node", "UpdateNodeLabel"), ("Node", "UpdateNodeTaint")}


# --- remembered per-node counts across cycles (NodeMemo) ---------------------------------


def test_node_memo_reuses_a_result_only_for_the_same_node_info_object() -> None:
    computed: list[str] = []

    def compute(info: NodeInfo) -> int:
        computed.append(info.name)
        return len(info.pods)

    memo: NodeMemo[int] = NodeMemo()
    node_a = NodeInfo.of(make_node("node-a", {}), foo_pods(node_a=1))
    assert memo.per_node("key", compute)(node_a) == 1
    assert memo.per_node("key", compute)(node_a) == 1
    changed = node_a.clone()
    changed.add_pod(PodInfo.of(make_pod({"foo": ""}, node="node-a")))
    assert memo.per_node("key", compute)(changed) == 2
    assert memo.per_node("other key", compute)(changed) == 2
    assert computed == ["node-a", "node-a", "node-a"]


def test_node_memo_keeps_only_the_most_recently_used_keys() -> None:
    memo: NodeMemo[str] = NodeMemo(size=2)
    node = NodeInfo.of(make_node("node-a", {}))
    calls: list[str] = []

    def compute_for(key: str) -> Callable[[NodeInfo], str]:
        def compute(info: NodeInfo) -> str:
            calls.append(key)
            return key
        return compute

    for key in ("a", "b", "a", "c", "a", "b"):
        assert memo.per_node(key, compute_for(key))(node) == key
    assert calls == ["a", "b", "c", "b"]  # "b" was dropped when "c" came in


def test_node_memo_sums_by_label_in_the_order_values_first_appear() -> None:
    """Nodes without the label are left out; only a changed NodeInfo is counted again."""
    computed: list[str] = []

    def compute(info: NodeInfo) -> int:
        computed.append(info.name)
        return len(info.pods)

    memo: NodeMemo[int] = NodeMemo()
    infos = Snapshot.of([make_node("node-a", {"zone": "z2"}), make_node("node-b", {}),
                         make_node("node-c", {"zone": "z1"}), make_node("node-d", {"zone": "z2"})],
                        foo_pods(node_a=1, node_b=4, node_d=2)).node_info_list
    sums = memo.sums_by_label("key", compute, infos, "zone")
    assert list(sums.items()) == [("z2", 3), ("z1", 0)]
    changed = infos[2].clone()
    changed.add_pod(PodInfo.of(make_pod({"foo": ""}, node="node-c")))
    infos[2] = changed
    assert list(memo.sums_by_label("key", compute, infos, "zone").items()) == [
        ("z2", 3), ("z1", 1)]
    assert computed == ["node-a", "node-c", "node-d", "node-c"]


def test_the_next_cycle_counts_the_pods_of_a_node_that_changed() -> None:
    pod = PodInfo.of(make_pod({"foo": ""}, constraints=[hard(1, "node")]))
    nodes = [make_node(n, {"node": n}) for n in ("node-a", "node-b")]
    plugin, first = setup(nodes, foo_pods(node_a=1), LIST)
    state = CycleState()
    plugin.pre_filter(state, pod, first.node_info_list)
    assert state.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num == [
        {"node-a": 1, "node-b": 0}]

    node_b = first.get("node-b").clone()
    node_b.add_pod(PodInfo.of(make_pod({"foo": ""}, node="node-b")))
    second = Snapshot([first.get("node-a"), node_b])
    plugin.handle = FakeHandle(second)
    state = CycleState()
    plugin.pre_filter(state, pod, second.node_info_list)
    assert state.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num == [
        {"node-a": 1, "node-b": 1}]
