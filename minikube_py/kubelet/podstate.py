"""What the runtime holds for one pod: its sandboxes and containers, read back through CRI.

The kubelet keeps no state of its own about containers: everything it needs after a
restart is written on the CRI objects as labels and annotations (upstream's
`pkg/kubelet/kuberuntime/labels.go`), so a new kubelet process can adopt what an old one
started. This module names those keys and turns CRI messages into small records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minikube_py.gen.cri import api_pb2

# Labels (filterable through CRI's label_selector) and annotations on sandboxes/containers.
POD_NAME_LABEL = "io.kubernetes.pod.name"
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
POD_UID_LABEL = "io.kubernetes.pod.uid"
CONTAINER_NAME_LABEL = "io.kubernetes.container.name"
# Marks everything a minikube-py kubelet created (other CRI clients may share containerd).
MANAGED_LABEL = "io.kubernetes.minikube-py.managed"
CONTAINER_HASH_ANNOTATION = "io.kubernetes.container.hash"
RESTART_COUNT_ANNOTATION = "io.kubernetes.container.restartCount"
TERMINATION_MESSAGE_PATH_ANNOTATION = "io.kubernetes.container.terminationMessagePath"
TERMINATION_MESSAGE_POLICY_ANNOTATION = "io.kubernetes.container.terminationMessagePolicy"
TERMINATION_GRACE_ANNOTATION = "io.kubernetes.pod.terminationGracePeriod"
INIT_CONTAINER_ANNOTATION = "io.kubernetes.container.init"

STATE_NAMES = {api_pb2.CONTAINER_CREATED: "created", api_pb2.CONTAINER_RUNNING: "running",
               api_pb2.CONTAINER_EXITED: "exited", api_pb2.CONTAINER_UNKNOWN: "unknown"}


def seconds(nanoseconds: int) -> float:
    return nanoseconds / 1e9


@dataclass
class SandboxRecord:
    """One pod sandbox (the pause container holding the pod's network namespace)."""

    id: str
    attempt: int
    ready: bool
    created_at: float
    ip: str = ""
    additional_ips: list[str] = field(default_factory=list)


@dataclass
class ContainerRecord:
    """One container instance; a restart makes a new record with attempt + 1."""

    id: str
    name: str
    attempt: int
    state: str  # created | running | exited | unknown
    created_at: float
    sandbox_id: str = ""
    started_at: float = 0.0
    finished_at: float = 0.0
    exit_code: int = 0
    reason: str = ""
    message: str = ""
    image: str = ""
    image_ref: str = ""
    hash: str = ""
    restart_count: int = 0
    log_path: str = ""
    termination_message_path: str = ""
    termination_message_policy: str = ""
    init: bool = False

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def exited(self) -> bool:
        return self.state == "exited"


@dataclass
class PodRuntimeStatus:
    """Upstream's kubecontainer.PodStatus: sandboxes and containers, newest first."""

    uid: str
    name: str = ""
    namespace: str = ""
    sandboxes: list[SandboxRecord] = field(default_factory=list)
    containers: list[ContainerRecord] = field(default_factory=list)

    def latest(self, name: str) -> ContainerRecord | None:
        """The newest instance of the named container, if it ever existed."""
        return next((c for c in self.containers if c.name == name), None)

    def previous(self, name: str) -> ContainerRecord | None:
        """The instance before the newest (its state becomes `lastState`)."""
        instances = [c for c in self.containers if c.name == name]
        return instances[1] if len(instances) > 1 else None

    @property
    def ready_sandbox(self) -> SandboxRecord | None:
        newest = self.sandboxes[0] if self.sandboxes else None
        return newest if newest is not None and newest.ready else None

    @property
    def pod_ips(self) -> list[str]:
        sandbox = self.ready_sandbox
        if sandbox is None or not sandbox.ip:
            return []
        return [sandbox.ip, *sandbox.additional_ips]

    @property
    def running_containers(self) -> list[ContainerRecord]:
        return [c for c in self.containers if c.running]


def sandbox_record(sandbox: api_pb2.PodSandbox,
                   status: api_pb2.PodSandboxStatus | None = None) -> SandboxRecord:
    """From a CRI PodSandbox (ListPodSandbox) and optionally its PodSandboxStatus."""
    record = SandboxRecord(id=sandbox.id, attempt=sandbox.metadata.attempt,
                           ready=sandbox.state == api_pb2.SANDBOX_READY,
                           created_at=seconds(sandbox.created_at))
    if status is not None:
        record.ip = status.network.ip
        record.additional_ips = [extra.ip for extra in status.network.additional_ips]
    return record


def container_record(status: api_pb2.ContainerStatus, sandbox_id: str = "") -> ContainerRecord:
    """From a CRI ContainerStatus (its sandbox comes from the ListContainers entry)."""
    annotations = status.annotations
    return ContainerRecord(
        id=status.id, name=status.metadata.name, attempt=status.metadata.attempt,
        state=STATE_NAMES.get(status.state, "unknown"),
        created_at=seconds(status.created_at), sandbox_id=sandbox_id,
        started_at=seconds(status.started_at), finished_at=seconds(status.finished_at),
        exit_code=status.exit_code, reason=status.reason, message=status.message,
        image=status.image.image, image_ref=status.image_ref, log_path=status.log_path,
        hash=annotations.get(CONTAINER_HASH_ANNOTATION, ""),
        restart_count=int(annotations.get(RESTART_COUNT_ANNOTATION, "0") or 0),
        termination_message_path=annotations.get(TERMINATION_MESSAGE_PATH_ANNOTATION, ""),
        termination_message_policy=annotations.get(TERMINATION_MESSAGE_POLICY_ANNOTATION, ""),
        init=annotations.get(INIT_CONTAINER_ANNOTATION) == "true",
    )


def sort_newest_first(status: PodRuntimeStatus) -> None:
    status.sandboxes.sort(key=lambda s: (s.attempt, s.created_at), reverse=True)
    status.containers.sort(key=lambda c: (c.attempt, c.created_at), reverse=True)


# What the runtime shows of a pod, as comparable values: the PLEG's view of a pod after a
# relist, and a pod worker's view after a sync, tell whether a sync has anything new.
RuntimeView = frozenset[tuple[str, str]]


def sandbox_view(sandbox_id: str, ready: bool) -> tuple[str, str]:
    return "sandbox " + sandbox_id, "ready" if ready else "notready"


def container_view(container_id: str, state: str) -> tuple[str, str]:
    return "container " + container_id, state


def runtime_view(status: PodRuntimeStatus) -> RuntimeView:
    return frozenset([*(sandbox_view(s.id, s.ready) for s in status.sandboxes),
                      *(container_view(c.id, c.state) for c in status.containers)])

