"""The cluster autoscaler's simulation (minikube_py/autoscaler/simulator.py): the
scheduler's filters on template nodes, binpacking, utilization and drainability."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.autoscaler.__main__ import node_group_flag
from minikube_py.autoscaler.simulator import (
    Filters,
    blocking_reason,
    estimate,
    filter_out_schedulable,
    find_places,
    utilization,
)
from minikube_py.scheduler.framework.types import NodeInfo


def node(name: str, cpu: str = "2", memory: str = "4Gi", **spec: Any) -> Obj:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": spec, "status": {"allocatable": {"cpu": cpu, "memory": memory,
                                                     "pods": "110"}}}


def pod(name: str, cpu: str = "500m", owned: bool = True, **extra: Any) -> Obj:
    metadata: Obj = {"name": name, "namespace": "ns", **extra.pop("metadata", {})}
    if owned:
        metadata["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "uid": "u",
                                        "controller": True}]
    return {"metadata": metadata, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": cpu}}}], **extra}}


def test_binpacking_fills_each_template_node_before_adding_one() -> None:
    """Five 700m pods on two-core templates: two per node, three nodes."""
    found = estimate(Filters(), [pod(f"p{i}", "700m") for i in range(5)], node("template"))
    assert [[p["metadata"]["name"] for p in pods] for pods in found.nodes] == [
        ["p0", "p1"], ["p2", "p3"], ["p4"]]
    assert found.no_fit == {}


def test_a_pod_no_template_node_can_hold_gets_the_filters_reasons() -> None:
    found = estimate(Filters(), [pod("huge", "3"), pod("picky", nodeSelector={"disk": "ssd"})],
                     node("template"))
    assert found.nodes == []
    assert found.no_fit == {"ns/huge": ["Insufficient cpu"],
                            "ns/picky": ["node(s) didn't match Pod's node affinity/selector"]}


def test_pending_pods_that_fit_existing_nodes_need_no_new_node() -> None:
    """One node with 1.5 cores free: the first 1-core pod fits it, the second does not
    (the first took the room)."""
    existing = [NodeInfo.of(node("n1"), [pod("running", "500m")])]
    left = filter_out_schedulable(Filters(), [pod("a", "1"), pod("b", "1")], existing)
    assert [p["metadata"]["name"] for p in left] == ["b"]


def test_utilization_is_the_larger_share_of_cpu_and_memory() -> None:
    busy = NodeInfo.of(node("n1"), [pod("a", "500m")])
    assert utilization(busy) == 0.25


def test_drainability_follows_upstreams_rules() -> None:
    assert blocking_reason(pod("bare", owned=False)) == "NotReplicated"
    assert blocking_reason(pod("kept", metadata={"annotations": {
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}})) == (
        "NotSafeToEvictAnnotation")
    assert blocking_reason(pod("bare-but-safe", owned=False, metadata={"annotations": {
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}})) == ""
    assert blocking_reason(pod("scratch", volumes=[{"name": "s", "emptyDir": {}}])) == (
        "LocalStorageRequested")
    assert blocking_reason(pod("movable")) == ""


def test_a_bound_pod_is_placed_elsewhere_as_if_recreated() -> None:
    """Bound pods (their nodeName cleared for the simulation) each take their room: three
    one-core pods fit two two-core nodes, and a 1.5-core pod then fits neither."""
    bound = [{**pod(f"p{i}", "1"), "spec": {**pod(f"p{i}", "1")["spec"], "nodeName": "gone"}}
             for i in range(3)]
    assert find_places(Filters(), bound, [NodeInfo.of(node("n1")), NodeInfo.of(node("n2"))])
    assert not find_places(Filters(), [*bound, pod("p3", "1500m")],
                           [NodeInfo.of(node("n1")), NodeInfo.of(node("n2"))])


def test_the_node_group_flag_is_min_max_name() -> None:
    assert node_group_flag("1:10:pool") == (1, 10, "pool")
    for bad in ("1:10", "3:2:pool", "a:2:pool", "1:2:"):
        with pytest.raises(argparse.ArgumentTypeError):
            node_group_flag(bad)
