"""What the kubelet's HTTP server asks of the kubelet: its pods, their logs, their stats.

Upstream's server.HostInterface (pkg/kubelet/server): the server (server.py) knows HTTP,
this knows where a container's log file is and how to sum CRI stats into the Summary API.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from minikube_py.api import Obj
from minikube_py.api.duration import go_duration
from minikube_py.cri import CRIError
from minikube_py.cri_logs import container_log_path
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.metrics import RuntimeCounts, reading_time
from minikube_py.kubelet.podstate import (
    CONTAINER_NAME_LABEL,
    MANAGED_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
)
from minikube_py.kubelet.server import ContainerNotFound, StreamOptions, StreamUnavailable

if TYPE_CHECKING:
    from minikube_py.kubelet.kubelet import Kubelet



class HostInterface:
    """The KubeletProvider the HTTP server uses, backed by one Kubelet."""

    def __init__(self, kubelet: Kubelet) -> None:
        self.kubelet = kubelet
        self.node_name = kubelet.node_name

    def running_pods(self) -> list[Obj]:
        """GetPods: the API's pods bound here and the static pods (mirror pods are not
        pods of the node: their static pods are)."""
        return list(self.kubelet.pods.values())

    def find_pod(self, namespace: str, name: str, uid: str = "") -> Obj | None:
        """GetPodByName: a static pod answers to its mirror pod's name and namespace,
        which it shares. With a uid, only that pod: a mirror pod's uid is translated to
        its static pod's (TranslatePodUID)."""
        pod = next((p for p in self.kubelet.pods.values()
                    if p["metadata"]["namespace"] == namespace
                    and p["metadata"]["name"] == name), None)
        if pod is None or not uid or uid == pod["metadata"]["uid"]:
            return pod
        mirror = self.kubelet.mirror_pod_of(pod)
        return pod if mirror is not None and mirror["metadata"]["uid"] == uid else None

    def _container_start_times(self) -> dict[str, str]:
        """Runtime container id -> when it started, from the pods' statuses."""
        started = {}
        for pod in self.kubelet.pods.values():
            for status in _container_statuses(pod):
                running = (status.get("state") or {}).get("running") or {}
                if running.get("startedAt") and status.get("containerID"):
                    started[status["containerID"].partition("://")[2]] = running["startedAt"]
        return started

    async def runtime_pods(self) -> list[Obj]:
        """GetRunningPods: the pods as the runtime holds them (a ready sandbox or a running
        container), each with the containers that run, whatever the API server says."""
        sandboxes, containers = await self._runtime_listing()
        pods: dict[str, Obj] = {}

        def pod_of(labels: Any) -> Obj:
            uid = labels[POD_UID_LABEL]
            return pods.setdefault(uid, {
                "metadata": {"name": labels.get(POD_NAME_LABEL, ""),
                             "namespace": labels.get(POD_NAMESPACE_LABEL, ""), "uid": uid,
                             "creationTimestamp": None},
                "spec": {"containers": []}, "status": {}})

        for sandbox in sandboxes:
            if sandbox.state == api_pb2.SANDBOX_READY and POD_UID_LABEL in sandbox.labels:
                pod_of(sandbox.labels)
        for container in containers:
            if container.state == api_pb2.CONTAINER_RUNNING and (
                    POD_UID_LABEL in container.labels):
                pod_of(container.labels)["spec"]["containers"].append({
                    "name": container.labels.get(CONTAINER_NAME_LABEL, ""),
                    "image": container.image.image, "resources": {}})
        return list(pods.values())

    async def runtime_counts(self) -> RuntimeCounts:
        """Ready sandboxes, and containers by state, for /metrics."""
        sandboxes, containers = await self._runtime_listing()
        states = {api_pb2.CONTAINER_CREATED: "created", api_pb2.CONTAINER_RUNNING: "running",
                  api_pb2.CONTAINER_EXITED: "exited"}
        counts: dict[str, int] = {}
        for container in containers:
            state = states.get(container.state, "unknown")
            counts[state] = counts.get(state, 0) + 1
        return RuntimeCounts(
            sum(1 for s in sandboxes if s.state == api_pb2.SANDBOX_READY), counts)

    async def _runtime_listing(self) -> tuple[list[Any], list[Any]]:
        """The sandboxes and containers this kubelet made (its label on them)."""
        selector = {MANAGED_LABEL: "true"}
        runtime = self.kubelet.runtime
        sandboxes = await runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
            filter=api_pb2.PodSandboxFilter(label_selector=selector)))
        containers = await runtime.list_containers(api_pb2.ListContainersRequest(
            filter=api_pb2.ContainerFilter(label_selector=selector)))
        return list(sandboxes.items), list(containers.containers)

    def machine(self) -> tuple[int, int]:
        """The node's CPUs and memory bytes (cAdvisor's MachineInfo)."""
        return self.kubelet.host.cpus, self.kubelet.host.memory_bytes

    def configz(self) -> Obj:
        """The kubelet's configuration as upstream's /configz shows it: the
        KubeletConfiguration fields this kubelet has, under "kubeletconfig"."""
        config = self.kubelet.config
        eviction = dict(part.split("<", 1) for part in config.eviction_hard.split(",")
                        if "<" in part)
        return {"kubeletconfig": {
            "enableServer": True, "address": config.address, "port": config.port,
            "podCIDR": config.pod_cidr or "", "clusterDNS": config.cluster_dns,
            "clusterDomain": config.cluster_domain, "syncFrequency": go_duration(
                config.sync_frequency),
            "kubeReserved": config.kube_reserved, "systemReserved": config.system_reserved,
            "evictionHard": eviction, "registerWithTaints": config.register_taints,
            "crashLoopBackOff": {"maxContainerRestartPeriod": go_duration(
                config.backoff_max)},
            "staticPodPath": str(config.static_pod_path or ""),
            "fileCheckFrequency": go_duration(config.file_check_frequency),
        }}

    def find_container_log(self, namespace: str, name: str, container: str,
                           previous: bool) -> tuple[Path, Callable[[], bool]]:
        """The log file of the container's current (or previous) instance, and whether
        that instance still runs (a follow ends once it stopped)."""
        pod = self.find_pod(namespace, name)
        if pod is None:
            raise ContainerNotFound(f'pod "{name}" not found')
        found = next((s for s in _container_statuses(pod) if s["name"] == container), None)
        if found is None or not found.get("containerID"):
            raise ContainerNotFound(f'container "{container}" in pod "{name}" is waiting to '
                                    "start: ContainerCreating")
        restarts = found.get("restartCount", 0)
        if previous:
            if not (found.get("lastState") or {}).get("terminated"):
                raise ContainerNotFound(f'previous terminated container "{container}" in '
                                        f'pod "{name}" not found')
            restarts -= 1
        path = container_log_path(self.kubelet.config.logs_root, namespace, name,
                                  pod["metadata"]["uid"], container, restarts)
        running = not previous and "running" in (found.get("state") or {})

        def is_running() -> bool:
            current = self.kubelet.pods.get(pod["metadata"]["uid"])
            if current is None or previous:
                return False
            for status in _container_statuses(current):
                if status["name"] == container:
                    return "running" in (status.get("state") or {}) and \
                        status.get("restartCount", 0) == restarts
            return running
        return path, is_running

    def running_container_id(self, namespace: str, name: str, container: str) -> str:
        """findContainer: the running container's id, as the pod's status names it."""
        pod = self.find_pod(namespace, name)
        statuses = [] if pod is None else _container_statuses(pod)
        found = next((s for s in statuses if s["name"] == container
                      and "running" in (s.get("state") or {})), None)
        if found is None or not found.get("containerID"):
            raise StreamUnavailable(f'container not found ("{container}")')
        return str(found["containerID"].partition("://")[2])

    async def pod_sandbox_id(self, namespace: str, name: str) -> str:
        """The pod's ready sandbox, found by the pod's uid label as the kubelet set it."""
        pod = self.find_pod(namespace, name)
        if pod is None:

            raise StreamUnavailable(f'pod "{name}" not found')
        try:
            answer = await self.kubelet.runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
                filter=api_pb2.PodSandboxFilter(
                    label_selector={POD_UID_LABEL: pod["metadata"]["uid"]},
                    state=api_pb2.PodSandboxStateValue(state=api_pb2.SANDBOX_READY))))
        except CRIError as err:
            raise StreamUnavailable(err.message) from None
        if not answer.items:
            raise StreamUnavailable(f'pod "{name}" has no running sandbox')
        return str(answer.items[0].id)

    async def port_forward_url(self, sandbox_id: str, ports: list[int]) -> str:
        """GetPortForward: ask the runtime for the streaming URL."""
        try:
            answer = await self.kubelet.runtime.port_forward(api_pb2.PortForwardRequest(
                pod_sandbox_id=sandbox_id, port=ports))
        except CRIError as err:
            raise StreamUnavailable(err.message) from None
        return str(answer.url)

    async def stream_url(self, kind: str, container_id: str, options: StreamOptions) -> str:
        """GetExec / GetAttach: ask the runtime for the streaming URL."""
        try:
            if kind == "exec":
                answer = await self.kubelet.runtime.exec(api_pb2.ExecRequest(
                    container_id=container_id, cmd=list(options.command), tty=options.tty,
                    stdin=options.stdin, stdout=options.stdout, stderr=options.stderr))
            else:
                answer = await self.kubelet.runtime.attach(api_pb2.AttachRequest(
                    container_id=container_id, tty=options.tty, stdin=options.stdin,
                    stdout=options.stdout, stderr=options.stderr))
        except CRIError as err:
            raise StreamUnavailable(err.message) from None
        return str(answer.url)

    async def stats_summary(self) -> Obj:
        """/stats/summary from CRI container stats (upstream's Summary API, the core).

        Each reading carries the time the runtime took it (CpuUsage.timestamp), not the
        time this answer is written: the metrics server divides the CPU used between two
        scrapes by the time between their readings, and on a busy machine the answer may
        be written a second after the cgroup was read."""
        answer = await self.kubelet.runtime.list_container_stats(
            api_pb2.ListContainerStatsRequest())
        now = time.time()
        # pod uid -> [(container stats, when its CPU was read, when its memory was read)]
        by_pod: dict[str, list[tuple[Obj, float, float]]] = {}
        started = self._container_start_times()
        for stats in answer.stats:
            labels = stats.attributes.labels
            cpu_at = stats.cpu.timestamp / 1e9 or now
            memory_at = stats.memory.timestamp / 1e9 or now
            by_pod.setdefault(labels.get("io.kubernetes.pod.uid", ""), []).append(({
                "name": stats.attributes.metadata.name,
                "startTime": started.get(stats.attributes.id, reading_time(now)),
                "cpu": {"time": reading_time(cpu_at),
                        "usageCoreNanoSeconds": stats.cpu.usage_core_nano_seconds.value},
                "memory": {"time": reading_time(memory_at),
                           "workingSetBytes": stats.memory.working_set_bytes.value},
                "rootfs": {"time": reading_time(now),
                           "usedBytes": stats.writable_layer.used_bytes.value},
            }, cpu_at, memory_at))
        # A sum is as recent as the latest reading in it
        pods: list[Obj] = []
        node_cpu_at = node_memory_at = 0.0
        for uid, readings in by_pod.items():
            pod = self.kubelet.pods.get(uid)
            if pod is None:
                continue
            containers = [container for container, _, _ in readings]
            cpu_at = max(at for _, at, _ in readings)
            memory_at = max(at for _, _, at in readings)
            node_cpu_at, node_memory_at = max(node_cpu_at, cpu_at), max(node_memory_at, memory_at)
            pods.append({
                "podRef": {"name": pod["metadata"]["name"],
                           "namespace": pod["metadata"]["namespace"], "uid": uid},
                "startTime": reading_time(now), "containers": containers,
                "cpu": {"time": reading_time(cpu_at),
                        "usageCoreNanoSeconds": sum(
                            c["cpu"]["usageCoreNanoSeconds"] for c in containers)},
                "memory": {"time": reading_time(memory_at),
                           "workingSetBytes": sum(
                               c["memory"]["workingSetBytes"] for c in containers)},
            })
        # The node's usage is what its pods use: the nodes of one machine share its
        # cgroups, so there is no node cgroup of its own to read
        node = {"nodeName": self.kubelet.node_name, "startTime": reading_time(now),
                "cpu": {"time": reading_time(node_cpu_at or now),
                        "usageCoreNanoSeconds": sum(
                            p["cpu"]["usageCoreNanoSeconds"] for p in pods)},
                "memory": {"time": reading_time(node_memory_at or now),
                           "workingSetBytes": sum(
                               p["memory"]["workingSetBytes"] for p in pods)}}
        return {"node": node, "pods": pods}


def _container_statuses(pod: Obj) -> list[Obj]:
    """The statuses of every kind of container: init, app and ephemeral."""
    status = pod.get("status") or {}
    return [s for kind in ("initContainerStatuses", "containerStatuses",
                           "ephemeralContainerStatuses") for s in status.get(kind) or []]
