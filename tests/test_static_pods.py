"""Static pods end to end: manifests in a folder, run by a real kubelet on the session's
containerd node before and without any API server, and their mirror pods in the API once
one answers (upstream's pkg/kubelet/config/file.go and pod/mirror_client.go).

The first test has a kubelet of its own whose API server is not there when it starts,
the second a kubelet process that never has one. The others share the module's kubelet,
on the session's API server; a manifest that is no pod lies in its folder all along, and
every other static pod runs regardless. (One kubelet per containerd: the first two run,
and stop, before the module's kubelet starts.) The module's kubelet runs in this
process, so kubectl, which waits on it, runs in a thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.components import KubeletProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig
from minikube_py.cri import RemoteRuntime
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.kubelet import Kubelet, KubeletConfig
from minikube_py.kubelet.kuberuntime_sandbox import DNSSettings, sandbox_config
from minikube_py.kubelet.node_status import read_host_info
from minikube_py.process import free_port
from tests.api_helpers import eventually

pytestmark = pytest.mark.slow
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
BUSYBOX = "localhost/busybox:1.36"
HASH = "kubernetes.io/config.hash"
MIRROR = "kubernetes.io/config.mirror"


def static_pod(name: str, namespace: str, script: str, **spec: Any) -> Obj:
    """A static pod's manifest: one busybox container running `script`."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"tier": "static"}},
            "spec": {"containers": [{"name": "main", "image": BUSYBOX,
                                     "command": ["sh", "-c", script]}],
                     "terminationGracePeriodSeconds": 2, **spec}}


class StaticNode:
    """A kubelet with a manifests folder, in this process, on the containerd node."""

    def __init__(self, name: str, root: Path, kubeconfig: Path, containerd: Any) -> None:
        self.name = name
        self.manifests = root / "manifests"
        self.manifests.mkdir(parents=True)
        self.config = KubeletConfig(
            node_name=name, root_dir=root, logs_root=root / "logs",
            pod_cidr=containerd.pod_cidr, address="127.0.0.1", port=free_port(),
            eviction_hard="memory.available<1Mi", backoff_initial=1.0, backoff_max=8.0,
            static_pod_path=self.manifests)
        self.client = Client.from_kubeconfig(kubeconfig, user_agent="kubelet")
        self.runtime = RemoteRuntime(containerd.endpoint)
        host = read_host_info(root, node_ip="127.0.0.1", hostname=name)
        self.kubelet = Kubelet(self.config, self.client, self.runtime, host)
        self._stopped = False

    def write(self, file: str, pod: Obj) -> None:
        """Put a manifest in place as an editor would: a new file renamed over the old."""
        temporary = self.manifests / f".{file}.tmp"
        temporary.write_text(json.dumps(pod))
        os.replace(temporary, self.manifests / file)

    def mirror_name(self, name: str) -> str:
        return f"{name}-{self.name}"

    async def running(self, uid: str) -> list[Any]:
        """The running containers of the pod with this uid, as containerd lists them."""
        answer = await self.runtime.list_containers(api_pb2.ListContainersRequest(
            filter=api_pb2.ContainerFilter(label_selector={"io.kubernetes.pod.uid": uid})))
        return [c for c in answer.containers if c.state == api_pb2.CONTAINER_RUNNING]

    async def left_in_runtime(self, uid: str) -> bool:
        return uid in await self.kubelet.runtime_manager.running_pod_uids()

    async def stop(self, api: Client) -> None:
        """Remove every manifest and let the kubelet stop its static pods and delete
        their mirror pods; then stop the kubelet and delete its Node."""
        if self._stopped:
            return
        self._stopped = True
        for manifest in self.manifests.iterdir():
            manifest.unlink()
        if self.kubelet.running:
            async def all_gone() -> bool:
                return not (self.kubelet.mirror_pods or self.kubelet._static_stopping
                            or await self.kubelet.runtime_manager.running_pod_uids())
            with suppress(AssertionError):
                await eventually(all_gone, timeout=60, interval=0.2,
                                 what="the static pods to stop")
        await self.kubelet.stop()
        await self.runtime.close()
        await self.client.close()
        with suppress(NotFound):
            await api.resource("nodes").delete(self.name)


