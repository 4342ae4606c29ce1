"""The eviction manager: evict pods when the node runs short of memory or disk (hard thresholds).

Upstream pkg/kubelet/eviction (eviction_manager.go, helpers.go), without soft thresholds,
grace periods, min-reclaim or node-level reclaim (image and container garbage collection):

    every 10 s, synchronize:
        observe       memory.available, nodefs.available, nodefs.inodesFree, pid.available
        thresholds    which hard thresholds are met (available < threshold)
        conditions    MemoryPressure / DiskPressure / PIDPressure, reported until no
                      threshold of theirs was met for pressure_transition_period (5 min)
        local storage every pod over a local storage limit is evicted, the first
                      check it fails naming why (localStorageEviction):
                        an emptyDir over its sizeLimit
                          "Usage of EmptyDir volume "v" exceeds the limit "1Mi". "
                        the pod's ephemeral storage over its containers' limits' sum
                          "Pod ephemeral local storage usage exceeds the total limit
                           of containers 20Mi. "
                        a container's writable layer + logs over its own limit
                          "Container app exceeded its local ephemeral storage limit
                           "10Mi". "
                      if one was, that is this pass's reclaim
        reclaim       memory first, else the first threshold met: rank the active pods
                      for its resource and evict the first one that is not critical
    admit(pod)        under memory pressure reject BestEffort pods; under any other
                      pressure reject every pod that is not critical

A threshold reads `memory.available<100Mi` or `nodefs.available<10%` (of capacity).
The kubelet turns the evicted pod into phase Failed, reason Evicted, with our message.

Pod usage, as `pod_usage(uid)` returns it (missing keys are unknown; None: no stats):

    {"memory": 209715200, "ephemeral-storage": 8192,        # pod totals, bytes
     "containers": {"app": {"memory": 209715200, "ephemeral-storage": 4096}}}

Totals missing from the top level are summed from "containers"; the per-container
numbers are what the eviction message names. A container's ephemeral-storage is its
writable layer plus its logs. The pod's ephemeral storage, for its limit, is that of its
containers plus its local ephemeral volumes (IsLocalEphemeralVolume): emptyDirs on disk
(medium "") and configMap volumes (gitRepo volumes are not built).
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.meta import now as utc_now
from minikube_py.api.quantity import canonical_quantity, format_quantity, memory_bytes
from minikube_py.api.quota import pod_limits
from minikube_py.api.scheduling.taints import tolerations_tolerate_taint
from minikube_py.cri import CRIError
from minikube_py.kubelet.resources import BEST_EFFORT, SYSTEM_CRITICAL_PRIORITY, qos_class

PodUsage = dict[str, Any]
log = logging.getLogger(__name__)

PRESSURE_TRANSITION_PERIOD = 300.0  # --eviction-pressure-transition-period
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
CONFIG_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
MEMORY_PRESSURE_TAINT: Obj = {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}

# signalToResource: the resource each signal measures (also: the signals that exist).
SIGNAL_TO_RESOURCE = {
    "memory.available": "memory",
    "allocatableMemory.available": "memory",
    "nodefs.available": "ephemeral-storage",
    "nodefs.inodesFree": "inodes",
    "imagefs.available": "ephemeral-storage",
    "imagefs.inodesFree": "inodes",
    "containerfs.available": "ephemeral-storage",
    "containerfs.inodesFree": "inodes",
    "pid.available": "pids",
}
# signalToNodeCondition: which node condition a met threshold raises.
RESOURCE_TO_CONDITION = {
    "memory": "MemoryPressure",
    "ephemeral-storage": "DiskPressure",
    "inodes": "DiskPressure",
    "pids": "PIDPressure",
}
CONDITIONS = ("MemoryPressure", "DiskPressure", "PIDPressure")

NODE_LOW_MESSAGE = "The node was low on resource: {resource}. "
THRESHOLD_MET_MESSAGE = "Threshold quantity: {quantity}, available: {available}. "
CONTAINER_MESSAGE = ("Container {name} was using {usage}, request is {request}, "
                     "has larger consumption of {resource}. ")
NODE_CONDITION_MESSAGE = "The node had condition: {conditions}. "
EMPTY_DIR_MESSAGE = 'Usage of EmptyDir volume "{name}" exceeds the limit "{limit}". '
POD_EPHEMERAL_STORAGE_MESSAGE = (
    "Pod ephemeral local storage usage exceeds the total limit of containers {limit}. ")
CONTAINER_EPHEMERAL_STORAGE_MESSAGE = (
    'Container {name} exceeded its local ephemeral storage limit "{limit}". ')

# volume_usage(pod): the bytes each of its emptyDir and configMap volumes holds, by name.
VolumeUsage = Callable[[Obj], Awaitable[dict[str, int]]]


# -- thresholds ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Threshold:
    """evictionapi.Threshold: `signal < quantity`, or `signal < percentage of capacity`."""

    signal: str
    quantity: str | None = None  # canonical, e.g. "100Mi"
    percentage: float = 0.0  # a fraction: 0.1 for "10%" (float32, as upstream)

    def value(self, capacity: int) -> int:
        """GetThresholdQuantity: the threshold in the signal's unit, for this capacity."""
        if self.quantity is not None:
            return memory_bytes(self.quantity)
        return int(capacity * self.percentage)

    def text(self, capacity: int) -> str:
        """The threshold as the eviction message prints it ("100Mi", "9876543210")."""
        if self.quantity is not None:
            return self.quantity
        return format_quantity(Decimal(self.value(capacity)), binary=True)


