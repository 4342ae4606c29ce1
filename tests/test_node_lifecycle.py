"""The node lifecycle, taint-eviction and pod GC controllers against a real API server.

The test plays each node's kubelet (`NodeHeartbeat`): it renews the node's Lease in
kube-node-lease and reports Ready=True, and can fall silent. FakeKubelet plays the pods'
side: running, ready, and finishing graceful deletions.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime

import pytest

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339
from minikube_py.apiserver.auth.admission.defaulttolerationseconds import (
    add_default_toleration_seconds,
)
from minikube_py.client.errors import Conflict, NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers.base import ControllerOptions
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.nodelifecycle import NodeLifecycleController
from minikube_py.controllers.podgc import PodGCController
from minikube_py.controllers.podstatus import get_condition
from minikube_py.controllers.taint_eviction import TaintEvictionController
from tests.api_helpers import eventually
from tests.fake_kubelet import FakeKubelet

RunControllers = Callable[..., Awaitable[ControllerManager]]
MakeNode = Callable[..., Awaitable[str]]
UNREACHABLE = "node.kubernetes.io/unreachable"
FAST = ControllerOptions(node_monitor_grace_period=2, node_monitor_period=0.5)


def micro_time() -> str:
    """A Lease's renewTime: RFC 3339 with microseconds (metav1.MicroTime)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ready_condition() -> Obj:
    stamp = rfc3339(datetime.now(UTC))
    return {"type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "kubelet is posting ready status", "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp}


@pytest.fixture
async def make_node(api_client: Client) -> AsyncIterator[MakeNode]:
    """Create Ready Nodes (in a zone of this test's own); all are deleted afterwards."""
    nodes = api_client.resource("nodes")
    zone = f"zone-{uuid.uuid4().hex[:8]}"
    created: list[str] = []

    async def make(taints: list[Obj] | None = None) -> str:
        name = f"lifecycle-{uuid.uuid4().hex[:8]}"
        await nodes.create({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
            "spec": {"taints": taints or []},
            "status": {"conditions": [ready_condition()]}})
        created.append(name)
        return name

    yield make
    for name in created:
        with contextlib.suppress(NotFound):
            await nodes.delete(name)


class NodeHeartbeat:
    """Plays one node's kubelet: renews its Lease, reports Ready=True; can fall silent."""

    def __init__(self, client: Client, node: str, interval: float = 0.2) -> None:
        self.leases = client.resource("leases", "coordination.k8s.io")
        self.nodes = client.resource("nodes")
        self.node = node
        self.interval = interval
        self.silent = False
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> NodeHeartbeat:
        await self.leases.create({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.node, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": self.node, "leaseDurationSeconds": 40,
                     "renewTime": micro_time()}})
        self._task = asyncio.create_task(self._beat())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self.leases.delete(self.node, "kube-node-lease")

    async def _beat(self) -> None:
        while True:
            if not self.silent:
                await self.leases.patch(self.node, {"spec": {"renewTime": micro_time()}},
                                        "kube-node-lease")
                node = await self.nodes.get(self.node)
                ready = get_condition(node["status"], "Ready")
                if ready is None or ready["status"] != "True":
                    node["status"]["conditions"] = [ready_condition()]
                    with contextlib.suppress(Conflict):  # the controller wrote first: retry
                        await self.nodes.update_status(node)
            await asyncio.sleep(self.interval)


