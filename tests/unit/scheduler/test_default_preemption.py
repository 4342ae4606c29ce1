"""DefaultPreemption on plain data: which pods are victims and in what order they are
reprieved, PodDisruptionBudget counting, the choice of node, eligibility, args, and what
PostFilter does and says (cases follow upstream's default_preemption_test.go and
preemption_test.go; the upstream test names are cited)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.store import Indexer
from minikube_py.scheduler.framework.interface import (
    Code,
    CycleState,
    PluginArgsError,
    PostFilterResult,
    Status,
)
from minikube_py.scheduler.framework.runtime import ExtensionPoints, Framework
from minikube_py.scheduler.framework.types import PodInfo, Snapshot
from minikube_py.scheduler.plugins.default_preemption import (
    Candidate,
    DefaultPreemption,
    filter_pods_with_pdb_violation,
    pick_one_node_for_preemption,
)
from minikube_py.scheduler.plugins.node_resources_fit import NodeResourcesFit
from minikube_py.scheduler.scheduler import FitError

EARLY, LATE = "2024-01-01T00:00:00Z", "2024-06-01T00:00:00Z"
LOW, MID, HIGH = 1, 100, 1000
MIN_INT32 = -(2 ** 31)


def node(name: str, cpu: str = "4") -> Obj:
    return {"metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name: str, priority: int = 0, cpu: str = "1", on: str = "", start: str = EARLY,
        labels: dict[str, str] | None = None, **extra: Any) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "i",
                                 "resources": {"requests": {"cpu": cpu}}}],
                 "priority": priority, "schedulerName": "default-scheduler"}
    status: Obj = {"startTime": start} if on else {}
    if on:
        spec["nodeName"] = on
    obj: Obj = {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                             "labels": labels or {}},
                "spec": spec, "status": status}
    for key, value in extra.items():
        section, _, field_name = key.partition("__")
        obj[section][field_name] = value
    return obj


def pdb(name: str, selector: Obj | None, allowed: int, namespace: str = "ns",
        disrupted: dict[str, str] | None = None) -> Obj:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": selector},
            "status": {"disruptionsAllowed": allowed, "disruptedPods": disrupted or {}}}


# -- a framework with NodeResourcesFit, and fakes for the API server side --------------------


class FakeInformers:
    """SharedInformerFactory with stores only: tests put the objects in."""

    def __init__(self) -> None:
        self.stores: dict[str, Indexer] = {}

    def informer(self, plural: str, group: str | None = None) -> Any:
        return _Informer(self.stores.setdefault(plural, Indexer()))


@dataclass
class _Informer:
    store: Indexer


@dataclass
class FakeClient:
    """Records the pod writes preemption makes."""

    calls: list[tuple[str, str, Any]] = field(default_factory=list)

    def resource(self, plural: str, group: str | None = None) -> FakeClient:
        return self

    async def patch(self, name: str, patch: Any, namespace: str | None = None, *,
                    patch_type: str = "merge", subresource: str | None = None) -> Obj:
        self.calls.append(("patch", name, patch))
        return {}

    async def delete(self, name: str, namespace: str | None = None) -> Obj:
        self.calls.append(("delete", name, None))
        return {}


@dataclass
class FakeRecorder:
    events: list[tuple[str, str, str, str]] = field(default_factory=list)

    def event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        self.events.append((obj["metadata"]["name"], event_type, reason, message))


@dataclass
class FakeNominator:
    nominated: dict[str, list[PodInfo]] = field(default_factory=dict)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self.nominated.get(node_name, [])


@dataclass
class Setup:
    framework: Framework
    plugin: DefaultPreemption
    client: FakeClient
    recorder: FakeRecorder
    informers: FakeInformers
    nominator: FakeNominator


def setup(nodes: list[Obj], pods: list[Obj], pdbs: Sequence[Obj] = (),
          args: Obj | None = None) -> Setup:
    client, recorder, informers = FakeClient(), FakeRecorder(), FakeInformers()
    fwk = Framework("default-scheduler", ExtensionPoints(), {}, client=client,  # type: ignore[arg-type]
                    informers=informers, recorder=recorder)  # type: ignore[arg-type]
    fit = NodeResourcesFit(None, fwk)
    plugin = DefaultPreemption(args, fwk)
    fwk.plugins = ExtensionPoints(pre_filter=[fit], filter=[fit], post_filter=[plugin])
    nominator = FakeNominator()
    fwk.pod_nominator = nominator
    fwk.set_snapshot(Snapshot.of(nodes, pods))
    for obj in pods:
        informers.stores["pods"].put(obj)
    for budget in pdbs:
        informers.stores["poddisruptionbudgets"].put(budget)
    return Setup(fwk, plugin, client, recorder, informers, nominator)


def filter_all(s: Setup, preemptor: Obj) -> tuple[CycleState, PodInfo, dict[str, Status]]:
    """What the scheduler does before PostFilter: PreFilter, then Filter on every node."""
    s.informers.stores["pods"].put(preemptor)
    info = PodInfo.of(preemptor)
    state = CycleState()
    nodes = s.framework.snapshot().node_info_list
    _, status = s.framework.run_pre_filter_plugins(state, info, nodes)
    assert status.is_success()
    statuses = {n.name: s.framework.run_filter_plugins(state, info, n) for n in nodes}
    return state, info, {name: st for name, st in statuses.items() if not st.is_success()}


def names(pods: list[Any]) -> list[str]:
    return [(p.pod if isinstance(p, PodInfo) else p)["metadata"]["name"] for p in pods]


# -- SelectVictimsOnNode ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_pods", "preemptor", "pdbs", "victims", "violations", "status"),
    [
        pytest.param(
            [pod("a", LOW, "1", on="n"), pod("b", MID, "1", on="n"), pod("c", HIGH, "2", on="n")],
            pod("p", 10 * HIGH, "2"), [], ["b", "a"], 0, None,
            id="lower-priority pods go, the most important are reprieved first"),
        pytest.param(
            [pod("x", HIGH, "2", on="n"), pod("y", 2 * HIGH, "2", on="n")],
            pod("p", HIGH, "1"), [], [], 0,
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["No preemption victims found for incoming pod"]),
            id="pods of equal or higher priority are never victims"),
        pytest.param(
            [pod("h", HIGH, "3", on="n"), pod("l", LOW, "1", on="n")],
            pod("p", MID, "2"), [], [], 0, (Code.UNSCHEDULABLE, ["Insufficient cpu"]),
            id="no victims when the pod does not fit even without every lower pod"),
        pytest.param(
            [pod("new", LOW, "1", on="n", start=LATE), pod("old", LOW, "1", on="n", start=EARLY)],
            pod("p", HIGH, "3"), [], ["new"], 0, None,
            id="among equal priorities the longer-running pod is reprieved first"),
        pytest.param(
            [pod("protected", LOW, "2", on="n", labels={"app": "db"}),
             pod("important", MID, "2", on="n")],
            pod("p", HIGH, "2"), [pdb("db", {"matchLabels": {"app": "db"}}, 0)],
            ["important"], 0, None,
            id="a pod its budget protects is reprieved before a more important one"),
        pytest.param(
            [pod("db-1", LOW, "2", on="n", labels={"app": "db"}, start=EARLY),
             pod("db-2", LOW, "2", on="n", labels={"app": "db"}, start=LATE)],
            pod("p", HIGH, "4"), [pdb("db", {"matchLabels": {"app": "db"}}, 1)],
            ["db-1", "db-2"], 1, None,
            id="the budget is counted down: the second pod it selects violates it"),
    ],
)
def test_select_victims_on_node(node_pods: list[Obj], preemptor: Obj, pdbs: list[Obj],
                                victims: list[str], violations: int,
                                status: tuple[Code, list[str]] | None) -> None:
    # upstream: TestSelectNodesForPreemption and TestSelectBestCandidate
    s = setup([node("n")], node_pods, pdbs)
    state, info, _ = filter_all(s, preemptor)
    node_info = s.framework.snapshot().get("n")
    assert node_info is not None
    before = names(node_info.pods)
    found, num_violations, result = s.plugin.select_victims_on_node(
        state.clone(), info, node_info.clone(), pdbs)
    assert names(found) == victims
    assert num_violations == violations
    if status is None:
        assert result.is_success()
    else:
        assert (result.code, result.reasons) == status
    assert names(node_info.pods) == before, "the snapshot's NodeInfo is left alone"


def test_pods_nominated_to_the_node_keep_their_room() -> None:
    """A pod of at least the preemptor's priority nominated to the node counts as there."""
    s = setup([node("n", "4")], [pod("a", LOW, "2", on="n"), pod("b", LOW, "2", on="n")])
    s.nominator.nominated["n"] = [PodInfo.of(pod("waiting", HIGH, "2"))]
    state, info, _ = filter_all(s, pod("p", HIGH, "2"))
    node_info = s.framework.snapshot().get("n")
    assert node_info is not None
    victims, _, status = s.plugin.select_victims_on_node(state, info, node_info.clone(), [])
    assert status.is_success()
    assert names(victims) == ["a", "b"]


