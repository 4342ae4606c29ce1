"""Node registration, node status and the node Lease against a real API server.

The container runtime is a small fake answering Version, Status and ListImages, the
only CRI calls the node status needs; the test sets its readiness and its images.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.cri import RuntimeUnavailable
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.eviction import parse_thresholds
from minikube_py.kubelet.lease import NODE_LEASE_NAMESPACE, NodeLease
from minikube_py.kubelet.node_status import HostInfo, NodeStatusManager
from tests.api_helpers import eventually

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
GI = 1024 ** 3
NETWORK_NOT_READY = ("container runtime network not ready: NetworkReady=false "
                     "reason:NetworkPluginNotReady message:Network plugin returns error: "
                     "cni plugin not initialized")


class FakeRuntime:
    """Version, Status and ListImages of a containerd, with readiness the test controls."""

    def __init__(self) -> None:
        self.runtime_ready = True
        self.network_ready = True
        self.down = False
        self.images = [
            api_pb2.Image(id="sha256:small", repo_tags=["local/pause:3.10"], size=1_000),
            api_pb2.Image(id="sha256:big", repo_tags=["local/busybox:1.36", "busybox:latest"],
                          repo_digests=["local/busybox@sha256:abc"], size=2_000_000),
        ]

    async def version(self, request: api_pb2.VersionRequest,
                      timeout: float | None = None) -> api_pb2.VersionResponse:
        return api_pb2.VersionResponse(version="0.1.0", runtime_name="containerd",
                                       runtime_version="1.6.20", runtime_api_version="v1")

    async def status(self, request: api_pb2.StatusRequest,
                     timeout: float | None = None) -> api_pb2.StatusResponse:
        if self.down:
            raise RuntimeUnavailable(grpc.StatusCode.UNAVAILABLE, "connection refused")
        runtime = api_pb2.RuntimeCondition(type="RuntimeReady", status=self.runtime_ready)
        if not self.runtime_ready:
            runtime.reason, runtime.message = "ContainerdNotReady", "containerd is starting"
        network = api_pb2.RuntimeCondition(type="NetworkReady", status=self.network_ready)
        if not self.network_ready:
            network.reason = "NetworkPluginNotReady"
            network.message = "Network plugin returns error: cni plugin not initialized"
        return api_pb2.StatusResponse(status=api_pb2.RuntimeStatus(conditions=[runtime,
                                                                               network]))

    async def list_images(self, request: api_pb2.ListImagesRequest,
                          timeout: float | None = None) -> api_pb2.ListImagesResponse:
        return api_pb2.ListImagesResponse(images=self.images)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 22, 4, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


HOST = HostInfo(
    root_dir=Path("/var/lib/minikube-py/kubelet/test"), hostname="placeholder",
    node_ip="192.0.2.10", cpus=2, memory_bytes=8 * GI, ephemeral_storage_bytes=100 * GI,
    machine_id="3d1219c7c4c5404aaa1f6d2a48adfda4", system_uuid="",
    boot_id="ca9eafa6-3788-4c5c-9d05-699a292b3aff", kernel_version="6.1.0-test",
    os_image="Debian GNU/Linux 12 (bookworm)", operating_system="linux",
    architecture="amd64")


class Harness:
    """One node under test: its name, runtime, pressure and clock, and its manager."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.name = f"node-status-{uuid.uuid4().hex[:8]}"
        self.runtime = FakeRuntime()
        self.clock = Clock()
        self.pressure: dict[str, bool] = {}
        self.nodes = client.resource("nodes")
        self.leases = client.resource("leases")
        self.csi_nodes = client.resource("csinodes", "storage.k8s.io")

    def manager(self, **overrides: Any) -> NodeStatusManager:
        options: dict[str, Any] = dict(
            host=dataclasses.replace(HOST, hostname=self.name),
            pod_cidr="10.244.7.0/24", kubelet_port=10250,
            kube_reserved={"cpu": "100m", "memory": "100Mi"},
            system_reserved={"memory": "156Mi"},
            eviction_hard=parse_thresholds("memory.available<100Mi,nodefs.available<10%"),
            labels={"minikube-py.io/pool": "test"},
            taints=[{"key": "example.com/fresh", "value": "yes", "effect": "NoSchedule"}],
            pressure=lambda: self.pressure, clock=self.clock)
        options.update(overrides)
        return NodeStatusManager(self.client, self.name, self.runtime, **options)

    async def node(self) -> Obj:
        return await self.nodes.get(self.name)

    async def condition(self, kind: str) -> Obj:
        node = await self.node()
        return next(c for c in node["status"]["conditions"] if c["type"] == kind)


