"""What the scheduler records of a decision in the pod's trace ("schedule" span): a Filter
event per node naming the plugin that rejected it, and a Score event per feasible node
with the total and, for the three best nodes, each Score plugin's weighted part (what the
dashboard's decision panel shows as a column per plugin)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from aiohttp import web

from minikube_py.api import Obj
from minikube_py.process import free_port
from minikube_py.scheduler.framework.interface import CycleState
from minikube_py.scheduler.framework.types import PodInfo
from minikube_py.scheduler.scheduler import FitError, Scheduler
from minikube_py.tracing.tracer import Span, Tracer
from tests.unit.scheduler.test_equivalence_cache import scheduler_with


class Collect:
    def __init__(self) -> None:
        self.spans: list[Span] = []

    def export(self, span: Span) -> None:
        self.spans.append(span)


def node(name: str, cpu: str, *, taint: str = "", pods: int = 0) -> Obj:
    taints = [{"key": "dedicated", "value": "gpu", "effect": taint}] if taint else []
    allocatable = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"taints": taints}, "status": {"allocatable": allocatable}}


def pod(name: str, cpu: str, node_name: str = "") -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "localhost/echo:1.0", "resources": {
        "requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": spec}


# the default profile, and one that weights the node-local plugins whose scores are
# summed once per pod spec and remembered (framework/equivalence.py)
WEIGHTED = {"apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler", "plugins": {"score": {
                "enabled": [{"name": "NodeResourcesFit", "weight": 5},
                            {"name": "NodeResourcesBalancedAllocation", "weight": 7}]}}}]}


def cluster(config: Obj | None = None) -> Scheduler:
    """Six nodes: one the pod may not go to (a NoSchedule taint), two too small for it,
    one it would rather not go to (a PreferNoSchedule taint), two that differ in room."""
    scheduler = scheduler_with(config)
    for obj in (node("tainted", "8", taint="NoSchedule"), node("small-1", "1"),
                node("small-2", "1"), node("preferred-not", "8", taint="PreferNoSchedule"),
                node("busy", "8"), node("roomy", "16")):
        scheduler.cache.add_node(obj)
    scheduler.cache.add_pod(pod("running", "4", node_name="busy"))
    return scheduler


async def decide(scheduler: Scheduler, obj: Obj) -> tuple[Span, str | FitError]:
    """One scheduling algorithm run inside a recording span: the span, and the node
    chosen (or the FitError)."""
    collected = Collect()
    fwk = scheduler.profiles["default-scheduler"]
    fwk.set_snapshot(scheduler.cache.update_snapshot())
    outcome: str | FitError
    with Tracer("kube-scheduler", collected).span("schedule"):
        try:
            outcome = await scheduler.schedule_pod(fwk, CycleState(), PodInfo.of(obj))
        except FitError as fit:
            outcome = fit
    (span,) = collected.spans
    return span, outcome


def events(span: Span, name: str) -> dict[str, dict[str, Any]]:
    """The span's events of one name, by node (without the node)."""
    found = {}
    for _, event, attributes in span.events:
        if event == name:
            rest = dict(attributes)
            found[rest.pop("node")] = rest
    return found


@pytest.mark.parametrize("config", [None, WEIGHTED], ids=["default", "weighted"])
async def test_each_score_plugins_weighted_part_is_recorded_and_they_sum_to_the_total(
        config: Obj | None) -> None:
    scheduler = cluster(config)
    fwk = scheduler.profiles["default-scheduler"]
    weights = {plugin.name: fwk.score_weights.get(plugin.name, 1)
               for plugin in fwk.plugins.score}
    for replica in range(3):  # the replicas after the first reuse remembered scores
        obj = pod(f"web-{replica}", "2")
        span, host = await decide(scheduler, copy.deepcopy(obj))
        scores = events(span, "Score")
        assert set(scores) == {"preferred-not", "busy", "roomy"}
        for name, parts in scores.items():
            total = parts.pop("score")
            assert set(parts) <= {plugin.name for plugin in fwk.plugins.score}
            assert {"TaintToleration", "NodeResourcesFit",
                    "NodeResourcesBalancedAllocation"} <= set(parts)
            assert sum(parts.values()) == total, (replica, name, parts)
            for plugin, part in parts.items():  # a normalized score (0..100) x its weight
                assert part % weights[plugin] == 0 and part <= 100 * weights[plugin]
        # TaintToleration (weight 3): 0 for the node with a taint the pod does not
        # tolerate, 100 x 3 for the others
        assert {name: parts["TaintToleration"] for name, parts in scores.items()} == {
            "preferred-not": 0, "busy": 300, "roomy": 300}
        # the plugins in the profile's order, as the decision panel's columns
        order = [plugin.name for plugin in fwk.plugins.score]
        columns = list(scores["roomy"])
        assert columns == sorted(columns, key=order.index)
        assert isinstance(host, str)
        scheduler.cache.assume_pod(PodInfo.of(obj), host)