# -- PodDisruptionBudgets ---------------------------------------------------------------------


DB = {"matchLabels": {"app": "db"}}


@pytest.mark.parametrize(
    ("pods", "pdbs", "violating"),
    [
        pytest.param([pod("a", labels={"app": "db"})], [pdb("x", DB, 0)], ["a"],
                     id="no disruption allowed: violating"),
        pytest.param([pod("a", labels={"app": "db"}), pod("b", labels={"app": "db"})],
                     [pdb("x", DB, 1)], ["b"], id="one allowed: the second one violates"),
        pytest.param([pod("a")], [pdb("x", {}, 0)], [],
                     id="a pod without labels matches no budget"),
        pytest.param([pod("a", labels={"app": "db"})], [pdb("x", {}, 0)], [],
                     id="an empty selector matches nothing"),
        pytest.param([pod("a", labels={"app": "db"})], [pdb("x", None, 0)], [],
                     id="a missing selector matches nothing"),
        pytest.param([pod("a", labels={"app": "db"})], [pdb("x", DB, 0, namespace="other")], [],
                     id="a budget of another namespace does not count"),
        pytest.param([pod("a", labels={"app": "db"}), pod("b", labels={"app": "db"})],
                     [pdb("x", DB, 1, disrupted={"a": EARLY})], [],
                     id="a pod already in disruptedPods is not counted again"),
        pytest.param([pod("a", labels={"app": "db"})],
                     [pdb("x", {"matchExpressions": [{"key": "app", "operator": "Bad"}]}, 0)],
                     [], id="an invalid selector matches nothing"),
    ],
)
def test_filter_pods_with_pdb_violation(pods: list[Obj], pdbs: list[Obj],
                                        violating: list[str]) -> None:
    # upstream: TestSelectNodesForPreemption's pdb cases (filterPodsWithPDBViolation)
    infos = [PodInfo.of(p) for p in pods]
    bad, good = filter_pods_with_pdb_violation(infos, pdbs)
    assert names(bad) == violating
    assert names(good) == [n for n in names(infos) if n not in violating]


