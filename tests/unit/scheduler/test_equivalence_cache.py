"""The equivalence cache (framework/equivalence.py) never changes a scheduling answer.

Two schedulers see the same cluster: one remembers node-local Filter and Score answers per
pod spec, the other remembers nothing. Pods of a few specs (so answers are reused) are
scheduled one after another, each assumed on its node, while nodes are tainted,
cordoned, relabelled and resized, made and deleted, and pods come and go between cycles.
Every cycle both must find the same feasible nodes, turn the others down with the same
statuses, and give every node the same total score.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.kubeconfig import ClientConfig
from minikube_py.client.rest import Client
from minikube_py.scheduler.config import parse_configuration
from minikube_py.scheduler.framework.equivalence import EquivalenceCache
from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    CycleState,
    FilterPlugin,
    Status,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.registry import IN_TREE_PLUGINS
from minikube_py.scheduler.scheduler import FitError, Scheduler
from tests.unit.scheduler.test_batch_extension_points import TAINTS, make_node, make_pod


def scheduler_with(config: Obj | None = None, plugins: dict[str, Any] | None = None
                   ) -> Scheduler:
    """A scheduler that is never started: nothing talks to a server."""
    document = config or {"apiVersion": "kubescheduler.config.k8s.io/v1",
                          "kind": "KubeSchedulerConfiguration"}
    registry = {**IN_TREE_PLUGINS, **(plugins or {})}
    return Scheduler(Client(ClientConfig(server="http://127.0.0.1:1")),
                     parse_configuration(document, set(registry)), registry)


def cycle(scheduler: Scheduler, pod: PodInfo) -> tuple[list[str], dict[str, tuple], dict]:
    """One scheduling cycle's answers: feasible node names, rejections, total scores."""
    fwk = scheduler.profiles["default-scheduler"]
    fwk.set_snapshot(scheduler.cache.update_snapshot())
    state = CycleState()
    try:
        feasible, statuses = scheduler.find_nodes_that_fit(fwk, state, pod)
    except FitError as fit:
        return [], {name: (s.code, s.reasons, s.plugin) for name, s in fit.statuses.items()}, {}
    rejected = {name: (s.code, s.reasons, s.plugin) for name, s in statuses.items()}
    scores: dict[str, int] = {}
    if len(feasible) > 1:
        assert fwk.run_pre_score_plugins(state, pod, feasible).is_success()
        scores, status = fwk.run_score_plugins(state, pod, feasible)
        assert status.is_success(), status
    return [info.name for info in feasible], rejected, scores


def change_a_node(rng: random.Random, schedulers: list[Scheduler], nodes: list[Obj]) -> None:
    """Taint, cordon, relabel or resize one node, in every scheduler's cache."""
    node = copy.deepcopy(rng.choice(nodes))
    what = rng.choice(["taints", "cordon", "label", "resize"])
    if what == "taints":
        node["spec"]["taints"] = rng.choice(TAINTS)
    elif what == "cordon":
        node["spec"]["unschedulable"] = not node["spec"].get("unschedulable")
    elif what == "label":
        node["metadata"]["labels"]["disk"] = rng.choice(["ssd", "hdd"])
    else:
        node["status"]["allocatable"]["cpu"] = rng.choice(["1", "2", "8"])
    nodes[[n["metadata"]["name"] for n in nodes].index(node["metadata"]["name"])] = node
    for scheduler in schedulers:
        scheduler.cache.update_node(copy.deepcopy(node))


def add_or_remove_a_node(rng: random.Random, schedulers: list[Scheduler], nodes: list[Obj],
                         serial: int) -> None:
    """A node made (at the end of the cache's order) or one deleted, in every cache."""
    if rng.random() < 0.5 and len(nodes) > 10:
        node = nodes.pop(rng.randrange(len(nodes)))
        for scheduler in schedulers:
            scheduler.cache.remove_node(copy.deepcopy(node))
        return
    node = make_node(rng, 1000 + serial)
    nodes.append(node)
    for scheduler in schedulers:
        scheduler.cache.add_node(copy.deepcopy(node))


