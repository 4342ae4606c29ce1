"""An in-process fake container runtime for hollow nodes (`--runtime simulated`).

Like upstream kubemark's hollow kubelet, which runs the real kubelet on a fake runtime:
sandboxes, containers and images are records in dicts, nothing is executed. It answers
the CRI as containerd does (same ids, names, states, errors and messages) so the
kubelet's own logic runs unchanged: pod IPs come from the node's pod CIDR, a started
container runs until it is stopped, images must be pulled before a container uses them.
It is small on purpose: hundreds of hollow nodes with dozens of pods live in one process.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import grpc

from minikube_py.cri import CRIError, RuntimeService
from minikube_py.gen.cri import api_pb2

IMAGE_SIZE = 4 * 1024 * 1024
"""The size every simulated image claims, in bytes."""

IMAGE_FS_MOUNTPOINT = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs"

RUNTIME_CONDITIONS = ("RuntimeReady", "NetworkReady")


def new_id() -> str:
    """A container or sandbox id shaped like containerd's: 64 hex digits."""
    return os.urandom(32).hex()


def not_found(message: str) -> CRIError:
    return CRIError(grpc.StatusCode.NOT_FOUND, message)


def normalize_image(name: str) -> str:
    """The reference containerd stores: `busybox` is docker.io/library/busybox:latest."""
    first, _, rest = name.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        name = f"docker.io/{name}" if rest else f"docker.io/library/{name}"
    last = name.rsplit("/", 1)[-1]
    if "@" not in last and ":" not in last:
        name = f"{name}:latest"
    return name


