"""The kubelet while its runtime restarts: a call that cannot reach containerd is no answer.

A relist that fails keeps what the last one saw, a pod status that cannot be read is not
read as "no containers", and a probe that cannot run is not a failed probe. (On a real
containerd: tests/test_containerd_restart.py.)
"""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest

from minikube_py.api import Obj
from minikube_py.cri import CRIError, RuntimeUnavailable
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.backoff import Backoff
from minikube_py.kubelet.images import ImageManager
from minikube_py.kubelet.kubelet import Kubelet
from minikube_py.kubelet.kuberuntime import RuntimeManager
from minikube_py.kubelet.kuberuntime_sandbox import DNSSettings
from minikube_py.kubelet.pleg import GenericPLEG
from minikube_py.kubelet.podstate import MANAGED_LABEL, POD_UID_LABEL
from minikube_py.kubelet.prober import ProbeResult, exec_probe
from minikube_py.kubelet.resources import ContainerResources
from minikube_py.kubelet.simulated import SimulatedRuntime
from minikube_py.kubelet.volumes.manager import ContainerMount


class RestartingRuntime(SimulatedRuntime):
    """A runtime whose listing and status calls fail as containerd's do while it restarts
    (`down`), or as for a container that has gone (`gone`)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.gone: set[str] = set()

    def _check(self, object_id: str = "") -> None:
        if self.down:
            raise RuntimeUnavailable(grpc.StatusCode.UNAVAILABLE, "connection refused")
        if object_id in self.gone:
            raise CRIError(grpc.StatusCode.NOT_FOUND, f"container {object_id} not found")

    async def list_pod_sandbox(self, request: api_pb2.ListPodSandboxRequest,
                               timeout: float | None = None) -> api_pb2.ListPodSandboxResponse:
        self._check()
        return await super().list_pod_sandbox(request, timeout)

    async def list_containers(self, request: api_pb2.ListContainersRequest,
                              timeout: float | None = None) -> api_pb2.ListContainersResponse:
        self._check()
        return await super().list_containers(request, timeout)

    async def container_status(
            self, request: api_pb2.ContainerStatusRequest,
            timeout: float | None = None) -> api_pb2.ContainerStatusResponse:
        self._check(request.container_id)
        return await super().container_status(request, timeout)

    async def pod_sandbox_status(
            self, request: api_pb2.PodSandboxStatusRequest,
            timeout: float | None = None) -> api_pb2.PodSandboxStatusResponse:
        self._check()
        return await super().pod_sandbox_status(request, timeout)


async def running_pod(runtime: SimulatedRuntime, uid: str) -> tuple[str, str]:
    """A ready sandbox and a running container of pod `uid`: (sandbox id, container id)."""
    labels = {POD_UID_LABEL: uid, MANAGED_LABEL: "true"}
    config = api_pb2.PodSandboxConfig(
        metadata=api_pb2.PodSandboxMetadata(name=uid, uid=uid, namespace="ns"), labels=labels)
    sandbox = (await runtime.run_pod_sandbox(
        api_pb2.RunPodSandboxRequest(config=config))).pod_sandbox_id
    image = (await runtime.pull_image(api_pb2.PullImageRequest(
        image=api_pb2.ImageSpec(image="busybox:1.36")))).image_ref
    container = (await runtime.create_container(api_pb2.CreateContainerRequest(
        pod_sandbox_id=sandbox, sandbox_config=config, config=api_pb2.ContainerConfig(
            metadata=api_pb2.ContainerMetadata(name="app"), image=api_pb2.ImageSpec(image=image),
            labels=labels)))).container_id
    await runtime.start_container(api_pb2.StartContainerRequest(container_id=container))
    return sandbox, container


def runtime_manager(runtime: SimulatedRuntime) -> RuntimeManager:
    """A runtime manager for GetPodStatus (the sync steps are not used here)."""
    backoff = Backoff(1.0, 8.0)

    async def no_exec(container_id: str, command: list[str], timeout: float) -> tuple[int, str]:
        raise AssertionError("not used")

    async def no_options(pod: Obj, container: Obj, pod_ips: list[str]
                         ) -> tuple[list[tuple[str, str]], list[ContainerMount],
                                    ContainerResources]:
        raise AssertionError("not used")

    return RuntimeManager(runtime, images=ImageManager(runtime, lambda *a: None, backoff),
                          logs_root=Path("/nonexistent"), dns=DNSSettings(),
                          record_event=lambda *a: None, crash_backoff=backoff,
                          container_options=no_options,
                          exec_sync=no_exec, start_slots=asyncio.Semaphore(1),
                          make_log_dirs=False)


async def test_a_relist_while_the_runtime_is_down_changes_nothing_and_wakes_nobody() -> None:
    runtime = RestartingRuntime()
    woken: list[str] = []
    pleg = GenericPLEG(runtime, woken.append)
    await running_pod(runtime, "a")
    await pleg.relist()
    seen, woken[:] = pleg.view("a"), []
    runtime.down = True
    with pytest.raises(RuntimeUnavailable):
        await pleg.relist()
    assert pleg.view("a") == seen and woken == []
    runtime.down = False  # back, with the same containers: still no change
    await pleg.relist()
    assert pleg.view("a") == seen and woken == []


@pytest.mark.parametrize("call", ["container_status", "pod_sandbox_status"])
async def test_a_pod_status_the_runtime_cannot_give_is_an_error_not_an_empty_pod(
        call: str) -> None:
    runtime = RestartingRuntime()
    await running_pod(runtime, "a")
    manager = runtime_manager(runtime)
    listed = await manager.get_pod_status("a")
    assert listed.ready_sandbox and [c.state for c in listed.containers] == ["running"]

    async def down_now(*args: object, **kwargs: object) -> None:
        raise RuntimeUnavailable(grpc.StatusCode.UNAVAILABLE, "connection refused")

    # the listing still answered, then containerd went away before the status call
    setattr(runtime, call, down_now)
    with pytest.raises(RuntimeUnavailable):
        await manager.get_pod_status("a")


async def test_a_container_gone_between_list_and_status_is_left_out() -> None:
    runtime = RestartingRuntime()
    _, container = await running_pod(runtime, "a")
    runtime.gone.add(container)
    status = await runtime_manager(runtime).get_pod_status("a")
    assert status.ready_sandbox and status.containers == []


class ExecRuntime(SimulatedRuntime):
    """ExecSync answers `exit_code`, or fails with `error`."""

    def __init__(self, exit_code: int = 0, error: CRIError | None = None) -> None:
        super().__init__()
        self.exit_code, self.error = exit_code, error

    async def exec_sync(self, request: api_pb2.ExecSyncRequest,
                        timeout: float | None = None) -> api_pb2.ExecSyncResponse:
        if self.error is not None:
            raise self.error
        return api_pb2.ExecSyncResponse(exit_code=self.exit_code)


@pytest.mark.parametrize(("runtime", "result"), [
    (ExecRuntime(exit_code=0), ProbeResult.SUCCESS),
    (ExecRuntime(exit_code=1), ProbeResult.FAILURE),
    (ExecRuntime(error=RuntimeUnavailable(grpc.StatusCode.UNAVAILABLE, "connection refused")),
     ProbeResult.UNKNOWN),
    (ExecRuntime(error=CRIError(grpc.StatusCode.UNKNOWN, "container is not running")),
     ProbeResult.UNKNOWN),
])
async def test_an_exec_probe_the_runtime_could_not_run_is_unknown_not_failed(
        runtime: ExecRuntime, result: ProbeResult) -> None:
    """Upstream's exec prober: only a command that ran and exited non-zero fails."""
    kubelet = SimpleNamespace(runtime=runtime)  # Kubelet.exec_sync uses its runtime only
    assert (await exec_probe(partial(Kubelet.exec_sync, kubelet), "c1", ["true"], 1.0)
            )[0] is result
