"""A node's container runtime: containerd's config, the CNI network, images, a clean stop."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import socket
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from ipaddress import ip_address, ip_network
from pathlib import Path
from typing import Any

import pytest

from minikube_py.cluster import runtime_setup
from minikube_py.cluster.runtime_setup import (
    CNI_CACHE_DIR,
    Containerd,
    ImageLoadError,
    NodeRuntimeConfig,
    cleanup_stale,
    free_pod_cidr,
    load_image,
    write_cni_config,
    write_containerd_config,
)
from minikube_py.cri import RemoteRuntime
from minikube_py.gen.cri import api_pb2
from tests.node_fixtures import ContainerdNode

SHIPPED = ("localhost/pause:3.9", "localhost/busybox:1.36", "localhost/echo:1.0")


# -- configuration files ---------------------------------------------------------------------

def test_containerd_config_runs_cri_on_runc_in_the_node_dirs(tmp_path: Path) -> None:
    config = NodeRuntimeConfig("n1", tmp_path / "n1", "10.244.7.0/24")
    with write_containerd_config(config).open("rb") as file:
        settings = tomllib.load(file)
    cri = settings["plugins"]["io.containerd.grpc.v1.cri"]
    runc = cri["containerd"]["runtimes"]["runc"]
    assert settings["version"] == 2
    assert (settings["root"], settings["state"]) == (str(config.root_dir), str(config.state_dir))
    assert settings["grpc"]["address"] == str(config.socket)
    assert settings["ttrpc"]["address"] == f"{config.socket}.ttrpc"
    assert cri["restrict_oom_score_adj"] is True
    assert cri["sandbox_image"] == "localhost/pause:3.9"
    assert cri["containerd"]["snapshotter"] in ("overlayfs", "native")
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"] == {"SystemdCgroup": False, "Root": str(config.state_dir / "runc")}
    assert cri["cni"]["bin_dir"] == "/usr/lib/cni"
    assert cri["cni"]["conf_dir"] == str(config.cni_conf_dir)
    assert cri["registry"] == {"config_path": ""}
    assert "io.containerd.snapshotter.v1.devmapper" in settings["disabled_plugins"]
    # the garbage collector's scheduler wakes each second, not a few hundred times
    assert settings["plugins"]["io.containerd.gc.v1.scheduler"] == {"pause_threshold": 0.0}


def test_containerd_config_falls_back_to_native_snapshotter_without_overlayfs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_setup, "overlayfs_works", lambda directory: False)
    config = NodeRuntimeConfig("n1", tmp_path, "10.244.7.0/24")
    assert runtime_setup.configured_snapshotter(write_containerd_config(config)) == "native"


def test_cni_config_is_a_bridge_on_the_pod_cidr_with_portmap(tmp_path: Path) -> None:
    config = NodeRuntimeConfig("n1", tmp_path, "10.244.7.0/24")
    network = json.loads(write_cni_config(config).read_text())
    bridge, portmap = network["plugins"]
    assert network["cniVersion"] == "1.0.0"
    assert network["name"] == "minikube-py-n1"
    assert (bridge["type"], bridge["bridge"]) == ("bridge", config.bridge_name)
    assert bridge["isGateway"] and bridge["ipMasq"] and bridge["hairpinMode"]
    assert bridge["ipam"] == {"type": "host-local", "ranges": [[{"subnet": "10.244.7.0/24"}]],
                              "routes": [{"dst": "0.0.0.0/0"}],
                              "dataDir": str(config.ipam_data_dir)}
    assert portmap == {"type": "portmap", "capabilities": {"portMappings": True}}


@pytest.mark.parametrize("node_name", ["n1", "worker-with-a-long-name", "x" * 253])
def test_bridge_name_fits_a_linux_interface_name(node_name: str) -> None:
    bridge = NodeRuntimeConfig(node_name, Path("/tmp"), "10.244.7.0/24").bridge_name
    assert bridge.startswith("mkpy-") and len(bridge) <= 15


def test_each_node_gets_its_own_bridge() -> None:
    names = {NodeRuntimeConfig(f"n{i}", Path("/tmp"), "10.244.7.0/24").bridge_name
             for i in range(50)}
    assert len(names) == 50


def test_pod_cidr_must_be_a_network() -> None:
    with pytest.raises(ValueError):
        NodeRuntimeConfig("n1", Path("/tmp"), "10.244.7.1/24")


# -- pods on a real node -------------------------------------------------------------------

@dataclass
class Pod:
    sandbox_id: str
    ip: str
    container_ids: list[str]
    log_dir: Path


async def start_pod(runtime: RemoteRuntime, log_root: Path, name: str, image: str, *,
                    command: tuple[str, ...] = (), env: dict[str, str] | None = None) -> Pod:
    """RunPodSandbox, then CreateContainer and StartContainer: a kubelet's SyncPod by hand."""
    uid = uuid.uuid4().hex
    log_dir = log_root / f"default_{name}_{uid}"
    sandbox_config = api_pb2.PodSandboxConfig(
        metadata=api_pb2.PodSandboxMetadata(name=name, uid=uid, namespace="default"),
        hostname=name, log_directory=str(log_dir))
    sandbox = await runtime.run_pod_sandbox(api_pb2.RunPodSandboxRequest(config=sandbox_config))
    status = await runtime.pod_sandbox_status(
        api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sandbox.pod_sandbox_id))
    created = await runtime.create_container(api_pb2.CreateContainerRequest(
        pod_sandbox_id=sandbox.pod_sandbox_id, sandbox_config=sandbox_config,
        config=api_pb2.ContainerConfig(
            metadata=api_pb2.ContainerMetadata(name="main"),
            image=api_pb2.ImageSpec(image=image), command=list(command),
            envs=[api_pb2.KeyValue(key=k, value=v) for k, v in (env or {}).items()],
            log_path="main/0.log")))
    await runtime.start_container(api_pb2.StartContainerRequest(container_id=created.container_id))
    return Pod(sandbox.pod_sandbox_id, status.status.network.ip, [created.container_id], log_dir)


