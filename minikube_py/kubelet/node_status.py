"""Node registration and node status: the kubelet's own Node object.

Upstream pkg/kubelet/kubelet_node_status.go and pkg/kubelet/nodestatus/setters.go:

    run()
      register        create the Node: default labels, podCIDR, registration taints and a
                      first status; if it exists already, reconcile its default labels.
                      Retried 100 ms, 200 ms, ... up to 7 s apart until it works.
      every 10 s      update_status: GET the Node, run the setters on it, and PUT /status
                      only when something besides heartbeat times changed, or when 5 min
                      passed since the last write (the Lease is the frequent heartbeat).
      Node deleted    the GET answers 404: register again.
      CSINode         once the Node exists, the node's CSINode too (csinode.py), tried
                      again on each sync until it is there.

    setters, in upstream's order (each fills one part of node.status):
      addresses      InternalIP (the node IP) and Hostname
      machine info   capacity cpu/memory/ephemeral-storage/pods; allocatable = capacity
                     - kube-reserved - system-reserved - hard eviction thresholds
      version info   kernel, OS image, "<runtime>://<version>", kubelet version
      endpoints      daemonEndpoints.kubeletEndpoint.Port
      images         the 50 biggest images, names = digests then tags (5 at most)
      OS / arch      operatingSystem, architecture
      conditions     MemoryPressure, DiskPressure, PIDPressure (from the eviction
                     manager), then Ready (from the runtime's RuntimeReady/NetworkReady)

A condition's lastTransitionTime moves only when its status changes; its
lastHeartbeatTime moves on every update (and is ignored when deciding to write).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import logging
import os
import platform
import socket
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.meta import now as utc_now
from minikube_py.api.meta import rfc3339
from minikube_py.api.quantity import format_quantity, parse_quantity
from minikube_py.api.schema.written import always_written, fill_always_written
from minikube_py.client.errors import AlreadyExists, ClientError, Conflict, NotFound
from minikube_py.client.rest import Client
from minikube_py.cri import CRIError, RuntimeService, RuntimeUnavailable
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.csinode import initialize_csi_node
from minikube_py.kubelet.eviction import Threshold, existing_ancestor, read_meminfo
from minikube_py.lifecycle import wait_for_event

log = logging.getLogger(__name__)

KUBELET_VERSION = "v1.37.0-minikube-py"  # the version the API server reports, too
DEFAULT_ROOT_DIR = Path("/var/lib/minikube-py/kubelet")
MAX_PODS = 110
NODE_STATUS_UPDATE_FREQUENCY = 10.0  # nodeStatusUpdateFrequency: how often to check
NODE_STATUS_REPORT_FREQUENCY = 300.0  # nodeStatusReportFrequency: write at least this often
NODE_ALWAYS_WRITTEN = always_written("v1", "Node")
NODE_STATUS_UPDATE_RETRY = 5
NODE_STATUS_MAX_IMAGES = 50
MAX_NAMES_PER_IMAGE = 5
REGISTER_BACKOFF_INITIAL = 0.1
REGISTER_BACKOFF_MAX = 7.0
MAX_WAIT_FOR_CONTAINER_RUNTIME = 30.0
"""Seconds the runtime may fail its status check before the node says "container runtime
is down" (upstream maxWaitForContainerRuntime): a containerd restart keeps the node Ready."""

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_OS = "kubernetes.io/os"
LABEL_ARCH = "kubernetes.io/arch"
LABEL_OS_BETA = "beta.kubernetes.io/os"
LABEL_ARCH_BETA = "beta.kubernetes.io/arch"
# updateDefaultLabels: the labels a re-registering kubelet puts back on an existing Node.
DEFAULT_LABELS = (LABEL_HOSTNAME, LABEL_OS, LABEL_ARCH, LABEL_OS_BETA, LABEL_ARCH_BETA)

