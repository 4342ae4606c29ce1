"""NodeToStatus (framework/node_to_status.py) reads as the eager per-node dict it stands for.

The statuses of the nodes Filter turned down are kept as the plugins handed them back
(runs of names sharing one Status, and dicts) and made a dict only when read node by
node. Whatever the mix of runs, dicts, reasons and codes, and whatever was dropped or set
since: the same items in the same order, the same length, the same FitError message and
plugins, the same nodes preemption tries, and, in a scheduling cycle, the statuses that
Filter gives node by node.
"""

from __future__ import annotations

import random

import pytest

from minikube_py.api import Obj
from minikube_py.scheduler.framework.interface import Code, CycleState, Status
from minikube_py.scheduler.framework.node_to_status import NodeToStatus
from minikube_py.scheduler.framework.types import PodInfo
from minikube_py.scheduler.plugins.pod_topology_spread import PodTopologySpread
from minikube_py.scheduler.scheduler import FitError
from tests.unit.scheduler.test_default_preemption import HIGH, LOW, filter_all, node, pod, setup
from tests.unit.scheduler.test_equivalence_cache import scheduler_with

ZONE = "topology.kubernetes.io/zone"


def status_pool() -> list[Status]:
    """Statuses of both rejecting codes, one reason or two, some named by a plugin."""
    return [
        Status.unschedulable("node(s) didn't match pod topology spread constraints")
        .with_plugin("PodTopologySpread"),
        Status.unschedulable("Insufficient cpu").with_plugin("NodeResourcesFit"),
        Status.unschedulable("Insufficient cpu", "Insufficient memory")
        .with_plugin("NodeResourcesFit"),
        Status.unschedulable("node(s) had untolerated taint {dedicated: gpu}",
                             unresolvable=True).with_plugin("TaintToleration"),
        Status.unschedulable("node(s) didn't match Pod's node affinity/selector",
                             unresolvable=True),
    ]


def reading(statuses: NodeToStatus | dict[str, Status]) -> list[tuple[str, Code, list[str]]]:
    return [(name, status.code, status.reasons) for name, status in statuses.items()]


def test_lazy_statuses_read_as_the_eager_dict_whatever_was_recorded() -> None:
    for seed in range(40):
        rng = random.Random(seed)
        pool = status_pool()
        names = [f"node-{i:03d}" for i in range(300)]
        rng.shuffle(names)
        lazy, eager = NodeToStatus(), {}
        for _ in range(rng.randrange(1, 12)):
            what = rng.choice(["run", "dict", "parts", "drop", "set", "set again"])
            if what == "run" and names:
                run = [names.pop() for _ in range(rng.randrange(1, min(40, len(names)) + 1))]
                status = rng.choice(pool)
                lazy.add_run(run, status)
                eager.update(dict.fromkeys(run, status))
            elif what == "dict" and names:
                part = {names.pop(): rng.choice(pool)
                        for _ in range(rng.randrange(1, min(20, len(names)) + 1))}
                lazy.update(part)
                eager.update(part)
            elif what == "parts" and len(names) > 4:
                # a plugin's NodeToStatus (runs of mixed reasons) taken as it is
                other = NodeToStatus({names.pop(): rng.choice(pool)})
                other.add_run([names.pop(), names.pop()], rng.choice(pool))
                other.add_run([names.pop()], rng.choice(pool))
                lazy.update(other)
                eager.update(dict(other.items()))
            elif what == "drop" and eager:
                gone = set(rng.sample(sorted(eager), rng.randrange(1, len(eager) + 1)))
                gone.add("never-named")
                lazy.drop(gone)
                eager = {name: s for name, s in eager.items() if name not in gone}
            elif what == "set" and names:
                name, status = names.pop(), rng.choice(pool)
                lazy[name] = status
                eager[name] = status
            elif what == "set again" and eager:
                name, status = rng.choice(sorted(eager)), rng.choice(pool)
                lazy[name] = status
                eager[name] = status
            assert len(lazy) == len(eager), f"seed {seed}"
            assert lazy.codes() == {status.code for status in eager.values()}
            assert {id(s) for s in lazy.distinct_statuses()} == {id(s) for s in eager.values()}
        assert reading(lazy) == reading(eager), f"seed {seed}"
        assert lazy == eager
        for name in [*eager, "node-never"]:
            assert (name in lazy) == (name in eager)
            assert lazy.get(name) is eager.get(name)
        pod_info = PodInfo.of(pod("p"))
        lazy_fit, eager_fit = FitError(pod_info, 300, lazy), FitError(pod_info, 300, eager)
        assert lazy_fit.message() == eager_fit.message()
        assert lazy_fit.unschedulable_plugins() == eager_fit.unschedulable_plugins()


def test_a_dict_handed_in_is_kept_and_never_changed() -> None:
    handed = {"a": Status.unschedulable("Insufficient cpu")}
    statuses = NodeToStatus(handed)
    assert statuses["a"] is handed["a"]
    statuses["b"] = Status.unschedulable("Insufficient memory")
    statuses.drop({"a"})
    assert list(handed) == ["a"], "the plugin's dict is not written to"
    assert reading(statuses) == [("b", Code.UNSCHEDULABLE, ["Insufficient memory"])]


