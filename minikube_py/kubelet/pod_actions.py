"""computePodActions: compare a pod's spec with what the runtime holds and decide what to do.

A pure function (upstream `kuberuntime_manager.go` computePodActions): given the pod, its
runtime status and the probe verdicts, it answers

- whether the sandbox must be (re)created, which kills every container first;
- which init container to start next (init containers run one at a time, in order);
- which app containers to start, and which running ones to kill (liveness failure,
  changed spec, or a policy that will not restart them);
- which ephemeral containers (`kubectl debug`) to start: each once, never again.

It decides nothing about timing: CrashLoopBackOff is applied when a start is attempted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from minikube_py.api import Obj
from minikube_py.kubelet.podstate import ContainerRecord, PodRuntimeStatus


@dataclass
class ContainerToKill:
    record: ContainerRecord
    container: Obj | None
    message: str


@dataclass
class PodActions:
    kill_pod: bool = False
    create_sandbox: bool = False
    sandbox_attempt: int = 0
    sandbox_id: str = ""
    next_init_container: Obj | None = None
    init_failed: bool = False
    containers_to_start: list[Obj] = field(default_factory=list)
    containers_to_kill: list[ContainerToKill] = field(default_factory=list)
    ephemeral_to_start: list[Obj] = field(default_factory=list)


def container_hash(container: Obj) -> str:
    """A stable hash of the container's spec: a change means the container is replaced."""
    text = json.dumps(container, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def should_restart(pod: Obj, record: ContainerRecord | None) -> bool:
    """Does the restartPolicy want this container (started again)?"""
    if record is None or not record.exited:
        return True
    policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
    if policy == "Never":
        return False
    if policy == "OnFailure":
        return record.exit_code != 0
    return True


def sandbox_changed(pod: Obj, status: PodRuntimeStatus) -> tuple[bool, int, str]:
    """(create a new sandbox?, its attempt number, the id of the current sandbox)."""
    if not status.sandboxes:
        return True, 0, ""
    newest = status.sandboxes[0]
    ready = [s for s in status.sandboxes if s.ready]
    host_network = bool((pod.get("spec") or {}).get("hostNetwork"))
    if len(ready) > 1 or not newest.ready or (not host_network and not newest.ip):
        return True, newest.attempt + 1, newest.id
    return False, newest.attempt, newest.id


def _ever_ran(status: PodRuntimeStatus) -> bool:
    return any(c.state != "created" for c in status.containers)


def _init_actions(pod: Obj, status: PodRuntimeStatus, actions: PodActions) -> bool:
    """Init containers, one at a time. True when all of them have succeeded."""
    policy = pod["spec"].get("restartPolicy", "Always")
    for container in pod["spec"].get("initContainers") or []:
        record = status.latest(container["name"])
        if record is None or record.state == "created":
            actions.next_init_container = container
            return False
        if record.running:
            return False
        if record.exit_code == 0:
            continue
        if policy == "Never":
            actions.init_failed = True
            actions.kill_pod = True
        else:
            actions.next_init_container = container
        return False
    return True


def compute_pod_actions(pod: Obj, status: PodRuntimeStatus, *,
                        liveness_failure: Callable[[str], str | None],
                        startup_failure: Callable[[str], str | None]) -> PodActions:
    """What sync_pod must do to move the runtime toward the pod's spec."""
    spec = pod["spec"]
    actions = PodActions()
    create, attempt, sandbox_id = sandbox_changed(pod, status)
    actions.sandbox_id = sandbox_id
    if create:
        if spec.get("restartPolicy") == "Never" and attempt != 0 and _ever_ran(status):
            # Upstream never recreates the sandbox of a Never pod whose containers ran.
            actions.kill_pod = bool(status.ready_sandbox or status.running_containers)
            return actions
        actions.create_sandbox, actions.sandbox_attempt = True, attempt
        actions.kill_pod = bool(status.sandboxes or status.containers)
        init_containers = spec.get("initContainers") or []
        if init_containers:
            actions.next_init_container = init_containers[0]
        else:
            actions.containers_to_start = [
                c for c in spec.get("containers") or []
                if not (spec.get("restartPolicy") == "OnFailure"
                        and _succeeded(status.latest(c["name"])))]
        return actions

    # Ephemeral containers may start before initialization is complete, and are never
    # restarted: only one the runtime has never seen starts.
    actions.ephemeral_to_start = [c for c in spec.get("ephemeralContainers") or []
                                  if status.latest(c["name"]) is None]
    if not _init_actions(pod, status, actions):
        return actions

    keep = 0
    for container in spec.get("containers") or []:
        record = status.latest(container["name"])
        if record is None or not record.running:
            if should_restart(pod, record):
                actions.containers_to_start.append(container)
            continue
        message = (liveness_failure(container["name"]) or startup_failure(container["name"])
                   or _spec_changed(container, record))
        if message is None:
            keep += 1
            continue
        actions.containers_to_kill.append(ContainerToKill(record, container, message))
        if spec.get("restartPolicy", "Always") != "Never":
            actions.containers_to_start.append(container)
    if keep == 0 and not actions.containers_to_start:
        actions.kill_pod = True
    return actions


def _succeeded(record: ContainerRecord | None) -> bool:
    return record is not None and record.exited and record.exit_code == 0


def _spec_changed(container: Obj, record: ContainerRecord) -> str | None:
    if record.hash and record.hash != container_hash(container):
        return f"Container {container['name']} definition changed, will be restarted"
    return None
