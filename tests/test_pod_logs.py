"""`kubectl logs` end to end: API server pods/log -> the node's kubelet server -> log files.

The kubelet here is a real KubeletServer backed by a small provider that serves CRI-format
files the tests write; the API server finds it through the Node's status, as upstream does.
Real clients run in threads or subprocesses: the kubelet server shares the test's loop.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes import client, config
from kubernetes.client import ApiException

from minikube_py.api import Obj
from minikube_py.client.rest import Client
from minikube_py.cri_logs import container_log_path
from minikube_py.kubelet.server import ContainerNotFound, KubeletServer
from minikube_py.tracing.context import ANNOTATION as TRACE_ANNOTATION

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
KUBECTL = Path(sys.executable).with_name("kubectl")


def record(second: int, text: str, stream: str = "stdout", tag: str = "F") -> str:
    return f"2026-11-22T04:00:{second:02d}.123456789Z {stream} {tag} {text}\n"


@dataclass
class FakeHost:
    """A KubeletProvider over log files in a directory: what the kubelet would serve."""

    logs_root: Path
    pods: list[Obj] = field(default_factory=list)
    restarts: dict[tuple[str, str], int] = field(default_factory=dict)
    running: dict[tuple[str, str], bool] = field(default_factory=dict)

    def running_pods(self) -> list[Obj]:
        return self.pods

    def find_container_log(self, namespace: str, pod: str, container: str, previous: bool
                           ) -> tuple[Path, Callable[[], bool]] | None:
        uid = next(p["metadata"]["uid"] for p in self.pods if p["metadata"]["name"] == pod)
        restarts = self.restarts.get((pod, container), 0)
        if previous:
            if restarts == 0:
                raise ContainerNotFound(
                    f'previous terminated container "{container}" in pod "{pod}" not found')
            restarts -= 1
        path = container_log_path(self.logs_root, namespace, pod, uid, container, restarts)
        return path, lambda: not previous and self.running.get((pod, container), False)

    async def stats_summary(self) -> Obj:
        return {"node": {"nodeName": "fake"}, "pods": []}

    def write(self, pod: Obj, container: str, *records: str, restart: int = 0) -> None:
        meta = pod["metadata"]
        path = container_log_path(self.logs_root, meta["namespace"], meta["name"], meta["uid"],
                                  container, restart)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as file:
            file.write("".join(records))


@pytest.fixture
async def host(tmp_path: Path) -> FakeHost:
    return FakeHost(tmp_path / "logs")


@pytest.fixture
async def kubelet(host: FakeHost) -> AsyncIterator[KubeletServer]:
    server = KubeletServer(host, "127.0.0.1", 0)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def node(api_client: Client, kubelet: KubeletServer) -> AsyncIterator[str]:
    """A Node whose status points at the test's kubelet server; deleted after the test."""
    name = f"logs-{uuid.uuid4().hex[:8]}"
    nodes = api_client.resource("nodes")
    created = await nodes.create({"apiVersion": "v1", "kind": "Node",
                                  "metadata": {"name": name}})
    created["status"] = {
        "addresses": [{"type": "Hostname", "address": name},
                      {"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}},
    }
    await nodes.update_status(created)
    yield name
    await nodes.delete(name)


@pytest.fixture
async def make_pod(api_client: Client, namespace: str, host: FakeHost
                   ) -> AsyncIterator[Callable[..., Any]]:
    """Create a pod (bound to a node unless node is None) the fake kubelet knows about."""
    pods = api_client.resource("pods")
    created: list[str] = []

    async def make(name: str, node: str | None, containers: tuple[str, ...] = ("app",),
                   init_containers: tuple[str, ...] = (), known: bool = True) -> Obj:
        spec: Obj = {"containers": [{"name": c, "image": "busybox"} for c in containers]}
        if init_containers:
            spec["initContainers"] = [{"name": c, "image": "busybox"} for c in init_containers]
        if node:
            spec["nodeName"] = node
        pod = await pods.create({"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": name, "namespace": namespace},
                                 "spec": spec})
        created.append(name)
        if known:
            host.pods.append(pod)
        return pod

    yield make
    for name in created:
        await pods.delete(name, namespace, grace_period_seconds=0)


@pytest.fixture
def v1(kubeconfig: Path) -> Iterator[client.CoreV1Api]:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.CoreV1Api(api)
    api.close()


async def logs(kubectl: Kubectl, *args: str, check: bool = True
               ) -> subprocess.CompletedProcess[str]:
    """kubectl in a thread: the kubelet server it ends up talking to runs on this loop."""
    return await asyncio.to_thread(kubectl, "logs", *args, check=check)


# -- kubectl logs ------------------------------------------------------------------------

async def test_kubectl_logs_prints_the_containers_log(kubectl: Kubectl, namespace: str,
                                                      node: str, make_pod: Any,
                                                      host: FakeHost) -> None:
    pod = await make_pod("web", node)
    host.write(pod, "app", record(0, "hello"), record(1, "err", "stderr"),
               record(2, "a long ", tag="P"), record(3, "line"))
    result = await logs(kubectl, "-n", namespace, "web")
    assert result.stdout == "hello\nerr\na long line\n"


async def test_kubectl_logs_container_flag_picks_the_container(
        kubectl: Kubectl, namespace: str, node: str, make_pod: Any, host: FakeHost) -> None:
    pod = await make_pod("multi", node, ("app", "sidecar"), ("setup",))
    host.write(pod, "app", record(0, "from app"))
    host.write(pod, "sidecar", record(0, "from sidecar"))
    host.write(pod, "setup", record(0, "from setup"))
    assert (await logs(kubectl, "-n", namespace, "multi", "-c", "sidecar")).stdout == (
        "from sidecar\n")
    assert (await logs(kubectl, "-n", namespace, "multi", "-c", "setup")).stdout == (
        "from setup\n")


async def test_kubectl_logs_tail_and_timestamps(kubectl: Kubectl, namespace: str, node: str,
                                                make_pod: Any, host: FakeHost) -> None:
    pod = await make_pod("web", node)
    host.write(pod, "app", *(record(i, f"line {i}") for i in range(10)))
    assert (await logs(kubectl, "-n", namespace, "web", "--tail=2")).stdout == (
        "line 8\nline 9\n")
    stamped = await logs(kubectl, "-n", namespace, "web", "--tail=1", "--timestamps")
    assert stamped.stdout == "2026-11-22T04:00:09.123456789Z line 9\n"
    assert (await logs(kubectl, "-n", namespace, "web", "--limit-bytes=9")).stdout == (
        "line 0\nli")


async def test_kubectl_logs_previous_reads_the_last_terminated_instance(
        kubectl: Kubectl, namespace: str, node: str, make_pod: Any, host: FakeHost) -> None:
    pod = await make_pod("web", node)
    host.write(pod, "app", record(0, "before the crash"), restart=0)
    host.write(pod, "app", record(5, "after the restart"), restart=1)
    host.restarts[("web", "app")] = 1
    assert (await logs(kubectl, "-n", namespace, "web")).stdout == "after the restart\n"
    assert (await logs(kubectl, "-n", namespace, "web", "--previous")).stdout == (
        "before the crash\n")


async def test_kubectl_logs_previous_without_one_says_so(kubectl: Kubectl, namespace: str,
                                                         node: str, make_pod: Any,
                                                         host: FakeHost) -> None:
    pod = await make_pod("web", node)
    host.write(pod, "app", record(0, "only run"))
    result = await logs(kubectl, "-n", namespace, "web", "-p", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == ('Error from server (BadRequest): previous terminated '
                                     'container "app" in pod "web" not found')


async def test_kubectl_logs_follow_streams_lines_as_they_are_written(
        kubeconfig: Path, namespace: str, node: str, make_pod: Any, host: FakeHost) -> None:
    pod = await make_pod("web", node)
    host.write(pod, "app", record(0, "first"))
    host.running[("web", "app")] = True
    process = await asyncio.create_subprocess_exec(
        str(KUBECTL), f"--kubeconfig={kubeconfig}", "logs", "-f", "-n", namespace, "web",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    try:
        async with asyncio.timeout(15):
            assert await process.stdout.readline() == b"first\n"
        host.write(pod, "app", record(1, "second"))
        async with asyncio.timeout(15):
            assert await process.stdout.readline() == b"second\n"
        host.write(pod, "app", record(2, "third"))
        async with asyncio.timeout(15):
            assert await process.stdout.readline() == b"third\n"
        host.write(pod, "app", record(3, "last words"))
        host.running[("web", "app")] = False  # the container exits: the stream ends
        async with asyncio.timeout(15):
            assert await process.stdout.read() == b"last words\n"
        async with asyncio.timeout(15):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


# -- errors, through the official Python client ------------------------------------------

async def read_log(v1: client.CoreV1Api, name: str, namespace: str, **options: Any) -> str:
    return await asyncio.to_thread(v1.read_namespaced_pod_log, name, namespace, **options)


async def api_error(v1: client.CoreV1Api, name: str, namespace: str, **options: Any
                    ) -> tuple[int, Obj]:
    with pytest.raises(ApiException) as caught:
        await read_log(v1, name, namespace, **options)
    return caught.value.status, json.loads(caught.value.body)


async def test_python_client_reads_the_only_containers_log(v1: client.CoreV1Api,
                                                           namespace: str, node: str,
                                                           make_pod: Any, host: FakeHost
                                                           ) -> None:
    pod = await make_pod("web", node)
    host.write(pod, "app", record(0, "one"), record(1, "two", "stderr"))
    assert await read_log(v1, "web", namespace) == "one\ntwo\n"
    assert await read_log(v1, "web", namespace, stream="Stderr") == "two\n"


@pytest.mark.parametrize(("pod_name", "options", "code", "reason", "message"), [
    ("missing", {}, 404, "NotFound", 'pods "missing" not found'),
    ("multi", {}, 400, "BadRequest",
     "a container name must be specified for pod multi, choose one of: [setup app sidecar]"),
    ("multi", {"container": "nope"}, 400, "BadRequest",
     "container nope is not valid for pod multi"),
    ("multi", {"container": "app", "previous": True}, 400, "BadRequest",
     'previous terminated container "app" in pod "multi" not found'),
    ("multi", {"container": "app", "tail_lines": -1}, 422, "Invalid",
     'PodLogOptions "multi" is invalid: tailLines: Invalid value: -1: must be greater than or '
     "equal to 0"),
    ("stranger", {}, 404, "NotFound",
     "the server could not find the requested resource ( pods/log stranger)"),
])
async def test_log_errors_are_statuses_with_upstreams_messages(
        v1: client.CoreV1Api, namespace: str, node: str, make_pod: Any, pod_name: str,
        options: Obj, code: int, reason: str, message: str) -> None:
    await make_pod("multi", node, ("app", "sidecar"), ("setup",))
    await make_pod("stranger", node, known=False)  # bound to the node, unknown to its kubelet
    status, body = await api_error(v1, pod_name, namespace, **options)
    assert (status, body["kind"], body["code"], body["reason"], body["message"]) == (
        code, "Status", code, reason, message)


async def test_log_of_an_unscheduled_pod_is_empty(api_client: Client, namespace: str,
                                                  make_pod: Any) -> None:
    await make_pod("pending", None)
    session = api_client.session
    url = f"{api_client.config.server}/api/v1/namespaces/{namespace}/pods/pending/log"
    async with session.get(url) as answer:
        assert answer.status == 204
        assert await answer.read() == b""


async def test_a_node_without_an_address_is_an_internal_error(
        api_client: Client, v1: client.CoreV1Api, namespace: str, make_pod: Any) -> None:
    nodes = api_client.resource("nodes")
    name = f"logs-{uuid.uuid4().hex[:8]}"
    await nodes.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    try:
        await make_pod("web", name)
        status, body = await api_error(v1, "web", namespace)
    finally:
        await nodes.delete(name)
    assert (status, body["reason"]) == (500, "InternalError")
    assert body["message"] == ("Internal error occurred: no preferred addresses found; "
                               "known addresses: []")


async def test_discovery_lists_pods_log(kubectl: Kubectl) -> None:
    resources = json.loads((await asyncio.to_thread(kubectl, "get", "--raw", "/api/v1")).stdout)
    entry = next(r for r in resources["resources"] if r["name"] == "pods/log")
    assert (entry["kind"], entry["verbs"], entry["namespaced"]) == ("Pod", ["get"], True)


# -- the kubelet server on its own -------------------------------------------------------

async def kubelet_get(kubelet: KubeletServer, path: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{kubelet.port}{path}") as answer:
            return answer.status, answer.headers.get("Content-Type", ""), await answer.text()


async def test_kubelet_answers_healthz_pods_and_stats(kubelet: KubeletServer,
                                                      host: FakeHost) -> None:
    # the trace context the API server shows the kubelet is no client's to see
    host.pods.append({"metadata": {"name": "web", "namespace": "ns", "uid": "u1",
                                   "annotations": {TRACE_ANNOTATION: "00-a-b-01"}}})
    assert (await kubelet_get(kubelet, "/healthz"))[::2] == (200, "ok")
    status, _, body = await kubelet_get(kubelet, "/pods")
    pods = json.loads(body)
    assert (status, pods["kind"], pods["apiVersion"]) == (200, "PodList", "v1")
    assert [p["metadata"] for p in pods["items"]] == [
        {"name": "web", "namespace": "ns", "uid": "u1"}]
    status, _, body = await kubelet_get(kubelet, "/stats/summary")
    assert (status, json.loads(body)["node"]["nodeName"]) == (200, "fake")


async def test_kubelet_streams_container_logs_as_plain_text(kubelet: KubeletServer,
                                                            host: FakeHost) -> None:
    pod = {"metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
           "spec": {"containers": [{"name": "app"}]}}
    host.pods.append(pod)
    host.write(pod, "app", record(0, "one"), record(1, "two"), record(2, "three"))
    status, content_type, body = await kubelet_get(
        kubelet, "/containerLogs/ns/web/app?tail=2&timestamps=1")
    assert (status, content_type) == (200, "text/plain; charset=utf-8")
    assert body == ("2026-11-22T04:00:01.123456789Z two\n"
                    "2026-11-22T04:00:02.123456789Z three\n")


@pytest.mark.parametrize(("path", "code", "message"), [
    ("/containerLogs/ns/web/app?tailLines=x", 400,
     'tailLines: Invalid value: "x": must be an integer'),
    ("/containerLogs/ns/web/app?limitBytes=0", 400,
     "limitBytes: Invalid value: 0: must be greater than 0"),
    ("/containerLogs/ns/nope/app", 404, 'pod "nope" does not exist'),
    ("/containerLogs/ns/web/nope", 404, 'container "nope" not found in pod "web"'),
    ("/containerLogs/ns/web/app?previous=true", 400,
     'previous terminated container "app" in pod "web" not found'),
])
async def test_kubelet_rejects_bad_log_requests_with_one_line(
        kubelet: KubeletServer, host: FakeHost, path: str, code: int, message: str) -> None:
    host.pods.append({"metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
                      "spec": {"containers": [{"name": "app"}]}})
    status, _, body = await kubelet_get(kubelet, path)
    assert (status, body) == (code, message)


async def test_kubelet_stop_ends_a_follow_in_progress(kubelet: KubeletServer,
                                                      host: FakeHost) -> None:
    pod = {"metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
           "spec": {"containers": [{"name": "app"}]}}
    host.pods.append(pod)
    host.running[("web", "app")] = True
    host.write(pod, "app", record(0, "one"))
    async with aiohttp.ClientSession() as session:
        url = f"http://127.0.0.1:{kubelet.port}/containerLogs/ns/web/app?follow=true"
        async with session.get(url) as answer:
            async with asyncio.timeout(5):
                assert await answer.content.readline() == b"one\n"
            async with asyncio.timeout(5):
                await kubelet.stop()
            with pytest.raises(aiohttp.ClientPayloadError):
                async with asyncio.timeout(5):
                    await answer.content.read()