async def mirror_pod(api: Client, namespace: str, name: str, check: Callable[[Obj], bool],
                     timeout: float = 60.0, what: str = "") -> Obj:
    last: list[Obj] = []

    async def probe() -> Obj | None:
        try:
            pod = await api.resource("pods").get(name, namespace)
        except NotFound:
            return None
        last[:] = [pod]
        return pod if check(pod) else None
    try:
        return await eventually(probe, timeout=timeout, interval=0.2,
                                what=what or f"mirror pod {namespace}/{name}")
    except AssertionError as error:
        seen = json.dumps(last[0].get("status"), indent=1) if last else "no such pod"
        raise AssertionError(f"{error}; its status was {seen}") from None


def running_and_ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    return status.get("phase") == "Running" and conditions.get("Ready") == "True"


def container_id(pod: Obj) -> str:
    return str(pod["status"]["containerStatuses"][0]["containerID"]).partition("://")[2]


def refuses_connections(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


async def test_a_static_pod_runs_without_an_api_server_and_gets_its_mirror_pod_once_one_answers(
        containerd_node: Any, etcd: Any, fast_tmp: Path, api_client: Client,
        namespace: str) -> None:
    port = free_port()
    kubeconfig = write_kubeconfig(fast_tmp / f"early-{port}.kubeconfig",
                                  f"http://127.0.0.1:{port}")
    node = StaticNode(f"early-{os.getpid()}", fast_tmp / f"early-{port}", kubeconfig,
                      containerd_node)
    # what a kubelet that ran before left of a pod the API server may still hold
    left = {"metadata": {"name": "left", "namespace": namespace, "uid": f"left-{port}"},
            "spec": {}}
    config = sandbox_config(left, 0, logs_root=node.config.logs_root, dns=DNSSettings())
    Path(config.log_directory).mkdir(parents=True)
    left_sandbox = (await node.runtime.run_pod_sandbox(
        api_pb2.RunPodSandboxRequest(config=config))).pod_sandbox_id
    try:
        node.write("web.yaml", static_pod("web", namespace, "echo started; sleep 3600"))
        node.kubelet.run_in_background()

        async def started() -> list[Any] | None:
            uids = list(node.kubelet.pods)
            return await node.running(uids[0]) if uids else None
        (first,) = await eventually(started, timeout=60, interval=0.2,
                                    what="the static pod's container to run")
        # nothing answered the kubelet meanwhile: it never synced with an API server
        assert refuses_connections(port) and not node.kubelet.ready.is_set()
        (uid,) = node.kubelet.pods
        # and until it has, it removes nothing it does not know (upstream's sourcesReady)
        relists = node.kubelet.pleg.relists

        async def relisted() -> bool:
            return node.kubelet.pleg.relists >= relists + 2
        await eventually(relisted, what="two more PLEG relists")
        assert await node.left_in_runtime(left["metadata"]["uid"])

        async with APIServerProcess([etcd.client_url], fast_tmp / f"early-{port}.log",
                                    port=port, extra_args=(
                                        "--disable-admission-plugins=ServiceAccount",)):
            name = node.mirror_name("web")
            mirror = await mirror_pod(api_client, namespace, name, running_and_ready,
                                      timeout=120, what="the mirror pod, Running and Ready")
            metadata = mirror["metadata"]
            annotations = metadata["annotations"]
            assert annotations[HASH] == annotations[MIRROR] == uid != metadata["uid"]
            assert annotations["kubernetes.io/config.source"] == "file"
            assert annotations["kubernetes.io/config.seen"]
            api_node = await api_client.resource("nodes").get(node.name)
            assert metadata["ownerReferences"] == [{
                "apiVersion": "v1", "kind": "Node", "name": node.name,
                "uid": api_node["metadata"]["uid"], "controller": True}]
            assert metadata["labels"] == {"tier": "static"}
            assert mirror["spec"]["nodeName"] == node.name
            # the container the kubelet started alone is the one the mirror pod shows
            assert container_id(mirror) == first.id
            assert mirror["status"]["containerStatuses"][0]["restartCount"] == 0

            # the API server has no such pod: now the kubelet removes what was left
            async def left_removed() -> bool:
                return not await node.left_in_runtime(left["metadata"]["uid"])
            await eventually(left_removed, timeout=30, interval=0.2,
                             what="the sandbox of the pod no source has removed")
            await node.stop(api_client)
    finally:
        with suppress(Exception):  # gone already, when the kubelet got to it
            await node.runtime.stop_pod_sandbox(
                api_pb2.StopPodSandboxRequest(pod_sandbox_id=left_sandbox))
            await node.runtime.remove_pod_sandbox(
                api_pb2.RemovePodSandboxRequest(pod_sandbox_id=left_sandbox))
        await node.stop(api_client)


async def test_the_kubelet_process_runs_the_static_pods_of_its_pod_manifest_path(
        containerd_node: Any, fast_tmp: Path) -> None:
    nowhere = free_port()
    kubeconfig = write_kubeconfig(fast_tmp / f"alone-{nowhere}.kubeconfig",
                                  f"http://127.0.0.1:{nowhere}")
    root = fast_tmp / f"alone-{nowhere}"
    manifests = root / "manifests"
    manifests.mkdir(parents=True)
    node_name = f"alone-{os.getpid()}"
    (manifests / "web.yaml").write_text(json.dumps(static_pod("web", "", "sleep 3600")))
    runtime = RemoteRuntime(containerd_node.endpoint)

    async def pod_uids() -> dict[str, tuple[str, str]]:
        answer = await runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
            filter=api_pb2.PodSandboxFilter(label_selector={
                "io.kubernetes.pod.name": f"web-{node_name}"})))
        return {s.metadata.uid: (s.metadata.namespace, s.metadata.name) for s in answer.items
                if s.state == api_pb2.SANDBOX_READY}
    try:
        async with KubeletProcess(
                kubeconfig, root / "kubelet.log", node_name=node_name,
                runtime_endpoint=containerd_node.endpoint, root_dir=root,
                pod_cidr=containerd_node.pod_cidr, port=free_port(),
                extra_args=(f"--pod-manifest-path={manifests}", "--file-check-frequency=500ms",
                            "--eviction-hard=memory.available<1Mi")):
            started = await eventually(pod_uids, timeout=60, interval=0.2,
                                       what="the static pod's sandbox")
            assert list(started.values()) == [("default", f"web-{node_name}")]
            assert refuses_connections(nowhere)
            (manifests / "web.yaml").unlink()

            async def stopped() -> bool:
                return not await pod_uids()
            await eventually(stopped, timeout=60, interval=0.2, what="the static pod stopped")
    finally:
        await runtime.close()


