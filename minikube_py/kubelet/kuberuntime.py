"""The runtime manager: GetPodStatus, SyncPod and KillPod, spoken to containerd over CRI.

Upstream `kuberuntime_manager.go` (kubeGenericRuntimeManager). `sync_pod` runs the steps
the seeds draw, in order:

    computePodActions -> (kill pod) -> RunPodSandbox -> for the next init container or each
    app container: EnsureImageExists -> CreateContainer -> StartContainer -> postStart hook

Everything a step cannot do becomes a waiting reason on the container (ErrImagePull,
CreateContainerConfigError, CreateContainerError, RunContainerError, CrashLoopBackOff)
that the status shows; the pod worker tries again later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from minikube_py.api import Obj
from minikube_py.cri import CRIError, RuntimeService
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.backoff import Backoff
from minikube_py.kubelet.envvars import ContainerConfigError
from minikube_py.kubelet.images import ImageManager, ImagePullError, go_error_text
from minikube_py.kubelet.kuberuntime_container import container_config
from minikube_py.kubelet.kuberuntime_sandbox import DNSSettings, sandbox_config
from minikube_py.kubelet.lifecycle import run_lifecycle_handler
from minikube_py.kubelet.pod_actions import PodActions, compute_pod_actions, container_hash
from minikube_py.kubelet.podstate import (
    MANAGED_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
    ContainerRecord,
    PodRuntimeStatus,
    container_record,
    sandbox_record,
    sort_newest_first,
)
from minikube_py.kubelet.resources import ContainerResources
from minikube_py.kubelet.volumes.manager import ContainerMount

log = logging.getLogger(__name__)
RecordEvent = Callable[[Obj, str, str, str], None]
# (pod, container, pod IPs) -> (env, mounts, resources) for CreateContainer
ContainerOptions = Callable[[Obj, Obj, list[str]],
                            Awaitable[tuple[list[tuple[str, str]], list[ContainerMount],
                                            ContainerResources]]]
ExecSync = Callable[[str, list[str], float], Awaitable[tuple[int, str]]]
MINIMUM_GRACE_SECONDS = 2
TERMINATION_MESSAGE_LIMIT = 4096
IMAGE_RECHECK_SECONDS = 1.0


@dataclass
class SyncResult:
    """What a sync could not do: waiting reasons per container, and when to try again."""

    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)
    retry_after: float | None = None
    changed: bool = False  # something was started or stopped: the runtime state is stale

    def retry_in(self, seconds: float) -> None:
        self.retry_after = seconds if self.retry_after is None else min(self.retry_after,
                                                                        seconds)


class RuntimeManager:
    """kubeGenericRuntimeManager: the pod-level view of a CRI runtime."""

    def __init__(self, runtime: RuntimeService, *, images: ImageManager, logs_root: Path,
                 dns: DNSSettings, record_event: RecordEvent, crash_backoff: Backoff,
                 container_options: ContainerOptions, exec_sync: ExecSync,
                 start_slots: asyncio.Semaphore, make_log_dirs: bool = True) -> None:
        self.runtime = runtime
        self.images = images
        self.logs_root = logs_root
        self.dns = dns
        self.record_event = record_event
        self.crash_backoff = crash_backoff
        self.container_options = container_options
        self.exec_sync = exec_sync
        # Bounded parallelism: pods start a few at a time, first come first served, so
        # early pods do not wait for late ones.
        self.start_slots = start_slots
        self.make_log_dirs = make_log_dirs  # a simulated runtime writes no logs

    # -- reading ------------------------------------------------------------------------

    async def get_pod_status(self, uid: str) -> PodRuntimeStatus:
        """GetPodStatus: every sandbox and container labelled with the pod's uid."""
        selector = {POD_UID_LABEL: uid}
        sandboxes = await self.runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
            filter=api_pb2.PodSandboxFilter(label_selector=selector)))
        containers = await self.runtime.list_containers(api_pb2.ListContainersRequest(
            filter=api_pb2.ContainerFilter(label_selector=selector)))
        status = PodRuntimeStatus(uid=uid)
        for sandbox in sandboxes.items:
            details = None
            if sandbox.state == api_pb2.SANDBOX_READY:
                details = await self._sandbox_status(sandbox.id)
            status.sandboxes.append(sandbox_record(sandbox, details))
            status.name = sandbox.metadata.name
            status.namespace = sandbox.metadata.namespace
        for container in containers.containers:
            try:
                answer = await self.runtime.container_status(
                    api_pb2.ContainerStatusRequest(container_id=container.id))
            except CRIError as error:
                if error.code is not grpc.StatusCode.NOT_FOUND:
                    raise  # a container not seen is one to start again: never guess
                log.debug("container %s vanished: %s", container.id, error.message)
                continue
            record = container_record(answer.status, container.pod_sandbox_id)
            if record.exited and not record.message:
                record.message = _termination_message(answer.status, record)
            status.containers.append(record)
        sort_newest_first(status)
        return status

    async def _sandbox_status(self, sandbox_id: str) -> api_pb2.PodSandboxStatus | None:
        """The sandbox's status; None if it vanished since it was listed. Any other
        failure is raised: a sandbox without an IP would be recreated."""
        try:
            answer = await self.runtime.pod_sandbox_status(
                api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id))
        except CRIError as error:
            if error.code is not grpc.StatusCode.NOT_FOUND:
                raise
            return None
        return answer.status

    async def running_pod_uids(self) -> dict[str, tuple[str, str]]:
        """uid -> (namespace, name) of every pod this kubelet has sandboxes or containers for."""
        selector = {MANAGED_LABEL: "true"}
        found: dict[str, tuple[str, str]] = {}
        sandboxes = await self.runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
            filter=api_pb2.PodSandboxFilter(label_selector=selector)))
        containers = await self.runtime.list_containers(api_pb2.ListContainersRequest(
            filter=api_pb2.ContainerFilter(label_selector=selector)))
        for item in [*sandboxes.items, *containers.containers]:
            labels = item.labels
            if labels.get(POD_UID_LABEL):
                found[labels[POD_UID_LABEL]] = (labels.get(POD_NAMESPACE_LABEL, ""),
                                                labels.get(POD_NAME_LABEL, ""))
        return found

    # -- SyncPod ------------------------------------------------------------------------

    async def sync_pod(self, pod: Obj, status: PodRuntimeStatus, *,
                       liveness_failure: Callable[[str], str | None],
                       startup_failure: Callable[[str], str | None]) -> SyncResult:
        """SyncPod: bring the runtime one step closer to the pod's spec."""
        result = SyncResult()
        actions = compute_pod_actions(pod, status, liveness_failure=liveness_failure,
                                      startup_failure=startup_failure)
        result.changed = bool(actions.kill_pod or actions.containers_to_kill
                              or actions.create_sandbox or actions.next_init_container
                              or actions.containers_to_start or actions.ephemeral_to_start)
        if actions.kill_pod:
            if actions.create_sandbox and status.sandboxes:
                self.record_event(pod, "Normal", "SandboxChanged",
                                  "Pod sandbox changed, it will be killed and re-created.")
            await self.kill_pod(pod, status, _grace_period(pod))
            if not actions.create_sandbox:
                return result
        for kill in actions.containers_to_kill:
            self.record_event(pod, "Normal", "Killing", kill.message)
            await self.stop_container(pod, kill.record, kill.container, _grace_period(pod))
        if not (actions.create_sandbox or actions.next_init_container
                or actions.containers_to_start or actions.ephemeral_to_start):
            return result
        async with self.start_slots:
            await self._start(pod, status, actions, result)
        return result

    async def _start(self, pod: Obj, status: PodRuntimeStatus, actions: PodActions,
                     result: SyncResult) -> None:
        config = sandbox_config(pod, actions.sandbox_attempt, logs_root=self.logs_root,
                                dns=self.dns)
        sandbox_id = actions.sandbox_id
        pod_ips = status.pod_ips
        if actions.create_sandbox:
            if self.make_log_dirs:
                Path(config.log_directory).mkdir(parents=True, exist_ok=True)
            try:
                answer = await self.runtime.run_pod_sandbox(
                    api_pb2.RunPodSandboxRequest(config=config))
            except CRIError as error:
                message = (f"Failed to create pod sandbox: {go_error_text(error)}")
                self.record_event(pod, "Warning", "FailedCreatePodSandBox", message)
                result.retry_in(self.crash_backoff.initial)
                return
            sandbox_id = answer.pod_sandbox_id
            details = await self._sandbox_status(sandbox_id)
            pod_ips = ([details.network.ip, *(x.ip for x in details.network.additional_ips)]
                       if details is not None and details.network.ip else [])
            # A new sandbox starts every container afresh; old instances stay for lastState.
            status = PodRuntimeStatus(uid=status.uid, containers=status.containers)
        for container in actions.ephemeral_to_start:
            # `--target`: in the process namespace of that container, to see its processes
            target = status.latest(container.get("targetContainerName") or "")
            await self._start_container(pod, container, status, sandbox_id, config, pod_ips,
                                        result, init=False,
                                        target_id=target.id if target is not None else "")
        if actions.next_init_container is not None:
            await self._start_container(pod, actions.next_init_container, status, sandbox_id,
                                        config, pod_ips, result, init=True)
            return
        for container in actions.containers_to_start:
            await self._start_container(pod, container, status, sandbox_id, config, pod_ips,
                                        result, init=False)

    async def _start_container(self, pod: Obj, container: Obj, status: PodRuntimeStatus,
                               sandbox_id: str, config: api_pb2.PodSandboxConfig,
                               pod_ips: list[str], result: SyncResult, *, init: bool,
                               target_id: str = "") -> None:
        """startContainer: image, CreateContainer, StartContainer, postStart (or a reason)."""
        name = container["name"]
        previous = status.latest(name)
        restart_count = previous.restart_count + 1 if previous is not None else 0
        if previous is not None and previous.exited:
            key = backoff_key(pod, container)
            if self.crash_backoff.is_in_backoff(key, since=previous.finished_at):
                delay = self.crash_backoff.current(key)
                remaining = self.crash_backoff.remaining(key, since=previous.finished_at)
                message = (f"back-off {delay:g}s restarting failed container={name} "
                           f"pod={pod['metadata']['name']}_{pod['metadata']['namespace']}"
                           f"({pod['metadata']['uid']})")
                self.record_event(pod, "Warning", "BackOff",
                                  f"Back-off restarting failed container {name} in pod "
                                  f"{pod['metadata']['name']}_{pod['metadata']['namespace']}"
                                  f"({pod['metadata']['uid']})")
                result.waiting[name] = ("CrashLoopBackOff", message)
                result.retry_in(remaining)
                return
            self.crash_backoff.next(key, event_time=previous.finished_at)
        try:
            image = await self.images.ensure_image(pod, container, config)
        except ImagePullError as error:
            result.waiting[name] = (error.reason, error.message)
            # Right after a failed pull, look again soon: the status then shows
            # ImagePullBackOff until the back-off lets the next pull happen.
            result.retry_in(IMAGE_RECHECK_SECONDS if error.reason == "ErrImagePull"
                            else self.images.remaining_backoff(pod, container.get("image", ""))
                            or IMAGE_RECHECK_SECONDS)
            return
        try:
            envs, mounts, resources = await self.container_options(pod, container, pod_ips)
        except ContainerConfigError as error:
            self._failed(pod, name, "CreateContainerConfigError", str(error), result)
            return
        request = api_pb2.CreateContainerRequest(
            pod_sandbox_id=sandbox_id, sandbox_config=config,
            config=container_config(pod, container, image=image, envs=envs, mounts=mounts,
                                    resources=resources, restart_count=restart_count,
                                    init=init, target_id=target_id))
        try:
            created = await self.runtime.create_container(request)
        except CRIError as error:
            self._failed(pod, name, "CreateContainerError", go_error_text(error), result)
            return
        self.record_event(pod, "Normal", "Created", f"Created container: {name}")
        try:
            await self.runtime.start_container(
                api_pb2.StartContainerRequest(container_id=created.container_id))
        except CRIError as error:
            self._failed(pod, name, "RunContainerError", go_error_text(error), result)
            return
        self.record_event(pod, "Normal", "Started", f"Started container {name}")
        post_start = (container.get("lifecycle") or {}).get("postStart")
        if post_start:
            failure = await run_lifecycle_handler(
                post_start, pod, container, created.container_id,
                pod_ip=pod_ips[0] if pod_ips else "", exec_sync=self.exec_sync)
            if failure is not None:
                self.record_event(pod, "Warning", "FailedPostStartHook", failure)
                await self._stop(created.container_id, _grace_period(pod))
                result.waiting[name] = ("PostStartHookError", failure)

    def _failed(self, pod: Obj, name: str, reason: str, message: str,
                result: SyncResult) -> None:
        """A start step failed: a Failed event, the waiting reason, and a retry later."""
        self.record_event(pod, "Warning", "Failed", f"Error: {message}")
        result.waiting[name] = (reason, message)
        result.retry_in(self.crash_backoff.initial)

    # -- KillPod --------------------------------------------------------------------------

    async def stop_container(self, pod: Obj, record: ContainerRecord, container: Obj | None,
                             grace: int) -> None:
        """killContainer: the preStop hook, then StopContainer with what is left of grace."""
        deadline = time.monotonic() + grace
        pre_stop = ((container or {}).get("lifecycle") or {}).get("preStop")
        if pre_stop and record.running:
            try:
                async with asyncio.timeout(grace):
                    failure = await run_lifecycle_handler(
                        pre_stop, pod, container or {}, record.id,
                        pod_ip=(pod.get("status") or {}).get("podIP", ""),
                        exec_sync=self.exec_sync)
            except TimeoutError:
                failure = f"PreStopHook timed out after {grace}s"
            if failure is not None:
                self.record_event(pod, "Warning", "FailedPreStopHook", failure)
        remaining = max(MINIMUM_GRACE_SECONDS, int(deadline - time.monotonic() + 0.999))
        await self._stop(record.id, remaining)

    async def _stop(self, container_id: str, timeout: int) -> None:
        try:
            await self.runtime.stop_container(
                api_pb2.StopContainerRequest(container_id=container_id, timeout=timeout),
                timeout=timeout + 10)
        except CRIError as error:
            if error.code.name != "NOT_FOUND":
                raise

    async def kill_pod(self, pod: Obj, status: PodRuntimeStatus, grace: int) -> None:
        """KillPod: stop every running container (in parallel), then the sandboxes."""
        specs = {c["name"]: c for c in [*(pod["spec"].get("initContainers") or []),
                                        *(pod["spec"].get("containers") or [])]}
        running = status.running_containers
        for record in running:
            self.record_event(pod, "Normal", "Killing", f"Stopping container {record.name}")
        await asyncio.gather(*(self.stop_container(pod, record, specs.get(record.name), grace)
                               for record in running))
        for sandbox in status.sandboxes:
            if sandbox.ready:
                await self.runtime.stop_pod_sandbox(
                    api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox.id))

    async def remove_pod(self, status: PodRuntimeStatus) -> None:
        """Remove the pod's containers and sandboxes from the runtime (after KillPod)."""
        for record in status.containers:
            await self._ignore_missing(self.runtime.remove_container(
                api_pb2.RemoveContainerRequest(container_id=record.id)))
        for sandbox in status.sandboxes:
            await self._ignore_missing(self.runtime.stop_pod_sandbox(
                api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox.id)))
            await self._ignore_missing(self.runtime.remove_pod_sandbox(
                api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sandbox.id)))

    async def remove_dead_containers(self, status: PodRuntimeStatus) -> None:
        """Container GC for one pod: keep the newest two instances of each container (the
        current one and the one `lastState` and `logs --previous` show)."""
        seen: dict[str, int] = {}
        for record in status.containers:
            seen[record.name] = seen.get(record.name, 0) + 1
            if seen[record.name] > 2 and not record.running:
                await self._ignore_missing(self.runtime.remove_container(
                    api_pb2.RemoveContainerRequest(container_id=record.id)))
        for sandbox in status.sandboxes[1:]:
            if not sandbox.ready:
                await self._ignore_missing(self.runtime.remove_pod_sandbox(
                    api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sandbox.id)))

    @staticmethod
    async def _ignore_missing(call: Awaitable[Any]) -> None:
        try:
            await call
        except CRIError as error:
            if error.code.name != "NOT_FOUND":
                raise


