"""containerd restarted under running pods: the containers live on, untouched.

Each container runs under its own shim, which outlives containerd; a containerd started
again with the same config re-attaches to the shims (runtime_setup.py). The kubelet's CRI
client reconnects and the kubelet recreates nothing (minikube_py/cri.py, pleg.py, kuberuntime.py).

The module has a node of its own (not the session's, which the other tests share): a
containerd with the shipped images, restarted by the tests on purpose.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.rest import Client
from minikube_py.cluster.runtime_setup import (
    Containerd,
    NodeRuntimeConfig,
    free_pod_cidr,
    load_image,
    runtime_missing,
)
from minikube_py.cri import RemoteRuntime
from minikube_py.gen.cri import api_pb2
from minikube_py.images.catalog import build_catalog
from minikube_py.kubelet.kubelet import Kubelet, KubeletConfig
from minikube_py.kubelet.node_status import read_host_info
from minikube_py.process import free_port
from tests.api_helpers import eventually
from tests.node_fixtures import delete_node
from tests.test_runtime_setup import http_get, running_pod

pytestmark = pytest.mark.slow
SIGNALS = {"SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL}
OUTAGE_SECONDS = 3.0


@pytest.fixture(scope="module")
async def restartable_node(fast_tmp: Path) -> AsyncIterator[Containerd]:
    """A containerd node of the module's own, with pause, busybox and echo imported."""
    reason = runtime_missing()
    if reason is not None:
        pytest.skip(reason)
    archives = await asyncio.to_thread(build_catalog, fast_tmp / "images")
    config = NodeRuntimeConfig(f"restart-{os.getpid()}",
                               fast_tmp / f"restart-node-{uuid.uuid4().hex[:8]}",
                               free_pod_cidr(seed=os.getpid() + 192))
    async with Containerd(config) as containerd:
        for archive in archives:
            await load_image(config, archive.path)
        yield containerd


async def restart(containerd: Containerd, signum: int,
                  while_down: Callable[[], Awaitable[None]] | None = None) -> None:
    """Signal containerd alone (not its process group, not its shims), wait until it has
    exited (and for `while_down`), and start it again with the same config."""
    pid = containerd.pid
    assert pid is not None
    os.kill(pid, signum)
    deadline = time.monotonic() + 15
    while containerd.running:
        assert time.monotonic() < deadline, f"containerd (pid {pid}) did not exit"
        await asyncio.sleep(0.02)
    if while_down is not None:
        await while_down()
    await containerd.start()
    assert containerd.pid != pid


async def processes(runtime: RemoteRuntime) -> dict[str, tuple[str, int]]:
    """Every sandbox and container the node runs: id -> (state, pid of its process), as
    CRI's verbose status says."""
    found: dict[str, tuple[str, int]] = {}
    for sandbox in (await runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest())).items:
        status = await runtime.pod_sandbox_status(api_pb2.PodSandboxStatusRequest(
            pod_sandbox_id=sandbox.id, verbose=True))
        found[sandbox.id] = (api_pb2.PodSandboxState.Name(status.status.state),
                             json.loads(status.info["info"])["pid"])
    for container in (await runtime.list_containers(api_pb2.ListContainersRequest())).containers:
        status = await runtime.container_status(api_pb2.ContainerStatusRequest(
            container_id=container.id, verbose=True))
        found[container.id] = (api_pb2.ContainerState.Name(status.status.state),
                               json.loads(status.info["info"])["pid"])
    return found


@pytest.mark.parametrize("signal_name", SIGNALS)
async def test_a_restarted_containerd_keeps_its_containers_and_their_processes(
        restartable_node: Containerd, fast_tmp: Path, signal_name: str) -> None:
    async with RemoteRuntime(restartable_node.endpoint) as runtime, running_pod(
            runtime, fast_tmp / "pod-logs", "echo", "localhost/echo:1.0") as pod:
        url = f"http://{pod.ip}:8080/"
        assert await asyncio.to_thread(http_get, url) == f"pod=echo ip={pod.ip}\n"
        before = await processes(runtime)
        assert set(before) == {pod.sandbox_id, *pod.container_ids}
        assert {state for state, _ in before.values()} == {"SANDBOX_READY", "CONTAINER_RUNNING"}

        await restart(restartable_node, SIGNALS[signal_name])

        # the same client: its channel reconnects to the new containerd by itself
        assert await processes(runtime) == before
        assert all(Path(f"/proc/{pid}").exists() for _, pid in before.values())
        assert await asyncio.to_thread(http_get, url) == f"pod=echo ip={pod.ip}\n"
        sandbox = await runtime.pod_sandbox_status(
            api_pb2.PodSandboxStatusRequest(pod_sandbox_id=pod.sandbox_id))
        assert sandbox.status.network.ip == pod.ip


# -- the kubelet across a restart ---------------------------------------------------------

@pytest.fixture
async def kubelet(restartable_node: Containerd, kubeconfig: Path, fast_tmp: Path,
                  apiserver: Any) -> AsyncIterator[Kubelet]:
    """A kubelet in this process on the module's node, as upstream's on a real node."""
    name = f"restart-kubelet-{os.getpid()}"
    root = fast_tmp / "kubelet" / name
    root.mkdir(parents=True, exist_ok=True)
    config = KubeletConfig(node_name=name, root_dir=root, logs_root=root / "logs",
                           pod_cidr=restartable_node.config.pod_cidr, address="127.0.0.1",
                           port=free_port(), sync_frequency=10.0)
    client = Client.from_kubeconfig(kubeconfig, user_agent="kubelet")
    runtime = RemoteRuntime(restartable_node.endpoint)
    host = read_host_info(root, node_ip="127.0.0.1", hostname=name)
    kubelet = Kubelet(config, client, runtime, host)
    try:
        async with asyncio.timeout(60):
            await kubelet.start()
        yield kubelet
    finally:
        await kubelet.stop()
        await runtime.close()
        await client.close()
        await delete_node(kubeconfig, name)