@pytest.fixture(scope="module")
async def node(containerd_node: Any, kubeconfig: Path, fast_tmp: Path,
               apiserver: Any) -> AsyncIterator[StaticNode]:
    running = StaticNode(f"static-{os.getpid()}", fast_tmp / "static-node", kubeconfig,
                         containerd_node)
    (running.manifests / "broken.yaml").write_text("apiVersion: v1\nkind: Pod\nspec: [\n")
    async with Client.from_kubeconfig(kubeconfig) as api:
        try:
            async with asyncio.timeout(60):
                await running.kubelet.start()
            yield running
        finally:
            await running.stop(api)


async def test_deleting_the_mirror_pod_brings_it_back_and_leaves_the_pod_running(
        node: StaticNode, api_client: Client, namespace: str, kubectl: Kubectl) -> None:
    node.write("keep.yaml", static_pod("keep", namespace, "sleep 3600"))
    name = node.mirror_name("keep")
    before = await mirror_pod(api_client, namespace, name, running_and_ready)
    deleted = await asyncio.to_thread(kubectl, "delete", "pod", name, "-n", namespace)
    assert f'pod "{name}" deleted' in deleted.stdout
    after = await mirror_pod(
        api_client, namespace, name,
        lambda pod: pod["metadata"]["uid"] != before["metadata"]["uid"]
        and running_and_ready(pod), what="a new mirror pod, Running")
    assert after["metadata"]["annotations"][MIRROR] == before["metadata"]["annotations"][MIRROR]
    assert container_id(after) == container_id(before)
    assert after["status"]["containerStatuses"][0]["restartCount"] == 0


async def test_a_changed_manifest_restarts_the_pod_under_a_new_uid(
        node: StaticNode, api_client: Client, namespace: str) -> None:
    node.write("app.yaml", static_pod("app", namespace, "echo one; sleep 3600"))
    name = node.mirror_name("app")
    first = await mirror_pod(api_client, namespace, name, running_and_ready)
    old_uid = first["metadata"]["annotations"][HASH]
    node.write("app.yaml", static_pod("app", namespace, "echo two; sleep 3600"))
    second = await mirror_pod(
        api_client, namespace, name,
        lambda pod: pod["metadata"]["annotations"][MIRROR] != old_uid
        and running_and_ready(pod), what="the mirror pod of the new manifest, Running")
    new_uid = second["metadata"]["annotations"][HASH]
    assert second["metadata"]["annotations"][MIRROR] == new_uid != old_uid
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert container_id(second) != container_id(first)
    assert not await node.left_in_runtime(old_uid)  # the old pod stopped before
    assert [c.id for c in await node.running(new_uid)] == [container_id(second)]