def pod(name: str, node: str, tolerations: list[Obj] | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "app", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def tolerate(key: str, seconds: int | None = None) -> list[Obj]:
    toleration: Obj = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return [toleration]


async def exists(client: Client, namespace: str, name: str) -> Obj | None:
    try:
        return await client.resource("pods").get(name, namespace)
    except NotFound:
        return None


async def wait_running(client: Client, namespace: str, *names: str) -> None:
    async def running() -> bool:
        pods = [await exists(client, namespace, name) for name in names]
        return all(p and p["status"].get("phase") == "Running" for p in pods)

    await eventually(running, what="pods running")


async def events(client: Client, namespace: str, reason: str) -> list[Obj]:
    listed = await client.resource("events").list(namespace, field_selector=f"reason={reason}")
    return listed["items"]


def test_the_server_defaults_tolerations_for_not_ready_and_unreachable() -> None:
    """DefaultTolerationSeconds: 300 s each, unless the pod says how long itself."""
    bare: Obj = {}
    add_default_toleration_seconds(bare)
    assert bare["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300},
        {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}]
    everything: Obj = {"tolerations": [{"operator": "Exists"}]}
    add_default_toleration_seconds(everything)
    assert everything == {"tolerations": [{"operator": "Exists"}]}


@pytest.mark.slow
async def test_silent_node_goes_unknown_is_tainted_evicts_pods_and_recovers(
        api_client: Client, namespace: str, make_node: MakeNode,
        run_controllers: RunControllers) -> None:
    nodes = api_client.resource("nodes")
    sick, healthy = await make_node(), await make_node()
    pods = api_client.resource("pods")
    async with (NodeHeartbeat(api_client, sick) as sick_kubelet,
                NodeHeartbeat(api_client, healthy), FakeKubelet(api_client, namespace)):
        await pods.create(pod("at-once", sick, tolerate(UNREACHABLE, 0)), namespace)
        await pods.create(pod("after-2s", sick, tolerate(UNREACHABLE, 2)), namespace)
        await pods.create(pod("forever", sick, tolerate(UNREACHABLE)), namespace)
        defaulted = await pods.create(pod("defaulted", sick), namespace)
        assert {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300} in defaulted["spec"]["tolerations"]
        await wait_running(api_client, namespace, "at-once", "after-2s", "forever", "defaulted")
        await run_controllers(NodeLifecycleController, TaintEvictionController, options=FAST)

        silenced_at = time.monotonic()
        sick_kubelet.silent = True

        async def unknown() -> Obj | None:
            node = await nodes.get(sick)
            ready = get_condition(node["status"], "Ready")
            return node if ready and ready["status"] == "Unknown" else None

        node = await eventually(unknown, what="Ready=Unknown on the silent node")
        ready = get_condition(node["status"], "Ready")
        assert ready is not None
        assert (ready["reason"], ready["message"]) == (
            "NodeStatusUnknown", "Kubelet stopped posting node status.")

        async def tainted() -> bool:
            taints = (await nodes.get(sick))["spec"].get("taints") or []
            return {(t["key"], t["effect"]) for t in taints} == {
                (UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}

        await eventually(tainted, what="the unreachable taints")
        await eventually(lambda: _gone(api_client, namespace, "at-once"),
                         what="the pod tolerating 0 s evicted")
        await eventually(lambda: _gone(api_client, namespace, "after-2s"),
                         what="the pod tolerating 2 s evicted")
        # the grace period (2 s after the last heartbeat, at most one interval before the
        # silence), then the toleration's 2 s: a lower bound that a slow machine only
        # makes later to observe, never earlier
        assert time.monotonic() - silenced_at > 3.5
        forever = await exists(api_client, namespace, "forever")
        assert forever is not None and await exists(api_client, namespace, "defaulted")
        forever_ready = get_condition(forever["status"], "Ready")
        assert forever_ready is not None and forever_ready["status"] == "False"
        healthy_node = await nodes.get(healthy)
        assert not healthy_node["spec"].get("taints")

        sick_kubelet.silent = False

        async def untainted() -> bool:
            node = await nodes.get(sick)
            ready = get_condition(node["status"], "Ready")
            return not node["spec"].get("taints") and ready is not None and (
                ready["status"] == "True")

        await eventually(untainted, what="the taints removed after recovery")
        assert await exists(api_client, namespace, "forever")

    not_ready = [e for e in await events(api_client, "default", "NodeNotReady")
                 if e["involvedObject"]["name"] == sick]
    assert not_ready and not_ready[0]["message"] == f"Node {sick} status is now: NodeNotReady"
    evictions = {e["message"] for e in await events(api_client, namespace,
                                                    "TaintManagerEviction")}
    assert {f"Marking for deletion Pod {namespace}/at-once",
            f"Marking for deletion Pod {namespace}/after-2s"} <= evictions
    assert f"Marking for deletion Pod {namespace}/forever" not in evictions


async def _gone(client: Client, namespace: str, name: str) -> bool:
    return await exists(client, namespace, name) is None


async def test_no_execute_taint_evicts_untolerating_pods_and_removal_cancels(
        api_client: Client, namespace: str, make_node: MakeNode,
        run_controllers: RunControllers) -> None:
    """The taint-eviction controller alone, with a taint an operator puts on by hand."""
    nodes = api_client.resource("nodes")
    pods = api_client.resource("pods")
    node = await make_node()
    async with FakeKubelet(api_client, namespace):
        await pods.create(pod("intolerant", node), namespace)
        await pods.create(pod("patient", node, tolerate("example.com/maintenance", 60)),
                          namespace)
        await wait_running(api_client, namespace, "intolerant", "patient")
        await run_controllers(TaintEvictionController)

        maintenance = {"key": "example.com/maintenance", "effect": "NoExecute"}
        await nodes.patch(node, {"spec": {"taints": [maintenance]}})
        await eventually(lambda: _gone(api_client, namespace, "intolerant"),
                         what="the pod without a toleration evicted")

        await nodes.patch(node, {"spec": {"taints": None}})

        async def cancelled() -> bool:
            messages = {e["message"] for e in await events(api_client, namespace,
                                                           "TaintManagerEviction")}
            return f"Cancelling deletion of Pod {namespace}/patient" in messages

        await eventually(cancelled, what="the scheduled eviction cancelled")
        assert await exists(api_client, namespace, "patient")


class QuickPodGC(PodGCController):
    """Upstream's 20 s period and 40 s quarantine, shortened for the test."""

    gc_check_period = 0.2
    quarantine_time = 0.5


async def test_pods_bound_to_a_deleted_node_are_failed_and_force_deleted(
        api_client: Client, namespace: str, make_node: MakeNode,
        run_controllers: RunControllers) -> None:
    pods = api_client.resource("pods")
    doomed_node, live_node = await make_node(), await make_node()
    orphan = pod("orphan", doomed_node)
    orphan["metadata"]["finalizers"] = ["example.com/hold"]  # to look at it once deleted
    await pods.create(orphan, namespace)
    await pods.create(pod("kept", live_node), namespace)
    await api_client.resource("nodes").delete(doomed_node)
    await run_controllers(QuickPodGC)

    async def deleted() -> Obj | None:
        found = await exists(api_client, namespace, "orphan")
        return found if found and found["metadata"].get("deletionTimestamp") else None

    found = await eventually(deleted, what="the orphaned pod deleted")
    assert found["metadata"]["deletionGracePeriodSeconds"] == 0
    assert found["status"]["phase"] == "Failed"
    disruption = get_condition(found["status"], "DisruptionTarget")
    assert disruption is not None
    assert (disruption["reason"], disruption["message"]) == (
        "DeletionByPodGC", "PodGC: node no longer exists")
    kept = await exists(api_client, namespace, "kept")
    assert kept is not None and not kept["metadata"].get("deletionTimestamp")
    await pods.patch("orphan", {"metadata": {"finalizers": None}}, namespace)


async def test_terminated_pods_beyond_the_threshold_go_evicted_first(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    pods = api_client.resource("pods")
    for name, status in (("evicted", {"phase": "Failed", "reason": "Evicted"}),
                         ("succeeded", {"phase": "Succeeded"})):
        created = await pods.create(pod(name, ""), namespace)
        created["status"] = {**created["status"], **status}
        await pods.update_status(created)
    listed = await pods.list()
    terminated = [p for p in listed["items"]
                  if p["status"].get("phase") not in ("Pending", "Running", "Unknown")]
    threshold = len(terminated) - 1
    await run_controllers(QuickPodGC, options=ControllerOptions(
        terminated_pod_gc_threshold=threshold))

    await eventually(lambda: _gone(api_client, namespace, "evicted"),
                     what="the evicted pod collected")
    assert await exists(api_client, namespace, "succeeded")