@pytest.mark.parametrize("seed", range(8))
def test_remembered_answers_equal_fresh_answers(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [make_node(rng, i) for i in range(60)]
    remembering, forgetting = scheduler_with(), scheduler_with()
    forgetting.profiles["default-scheduler"].equivalence = EquivalenceCache(size=0)
    both = [remembering, forgetting]
    for scheduler in both:
        for node in nodes:
            scheduler.cache.add_node(copy.deepcopy(node))
    placed = [make_pod(rng, f"e-{i}", node_name=f"node-{rng.randrange(60)}") for i in range(50)]
    for pod in placed:
        for scheduler in both:
            scheduler.cache.add_pod(copy.deepcopy(pod))
    # A few specs, so that consecutive pods are often replicas of one another.
    templates = [make_pod(rng, f"template-{i}") for i in range(4)]
    templates.append({"metadata": {"name": "plain"},
                      "spec": {"containers": [{"name": "c", "image": "localhost/echo:1.0"}],
                               "nodeSelector": {"disk": "ssd"}}})
    reused = 0
    for i in range(150):
        template = rng.choice(templates)
        pod = copy.deepcopy(template)
        pod["metadata"].update(name=f"new-{i}", namespace="default", uid=f"uid-new-{i}")
        answers = [cycle(scheduler, PodInfo.of(copy.deepcopy(pod))) for scheduler in both]
        assert answers[0] == answers[1], f"cycle {i}"
        feasible, _, scores = answers[0]
        if feasible:
            host = max(feasible, key=lambda name: (scores.get(name, 0), name))
            for scheduler in both:
                scheduler.cache.assume_pod(PodInfo.of(copy.deepcopy(pod)), host)
        if rng.random() < 0.3:
            change_a_node(rng, both, nodes)
        if rng.random() < 0.1:  # a node made, or one deleted (upstream's churn)
            add_or_remove_a_node(rng, both, nodes, i)
        if rng.random() < 0.2 and placed:  # a pod leaves
            gone = placed.pop(rng.randrange(len(placed)))
            for scheduler in both:
                scheduler.cache.remove_pod(gone)
        reused += template is not templates[-1] and i > 0
    assert reused > 50


class CountingFilter(FilterPlugin):
    """Not node-local (the default): its answer may depend on anything, so ask every time."""

    name = "CountingFilter"
    calls = 0

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        type(self).calls += 1
        return SUCCESS


def test_a_plugin_that_is_not_node_local_is_asked_every_cycle() -> None:
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1",
              "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler",
                            "plugins": {"filter": {"enabled": [{"name": "CountingFilter"}]}}}]}
    scheduler = scheduler_with(config, {"CountingFilter": CountingFilter})
    for i in range(5):
        scheduler.cache.add_node({"metadata": {"name": f"n-{i}", "labels": {}}, "spec": {},
                                  "status": {"allocatable": {"cpu": "4", "pods": "110"}}})
    spec = {"containers": [{"name": "c", "image": "x"}]}
    for i in range(3):
        pod = PodInfo.of({"metadata": {"name": f"p-{i}", "namespace": "default",
                                       "uid": f"p-{i}"}, "spec": copy.deepcopy(spec)})
        cycle(scheduler, pod)
    assert CountingFilter.calls == 15  # 5 nodes x 3 cycles, nothing reused