# -- pickOneNodeForPreemption -----------------------------------------------------------------


def victims(*specs: tuple[int, str]) -> list[Obj]:
    return [pod(f"v{i}", priority, on="x", start=start) for i, (priority, start) in
            enumerate(specs)]


@pytest.mark.parametrize(
    ("candidates", "chosen"),
    [
        pytest.param([Candidate("a", victims((LOW, EARLY)), 1),
                      Candidate("b", victims((HIGH, EARLY), (MID, EARLY)), 0)], "b",
                     id="fewest PDB violations first"),
        pytest.param([Candidate("a", victims((MID, EARLY), (MID, EARLY)), 0),
                      Candidate("b", victims((MID, EARLY), (LOW, EARLY)), 0),
                      Candidate("c", victims((LOW, EARLY), (LOW, EARLY)), 0)], "c",
                     id="machine with min highest priority pod is picked"),
        pytest.param([Candidate("a", victims((MID, EARLY), (MID, EARLY)), 0),
                      Candidate("b", victims((MID, EARLY), (LOW, EARLY)), 0)], "b",
                     id="when highest priorities are the same, minimum sum of priorities is "
                        "picked"),
        pytest.param([Candidate("a", victims((MID, EARLY), (-5, EARLY), (-5, EARLY)), 0),
                      Candidate("b", victims((MID, EARLY), (-5, EARLY)), 0)], "b",
                     id="sum of adjusted priorities is considered"),
        pytest.param([Candidate("a", victims((MID, EARLY), (MIN_INT32, EARLY)), 0),
                      Candidate("b", victims((MID, EARLY)), 0)], "b",
                     id="when highest priority and sum are the same, minimum number of pods "
                        "is picked"),
        pytest.param([Candidate("a", victims((MID, EARLY), (LOW, LATE)), 0),
                      Candidate("b", victims((MID, LATE), (LOW, EARLY)), 0)], "b",
                     id="same priority, same number of victims, the latest start of the most "
                        "important victims wins"),
        pytest.param([Candidate("a", victims((MID, EARLY)), 0),
                      Candidate("b", victims((MID, EARLY)), 0)], "a",
                     id="a complete tie: the first"),
    ],
)
def test_pick_one_node_for_preemption(candidates: list[Candidate], chosen: str) -> None:
    # upstream: TestPickOneNodeForPreemption
    assert pick_one_node_for_preemption(candidates).name == chosen


