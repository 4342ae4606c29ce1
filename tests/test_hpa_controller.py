"""The HorizontalPodAutoscaler controller against a real API server that aggregates the
metrics server (minikube_py/metrics) through v1beta1.metrics.k8s.io, as test_mkctl_top.py
builds it: a fake kubelet answers /metrics/resource for the test's pods with CPU counters
growing at the rate the test sets, the metrics server turns them into PodMetrics, and the
controller reads them, scales the Deployment's scale subresource and reports in status,
conditions and events. No Deployment controller runs: the pods are the test's own, so
their usage stays what the test says."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339
from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig
from minikube_py.controllers.base import ControllerOptions
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.podautoscaler.controller import HorizontalController
from minikube_py.metrics.server import MetricsServer
from minikube_py.process import free_port
from tests.api_helpers import eventually, serving
from tests.test_mkctl_top import host_address

NODE = "hpa-node"
START = time.time() - 3600  # when every fake container started


@dataclass
class FakeKubelet:
    """/metrics/resource of one node: each pod's one container uses `cores[pod]` CPUs."""

    port: int = field(default_factory=free_port)
    cores: dict[tuple[str, str], float] = field(default_factory=dict)

    def resource_metrics(self) -> str:
        now = time.time()
        stamp = int(now * 1000)
        lines = [f"node_cpu_usage_seconds_total {(now - START):.6f} {stamp}",
                 f"node_memory_working_set_bytes {1024 ** 3} {stamp}"]
        for (namespace, pod), cores in self.cores.items():
            labels = f'container="app",namespace="{namespace}",pod="{pod}"'
            lines += [
                f"container_cpu_usage_seconds_total{{{labels}}} {cores * (now - START):.6f} "
                f"{stamp}",
                f"container_memory_working_set_bytes{{{labels}}} {64 * 1024 ** 2} {stamp}",
                f"container_start_time_seconds{{{labels}}} {START:.3f} {stamp}"]
        return "\n".join(lines) + "\n"

    def app(self) -> web.Application:
        app = web.Application()

        async def answer(_request: web.Request) -> web.Response:
            return web.Response(text=self.resource_metrics())

        app.router.add_get("/metrics/resource", answer)
        return app


@dataclass
class MetricsCluster:
    client: Client
    kubeconfig: Path
    kubelet: FakeKubelet


@pytest.fixture(scope="module")
async def metrics_cluster(fast_tmp: Path) -> AsyncIterator[MetricsCluster]:
    """An etcd, API server, fake kubelet (on node hpa-node) and metrics server of the
    module's own."""
    async with start_metrics_cluster(fast_tmp) as cluster:
        yield cluster


@asynccontextmanager
async def start_metrics_cluster(fast_tmp: Path) -> AsyncIterator[MetricsCluster]:
    """An etcd, API server, fake kubelet (on node hpa-node) and a metrics server whose
    APIServices are Available, all stopped on the way out."""
    directory = fast_tmp / f"hpa-{uuid.uuid4().hex[:8]}"
    kubelet = FakeKubelet()
    async with EtcdProcess(directory / "etcd") as etcd, APIServerProcess(
            [etcd.client_url], directory / "apiserver.log",
            extra_args=("--disable-admission-plugins=ServiceAccount",)) as apiserver, \
            serving(kubelet.app(), "127.0.0.1", kubelet.port):
        kubeconfig = write_kubeconfig(directory / "kubeconfig", apiserver.url)
        async with Client.from_kubeconfig(kubeconfig, user_agent="tests") as client:
            nodes = client.resource("nodes")
            node = await nodes.create({"apiVersion": "v1", "kind": "Node",
                                       "metadata": {"name": NODE}})
            node["status"] = {
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "7Gi", "pods": "110"},
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}}}
            await nodes.update_status(node)
            address = host_address()
            server = MetricsServer(client, address, free_port(address), resolution=1.0,
                                   advertise_address=address)
            task = asyncio.create_task(server.run())
            try:
                async def aggregated() -> bool:
                    try:
                        for path in ("/apis/metrics.k8s.io/v1beta1/nodes",
                                     "/apis/custom.metrics.k8s.io/v1beta2",
                                     "/apis/external.metrics.k8s.io/v1beta1"):
                            await client.request("GET", path)
                    except Exception:  # not yet aggregated: 503 or 404
                        return False
                    return True

                await eventually(aggregated, timeout=30, interval=0.5,
                                 what="the metrics APIs aggregated")
                yield MetricsCluster(client, kubeconfig, kubelet)
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


