"""The scheduler: informers feed the queue and the cache; one loop schedules pod after pod.

    pods informer:  unassigned pods of our profiles -> queue; assigned pods -> cache
    nodes informer: -> cache; every change may help unschedulable pods -> queue moves

    scheduling cycle (serial, one pod at a time)          schedule_one()
      pop -> snapshot -> PreFilter -> Filter (each node) -> PostFilter if none fits
          -> PreScore -> Score -> pick the best node -> assume in the cache -> Reserve
          -> Permit
    binding cycle (asynchronous, runs while the next pod is scheduled)   binding_cycle()
      wait for Permit -> PreBind -> Bind (POST pods/<name>/binding) -> PostBind

A pod no node fits gets a `FailedScheduling` Warning Event and the condition
PodScheduled=False, with the per-node reasons counted: "0/5 nodes are available:
3 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}." It then waits in
the queue for a cluster change that could help it.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import operator
import random
import time
from collections import Counter as Histogram
from collections.abc import Mapping
from itertools import repeat
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client import Histogram as PromHistogram

from minikube_py.api import Obj
from minikube_py.api.meta import now_rfc3339
from minikube_py.client.errors import ClientError, NotFound
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import EventHandler, SharedInformerFactory
from minikube_py.client.logs import log_v
from minikube_py.client.rest import Client
from minikube_py.lifecycle import Component
from minikube_py.scheduler.cache import Cache
from minikube_py.scheduler.config import SchedulerConfiguration
from minikube_py.scheduler.extender import ExtenderError, HTTPExtender
from minikube_py.scheduler.framework.interface import (
    ClusterEvent,
    Code,
    CycleState,
    Plugin,
    QueuedPodInfo,
    Status,
)
from minikube_py.scheduler.framework.node_to_status import NodeToStatus
from minikube_py.scheduler.framework.runtime import Framework
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.profile import build_framework
from minikube_py.scheduler.queue import SchedulingQueue
from minikube_py.tracing import context as tracing_context
from minikube_py.tracing.tracer import DISABLED, Tracer, current_span

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 50
# the nodes whose every plugin's score a decision keeps (upstream's selectHost hands back
# as many NodePluginScores): the chosen node and the next best
NUMBER_OF_HIGHEST_SCORED_NODES_TO_REPORT = 3
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
# (ClusterEvent resource, plural, group) of the objects volume scheduling watches
STORAGE_RESOURCES = (("PersistentVolumeClaim", "persistentvolumeclaims", None),
                     ("PersistentVolume", "persistentvolumes", None),
                     ("StorageClass", "storageclasses", "storage.k8s.io"))


class FitError(Exception):
    """No node fits the pod: per-node statuses, and what PreFilter/PostFilter said. (The
    cycle's statuses are a NodeToStatus: read node by node, they are made a dict once.)"""

    def __init__(self, pod: PodInfo, num_all_nodes: int, statuses: Mapping[str, Status],
                 pre_filter_message: str = "") -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.statuses = statuses
        self.pre_filter_message = pre_filter_message
        self.post_filter_message = ""

    def unschedulable_plugins(self) -> set[str]:
        return {status.plugin for status in self.statuses.values() if status.plugin}

    def message(self) -> str:
        """FitError.Error(): "0/N nodes are available: <counted reasons>. <postfilter>"
        (the PostFilter message brings its own final period, as preemption's does)."""
        text = f"0/{self.num_all_nodes} nodes are available:"
        if self.pre_filter_message:
            text += f" {self.pre_filter_message}."
        else:
            counts = Histogram(reason for status in self.statuses.values()
                               for reason in status.reasons)
            reasons = sorted(f"{count} {reason}" for reason, count in counts.items())
            if reasons:
                text += f" {', '.join(reasons)}."
        if self.post_filter_message:
            text += f" {self.post_filter_message}"
        return text


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """numFeasibleNodesToFind: small clusters check every node; large ones stop early
    (adaptive: 50% minus 1% per 125 nodes, at least 5%, never fewer than 100 nodes)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return num_all_nodes
    if percentage == 0:
        percentage = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE - num_all_nodes // 125
        percentage = max(percentage, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


class SchedulerMetrics:
    """The scheduler_* metrics upstream exposes that users and the benchmark read."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.attempts = Counter("scheduler_schedule_attempts",
                                "Number of attempts to schedule pods, by the result",
                                ["result", "profile"], registry=registry)
        self.attempt_duration = PromHistogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"], registry=registry,
            buckets=(0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512,
                     1.024, 2.048, 4.096, 8.192, 16.384))
        self.pending = Gauge("scheduler_pending_pods", "Number of pending pods, by the queue",
                             ["queue"], registry=registry)
        self.extension_point = PromHistogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point",
            ["extension_point", "status", "profile"], registry=registry,
            buckets=(0.0001, 0.0002, 0.0004, 0.0008, 0.0016, 0.0032, 0.0064, 0.0128, 0.0256,
                     0.0512, 0.1024, 0.2048))