@pytest.fixture
async def harness(api_client: Client) -> AsyncIterator[Harness]:
    """A node name of the test's own; its Node and Lease are deleted afterwards."""
    harness = Harness(api_client)
    yield harness
    with contextlib.suppress(NotFound):
        await harness.nodes.delete(harness.name)
    with contextlib.suppress(NotFound):
        await harness.leases.delete(harness.name, NODE_LEASE_NAMESPACE)
    with contextlib.suppress(NotFound):
        await harness.csi_nodes.delete(harness.name)


async def test_registration_creates_the_node_with_labels_capacity_and_conditions(
        harness: Harness, kubectl: Kubectl) -> None:
    await harness.manager().register()
    node = await harness.node()
    assert node["metadata"]["labels"] == {
        "kubernetes.io/hostname": harness.name, "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64", "minikube-py.io/pool": "test"}
    assert node["spec"]["podCIDR"] == "10.244.7.0/24"
    assert node["spec"]["podCIDRs"] == ["10.244.7.0/24"]
    assert node["spec"]["taints"] == [
        {"key": "example.com/fresh", "value": "yes", "effect": "NoSchedule"}]
    status = node["status"]
    assert status["capacity"] == {"cpu": "2", "memory": "8Gi", "ephemeral-storage": "100Gi",
                                  "pods": "110"}
    # 8Gi - 100Mi kube-reserved - 156Mi system-reserved - 100Mi hard eviction;
    # disk: 100Gi minus 10% (float32 percent, as upstream: 10737418400 bytes).
    assert status["allocatable"] == {"cpu": "1900m", "memory": "7836Mi",
                                     "ephemeral-storage": "96636764000", "pods": "110"}
    assert [(c["type"], c["status"], c["reason"], c["message"])
            for c in status["conditions"]] == [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory",
         "kubelet has sufficient memory available"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ("Ready", "True", "KubeletReady", "kubelet is posting ready status")]
    assert all(c["lastHeartbeatTime"] == c["lastTransitionTime"] == "2026-11-22T04:00:00Z"
               for c in status["conditions"])
    assert status["addresses"] == [{"type": "InternalIP", "address": "192.0.2.10"},
                                   {"type": "Hostname", "address": harness.name}]
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    assert status["nodeInfo"] == {
        "machineID": HOST.machine_id, "systemUUID": "", "bootID": HOST.boot_id,
        "kernelVersion": "6.1.0-test", "osImage": "Debian GNU/Linux 12 (bookworm)",
        "containerRuntimeVersion": "containerd://1.6.20",
        "kubeletVersion": "v1.37.0-minikube-py", "operatingSystem": "linux",
        "architecture": "amd64",
        "kubeProxyVersion": ""}  # unset by the kubelet (KEP-4004); upstream's JSON has it
    assert status["images"] == [
        {"names": ["local/busybox@sha256:abc", "local/busybox:1.36", "busybox:latest"],
         "sizeBytes": 2_000_000},
        {"names": ["local/pause:3.10"], "sizeBytes": 1_000}]

    row = kubectl("get", "node", harness.name, "--no-headers").stdout.split()
    assert row[0] == harness.name
    assert row[1] == "Ready"
    assert row[4] == "v1.37.0-minikube-py"


async def test_images_report_the_50_biggest_with_at_most_5_names(harness: Harness) -> None:
    harness.runtime.images = [
        api_pb2.Image(id=f"sha256:{size}", repo_tags=[f"img:{size}-{n}" for n in range(7)],
                      size=size)
        for size in range(1, 61)]
    await harness.manager().register()
    images = (await harness.node())["status"]["images"]
    assert len(images) == 50
    assert [image["sizeBytes"] for image in images] == list(range(60, 10, -1))
    assert images[0]["names"] == [f"img:60-{n}" for n in range(5)]


async def test_registering_an_existing_node_reconciles_its_default_labels(
        harness: Harness) -> None:
    await harness.nodes.create({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": harness.name,
        "labels": {"kubernetes.io/hostname": "someone-else", "kubernetes.io/os": "",
                   "team": "keep-me"}}})
    manager = harness.manager()
    await manager.register()
    assert manager.registered.is_set()
    node = await harness.node()
    assert node["metadata"]["labels"] == {
        "kubernetes.io/hostname": harness.name, "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64", "team": "keep-me"}
    assert node["spec"]["podCIDRs"] == ["10.244.7.0/24"]
    await manager.update_status()
    assert (await harness.condition("Ready"))["status"] == "True"


