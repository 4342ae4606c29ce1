"""The cluster autoscaler's loop (upstream's core/static_autoscaler.go RunOnce), every
--scan-interval, sooner when the loop trigger says so (upstream's loop/trigger.go): at
once after an iteration that scaled up or deleted a node, and when a pod turns
Unschedulable (its condition at most 10 s old):

    snapshot        the group's nodes (Ready, or coming up) and the pods bound to them
    below min size  -> increase to min size
    scale up        pods the scheduler marked Unschedulable (PodScheduled False)
                      -> filter out those that fit the nodes there are or coming up
                      -> binpack the rest on template nodes (estimate), capped at max size
                      -> increase size; TriggeredScaleUp on the pods it is for,
                         NotTriggerScaleUp (with the reasons) on the others
    scale down      (not within --scale-down-delay-after-add of a scale-up)
                      a node of the group is unneeded when its utilization is under
                      --scale-down-utilization-threshold and its pods may move and fit
                      the other nodes; after --scale-down-unneeded-time unneeded:
                      empty nodes go at once (up to --max-empty-bulk-delete), else one
                      node: tainted ToBeDeletedByClusterAutoscaler, its pods evicted
                      through the Eviction API (PodDisruptionBudgets decide), then
                      removed; never below min size
    status          the ConfigMap kube-system/cluster-autoscaler-status (status.py)
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from minikube_py.api import Obj
from minikube_py.api.meta import parse_rfc3339
from minikube_py.api.podutil import pod_condition
from minikube_py.autoscaler.nodegroup import NodeGroup
from minikube_py.autoscaler.simulator import (
    TO_BE_DELETED_TAINT,
    Filters,
    blocking_reason,
    estimate,
    filter_out_schedulable,
    find_places,
    moves,
    pod_key,
    utilization,
)
from minikube_py.autoscaler.status import StatusWriter
from minikube_py.client.errors import APIStatusError, NotFound
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import EventHandler, SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.lifecycle import Component, wait_for_event
from minikube_py.scheduler.framework.types import NodeInfo

log = logging.getLogger(__name__)
MAX_POD_CHANGE_AGE = 10.0
"""Seconds: a pod Unschedulable for longer wakes no loop (upstream's maxPodChangeAge)."""


@dataclass
class AutoscalingOptions:
    """The flags, with upstream's names and defaults (seconds for durations)."""

    scan_interval: float = 10.0
    scale_down_enabled: bool = True
    scale_down_unneeded_time: float = 600.0
    scale_down_delay_after_add: float = 600.0
    scale_down_utilization_threshold: float = 0.5
    max_empty_bulk_delete: int = 10
    max_graceful_termination_sec: float = 600.0  # how long a drained node's pods may take
    write_status_configmap: bool = True
    status_config_map_name: str = "cluster-autoscaler-status"


@dataclass
class ScaleDownState:
    """What the loop remembers: since when each node is unneeded, the last scale-up and
    the last node deleted (monotonic seconds)."""

    unneeded_since: dict[str, float] = field(default_factory=dict)
    last_scale_up: float = float("-inf")
    last_scale_down_delete: float = float("-inf")
    deleting: set[str] = field(default_factory=set)


def is_unschedulable(pod: Obj) -> bool:
    """Pending and marked by the scheduler: PodScheduled False, reason Unschedulable."""
    if (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get("deletionTimestamp"):
        return False
    condition = pod_condition(pod, "PodScheduled")
    return (condition is not None and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable")


def is_recent_unschedulable(pod: Obj, now: datetime) -> bool:
    """isRecentUnschedulablePod: unschedulable (not ended), the scheduler's verdict at
    most MAX_POD_CHANGE_AGE old."""
    if is_terminal(pod) or not is_unschedulable(pod):
        return False
    since = (pod_condition(pod, "PodScheduled") or {}).get("lastTransitionTime")
    return bool(since) and (now - parse_rfc3339(since)).total_seconds() <= MAX_POD_CHANGE_AGE


def is_ready(node: Obj) -> bool:
    return (pod_condition(node, "Ready") or {}).get("status") == "True"


def is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class ClusterAutoscaler(Component):
    """Grows the node group for pods that do not fit, and shrinks it when nodes idle."""

    def __init__(self, client: Client, group: NodeGroup,
                 options: AutoscalingOptions | None = None) -> None:
        self.client = client
        self.group = group
        self.options = options or AutoscalingOptions()
        self.factory = SharedInformerFactory(client)
        self.nodes = self.factory.informer("nodes")
        self.pods = self.factory.informer("pods")
        self.recorder = EventRecorder(client, "cluster-autoscaler")
        self.filters = Filters()
        self.state = ScaleDownState()
        self.status = StatusWriter(client, self.options.status_config_map_name)
        self.decision_seconds: list[float] = []  # how long each scale-up decision took
        self._wake = asyncio.Event()  # upstream's unschedulablePodChan
        self._synced = asyncio.Event()
        self.pods.add_event_handler(EventHandler(
            on_add=self._observe_pod, on_update=lambda _, new: self._observe_pod(new)))

    def _observe_pod(self, pod: Obj) -> None:
        """UnschedulablePodObserver: a pod that has just turned Unschedulable wakes the
        loop."""
        if is_recent_unschedulable(pod, datetime.now(UTC)):
            self._wake.set()

    async def wait_started(self) -> None:
        await self._synced.wait()

    async def run(self) -> None:
        try:
            self.factory.start()
            await self.factory.wait_for_cache_sync()
            await self.group.start()
            self._synced.set()
            while True:
                started = time.monotonic()
                self._wake.clear()  # a pod turning Unschedulable from here on counts
                try:
                    await self.run_once()
                except APIStatusError as error:
                    log.warning("autoscaling loop failed: %s", error)
                except Exception:  # a loop that stops would leave the cluster unscaled
                    log.exception("autoscaling loop failed")
                await self.wait_for_trigger(started)
        finally:
            await self.group.stop()
            await self.recorder.stop()
            await self.factory.stop()

    async def wait_for_trigger(self, last_run: float) -> None:
        """LoopTrigger.Wait: none after a productive iteration (it scaled up or deleted a
        node: there may be more to do at once), else --scan-interval from the iteration's
        start or a pod turning Unschedulable, whichever comes first."""
        if last_run <= max(self.state.last_scale_up, self.state.last_scale_down_delete):
            log.debug("autoscaler loop triggered immediately after a productive iteration")
            await asyncio.sleep(0)
            return
        if await wait_for_event(self._wake, max(
                0.0, self.options.scan_interval - (time.monotonic() - last_run))):
            log.debug("autoscaler loop triggered by an unschedulable pod appearing")

    # -- one loop ------------------------------------------------------------------------

    def snapshot(self) -> tuple[list[NodeInfo], list[Obj]]:
        """The nodes pods may go to (the group's coming up count, as upstream's upcoming
        nodes do) with the pods bound to them, and the unschedulable pods."""
        bound: dict[str, list[Obj]] = {}
        pending = []
        for pod in self.pods.store.list():
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name and not is_terminal(pod):
                bound.setdefault(node_name, []).append(pod)
            elif is_unschedulable(pod):
                pending.append(pod)
        infos = []
        ours = self.group.node_names()
        registered = set()
        for node in self.nodes.store.list():
            name = node["metadata"]["name"]
            registered.add(name)
            if name in self.state.deleting:
                continue
            if is_ready(node) or name in ours:
                infos.append(NodeInfo.of(node, bound.get(name, [])))
        template = self.group.template_node()
        for name in sorted(ours - registered):  # started, not registered yet
            upcoming = {**template, "metadata": {**template["metadata"], "name": name}}
            infos.append(NodeInfo.of(upcoming))
        return infos, sorted(pending, key=lambda p: p["metadata"].get("creationTimestamp", ""))

    async def run_once(self) -> None:
        """RunOnce: scale up, else scale down, then write the status."""
        now = time.monotonic()
        if self.group.target_size() < self.group.min_size:
            await self.group.increase_size(self.group.min_size - self.group.target_size())
            self.state.last_scale_up = now
        infos, pending = self.snapshot()
        # scale_up places the pending pods that fit on the nodes in `infos` (upstream's
        # in-memory hints), so that scale-down does not take a node a pod is about to use
        scaled_up = await self.scale_up(infos, pending) if pending else False
        candidates: list[str] = []
        if not scaled_up and self.options.scale_down_enabled:
            candidates = await self.scale_down(now, infos)
        if self.options.write_status_configmap:
            await self.status.write(self.group, self.nodes.store.list(), bool(
                self.group.node_names() - {n["metadata"]["name"] for n in
                                           self.nodes.store.list() if is_ready(n)}),
                candidates)

    async def scale_up(self, infos: list[NodeInfo], pending: list[Obj]) -> bool:
        """ScaleUp: as many template nodes as the pods that fit nowhere need, up to max."""
        started = time.perf_counter()
        left = filter_out_schedulable(self.filters, pending, infos)
        if not left:
            return False
        found = estimate(self.filters, left, self.group.template_node())
        current = self.group.target_size()
        room = self.group.max_size - current
        wanted = min(len(found.nodes), room)
        helped = [pod for pods in found.nodes[:wanted] for pod in pods]
        over_max = [pod for pods in found.nodes[wanted:] for pod in pods]
        self.decision_seconds.append(time.perf_counter() - started)
        by_key = {pod_key(pod): pod for pod in left}
        for key, reasons in found.no_fit.items():
            counted = ", ".join(f"1 {reason}" for reason in reasons)
            self.recorder.event(by_key[key], "Normal", "NotTriggerScaleUp",
                                f"pod didn't trigger scale-up: {counted}")
        for pod in over_max:
            self.recorder.event(pod, "Normal", "NotTriggerScaleUp",
                                "pod didn't trigger scale-up: 1 max node group size reached")
        if wanted <= 0:
            return False
        log.info("Scale-up: setting group %s size to %d (decided in %.3f s)", self.group.name,
                 current + wanted, self.decision_seconds[-1])
        message = (f"pod triggered scale-up: [{{{self.group.name} {current}->"
                   f"{current + wanted} (max: {self.group.max_size})}}]")
        for pod in helped:
            self.recorder.event(pod, "Normal", "TriggeredScaleUp", message)
        self.state.last_scale_up = time.monotonic()
        await self.group.increase_size(wanted)
        return True

    def unneeded_nodes(self, infos: list[NodeInfo]) -> list[str]:
        """UpdateUnneededNodes: the group's Ready nodes under the threshold whose pods
        may move and fit the other nodes (each checked against the nodes left after the
        ones already found unneeded)."""
        ours = self.group.node_names()
        unneeded: list[str] = []
        for info in sorted(infos, key=utilization):
            if info.name not in ours or not is_ready(info.node):
                continue
            if utilization(info) >= self.options.scale_down_utilization_threshold:
                continue
            pods = [pod.pod for pod in info.pods]
            if any(blocking_reason(pod) for pod in pods):
                continue
            others = [NodeInfo.of(o.node, [p.pod for p in o.pods]) for o in infos
                      if o.name != info.name and o.name not in unneeded]
            if find_places(self.filters, [pod for pod in pods if moves(pod)], others):
                unneeded.append(info.name)
        return unneeded

    async def scale_down(self, now: float, infos: list[NodeInfo]) -> list[str]:
        """ScaleDown: remove the nodes unneeded for long enough; the current candidates.
        `infos` holds the pending pods that fit as placed."""
        unneeded = self.unneeded_nodes(infos)
        self.state.unneeded_since = {name: self.state.unneeded_since.get(name, now)
                                     for name in unneeded}
        if now - self.state.last_scale_up < self.options.scale_down_delay_after_add:
            return unneeded
        removable = [name for name in unneeded
                     if now - self.state.unneeded_since[name]
                     >= self.options.scale_down_unneeded_time]
        room = self.group.target_size() - self.group.min_size
        by_name = {info.name: info for info in infos}
        empty = [n for n in removable if not any(moves(p.pod) for p in by_name[n].pods)]
        bulk = empty[:min(room, self.options.max_empty_bulk_delete)]
        await asyncio.gather(*(self.remove_node(name, []) for name in bulk))  # in parallel
        room -= len(bulk)
        drained = [n for n in removable if n not in empty]
        if drained and room > 0:
            name = drained[0]
            await self.remove_node(name, [  # the pods bound there, not the ones hinted to it
                p.pod for p in by_name[name].pods
                if moves(p.pod) and (p.pod.get("spec") or {}).get("nodeName") == name])
        return [name for name in unneeded if name in self.group.node_names()]

    async def remove_node(self, name: str, pods: list[Obj]) -> None:
        """Taint the node, evict its pods (a PodDisruptionBudget may refuse: the node then
        stays, untainted), wait for them to go, and delete it."""
        self.state.deleting.add(name)
        try:
            await self._taint(name, add=True)
            for pod in pods:
                meta = pod["metadata"]
                try:
                    await self.client.resource("pods").create(
                        {"apiVersion": "policy/v1", "kind": "Eviction",
                         "metadata": {"name": meta["name"], "namespace": meta["namespace"]}},
                        meta["namespace"], subresource="eviction", name=meta["name"])
                except NotFound:
                    continue
                except APIStatusError as error:
                    log.info("Not deleting node %s: evicting %s/%s failed: %s", name,
                             meta["namespace"], meta["name"], error)
                    self.recorder.event(pod, "Warning", "ScaleDownFailed",
                                        f"failed to evict pod: {error}")
                    await self._taint(name, add=False)
                    return
                self.recorder.event(pod, "Normal", "ScaleDown",
                                    "deleting pod for node scale down")
            if not await self._pods_gone(name):
                log.warning("Not deleting node %s: its evicted pods did not go within %.0f s",
                            name, self.options.max_graceful_termination_sec)
                await self._taint(name, add=False)
                return
            log.info("Scale-down: removing node %s", name)
            node = self.nodes.store.get(name)
            if node is not None:
                self.recorder.event(node, "Normal", "ScaleDown",
                                    "marked the node as toBeDeleted/unschedulable")
            await self.group.delete_node(name)
            self.state.last_scale_down_delete = time.monotonic()
            self.state.unneeded_since.pop(name, None)
        finally:
            self.state.deleting.discard(name)

    async def _pods_gone(self, name: str) -> bool:
        """Whether every pod that moves has left the node (the kubelet ends the evicted
        ones) within --max-graceful-termination-sec."""
        deadline = time.monotonic() + self.options.max_graceful_termination_sec
        while any(moves(pod) and not is_terminal(pod)
                  for pod in self.pods.store.list()
                  if (pod.get("spec") or {}).get("nodeName") == name):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.2)
        return True

    async def _taint(self, name: str, *, add: bool) -> None:
        """The ToBeDeletedByClusterAutoscaler:NoSchedule taint on or off."""
        try:
            node = await self.client.resource("nodes").get(name)
        except NotFound:
            return
        taints = [t for t in (node.get("spec") or {}).get("taints") or []
                  if t.get("key") != TO_BE_DELETED_TAINT]
        if add:
            taints.append({"key": TO_BE_DELETED_TAINT, "value": str(int(time.time())),
                           "effect": "NoSchedule"})
        await self.client.resource("nodes").patch(name, {"spec": {"taints": taints}})