@pytest.fixture
async def hpa_controller(metrics_cluster: MetricsCluster) -> AsyncIterator[ControllerManager]:
    async with running_hpa_controller(metrics_cluster.kubeconfig) as manager:
        yield manager


@asynccontextmanager
async def running_hpa_controller(kubeconfig: Path) -> AsyncIterator[ControllerManager]:
    """The HPA controller in process, synced every second."""
    client = Client.from_kubeconfig(kubeconfig, user_agent="test-hpa")
    manager = ControllerManager(client, [HorizontalController], options=ControllerOptions(
        horizontal_pod_autoscaler_sync_period=1.0))
    try:
        async with asyncio.timeout(30):
            await manager.start()
        yield manager
    finally:
        await manager.stop()
        await client.close()


async def make_workload(cluster: MetricsCluster, namespace: str, cores: list[float]) -> None:
    """Namespace, Deployment web (replicas = len(cores), no controller runs it) and its
    pods, Running and Ready for an hour, each using `cores[i]` CPUs of a 100m request."""
    client = cluster.client
    await client.resource("namespaces").create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    labels = {"app": "web"}
    container = {"name": "app", "image": "busybox:1.36",
                 "resources": {"requests": {"cpu": "100m"}}}
    await client.resource("deployments", "apps").create({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": len(cores), "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [container]}}}}, namespace)
    pods = client.resource("pods")
    started = rfc3339_ago(3600)
    for i, used in enumerate(cores):
        name = f"web-{i}"
        pod = await pods.create({"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": name, "labels": labels},
                                 "spec": {"nodeName": NODE, "containers": [container]}},
                                namespace)
        pod["status"] = {"phase": "Running", "startTime": started, "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": started}]}
        await pods.update_status(pod)
        cluster.kubelet.cores[(namespace, name)] = used


def rfc3339_ago(seconds: float) -> str:
    return rfc3339(datetime.now(UTC) - timedelta(seconds=seconds))


def hpa(target: int, minimum: int = 1, maximum: int = 5, **spec: Any) -> Obj:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": "web"},
                     "minReplicas": minimum, "maxReplicas": maximum,
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                         "type": "Utilization", "averageUtilization": target}}}], **spec}}


def kubectl(cluster: MetricsCluster) -> Callable[..., str]:
    binary = Path(sys.executable).with_name("kubectl")

    def run(*args: str) -> str:
        return subprocess.run([str(binary), f"--kubeconfig={cluster.kubeconfig}", *args],
                              capture_output=True, text=True, timeout=60, check=True).stdout

    return run