def parse_thresholds(text: str) -> list[Threshold]:
    """ParseThresholdConfig for --eviction-hard ("memory.available<100Mi,nodefs.available<10%").

    "0%" and "100%" mean no threshold, as upstream; anything else invalid raises ValueError.
    """
    statements: dict[str, str] = {}
    for pair in filter(None, (part.strip() for part in text.split(","))):
        signal, separator, value = pair.partition("<")
        if not separator or "<" in value:
            raise ValueError("malformed pair, expect string<string")
        statements[signal.strip()] = value.strip()
    thresholds = []
    for signal, value in statements.items():
        threshold = parse_threshold_statement(signal, value)
        if threshold is not None:
            thresholds.append(threshold)
    return thresholds


def parse_threshold_statement(signal: str, value: str) -> Threshold | None:
    """parseThresholdStatement: one signal and its value; None when it is to be ignored."""
    if signal not in SIGNAL_TO_RESOURCE:
        raise ValueError(f"unsupported eviction signal {signal}")
    if value.endswith("%"):
        if value in ("0%", "100%"):
            return None
        try:
            percentage = _float32(_float32(float(value.rstrip("%"))) / 100)
        except ValueError:
            raise ValueError(f"invalid eviction threshold {signal}<{value}") from None
        if percentage < 0:
            raise ValueError(f"eviction percentage threshold {signal} must be >= 0%: {value}")
        if percentage > 1:
            raise ValueError(f"eviction percentage threshold {signal} must be <= 100%: {value}")
        return Threshold(signal, percentage=percentage)
    quantity = canonical_quantity(value)
    if memory_bytes(quantity) <= 0:
        raise ValueError(f"eviction threshold {signal} must be positive: {quantity}")
    return Threshold(signal, quantity=quantity)


def _float32(number: float) -> float:
    """Rounded to single precision: upstream keeps percentages as float32, so 10% of a
    capacity is capacity * 0.10000000149..., and the thresholds here match its bytes."""
    return float(struct.unpack("f", struct.pack("f", number))[0])


# -- observations -------------------------------------------------------------------------


@dataclass(frozen=True)
class Observation:
    """signalObservation: how much of a resource is available, out of how much."""

    available: int
    capacity: int


Observations = dict[str, Observation]


async def observe_host(root: Path) -> Observations:
    """makeSignalObservations for this machine; `root` is on the node's filesystem (nodefs)."""
    stat = os.statvfs(existing_ancestor(root))
    return {
        "memory.available": _memory_observation(),
        "nodefs.available": Observation(stat.f_bavail * stat.f_frsize,
                                        stat.f_blocks * stat.f_frsize),
        "nodefs.inodesFree": Observation(stat.f_ffree, stat.f_files),
        "pid.available": _pid_observation(),
    }


def existing_ancestor(path: Path) -> Path:
    """The path itself, or its nearest parent that exists (a root dir not yet made)."""
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


