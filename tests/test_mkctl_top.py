"""`mkctl top` next to the real kubectl, on an API server of this module's own that
aggregates the metrics server (minikube_py/metrics) through the APIService
v1beta1.metrics.k8s.io, as a cluster started with `minikube-py up` does.

No kubelet runs: each Node object names, as its kubelet's address, a small HTTP server
of the test's that answers /metrics/resource as a kubelet would, with CPU counters that
grow at a fixed rate and a fixed working set. So every scrape gives the same usage, and
kubectl and mkctl, run one after the other, must print the same table. Without the
metrics API (the session's shared API server) both must refuse alike.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from minikube_py.client.errors import AlreadyExists
from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig
from minikube_py.metrics.server import MetricsServer
from minikube_py.process import free_port
from tests.api_helpers import eventually
from tests.test_mkctl import Clis, assert_same

START_MS = int(time.time() - 3600) * 1000  # when every fake container started
# (namespace, pod, container) -> (CPU cores used, working set in MiB). The metrics
# server's rates are off by a few hundred nanocores (timestamps are floats), so each
# CPU value sits well inside a millicore, and kubectl's rounding up gives one answer.
CONTAINERS = {
    ("shop", "web-0", "nginx"): (0.2503, 64), ("shop", "web-0", "log"): (0.0023, 8),
    ("shop", "web-1", "nginx"): (0.5003, 96), ("shop", "db-0", "postgres"): (1.2503, 512),
    ("tools", "debug", "shell"): (0.0, 1),
}
NODES = {"top-a": (1.5003, 2048), "top-b": (0.7503, 1024)}  # name -> (cores used, MiB)
POD_NODE = {"web-0": "top-a", "web-1": "top-b", "db-0": "top-a", "debug": "top-b"}


def resource_metrics(node: str) -> str:
    """What the node's kubelet answers on /metrics/resource, read now."""
    stamp = int(time.time() * 1000)
    seconds = (stamp - START_MS) / 1000  # counters and timestamps agree to the ms, so
    cores, mib = NODES[node]              # each rate is exact
    lines = [f"node_cpu_usage_seconds_total {cores * seconds:.6f} {stamp}",
             f"node_memory_working_set_bytes {mib * 1024 * 1024} {stamp}"]
    for (namespace, pod, container), (cores, mib) in CONTAINERS.items():
        if POD_NODE[pod] != node:
            continue
        labels = f'container="{container}",namespace="{namespace}",pod="{pod}"'
        lines += [
            f"container_cpu_usage_seconds_total{{{labels}}} {cores * seconds:.6f} {stamp}",
            f"container_memory_working_set_bytes{{{labels}}} {mib * 1024 * 1024} {stamp}",
            f"container_start_time_seconds{{{labels}}} {START_MS / 1000:.3f} {stamp}"]
    return "\n".join(lines) + "\n"


class FakeKubelets:
    """One HTTP server per node answering /metrics/resource; `ports` by node name."""

    def __init__(self) -> None:
        self.ports = {node: free_port() for node in NODES}
        self.runners: list[web.AppRunner] = []

    async def __aenter__(self) -> FakeKubelets:
        for node, port in self.ports.items():
            app = web.Application()

            async def answer(request: web.Request, node: str = node) -> web.Response:
                return web.Response(text=resource_metrics(node))

            app.router.add_get("/metrics/resource", answer)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            self.runners.append(runner)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for runner in self.runners:
            await runner.cleanup()


async def make_objects(client: Client, kubelets: FakeKubelets) -> None:
    """The nodes (their kubelet at a fake's port) and the pods the metrics are about."""
    for namespace in ("kube-system", "shop", "tools"):
        try:
            await client.resource("namespaces").create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        except AlreadyExists:
            pass
    nodes = client.resource("nodes")
    for name, port in kubelets.ports.items():
        node = await nodes.create({"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": name, "labels": {"pool": name}}})
        node["status"] = {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "7Gi", "pods": "110"},
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}
        await nodes.update_status(node)
    pods = client.resource("pods")
    for (namespace, pod), containers in _pods().items():
        await pods.create({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": pod, "labels": {"app": pod.split("-")[0]}},
                           "spec": {"nodeName": POD_NODE[pod], "containers": [
                               {"name": name, "image": "busybox:1.36"}
                               for name in containers]}}, namespace)


def _pods() -> dict[tuple[str, str], list[str]]:
    pods: dict[tuple[str, str], list[str]] = {}
    for namespace, pod, container in CONTAINERS:
        pods.setdefault((namespace, pod), []).append(container)
    return pods


