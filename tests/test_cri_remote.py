"""RemoteRuntime against a real containerd, and the simulated runtime measured against it."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from minikube_py.cri import CRIError, RemoteRuntime, RuntimeService, grpc_target
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.simulated import SimulatedRuntime

UNKNOWN_ID = "0123456789abcdef" * 4

CONTAINERD_CONFIG = """\
version = 2
root = "{dir}/root"
state = "{dir}/state"

[grpc]
  address = "{dir}/containerd.sock"

[ttrpc]
  address = "{dir}/containerd.sock.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{dir}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{dir}/cni"
"""


@pytest.fixture(scope="module")
async def containerd(fast_tmp: Path) -> AsyncIterator[Path]:
    """A throwaway containerd whose state, sockets and config all live in one tmpfs dir."""
    if shutil.which("containerd") is None:
        pytest.skip("containerd is not installed")
    directory = fast_tmp / f"containerd-{uuid.uuid4().hex[:8]}"
    directory.mkdir()
    config = directory / "config.toml"
    config.write_text(CONTAINERD_CONFIG.format(dir=directory))
    log = (directory / "containerd.log").open("wb")
    process = await asyncio.create_subprocess_exec(
        "containerd", "--config", str(config), stdout=log, stderr=log)
    try:
        async with RemoteRuntime(str(directory / "containerd.sock")) as runtime:
            await runtime.wait_ready(timeout=20)
        yield directory / "containerd.sock"
    finally:
        process.terminate()
        try:
            async with asyncio.timeout(10):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()
        log.close()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
async def remote(containerd: Path) -> AsyncIterator[RemoteRuntime]:
    async with RemoteRuntime(f"unix://{containerd}") as runtime:
        yield runtime


# -- the client without a runtime ---------------------------------------------------------

@pytest.mark.parametrize(("endpoint", "target"), [
    ("unix:///run/containerd/containerd.sock", "unix:///run/containerd/containerd.sock"),
    ("/run/containerd/containerd.sock", "unix:///run/containerd/containerd.sock"),
])
def test_endpoint_may_be_a_unix_url_or_a_bare_path(endpoint: str, target: str) -> None:
    assert grpc_target(endpoint) == target


def test_an_endpoint_that_is_not_a_unix_socket_is_refused() -> None:
    with pytest.raises(ValueError, match="unix:///"):
        grpc_target("tcp://127.0.0.1:10010")


async def test_wait_ready_gives_up_after_its_timeout_naming_the_endpoint(tmp_path: Path) -> None:
    async with RemoteRuntime(str(tmp_path / "missing.sock")) as runtime:
        with pytest.raises(TimeoutError, match="missing.sock"):
            await runtime.wait_ready(timeout=0.3)


async def test_a_runtime_that_is_not_there_raises_cri_error_unavailable(
        tmp_path: Path) -> None:
    async with RemoteRuntime(str(tmp_path / "missing.sock")) as runtime:
        with pytest.raises(CRIError) as raised:
            await runtime.version(api_pb2.VersionRequest(), timeout=1)
    assert raised.value.code == grpc.StatusCode.UNAVAILABLE
    assert "missing.sock" in raised.value.message


# -- against containerd -------------------------------------------------------------------

@pytest.mark.slow
async def test_containerd_answers_version_for_cri_v1(remote: RemoteRuntime) -> None:
    answer = await remote.version(api_pb2.VersionRequest())
    assert answer.runtime_name == "containerd"
    assert answer.runtime_api_version == "v1"
    assert answer.runtime_version


@pytest.mark.slow
async def test_containerd_status_reports_runtime_and_network_conditions(
        remote: RemoteRuntime) -> None:
    answer = await remote.status(api_pb2.StatusRequest())
    conditions = {c.type: c for c in answer.status.conditions}
    assert conditions["RuntimeReady"].status is True
    network = conditions["NetworkReady"]  # no CNI config in the throwaway dir
    assert network.status is False and network.reason == "NetworkPluginNotReady"


@pytest.mark.slow
async def test_fresh_containerd_lists_no_images_and_reports_its_image_filesystem(
        remote: RemoteRuntime, containerd: Path) -> None:
    images = await remote.list_images(api_pb2.ListImagesRequest())
    assert list(images.images) == []
    missing = await remote.image_status(api_pb2.ImageStatusRequest(
        image=api_pb2.ImageSpec(image="busybox")))
    assert not missing.HasField("image")
    filesystem = (await remote.image_fs_info(api_pb2.ImageFsInfoRequest())).image_filesystems
    assert filesystem[0].fs_id.mountpoint.startswith(str(containerd.parent))


@pytest.mark.slow
async def test_a_bogus_container_id_raises_cri_error_not_found(remote: RemoteRuntime) -> None:
    with pytest.raises(CRIError) as raised:
        await remote.container_status(api_pb2.ContainerStatusRequest(container_id=UNKNOWN_ID))
    assert raised.value.code == grpc.StatusCode.NOT_FOUND
    assert UNKNOWN_ID in raised.value.message


SAME_AS_CONTAINERD: list[tuple[str, Callable[[RuntimeService], Any]]] = [
    ("container_status",
     lambda r: r.container_status(api_pb2.ContainerStatusRequest(container_id=UNKNOWN_ID))),
    ("start_container",
     lambda r: r.start_container(api_pb2.StartContainerRequest(container_id=UNKNOWN_ID))),
    ("stop_container",
     lambda r: r.stop_container(api_pb2.StopContainerRequest(container_id=UNKNOWN_ID))),
    ("remove_container",
     lambda r: r.remove_container(api_pb2.RemoveContainerRequest(container_id=UNKNOWN_ID))),
    ("exec_sync",
     lambda r: r.exec_sync(api_pb2.ExecSyncRequest(container_id=UNKNOWN_ID, cmd=["true"]))),
    ("container_stats",
     lambda r: r.container_stats(api_pb2.ContainerStatsRequest(container_id=UNKNOWN_ID))),
    ("pod_sandbox_status",
     lambda r: r.pod_sandbox_status(api_pb2.PodSandboxStatusRequest(pod_sandbox_id=UNKNOWN_ID))),
    ("stop_pod_sandbox",
     lambda r: r.stop_pod_sandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=UNKNOWN_ID))),
    ("remove_pod_sandbox",
     lambda r: r.remove_pod_sandbox(
         api_pb2.RemovePodSandboxRequest(pod_sandbox_id=UNKNOWN_ID))),
    ("create_container",
     lambda r: r.create_container(api_pb2.CreateContainerRequest(
         pod_sandbox_id=UNKNOWN_ID, config=api_pb2.ContainerConfig(
             metadata=api_pb2.ContainerMetadata(name="app"),
             image=api_pb2.ImageSpec(image="busybox"))))),
    ("remove_image",
     lambda r: r.remove_image(api_pb2.RemoveImageRequest(
         image=api_pb2.ImageSpec(image="busybox")))),
    ("list_containers", lambda r: r.list_containers(api_pb2.ListContainersRequest())),
    ("list_pod_sandbox", lambda r: r.list_pod_sandbox(api_pb2.ListPodSandboxRequest())),
    ("list_container_stats",
     lambda r: r.list_container_stats(api_pb2.ListContainerStatsRequest())),
]


async def outcome(call: Callable[[RuntimeService], Any], runtime: RuntimeService) -> Any:
    """What a call gives: the answer, or the error's code and message."""
    try:
        return await call(runtime)
    except CRIError as error:
        return error.code, error.message


@pytest.mark.slow
@pytest.mark.parametrize(("rpc", "call"), SAME_AS_CONTAINERD,
                         ids=[case[0] for case in SAME_AS_CONTAINERD])
async def test_simulated_runtime_answers_unknown_ids_as_containerd_does(
        remote: RemoteRuntime, rpc: str, call: Callable[[RuntimeService], Any]) -> None:
    assert await outcome(call, SimulatedRuntime()) == await outcome(call, remote)