@asynccontextmanager
async def running_pod(runtime: RemoteRuntime, log_root: Path, name: str, image: str, *,
                      command: tuple[str, ...] = (), env: dict[str, str] | None = None
                      ) -> AsyncIterator[Pod]:
    """A pod for the duration of the block; its sandbox is stopped and removed after.
    (Should start_pod fail half-way, the session node's teardown removes the rest.)"""
    pod = await start_pod(runtime, log_root, name, image, command=command, env=env)
    try:
        yield pod
    finally:
        await runtime.stop_pod_sandbox(
            api_pb2.StopPodSandboxRequest(pod_sandbox_id=pod.sandbox_id))
        await runtime.remove_pod_sandbox(
            api_pb2.RemovePodSandboxRequest(pod_sandbox_id=pod.sandbox_id))


def http_get(url: str, timeout: float = 30.0) -> str:
    """GET url, retrying while the server is still starting (connection refused);
    `timeout` bounds a failure."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as answer:
                return answer.read().decode()
        except urllib.error.URLError as error:
            if not isinstance(error.reason, ConnectionRefusedError) or (
                    time.monotonic() > deadline):
                raise
            time.sleep(0.05)


def ctr(socket: Path, *args: str) -> str:
    return subprocess.run(["ctr", "--address", str(socket), "--namespace", "k8s.io", *args],
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
async def test_containerd_answers_cri_with_runtime_and_network_ready(
        containerd_node: ContainerdNode) -> None:
    async with RemoteRuntime(containerd_node.endpoint) as runtime:
        version = await runtime.version(api_pb2.VersionRequest())
        status = await runtime.status(api_pb2.StatusRequest())
    assert (version.runtime_name, version.runtime_api_version) == ("containerd", "v1")
    assert {c.type: c.status for c in status.status.conditions} == {
        "RuntimeReady": True, "NetworkReady": True}


@pytest.mark.slow
async def test_shipped_images_are_listed_under_their_localhost_names(
        containerd_node: ContainerdNode) -> None:
    assert set(SHIPPED) <= set(ctr(containerd_node.config.socket, "images", "ls", "-q").split())
    async with RemoteRuntime(containerd_node.endpoint) as runtime:
        images = await runtime.list_images(api_pb2.ListImagesRequest())
    assert set(SHIPPED) <= {tag for image in images.images for tag in image.repo_tags}


@pytest.mark.slow
async def test_busybox_runs_in_a_sandbox_on_the_pod_network(
        containerd_node: ContainerdNode, fast_tmp: Path) -> None:
    async with RemoteRuntime(containerd_node.endpoint) as runtime, running_pod(
            runtime, fast_tmp / "pod-logs", "shell", "localhost/busybox:1.36",
            command=("sh", "-c", "echo hello; exec sleep 3600")) as pod:
        assert ip_address(pod.ip) in ip_network(containerd_node.pod_cidr)
        status = await runtime.container_status(
            api_pb2.ContainerStatusRequest(container_id=pod.container_ids[0]))
        assert status.status.state == api_pb2.CONTAINER_RUNNING
        answer = await runtime.exec_sync(api_pb2.ExecSyncRequest(
            container_id=pod.container_ids[0], cmd=["hostname"], timeout=5))
        assert (answer.exit_code, answer.stdout) == (0, b"shell\n")
        log = (pod.log_dir / "main" / "0.log").read_text()
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z stdout F hello\n", log)


@pytest.mark.slow
@pytest.mark.parametrize(("env", "port", "name"), [
    ({"POD_NAME": "web-1"}, 8080, "web-1"),    # the downward API's name wins
    ({"PORT": "9090"}, 9090, "echo"),          # else the hostname (the pod's name)
])
async def test_echo_answers_with_pod_name_and_ip_on_its_pod_ip(
        containerd_node: ContainerdNode, fast_tmp: Path, env: dict[str, str], port: int,
        name: str) -> None:
    async with RemoteRuntime(containerd_node.endpoint) as runtime, running_pod(
            runtime, fast_tmp / "pod-logs", "echo", "localhost/echo:1.0", env=env) as pod:
        url = f"http://{pod.ip}:{port}/any/path"
        expected = f"pod={name} ip={pod.ip}\n"
        assert await asyncio.to_thread(http_get, url) == expected
        # A client that connects and says nothing holds one handler; the server forks
        # one per connection, so the others are still answered meanwhile.
        silent = socket.create_connection((pod.ip, port), timeout=5)
        try:
            answers = await asyncio.gather(
                *(asyncio.to_thread(http_get, url) for _ in range(20)))
        finally:
            silent.close()
        assert answers == [expected] * 20


@pytest.mark.slow
async def test_pause_and_echo_exit_at_once_on_sigterm(
        containerd_node: ContainerdNode, fast_tmp: Path) -> None:
    async with RemoteRuntime(containerd_node.endpoint) as runtime, running_pod(
            runtime, fast_tmp / "pod-logs", "echo", "localhost/echo:1.0") as pod:
        await asyncio.to_thread(http_get, f"http://{pod.ip}:8080/")
        started = time.monotonic()
        await runtime.stop_container(api_pb2.StopContainerRequest(
            container_id=pod.container_ids[0], timeout=30))
        status = await runtime.container_status(
            api_pb2.ContainerStatusRequest(container_id=pod.container_ids[0]))
        # on SIGTERM itself: before the 30 s grace period's SIGKILL, and not killed (137)
        assert time.monotonic() - started < 30
        assert status.status.exit_code == 0

        tasks = ctr(containerd_node.config.socket, "tasks", "ls").splitlines()[1:]
        pause_pid = next(int(line.split()[1]) for line in tasks if line.startswith(pod.sandbox_id))
        os.kill(pause_pid, 15)
        deadline = time.monotonic() + 60
        state = api_pb2.SANDBOX_READY
        while state == api_pb2.SANDBOX_READY and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            sandbox = await runtime.pod_sandbox_status(
                api_pb2.PodSandboxStatusRequest(pod_sandbox_id=pod.sandbox_id))
            state = sandbox.status.state
        assert state == api_pb2.SANDBOX_NOTREADY


# -- images ----------------------------------------------------------------------------------

def docker_archive_from(oci_archive: Path, target: Path, tag: str) -> Path:
    """Rewrite a one-layer OCI archive in `docker save` format (manifest.json, RepoTags)."""
    with tarfile.open(oci_archive) as source, tarfile.open(target, "w") as archive:
        def blob(digest: str) -> bytes:
            member = source.extractfile(f"blobs/sha256/{digest.removeprefix('sha256:')}")
            assert member is not None
            return member.read()

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))

        index = json.loads(source.extractfile("index.json").read())  # type: ignore[union-attr]
        manifest = json.loads(blob(index["manifests"][0]["digest"]))
        config_name = manifest["config"]["digest"].removeprefix("sha256:") + ".json"
        add(config_name, blob(manifest["config"]["digest"]))
        add("layer/layer.tar", blob(manifest["layers"][0]["digest"]))
        add("manifest.json", json.dumps([{"Config": config_name, "RepoTags": [tag],
                                          "Layers": ["layer/layer.tar"]}]).encode())
    return target


@pytest.mark.slow
async def test_load_image_accepts_a_docker_save_archive(
        containerd_node: ContainerdNode, fast_tmp: Path) -> None:
    archive = docker_archive_from(containerd_node.images_dir / "echo-1.0.tar",
                                  fast_tmp / "echo-docker.tar", "localhost/echo-docker:1.0")
    assert await load_image(containerd_node.config, archive) == ["localhost/echo-docker:1.0"]
    async with RemoteRuntime(containerd_node.endpoint) as runtime:
        image = await runtime.image_status(api_pb2.ImageStatusRequest(
            image=api_pb2.ImageSpec(image="localhost/echo-docker:1.0")))
    assert "localhost/echo-docker:1.0" in image.image.repo_tags  # beside echo:1.0: same ID


@pytest.mark.slow
async def test_load_image_reports_what_ctr_said(
        containerd_node: ContainerdNode, fast_tmp: Path) -> None:
    junk = fast_tmp / "junk.tar"
    junk.write_bytes(b"not a tar")
    with pytest.raises(ImageLoadError, match=rf"cannot load {junk} into .*: \S+"):
        await load_image(containerd_node.config, junk)


@pytest.mark.slow
async def test_image_load_command_imports_into_every_running_node(
        containerd_node: ContainerdNode, fast_tmp: Path) -> None:
    home = fast_tmp / f"home-{uuid.uuid4().hex[:8]}"
    nodes = [NodeRuntimeConfig(name, home / "nodes" / name,
                               free_pod_cidr(seed=os.getpid() + 64 * (i + 1)))
             for i, name in enumerate(("n1", "n2"))]
    async with Containerd(nodes[0]), Containerd(nodes[1]):
        command = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "minikube_py.cluster", "image", "load",
            str(containerd_node.images_dir / "echo-1.0.tar"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "MINIKUBE_PY_HOME": str(home)})
        try:
            async with asyncio.timeout(120):
                out, err = await command.communicate()
        finally:
            if command.returncode is None:
                command.kill()
                await command.wait()
        assert command.returncode == 0, err.decode()
        assert sorted(out.decode().splitlines()) == [
            "loaded localhost/echo:1.0 into node n1", "loaded localhost/echo:1.0 into node n2"]
        for node in nodes:
            assert "localhost/echo:1.0" in ctr(node.socket, "images", "ls", "-q").split()


# -- teardown --------------------------------------------------------------------------------

def node_traces(config: NodeRuntimeConfig, chains: set[str]) -> dict[str, Any]:
    """Everything of a node outside Python: found by looking, not through runtime_setup."""
    marker = str(config.base_dir).encode()
    processes = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
                if state != "Z":  # a zombie has exited already
                    processes.append(entry.name)
        except OSError:
            continue
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if line.split()[4].startswith(str(config.base_dir))]
    nat = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True,
                         check=True).stdout
    return {
        "processes": processes,
        "mounts": mounts,
        "bridge": Path("/sys/class/net", config.bridge_name).exists(),
        "rules": [line for line in nat.splitlines() if config.network_name in line],
        "chains": sorted(chain for chain in chains if f":{chain} " in nat),
        "cni cache": sorted(p.name for p in CNI_CACHE_DIR.glob(f"{config.network_name}-*")),
        "files": config.base_dir.exists(),
    }


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["stop", "crash"])
async def test_a_node_leaves_no_shim_mount_bridge_or_cni_rule_behind(
        containerd_node: ContainerdNode, fast_tmp: Path, ending: str) -> None:
    config = NodeRuntimeConfig(f"gone-{ending}-{os.getpid()}",
                               fast_tmp / f"node-{uuid.uuid4().hex[:8]}",
                               free_pod_cidr(seed=os.getpid() + 128))
    runtime = Containerd(config)
    await runtime.start()
    try:
        for image in ("pause-3.9.tar", "busybox-1.36.tar"):
            await load_image(config, containerd_node.images_dir / image)
        async with RemoteRuntime(runtime.endpoint) as cri:
            pod = await start_pod(cri, fast_tmp / "pod-logs", "sleeper",
                                  "localhost/busybox:1.36", command=("sleep", "3600"))
            assert pod.ip
        nat = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True,
                             check=True).stdout
        chains = {word for line in nat.splitlines() if config.network_name in line
                  for word in line.split() if word.startswith("CNI-")}
        before = node_traces(config, chains)
        assert before["processes"] and before["mounts"] and before["bridge"]
        assert before["rules"] and before["chains"] and before["cni cache"]
        if ending == "stop":
            await runtime.stop()
        else:
            await runtime.kill()  # containerd dies; its shims and pods live on
            await cleanup_stale(config.base_dir)
        assert node_traces(config, chains) == {
            "processes": [], "mounts": [], "bridge": False, "rules": [], "chains": [],
            "cni cache": [], "files": False}
    finally:
        await runtime.stop()