async def test_each_node_filtered_out_names_the_plugin_that_rejected_it() -> None:
    scheduler = cluster()
    span, host = await decide(scheduler, pod("web", "2"))
    assert isinstance(host, str)
    filters = events(span, "Filter")
    assert {name: (found["result"], found.get("plugin")) for name, found in filters.items()
            } == {"tainted": ("node(s) had untolerated taint(s)", "TaintToleration"),
                  "small-1": ("Insufficient cpu", "NodeResourcesFit"),
                  "small-2": ("Insufficient cpu", "NodeResourcesFit"),
                  "preferred-not": ("fits", None), "busy": ("fits", None),
                  "roomy": ("fits", None)}


async def test_a_pod_no_node_fits_records_each_rejecting_plugin_and_keeps_upstreams_message(
        ) -> None:
    scheduler = cluster()
    span, outcome = await decide(scheduler, pod("huge", "20"))
    assert isinstance(outcome, FitError)
    assert outcome.message() == ("0/6 nodes are available: 1 node(s) had untolerated "
                                 "taint(s), 5 Insufficient cpu.")
    assert {name: found.get("plugin") for name, found in events(span, "Filter").items()} == {
        "tainted": "TaintToleration", "small-1": "NodeResourcesFit",
        "small-2": "NodeResourcesFit", "preferred-not": "NodeResourcesFit",
        "busy": "NodeResourcesFit", "roomy": "NodeResourcesFit"}
    assert events(span, "Score") == {}


async def test_an_extenders_weighted_scores_are_recorded_as_a_column_of_their_own() -> None:
    async def prioritize(request: web.Request) -> web.Response:
        names = (await request.json())["nodenames"]
        return web.json_response([{"host": name, "score": 10 if name == "busy" else 0}
                                  for name in names])

    app = web.Application()
    app.router.add_post("/ext/prioritize", prioritize)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    prefix = f"http://127.0.0.1:{port}/ext"
    scheduler = cluster({"apiVersion": "kubescheduler.config.k8s.io/v1",
                         "kind": "KubeSchedulerConfiguration",
                         "extenders": [{"urlPrefix": prefix, "prioritizeVerb": "prioritize",
                                        "weight": 5, "nodeCacheCapable": True}]})
    try:
        span, host = await decide(scheduler, pod("web", "2"))
    finally:
        for extender in scheduler.extenders:
            await extender.close()
        await runner.cleanup()
    scores = events(span, "Score")
    # the extender's 0..10, rescaled to the plugins' 0..100 and weighted (x 5)
    assert {name: parts[f"extender {prefix}"] for name, parts in scores.items()} == {
        "preferred-not": 0, "busy": 500, "roomy": 0}
    for parts in scores.values():
        assert sum(value for key, value in parts.items() if key != "score") == parts["score"]
    assert host == "busy"


async def test_only_the_three_best_nodes_keep_each_plugins_part_every_node_its_total() -> None:
    scheduler = scheduler_with()
    for index, cpu in enumerate(("8", "10", "12", "14", "16", "18")):
        scheduler.cache.add_node(node(f"n-{index}", cpu))
    span, host = await decide(scheduler, pod("web", "4"))
    scores = events(span, "Score")
    assert set(scores) == {f"n-{index}" for index in range(6)}
    best = sorted(scores, key=lambda name: scores[name]["score"], reverse=True)[:3]
    # the roomiest nodes score best (NodeResourcesFit's LeastAllocated), no two alike
    assert best == ["n-5", "n-4", "n-3"] and host == "n-5"
    assert len({found["score"] for found in scores.values()}) == 6
    for name, found in scores.items():
        parts = {key: value for key, value in found.items() if key != "score"}
        if name in best:
            assert "NodeResourcesFit" in parts and sum(parts.values()) == found["score"]
        else:
            assert parts == {}, name