# -- PodEligibleToPreemptOthers ---------------------------------------------------------------


def terminating_victim(priority: int) -> Obj:
    return pod("victim", priority, on="n", metadata__deletionTimestamp=EARLY, status__conditions=[
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}])


UNSCHEDULABLE = Status(Code.UNSCHEDULABLE, ["Insufficient cpu"])
UNRESOLVABLE = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) didn't match"])


@pytest.mark.parametrize(
    ("preemptor", "on_node", "nominated_status", "expected"),
    [
        pytest.param(pod("p", HIGH, spec__preemptionPolicy="Never"), [], UNSCHEDULABLE,
                     (False, "not eligible due to preemptionPolicy=Never."),
                     id="Pod with PreemptNever preemptionPolicy"),
        pytest.param(pod("p", HIGH), [terminating_victim(LOW)], UNSCHEDULABLE, (True, ""),
                     id="Pod without a nominated node"),
        pytest.param(pod("p", HIGH, status__nominatedNodeName="n"), [pod("v", LOW, on="n")],
                     UNSCHEDULABLE, (True, ""), id="Pod with nominated node"),
        pytest.param(pod("p", HIGH, status__nominatedNodeName="n"), [terminating_victim(LOW)],
                     UNSCHEDULABLE,
                     (False, "not eligible due to a terminating pod on the nominated node."),
                     id="Pod with terminating pod in nominated node"),
        pytest.param(pod("p", HIGH, status__nominatedNodeName="n"), [terminating_victim(HIGH)],
                     UNSCHEDULABLE, (True, ""),
                     id="a terminating pod of equal priority does not hold the pod back"),
        pytest.param(pod("p", HIGH, status__nominatedNodeName="n"), [terminating_victim(LOW)],
                     UNRESOLVABLE, (True, ""),
                     id="victim Pods terminating but the nominated node is unschedulable and "
                        "unresolvable"),
    ],
)
def test_pod_eligible_to_preempt_others(preemptor: Obj, on_node: list[Obj],
                                        nominated_status: Status,
                                        expected: tuple[bool, str]) -> None:
    # upstream: TestPodEligibleToPreemptOthers
    s = setup([node("n")], on_node)
    assert s.plugin.pod_eligible_to_preempt_others(PodInfo.of(preemptor),
                                                   nominated_status) == expected


# -- args and the number of candidates ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param({"minCandidateNodesPercentage": 101},
                     "minCandidateNodesPercentage: Invalid value: 101: not in valid range "
                     "[0, 100]", id="percentage above 100"),
        pytest.param({"minCandidateNodesAbsolute": -1},
                     "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
                     id="negative absolute"),
        pytest.param({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
                     "[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the "
                     "same time as minCandidateNodesAbsolute, minCandidateNodesAbsolute: "
                     "Invalid value: 0: cannot be zero at the same time as "
                     "minCandidateNodesPercentage]", id="both zero"),
    ],
)
def test_invalid_args_are_refused_with_upstreams_messages(args: Obj, error: str) -> None:
    # upstream: TestValidateDefaultPreemptionArgs
    with pytest.raises(PluginArgsError) as raised:
        DefaultPreemption(args)
    assert str(raised.value) == error


