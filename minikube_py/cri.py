"""A container runtime over CRI v1: the RPCs, and a gRPC client for them.

Upstream `k8s.io/cri-api/pkg/apis/services.go` (RuntimeService, ImageManagerService) and
`k8s.io/cri-client` (remoteRuntimeService, remoteImageService), a library shared as
upstream's is: the kubelet and the launcher (cluster/runtime_setup.py) use it. The kubelet
codes against RuntimeService only, so containerd (RemoteRuntime) and the in-process fake
for hollow nodes (kubelet/simulated.py: SimulatedRuntime) are interchangeable.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self

import grpc
from google.protobuf.message import Message

from minikube_py.gen.cri import api_pb2, api_pb2_grpc
from minikube_py.tracing.tracer import child_span

REQUEST_TIMEOUT = 10.0
"""Seconds a CRI call may take unless the caller says otherwise."""

PULL_IMAGE_TIMEOUT = 120.0
"""Seconds a PullImage may take: pulls are slow, so they get their own deadline."""

MAX_MESSAGE_SIZE = 16 * 1024 * 1024
"""The largest answer accepted, as upstream's remote runtime client (16 MiB)."""

READY_POLL_INTERVAL = 0.1

# How the channel reconnects to a runtime that went away (containerd restarting), as
# upstream's remote runtime client: 100 ms after the first failure, growing to 3 s at most,
# each attempt given at least 5 s to connect.
RECONNECT_BACKOFF_INITIAL_MS = 100
RECONNECT_BACKOFF_MAX_MS = 3000
MIN_CONNECT_TIMEOUT_MS = 5000

log = logging.getLogger(__name__)