async def test_hpa_scales_the_deployment_up_to_what_the_cpu_metrics_ask(
        metrics_cluster: MetricsCluster, hpa_controller: ControllerManager) -> None:
    """Two pods at ~90% of their CPU request against a 50% target: ceil(2 * 90 / 50) = 4
    (within the default scale-up policy's 4 pods or 100% per 15 s)."""
    namespace = f"hpa-{uuid.uuid4().hex[:6]}"
    cluster = metrics_cluster
    await make_workload(cluster, namespace, [0.0903, 0.0903])
    hpas = cluster.client.resource("horizontalpodautoscalers", "autoscaling")
    await hpas.create(hpa(50), namespace)

    async def scaled() -> Obj | None:
        deployment = await cluster.client.resource("deployments", "apps").get("web", namespace)
        return deployment if deployment["spec"]["replicas"] != 2 else None

    deployment = await eventually(scaled, timeout=60, what="the Deployment scaled")
    assert deployment["spec"]["replicas"] == 4

    async def reported() -> Obj | None:
        current = await hpas.get("web", namespace)
        return current if (current.get("status") or {}).get("desiredReplicas") == 4 else None

    # The sync that scaled says so (2 current, SucceededRescale); a later one, which a slow
    # poll may read first (the period is 1 s here), finds the 4 it asked for, or 3 of them
    # on the way (and scales to 4 again).
    able_to_scale = {2: ("True", "SucceededRescale"), 3: ("True", "SucceededRescale"),
                     4: ("True", "ReadyForNewScale")}
    status = (await eventually(reported, timeout=30, what="the HPA status"))["status"]
    assert status["currentReplicas"] in able_to_scale
    assert status["lastScaleTime"]
    utilization = status["currentMetrics"][0]["resource"]["current"]["averageUtilization"]
    assert 90 <= utilization <= 91
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conditions == {"AbleToScale": able_to_scale[status["currentReplicas"]],
                          "ScalingActive": ("True", "ValidMetricFound"),
                          "ScalingLimited": ("False", "DesiredWithinRange")}
    rescales = await eventually(lambda: rescale_events(cluster, namespace), timeout=30,
                                what="the SuccessfulRescale event")
    assert rescales[0]["message"] == ("New size: 4; reason: cpu resource utilization "
                                      "(percentage of request) above target")
    assert rescales[0]["source"]["component"] == "horizontal-pod-autoscaler"
    # kubectl reads the HPA as it is by then: the controller may have synced again and
    # found the replicas it asked for (REPLICAS 4, AbleToScale ReadyForNewScale).
    out = await asyncio.to_thread(kubectl(cluster), "get", "hpa", "-n", namespace)
    assert re.search(rf"web\s+Deployment/web\s+cpu: {utilization}%/50%\s+1\s+5\s+[234]\s",
                     out), out
    described = await asyncio.to_thread(kubectl(cluster), "describe", "hpa", "web", "-n",
                                        namespace)
    assert re.search(r"AbleToScale\s+True\s+(SucceededRescale\s+the HPA controller was able "
                     r"to update the target scale to 4|ReadyForNewScale\s+recommended size "
                     r"matches current size)\n", described), described
    assert re.search(r"Normal\s+SuccessfulRescale\s+\S+\s+horizontal-pod-autoscaler\s+"
                     r"New size: 4; reason: cpu resource utilization \(percentage of request\) "
                     r"above target", described), described


async def test_hpa_without_metrics_reports_failed_get_resource_metric(
        metrics_cluster: MetricsCluster, hpa_controller: ControllerManager) -> None:
    """Pods the kubelet reports nothing for: ScalingActive False, FailedGetResourceMetric,
    and the Deployment keeps its replicas."""
    namespace = f"hpa-{uuid.uuid4().hex[:6]}"
    cluster = metrics_cluster
    await make_workload(cluster, namespace, [0.05])
    cluster.kubelet.cores.pop((namespace, "web-0"))
    hpas = cluster.client.resource("horizontalpodautoscalers", "autoscaling")
    await hpas.create(hpa(50), namespace)

    async def failed() -> Obj | None:
        current = await hpas.get("web", namespace)
        conditions = (current.get("status") or {}).get("conditions") or []
        active = next((c for c in conditions if c["type"] == "ScalingActive"), None)
        return active if active is not None and active["status"] == "False" else None

    active = await eventually(failed, timeout=30, what="ScalingActive False")
    assert active["reason"] == "FailedGetResourceMetric"
    assert active["message"] == (
        "the HPA was unable to compute the replica count: failed to get cpu utilization: "
        "unable to get metrics for resource cpu: no metrics returned from resource metrics "
        "API")
    deployment = await cluster.client.resource("deployments", "apps").get("web", namespace)
    assert deployment["spec"]["replicas"] == 1
    out = await asyncio.to_thread(kubectl(cluster), "get", "hpa", "-n", namespace)
    assert "cpu: <unknown>/50%" in out


async def test_scale_down_waits_out_the_stabilization_window(
        metrics_cluster: MetricsCluster, hpa_controller: ControllerManager) -> None:
    """Four pods at 10% of a 50% target: the 300 s default window holds the count (the
    first recommendation was the current 4); a 0 s scale-down window lets it drop to the
    recommendation, ceil(4 * 10 / 50) = 1."""
    namespace = f"hpa-{uuid.uuid4().hex[:6]}"
    cluster = metrics_cluster
    await make_workload(cluster, namespace, [0.0103] * 4)
    hpas = cluster.client.resource("horizontalpodautoscalers", "autoscaling")
    await hpas.create(hpa(50), namespace)

    async def stabilized() -> Obj | None:
        current = await hpas.get("web", namespace)
        conditions = (current.get("status") or {}).get("conditions") or []
        able = next((c for c in conditions if c["type"] == "AbleToScale"), None)
        return able if able is not None and able["reason"] == "ScaleDownStabilized" else None

    await eventually(stabilized, timeout=30, what="ScaleDownStabilized")
    deployment = await cluster.client.resource("deployments", "apps").get("web", namespace)
    assert deployment["spec"]["replicas"] == 4
    await hpas.patch("web", {"spec": {"behavior": {
        "scaleDown": {"stabilizationWindowSeconds": 0}}}}, namespace)

    async def scaled_down() -> Obj | None:
        scaled = await cluster.client.resource("deployments", "apps").get("web", namespace)
        return scaled if scaled["spec"]["replicas"] != 4 else None

    assert (await eventually(scaled_down, timeout=30, what="the scale-down"))[
        "spec"]["replicas"] == 1