@pytest.mark.parametrize(
    ("args", "num_nodes", "expected"),
    [
        pytest.param(None, 10, 10, id="defaults: small clusters dry-run every node"),
        pytest.param(None, 5000, 500, id="defaults: 10% of a large cluster"),
        pytest.param({"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 0}, 10, 5,
                     id="a percentage alone"),
        pytest.param({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3}, 100, 3,
                     id="an absolute number alone"),
        pytest.param({"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 50}, 20,
                     20, id="never more than the nodes there are"),
    ],
)
def test_calculate_num_candidates(args: Obj | None, num_nodes: int, expected: int) -> None:
    # upstream: TestCalculateNumCandidates
    assert DefaultPreemption(args).calculate_num_candidates(num_nodes) == expected


def test_the_dry_run_stops_once_it_has_enough_candidates() -> None:
    nodes = [node(f"n{i}", "2") for i in range(5)]
    pods = [pod(f"v{i}", LOW, "2", on=f"n{i}") for i in range(5)]
    s = setup(nodes, pods, args={"minCandidateNodesAbsolute": 2})
    state, info, statuses = filter_all(s, pod("p", HIGH, "2"))
    s.plugin.random.randrange = lambda _n: 3  # type: ignore[method-assign]
    candidates, _, errors = s.plugin.find_candidates(
        state, info, s.framework.snapshot().node_info_list, statuses)
    assert [c.name for c in candidates] == ["n3", "n4"]
    assert errors == []


# -- PostFilter ---------------------------------------------------------------------------------


async def test_post_filter_preempts_on_the_cheapest_node_and_nominates_it() -> None:
    nodes = [node("a", "2"), node("b", "2")]
    pods = [pod("busy-a", MID, "2", on="a"), pod("busy-b", LOW, "2", on="b"),
            pod("nominated-low", LOW, "1", status__nominatedNodeName="b")]
    s = setup(nodes, pods)
    s.nominator.nominated["b"] = [PodInfo.of(pods[2])]
    state, info, statuses = filter_all(s, pod("p", HIGH, "2"))
    result, status = await s.plugin.post_filter(state, info, statuses)
    assert status.is_success()
    assert result == PostFilterResult("b")
    patch = s.client.calls[0]
    assert patch[:2] == ("patch", "busy-b")
    condition = patch[2]["status"]["conditions"][0]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod"}
    assert s.client.calls[1:] == [
        ("delete", "busy-b", None),
        ("patch", "nominated-low", {"status": {"nominatedNodeName": None}})]
    assert s.recorder.events == [
        ("busy-b", "Normal", "Preempted", "Preempted by pod uid-p on node b")]


async def test_victims_already_terminating_are_not_deleted_again() -> None:
    victim = pod("v", LOW, "2", on="a", metadata__deletionTimestamp=EARLY)
    s = setup([node("a", "2")], [victim])
    state, info, statuses = filter_all(s, pod("p", HIGH, "2"))
    result, status = await s.plugin.post_filter(state, info, statuses)
    assert (result, status.is_success()) == (PostFilterResult("a"), True)
    assert s.client.calls == [] and s.recorder.events == []


@pytest.mark.parametrize(
    ("nodes", "pods", "preemptor", "message"),
    [
        pytest.param([node(f"n{i}", "1") for i in range(3)],
                     [pod(f"v{i}", HIGH, "1", on=f"n{i}") for i in range(3)], pod("p", MID, "1"),
                     "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are "
                     "available: 3 No preemption victims found for incoming pod.",
                     id="nothing of lower priority to evict"),
        pytest.param([node(f"n{i}", "1") for i in range(3)] + [node("tiny-0", "500m"),
                                                               node("tiny-1", "500m")],
                     [pod(f"v{i}", HIGH, "1", on=f"n{i}") for i in range(3)], pod("p", MID, "1"),
                     "0/5 nodes are available: 5 Insufficient cpu. preemption: 0/5 nodes are "
                     "available: 2 Preemption is not helpful for scheduling, 3 No preemption "
                     "victims found for incoming pod.",
                     id="nodes too small for the pod are not even tried"),
        pytest.param([node("n", "1")], [pod("v", LOW, "1", on="n")],
                     pod("p", HIGH, "1", spec__preemptionPolicy="Never"),
                     "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due "
                     "to preemptionPolicy=Never.", id="preemptionPolicy Never"),
    ],
)
async def test_failed_scheduling_message_when_preemption_cannot_help(
        nodes: list[Obj], pods: list[Obj], preemptor: Obj, message: str) -> None:
    # upstream: TestPostFilter ("no candidate nodes found ...", "pod with preemptionPolicy
    # Never") and the scheduler's FitError.Error()
    s = setup(nodes, pods)
    state, info, statuses = filter_all(s, preemptor)
    result, status = await s.plugin.post_filter(state, info, statuses)
    assert status.code == Code.UNSCHEDULABLE
    fit = FitError(info, len(nodes), statuses)
    fit.post_filter_message = status.message()
    assert fit.message() == message
    never = preemptor["spec"].get("preemptionPolicy") == "Never"
    assert result == (None if never else PostFilterResult("")), (
        "no candidate clears the nomination; an ineligible pod keeps it")
    assert s.client.calls == []
