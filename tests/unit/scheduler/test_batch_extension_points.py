"""filter_nodes and score_nodes, which the runtime calls, answer exactly as filter and
score do node by node: for every plugin of the default profile, on a cluster with the
awkward cases (taints of every effect, cordoned nodes, nodes without zone labels or
without memory, extended resources, images, full nodes) and pods that touch them."""

from __future__ import annotations

import random

import pytest

from minikube_py.api import Obj
from minikube_py.client.kubeconfig import ClientConfig
from minikube_py.client.rest import Client
from minikube_py.scheduler.config import default_configuration
from minikube_py.scheduler.framework.interface import CycleState, FilterPlugin, ScorePlugin
from minikube_py.scheduler.framework.runtime import Framework
from minikube_py.scheduler.framework.types import PodInfo, Snapshot
from minikube_py.scheduler.plugins.registry import IN_TREE_PLUGINS
from minikube_py.scheduler.scheduler import Scheduler, num_feasible_nodes_to_find

TAINTS = [
    [],
    [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
    [{"key": "spot", "effect": "PreferNoSchedule"}],
    [{"key": "spot", "effect": "PreferNoSchedule"}, {"key": "old", "effect": "PreferNoSchedule"}],
    [{"key": "broken", "effect": "NoExecute"}],
]


def make_node(rng: random.Random, index: int) -> Obj:
    name = f"node-{index}"
    labels = {"kubernetes.io/hostname": name}
    if index % 7:
        labels["topology.kubernetes.io/zone"] = f"zone-{index % 3}"
    allocatable = {"cpu": rng.choice(["0", "1", "2", "4"]), "pods": rng.choice(["2", "110"])}
    if index % 5:
        allocatable["memory"] = rng.choice(["1Gi", "4Gi"])
    if index % 4 == 0:
        allocatable["example.com/gpu"] = "2"
    images = [{"names": ["localhost/echo:1.0"], "sizeBytes": 300 * 1024 * 1024}] if (
        index % 3 == 0) else []
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"taints": rng.choice(TAINTS), "unschedulable": index % 6 == 0},
            "status": {"allocatable": allocatable, "images": images}}


def make_pod(rng: random.Random, name: str, node_name: str = "") -> Obj:
    requests: Obj = {}
    if rng.random() < 0.8:
        requests["cpu"] = rng.choice(["100m", "500m", "1500m"])
    if rng.random() < 0.7:
        requests["memory"] = rng.choice(["128Mi", "2Gi"])
    if rng.random() < 0.15:
        requests["example.com/gpu"] = "1"
    spec: Obj = {"containers": [{"name": "c", "image": rng.choice(
        ["localhost/echo:1.0", "localhost/busybox:1.36"]), "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    if rng.random() < 0.3:
        spec["tolerations"] = [rng.choice([
            {"operator": "Exists"}, {"key": "dedicated", "operator": "Equal", "value": "gpu"},
            {"key": "spot", "effect": "PreferNoSchedule", "operator": "Exists"},
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}])]
    labels = {"app": rng.choice(["web", "db"])}
    if rng.random() < 0.5:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": rng.choice([1, 2]), "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": {"matchLabels": {"app": labels["app"]}}}]
    if rng.random() < 0.5:
        spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "topologyKey": "topology.kubernetes.io/zone"}}]}}
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "labels": labels}, "spec": spec}


def framework_on(snapshot: Snapshot) -> Framework:
    """The default profile, never started: nothing talks to a server."""
    scheduler = Scheduler(Client(ClientConfig(server="http://127.0.0.1:1")),
                          default_configuration(), IN_TREE_PLUGINS)
    fwk = scheduler.profiles["default-scheduler"]
    fwk.set_snapshot(snapshot)
    return fwk


@pytest.mark.parametrize(("seed", "every_node_zoned"), [(seed, seed % 2 == 1)
                                                          for seed in range(8)])
async def test_batch_answers_equal_node_by_node_answers(seed: int, every_node_zoned: bool
                                                        ) -> None:
    """(With every node in a zone, PodTopologySpread turns nodes down by domain alone.)"""
    rng = random.Random(seed)
    nodes = [make_node(rng, i) for i in range(40)]
    if every_node_zoned:
        for index, node in enumerate(nodes):
            node["metadata"]["labels"]["topology.kubernetes.io/zone"] = f"zone-{index % 3}"
    placed = [make_pod(rng, f"e-{i}", node_name=f"node-{rng.randrange(40)}")
              for i in range(60)]
    snapshot = Snapshot.of(nodes, placed)
    fwk = framework_on(snapshot)
    infos = snapshot.node_info_list
    compared = 0
    for i in range(25):
        pod = PodInfo.of(make_pod(rng, f"new-{i}"))
        state = CycleState()
        _, status = fwk.run_pre_filter_plugins(state, pod, infos)
        if status.is_success():
            for plugin in fwk.plugins.filter:
                if plugin.name in state.skip_filter_plugins:
                    continue
                assert isinstance(plugin, FilterPlugin)
                one_by_one = {}
                for info in infos:
                    answer = plugin.filter(state, pod, info)
                    if answer.code:
                        one_by_one[info.name] = (answer.code, answer.reasons)
                batch = {name: (answer.code, answer.reasons)
                         for name, answer in plugin.filter_nodes(state, pod, infos).items()}
                assert batch == one_by_one, plugin.name
                compared += 1
        assert fwk.run_pre_score_plugins(state, pod, infos).is_success()
        for score_plugin in fwk.plugins.score:
            if score_plugin.name in state.skip_score_plugins:
                continue
            assert isinstance(score_plugin, ScorePlugin)
            one_by_one_scores = [score_plugin.score(state, pod, info)[0] for info in infos]
            scores, score_status = score_plugin.score_nodes(state, pod, infos)
            assert score_status.is_success()
            assert scores == one_by_one_scores, score_plugin.name
            compared += 1
    assert compared > 100  # the pods above do reach the plugins


async def test_filtering_stops_once_enough_nodes_fit_and_resumes_after_them() -> None:
    """numFeasibleNodesToFind with batches: 120 of 250 identical nodes (48%) are taken,
    and the next pod starts after the last node the previous one looked at."""
    nodes = [{"metadata": {"name": f"n-{i:03d}", "labels": {}}, "spec": {},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
             for i in range(250)]
    snapshot = Snapshot.of(nodes)
    scheduler = Scheduler(Client(ClientConfig(server="http://127.0.0.1:1")),
                          default_configuration(), IN_TREE_PLUGINS)
    fwk = scheduler.profiles["default-scheduler"]
    fwk.set_snapshot(snapshot)
    pod = PodInfo.of({"metadata": {"name": "a", "namespace": "default", "uid": "a"},
                      "spec": {"containers": [{"name": "c", "image": "x"}]}})
    assert num_feasible_nodes_to_find(0, 250) == 120
    feasible, _ = scheduler.find_nodes_that_fit(fwk, CycleState(), pod)
    assert [info.name for info in feasible] == [f"n-{i:03d}" for i in range(120)]
    feasible, _ = scheduler.find_nodes_that_fit(fwk, CycleState(), pod)
    assert [info.name for info in feasible] == [f"n-{i % 250:03d}" for i in range(120, 240)]
    feasible, _ = scheduler.find_nodes_that_fit(fwk, CycleState(), pod)
    assert [info.name for info in feasible] == [f"n-{i % 250:03d}" for i in range(240, 360)]
