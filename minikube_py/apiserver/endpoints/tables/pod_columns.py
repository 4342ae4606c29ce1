"""core/v1 pods: READY, STATUS and RESTARTS as `kubectl get pods` shows them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from minikube_py.api import Obj
from minikube_py.api.duration import human_duration
from minikube_py.apiserver.endpoints.tables.cells import (
    NONE,
    age,
    condition_true,
    name_of,
    parse_time,
)
from minikube_py.apiserver.endpoints.tables.table import AGE, NAME, Cells, column

POD_COLUMNS = (
    NAME,
    column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    column("Status", "string", "The aggregate status of the containers in this pod."),
    column(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the "
        "last container in this pod has restarted.",
    ),
    AGE,
    column("IP", "string", "IP address allocated to the pod.", priority=1),
    column("Node", "string", "The node this pod is scheduled onto.", priority=1),
    column(
        "Nominated Node",
        "string",
        "The node this pod is nominated to run on after preempting others.",
        priority=1,
    ),
    column(
        "Readiness Gates",
        "string",
        "Pod conditions, besides the containers, that gate the pod's readiness.",
        priority=1,
    ),
)

NODE_UNREACHABLE_POD_REASON = "NodeLost"


def is_restartable_init_container(container: Obj | None) -> bool:
    """A sidecar: an init container with restartPolicy Always."""
    return container is not None and container.get("restartPolicy") == "Always"


def later(current: datetime | None, container_status: Obj) -> datetime | None:
    """The later of `current` and the container's last termination (lastRestartDate)."""
    terminated = (container_status.get("lastState") or {}).get("terminated")
    if terminated is None:
        return current
    finished = parse_time(terminated.get("finishedAt"))
    if finished is not None and (current is None or current < finished):
        return finished
    return current


def terminated_reason(terminated: Obj, prefix: str = "") -> str:
    """A terminated container's reason, else "Signal:9" / "ExitCode:1"."""
    if terminated.get("reason"):
        return prefix + terminated["reason"]
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode', 0)}"


@dataclass
class Restarts:
    """The RESTARTS cell's count, and when the last restart was (lastRestartDate)."""

    count: int = 0
    last: datetime | None = None

    def add(self, container_status: Obj) -> None:
        """Count one container's restarts and its last termination."""
        self.count += container_status.get("restartCount", 0)
        self.last = later(self.last, container_status)


@dataclass
class InitProgress:
    """Where the init containers are: the first one not yet done says why (`reason`,
    None when all are done); sidecars (restartable init containers) count as ready."""

    reason: str | None = None
    sidecars_ready: int = 0
    restarts: Restarts = field(default_factory=Restarts)
    sidecar_restarts: Restarts = field(default_factory=Restarts)


def print_pod(pod: Obj, now: datetime) -> Cells:
    """printPod: READY n/m, the STATUS reason kubectl users know, RESTARTS with "(5m ago)".

    STATUS: the pod's reason or phase -> the first init container not done ->, once
    initialized, the last container with something to say -> Terminating or Unknown
    while being deleted.
    """
    spec, status = (pod.get("spec") or {}), (pod.get("status") or {})
    phase = status.get("phase", "")
    reason = status.get("reason") or phase
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    init = init_progress(spec, status)
    ready, restarts = init.sidecars_ready, init.restarts
    if init.reason is not None:
        reason = init.reason
    if init.reason is None or condition_true(status, "Initialized"):
        restarts = init.sidecar_restarts
        reason, containers_ready = containers_progress(status, reason, restarts)
        ready += containers_ready

    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        if status.get("reason") == NODE_UNREACHABLE_POD_REASON:
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"

    restarts_cell = str(restarts.count)
    if restarts.count and restarts.last is not None:
        restarts_cell = f"{restarts.count} ({human_duration(now - restarts.last)} ago)"

    init_containers = spec.get("initContainers") or []
    total = len(spec.get("containers") or [])
    total += sum(1 for container in init_containers if is_restartable_init_container(container))
    pod_ips = status.get("podIPs") or []
    pod_ip = pod_ips[0].get("ip", "") if pod_ips else status.get("podIP", "")
    return [
        name_of(pod),
        f"{ready}/{total}",
        reason,
        restarts_cell,
        age(pod, now),
        pod_ip or NONE,
        spec.get("nodeName") or NONE,
        status.get("nominatedNodeName") or NONE,
        readiness_gates(spec, status),
    ]


def init_progress(spec: Obj, status: Obj) -> InitProgress:
    """Init containers run one after the other: walk their statuses up to the first one
    not yet done, counting restarts and ready sidecars on the way."""
    init_containers = spec.get("initContainers") or []
    by_name = {container.get("name"): container for container in init_containers}
    progress = InitProgress()
    for index, container_status in enumerate(status.get("initContainerStatuses") or []):
        progress.restarts.add(container_status)
        sidecar = is_restartable_init_container(by_name.get(container_status.get("name")))
        if sidecar:
            progress.sidecar_restarts.add(container_status)
        state = container_status.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if sidecar and container_status.get("started"):
            if container_status.get("ready"):
                progress.sidecars_ready += 1
            continue
        if terminated is not None:
            progress.reason = terminated_reason(terminated, "Init:")
        elif waiting is not None and waiting.get("reason") not in (None, "", "PodInitializing"):
            progress.reason = "Init:" + waiting["reason"]
        else:
            progress.reason = f"Init:{index}/{len(init_containers)}"
        break
    return progress


def containers_progress(status: Obj, reason: str, restarts: Restarts) -> tuple[str, int]:
    """Once initialized, the last container with something to say sets the reason; the
    reason and how many containers are ready and running (their restarts go to
    `restarts`). A Completed pod with a container still running is Running or NotReady."""
    ready = 0
    has_running = False
    for container_status in reversed(status.get("containerStatuses") or []):
        restarts.add(container_status)
        state = container_status.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if waiting is not None and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated is not None:
            reason = terminated_reason(terminated)
        elif container_status.get("ready") and state.get("running") is not None:
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        reason = "Running" if condition_true(status, "Ready") else "NotReady"
    return reason, ready


def readiness_gates(spec: Obj, status: Obj) -> str:
    """The Readiness Gates cell: how many gates have a True condition ("1/2")."""
    gates = spec.get("readinessGates") or []
    if not gates:
        return NONE
    conditions: dict[str, str] = {}
    for condition in status.get("conditions") or []:
        conditions.setdefault(condition.get("type"), condition.get("status"))
    true = sum(1 for gate in gates if conditions.get(gate.get("conditionType")) == "True")
    return f"{true}/{len(gates)}"


def pod_row_conditions(pod: Obj) -> list[Obj]:
    """Row conditions: a finished pod's row is marked Completed, as upstream."""
    phase = (pod.get("status") or {}).get("phase")
    messages = {
        "Succeeded": "The pod has completed successfully.",
        "Failed": "The pod failed.",
    }
    if phase not in messages:
        return []
    return [{"type": "Completed", "status": "True", "reason": phase, "message": messages[phase]}]