def read_meminfo() -> dict[str, int]:
    """/proc/meminfo, in bytes."""
    values = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields:
            values[key] = int(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    return values


def _memory_observation() -> Observation:
    """memory.available = capacity - working set, the working set being the root memory
    cgroup's usage minus its inactive file pages (cgroup v1). Without that cgroup, the
    kernel's own estimate, MemAvailable."""
    meminfo = read_meminfo()
    capacity = meminfo["MemTotal"]
    cgroup = Path("/sys/fs/cgroup/memory")
    try:
        usage = int((cgroup / "memory.usage_in_bytes").read_text())
        stat = dict(line.split() for line in (cgroup / "memory.stat").read_text().splitlines())
        working_set = max(usage - int(stat["total_inactive_file"]), 0)
    except (OSError, KeyError, ValueError):
        return Observation(meminfo["MemAvailable"], capacity)
    return Observation(capacity - working_set, capacity)


def _pid_observation() -> Observation:
    """pid.available = pid_max - the number of tasks (the 4th field of /proc/loadavg)."""
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    tasks = int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])
    return Observation(pid_max - tasks, pid_max)


def thresholds_met(thresholds: Iterable[Threshold], observations: Observations
                   ) -> list[Threshold]:
    """thresholdsMet: the thresholds whose signal was observed below its value."""
    met = []
    for threshold in thresholds:
        observed = observations.get(threshold.signal)
        if observed is not None and observed.available < threshold.value(observed.capacity):
            met.append(threshold)
    return met


# -- ranking ------------------------------------------------------------------------------


def pod_priority(pod: Obj) -> int:
    return int((pod.get("spec") or {}).get("priority") or 0)


def is_critical_pod(pod: Obj) -> bool:
    """IsCriticalPod: static and mirror pods, and pods of system-critical priority."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    source = annotations.get(CONFIG_SOURCE_ANNOTATION)
    if (source is not None and source != "api") or CONFIG_MIRROR_ANNOTATION in annotations:
        return True
    return pod_priority(pod) >= SYSTEM_CRITICAL_PRIORITY


def pod_request(pod: Obj, resource: str) -> int:
    """podRequest: the sum over the containers, or the largest init container if more."""
    if resource not in ("memory", "ephemeral-storage"):
        return 0

    def request(container: Obj) -> int:
        requests = (container.get("resources") or {}).get("requests") or {}
        return memory_bytes(requests[resource]) if resource in requests else 0

    spec = pod.get("spec") or {}
    containers = sum(request(c) for c in spec.get("containers") or [])
    init = max((request(c) for c in spec.get("initContainers") or []), default=0)
    return max(containers, init)


def pod_usage_of(usage: PodUsage | None, resource: str) -> int | None:
    """The pod's usage of a resource, None when there are no stats for it."""
    if not usage:
        return None
    if resource in usage:
        return int(usage[resource])
    containers = usage.get("containers") or {}
    if not containers:
        return None
    return sum(int(c.get(resource, 0)) for c in containers.values())


def rank_for_eviction(pods: Sequence[Obj], usages: Sequence[PodUsage | None], resource: str
                      ) -> list[Obj]:
    """rankMemoryPressure / rankDiskPressureFunc / rankPIDPressure: the pods, first to go first.

    memory, disk: orderedBy(exceedsRequests, priority, usage above requests) — pods using
                  more than they requested, then the lowest priority, then the largest
                  excess. Pods without stats count as exceeding, and go first.
    pids:         orderedBy(priority, process count).
    """
    def key(index: int) -> tuple[int, ...]:
        pod = pods[index]
        used = pod_usage_of(usages[index], resource)
        if resource == "pids":
            return (pod_priority(pod), -(used or 0))
        if used is None:
            return (0, pod_priority(pod), 0, 0)
        excess = used - pod_request(pod, resource)
        return (0 if excess > 0 else 1, pod_priority(pod), 1, -excess)

    return [pods[i] for i in sorted(range(len(pods)), key=key)]