def test_a_node_tainted_between_two_replicas_turns_the_second_away() -> None:
    scheduler = scheduler_with()
    node = {"metadata": {"name": "n-0", "labels": {}}, "spec": {},
            "status": {"allocatable": {"cpu": "4", "pods": "110"}}}
    other = copy.deepcopy(node)
    other["metadata"]["name"] = "n-1"
    scheduler.cache.add_node(node)
    scheduler.cache.add_node(other)
    spec = {"containers": [{"name": "c", "image": "x"}]}

    def replica(i: int) -> PodInfo:
        return PodInfo.of({"metadata": {"name": f"p-{i}", "namespace": "default",
                                        "uid": f"p-{i}"}, "spec": copy.deepcopy(spec)})

    assert cycle(scheduler, replica(0))[0] == ["n-0", "n-1"]
    tainted = copy.deepcopy(node)
    tainted["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    scheduler.cache.update_node(tainted)
    feasible, rejected, _ = cycle(scheduler, replica(1))
    assert feasible == ["n-1"]
    assert rejected["n-0"][1] == ["node(s) had untolerated taint(s)"]


def test_a_node_untainted_between_two_replicas_takes_the_third_again() -> None:
    """A remembered rejection is forgotten once the node's NodeInfo changes and the node
    fits: no node is left turned down, so every node comes back as fitting."""
    scheduler = scheduler_with()
    node = {"metadata": {"name": "n-0", "labels": {}}, "spec": {},
            "status": {"allocatable": {"cpu": "4", "pods": "110"}}}
    other = copy.deepcopy(node)
    other["metadata"]["name"] = "n-1"
    tainted = copy.deepcopy(node)
    tainted["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    scheduler.cache.add_node(tainted)
    scheduler.cache.add_node(other)
    spec = {"containers": [{"name": "c", "image": "x"}]}

    def replica(i: int) -> PodInfo:
        return PodInfo.of({"metadata": {"name": f"p-{i}", "namespace": "default",
                                        "uid": f"p-{i}"}, "spec": copy.deepcopy(spec)})

    feasible, rejected, _ = cycle(scheduler, replica(0))
    assert (feasible, list(rejected)) == (["n-1"], ["n-0"])
    assert cycle(scheduler, replica(1))[:2] == (["n-1"], rejected)  # remembered
    scheduler.cache.update_node(node)
    assert cycle(scheduler, replica(2))[:2] == (["n-0", "n-1"], {})


class NodeLocalRecordingFilter(FilterPlugin):
    """Node-local: records every node it is asked about, and lets each through."""

    name = "NodeLocalRecordingFilter"
    node_local = True
    asked: list[str] = []

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        type(self).asked.append(node_info.name)
        return SUCCESS


def test_once_a_spec_has_every_nodes_verdict_only_the_nodes_changed_since_are_asked() -> None:
    """300 nodes: a cycle filters only some (percentageOfNodesToScore), starting where
    the last stopped. Once the verdicts cover every node, a cycle asks about none until a
    node changes, and then about that node alone (the snapshot's change log says which)."""
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1",
              "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler", "plugins": {"filter": {
                  "disabled": [{"name": "*"}],
                  "enabled": [{"name": "NodeLocalRecordingFilter"}]}}}]}
    scheduler = scheduler_with(config, {"NodeLocalRecordingFilter": NodeLocalRecordingFilter})
    nodes = [{"metadata": {"name": f"n-{i:03d}", "labels": {}}, "spec": {},
              "status": {"allocatable": {"cpu": "4", "pods": "110"}}} for i in range(300)]
    for node in nodes:
        scheduler.cache.add_node(node)
    spec = {"containers": [{"name": "c", "image": "x"}]}

    def replica(i: int) -> PodInfo:
        return PodInfo.of({"metadata": {"name": f"p-{i}", "namespace": "default",
                                        "uid": f"p-{i}"}, "spec": copy.deepcopy(spec)})

    recorded = NodeLocalRecordingFilter.asked
    recorded.clear()
    first = cycle(scheduler, replica(0))[0]
    assert len(first) < 300 and sorted(recorded) == first
    for i in range(1, 4):  # round the ring of nodes
        cycle(scheduler, replica(i))
    assert sorted(set(recorded)) == [node["metadata"]["name"] for node in nodes]
    recorded.clear()
    assert len(cycle(scheduler, replica(4))[0]) == len(first)
    assert recorded == []
    relabelled = copy.deepcopy(nodes[7])
    relabelled["metadata"]["labels"]["disk"] = "ssd"
    scheduler.cache.update_node(relabelled)
    cycle(scheduler, replica(5))
    assert recorded == ["n-007"]
    recorded.clear()
    recorded.clear()
    added = copy.deepcopy(nodes[0])
    added["metadata"]["name"] = "n-300"  # the list of nodes changes: the log names n-300
    scheduler.cache.add_node(added)
    cycle(scheduler, replica(6))
    assert recorded == ["n-300"]
    recorded.clear()
    scheduler.cache.remove_node(added)  # and then names the node removed: nothing to ask
    scheduler.cache.add_node(copy.deepcopy(added) | {"metadata": {"name": "n-301"}})
    cycle(scheduler, replica(7))
    assert recorded == ["n-301"]
    recorded.clear()
    assert len(cycle(scheduler, replica(8))[0]) == len(first)
    assert recorded == []


def _info(name: str, cpu: str = "4") -> NodeInfo:
    return NodeInfo.of({"metadata": {"name": name, "labels": {}}, "spec": {},
                        "status": {"allocatable": {"cpu": cpu, "pods": "110"}}})


def test_score_rows_are_the_fresh_rows_and_asked_only_for_new_node_infos() -> None:
    """Rows are remembered per node name with the NodeInfo they were made for: a node's
    new NodeInfo is asked about, and the rows handed back are always those a fresh
    computation gives."""
    cache = EquivalenceCache()
    asked: list[list[str]] = []

    def run(nodes: list[NodeInfo]) -> list[list[int]]:
        asked.append([info.name for info in nodes])
        return [[int(info.allocatable.milli_cpu) // 1000 for info in nodes],
                [len(info.name) for info in nodes]]

    def fresh(nodes: list[NodeInfo]) -> list[tuple[int, ...]]:
        return list(zip(*run(nodes), strict=True))

    def names(nodes: list[NodeInfo]) -> list[str]:
        return [info.name for info in nodes]

    infos = [_info(f"n-{i}") for i in range(6)]
    assert cache.scores("spec", infos, names(infos), run) == fresh(infos)
    asked.clear()
    rows = cache.scores("spec", infos[2:], names(infos[2:]), run)
    assert asked == []  # every row remembered
    assert rows == fresh(infos[2:])
    asked.clear()
    infos[3] = _info("n-3", cpu="8")  # the node's new NodeInfo (the cache copies one)
    rows = cache.scores("spec", infos, names(infos), run)
    assert asked == [["n-3"]]
    assert rows == fresh(infos) and rows[3] == (8, 3)


def test_score_rows_are_not_remembered_when_a_plugin_fails() -> None:
    cache = EquivalenceCache()
    infos = [_info(f"n-{i}") for i in range(3)]
    names = [info.name for info in infos]
    assert cache.scores("spec", infos, names, lambda nodes: None) is None
    assert cache.scores("spec", infos, names, lambda nodes: [[1] * len(nodes)]) == [(1,)] * 3
