"""The PLEG (pod lifecycle event generator): notice what changed in the runtime.

Upstream `pkg/kubelet/pleg/generic.go`. Once a second it lists every sandbox and
container through CRI (two calls, however many pods), compares their states with the
previous list, and wakes only the workers of pods in which something started, exited
or disappeared: a container that crashes is noticed within a second, with no polling
per pod. (containerd 1.6 has no CRI event stream, so relisting is the way here.)

A relist that fails changes nothing: while containerd restarts, the pods keep what the
last relist saw, and the next one after the restart finds the same containers again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from minikube_py.cri import CRIError, RuntimeService, RuntimeUnavailable
from minikube_py.gen.cri import api_pb2
from minikube_py.kubelet.podstate import (
    MANAGED_LABEL,
    POD_UID_LABEL,
    STATE_NAMES,
    RuntimeView,
    container_view,
    sandbox_view,
)

log = logging.getLogger(__name__)
RELIST_PERIOD = 1.0


class GenericPLEG:
    def __init__(self, runtime: RuntimeService, on_pod_changed: Callable[[str], None], *,
                 period: float = RELIST_PERIOD) -> None:
        self.runtime = runtime
        self.on_pod_changed = on_pod_changed
        self.period = period
        # pod uid -> what the runtime held for it at the last relist
        self._last: dict[str, RuntimeView] = {}
        self._task: asyncio.Task[None] | None = None
        self.relists = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="pleg")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            try:
                await self.relist()
            except RuntimeUnavailable as error:
                # the CRI client has warned once; what the last relist saw still stands
                log.debug("PLEG relist skipped, the runtime is away: %s", error)
            except CRIError as error:
                log.warning("PLEG relist failed: %s", error.message)
            await asyncio.sleep(self.period)

    async def relist(self) -> None:
        """One relist: list everything, diff against the last one, wake changed pods."""
        selector = {MANAGED_LABEL: "true"}
        sandboxes = await self.runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
            filter=api_pb2.PodSandboxFilter(label_selector=selector)))
        containers = await self.runtime.list_containers(api_pb2.ListContainersRequest(
            filter=api_pb2.ContainerFilter(label_selector=selector)))
        seen: dict[str, list[tuple[str, str]]] = {}
        for sandbox in sandboxes.items:
            seen.setdefault(sandbox.labels.get(POD_UID_LABEL, ""), []).append(
                sandbox_view(sandbox.id, sandbox.state == api_pb2.SANDBOX_READY))
        for container in containers.containers:
            seen.setdefault(container.labels.get(POD_UID_LABEL, ""), []).append(
                container_view(container.id, STATE_NAMES.get(container.state, "unknown")))
        current = {uid: frozenset(views) for uid, views in seen.items() if uid}
        changed = {uid for uid, view in current.items() if self._last.get(uid) != view}
        changed |= set(self._last) - set(current)
        self._last = current
        self.relists += 1
        for uid in changed:
            self.on_pod_changed(uid)

    def view(self, uid: str) -> RuntimeView:
        """What the last relist saw of the pod (empty once it is gone)."""
        return self._last.get(uid, frozenset())
