"""The cluster autoscaler (minikube_py/autoscaler) against a real API server and the real
scheduler, with its node group of hollow nodes: pods that fit no node make it add nodes
(TriggeredScaleUp), pods no new node could hold or beyond the group's max get
NotTriggerScaleUp with the reason, idle nodes go after the unneeded time (their pods
evicted through the Eviction API, which a PodDisruptionBudget can refuse), and the
cluster-autoscaler-status ConfigMap says what it saw. Periods are shortened by options;
a pod turning Unschedulable wakes the loop before its period ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import yaml

from minikube_py.api import Obj
from minikube_py.autoscaler.nodegroup import NODE_GROUP_LABEL, HollowNodeGroup
from minikube_py.autoscaler.static_autoscaler import AutoscalingOptions, ClusterAutoscaler
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers.disruption import DisruptionController
from minikube_py.controllers.manager import ControllerManager
from minikube_py.kubelet.node_status import read_host_info
from minikube_py.scheduler.config import default_configuration
from minikube_py.scheduler.plugins.registry import IN_TREE_PLUGINS
from minikube_py.scheduler.scheduler import Scheduler
from tests.api_helpers import eventually
from tests.conftest import module_own_apiserver

# Nodes are cluster-wide, and another module's pending pods would make this autoscaler
# add nodes: an etcd and API server of this module's own.
etcd, apiserver, kubeconfig = module_own_apiserver("autoscaler")

GROUP = "pool"
RunControllers = Callable[..., Awaitable[ControllerManager]]


@dataclasses.dataclass
class Autoscaled:
    client: Client
    autoscaler: ClusterAutoscaler
    namespace: str

    async def group_nodes(self) -> list[Obj]:
        listed = await self.client.resource("nodes").list(
            label_selector=f"{NODE_GROUP_LABEL}={GROUP}")
        return listed["items"]

    async def pod(self, name: str, cpu: str = "1500m", **metadata: Any) -> Obj:
        """A pod asking for `cpu` (one per two-core node at the default 1500m), owned by a
        (made-up) ReplicaSet unless metadata says otherwise."""
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                 "uid": str(uuid.uuid4()), "controller": True}
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "labels": {"app": "web"},
                             "ownerReferences": [owner], **metadata},
                "spec": {"containers": [{"name": "app", "image": "busybox:1.36",
                                         "resources": {"requests": {"cpu": cpu}}}]}}
        return await self.client.resource("pods").create(body, self.namespace)

    async def running(self, names: list[str]) -> bool:
        pods = (await self.client.resource("pods").list(self.namespace))["items"]
        phases = {p["metadata"]["name"]: (p.get("status") or {}).get("phase") for p in pods}
        return all(phases.get(name) == "Running" for name in names)

    async def event(self, name: str, reason: str) -> Obj | None:
        listed = await self.client.resource("events").list(self.namespace)
        return next((e for e in listed["items"] if e["involvedObject"]["name"] == name
                     and e["reason"] == reason), None)

    async def status(self) -> Obj:
        config_map = await self.client.resource("configmaps").get(
            "cluster-autoscaler-status", "kube-system")
        document = yaml.safe_load(config_map["data"]["status"])
        assert isinstance(document, dict)
        return document


@pytest.fixture
def options() -> AutoscalingOptions:
    """Scanning every 0.5 s, removing a node unneeded for 2 s."""
    return AutoscalingOptions(scan_interval=0.5, scale_down_unneeded_time=2.0,
                              scale_down_delay_after_add=0.0)


@pytest.fixture
async def autoscaled(api_client: Client, namespace: str, options: AutoscalingOptions
                     ) -> AsyncIterator[Autoscaled]:
    """A scheduler and an autoscaler of group `pool` (1 to 3 two-core hollow nodes)."""
    scheduler = Scheduler(api_client, default_configuration(), IN_TREE_PLUGINS)
    host = dataclasses.replace(read_host_info(None), cpus=2, memory_bytes=8 * 1024 ** 3)
    group = HollowNodeGroup(api_client, GROUP, 1, 3, host)
    autoscaler = ClusterAutoscaler(api_client, group, options)
    try:
        async with asyncio.timeout(30):
            await scheduler.start()
            await autoscaler.start()
        yield Autoscaled(api_client, autoscaler, namespace)
    finally:
        await autoscaler.stop()
        await scheduler.stop()
        pods = api_client.resource("pods")
        for pod in (await pods.list(namespace))["items"]:
            with contextlib.suppress(NotFound):
                await pods.delete(pod["metadata"]["name"], namespace, grace_period_seconds=0)
        for node in (await api_client.resource("nodes").list())["items"]:
            with contextlib.suppress(NotFound):
                await api_client.resource("nodes").delete(node["metadata"]["name"])


async def test_pending_pods_grow_the_group_up_to_its_max(autoscaled: Autoscaled) -> None:
    """Min size 1 comes up first; three 1.5-core pods need three two-core nodes: the
    group grows to its max 3 and they run. A fourth gets NotTriggerScaleUp (max reached),
    a six-core pod too (no new node could hold it), and the status says so."""
    a = autoscaled
    await eventually(lambda: _count(a, 1), timeout=30, what="the min size's one node")
    names = ["web-0", "web-1", "web-2"]
    for name in names:
        await a.pod(name)
    await eventually(lambda: a.running(names), timeout=60, what="three pods Running")
    assert len(await a.group_nodes()) == 3
    triggered = await eventually(lambda: a.event("web-1", "TriggeredScaleUp"), timeout=30,
                                 what="a TriggeredScaleUp event")
    assert triggered["message"].startswith("pod triggered scale-up: [{pool ")
    assert triggered["message"].endswith("(max: 3)}]")
    await a.pod("web-3")
    await a.pod("huge", cpu="6")
    over = await eventually(lambda: a.event("web-3", "NotTriggerScaleUp"), timeout=30,
                            what="NotTriggerScaleUp for the pod over max")
    assert over["message"] == "pod didn't trigger scale-up: 1 max node group size reached"
    huge = await eventually(lambda: a.event("huge", "NotTriggerScaleUp"), timeout=30,
                            what="NotTriggerScaleUp for the pod no node holds")
    assert huge["message"] == "pod didn't trigger scale-up: 1 Insufficient cpu"
    status = await a.status()
    group = status["nodeGroups"][0]
    assert (group["name"], group["health"]["cloudProviderTarget"],
            group["health"]["minSize"], group["health"]["maxSize"]) == (GROUP, 3, 1, 3)
    assert group["health"]["nodeCounts"]["registered"]["ready"] == 3
    assert status["autoscalerStatus"] == "Running"
    assert len(await a.group_nodes()) == 3


@pytest.mark.parametrize("options", [AutoscalingOptions(scan_interval=600.0)])
async def test_a_pod_turning_unschedulable_wakes_the_loop_before_the_scan_interval(
        autoscaled: Autoscaled) -> None:
    """The loop trigger (upstream's loop/trigger.go): with a scan every 10 minutes, a pod
    the scheduler has just marked Unschedulable starts an iteration, which adds its node,
    at once."""
    a = autoscaled
    await eventually(lambda: _count(a, 1), timeout=30, what="the min size's one node")
    await a.pod("web-0")
    await eventually(lambda: a.running(["web-0"]), timeout=30, what="web-0 on the first node")
    await a.pod("web-1")  # 1.5 cores more: no room on the first node's two
    await eventually(lambda: a.running(["web-1"]), timeout=30,
                     what="web-1 on a node added without waiting for the scan")
    assert len(await a.group_nodes()) == 2


async def test_idle_nodes_go_after_the_unneeded_time_but_not_below_min(
        autoscaled: Autoscaled) -> None:
    """Three nodes with a pod each; two pods deleted: their nodes are empty and go; the
    last pod's node stays (min size 1)."""
    a = autoscaled
    names = ["web-0", "web-1", "web-2"]
    for name in names:
        await a.pod(name)
    await eventually(lambda: a.running(names), timeout=60, what="three pods Running")
    for name in names[1:]:
        await a.client.resource("pods").delete(name, a.namespace, grace_period_seconds=0)
    await eventually(lambda: _count(a, 1), timeout=60, what="the group back to one node")
    pod = await a.client.resource("pods").get("web-0", a.namespace)
    assert pod["spec"]["nodeName"] in {n["metadata"]["name"] for n in await a.group_nodes()}


async def test_scale_down_drains_a_node_through_evictions_a_pdb_can_refuse(
        autoscaled: Autoscaled, run_controllers: RunControllers) -> None:
    """Two nodes, each with a 400m pod once the 1.5-core pods are gone (20% each): one
    node's pod fits the other, so that node is drained. A PodDisruptionBudget allowing
    no disruption (as the disruption controller computes it) refuses the eviction
    (ScaleDownFailed, the node stays); without it the pod is evicted and the node removed."""
    a = autoscaled
    await run_controllers(DisruptionController)
    pods = a.client.resource("pods")
    await a.pod("big-0")
    await a.pod("big-1")
    await eventually(lambda: a.running(["big-0", "big-1"]), timeout=60,
                     what="two big pods Running")
    # the node added for big-1 was not taken away before big-1 was bound to it (the
    # pending pods that fit count as placed): no third node was ever made
    assert sorted(n["metadata"]["name"] for n in await a.group_nodes()) == ["pool-0", "pool-1"]
    await a.pod("small-0", cpu="400m", labels={"app": "small"})
    await a.pod("small-1", cpu="400m", labels={"app": "small"})
    await eventually(lambda: a.running(["small-0", "small-1"]), timeout=60,
                     what="the small pods Running")
    await a.client.resource("poddisruptionbudgets", "policy").create({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "small"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "small"}}}},
        a.namespace)
    for name in ("big-0", "big-1"):
        await pods.delete(name, a.namespace, grace_period_seconds=0)

    async def refused() -> Obj | None:
        return (await a.event("small-0", "ScaleDownFailed")
                or await a.event("small-1", "ScaleDownFailed"))

    event = await eventually(refused, timeout=60, what="the eviction the PDB refused")
    assert "Cannot evict pod as it would violate the pod's disruption budget" in (
        event["message"])
    assert len(await a.group_nodes()) == 2
    await a.client.resource("poddisruptionbudgets", "policy").delete("small", a.namespace)
    await eventually(lambda: _count(a, 1), timeout=60, what="the drained node removed")
    left = [p["metadata"]["name"] for p in (await pods.list(a.namespace))["items"]]
    assert len(left) == 1 and left[0].startswith("small-")


async def _count(a: Autoscaled, count: int) -> bool:
    nodes = await a.group_nodes()
    ready = [n for n in nodes if any(c.get("type") == "Ready" and c.get("status") == "True"
                                     for c in (n.get("status") or {}).get("conditions") or [])]
    return len(nodes) == count and len(ready) == count