def eviction_message(resource: str, pod: Obj, usage: PodUsage | None,
                     met: Sequence[Threshold], observations: Observations) -> str:
    """evictionMessage: which resource ran low, the threshold, and which containers used
    more of it than they requested."""
    message = NODE_LOW_MESSAGE.format(resource=resource)
    for threshold in met:
        observed = observations.get(threshold.signal)
        if SIGNAL_TO_RESOURCE[threshold.signal] == resource and observed is not None:
            message += THRESHOLD_MET_MESSAGE.format(
                quantity=threshold.text(observed.capacity),
                available=format_quantity(Decimal(observed.available), binary=True))
            break
    if resource not in ("memory", "ephemeral-storage"):
        return message
    stats = (usage or {}).get("containers") or {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        used = (stats.get(container["name"]) or {}).get(resource)
        if used is None:
            continue
        requests = (container.get("resources") or {}).get("requests") or {}
        request = requests.get(resource)
        if used > (memory_bytes(request) if request is not None else 0):
            message += CONTAINER_MESSAGE.format(
                name=container["name"], usage=format_quantity(Decimal(used), binary=True),
                request=canonical_quantity(request) if request is not None else "0",
                resource=resource)
    return message


def empty_dir_limit_message(pod: Obj, used: dict[str, int]) -> str | None:
    """emptyDirLimitEviction: the message for the first emptyDir of the pod using more
    than its (positive) sizeLimit, None when none does."""
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        source = volume.get("emptyDir")
        if source is None or source.get("sizeLimit") is None or volume["name"] not in used:
            continue
        limit = memory_bytes(source["sizeLimit"])
        if limit > 0 and used[volume["name"]] > limit:
            return EMPTY_DIR_MESSAGE.format(name=volume["name"],
                                            limit=canonical_quantity(source["sizeLimit"]))
    return None


def pod_ephemeral_storage_limit_message(pod: Obj, volumes: dict[str, int],
                                        usage: PodUsage) -> str | None:
    """podEphemeralStorageLimitEviction: the message when the pod's containers and its
    local ephemeral volumes hold more than the pod's ephemeral-storage limit (PodLimits:
    the containers' sum, at least an init container's), None when not, or without one."""
    limit = pod_limits(pod).get("ephemeral-storage")
    if limit is None:
        return None
    used = pod_usage_of(usage, "ephemeral-storage") or 0
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if volume["name"] in volumes and is_local_ephemeral_volume(volume):
            used += volumes[volume["name"]]
    if used > limit.amount:
        return POD_EPHEMERAL_STORAGE_MESSAGE.format(limit=limit)
    return None


def is_local_ephemeral_volume(volume: Obj) -> bool:
    """IsLocalEphemeralVolume: on the node's disk and gone with the pod (an emptyDir of
    the default medium, a configMap or a gitRepo volume)."""
    empty_dir = volume.get("emptyDir")
    return ("gitRepo" in volume or "configMap" in volume
            or (empty_dir is not None and not empty_dir.get("medium")))


def container_ephemeral_storage_limit_message(pod: Obj, usage: PodUsage) -> str | None:
    """containerEphemeralStorageLimitEviction: the message for the first container whose
    writable layer and logs hold more than its own (non-zero) ephemeral-storage limit."""
    stats = usage.get("containers") or {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        limit = ((container.get("resources") or {}).get("limits") or {}).get(
            "ephemeral-storage")
        used = (stats.get(container["name"]) or {}).get("ephemeral-storage")
        if limit is None or used is None or memory_bytes(limit) == 0:
            continue
        if used > memory_bytes(limit):
            return CONTAINER_EPHEMERAL_STORAGE_MESSAGE.format(
                name=container["name"], limit=canonical_quantity(limit))
    return None


def local_storage_limit_message(pod: Obj, volumes: dict[str, int],
                                usage: PodUsage | None) -> str | None:
    """localStorageEviction's checks in upstream's order (emptyDir sizeLimit, the pod's
    limit, each container's limit): why the pod is to be evicted, None if it is not.
    Without container stats only its emptyDirs are checked."""
    message = empty_dir_limit_message(pod, volumes)
    if message is None and usage is not None:
        message = (pod_ephemeral_storage_limit_message(pod, volumes, usage)
                   or container_ephemeral_storage_limit_message(pod, usage))
    return message


def _eviction_priority(threshold: Threshold) -> int:
    """byEvictionPriority: memory is reclaimed before anything else."""
    return 0 if SIGNAL_TO_RESOURCE[threshold.signal] == "memory" else 1


# -- the manager --------------------------------------------------------------------------


class EvictionManager:
    """managerImpl: watches the hard thresholds, reports pressure, evicts one pod at a time."""

    def __init__(self, thresholds: Sequence[Threshold], *,
                 observe: Callable[[], Awaitable[Observations]],
                 active_pods: Callable[[], list[Obj]],
                 pod_usage: Callable[[str], Awaitable[PodUsage | None]],
                 evict: Callable[[Obj, str], Awaitable[None]],
                 volume_usage: VolumeUsage | None = None,
                 clock: Callable[[], datetime] = utc_now,
                 pressure_transition_period: float = PRESSURE_TRANSITION_PERIOD) -> None:
        self.thresholds = list(thresholds)
        self.observe = observe
        self.active_pods = active_pods
        self.pod_usage = pod_usage
        self.evict = evict
        self.volume_usage = volume_usage
        self.clock = clock
        self.pressure_transition_period = pressure_transition_period
        self.node_conditions: list[str] = []
        self._condition_last_observed: dict[str, datetime] = {}

    def pressure(self) -> dict[str, bool]:
        """IsUnderMemoryPressure / IsUnderDiskPressure / IsUnderPIDPressure, for node status."""
        return {condition: condition in self.node_conditions for condition in CONDITIONS}

    def admit(self, pod: Obj) -> str | None:
        """Admit: None to admit the pod, else why not (the pod fails with reason Evicted)."""
        if not self.node_conditions or is_critical_pod(pod):
            return None
        if self.node_conditions == ["MemoryPressure"]:
            tolerations = (pod.get("spec") or {}).get("tolerations")
            if qos_class(pod) != BEST_EFFORT or tolerations_tolerate_taint(
                    tolerations, MEMORY_PRESSURE_TAINT):
                return None
        return NODE_CONDITION_MESSAGE.format(conditions=f"[{' '.join(self.node_conditions)}]")

    async def synchronize(self) -> Obj | None:
        """synchronize: observe, update the pressure conditions, and when a hard threshold
        is met evict the first pod of the ranking; returns the evicted pod."""
        observations = await self.observe()
        met = thresholds_met(self.thresholds, observations)
        self._update_conditions(met)
        evicted = await self.local_storage_eviction()
        if evicted:
            return evicted[0]
        if not met:
            return None
        met.sort(key=_eviction_priority)
        resource = SIGNAL_TO_RESOURCE[met[0].signal]
        log.warning("eviction manager: attempting to reclaim %s", resource)
        pods = self.active_pods()
        if not pods:
            log.error("eviction manager: thresholds met, but no pods are active to evict")
            return None
        usages = await asyncio.gather(*(self._usage(pod) for pod in pods))
        by_uid = {pod["metadata"]["uid"]: usage for pod, usage in zip(pods, usages, strict=True)}
        for pod in rank_for_eviction(pods, usages, resource):
            if is_critical_pod(pod):
                log.error("eviction manager: cannot evict a critical pod %s",
                          pod["metadata"]["name"])
                continue
            uid = pod["metadata"]["uid"]
            await self.evict(pod, eviction_message(resource, pod, by_uid[uid], met,
                                                   observations))
            return pod
        return None

    async def local_storage_eviction(self) -> list[Obj]:
        """localStorageEviction: evict every pod over its emptyDir sizeLimits or its
        ephemeral-storage limits (critical pods excepted)."""
        if self.volume_usage is None:
            return []
        evicted = []
        for pod in self.active_pods():
            try:
                used = await self.volume_usage(pod)
            except OSError as error:
                log.warning("eviction manager: no volume stats for pod %s: %s",
                            pod["metadata"]["name"], error)
                continue
            # container stats matter only to ephemeral-storage limits: none, no CRI calls
            usage = (await self._usage(pod) if "ephemeral-storage" in pod_limits(pod)
                     else None)
            message = local_storage_limit_message(pod, used, usage)
            if message is None:
                continue
            if is_critical_pod(pod):
                log.error("eviction manager: cannot evict a critical pod %s",
                          pod["metadata"]["name"])
                continue
            await self.evict(pod, message)
            evicted.append(pod)
        return evicted

    def _update_conditions(self, met: Sequence[Threshold]) -> None:
        """nodeConditionsLastObservedAt + nodeConditionsObservedSince: a condition stays
        until none of its thresholds was met for the pressure transition period."""
        now = self.clock()
        for threshold in met:
            condition = RESOURCE_TO_CONDITION[SIGNAL_TO_RESOURCE[threshold.signal]]
            self._condition_last_observed[condition] = now
        self.node_conditions = [
            condition for condition in CONDITIONS
            if condition in self._condition_last_observed
            and (now - self._condition_last_observed[condition]).total_seconds()
            < self.pressure_transition_period
        ]

    async def _usage(self, pod: Obj) -> PodUsage | None:
        """The pod's stats, None when the runtime has none (the pod ranks first then)."""
        try:
            return await self.pod_usage(pod["metadata"]["uid"])
        except CRIError as error:
            log.warning("eviction manager: no stats for pod %s: %s",
                        pod["metadata"]["name"], error)
            return None