async def rescale_events(cluster: MetricsCluster, namespace: str) -> list[Obj] | None:
    """The SuccessfulRescale events, once there is one (the recorder writes events after
    the step that records them)."""
    events = (await cluster.client.resource("events").list(namespace))["items"]
    return [e for e in events if e.get("reason") == "SuccessfulRescale"] or None


async def test_replicas_outside_min_and_max_go_back_to_the_bound_and_zero_disables(
        metrics_cluster: MetricsCluster, hpa_controller: ControllerManager) -> None:
    """Upstream's guards before any metric is read: a target above maxReplicas is set to
    it (SuccessfulRescale, "Current number of replicas above Spec.MaxReplicas"); a target
    at 0 replicas is left alone (ScalingActive False, ScalingDisabled)."""
    cluster = metrics_cluster
    hpas = cluster.client.resource("horizontalpodautoscalers", "autoscaling")
    deployments = cluster.client.resource("deployments", "apps")
    namespace = f"hpa-{uuid.uuid4().hex[:6]}"
    await make_workload(cluster, namespace, [0.05] * 4)
    await hpas.create(hpa(50, maximum=2), namespace)

    async def capped() -> Obj | None:
        deployment = await deployments.get("web", namespace)
        return deployment if deployment["spec"]["replicas"] == 2 else None

    await eventually(capped, timeout=30, what="the Deployment capped at maxReplicas")
    rescales = await eventually(lambda: rescale_events(cluster, namespace), timeout=30,
                                what="the SuccessfulRescale event")
    assert [e["message"] for e in rescales] == [
        "New size: 2; reason: Current number of replicas above Spec.MaxReplicas"]

    await deployments.patch("web", {"spec": {"replicas": 0}}, namespace)

    async def disabled() -> Obj | None:
        current = await hpas.get("web", namespace)
        conditions = (current.get("status") or {}).get("conditions") or []
        active = next((c for c in conditions if c["type"] == "ScalingActive"), None)
        return active if active is not None and active["reason"] == "ScalingDisabled" else None

    active = await eventually(disabled, timeout=30, what="ScalingDisabled")
    assert (active["status"], active["message"]) == (
        "False", "scaling is disabled since the replica count of the target is zero")
    assert (await deployments.get("web", namespace))["spec"]["replicas"] == 0


async def test_two_hpas_over_the_same_pods_are_an_ambiguous_selector(
        metrics_cluster: MetricsCluster, hpa_controller: ControllerManager) -> None:
    """validateAndParseSelector: once both HPAs' targets select the same pods, each says
    so (ScalingActive False, AmbiguousSelector) and computes nothing."""
    cluster = metrics_cluster
    hpas = cluster.client.resource("horizontalpodautoscalers", "autoscaling")
    namespace = f"hpa-{uuid.uuid4().hex[:6]}"
    await make_workload(cluster, namespace, [0.05, 0.05])
    for name in ("web", "web2"):
        body = hpa(50)
        body["metadata"]["name"] = name
        await hpas.create(body, namespace)

    async def ambiguous() -> list[Obj] | None:
        found = []
        for name in ("web", "web2"):
            current = await hpas.get(name, namespace)
            conditions = (current.get("status") or {}).get("conditions") or []
            active = next((c for c in conditions if c["type"] == "ScalingActive"), None)
            if active is None or active["reason"] != "AmbiguousSelector":
                return None
            found.append(active)
        return found

    for active in await eventually(ambiguous, timeout=30, what="AmbiguousSelector on both"):
        assert active["message"] == (
            "pods by selector app=web are controlled by multiple HPAs: "
            f"[{{web {namespace}}} {{web2 {namespace}}}]")
