"""generateAPIPodStatus: turn what the runtime holds into the pod's `status`.

Pure functions (upstream `kubelet_pods.go` generateAPIPodStatus, getPhase, and
`status/generate.go` for the conditions). The kubelet calls `generate_pod_status` after
every sync; the status manager writes the result only when it differs from the last one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339 as meta_time
from minikube_py.kubelet.podstate import ContainerRecord, PodRuntimeStatus
from minikube_py.kubelet.resources import qos_class

# Conditions this kubelet owns; others (PodScheduled, DisruptionTarget...) are kept.
KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")


def rfc3339(timestamp: float) -> str:
    """A runtime timestamp (seconds since the epoch) as metav1.Time."""
    return meta_time(datetime.fromtimestamp(timestamp, UTC))


@dataclass
class StatusInputs:
    """What besides the runtime status shapes the pod's status."""

    node_ips: list[str]
    runtime_name: str = "containerd"
    # container name -> (reason, message) of a container the kubelet could not start
    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)
    is_ready: Callable[[str], bool] = lambda name: True
    is_started: Callable[[str], bool] = lambda name: True
    terminating: bool = False
    now: Callable[[], float] = lambda: datetime.now(UTC).timestamp()


def _terminated(record: ContainerRecord, runtime: str) -> Obj:
    reason = record.reason or ("Completed" if record.exit_code == 0 else "Error")
    state: Obj = {"exitCode": record.exit_code, "reason": reason,
                  "startedAt": rfc3339(record.started_at) if record.started_at else None,
                  "finishedAt": rfc3339(record.finished_at) if record.finished_at else None,
                  "containerID": f"{runtime}://{record.id}"}
    if record.message:
        state["message"] = record.message
    return state


def container_status(container: Obj, status: PodRuntimeStatus, inputs: StatusInputs, *,
                     default_waiting: str) -> Obj:
    """One entry of status.containerStatuses / initContainerStatuses."""
    name = container["name"]
    record, previous = status.latest(name), status.previous(name)
    result: Obj = {"name": name, "image": container.get("image", ""), "imageID": "",
                   "ready": False, "restartCount": 0, "started": False,
                   "state": {}, "lastState": {}}
    waiting = inputs.waiting.get(name)
    if record is not None:
        result["imageID"] = record.image_ref
        result["containerID"] = f"{inputs.runtime_name}://{record.id}"
        result["restartCount"] = record.restart_count
    if record is not None and record.running:
        result["state"] = {"running": {"startedAt": rfc3339(record.started_at)}}
        result["started"] = inputs.is_started(name)
        result["ready"] = result["started"] and inputs.is_ready(name)
        if previous is not None and previous.exited:
            result["lastState"] = {"terminated": _terminated(previous, inputs.runtime_name)}
    elif record is not None and record.exited:
        if waiting is not None and not inputs.terminating:
            result["state"] = {"waiting": {"reason": waiting[0], "message": waiting[1]}}
            result["lastState"] = {"terminated": _terminated(record, inputs.runtime_name)}
        else:
            result["state"] = {"terminated": _terminated(record, inputs.runtime_name)}
            if previous is not None and previous.exited:
                result["lastState"] = {"terminated": _terminated(previous,
                                                                 inputs.runtime_name)}
    else:
        reason, message = waiting or (default_waiting, "")
        result["state"] = {"waiting": {"reason": reason, **({"message": message}
                                                            if message else {})}}
        if previous is not None and previous.exited:
            result["lastState"] = {"terminated": _terminated(previous, inputs.runtime_name)}
    return result


def get_phase(pod: Obj, init_statuses: list[Obj], statuses: list[Obj],
              terminating: bool) -> str:
    """Upstream getPhase: Pending, Running, Succeeded or Failed from container states."""
    policy = pod["spec"].get("restartPolicy", "Always")
    pending_init = failed_init = 0
    for status in init_statuses:
        state = status["state"]
        if "terminated" in state:
            if state["terminated"]["exitCode"] != 0:
                failed_init += 1
        elif "waiting" in state and "terminated" in status["lastState"]:
            failed_init += 1
        else:
            pending_init += 1
    if failed_init and policy == "Never":
        return "Failed"
    if pending_init or failed_init:
        return "Pending"
    running = waiting = stopped = succeeded = 0
    for status in statuses:
        state = status["state"]
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"]["exitCode"] == 0
        elif "terminated" in status["lastState"]:
            stopped += 1
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if stopped:
        if terminating:
            return "Succeeded" if stopped == succeeded else "Failed"
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if policy == "Never":
            return "Failed"
        return "Running"
    return "Pending"


def _condition(kind: str, ok: bool, reason: str = "", message: str = "") -> Obj:
    condition: Obj = {"type": kind, "status": "True" if ok else "False"}
    if not ok and reason:
        condition["reason"] = reason
    if not ok and message:
        condition["message"] = message
    return condition