class Scheduler(Component):
    """Schedules the pending pods whose schedulerName matches one of its profiles."""

    def __init__(self, client: Client, config: SchedulerConfiguration,
                 registry: Mapping[str, type[Plugin]], *,
                 metrics_registry: CollectorRegistry | None = None,
                 tracer: Tracer = DISABLED) -> None:
        self.client = client
        self.tracer = tracer
        self.config = config
        self.metrics_registry = metrics_registry or CollectorRegistry()
        self.metrics = SchedulerMetrics(self.metrics_registry)
        self.informers = SharedInformerFactory(client)
        # Events name the profile that wrote them (source.component), as upstream's do.
        self.recorders: dict[str, EventRecorder] = {}
        self.cache = Cache()
        self.extenders = [HTTPExtender(extender) for extender in config.extenders]
        self.profiles: dict[str, Framework] = {}
        for profile in config.profiles:
            self.profiles[profile.scheduler_name] = build_framework(
                profile, registry, client=client, informers=self.informers,
                recorder=self.recorders.setdefault(
                    profile.scheduler_name, EventRecorder(client, profile.scheduler_name)),
                percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                observe=self._observer(profile.scheduler_name))
        first = next(iter(self.profiles.values()))
        plugin_events = {plugin.name: plugin.events_to_register()
                         for fwk in self.profiles.values()
                         for plugin in fwk.plugins.all_plugins()}
        self.queue = SchedulingQueue(
            first.queue_sort_less(), events_for_plugin=lambda name: (plugin_events.get(name) or []),
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds)
        for fwk in self.profiles.values():
            fwk.pod_nominator = self.queue
        self.pods = self.informers.informer("pods")
        self.nodes = self.informers.informer("nodes")
        self.namespaces = self.informers.informer("namespaces")
        self._wire_informers()
        self._wire_plugin_informers(plugin_events)
        self._next_start_node_index = 0
        self._binding_tasks: set[asyncio.Task[None]] = set()
        self.synced = asyncio.Event()

    def _observer(self, profile: str) -> Any:
        # Finding a labelled child is slower than observing it: keep them at hand.
        children: dict[tuple[str, str], Any] = {}

        def observe(point: str, status: str, seconds: float) -> None:
            child = children.get((point, status))
            if child is None:
                child = children[point, status] = self.metrics.extension_point.labels(
                    point, status, profile)
            child.observe(seconds)
        return observe

    # -- informer handlers: the queue and the cache follow the cluster ------------------------

    def responsible_for(self, pod: Obj) -> bool:
        name = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
        return name in self.profiles

    def _wire_informers(self) -> None:
        self.pods.add_event_handler(EventHandler(
            on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted))
        self.nodes.add_event_handler(EventHandler(
            on_add=lambda node: self._node_changed(node, ["Add"]),
            on_update=lambda old, node: self._node_changed(node, node_update_actions(old, node)),
            on_delete=self._node_deleted))
        self.namespaces.add_event_handler(EventHandler(
            on_add=self._namespace_changed,
            on_update=lambda _old, ns: self._namespace_changed(ns),
            on_delete=lambda ns: self.cache.namespace_labels.pop(ns["metadata"]["name"], None)))

    def _wire_plugin_informers(self, plugin_events: dict[str, list[ClusterEvent]]) -> None:
        """The storage objects some plugin (VolumeBinding) waits on: their adds and updates
        retry the pods it turned down."""
        wanted = {event.resource for events in plugin_events.values() for event in events}
        for resource, plural, group in STORAGE_RESOURCES:
            if resource not in wanted:
                continue
            self.informers.informer(plural, group).add_event_handler(EventHandler(
                on_add=lambda _obj, kind=resource: self.queue.move_all_to_active_or_backoff(
                    ClusterEvent(kind, "Add")),
                on_update=lambda _old, _new, kind=resource:
                    self.queue.move_all_to_active_or_backoff(ClusterEvent(kind, "Update"))))

    @staticmethod
    def _assigned(pod: Obj) -> bool:
        return bool((pod.get("spec") or {}).get("nodeName"))

    @staticmethod
    def _terminal(pod: Obj) -> bool:
        return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")

    def _pending(self, pod: Obj) -> bool:
        """A pod for our queue: unassigned, ours, not being deleted, not gated."""
        spec = pod.get("spec") or {}
        return (not spec.get("nodeName") and self.responsible_for(pod)
                and not (pod.get("metadata") or {}).get("deletionTimestamp")
                and not spec.get("schedulingGates"))

    def _pod_added(self, pod: Obj) -> None:
        if self._assigned(pod):
            if not self._terminal(pod):
                self.cache.add_pod(pod)
                self.queue.move_all_to_active_or_backoff(ClusterEvent("Pod", "Add"))
        elif self._pending(pod):
            self.queue.add(pod)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if self._assigned(new):
            self.queue.delete(new)
            if self._terminal(new):
                self.cache.remove_pod(new)
                self.queue.move_all_to_active_or_backoff(ClusterEvent("Pod", "Delete"))
            else:
                self.cache.update_pod(new)
                for action in pod_update_actions(old, new):
                    self.queue.move_all_to_active_or_backoff(ClusterEvent("Pod", action))
        elif self._pending(new):
            self.queue.update(old, new)
        else:
            self.queue.delete(new)

    def _pod_deleted(self, pod: Obj) -> None:
        if self._assigned(pod):
            self.cache.remove_pod(pod)
            self.queue.delete_nominated(pod)
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Pod", "Delete"))
        else:
            self.queue.delete(pod)

    def _node_changed(self, node: Obj, actions: list[str]) -> None:
        self.cache.add_node(node)
        for action in actions:
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Node", action))

    def _node_deleted(self, node: Obj) -> None:
        self.cache.remove_node(node)

    def _namespace_changed(self, namespace: Obj) -> None:
        meta = namespace["metadata"]
        self.cache.namespace_labels[meta["name"]] = dict(meta.get("labels") or {})

    # -- running ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """Start the informers, wait for their caches, then schedule until cancelled."""
        self.informers.start()
        flusher = asyncio.create_task(self.queue.run_flusher(), name="queue-flusher")
        housekeeping = asyncio.create_task(self._housekeeping(), name="cache-cleanup")
        try:
            await self.informers.wait_for_cache_sync()
            self.synced.set()
            log.info("caches synced; scheduling with profiles %s", ", ".join(self.profiles))
            while True:
                queued = await self.queue.pop()
                if queued is None:
                    return
                await self.schedule_one(queued)
                # A scheduling cycle is CPU work with no await in it: let the informers and
                # the binding cycles (HTTP answers waiting in the loop) run between pods.
                await asyncio.sleep(0)
        finally:
            self.synced.clear()
            self.queue.close()
            for task in (flusher, housekeeping, *self._binding_tasks):
                task.cancel()
            await asyncio.gather(flusher, housekeeping, *self._binding_tasks,
                                 return_exceptions=True)
            await self.informers.stop()
            for recorder in self.recorders.values():
                await recorder.stop()
            for extender in self.extenders:
                await extender.close()

    async def wait_started(self) -> None:
        """The caches synced; pods are being scheduled."""
        await self.synced.wait()

    async def _housekeeping(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            for expired in self.cache.cleanup_expired_assumed_pods():
                log.warning("assumed pod %s expired: its binding was never confirmed",
                            expired.key)
            for queue, count in self.queue.pending_pods().items():
                self.metrics.pending.labels(queue).set(count)

    # -- the scheduling cycle ---------------------------------------------------------------------

    async def schedule_one(self, queued: QueuedPodInfo) -> None:
        """One pod through the scheduling cycle; its binding cycle continues in a task.
        A pod that carries a trace gets a span of it (events: each node's Filter result
        and the plugin that rejected it, each node's Score, with every Score plugin's
        weighted part for the three best; attributes: the queue wait, the node chosen)."""
        pod_info = queued.pod_info
        current = self.pods.store.get(pod_info.key)
        if current is None or not self._pending(current) or self.cache.is_assumed(current):
            return
        if current["metadata"].get("uid") != pod_info.uid:
            return
        parent = tracing_context.of_object(current) if self.tracer.enabled else None
        if parent is None:
            await self._schedule_one(queued, current)
            return
        namespace, _, name = pod_info.key.partition("/")
        with self.tracer.span("schedule", parent=parent, **{
                "k8s.resource": "pods", "k8s.namespace": namespace, "k8s.name": name,
                "k8s.uid": pod_info.uid,
                "queue.wait_ms": round((time.monotonic() - queued.timestamp) * 1000, 3),
                "attempts": queued.attempts}):
            await self._schedule_one(queued, current)

    async def _schedule_one(self, queued: QueuedPodInfo, current: Obj) -> None:
        pod_info = queued.pod_info
        span = current_span()
        fwk = self.profiles[(current.get("spec") or {}).get("schedulerName")
                            or "default-scheduler"]
        log_v(log, 3, "Attempting to schedule pod", pod=pod_info.key)
        started = time.perf_counter()
        fwk.set_snapshot(self.cache.update_snapshot())
        state = CycleState()
        cycle = self.queue.scheduling_cycle
        try:
            host = await self.schedule_pod(fwk, state, pod_info)
        except FitError as fit:
            result, status = await fwk.run_post_filter_plugins(state, pod_info, fit.statuses)
            # A result sets the nomination (an empty name clears it); None leaves it as is.
            nominated = result.nominated_node_name if result is not None else None
            if not status.is_success() and status.message():
                fit.post_filter_message = status.message()
            queued.unschedulable_plugins = fit.unschedulable_plugins()
            if nominated is not None:
                self.queue.add_nominated(pod_info, nominated)
            log_v(log, 2, "Unable to schedule pod; no fit; waiting", pod=pod_info.key,
                  err=fit.message())
            span.set("result", "Unschedulable")
            span.set("message", fit.message())
            await self._fail(fwk, queued, cycle, fit.message(), "Unschedulable", nominated,
                             started)
            return
        except SchedulingError as error:
            await self._fail(fwk, queued, cycle, str(error), "SchedulerError", None, started)
            return
        assumed = pod_info
        span.set("node", host)
        self.cache.assume_pod(assumed, host)
        status = fwk.run_reserve_plugins_reserve(state, assumed, host)
        span.event("Reserve", node=host, result=status.message() or "Success")
        if status.is_success():
            status = fwk.run_permit_plugins(state, assumed, host)
            span.event("Permit", node=host, result=status.message() or status.code.name)
        if not status.is_success() and status.code != Code.WAIT:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed.pod)
            if status.is_rejected():
                queued.unschedulable_plugins = {status.plugin}
                await self._fail(fwk, queued, cycle, status.message(), "Unschedulable", None,
                                 started)
            else:
                await self._fail(fwk, queued, cycle, status.message(), "SchedulerError", None,
                                 started)
            return
        self.queue.delete_nominated(assumed.pod)
        task = asyncio.create_task(
            self.binding_cycle(fwk, state, queued, assumed, host, cycle, started),
            name=f"bind-{pod_info.key}")
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_tasks.discard)

    async def schedule_pod(self, fwk: Framework, state: CycleState, pod: PodInfo) -> str:
        """The scheduling algorithm: feasible nodes, then the best-scoring one."""
        snapshot = fwk.snapshot()
        if not snapshot.node_info_list:
            raise SchedulingError(NO_NODES_AVAILABLE)
        feasible, statuses = self.find_nodes_that_fit(fwk, state, pod)
        if feasible and self.extenders:
            feasible = await self._extenders_filter(pod, feasible, statuses)
        state.evaluated_nodes = len(feasible) + len(statuses)
        state.feasible_nodes = len(feasible)
        span = current_span()
        if span.recording:
            for info in feasible:
                span.event("Filter", node=info.name, result="fits")
            for node, node_status in statuses.items():
                span.event("Filter", node=node, result=node_status.message(),
                           **({"plugin": node_status.plugin} if node_status.plugin else {}))
        if not feasible:
            raise FitError(pod, len(snapshot.node_info_list), statuses)
        if len(feasible) == 1:
            return feasible[0].name
        status = fwk.run_pre_score_plugins(state, pod, feasible)
        if not status.is_success():
            raise SchedulingError(status.message())
        # each Score plugin's weighted score per node, kept for the trace's record only
        # (of the best nodes: NUMBER_OF_HIGHEST_SCORED_NODES_TO_REPORT)
        by_plugin: dict[str, list[int]] | None = {} if span.recording else None
        scores, status = fwk.run_score_plugins(state, pod, feasible, by_plugin)
        if not status.is_success():
            raise SchedulingError(status.message())
        for extender in self.extenders:
            if not extender.is_interested(pod):
                continue
            try:
                prioritized = await extender.prioritize(pod, feasible)
            except ExtenderError as error:
                if not extender.ignorable:
                    raise SchedulingError(str(error)) from error
                continue
            for name, score in prioritized.items():
                if name in scores:
                    scores[name] += score
            if by_plugin is not None and prioritized:
                by_plugin[f"extender {extender.name}"] = [
                    prioritized.get(info.name, 0) for info in feasible]
        host = select_host(scores)
        if by_plugin is not None:
            reported = {host, *heapq.nlargest(NUMBER_OF_HIGHEST_SCORED_NODES_TO_REPORT - 1,
                                              (node for node in scores if node != host),
                                              key=scores.__getitem__)}
            for index, (node, score) in enumerate(scores.items()):
                if node in reported:
                    span.event("Score", node=node, score=score,
                               **{name: column[index] for name, column in by_plugin.items()})
                else:
                    span.event("Score", node=node, score=score)
        return host

    async def _extenders_filter(self, pod: PodInfo, nodes: list[NodeInfo],
                                statuses: NodeToStatus) -> list[NodeInfo]:
        """findNodesThatPassExtenders: each interested extender narrows the nodes; the
        nodes it turns down get its reason, like a Filter plugin's."""
        for extender in self.extenders:
            if not nodes or not extender.is_interested(pod):
                continue
            try:
                nodes, failed, unresolvable = await extender.filter(pod, nodes)
            except ExtenderError as error:
                if extender.ignorable:
                    continue
                raise SchedulingError(str(error)) from error
            for name, reason in failed.items():
                statuses[name] = Status.unschedulable(reason)
            for name, reason in unresolvable.items():
                statuses[name] = Status.unschedulable(reason, unresolvable=True)
        return nodes

    def find_nodes_that_fit(self, fwk: Framework, state: CycleState, pod: PodInfo
                            ) -> tuple[list[NodeInfo], NodeToStatus]:
        """PreFilter, then Filter over the nodes (starting where the last pod stopped,
        and stopping early in large clusters), nominated node first. The statuses of the
        nodes turned down stay as the plugins recorded them (runs of nodes sharing a
        Status, dicts) until a FitError, preemption or a trace reads them node by node."""
        all_nodes = fwk.snapshot().node_info_list
        result, status = fwk.run_pre_filter_plugins(state, pod, all_nodes)
        if not status.is_success():
            if status.is_rejected():
                fit = FitError(pod, len(all_nodes),
                               NodeToStatus.of_run([n.name for n in all_nodes], status),
                               pre_filter_message=status.message())
                raise fit
            raise SchedulingError(status.message())
        nodes = all_nodes
        if result is not None and result.node_names is not None:
            nodes = [info for info in all_nodes if info.name in result.node_names]
        statuses = NodeToStatus()
        nominated_node = (pod.pod.get("status") or {}).get("nominatedNodeName", "")
        if nominated_node:
            info = fwk.snapshot().get(nominated_node)
            if info is not None and self._filter(fwk, state, pod, [info])[0]:
                return [info], statuses
        started = time.perf_counter()
        wanted = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, len(nodes))
        total = len(nodes)
        start = self._next_start_node_index % total if total else 0
        feasible: list[NodeInfo] = []
        processed = 0
        exact = False  # filter only as many nodes as are still wanted
        size = 0
        while processed < total and len(feasible) < wanted:
            # Filtering stops at the node that makes up the number wanted. A chunk of only
            # the nodes still wanted cannot pass it; when few nodes fit, though, those
            # chunks shrink and each costs a round of plugin calls, so a chunk has at
            # least `wanted` nodes, grows to as many as the share of nodes that fit so far
            # says are needed (at most 4 times the last chunk), and what lies past that
            # node is dropped.
            need = wanted - len(feasible)
            if not exact:
                share_needs = need * processed // len(feasible) + 1 if feasible else 4 * size
                size = max(need, wanted, min(share_needs, 4 * size))
            chunk = _in_turn(nodes, start, processed, need if exact else size)
            fit, rejected = self._filter(fwk, state, pod, chunk)
            # (nodes turned down for one reason share a Status: look at each code once)
            failed = Code.ERROR in rejected.codes()
            if len(chunk) > need:
                if failed:
                    exact = True  # an error counts only before that node: filter again
                    continue
                if len(fit) >= need:
                    # where that node is in the chunk (its identity, found at C speed)
                    cut = [*map(operator.is_, chunk, repeat(fit[need - 1]))].index(True) + 1
                    rejected.drop(set(map(operator.attrgetter("name"), chunk[cut:])))
                    chunk = chunk[:cut]
                    fit = fit[:need]
            if failed:
                raise SchedulingError(next(s for s in rejected.distinct_statuses()
                                           if s.code == Code.ERROR).message())
            processed += len(chunk)
            feasible += fit
            statuses.update(rejected)
        if total:
            self._next_start_node_index = (start + processed) % total
        if result is not None and result.node_names is not None:
            left_out = Status.unschedulable(
                f"node(s) didn't satisfy plugin(s) [{', '.join(result.plugins)}]",
                unresolvable=True)
            statuses.add_run([info.name for info in all_nodes
                              if info.name not in result.node_names], left_out)
        fwk.record_duration("Filter", started, Status())
        return feasible, statuses

    def _filter(self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                ) -> tuple[list[NodeInfo], NodeToStatus]:
        """Filter nodes; a node with pods nominated to it (by preemption) is filtered as if
        they ran there. (the nodes that fit, in order; the statuses of those that do not)"""
        nominated = self.queue.nominated_node_names()
        if not nominated or nominated.isdisjoint(info.name for info in nodes):
            return fwk.run_filter_plugins_on_nodes(state, pod, nodes)
        plain = [info for info in nodes if info.name not in nominated]
        fit, rejected = fwk.run_filter_plugins_on_nodes(state, pod, plain)
        fit_names = {info.name for info in fit}
        for info in nodes:
            if info.name in nominated:
                status = fwk.run_filter_plugins_with_nominated_pods(
                    state, pod, info, self.queue.nominated_pods_for_node(info.name))
                if status.code:  # anything but Code.SUCCESS (0)
                    rejected.add_run([info.name], status)
                else:
                    fit_names.add(info.name)
        return [info for info in nodes if info.name in fit_names], rejected

    # -- the binding cycle ------------------------------------------------------------------------

    async def binding_cycle(self, fwk: Framework, state: CycleState, queued: QueuedPodInfo,
                            pod: PodInfo, host: str, cycle: int, started: float) -> None:
        """Wait for Permit, PreBind, Bind, PostBind; on failure undo the assumption."""
        with self.tracer.span("bind", **{"node": host}) if (
                current_span().recording) else contextlib.nullcontext():
            await self._binding_cycle(fwk, state, queued, pod, host, cycle, started)

    async def _binding_cycle(self, fwk: Framework, state: CycleState, queued: QueuedPodInfo,
                             pod: PodInfo, host: str, cycle: int, started: float) -> None:
        status = await fwk.wait_on_permit(pod)
        if status.is_success():
            status = await fwk.run_pre_bind_plugins(state, pod, host)
        if status.is_success():
            status = await self._bind(fwk, state, pod, host)
        if not status.is_success():
            fwk.run_reserve_plugins_unreserve(state, pod, host)
            self.cache.forget_pod(pod.pod)
            self.queue.move_all_to_active_or_backoff(ClusterEvent("Pod", "Delete"))
            if status.is_rejected():
                queued.unschedulable_plugins = {status.plugin} if status.plugin else set()
                await self._fail(fwk, queued, cycle, status.message(), "Unschedulable", None,
                                 started)
            else:
                await self._fail(fwk, queued, cycle, f"Binding rejected: {status.message()}",
                                 "SchedulerError", None, started)
            return
        self.cache.finish_binding(pod.pod)
        log_v(log, 2, "Successfully bound pod to node", pod=pod.key, node=host,
              evaluatedNodes=state.evaluated_nodes, feasibleNodes=state.feasible_nodes)
        elapsed = time.perf_counter() - started
        self.metrics.attempts.labels("scheduled", fwk.profile_name).inc()
        self.metrics.attempt_duration.labels("scheduled", fwk.profile_name).observe(elapsed)
        fwk.recorder.event(_with_kind(pod.pod), "Normal", "Scheduled",
                            f"Successfully assigned {pod.key} to {host}")
        await fwk.run_post_bind_plugins(state, pod, host)

    async def _bind(self, fwk: Framework, state: CycleState, pod: PodInfo, host: str
                    ) -> Status:
        """An interested binder extender binds the pod; otherwise the Bind plugins do."""
        for extender in self.extenders:
            if extender.is_binder() and extender.is_interested(pod):
                try:
                    await extender.bind(pod, host)
                except ExtenderError as error:
                    return Status.error(str(error))
                return Status.success()
        return await fwk.run_bind_plugins(state, pod, host)

    # -- failures ---------------------------------------------------------------------------------

    async def _fail(self, fwk: Framework, queued: QueuedPodInfo, cycle: int, message: str,
                    reason: str, nominated: str | None, started: float) -> None:
        """FailureHandler: an Event, the PodScheduled=False condition, back in the queue.
        `nominated`: the node preemption nominated ("" clears it; None: unchanged)."""
        result = "unschedulable" if reason == "Unschedulable" else "error"
        self.metrics.attempts.labels(result, fwk.profile_name).inc()
        self.metrics.attempt_duration.labels(result, fwk.profile_name).observe(
            time.perf_counter() - started)
        current = self.pods.store.get(queued.pod_info.key)
        if current is None or current["metadata"].get("uid") != queued.pod_info.uid:
            return
        if not self._pending(current):
            return
        queued.pod_info = PodInfo.of(current)
        if reason != "Unschedulable":  # an error, not a rejection: retry after backoff
            queued.unschedulable_plugins = set()
        self.queue.add_unschedulable(queued, cycle)
        fwk.recorder.event(_with_kind(current), "Warning", "FailedScheduling", message)
        await self._update_pod_status(current, reason, message, nominated)

    async def _update_pod_status(self, pod: Obj, reason: str, message: str,
                                 nominated: str | None) -> None:
        conditions = (pod.get("status") or {}).get("conditions") or []
        old = next((c for c in conditions if c.get("type") == "PodScheduled"), {})
        unchanged = (old.get("status") == "False" and old.get("reason") == reason
                     and old.get("message") == message)
        nomination_changes = (nominated is not None and
                              (pod.get("status") or {}).get("nominatedNodeName", "") != nominated)
        if unchanged and not nomination_changes:
            return
        patch: Obj = {"status": {"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
            "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}]}}
        if nomination_changes:
            patch["status"]["nominatedNodeName"] = nominated or None
        meta = pod["metadata"]
        try:
            await self.client.resource("pods").patch(
                meta["name"], patch, meta["namespace"], patch_type="strategic",
                subresource="status")
        except NotFound:
            return
        except ClientError as error:
            log.warning("could not update the status of pod %s/%s: %s", meta["namespace"],
                        meta["name"], error)


def node_update_actions(old: Obj, new: Obj) -> list[str]:
    """What changed in a Node, as upstream's ActionTypes, so the queue wakes only the
    pods a change may help (a new label helps NodeAffinity, not NodeResourcesFit)."""
    actions = []
    old_meta, new_meta = (old.get("metadata") or {}), (new.get("metadata") or {})
    old_spec, new_spec = (old.get("spec") or {}), (new.get("spec") or {})
    old_status, new_status = (old.get("status") or {}), (new.get("status") or {})
    if old_meta.get("labels") != new_meta.get("labels"):
        actions.append("UpdateNodeLabel")
    if old_spec.get("taints") != new_spec.get("taints"):
        actions.append("UpdateNodeTaint")
    if old_spec.get("unschedulable") != new_spec.get("unschedulable"):
        actions.append("UpdateNodeTaint")
    if old_status.get("allocatable") != new_status.get("allocatable"):
        actions.append("UpdateNodeAllocatable")
    if _condition_statuses(old_status) != _condition_statuses(new_status):
        actions.append("UpdateNodeCondition")
    if old_meta.get("annotations") != new_meta.get("annotations"):
        actions.append("UpdateNodeAnnotation")
    return actions


def _condition_statuses(status: Obj) -> dict[str, str]:
    """nodeConditionsChanged compares each condition's status by type: a heartbeat (a new
    lastHeartbeatTime) or a new message is no change of condition."""
    return {condition.get("type", ""): condition.get("status", "")
            for condition in status.get("conditions") or []}


def pod_update_actions(old: Obj, new: Obj) -> list[str]:
    """What changed in an assigned Pod that may free room or change matches for others."""
    actions = []
    if (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels"):
        actions.append("UpdatePodLabel")
    if (old.get("spec") or {}).get("containers") != (new.get("spec") or {}).get("containers"):
        actions.append("UpdatePodScaleDown")
    return actions


def _in_turn(nodes: list[NodeInfo], start: int, skip: int, count: int) -> list[NodeInfo]:
    """`count` nodes of the list read in turn from index `start` (wrapping round), after
    the first `skip` of them: slices of the list, not a rotated copy of all of it."""
    first = start + skip
    if first >= len(nodes):
        first -= len(nodes)
        return nodes[first:min(first + count, start)]
    chunk = nodes[first:first + count]
    if len(chunk) < count:
        chunk += nodes[:min(count - len(chunk), start)]
    return chunk


class SchedulingError(Exception):
    """The scheduling attempt broke (not: no node fits); the pod is retried with backoff."""


def select_host(scores: dict[str, int]) -> str:
    """selectHost: the highest total score; ties are broken at random."""
    if not scores:
        return ""
    best = max(scores.values())
    return random.choice([name for name, score in scores.items() if score == best])


def _with_kind(pod: Obj) -> Obj:
    return pod if pod.get("kind") else {**pod, "kind": "Pod", "apiVersion": "v1"}