# condition type -> ((reason, message) under pressure, (reason, message) without).
PRESSURE_CONDITIONS = {
    "MemoryPressure": (
        ("KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
        ("KubeletHasSufficientMemory", "kubelet has sufficient memory available")),
    "DiskPressure": (("KubeletHasDiskPressure", "kubelet has disk pressure"),
                     ("KubeletHasNoDiskPressure", "kubelet has no disk pressure")),
    "PIDPressure": (("KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
                    ("KubeletHasSufficientPID", "kubelet has sufficient PID available")),
}
# hardEvictionReservation: the hard thresholds that hold back allocatable.
EVICTION_RESERVED = {"memory.available": "memory", "nodefs.available": "ephemeral-storage"}
GO_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "i686": "386",
           "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}


# -- the machine --------------------------------------------------------------------------


@dataclass(frozen=True)
class HostInfo:
    """What the node reports about its machine (cadvisor's MachineInfo and VersionInfo)."""

    root_dir: Path  # the kubelet's root dir; its filesystem is the node's ephemeral storage
    hostname: str
    node_ip: str
    cpus: int
    memory_bytes: int
    ephemeral_storage_bytes: int
    machine_id: str
    system_uuid: str
    boot_id: str
    kernel_version: str
    os_image: str
    operating_system: str
    architecture: str


def read_host_info(root_dir: Path | None, *, node_ip: str | None = None,
                   hostname: str | None = None) -> HostInfo:
    """The machine facts of this process's node: given node IP and hostname, or found."""
    root = root_dir or DEFAULT_ROOT_DIR
    stat = os.statvfs(existing_ancestor(root))
    machine = _machine_facts()
    return HostInfo(
        root_dir=root, hostname=(hostname or socket.gethostname()).lower(),
        node_ip=node_ip or default_route_ip(),
        ephemeral_storage_bytes=stat.f_blocks * stat.f_frsize, **machine)


@functools.cache
def _machine_facts() -> dict[str, Any]:
    """The facts every node of this machine shares, read once per process."""
    return {
        "cpus": os.cpu_count() or 1,
        "memory_bytes": read_meminfo()["MemTotal"],
        "machine_id": _first_line(Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id")),
        "system_uuid": _first_line(Path("/sys/class/dmi/id/product_uuid")),
        "boot_id": _first_line(Path("/proc/sys/kernel/random/boot_id")),
        "kernel_version": platform.release(),
        "os_image": _os_image(),
        "operating_system": platform.system().lower(),
        "architecture": GO_ARCH.get(platform.machine(), platform.machine()),
    }


def _first_line(*paths: Path) -> str:
    """The first line of the first of these files that can be read, "" if none."""
    for path in paths:
        with contextlib.suppress(OSError):
            return path.read_text().strip()
    return ""


def _os_image() -> str:
    """PRETTY_NAME from /etc/os-release, as cadvisor reads it ("Linux" without one)."""
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            key, _, value = line.partition("=")
            if key == "PRETTY_NAME":
                return value.strip().strip('"')
    return "Linux"


def default_route_ip() -> str:
    """ChooseHostInterface: the IPv4 address this machine uses on its default route."""
    for line in Path("/proc/net/route").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == "00000000":  # destination 0.0.0.0: the default route
            gateway = socket.inet_ntoa(struct.pack("<I", int(fields[2], 16)))
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                probe.connect((gateway, 9))  # UDP connect sends nothing; it picks the source
                return str(probe.getsockname()[0])
    raise RuntimeError("cannot find the node IP: this machine has no default route "
                       "(pass --node-ip)")


# -- the status setters -------------------------------------------------------------------


def node_capacity(host: HostInfo, max_pods: int = MAX_PODS) -> dict[str, str]:
    """MachineInfo: what the machine has (cpu cores, memory and disk bytes, pod slots)."""
    return {
        "cpu": str(host.cpus),
        "ephemeral-storage": format_quantity(Decimal(host.ephemeral_storage_bytes), binary=True),
        "memory": format_quantity(Decimal(host.memory_bytes), binary=True),
        "pods": str(max_pods),
    }


def node_allocatable(capacity: Mapping[str, str], kube_reserved: Mapping[str, str],
                     system_reserved: Mapping[str, str], eviction_hard: Sequence[Threshold]
                     ) -> dict[str, str]:
    """Allocatable: capacity minus GetNodeAllocatableReservation, never below zero."""
    reserved: dict[str, Decimal] = {}
    for reservation in (kube_reserved, system_reserved):
        for name, amount in reservation.items():
            reserved[name] = reserved.get(name, Decimal(0)) + parse_quantity(amount)
    for threshold in eviction_hard:
        name = EVICTION_RESERVED.get(threshold.signal)
        if name is not None and name in capacity:
            amount = threshold.value(int(parse_quantity(capacity[name])))
            reserved[name] = reserved.get(name, Decimal(0)) + amount
    return {
        name: format_quantity(max(parse_quantity(total) - reserved.get(name, Decimal(0)),
                                  Decimal(0)), binary=name in ("memory", "ephemeral-storage"))
        for name, total in capacity.items()
    }


def node_images(images: Sequence[api_pb2.Image]) -> list[Obj]:
    """Images: the biggest NODE_STATUS_MAX_IMAGES images, digests first, then tags."""
    biggest = sorted(images, key=lambda image: (image.size, image.id), reverse=True)
    return [{"names": [*image.repo_digests, *image.repo_tags][:MAX_NAMES_PER_IMAGE],
             "sizeBytes": image.size}
            for image in biggest[:NODE_STATUS_MAX_IMAGES]]


def set_pressure_condition(conditions: list[Obj], kind: str, under_pressure: bool,
                           now: str) -> None:
    """MemoryPressureCondition / DiskPressureCondition / PIDPressureCondition.

    A new condition starts as Unknown, so its first status counts as a transition.
    """
    condition = next((c for c in conditions if c.get("type") == kind), None)
    if condition is None:
        condition = {"type": kind, "status": "Unknown"}
        conditions.append(condition)
    condition["lastHeartbeatTime"] = now
    status = "True" if under_pressure else "False"
    if condition.get("status") != status:
        reason, message = PRESSURE_CONDITIONS[kind][0 if under_pressure else 1]
        condition.update(status=status, reason=reason, message=message,
                         lastTransitionTime=now)


def set_ready_condition(conditions: list[Obj], errors: Sequence[str], now: str) -> None:
    """ReadyCondition: True "KubeletReady", or False "KubeletNotReady" with the errors.

    Ready stays where it is in the list, or comes last: old clients read the last one.
    """
    if errors:
        ready = {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                 "message": aggregate_message(errors)}
    else:
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status"}
    ready["lastHeartbeatTime"] = now
    for index, old in enumerate(conditions):
        if old.get("type") == "Ready":
            same = old.get("status") == ready["status"]
            ready["lastTransitionTime"] = old.get("lastTransitionTime", now) if same else now
            conditions[index] = ready
            return
    ready["lastTransitionTime"] = now
    conditions.append(ready)


def aggregate_message(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one error as is, several as "[a, b]"."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else f"[{', '.join(unique)}]"


def describe_runtime_condition(condition: api_pb2.RuntimeCondition | None) -> str:
    """RuntimeCondition.String(): "NetworkReady=false reason:... message:...", or <nil>."""
    if condition is None:
        return "<nil>"
    return (f"{condition.type}={'true' if condition.status else 'false'} "
            f"reason:{condition.reason} message:{condition.message}")


def status_changed(old: Obj, new: Obj) -> bool:
    """nodeStatusHasChanged: anything but the conditions' lastHeartbeatTime differs."""
    def without_heartbeats(status: Obj) -> Obj:
        conditions = {c.get("type"): {k: v for k, v in c.items() if k != "lastHeartbeatTime"}
                      for c in status.get("conditions") or []}
        return {**status, "conditions": conditions}

    if len(old.get("conditions") or []) != len(new.get("conditions") or []):
        return True
    return without_heartbeats(old) != without_heartbeats(new)


# -- the manager --------------------------------------------------------------------------


class NodeStatusManager:
    """registerWithAPIServer + syncNodeStatus: the Node exists and says how this node is."""

    def __init__(self, client: Client, node_name: str, runtime: RuntimeService, *,
                 host: HostInfo, pod_cidr: str | None, kubelet_port: int,
                 kube_reserved: Mapping[str, str], system_reserved: Mapping[str, str],
                 eviction_hard: Sequence[Threshold], labels: Mapping[str, str],
                 taints: Sequence[Obj], pressure: Callable[[], Mapping[str, bool]],
                 clock: Callable[[], datetime] = utc_now, max_pods: int = MAX_PODS,
                 update_frequency: float = NODE_STATUS_UPDATE_FREQUENCY,
                 report_frequency: float = NODE_STATUS_REPORT_FREQUENCY) -> None:
        self.client = client
        self.nodes = client.resource("nodes")
        self.node_name = node_name
        self.runtime = runtime
        self.host = host
        self.pod_cidr = pod_cidr
        self.kubelet_port = kubelet_port
        self.labels = dict(labels)
        self.taints = [dict(taint) for taint in taints]
        self.pressure = pressure
        self.clock = clock
        self.update_frequency = update_frequency
        self.report_frequency = report_frequency
        self.capacity = node_capacity(host, max_pods)
        self.allocatable = node_allocatable(self.capacity, kube_reserved, system_reserved,
                                            eviction_hard)
        self.registered = asyncio.Event()  # set while the Node is registered
        self.csi_node_initialized = False
        self._runtime_name = "unknown"
        self._runtime_errors_seen: list[str] = []  # what the last answered status said
        self._last_runtime_sync: datetime | None = None  # when the runtime last answered
        self._last_report: datetime | None = None
        self._stopped = asyncio.Event()

    # -- the loop -----------------------------------------------------------------------

    async def run(self) -> None:
        """Register (backing off 100 ms .. 7 s while it fails), then sync every 10 s."""
        backoff = REGISTER_BACKOFF_INITIAL
        while not self._stopped.is_set():
            try:
                await self.sync_node_status()
            except ClientError as error:
                log.error("node %s: %s", self.node_name, error)
            if self.registered.is_set():
                delay, backoff = self.update_frequency, REGISTER_BACKOFF_INITIAL
            else:
                delay, backoff = backoff, min(backoff * 2, REGISTER_BACKOFF_MAX)
            await wait_for_event(self._stopped, delay)

    def stop(self) -> None:
        self._stopped.set()

    async def sync_node_status(self) -> None:
        """syncNodeStatus: register first if needed, then update the status."""
        if not self.registered.is_set():
            await self.register()
        if not self.csi_node_initialized:
            await self.initialize_csi_node()
        await self.update_status()

    async def initialize_csi_node(self) -> None:
        """The CSI plugin's start: the node's CSINode exists (a failure is logged and
        tried again at the next sync, without holding up the Node's status)."""
        try:
            await initialize_csi_node(self.client, self.node_name)
        except ClientError as error:
            log.warning("node %s: initializing CSINode: %s", self.node_name, error)
            return
        self.csi_node_initialized = True

    # -- registration -------------------------------------------------------------------

    async def register(self) -> None:
        """tryRegisterWithAPIServer: create the Node, or reconcile the one that exists."""
        node = await self.initial_node()
        try:
            await self.nodes.create(node)
            log.info("registered node %s", self.node_name)
        except AlreadyExists:
            existing = await self.nodes.get(self.node_name)
            if self._reconcile_existing(node, existing):
                await self.nodes.update(existing)
            log.info("node %s was previously registered", self.node_name)
        self.registered.set()

    async def initial_node(self) -> Obj:
        """initialNode: the Node this kubelet registers, status included."""
        labels = {
            LABEL_HOSTNAME: self.host.hostname,
            LABEL_OS: self.host.operating_system,
            LABEL_ARCH: self.host.architecture,
            LABEL_OS_BETA: self.host.operating_system,
            LABEL_ARCH_BETA: self.host.architecture,
            **self.labels,
        }
        spec: Obj = {}
        if self.taints:
            spec["taints"] = copy.deepcopy(self.taints)
        if self.pod_cidr:
            spec.update(podCIDR=self.pod_cidr, podCIDRs=[self.pod_cidr])
        node: Obj = {"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": self.node_name, "labels": labels},
                     "spec": spec, "status": {}}
        await self.set_node_status(node)
        return node

    def _reconcile_existing(self, initial: Obj, existing: Obj) -> bool:
        """updateDefaultLabels (and the podCIDR, if the Node has none yet): did it change?"""
        wanted = initial["metadata"]["labels"]
        labels = existing["metadata"].setdefault("labels", {})
        changed = False
        for key in DEFAULT_LABELS:
            if key in wanted and labels.get(key) != wanted[key]:
                labels[key] = wanted[key]
                changed = True
            if labels.get(key) == "":
                del labels[key]
        spec = existing.setdefault("spec", {})
        if self.pod_cidr and not spec.get("podCIDRs"):
            spec.update(podCIDR=self.pod_cidr, podCIDRs=[self.pod_cidr])
            changed = True
        return changed

    # -- status -------------------------------------------------------------------------

    async def update_status(self, force: bool = False) -> bool:
        """updateNodeStatus: up to 5 tries of tryUpdateNodeStatus; True when it wrote.

        The first try reads the Node from the API server's watch cache (resourceVersion
        "0"): with thousands of nodes each reading its Node every 10 s, these GETs would
        otherwise be most of etcd's reads. A Conflict (someone else wrote the Node, or the
        cache was behind) is tried again on a GET from etcd; a Node that is gone is
        registered again by the next sync.
        """
        try:
            for attempt in range(1, NODE_STATUS_UPDATE_RETRY):
                try:
                    return await self._try_update_status(force, from_cache=attempt == 1)
                except Conflict as error:
                    log.info("node %s: status update conflict (try %d): %s",
                             self.node_name, attempt, error)
            return await self._try_update_status(force, from_cache=False)
        except NotFound:
            log.warning("node %s was deleted; registering it again", self.node_name)
            self.registered.clear()
            return False

    async def _try_update_status(self, force: bool, *, from_cache: bool) -> bool:
        """tryUpdateNodeStatus: GET, set, and PUT /status if it changed or is due."""
        try:
            node = await self.nodes.get(self.node_name,
                                        resource_version="0" if from_cache else None)
        except NotFound:
            if not from_cache:
                raise
            node = await self.nodes.get(self.node_name)  # the cache may not have it yet
        original = copy.deepcopy(node.get("status") or {})
        await self.set_node_status(node)
        # As upstream's Go struct would, the new status holds the fields the API server
        # always writes (kubeProxyVersion: ""), so only real changes count as changes.
        fill_always_written(node, NODE_ALWAYS_WRITTEN)
        now = self.clock()
        due = (self._last_report is None
               or (now - self._last_report).total_seconds() >= self.report_frequency)
        if not force and not due and not status_changed(original, node["status"]):
            return False
        await self.nodes.update_status(node)
        self._last_report = now
        return True

    async def set_node_status(self, node: Obj) -> None:
        """setNodeStatus: run every setter on the node, in upstream's order."""
        status = node.setdefault("status", {})
        now = rfc3339(self.clock())
        status["addresses"] = [{"type": "InternalIP", "address": self.host.node_ip},
                               {"type": "Hostname", "address": self.host.hostname}]
        status["capacity"] = dict(self.capacity)
        status["allocatable"] = dict(self.allocatable)
        status["nodeInfo"] = await self._node_info()
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": self.kubelet_port}}
        status["images"] = await self._images()
        conditions = status.setdefault("conditions", [])
        pressure = self.pressure()
        for kind in PRESSURE_CONDITIONS:
            set_pressure_condition(conditions, kind, pressure.get(kind, False), now)
        set_ready_condition(conditions, await self._runtime_errors(), now)

    async def _node_info(self) -> Obj:
        """VersionInfo + MachineInfo ids + GoRuntime. kubeProxyVersion is left unset, as
        upstream's kubelet does since KEP-4004."""
        try:
            version = await self.runtime.version(api_pb2.VersionRequest())
            self._runtime_name, runtime_version = version.runtime_name, version.runtime_version
        except CRIError:
            runtime_version = "Unknown"
        return {
            "machineID": self.host.machine_id,
            "systemUUID": self.host.system_uuid,
            "bootID": self.host.boot_id,
            "kernelVersion": self.host.kernel_version,
            "osImage": self.host.os_image,
            "containerRuntimeVersion": f"{self._runtime_name}://{runtime_version}",
            "kubeletVersion": KUBELET_VERSION,
            "operatingSystem": self.host.operating_system,
            "architecture": self.host.architecture,
        }

    async def _images(self) -> list[Obj]:
        try:
            answer = await self.runtime.list_images(api_pb2.ListImagesRequest())
        except CRIError as error:
            if not isinstance(error, RuntimeUnavailable):  # the CRI client logged that
                log.error("node %s: error getting image list: %s", self.node_name, error)
            return []
        return node_images(answer.images)

    async def _runtime_errors(self) -> list[str]:
        """runtimeErrors + networkErrors, as updateRuntimeUp records them from Status. A
        check that fails keeps the last answer until the runtime has not answered for
        MAX_WAIT_FOR_CONTAINER_RUNTIME; then the runtime is down."""
        now = self.clock()
        try:
            answer = await self.runtime.status(api_pb2.StatusRequest())
        except CRIError as error:
            if not isinstance(error, RuntimeUnavailable):  # the CRI client logged that
                log.error("node %s: container runtime status check failed: %s",
                          self.node_name, error)
            last = self._last_runtime_sync
            if last is None or (now - last).total_seconds() >= MAX_WAIT_FOR_CONTAINER_RUNTIME:
                return ["container runtime is down"]
            return self._runtime_errors_seen
        conditions = {condition.type: condition for condition in answer.status.conditions}
        errors = []
        runtime_ready = conditions.get("RuntimeReady")
        if runtime_ready is None or not runtime_ready.status:
            errors.append("container runtime not ready: "
                          + describe_runtime_condition(runtime_ready))
        network_ready = conditions.get("NetworkReady")
        if network_ready is None or not network_ready.status:
            errors.append("container runtime network not ready: "
                          + describe_runtime_condition(network_ready))
        self._runtime_errors_seen, self._last_runtime_sync = errors, now
        return errors