def backoff_key(pod: Obj, container: Obj) -> str:
    """Upstream's stable key: a changed container spec starts a fresh back-off."""
    meta = pod["metadata"]
    return (f"{meta['name']}_{meta['namespace']}_{meta['uid']}_{container['name']}_"
            f"{container_hash(container)}")


def _grace_period(pod: Obj) -> int:
    meta = pod["metadata"]
    grace = meta.get("deletionGracePeriodSeconds")
    if grace is None:
        grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    return max(MINIMUM_GRACE_SECONDS, int(grace))


def _termination_message(status: api_pb2.ContainerStatus, record: ContainerRecord) -> str:
    """The file the container wrote at terminationMessagePath (mounted from the host), or
    the tail of its log under FallbackToLogsOnError when it failed and wrote nothing."""
    path = record.termination_message_path or "/dev/termination-log"
    for mount in status.mounts:
        if mount.container_path == path:
            try:
                with open(mount.host_path, "rb") as source:
                    text = source.read(TERMINATION_MESSAGE_LIMIT).decode(errors="replace")
            except OSError:
                text = ""
            if text:
                return text
    if record.termination_message_policy == "FallbackToLogsOnError" and record.exit_code:
        return _log_tail(record.log_path)
    return ""


def _log_tail(log_path: str, lines: int = 80) -> str:
    try:
        with open(log_path, "rb") as source:
            source.seek(0, 2)
            size = source.tell()
            source.seek(max(0, size - 16384))
            records = source.read().decode(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    text = "".join(part.split(" ", 3)[3] + ("\n" if part.split(" ", 3)[2] == "F" else "")
                   for part in records if part.count(" ") >= 3)
    return text[-TERMINATION_MESSAGE_LIMIT:]