def test_preemption_tries_the_same_nodes_with_lazy_statuses() -> None:
    """Unschedulable nodes (too small while victims run) are tried, unresolvable ones
    (too small even when empty) are not, whether the statuses are a dict or runs."""
    nodes = [node(f"n{i}", "2") for i in range(6)] + [node(f"tiny{i}", "1") for i in range(3)]
    pods = [pod(f"v{i}", LOW, "2", on=f"n{i}") for i in range(6)]
    s = setup(nodes, pods, args={"minCandidateNodesAbsolute": 3})
    state, info, eager = filter_all(s, pod("p", HIGH, "2"))
    assert len(eager) == 9
    lazy = NodeToStatus()
    by_status: dict[int, list[str]] = {}
    for name, status in eager.items():
        by_status.setdefault(id(status), []).append(name)
    for name in ["tiny1", "n4"]:  # a dict part among the runs
        lazy.update({name: eager[name]})
    for run in by_status.values():
        for name in run:
            if name not in ("tiny1", "n4"):
                lazy.add_run([name], eager[name])
    assert set(lazy) == set(eager) and len(lazy) == len(eager)
    tiny = eager["tiny0"]
    lazy.add_run(["tiny-extra"], Status(tiny.code, tiny.reasons, tiny.plugin))
    eager = {**eager, "tiny-extra": lazy["tiny-extra"]}
    all_nodes = s.framework.snapshot().node_info_list
    answers = []
    for statuses in (eager, lazy):
        s.plugin.random.seed(7)
        candidates, node_statuses, errors = s.plugin.find_candidates(state, info, all_nodes,
                                                                     statuses)
        answers.append(([(c.name, [v["metadata"]["name"] for v in c.victims])
                         for c in candidates], reading(node_statuses), errors))
    assert answers[0] == answers[1]
    assert answers[0][0] and all(name.startswith("n") for name, _ in answers[0][0])
    assert FitError(info, 10, lazy).message() == FitError(info, 10, eager).message()


def zoned_node(index: int, cpu: str, taint: bool = False) -> Obj:
    """node-<index> in zone-<index % 6>, with `cpu` to offer, maybe tainted for gpus."""
    name = f"node-{index:03d}"
    spec: Obj = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
                 } if taint else {}
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  ZONE: f"zone-{index % 6}"}},
            "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def spread_pod(name: str, cpu: str, node_name: str = "") -> Obj:
    """A pod of app=web asking `cpu`, spread over the zones with maxSkew 1."""
    spec: Obj = {"containers": [{"name": "c", "image": "i",
                                 "resources": {"requests": {"cpu": cpu}}}],
                 "topologySpreadConstraints": [{
                     "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                     "labelSelector": {"matchLabels": {"app": "web"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "labels": {"app": "web"}}, "spec": spec}


async def test_a_cycle_turns_nodes_down_with_the_statuses_filter_gives_node_by_node() -> None:
    """120 nodes in six zones, zones 0 and 1 one pod short of the others; some nodes too
    small, some tainted. PodTopologySpread turns the other zones' nodes down as one run;
    every node's status is the one the Filter plugins give it one by one, and when no
    node fits, the FitError reads as one built from those."""
    for fits in (True, False):
        scheduler = scheduler_with({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 100})
        for i in range(120):
            small = i % 6 in (0, 1) and (i % 4 == 0 or not fits)
            scheduler.cache.add_node(zoned_node(i, "1" if small else "4", taint=i % 10 == 3))
        for i in range(120):
            if i % 6 not in (0, 1) and i % 20 < 6:
                scheduler.cache.add_pod(spread_pod(f"e-{i}", "100m", f"node-{i:03d}"))
        fwk = scheduler.profiles["default-scheduler"]
        fwk.set_snapshot(scheduler.cache.update_snapshot())
        pod_info = PodInfo.of(spread_pod("incoming", "2"))
        state = CycleState()
        assert fwk.run_pre_filter_plugins(state, pod_info, fwk.snapshot().node_info_list)[
            1].is_success()
        one_by_one = {info.name: fwk.run_filter_plugins(state, pod_info, info)
                      for info in fwk.snapshot().node_info_list}
        eager = {name: status for name, status in one_by_one.items() if status.code}
        plugins = {status.plugin for status in eager.values()}
        assert plugins == {"PodTopologySpread", "NodeResourcesFit", "TaintToleration"}
        spread = next(p for p in fwk.plugins.filter if isinstance(p, PodTopologySpread))
        _, rejected = spread.filter_nodes_split(state, pod_info, fwk.snapshot().node_info_list)
        assert isinstance(rejected, NodeToStatus), "the zones' nodes come as one run"

        feasible, statuses = scheduler.find_nodes_that_fit(fwk, CycleState(), pod_info)
        assert [info.name for info in feasible] == [
            name for name, status in one_by_one.items() if not status.code]
        assert len(statuses) == len(eager)
        assert {name: (s.code, s.reasons, s.plugin) for name, s in statuses.items()} == {
            name: (s.code, s.reasons, s.plugin) for name, s in eager.items()}
        if fits:
            assert feasible
            continue
        with pytest.raises(FitError) as raised:
            await scheduler.schedule_pod(fwk, CycleState(), pod_info)
        fit = raised.value
        assert fit.message() == FitError(pod_info, 120, eager).message()
        assert fit.message().startswith("0/120 nodes are available: ")
        assert fit.unschedulable_plugins() == plugins