async def test_status_is_written_only_when_it_changed_or_the_report_is_due(
        harness: Harness) -> None:
    manager = harness.manager()
    await manager.register()

    async def version() -> str:
        return str((await harness.node())["metadata"]["resourceVersion"])

    assert await manager.update_status() is True  # the first report is always written
    written = await version()
    harness.clock.advance(10)
    assert await manager.update_status() is False  # only heartbeat times would change
    harness.clock.advance(10)
    assert await manager.update_status() is False
    assert await version() == written

    harness.pressure = {"MemoryPressure": True}
    harness.clock.advance(10)
    assert await manager.update_status() is True
    memory = await harness.condition("MemoryPressure")
    assert (memory["status"], memory["reason"], memory["message"]) == (
        "True", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available")
    assert memory["lastTransitionTime"] == "2026-11-22T04:00:30Z"

    harness.clock.advance(299)
    assert await manager.update_status() is False
    harness.clock.advance(1)
    assert await manager.update_status() is True  # nodeStatusReportFrequency: 5 min
    memory = await harness.condition("MemoryPressure")
    assert memory["lastHeartbeatTime"] == "2026-11-22T04:05:30Z"
    assert memory["lastTransitionTime"] == "2026-11-22T04:00:30Z"
    assert await manager.update_status(force=True) is True


@pytest.mark.parametrize(("runtime_ready", "network_ready", "message"), [
    (True, False, NETWORK_NOT_READY),
    (False, False,
     "[container runtime not ready: RuntimeReady=false reason:ContainerdNotReady "
     f"message:containerd is starting, {NETWORK_NOT_READY}]"),
])
async def test_a_runtime_that_is_not_ready_makes_the_node_not_ready(
        harness: Harness, kubectl: Kubectl, runtime_ready: bool, network_ready: bool,
        message: str) -> None:
    manager = harness.manager()
    await manager.register()
    harness.runtime.runtime_ready = runtime_ready
    harness.runtime.network_ready = network_ready
    harness.clock.advance(10)
    assert await manager.update_status() is True
    ready = await harness.condition("Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "KubeletNotReady", message)
    assert ready["lastTransitionTime"] == "2026-11-22T04:00:10Z"
    assert kubectl("get", "node", harness.name, "--no-headers").stdout.split()[1] == "NotReady"

    harness.runtime.runtime_ready = harness.runtime.network_ready = True
    harness.clock.advance(10)
    assert await manager.update_status() is True
    ready = await harness.condition("Ready")
    assert (ready["status"], ready["lastTransitionTime"]) == ("True", "2026-11-22T04:00:20Z")


async def test_a_runtime_that_restarts_keeps_the_node_ready_one_gone_30s_does_not(
        harness: Harness, kubectl: Kubectl) -> None:
    manager = harness.manager()
    await manager.register()  # the runtime answered at 04:00:00
    harness.runtime.down = True
    harness.clock.advance(29)
    await manager.update_status()  # containerd restarting: the last answer still stands
    assert (await harness.condition("Ready"))["status"] == "True"

    harness.clock.advance(1)
    assert await manager.update_status() is True
    ready = await harness.condition("Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "KubeletNotReady", "container runtime is down")
    assert ready["lastTransitionTime"] == "2026-11-22T04:00:30Z"
    assert kubectl("get", "node", harness.name, "--no-headers").stdout.split()[1] == "NotReady"

    harness.runtime.down = False
    harness.clock.advance(10)
    assert await manager.update_status() is True
    ready = await harness.condition("Ready")
    assert (ready["status"], ready["lastTransitionTime"]) == ("True", "2026-11-22T04:00:40Z")


async def test_a_deleted_node_is_registered_again(harness: Harness) -> None:
    manager = harness.manager(clock=lambda: datetime.now(UTC), update_frequency=0.1)
    task = asyncio.create_task(manager.run())
    try:
        first = await eventually(lambda: _uid(harness), what="the node to register")
        await harness.nodes.delete(harness.name)
        second = await eventually(lambda: _uid(harness, unlike=first),
                                  what="the node to register again")
        assert second != first
        assert (await harness.condition("Ready"))["status"] == "True"
    finally:
        manager.stop()
        async with asyncio.timeout(5):
            await task


async def _uid(harness: Harness, unlike: str | None = None) -> str | None:
    with contextlib.suppress(NotFound):
        uid = (await harness.node())["metadata"]["uid"]
        return uid if uid != unlike else None
    return None


# -- the CSINode --------------------------------------------------------------------------


async def test_a_sync_creates_the_nodes_csi_node_owned_by_it_without_drivers(
        harness: Harness, kubectl: Kubectl) -> None:
    await harness.manager().sync_node_status()

    node = await harness.node()
    csi_node = await harness.csi_nodes.get(harness.name)
    assert csi_node["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": harness.name,
         "uid": node["metadata"]["uid"]}]
    assert csi_node["spec"] == {"drivers": []}
    row = kubectl("get", "csinode", harness.name, "--no-headers").stdout.split()
    assert row[:2] == [harness.name, "0"]


async def test_an_existing_csi_node_is_left_as_it_is(harness: Harness) -> None:
    await harness.csi_nodes.create({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": harness.name},
        "spec": {"drivers": [{"name": "disk.example.com", "nodeID": harness.name}]}})
    manager = harness.manager()
    await manager.sync_node_status()

    stored = await harness.csi_nodes.get(harness.name)
    assert [d["name"] for d in stored["spec"]["drivers"]] == ["disk.example.com"]
    assert "ownerReferences" not in stored["metadata"]
    assert manager.csi_node_initialized


# -- the Lease ----------------------------------------------------------------------------


MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


async def test_the_lease_is_created_once_the_node_exists_and_owned_by_it(
        harness: Harness) -> None:
    lease = NodeLease(harness.client, harness.name, clock=harness.clock)
    await lease.sync()
    with pytest.raises(NotFound):  # no Node to own it yet: not created
        await harness.leases.get(harness.name, NODE_LEASE_NAMESPACE)

    await harness.manager().register()
    await lease.sync()
    stored = await harness.leases.get(harness.name, NODE_LEASE_NAMESPACE)
    node = await harness.node()
    assert stored["spec"] == {"holderIdentity": harness.name, "leaseDurationSeconds": 40,
                              "renewTime": "2026-11-22T04:00:00.000000Z"}
    assert stored["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": harness.name,
         "uid": node["metadata"]["uid"]}]

    harness.clock.advance(10.5)
    await lease.sync()
    renewed = await harness.leases.get(harness.name, NODE_LEASE_NAMESPACE)
    assert renewed["spec"]["renewTime"] == "2026-11-22T04:00:10.500000Z"


async def test_the_lease_is_renewed_every_renew_interval(harness: Harness) -> None:
    await harness.manager().register()
    lease = NodeLease(harness.client, harness.name, renew_interval=0.1)
    task = asyncio.create_task(lease.run())
    try:
        async def renew_time() -> str | None:
            with contextlib.suppress(NotFound):
                stored = await harness.leases.get(harness.name, NODE_LEASE_NAMESPACE)
                return str(stored["spec"]["renewTime"])
            return None

        first = await eventually(renew_time, what="the lease to be created")
        assert MICRO_TIME.match(first)
        await eventually(lambda: _changed(renew_time, first), what="the lease to be renewed")
    finally:
        lease.stop()
        async with asyncio.timeout(5):
            await task


async def _changed(read: Callable[[], Any], old: str) -> bool:
    return await read() not in (None, old)


async def test_a_lease_written_by_someone_else_is_read_again_and_renewed(
        harness: Harness) -> None:
    await harness.manager().register()
    lease = NodeLease(harness.client, harness.name, clock=harness.clock)
    await lease.sync()
    stored = await harness.leases.get(harness.name, NODE_LEASE_NAMESPACE)
    stored["metadata"]["labels"] = {"touched": "yes"}
    await harness.leases.update(stored)  # our cached copy is now stale: a Conflict

    harness.clock.advance(10)
    await lease.sync()
    renewed = await harness.leases.get(harness.name, NODE_LEASE_NAMESPACE)
    assert renewed["spec"]["renewTime"] == "2026-11-22T04:00:10.000000Z"
    assert renewed["metadata"]["labels"] == {"touched": "yes"}


async def test_a_lease_gone_with_its_node_is_not_put_again_and_returns_with_the_node(
        harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    """The garbage collector deletes a Node's Lease with it: the next sync does not PUT
    the Lease five times over, creates none while there is no Node, and one owned by
    the new Node once the node has registered again."""
    await harness.manager().register()
    lease = NodeLease(harness.client, harness.name, clock=harness.clock)
    await lease.sync()
    await harness.nodes.delete(harness.name)
    await harness.leases.delete(harness.name, NODE_LEASE_NAMESPACE)

    with caplog.at_level(logging.INFO, logger="minikube_py.kubelet.lease"):
        await lease.sync()
    assert [record.getMessage() for record in caplog.records
            if record.levelno >= logging.WARNING] == []
    assert any("the lease is gone" in record.getMessage() for record in caplog.records)
    with pytest.raises(NotFound):
        await harness.leases.get(harness.name, NODE_LEASE_NAMESPACE)

    await harness.manager().register()
    harness.clock.advance(10)
    await lease.sync()
    stored = await harness.leases.get(harness.name, NODE_LEASE_NAMESPACE)
    node = await harness.node()
    assert stored["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
    assert stored["spec"]["renewTime"] == "2026-11-22T04:00:10.000000Z"