async def test_a_removed_manifest_stops_the_pod_and_deletes_its_mirror_pod(
        node: StaticNode, api_client: Client, namespace: str) -> None:
    node.write("gone.yaml", static_pod("gone", namespace, "sleep 3600"))
    name = node.mirror_name("gone")
    mirror = await mirror_pod(api_client, namespace, name, running_and_ready)
    uid = mirror["metadata"]["annotations"][HASH]
    (node.manifests / "gone.yaml").unlink()

    async def mirror_deleted() -> bool:
        try:
            await api_client.resource("pods").get(name, namespace)
        except NotFound:
            return True
        return False
    await eventually(mirror_deleted, timeout=60, interval=0.2, what="the mirror pod deleted")

    async def stopped() -> bool:
        return not await node.left_in_runtime(uid)
    await eventually(stopped, timeout=30, interval=0.2, what="the pod's containers removed")


async def test_a_host_network_static_pod_serves_on_the_nodes_address(
        node: StaticNode, api_client: Client, namespace: str) -> None:
    port = free_port()
    script = f"mkdir -p /www && echo static > /www/index.html && httpd -f -p {port} -h /www"
    node.write("host.yaml", static_pod("host", namespace, script, hostNetwork=True))
    mirror = await mirror_pod(api_client, namespace, node.mirror_name("host"),
                              running_and_ready)
    assert mirror["status"]["podIP"] == mirror["status"]["hostIP"] == "127.0.0.1"

    async def served() -> str | None:
        try:
            async with aiohttp.ClientSession() as session, session.get(
                    f"http://127.0.0.1:{port}/index.html",
                    timeout=aiohttp.ClientTimeout(total=3)) as answer:
                return await answer.text()
        except (aiohttp.ClientError, TimeoutError):
            return None
    assert (await eventually(served, timeout=30, interval=0.2,
                             what="httpd on the node's port")).strip() == "static"


async def test_kubectl_logs_exec_and_describe_reach_the_static_pod_through_its_mirror_pod(
        node: StaticNode, api_client: Client, namespace: str, kubectl: Kubectl) -> None:
    node.write("talk.yaml", static_pod("talk", namespace, "echo hello from a static pod; "
                                                          "sleep 3600"))
    name = node.mirror_name("talk")
    mirror = await mirror_pod(api_client, namespace, name, running_and_ready)

    async def logged() -> str | None:
        text = (await asyncio.to_thread(kubectl, "logs", name, "-n", namespace,
                                        check=False)).stdout
        return text if "hello" in text else None
    assert (await eventually(logged, timeout=30, what="the log line")).strip() == (
        "hello from a static pod")
    answer = await asyncio.to_thread(kubectl, "exec", name, "-n", namespace, "--", "sh", "-c",
                                     "echo $((6 * 7))")
    assert answer.stdout.strip() == "42"

    async def described() -> str | None:
        text = (await asyncio.to_thread(kubectl, "describe", "pod", name, "-n",
                                        namespace)).stdout
        return text if "Started" in text else None
    text = await eventually(described, timeout=30, what="the Started event in describe")
    assert f"Controlled By:  Node/{node.name}" in text
    assert f"{MIRROR}: {mirror['metadata']['annotations'][HASH]}" in text
    assert "Status:       Running" in text
    assert "Tolerations:                  :NoExecute op=Exists" in text
    # the static pod's events: kubectl looks them up under the config.mirror hash
    assert "Started container main" in text


async def test_the_kubelet_api_knows_a_static_pod_by_its_mirror_pods_uid(
        node: StaticNode, api_client: Client, namespace: str) -> None:
    node.write("byuid.yaml", static_pod("byuid", namespace, "sleep 3600"))
    name = node.mirror_name("byuid")
    mirror = await mirror_pod(api_client, namespace, name, running_and_ready)
    assert node.kubelet.server is not None
    base = f"http://127.0.0.1:{node.kubelet.server.port}"
    found = (400, "Upgrade request required")  # found: only a WebSocket or SPDY is missing
    expected = {mirror["metadata"]["uid"]: found,
                mirror["metadata"]["annotations"][HASH]: found,
                "not-this-pod": (404, "pod does not exist")}
    async with aiohttp.ClientSession() as session:
        for uid, answer_wanted in expected.items():
            for path in (f"/exec/{namespace}/{name}/{uid}/main?command=true&stdout=1",
                         f"/attach/{namespace}/{name}/{uid}/main?stdout=1",
                         f"/portForward/{namespace}/{name}/{uid}?port=80"):
                async with session.get(base + path) as answer:
                    assert (answer.status, await answer.text()) == answer_wanted, path