def host_address() -> str:
    """An address of this machine that is not loopback: an EndpointSlice may not name
    127.0.0.1, so the metrics server is published at this one (the address the machine
    would send from; nothing is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            pytest.skip("the machine has no address besides loopback")
        return probe.getsockname()[0]


@pytest.fixture(scope="module")
async def metrics_cluster(fast_tmp: Path, tmp_path_factory: pytest.TempPathFactory
                          ) -> AsyncIterator[Clis]:
    """An etcd and API server of the module's own, the fake kubelets, and the metrics
    server publishing itself as the metrics.k8s.io APIService; kubectl and mkctl for it."""
    directory = fast_tmp / f"top-{uuid.uuid4().hex[:8]}"
    async with EtcdProcess(directory / "etcd") as etcd, APIServerProcess(
            [etcd.client_url], directory / "apiserver.log",
            extra_args=("--disable-admission-plugins=ServiceAccount",)) as apiserver, \
            FakeKubelets() as kubelets:
        kubeconfig = write_kubeconfig(directory / "kubeconfig", apiserver.url)
        async with Client.from_kubeconfig(kubeconfig, user_agent="tests") as client:
            await make_objects(client, kubelets)
            address = host_address()
            server = MetricsServer(client, address, free_port(address), resolution=1.0,
                                   advertise_address=address)
            task = asyncio.create_task(server.run())
            try:
                async def served() -> bool:
                    try:
                        listed = await client.request(
                            "GET", "/apis/metrics.k8s.io/v1beta1/pods")
                    except Exception:  # not yet aggregated: 503 or 404
                        return False
                    return len(listed.get("items") or []) == len(_pods())

                await eventually(served, timeout=30, interval=0.5,
                                 what="the metrics of every pod")
                yield Clis(kubeconfig, tmp_path_factory.mktemp("top-cache"))
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


CASES = [
    "top nodes", "top node", "top no top-a", "top node --no-headers",
    "top node --sort-by=memory", "top node --sort-by=cpu", "top node -l pool=top-b",
    "top node --show-capacity", "top node nope", "top node --sort-by=name",
    "top pods -n shop", "top pod -n shop web-0", "top pod -A", "top pods --all-namespaces",
    "top pod -n shop --containers", "top pod -A --containers --sort-by=cpu",
    "top pod -n shop --sort-by=memory", "top pod -n shop -l app=web", "top pod -n shop nope",
    "top pod -n empty-ns", "top pod -n shop --no-headers", "top pod -n shop --sort-by=size",
    "top pod -n tools --sum", "top pod -A --sum", "top gadgets", "top pod -n shop --bogus",
    "top node a b", "top pod a -l x=y -n shop", "top pod -A -l app=none",
]


# The metrics server runs in this process's event loop: each command runs in a thread
# while the loop goes on answering.

@pytest.mark.parametrize("case", CASES)
async def test_top_prints_what_kubectl_prints(metrics_cluster: Clis, case: str) -> None:
    expected, actual = await asyncio.to_thread(metrics_cluster.compare, *case.split())
    assert_same(expected, actual)


async def test_top_reads_the_usage_the_kubelets_report(metrics_cluster: Clis) -> None:
    """The fake kubelets' rates come out as kubectl's quantities: whole millicores
    rounded up (251m for 0.2503 cores), whole MiB."""
    result = await asyncio.to_thread(metrics_cluster.mkctl, "top", "pod", "-n", "shop",
                                     "--containers", "--no-headers")
    rows = {tuple(line.split()[:2]): line.split()[2:] for line in result.out.splitlines()}
    assert rows[("web-0", "nginx")] == ["251m", "64Mi"]
    assert rows[("web-0", "log")] == ["3m", "8Mi"]
    assert rows[("db-0", "postgres")] == ["1251m", "512Mi"]
    assert result.code == 0
    nodes = await asyncio.to_thread(metrics_cluster.mkctl, "top", "node", "top-a",
                                    "--no-headers")
    assert nodes.out.split() == ["top-a", "1501m", "37%", "2048Mi", "28%"]


async def test_top_alone_prints_its_help_on_stderr_and_fails(metrics_cluster: Clis) -> None:
    for result in (metrics_cluster.kubectl("top"), metrics_cluster.mkctl("top")):
        assert (result.out, result.code) == ("", 1)
        assert result.err.startswith("Display resource (CPU/memory) usage.\n")
        assert "Display resource (CPU/memory) usage of nodes" in result.err


@pytest.mark.parametrize("case", ["top nodes", "top pods", "top pod -A"])
def test_without_the_metrics_api_top_refuses_as_kubectl_does(
        kubeconfig: Path, tmp_path: Path, case: str) -> None:
    clis = Clis(kubeconfig, tmp_path / "cache")
    expected, actual = clis.compare(*case.split())
    assert_same(expected, actual)
    assert actual.err == "error: Metrics API not available\n"
    assert actual.code == 1