def ready(pod: Obj) -> bool:
    conditions = {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions", [])}
    return conditions.get("Ready") == "True"


def seen(pod: Obj) -> tuple[str, str, int, bool]:
    """What must not change: the pod's IP, its container's id and restarts, Ready."""
    status = pod.get("status") or {}
    container = (status.get("containerStatuses") or [{}])[0]
    return (status.get("podIP", ""), container.get("containerID", ""),
            container.get("restartCount", -1), ready(pod))


@pytest.mark.parametrize("signal_name", SIGNALS)
async def test_the_kubelet_recreates_nothing_when_containerd_restarts(
        restartable_node: Containerd, kubelet: Kubelet, api_client: Client, namespace: str,
        caplog: pytest.LogCaptureFixture, signal_name: str) -> None:
    # probes every second that a failing runtime call would turn against the pod at once:
    # an exec liveness probe (one failure restarts the container), an exec readiness probe
    # (timeoutSeconds: an exec of `true` that takes over 1 s, the default, on a machine at
    # load 10 has failed the readiness probe once: a timeout, not the runtime's outage)
    probe = {"exec": {"command": ["true"]}, "periodSeconds": 1, "failureThreshold": 1,
             "timeoutSeconds": 10}
    pods = api_client.resource("pods")
    await pods.create({"metadata": {"name": "steady"}, "spec": {
        "nodeName": kubelet.node_name, "terminationGracePeriodSeconds": 2,
        "containers": [{"name": "echo", "image": "localhost/echo:1.0",
                        "livenessProbe": probe, "readinessProbe": probe}]}}, namespace)

    async def running_and_ready() -> Obj | None:
        pod = await pods.get("steady", namespace)
        return pod if ready(pod) else None

    pod = await eventually(running_and_ready, timeout=60, what="the pod to be ready")
    expected = seen(pod)
    assert expected[1].startswith("containerd://") and expected[2] == 0
    sandboxes = await kubelet.runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
        filter=api_pb2.PodSandboxFilter(label_selector={"io.kubernetes.pod.uid":
                                                        pod["metadata"]["uid"]})))
    sandbox_ids = [sandbox.id for sandbox in sandboxes.items]

    # every status the kubelet writes from here on, through a watch from this version
    watched: list[tuple[str, str, int, bool]] = []
    watch = asyncio.create_task(_watch_pod(api_client, namespace, "steady",
                                           pod["metadata"]["resourceVersion"], watched))
    runtime = kubelet.runtime
    assert isinstance(runtime, RemoteRuntime)

    async def noticed_for_a_while() -> None:
        """containerd stays down until the kubelet has found it gone and 3 s more: three
        relists and three periods of each probe fail meanwhile."""
        async def noticed() -> bool:
            since = runtime.unavailable_since
            return since is not None and time.monotonic() - since > OUTAGE_SECONDS
        await eventually(noticed, timeout=30, interval=0.1,
                         what="the kubelet to find containerd gone")

    try:
        with caplog.at_level(logging.INFO, logger="minikube_py.kubelet"), \
                caplog.at_level(logging.INFO, logger="minikube_py.cri"):
            await restart(restartable_node, SIGNALS[signal_name], noticed_for_a_while)
            relists = kubelet.pleg.relists

            async def settled() -> bool:
                # the PLEG saw the node three times after the restart: a container the
                # kubelet replaced, or a probe it failed, would have shown by now
                return kubelet.pleg.relists >= relists + 3

            await eventually(settled, timeout=30, what="three relists after the restart")
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)

    assert all(status == expected for status in watched), watched
    assert seen(await pods.get("steady", namespace)) == expected
    after = await kubelet.runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
        filter=api_pb2.PodSandboxFilter(label_selector={"io.kubernetes.pod.uid":
                                                        pod["metadata"]["uid"]})))
    assert [sandbox.id for sandbox in after.items] == sandbox_ids
    # the probes that could not run while containerd was down errored (upstream's
    # "probe errored" events); none failed, so nothing was killed or recreated
    events = [(event["reason"], event["message"]) for event in (await api_client.resource(
        "events").list(namespace))["items"] if event["involvedObject"]["name"] == "steady"]
    assert not [(reason, message) for reason, message in events
                if reason in ("Killing", "SandboxChanged", "BackOff", "Failed")
                or "probe failed" in message], events
    # one line said containerd was gone, one that it was back; no traceback
    records = [r for r in caplog.records
               if r.name.startswith(("minikube_py.kubelet", "minikube_py.cri"))]
    assert not [r for r in records if r.exc_info], "a traceback was logged"
    warnings = [(r.name, r.getMessage()) for r in records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0][0] == "minikube_py.cri", warnings
    assert "is unavailable, reconnecting" in warnings[0][1]
    assert any("answers again" in r.getMessage() for r in records)
    await pods.delete("steady", namespace, grace_period_seconds=0)


async def _watch_pod(api: Client, namespace: str, name: str, since: str,
                     statuses: list[tuple[str, str, int, bool]]) -> None:
    async for _, pod in api.resource("pods").watch(
            namespace, resource_version=since, field_selector=f"metadata.name={name}"):
        statuses.append(seen(pod))