def labels_match(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    """CRI label selectors: every key must be present with exactly that value."""
    return all(labels.get(key) == value for key, value in selector.items())


class IPPool:
    """host-local IPAM over a pod CIDR: .1 is the bridge's gateway, pods get .2 onwards.

    Like host-local it hands out addresses round-robin from the last one given, so an
    address that was just released is not reused at once.
    """

    def __init__(self, cidr: str) -> None:
        network = ipaddress.ip_network(cidr)
        self.range = f"{network.network_address + 2}-{network.broadcast_address - 1}"
        self._first = int(network.network_address) + 2
        self._last = int(network.broadcast_address) - 1
        self._address = type(network.network_address)
        self._next = self._first
        self._used: set[int] = set()

    def allocate(self) -> str | None:
        """A free address, or None when the range is exhausted."""
        size = self._last - self._first + 1
        for step in range(size):
            candidate = self._first + (self._next - self._first + step) % size
            if candidate not in self._used:
                self._used.add(candidate)
                self._next = candidate + 1 if candidate < self._last else self._first
                return str(self._address(candidate))
        return None

    def release(self, ip: str) -> None:
        self._used.discard(int(ipaddress.ip_address(ip)))


@dataclass(slots=True)
class Sandbox:
    """A pod sandbox: its status as PodSandboxStatus answers it, and where its logs go."""

    name: str
    status: api_pb2.PodSandboxStatus
    log_directory: str


@dataclass(slots=True)
class Container:
    """A container: its status as ContainerStatus answers it, and its config's image."""

    name: str
    sandbox_id: str
    image: api_pb2.ImageSpec
    status: api_pb2.ContainerStatus


class SimulatedRuntime(RuntimeService):
    """The fake CRI runtime of hollow nodes: state in dicts, no processes, no network."""

    def __init__(self, pod_cidr: str = "10.250.0.0/24", start_delay: float = 0.0,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self.start_delay = start_delay
        self.clock = clock
        self.ips = IPPool(pod_cidr)
        self.sandboxes: dict[str, Sandbox] = {}
        self.containers: dict[str, Container] = {}
        self.images: dict[str, api_pb2.Image] = {}
        self._image_names: dict[str, str] = {}
        self._names: dict[str, str] = {}

    async def close(self) -> None:
        """Forget every sandbox, container and image."""
        self.sandboxes.clear()
        self.containers.clear()
        self.images.clear()
        self._image_names.clear()
        self._names.clear()

    # -- helpers -------------------------------------------------------------------------

    async def _work(self, timeout: float | None) -> None:
        """Take start_delay, or fail with DEADLINE_EXCEEDED when the caller waits less."""
        if self.start_delay <= 0:
            return
        if timeout is not None and timeout < self.start_delay:
            await asyncio.sleep(timeout)
            raise CRIError(grpc.StatusCode.DEADLINE_EXCEEDED, "context deadline exceeded")
        await asyncio.sleep(self.start_delay)

    def _reserve(self, kind: str, name: str, owner: str) -> None:
        """Reserve a sandbox or container name, as containerd's name registrar does."""
        holder = self._names.setdefault(name, owner)
        if holder != owner:
            raise CRIError(grpc.StatusCode.UNKNOWN,
                           f'failed to reserve {kind} name "{name}": '
                           f'name "{name}" is reserved for "{holder}"')

    def _sandbox(self, sandbox_id: str, message: str) -> Sandbox:
        sandbox = self.sandboxes.get(sandbox_id)
        if sandbox is None:
            raise not_found(message)
        return sandbox

    def _container(self, container_id: str) -> Container:
        container = self.containers.get(container_id)
        if container is None:
            raise not_found(
                f'an error occurred when try to find container "{container_id}": not found')
        return container

    def _image(self, name: str) -> api_pb2.Image | None:
        """Look an image up by id (with or without `sha256:`), name or digest reference."""
        for image_id in (name, f"sha256:{name}"):
            if image_id in self.images:
                return self.images[image_id]
        image_id = self._image_names.get(normalize_image(name))
        return self.images[image_id] if image_id else None

    def _stop(self, container: Container) -> None:
        """A running container's process is gone: exit code 0, reason Completed.

        As in containerd, stopping a container that never started leaves it created.
        """
        status = container.status
        if status.state == api_pb2.CONTAINER_RUNNING:
            status.state = api_pb2.CONTAINER_EXITED
            status.finished_at = self.clock()
            status.exit_code = 0
            status.reason = "Completed"

    def _remove(self, container_id: str) -> None:
        container = self.containers.pop(container_id)
        self._names.pop(container.name, None)

    # -- RuntimeService: the runtime itself ----------------------------------------------

    async def version(self, request: api_pb2.VersionRequest,
                      timeout: float | None = None) -> api_pb2.VersionResponse:
        """Version: the runtime's name and version, and the CRI version it speaks."""
        return api_pb2.VersionResponse(version="0.1.0", runtime_name="simulated",
                                       runtime_version="0.1.0", runtime_api_version="v1")

    async def status(self, request: api_pb2.StatusRequest,
                     timeout: float | None = None) -> api_pb2.StatusResponse:
        """Status: the runtime and its (pretend) network are always ready."""
        conditions = [api_pb2.RuntimeCondition(type=name, status=True)
                      for name in RUNTIME_CONDITIONS]
        return api_pb2.StatusResponse(status=api_pb2.RuntimeStatus(conditions=conditions))

    # -- RuntimeService: pod sandboxes ---------------------------------------------------

    async def run_pod_sandbox(self, request: api_pb2.RunPodSandboxRequest,
                              timeout: float | None = None) -> api_pb2.RunPodSandboxResponse:
        """RunPodSandbox: record a ready sandbox with a pod IP (none on the host network)."""
        config = request.config
        meta = config.metadata
        sandbox_id = new_id()
        name = f"{meta.name}_{meta.namespace}_{meta.uid}_{meta.attempt}"
        self._reserve("sandbox", name, sandbox_id)
        namespaces = config.linux.security_context.namespace_options
        ip = ""
        if namespaces.network != api_pb2.NODE:
            ip = self.ips.allocate() or ""
            if not ip:
                self._names.pop(name)
                raise CRIError(grpc.StatusCode.UNKNOWN,
                               f'failed to setup network for sandbox "{sandbox_id}": plugin '
                               'type="host-local" failed (add): failed to allocate for range '
                               f"0: no IP addresses available in range set: {self.ips.range}")
        status = api_pb2.PodSandboxStatus(
            id=sandbox_id, metadata=meta, state=api_pb2.SANDBOX_READY, created_at=self.clock(),
            network=api_pb2.PodSandboxNetworkStatus(ip=ip),
            linux=api_pb2.LinuxPodSandboxStatus(
                namespaces=api_pb2.Namespace(options=namespaces)),
            labels=config.labels, annotations=config.annotations,
            runtime_handler=request.runtime_handler)
        self.sandboxes[sandbox_id] = Sandbox(name, status, config.log_directory)
        return api_pb2.RunPodSandboxResponse(pod_sandbox_id=sandbox_id)

    async def stop_pod_sandbox(self, request: api_pb2.StopPodSandboxRequest,
                               timeout: float | None = None) -> api_pb2.StopPodSandboxResponse:
        """StopPodSandbox: stop its containers, release its IP, mark it not ready."""
        sandbox_id = request.pod_sandbox_id
        sandbox = self._sandbox(sandbox_id, f'an error occurred when try to find sandbox '
                                            f'"{sandbox_id}": not found')
        for container in self.containers.values():
            if container.sandbox_id == sandbox_id:
                self._stop(container)
        if sandbox.status.network.ip:
            self.ips.release(sandbox.status.network.ip)
            sandbox.status.network.ip = ""
        sandbox.status.state = api_pb2.SANDBOX_NOTREADY
        return api_pb2.StopPodSandboxResponse()

    async def remove_pod_sandbox(
            self, request: api_pb2.RemovePodSandboxRequest,
            timeout: float | None = None) -> api_pb2.RemovePodSandboxResponse:
        """RemovePodSandbox: stop it if needed, then forget it and its containers."""
        sandbox_id = request.pod_sandbox_id
        if sandbox_id in self.sandboxes:
            await self.stop_pod_sandbox(api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox_id))
            for container_id in [container_id for container_id, c in self.containers.items()
                                 if c.sandbox_id == sandbox_id]:
                self._remove(container_id)
            self._names.pop(self.sandboxes.pop(sandbox_id).name, None)
        return api_pb2.RemovePodSandboxResponse()

    async def pod_sandbox_status(
            self, request: api_pb2.PodSandboxStatusRequest,
            timeout: float | None = None) -> api_pb2.PodSandboxStatusResponse:
        """PodSandboxStatus: the recorded status."""
        sandbox = self._sandbox(request.pod_sandbox_id,
                                "an error occurred when try to find sandbox: not found")
        return api_pb2.PodSandboxStatusResponse(status=sandbox.status)

    async def list_pod_sandbox(self, request: api_pb2.ListPodSandboxRequest,
                               timeout: float | None = None) -> api_pb2.ListPodSandboxResponse:
        """ListPodSandbox: the sandboxes matching the filter; set fields are ANDed."""
        wanted = request.filter
        items = []
        for sandbox_id, sandbox in self.sandboxes.items():
            status = sandbox.status
            if ((wanted.id and wanted.id != sandbox_id)
                    or (wanted.HasField("state") and wanted.state.state != status.state)
                    or not labels_match(status.labels, wanted.label_selector)):
                continue
            items.append(api_pb2.PodSandbox(
                id=sandbox_id, metadata=status.metadata, state=status.state,
                created_at=status.created_at, labels=status.labels,
                annotations=status.annotations, runtime_handler=status.runtime_handler))
        return api_pb2.ListPodSandboxResponse(items=items)

    # -- RuntimeService: containers ------------------------------------------------------

    async def create_container(
            self, request: api_pb2.CreateContainerRequest,
            timeout: float | None = None) -> api_pb2.CreateContainerResponse:
        """CreateContainer: record a created container; its image must have been pulled."""
        await self._work(timeout)
        sandbox = self._sandbox(request.pod_sandbox_id, f'failed to find sandbox id '
                                                        f'"{request.pod_sandbox_id}": not found')
        config = request.config
        image = self._image(config.image.image)
        if image is None:
            raise not_found(f'failed to resolve image "{config.image.image}": not found')
        container_id = new_id()
        meta = sandbox.status.metadata
        name = (f"{config.metadata.name}_{meta.name}_{meta.namespace}_{meta.uid}_"
                f"{config.metadata.attempt}")
        self._reserve("container", name, container_id)
        log_path = (os.path.join(sandbox.log_directory, config.log_path)
                    if config.log_path else "")
        status = api_pb2.ContainerStatus(
            id=container_id, metadata=config.metadata, state=api_pb2.CONTAINER_CREATED,
            created_at=self.clock(),
            image=api_pb2.ImageSpec(image=image.repo_tags[0] if image.repo_tags
                                    else config.image.image),
            image_ref=image.repo_digests[0], image_id=image.id, labels=config.labels,
            annotations=config.annotations, mounts=config.mounts, log_path=log_path,
            resources=api_pb2.ContainerResources(linux=config.linux.resources))
        self.containers[container_id] = Container(name, request.pod_sandbox_id,
                                                  api_pb2.ImageSpec(image=config.image.image),
                                                  status)
        return api_pb2.CreateContainerResponse(container_id=container_id)

    async def start_container(self, request: api_pb2.StartContainerRequest,
                              timeout: float | None = None) -> api_pb2.StartContainerResponse:
        """StartContainer: a created container becomes running, and stays so."""
        await self._work(timeout)
        container = self._container(request.container_id)
        status = container.status
        if status.state != api_pb2.CONTAINER_CREATED:
            raise CRIError(grpc.StatusCode.UNKNOWN,
                           f'failed to set starting state for container "{status.id}": '
                           f"container is in {api_pb2.ContainerState.Name(status.state)} state")
        status.state = api_pb2.CONTAINER_RUNNING
        status.started_at = self.clock()
        return api_pb2.StartContainerResponse()

    async def stop_container(self, request: api_pb2.StopContainerRequest,
                             timeout: float | None = None) -> api_pb2.StopContainerResponse:
        """StopContainer: the container exits at once with code 0; stopping again is fine."""
        self._stop(self._container(request.container_id))
        return api_pb2.StopContainerResponse()

    async def remove_container(
            self, request: api_pb2.RemoveContainerRequest,
            timeout: float | None = None) -> api_pb2.RemoveContainerResponse:
        """RemoveContainer: forget the container; a missing one is fine."""
        if request.container_id in self.containers:
            self._remove(request.container_id)
        return api_pb2.RemoveContainerResponse()

    async def list_containers(self, request: api_pb2.ListContainersRequest,
                              timeout: float | None = None) -> api_pb2.ListContainersResponse:
        """ListContainers: the containers matching the filter; set fields are ANDed."""
        wanted = request.filter
        found = []
        for container_id, container in self.containers.items():
            status = container.status
            if ((wanted.id and wanted.id != container_id)
                    or (wanted.pod_sandbox_id and wanted.pod_sandbox_id != container.sandbox_id)
                    or (wanted.HasField("state") and wanted.state.state != status.state)
                    or not labels_match(status.labels, wanted.label_selector)):
                continue
            found.append(api_pb2.Container(
                id=container_id, pod_sandbox_id=container.sandbox_id, metadata=status.metadata,
                image=container.image, image_ref=status.image_id, state=status.state,
                created_at=status.created_at, labels=status.labels,
                annotations=status.annotations, image_id=status.image_id))
        return api_pb2.ListContainersResponse(containers=found)

    async def container_status(
            self, request: api_pb2.ContainerStatusRequest,
            timeout: float | None = None) -> api_pb2.ContainerStatusResponse:
        """ContainerStatus: the recorded status."""
        return api_pb2.ContainerStatusResponse(
            status=self._container(request.container_id).status)

    async def exec_sync(self, request: api_pb2.ExecSyncRequest,
                        timeout: float | None = None) -> api_pb2.ExecSyncResponse:
        """ExecSync: every command in a running container succeeds, printing nothing."""
        container = self.containers.get(request.container_id)
        if container is None:
            raise not_found(f'failed to exec in container: failed to find container '
                            f'"{request.container_id}" in store: not found')
        if container.status.state != api_pb2.CONTAINER_RUNNING:
            state = api_pb2.ContainerState.Name(container.status.state)
            raise CRIError(grpc.StatusCode.UNKNOWN,
                           f"failed to exec in container: container is in {state} state")
        return api_pb2.ExecSyncResponse(exit_code=0)

    # -- RuntimeService: stats -----------------------------------------------------------

    def _stats(self, container_id: str, container: Container) -> api_pb2.ContainerStats:
        """All-zero usage for one container."""
        now = self.clock()
        status = container.status
        return api_pb2.ContainerStats(
            attributes=api_pb2.ContainerAttributes(
                id=container_id, metadata=status.metadata, labels=status.labels,
                annotations=status.annotations),
            cpu=api_pb2.CpuUsage(timestamp=now, usage_core_nano_seconds=api_pb2.UInt64Value(),
                                 usage_nano_cores=api_pb2.UInt64Value()),
            memory=api_pb2.MemoryUsage(timestamp=now, working_set_bytes=api_pb2.UInt64Value(),
                                       usage_bytes=api_pb2.UInt64Value()),
            writable_layer=api_pb2.FilesystemUsage(
                timestamp=now, fs_id=api_pb2.FilesystemIdentifier(mountpoint=IMAGE_FS_MOUNTPOINT),
                used_bytes=api_pb2.UInt64Value(), inodes_used=api_pb2.UInt64Value()))

    def _running(self, ids: Iterable[str]) -> list[api_pb2.ContainerStats]:
        return [self._stats(container_id, self.containers[container_id]) for container_id in ids
                if self.containers[container_id].status.state == api_pb2.CONTAINER_RUNNING]

    async def container_stats(self, request: api_pb2.ContainerStatsRequest,
                              timeout: float | None = None) -> api_pb2.ContainerStatsResponse:
        """ContainerStats: zero usage."""
        container = self.containers.get(request.container_id)
        if container is None:
            raise not_found("failed to find container: not found")
        return api_pb2.ContainerStatsResponse(stats=self._stats(request.container_id, container))

    async def list_container_stats(
            self, request: api_pb2.ListContainerStatsRequest,
            timeout: float | None = None) -> api_pb2.ListContainerStatsResponse:
        """ListContainerStats: zero usage for every running container matching the filter."""
        wanted = request.filter
        ids = [container_id for container_id, container in self.containers.items()
               if (not wanted.id or wanted.id == container_id)
               and (not wanted.pod_sandbox_id or wanted.pod_sandbox_id == container.sandbox_id)
               and labels_match(container.status.labels, wanted.label_selector)]
        return api_pb2.ListContainerStatsResponse(stats=self._running(ids))

    async def list_pod_sandbox_stats(
            self, request: api_pb2.ListPodSandboxStatsRequest,
            timeout: float | None = None) -> api_pb2.ListPodSandboxStatsResponse:
        """ListPodSandboxStats: zero usage for every ready sandbox matching the filter."""
        wanted = request.filter
        now = self.clock()
        stats = []
        for sandbox_id, sandbox in self.sandboxes.items():
            status = sandbox.status
            if (status.state != api_pb2.SANDBOX_READY or (wanted.id and wanted.id != sandbox_id)
                    or not labels_match(status.labels, wanted.label_selector)):
                continue
            ids = [container_id for container_id, container in self.containers.items()
                   if container.sandbox_id == sandbox_id]
            stats.append(api_pb2.PodSandboxStats(
                attributes=api_pb2.PodSandboxAttributes(
                    id=sandbox_id, metadata=status.metadata, labels=status.labels,
                    annotations=status.annotations),
                linux=api_pb2.LinuxPodSandboxStats(
                    cpu=api_pb2.CpuUsage(timestamp=now,
                                         usage_core_nano_seconds=api_pb2.UInt64Value()),
                    memory=api_pb2.MemoryUsage(timestamp=now,
                                               working_set_bytes=api_pb2.UInt64Value()),
                    containers=self._running(ids))))
        return api_pb2.ListPodSandboxStatsResponse(stats=stats)

    # -- ImageService --------------------------------------------------------------------

    async def pull_image(self, request: api_pb2.PullImageRequest,
                         timeout: float | None = None) -> api_pb2.PullImageResponse:
        """PullImage: any name succeeds; the image id is derived from the reference."""
        reference = normalize_image(request.image.image)
        image = self._image(reference)
        if image is None:
            digest = hashlib.sha256(reference.encode()).hexdigest()
            image = api_pb2.Image(id=f"sha256:{digest}", size=IMAGE_SIZE)
            if "@" in reference:
                image.repo_digests.append(reference)
            else:
                image.repo_tags.append(reference)
                image.repo_digests.append(f"{reference.rsplit(':', 1)[0]}@{image.id}")
            self.images[image.id] = image
            for name in [*image.repo_tags, *image.repo_digests]:
                self._image_names[name] = image.id
        return api_pb2.PullImageResponse(image_ref=image.id)

    async def list_images(self, request: api_pb2.ListImagesRequest,
                          timeout: float | None = None) -> api_pb2.ListImagesResponse:
        """ListImages: the pulled images, or only the one the filter names."""
        if request.filter.image.image:
            image = self._image(request.filter.image.image)
            return api_pb2.ListImagesResponse(images=[image] if image else [])
        return api_pb2.ListImagesResponse(images=list(self.images.values()))

    async def image_status(self, request: api_pb2.ImageStatusRequest,
                           timeout: float | None = None) -> api_pb2.ImageStatusResponse:
        """ImageStatus: the image, or an answer without one when it was not pulled."""
        image = self._image(request.image.image)
        return api_pb2.ImageStatusResponse(image=image) if image else \
            api_pb2.ImageStatusResponse()

    async def remove_image(self, request: api_pb2.RemoveImageRequest,
                           timeout: float | None = None) -> api_pb2.RemoveImageResponse:
        """RemoveImage: forget the image and every name it has; a missing one is fine."""
        image = self._image(request.image.image)
        if image is not None:
            del self.images[image.id]
            for name in [*image.repo_tags, *image.repo_digests]:
                self._image_names.pop(name, None)
        return api_pb2.RemoveImageResponse()

    async def image_fs_info(self, request: api_pb2.ImageFsInfoRequest,
                            timeout: float | None = None) -> api_pb2.ImageFsInfoResponse:
        """ImageFsInfo: the made-up sizes of the pulled images, added up."""
        used = sum(image.size for image in self.images.values())
        usage = api_pb2.FilesystemUsage(
            timestamp=self.clock(), fs_id=api_pb2.FilesystemIdentifier(
                mountpoint=IMAGE_FS_MOUNTPOINT),
            used_bytes=api_pb2.UInt64Value(value=used),
            inodes_used=api_pb2.UInt64Value(value=len(self.images)))
        return api_pb2.ImageFsInfoResponse(image_filesystems=[usage])