def pod_conditions(pod: Obj, phase: str, status: PodRuntimeStatus, init_statuses: list[Obj],
                   statuses: list[Obj]) -> list[Obj]:
    """PodReadyToStartContainers, Initialized, ContainersReady and Ready."""
    has_network = status.ready_sandbox is not None and (
        bool(status.pod_ips) or bool(pod["spec"].get("hostNetwork")))
    incomplete = [s["name"] for s in init_statuses
                  if (s["state"].get("terminated") or {}).get("exitCode", 1) != 0]
    if phase == "Succeeded":
        incomplete = []
    initialized = _condition("Initialized", not incomplete, "ContainersNotInitialized",
                             f"containers with incomplete status: [{' '.join(incomplete)}]")
    if phase in ("Succeeded", "Failed"):
        ready = _condition("ContainersReady", False, "PodCompleted")
        return [_condition("PodReadyToStartContainers", has_network), initialized, ready,
                {**ready, "type": "Ready"}]
    unready = [s["name"] for s in statuses if not s["ready"]]
    if incomplete:
        reason, message = "ContainersNotInitialized", (
            f"containers with incomplete status: [{' '.join(incomplete)}]")
    else:
        reason, message = "ContainersNotReady", (
            f"containers with unready status: [{' '.join(unready)}]")
    containers_ready = _condition("ContainersReady", not unready and not incomplete,
                                  reason, message)
    gates = [g.get("conditionType") for g in pod["spec"].get("readinessGates") or []]
    existing = {c.get("type"): c.get("status") for c in
                (pod.get("status") or {}).get("conditions") or []}
    missing = [g for g in gates if existing.get(g) != "True"]
    if containers_ready["status"] == "True" and missing:
        ready = _condition("Ready", False, "ReadinessGatesNotReady",
                           f"corresponding condition of pod readiness gate "
                           f"\"{missing[0]}\" does not exist.")
    else:
        ready = {**containers_ready, "type": "Ready"}
    return [_condition("PodReadyToStartContainers", has_network), initialized,
            containers_ready, ready]


def merge_conditions(old: list[Obj], new: list[Obj], now: str) -> list[Obj]:
    """Keep conditions owned by others; keep lastTransitionTime when a status is unchanged."""
    previous = {c.get("type"): c for c in old}
    merged = [c for c in old if c.get("type") not in KUBELET_CONDITIONS]
    for condition in new:
        before = previous.get(condition["type"])
        changed = before is None or before.get("status") != condition["status"]
        condition["lastProbeTime"] = None
        condition["lastTransitionTime"] = (now if changed
                                           else before.get("lastTransitionTime", now))
        merged.append(condition)
    return merged


def generate_pod_status(pod: Obj, status: PodRuntimeStatus, inputs: StatusInputs) -> Obj:
    """The pod's new status, from the runtime's view plus the kubelet's own verdicts."""
    old = pod.get("status") or {}
    spec = pod["spec"]
    init_statuses = [container_status(c, status, inputs, default_waiting="PodInitializing")
                     for c in spec.get("initContainers") or []]
    init_done = all("terminated" in s["state"] and s["state"]["terminated"]["exitCode"] == 0
                    for s in init_statuses)
    statuses = [container_status(c, status, inputs,
                                 default_waiting="ContainerCreating" if init_done
                                 else "PodInitializing")
                for c in spec.get("containers") or []]
    phase = get_phase(pod, init_statuses, statuses, inputs.terminating)
    if old.get("phase") in ("Succeeded", "Failed"):
        phase = old["phase"]  # a terminal phase never changes back
    now = rfc3339(inputs.now())
    result: Obj = {
        **{k: v for k, v in old.items() if k in ("nominatedNodeName", "resize")},
        "phase": phase,
        "conditions": merge_conditions(old.get("conditions") or [],
                                       pod_conditions(pod, phase, status, init_statuses,
                                                      statuses), now),
        "hostIP": inputs.node_ips[0] if inputs.node_ips else "",
        "hostIPs": [{"ip": ip} for ip in inputs.node_ips],
        "startTime": old.get("startTime") or now,
        "qosClass": qos_class(pod),
        "containerStatuses": statuses,
    }
    ips = inputs.node_ips if spec.get("hostNetwork") else status.pod_ips
    if not ips and old.get("podIP"):
        ips = [old["podIP"]]  # a stopped sandbox keeps the pod's last address
    if ips:
        result["podIP"] = ips[0]
        result["podIPs"] = [{"ip": ip} for ip in ips]
    if init_statuses:
        result["initContainerStatuses"] = init_statuses
    # an ephemeral container is never ready: nothing may depend on it
    ephemeral = [{**container_status(c, status, inputs, default_waiting="ContainerCreating"),
                  "ready": False} for c in spec.get("ephemeralContainers") or []]
    if ephemeral:
        result["ephemeralContainerStatuses"] = ephemeral
    for key in ("reason", "message"):
        if old.get(key):
            result[key] = old[key]
    return result