class CRIError(Exception):
    """A CRI call failed: the gRPC status code and the runtime's message."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class RuntimeUnavailable(CRIError):
    """The runtime could not be reached (gRPC UNAVAILABLE): it is down or restarting. The
    client has said so in its log, once, and reconnects by itself; the caller tries again
    later, and must not read the failure as an answer (no containers, a failed probe)."""


class RuntimeService(ABC):
    """A container runtime as the kubelet sees it: one async method per CRI RPC.

    Every method takes the request message and returns the response message; `timeout`
    is in seconds (None: the implementation's default). Failures raise CRIError.
    """

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    @abstractmethod
    async def close(self) -> None:
        """Release what the runtime client holds (its connection, or its state)."""

    # -- RuntimeService: the runtime itself ----------------------------------------------

    @abstractmethod
    async def version(self, request: api_pb2.VersionRequest,
                      timeout: float | None = None) -> api_pb2.VersionResponse:
        """Version: the runtime's name and version, and the CRI version it speaks."""

    @abstractmethod
    async def status(self, request: api_pb2.StatusRequest,
                     timeout: float | None = None) -> api_pb2.StatusResponse:
        """Status: the RuntimeReady and NetworkReady conditions."""

    # -- RuntimeService: pod sandboxes ---------------------------------------------------

    @abstractmethod
    async def run_pod_sandbox(self, request: api_pb2.RunPodSandboxRequest,
                              timeout: float | None = None) -> api_pb2.RunPodSandboxResponse:
        """RunPodSandbox: create the pod's sandbox (namespaces, network, pause) and start it."""

    @abstractmethod
    async def stop_pod_sandbox(self, request: api_pb2.StopPodSandboxRequest,
                               timeout: float | None = None) -> api_pb2.StopPodSandboxResponse:
        """StopPodSandbox: kill the sandbox's containers and release its network."""

    @abstractmethod
    async def remove_pod_sandbox(
            self, request: api_pb2.RemovePodSandboxRequest,
            timeout: float | None = None) -> api_pb2.RemovePodSandboxResponse:
        """RemovePodSandbox: delete the sandbox and its containers; a missing one is fine."""

    @abstractmethod
    async def pod_sandbox_status(
            self, request: api_pb2.PodSandboxStatusRequest,
            timeout: float | None = None) -> api_pb2.PodSandboxStatusResponse:
        """PodSandboxStatus: the sandbox's state, IPs, labels and annotations."""

    @abstractmethod
    async def list_pod_sandbox(self, request: api_pb2.ListPodSandboxRequest,
                               timeout: float | None = None) -> api_pb2.ListPodSandboxResponse:
        """ListPodSandbox: the sandboxes matching the filter (id, state, labels)."""

    # -- RuntimeService: containers ------------------------------------------------------

    @abstractmethod
    async def create_container(
            self, request: api_pb2.CreateContainerRequest,
            timeout: float | None = None) -> api_pb2.CreateContainerResponse:
        """CreateContainer: make a container in a sandbox from its config, not started yet."""

    @abstractmethod
    async def start_container(self, request: api_pb2.StartContainerRequest,
                              timeout: float | None = None) -> api_pb2.StartContainerResponse:
        """StartContainer: start a created container's process."""

    @abstractmethod
    async def stop_container(self, request: api_pb2.StopContainerRequest,
                             timeout: float | None = None) -> api_pb2.StopContainerResponse:
        """StopContainer: SIGTERM, then SIGKILL after request.timeout seconds."""

    @abstractmethod
    async def remove_container(
            self, request: api_pb2.RemoveContainerRequest,
            timeout: float | None = None) -> api_pb2.RemoveContainerResponse:
        """RemoveContainer: delete a container, killing it first; a missing one is fine."""

    @abstractmethod
    async def list_containers(self, request: api_pb2.ListContainersRequest,
                              timeout: float | None = None) -> api_pb2.ListContainersResponse:
        """ListContainers: the containers matching the filter (id, state, sandbox, labels)."""

    @abstractmethod
    async def container_status(
            self, request: api_pb2.ContainerStatusRequest,
            timeout: float | None = None) -> api_pb2.ContainerStatusResponse:
        """ContainerStatus: state, times, exit code, reason, image and log path."""

    @abstractmethod
    async def exec_sync(self, request: api_pb2.ExecSyncRequest,
                        timeout: float | None = None) -> api_pb2.ExecSyncResponse:
        """ExecSync: run a command in a running container and return its output and exit code."""

    async def exec(self, request: api_pb2.ExecRequest,
                   timeout: float | None = None) -> api_pb2.ExecResponse:
        """Exec: a URL on the runtime's streaming server where the command runs once a
        client connects (kubectl exec). A runtime without one raises UNIMPLEMENTED."""
        raise CRIError(grpc.StatusCode.UNIMPLEMENTED, "this runtime has no streaming server")

    async def attach(self, request: api_pb2.AttachRequest,
                     timeout: float | None = None) -> api_pb2.AttachResponse:
        """Attach: a URL on the streaming server for the container's own stdio."""
        raise CRIError(grpc.StatusCode.UNIMPLEMENTED, "this runtime has no streaming server")

    async def port_forward(self, request: api_pb2.PortForwardRequest,
                           timeout: float | None = None) -> api_pb2.PortForwardResponse:
        """PortForward: a URL on the streaming server that connects to the pod's ports."""
        raise CRIError(grpc.StatusCode.UNIMPLEMENTED, "this runtime has no streaming server")

    # -- RuntimeService: stats -----------------------------------------------------------

    @abstractmethod
    async def container_stats(self, request: api_pb2.ContainerStatsRequest,
                              timeout: float | None = None) -> api_pb2.ContainerStatsResponse:
        """ContainerStats: one container's CPU, memory and writable-layer usage."""

    @abstractmethod
    async def list_container_stats(
            self, request: api_pb2.ListContainerStatsRequest,
            timeout: float | None = None) -> api_pb2.ListContainerStatsResponse:
        """ListContainerStats: the usage of every running container matching the filter."""

    @abstractmethod
    async def list_pod_sandbox_stats(
            self, request: api_pb2.ListPodSandboxStatsRequest,
            timeout: float | None = None) -> api_pb2.ListPodSandboxStatsResponse:
        """ListPodSandboxStats: the usage of every ready sandbox matching the filter."""

    # -- ImageService --------------------------------------------------------------------

    @abstractmethod
    async def pull_image(self, request: api_pb2.PullImageRequest,
                         timeout: float | None = None) -> api_pb2.PullImageResponse:
        """PullImage: fetch an image; answers the image's reference (its id)."""

    @abstractmethod
    async def list_images(self, request: api_pb2.ListImagesRequest,
                          timeout: float | None = None) -> api_pb2.ListImagesResponse:
        """ListImages: the images on the node."""

    @abstractmethod
    async def image_status(self, request: api_pb2.ImageStatusRequest,
                           timeout: float | None = None) -> api_pb2.ImageStatusResponse:
        """ImageStatus: the image, or an answer without one when it is not present."""

    @abstractmethod
    async def remove_image(self, request: api_pb2.RemoveImageRequest,
                           timeout: float | None = None) -> api_pb2.RemoveImageResponse:
        """RemoveImage: delete an image and all its names; a missing one is fine."""

    @abstractmethod
    async def image_fs_info(self, request: api_pb2.ImageFsInfoRequest,
                            timeout: float | None = None) -> api_pb2.ImageFsInfoResponse:
        """ImageFsInfo: how much of the image filesystem the images use."""


def grpc_target(endpoint: str) -> str:
    """The gRPC target for --container-runtime-endpoint: `unix:///path` or a bare path."""
    if endpoint.startswith("unix://"):
        return endpoint
    if endpoint.startswith("/"):
        return f"unix://{endpoint}"
    raise ValueError(f"unsupported container runtime endpoint {endpoint!r}: "
                     "use unix:///path/to/socket")


class RemoteRuntime(RuntimeService):
    """A CRI runtime behind a unix socket (containerd), reached with grpc.aio.

    Upstream remoteRuntimeService and remoteImageService in one object: both gRPC services
    share one channel. Each call gets a deadline; a failed call raises CRIError with the
    runtime's status code and message, RuntimeUnavailable when the runtime is gone. The
    channel outlives the runtime's process: when containerd restarts, it reconnects with
    backoff, and the client logs one line when the runtime goes away and one when it
    answers again.
    """

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self._channel = grpc.aio.insecure_channel(
            grpc_target(endpoint),
            options=[("grpc.max_receive_message_length", MAX_MESSAGE_SIZE),
                     ("grpc.max_send_message_length", MAX_MESSAGE_SIZE),
                     # The kubelet retries on its own (sync loops, PLEG); gRPC's transparent
                     # retry machinery would cost ~10% of every call's CPU.
                     ("grpc.enable_retries", 0),
                     ("grpc.initial_reconnect_backoff_ms", RECONNECT_BACKOFF_INITIAL_MS),
                     ("grpc.max_reconnect_backoff_ms", RECONNECT_BACKOFF_MAX_MS),
                     ("grpc.min_reconnect_backoff_ms", MIN_CONNECT_TIMEOUT_MS)])
        self.unavailable_since: float | None = None
        """When (time.monotonic()) a call first found the runtime gone; None: it answers."""
        self._answered = False  # whether the runtime has answered a call yet
        self._runtime = api_pb2_grpc.RuntimeServiceStub(self._channel)
        self._images = api_pb2_grpc.ImageServiceStub(self._channel)
        # each RPC's full name, for the spans of traced pods ("runtime.v1.ImageService/PullImage")
        self._names = {id(getattr(stub, method)): f"runtime.v1.{service}/{method}"
                       for stub, service in ((self._runtime, "RuntimeService"),
                                             (self._images, "ImageService"))
                       for method in vars(stub) if not method.startswith("_")}

    async def close(self) -> None:
        """Close the gRPC channel."""
        await self._channel.close()

    async def wait_ready(self, timeout: float) -> api_pb2.VersionResponse:
        """Poll Version until the runtime answers (right after it was started)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return await self.version(api_pb2.VersionRequest(), timeout=max(left, 0.05))
            except CRIError as error:
                if time.monotonic() + READY_POLL_INTERVAL >= deadline:
                    raise TimeoutError(f"container runtime at {self.endpoint} did not answer "
                                       f"within {timeout:g}s: {error.message}") from error
            await asyncio.sleep(READY_POLL_INTERVAL)

    async def _call(self, rpc: Callable[..., Awaitable[Any]], request: Message,
                    timeout: float | None, default: float = REQUEST_TIMEOUT) -> Any:
        """Make one unary call with a deadline, turning gRPC failures into CRIError; a
        span of it when a traced pod's sync makes it."""
        with child_span(self._names.get(id(rpc), "runtime.v1/call")):
            try:
                answer = await rpc(request, timeout=default if timeout is None else timeout)
            except grpc.aio.AioRpcError as error:
                if error.code() is grpc.StatusCode.UNAVAILABLE:
                    self._unavailable(error.details() or "")
                    raise RuntimeUnavailable(error.code(), error.details() or "") from error
                raise CRIError(error.code(), error.details() or "") from error
        if self.unavailable_since is not None and self._answered:
            log.info("container runtime at %s answers again, after %.1f s", self.endpoint,
                     time.monotonic() - self.unavailable_since)
        self.unavailable_since, self._answered = None, True
        return answer

    def _unavailable(self, details: str) -> None:
        """The runtime is gone: say so once, however many calls fail until it is back
        (and not at all while a runtime that never answered yet is starting)."""
        if self.unavailable_since is None:
            self.unavailable_since = time.monotonic()
            if self._answered:
                log.warning("container runtime at %s is unavailable, reconnecting: %s",
                            self.endpoint, details)

    async def version(self, request: api_pb2.VersionRequest,
                      timeout: float | None = None) -> api_pb2.VersionResponse:
        """Version: the runtime's name and version, and the CRI version it speaks."""
        return await self._call(self._runtime.Version, request, timeout)

    async def status(self, request: api_pb2.StatusRequest,
                     timeout: float | None = None) -> api_pb2.StatusResponse:
        """Status: the RuntimeReady and NetworkReady conditions."""
        return await self._call(self._runtime.Status, request, timeout)

    async def run_pod_sandbox(self, request: api_pb2.RunPodSandboxRequest,
                              timeout: float | None = None) -> api_pb2.RunPodSandboxResponse:
        """RunPodSandbox: create the pod's sandbox (namespaces, network, pause) and start it."""
        return await self._call(self._runtime.RunPodSandbox, request, timeout)

    async def stop_pod_sandbox(self, request: api_pb2.StopPodSandboxRequest,
                               timeout: float | None = None) -> api_pb2.StopPodSandboxResponse:
        """StopPodSandbox: kill the sandbox's containers and release its network."""
        return await self._call(self._runtime.StopPodSandbox, request, timeout)

    async def remove_pod_sandbox(
            self, request: api_pb2.RemovePodSandboxRequest,
            timeout: float | None = None) -> api_pb2.RemovePodSandboxResponse:
        """RemovePodSandbox: delete the sandbox and its containers; a missing one is fine."""
        return await self._call(self._runtime.RemovePodSandbox, request, timeout)

    async def pod_sandbox_status(
            self, request: api_pb2.PodSandboxStatusRequest,
            timeout: float | None = None) -> api_pb2.PodSandboxStatusResponse:
        """PodSandboxStatus: the sandbox's state, IPs, labels and annotations."""
        return await self._call(self._runtime.PodSandboxStatus, request, timeout)

    async def list_pod_sandbox(self, request: api_pb2.ListPodSandboxRequest,
                               timeout: float | None = None) -> api_pb2.ListPodSandboxResponse:
        """ListPodSandbox: the sandboxes matching the filter (id, state, labels)."""
        return await self._call(self._runtime.ListPodSandbox, request, timeout)

    async def create_container(
            self, request: api_pb2.CreateContainerRequest,
            timeout: float | None = None) -> api_pb2.CreateContainerResponse:
        """CreateContainer: make a container in a sandbox from its config, not started yet."""
        return await self._call(self._runtime.CreateContainer, request, timeout)

    async def start_container(self, request: api_pb2.StartContainerRequest,
                              timeout: float | None = None) -> api_pb2.StartContainerResponse:
        """StartContainer: start a created container's process."""
        return await self._call(self._runtime.StartContainer, request, timeout)

    async def stop_container(self, request: api_pb2.StopContainerRequest,
                             timeout: float | None = None) -> api_pb2.StopContainerResponse:
        """StopContainer: SIGTERM, then SIGKILL after request.timeout seconds."""
        return await self._call(self._runtime.StopContainer, request, timeout)

    async def remove_container(
            self, request: api_pb2.RemoveContainerRequest,
            timeout: float | None = None) -> api_pb2.RemoveContainerResponse:
        """RemoveContainer: delete a container, killing it first; a missing one is fine."""
        return await self._call(self._runtime.RemoveContainer, request, timeout)

    async def list_containers(self, request: api_pb2.ListContainersRequest,
                              timeout: float | None = None) -> api_pb2.ListContainersResponse:
        """ListContainers: the containers matching the filter (id, state, sandbox, labels)."""
        return await self._call(self._runtime.ListContainers, request, timeout)

    async def container_status(
            self, request: api_pb2.ContainerStatusRequest,
            timeout: float | None = None) -> api_pb2.ContainerStatusResponse:
        """ContainerStatus: state, times, exit code, reason, image and log path."""
        return await self._call(self._runtime.ContainerStatus, request, timeout)

    async def exec_sync(self, request: api_pb2.ExecSyncRequest,
                        timeout: float | None = None) -> api_pb2.ExecSyncResponse:
        """ExecSync: run a command in a running container and return its output and exit code."""
        return await self._call(self._runtime.ExecSync, request, timeout)

    async def exec(self, request: api_pb2.ExecRequest,
                   timeout: float | None = None) -> api_pb2.ExecResponse:
        """Exec: a URL on containerd's streaming server for the command."""
        return await self._call(self._runtime.Exec, request, timeout)

    async def attach(self, request: api_pb2.AttachRequest,
                     timeout: float | None = None) -> api_pb2.AttachResponse:
        """Attach: a URL on containerd's streaming server for the container's stdio."""
        return await self._call(self._runtime.Attach, request, timeout)

    async def port_forward(self, request: api_pb2.PortForwardRequest,
                           timeout: float | None = None) -> api_pb2.PortForwardResponse:
        """PortForward: a URL on containerd's streaming server to the sandbox's ports."""
        return await self._call(self._runtime.PortForward, request, timeout)

    async def container_stats(self, request: api_pb2.ContainerStatsRequest,
                              timeout: float | None = None) -> api_pb2.ContainerStatsResponse:
        """ContainerStats: one container's CPU, memory and writable-layer usage."""
        return await self._call(self._runtime.ContainerStats, request, timeout)

    async def list_container_stats(
            self, request: api_pb2.ListContainerStatsRequest,
            timeout: float | None = None) -> api_pb2.ListContainerStatsResponse:
        """ListContainerStats: the usage of every running container matching the filter."""
        return await self._call(self._runtime.ListContainerStats, request, timeout)

    async def list_pod_sandbox_stats(
            self, request: api_pb2.ListPodSandboxStatsRequest,
            timeout: float | None = None) -> api_pb2.ListPodSandboxStatsResponse:
        """ListPodSandboxStats: the usage of every ready sandbox matching the filter."""
        return await self._call(self._runtime.ListPodSandboxStats, request, timeout)

    async def pull_image(self, request: api_pb2.PullImageRequest,
                         timeout: float | None = None) -> api_pb2.PullImageResponse:
        """PullImage: fetch an image; answers the image's reference (its id)."""
        return await self._call(self._images.PullImage, request, timeout, PULL_IMAGE_TIMEOUT)

    async def list_images(self, request: api_pb2.ListImagesRequest,
                          timeout: float | None = None) -> api_pb2.ListImagesResponse:
        """ListImages: the images on the node."""
        return await self._call(self._images.ListImages, request, timeout)

    async def image_status(self, request: api_pb2.ImageStatusRequest,
                           timeout: float | None = None) -> api_pb2.ImageStatusResponse:
        """ImageStatus: the image, or an answer without one when it is not present."""
        return await self._call(self._images.ImageStatus, request, timeout)

    async def remove_image(self, request: api_pb2.RemoveImageRequest,
                           timeout: float | None = None) -> api_pb2.RemoveImageResponse:
        """RemoveImage: delete an image and all its names; a missing one is fine."""
        return await self._call(self._images.RemoveImage, request, timeout)

    async def image_fs_info(self, request: api_pb2.ImageFsInfoRequest,
                            timeout: float | None = None) -> api_pb2.ImageFsInfoResponse:
        """ImageFsInfo: how much of the image filesystem the images use."""
        return await self._call(self._images.ImageFsInfo, request, timeout)
