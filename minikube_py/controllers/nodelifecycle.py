"""The node lifecycle controller: notice nodes whose kubelet went silent and taint them
(upstream pkg/controller/nodelifecycle/node_lifecycle_controller.go).

    every node_monitor_period, monitorNodeHealth, for each node:
        a newer Lease renewTime or Ready heartbeat -> remember *our* time of seeing it
        nothing new for node_monitor_grace_period -> Ready (and the pressure conditions)
            = Unknown, "Kubelet stopped posting node status."; its pods' Ready = False
        Ready was Unknown / False at the last pass -> queue the node for the NoExecute
            taint node.kubernetes.io/unreachable / not-ready (rate limited per zone)
        Ready is True                              -> remove those NoExecute taints
        every node of every zone not ready          -> stop: the control plane is more
            likely cut off than all nodes dead; remove the taints and evict nobody
    node event --> queue "name" --> sync: NoSchedule taints mirror the node conditions
    pod bound to a not-ready node --> queue "ns/name" --> sync: mark the pod not ready

The NoExecute taints are what evict pods: the taint-eviction controller
(taint_eviction.py) deletes pods that do not tolerate them. Time is measured by this
controller's own clock, never by the timestamps the kubelet writes, so a skewed node
clock cannot make a node look healthy or dead. The per-zone rate-limited queue lives in
nodelifecycle_queue.py, the taint patches in nodetaints.py.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.meta import parse_rfc3339, rfc3339
from minikube_py.client.errors import APIStatusError, ClientError, NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import NODE_NAME_INDEX, split_key
from minikube_py.controllers.base import Controller, ControllerContext, ExpectedSyncError
from minikube_py.controllers.nodelifecycle_queue import (
    RateLimitedTimedQueue,
    TimedValue,
    TokenBucket,
)
from minikube_py.controllers.nodetaints import add_or_update_taints, remove_taints, taint_exists
from minikube_py.controllers.podstatus import get_condition, update_pod_condition

log = logging.getLogger(__name__)

TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
UNREACHABLE_TAINT: Obj = {"key": TAINT_NODE_UNREACHABLE, "effect": "NoExecute"}
NOT_READY_TAINT: Obj = {"key": TAINT_NODE_NOT_READY, "effect": "NoExecute"}
# Which NoSchedule taint each (condition, status) asks for.
NODE_CONDITION_TO_TAINT_KEY = {
    ("Ready", "False"): TAINT_NODE_NOT_READY,
    ("Ready", "Unknown"): TAINT_NODE_UNREACHABLE,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
}
CONDITION_TAINT_KEYS = frozenset(NODE_CONDITION_TO_TAINT_KEY.values())
# Conditions set to Unknown when the kubelet goes silent (NetworkUnavailable is not the
# kubelet's to report).
KUBELET_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")

NODE_LEASE_NAMESPACE = "kube-node-lease"
LABEL_NODE_DISRUPTION_EXCLUSION = "node.kubernetes.io/exclude-disruption"
NODE_EVICTION_PERIOD = 0.1  # how often the NoExecute tainting queue is tried
NODE_HEALTH_UPDATE_RETRY = 5
RETRY_SLEEP_TIME = 0.02
NODE_UPDATE_WORKER_SIZE = 8

STATE_INITIAL = "Initial"
STATE_NORMAL = "Normal"
STATE_FULL_DISRUPTION = "FullDisruption"
STATE_PARTIAL_DISRUPTION = "PartialDisruption"


def zone_key(node: Obj) -> str:
    """GetZoneKey: the node's region and zone labels, "" when it has neither."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    region = labels.get("topology.kubernetes.io/region") or labels.get(
        "failure-domain.beta.kubernetes.io/region", "")
    zone = labels.get("topology.kubernetes.io/zone") or labels.get(
        "failure-domain.beta.kubernetes.io/zone", "")
    return f"{region}:\x00:{zone}" if region or zone else ""


@dataclass
class NodeHealth:
    """nodeHealthData: the status last seen, and *our* clock when it last moved."""

    probe_timestamp: datetime
    ready_transition_timestamp: datetime
    status: Obj
    lease: Obj | None = None


def _renew_time(lease: Obj | None) -> datetime | None:
    renewed = ((lease or {}).get("spec") or {}).get("renewTime")
    return parse_rfc3339(renewed) if renewed else None


def node_reference(node: Obj) -> Obj:
    """The involved object of a node Event."""
    metadata = node["metadata"]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": metadata["name"], "uid": metadata.get("uid", "")}}


class NodeLifecycleController(Controller):
    """Marks silent nodes Unknown and taints them; untaints them when they come back."""

    name: ClassVar[str] = "nodelifecycle"
    event_source: ClassVar[str] = "node-controller"
    workers: ClassVar[int] = NODE_UPDATE_WORKER_SIZE
    # Flags of kube-controller-manager, with upstream's defaults.
    node_startup_grace_period: ClassVar[float] = 60.0
    eviction_limiter_qps: ClassVar[float] = 0.1  # --node-eviction-rate
    secondary_eviction_limiter_qps: ClassVar[float] = 0.01
    large_cluster_threshold: ClassVar[int] = 50
    unhealthy_zone_threshold: ClassVar[float] = 0.55

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.nodes_client = self.client.resource("nodes")
        self.pods_client = self.client.resource("pods")
        self.nodes = self.informer("nodes")
        self.nodes.add_event_handler(EventHandler(
            on_add=self.enqueue, on_update=lambda _old, new: self.enqueue(new),
            on_delete=lambda node: self.nodes_to_retry.discard(node["metadata"]["name"])))
        self.pods = self.informer("pods")
        self.pods.add_event_handler(EventHandler(
            on_add=lambda pod: self.pod_updated(None, pod), on_update=self.pod_updated))
        self.leases = self.informer("leases", "coordination.k8s.io")
        self.known_nodes: dict[str, Obj] = {}
        self.node_health: dict[str, NodeHealth] = {}
        self.zone_states: dict[str, str] = {}
        self.zone_no_execute_tainter: dict[str, RateLimitedTimedQueue] = {}
        self.nodes_to_retry: set[str] = set()

    def pod_updated(self, old: Obj | None, new: Obj) -> None:
        """podUpdated: a pod newly bound to a node may need marking not ready."""
        node_name = (new.get("spec") or {}).get("nodeName")
        if node_name and (old is None or (old.get("spec") or {}).get("nodeName") != node_name):
            self.enqueue(new)

    async def run(self, workers: int | None = None) -> None:
        """The workers, the health monitor every node_monitor_period, the tainting pass."""
        loops = [
            asyncio.create_task(self._every(self.ctx.options.node_monitor_period,
                                            self.monitor_node_health), name="monitor-node-health"),
            asyncio.create_task(self._every(NODE_EVICTION_PERIOD, self.do_no_execute_tainting_pass),
                                name="no-execute-tainting"),
        ]
        try:
            await super().run(workers)
        finally:
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)

    async def _every(self, period: float, step: Callable[[], Awaitable[None]]) -> None:
        """wait.Until: run `step`, sleep `period`, forever; a failure is logged."""
        while True:
            try:
                await step()
            except ClientError as error:
                log.warning("%s: %s failed: %s", self.name, step.__name__, error)
            except Exception:  # a bug in one pass must not stop the next ones
                log.exception("%s: %s failed", self.name, step.__name__)
            await asyncio.sleep(period)

    async def sync(self, key: str) -> None:
        """A node name: doNoScheduleTaintingPass. A pod key: processPod."""
        namespace, name = split_key(key)
        if namespace:
            await self.process_pod(namespace, name)
        else:
            await self.do_no_schedule_tainting_pass(name)

    # -- NoSchedule taints and pods bound to sick nodes ------------------------------------------

    async def do_no_schedule_tainting_pass(self, name: str) -> None:
        """Make the node's NoSchedule condition taints match its conditions."""
        node = self.nodes.store.get_by_name("", name)
        if node is None:
            return
        wanted = [{"key": NODE_CONDITION_TO_TAINT_KEY[key], "effect": "NoSchedule"}
                  for condition in (node.get("status") or {}).get("conditions") or ()
                  if (key := (condition.get("type"), condition.get("status")))
                  in NODE_CONDITION_TO_TAINT_KEY]
        if (node.get("spec") or {}).get("unschedulable"):
            wanted.append({"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoSchedule"})
        current = [taint for taint in (node.get("spec") or {}).get("taints") or ()
                   if taint.get("effect") == "NoSchedule"
                   and (taint.get("key") == TAINT_NODE_UNSCHEDULABLE
                        or taint.get("key") in CONDITION_TAINT_KEYS)]
        to_add = [taint for taint in wanted if not taint_exists(current, taint)]
        to_remove = [taint for taint in current if not taint_exists(wanted, taint)]
        if (to_add or to_remove) and not await self.swap_node_controller_taint(
                node, to_add, to_remove):
            raise ExpectedSyncError(f"failed to swap taints of node {name}")

    async def process_pod(self, namespace: str, name: str) -> None:
        """processPod: a pod bound to a node that is not Ready is marked not ready too."""
        pod = self.pods.store.get_by_name(namespace, name)
        if pod is None:
            return
        node_name = pod["spec"]["nodeName"]
        health = self.node_health.get(node_name)
        if health is None or self.nodes.store.get_by_name("", node_name) is None:
            return
        ready = get_condition(health.status, "Ready")
        if ready is not None and ready.get("status") != "True":
            await self.mark_pods_not_ready([pod], node_name)

    async def mark_pods_not_ready(self, pods: list[Obj], node_name: str) -> None:
        """MarkPodsNotReady: each pod's Ready condition to False, with a NodeNotReady Event."""
        errors: list[Exception] = []
        for pod in pods:
            if (pod.get("spec") or {}).get("nodeName") != node_name:
                continue
            pod = copy.deepcopy(pod)
            status = pod.setdefault("status", {})
            ready = get_condition(status, "Ready")
            if ready is None or not update_pod_condition(
                    status, {**ready, "status": "False"}, self.now()):
                continue
            try:
                await self.pods_client.update_status(pod)
            except NotFound:
                continue
            except APIStatusError as error:
                errors.append(error)
            self.recorder.event(pod, "Warning", "NodeNotReady", "Node is not ready")
        if errors:
            raise RuntimeError("; ".join(map(str, errors)))

    # -- monitorNodeHealth ---------------------------------------------------------------------

    async def monitor_node_health(self) -> None:
        """Check every node's heartbeats; mark, taint and untaint; then judge the zones."""
        nodes = self.nodes.store.list()
        names = {node["metadata"]["name"] for node in nodes}
        for node in nodes:
            name = node["metadata"]["name"]
            if name in self.known_nodes:
                if zone_key(node) not in self.zone_states:
                    self.add_tainter_for_new_zone(node)
                continue
            self.record_node_event(node, "RegisteredNode", f"Registered Node {name} in Controller")
            self.known_nodes[name] = node
            self.add_tainter_for_new_zone(node)
            await self._untaint(node)
        for name in [name for name in self.known_nodes if name not in names]:
            self.record_node_event(self.known_nodes.pop(name), "RemovingNode",
                                   f"Removing Node {name} from Controller")
            self.node_health.pop(name, None)

        zone_conditions: dict[str, list[Obj | None]] = {}
        limit = asyncio.Semaphore(NODE_UPDATE_WORKER_SIZE)

        async def update(node: Obj) -> None:
            async with limit:
                await self.update_node(node, zone_conditions)

        results = await asyncio.gather(*(update(node) for node in nodes),
                                       return_exceptions=True)
        for node, result in zip(nodes, results, strict=True):
            if isinstance(result, Exception):
                log.warning("%s: monitoring node %s failed: %s", self.name,
                            node["metadata"]["name"], result)
        await self.handle_disruption(zone_conditions, nodes)

    async def update_node(self, node: Obj, zone_conditions: dict[str, list[Obj | None]]
                          ) -> None:
        """updateNodeFunc: one node's health, its taint queueing and its pods' readiness."""
        node = copy.deepcopy(node)
        name = node["metadata"]["name"]
        for attempt in range(NODE_HEALTH_UPDATE_RETRY):
            try:
                observed, current = await self.try_update_node_health(node)
                break
            except APIStatusError as error:
                if attempt == NODE_HEALTH_UPDATE_RETRY - 1:
                    log.warning("%s: updating the health of node %s failed, no pods will be "
                                "evicted: %s", self.name, name, error)
                    return
                await asyncio.sleep(RETRY_SLEEP_TIME)
                try:
                    node = await self.nodes_client.get(name)
                except NotFound:
                    return
        labels = node["metadata"].get("labels") or {}
        if LABEL_NODE_DISRUPTION_EXCLUSION not in labels:
            zone_conditions.setdefault(zone_key(node), []).append(current)
        if current is None:
            self.nodes_to_retry.discard(name)
            return
        pods = self.pods.store.by_index(NODE_NAME_INDEX, name)
        await self.process_taint_based_eviction(node, observed)
        went_not_ready = current.get("status") != "True" and observed.get("status") == "True"
        if went_not_ready:
            self.record_node_event(node, "NodeNotReady",
                                   f"Node {name} status is now: NodeNotReady", status_change=True)
        if went_not_ready or (name in self.nodes_to_retry and observed.get("status") != "True"):
            try:
                await self.mark_pods_not_ready(pods, name)
            except RuntimeError as error:
                log.warning("%s: marking the pods of %s not ready failed: %s; will retry",
                            self.name, name, error)
                self.nodes_to_retry.add(name)
                return
        self.nodes_to_retry.discard(name)

    async def try_update_node_health(self, node: Obj) -> tuple[Obj, Obj | None]:
        """tryUpdateNodeHealth: (Ready as observed, Ready as now written) for one node.

        A Ready heartbeat or a Lease renewTime newer than last seen moves probe_timestamp
        to our now; when it is older than the grace period, the kubelet conditions become
        Unknown and the node status is written.
        """
        name = node["metadata"]["name"]
        status = node.setdefault("status", {})
        created = parse_rfc3339(node["metadata"]["creationTimestamp"])
        now = self.now()
        health = self.node_health.get(name)
        current = get_condition(status, "Ready")
        if current is None:
            observed: Obj = {"type": "Ready", "status": "Unknown",
                             "lastHeartbeatTime": node["metadata"]["creationTimestamp"],
                             "lastTransitionTime": node["metadata"]["creationTimestamp"]}
            grace = self.node_startup_grace_period
            if health is not None:
                health.status = copy.deepcopy(status)
            else:
                health = NodeHealth(created, created, copy.deepcopy(status))
        else:
            observed = copy.deepcopy(current)
            grace = self.ctx.options.node_monitor_grace_period
        saved = get_condition(health.status, "Ready") if health is not None else None
        if health is None or (saved is None) != (current is None):
            health = NodeHealth(now, now, copy.deepcopy(status),
                                health.lease if health is not None else None)
        elif saved is not None and current is not None and (
                saved.get("lastHeartbeatTime") != current.get("lastHeartbeatTime")):
            transition = (now if saved.get("lastTransitionTime")
                          != current.get("lastTransitionTime")
                          else health.ready_transition_timestamp)
            health = NodeHealth(now, transition, copy.deepcopy(status), health.lease)
        lease = self.leases.store.get_by_name(NODE_LEASE_NAMESPACE, name)
        if lease is not None:
            saved_renew, renew = _renew_time(health.lease), _renew_time(lease)
            if health.lease is None or (saved_renew is not None and renew is not None
                                        and saved_renew < renew):
                health.lease = lease
                health.probe_timestamp = now
        self.node_health[name] = health

        if now > health.probe_timestamp + timedelta(seconds=grace):
            stamp = rfc3339(now)
            for condition_type in KUBELET_CONDITIONS:
                condition = get_condition(status, condition_type)
                if condition is None:
                    status.setdefault("conditions", []).append({
                        "type": condition_type, "status": "Unknown",
                        "reason": "NodeStatusNeverUpdated",
                        "message": "Kubelet never posted node status.",
                        "lastHeartbeatTime": node["metadata"]["creationTimestamp"],
                        "lastTransitionTime": stamp})
                elif condition.get("status") != "Unknown":
                    condition.update(status="Unknown", reason="NodeStatusUnknown",
                                     message="Kubelet stopped posting node status.",
                                     lastTransitionTime=stamp)
            current = get_condition(status, "Ready")
            if current != observed:
                log.info("%s: node %s has not been heard from for %s; marking it Unknown",
                         self.name, name, now - health.probe_timestamp)
                await self.nodes_client.update_status(node)
                self.node_health[name] = NodeHealth(health.probe_timestamp, self.now(),
                                                    copy.deepcopy(status), lease)
        return observed, current

    # -- NoExecute taints -----------------------------------------------------------------------

    async def process_taint_based_eviction(self, node: Obj, observed: Obj) -> None:
        """processTaintBaseEviction: queue a not-ready/unreachable node for its NoExecute
        taint (swapped at once when it has the other one); untaint a Ready node."""
        taints = (node.get("spec") or {}).get("taints") or []
        status = observed.get("status")
        if status == "False":
            if taint_exists(taints, UNREACHABLE_TAINT):
                await self.swap_node_controller_taint(node, [NOT_READY_TAINT], [UNREACHABLE_TAINT])
            else:
                self.mark_node_for_tainting(node, "False")
        elif status == "Unknown":
            if taint_exists(taints, NOT_READY_TAINT):
                await self.swap_node_controller_taint(node, [UNREACHABLE_TAINT], [NOT_READY_TAINT])
            else:
                self.mark_node_for_tainting(node, "Unknown")
        elif status == "True":
            await self._untaint(node)

    def mark_node_for_tainting(self, node: Obj, status: str) -> bool:
        taints = (node.get("spec") or {}).get("taints") or []
        tainter = self.zone_no_execute_tainter[zone_key(node)]
        wanted = NOT_READY_TAINT if status == "False" else UNREACHABLE_TAINT
        if not taint_exists(taints, wanted):
            tainter.remove(node["metadata"]["name"])
        return tainter.add(node["metadata"]["name"], node["metadata"].get("uid", ""), self.now())

    async def mark_node_as_reachable(self, node: Obj) -> bool:
        """Remove both NoExecute taints and drop the node from the tainting queue."""
        name = node["metadata"]["name"]
        await remove_taints(self.nodes_client, name, node, [UNREACHABLE_TAINT])
        await remove_taints(self.nodes_client, name, node, [NOT_READY_TAINT])
        tainter = self.zone_no_execute_tainter.get(zone_key(node))
        return tainter is not None and tainter.remove(name)

    async def _untaint(self, node: Obj) -> None:
        """markNodeAsReachable, where a failure is only logged: the next pass retries."""
        try:
            await self.mark_node_as_reachable(node)
        except ClientError as error:
            log.warning("%s: removing taints from %s failed: %s", self.name,
                        node["metadata"]["name"], error)

    async def swap_node_controller_taint(self, node: Obj, to_add: list[Obj],
                                         to_remove: list[Obj]) -> bool:
        """SwapNodeControllerTaint: add taints (stamped timeAdded), then remove others."""
        name = node["metadata"]["name"]
        stamp = rfc3339(self.now())
        try:
            await add_or_update_taints(self.nodes_client, name,
                                       [{**taint, "timeAdded": stamp} for taint in to_add])
            await remove_taints(self.nodes_client, name, node, to_remove)
        except ClientError as error:
            log.warning("%s: swapping taints of node %s failed: %s", self.name, name, error)
            return False
        return True

    async def do_no_execute_tainting_pass(self) -> None:
        """Taint the queued nodes, zone by zone, as fast as each zone's limiter allows."""
        for tainter in list(self.zone_no_execute_tainter.values()):
            await tainter.try_each(self._taint_no_execute, self.now)

    async def _taint_no_execute(self, value: TimedValue) -> tuple[bool, float]:
        node = self.nodes.store.get_by_name("", value.value)
        if node is None:
            return True, 0.0
        ready = get_condition(node.get("status") or {}, "Ready")
        if ready is None:
            return False, 0.05
        if ready.get("status") == "False":
            add, opposite = NOT_READY_TAINT, UNREACHABLE_TAINT
        elif ready.get("status") == "Unknown":
            add, opposite = UNREACHABLE_TAINT, NOT_READY_TAINT
        else:
            return True, 0.0
        return await self.swap_node_controller_taint(node, [add], [opposite]), 0.0

    # -- zones ----------------------------------------------------------------------------------

    def add_tainter_for_new_zone(self, node: Obj) -> None:
        zone = zone_key(node)
        if zone not in self.zone_states:
            self.zone_states[zone] = STATE_INITIAL
            self.zone_no_execute_tainter[zone] = RateLimitedTimedQueue(
                TokenBucket(self.eviction_limiter_qps))

    def compute_zone_state(self, conditions: list[Obj | None]) -> tuple[int, str]:
        """ComputeZoneState: no Ready node is full disruption; 55% not ready (and more
        than two) is partial disruption; else normal."""
        ready = sum(1 for c in conditions if c is not None and c.get("status") == "True")
        not_ready = len(conditions) - ready
        if ready == 0 and not_ready > 0:
            return not_ready, STATE_FULL_DISRUPTION
        if not_ready > 2 and not_ready / len(conditions) >= self.unhealthy_zone_threshold:
            return not_ready, STATE_PARTIAL_DISRUPTION
        return not_ready, STATE_NORMAL

    async def handle_disruption(self, zone_conditions: dict[str, list[Obj | None]],
                                nodes: list[Obj]) -> None:
        """handleDisruption: slow or stop tainting in disrupted zones; when every zone
        is fully disrupted, untaint every node and evict nothing."""
        new_states: dict[str, str] = {}
        all_are_fully_disrupted = True
        for zone, conditions in zone_conditions.items():
            _, state = self.compute_zone_state(conditions)
            all_are_fully_disrupted &= state == STATE_FULL_DISRUPTION
            new_states[zone] = state
            self.zone_states.setdefault(zone, STATE_INITIAL)
        all_were_fully_disrupted = True
        for zone in list(self.zone_states):
            if zone not in zone_conditions:
                del self.zone_states[zone]
            elif self.zone_states[zone] != STATE_FULL_DISRUPTION:
                all_were_fully_disrupted = False
                break
        if all_are_fully_disrupted and all_were_fully_disrupted:
            return
        if all_are_fully_disrupted:
            log.info("%s: all nodes are not ready; entering master disruption mode", self.name)
            for node in nodes:
                await self._untaint(node)
            for zone in self.zone_states:
                self.zone_no_execute_tainter[zone].swap_limiter(0)
                self.zone_states[zone] = STATE_FULL_DISRUPTION
            return
        if all_were_fully_disrupted:
            log.info("%s: some nodes are ready; exiting master disruption mode", self.name)
            now = self.now()
            for node in nodes:
                health = self.node_health.get(node["metadata"]["name"])
                if health is not None:
                    health.probe_timestamp = health.ready_transition_timestamp = now
            for zone in self.zone_states:
                self.set_limiter_in_zone(zone, len(zone_conditions[zone]), new_states[zone])
                self.zone_states[zone] = new_states[zone]
            return
        for zone, state in list(self.zone_states.items()):
            new_state = new_states.get(zone, "")
            if state != new_state:
                log.info("%s: zone %r is now %s", self.name, zone, new_state)
                self.set_limiter_in_zone(zone, len(zone_conditions.get(zone) or []), new_state)
                self.zone_states[zone] = new_state

    def set_limiter_in_zone(self, zone: str, size: int, state: str) -> None:
        """Normal and full disruption taint at the normal rate; partial disruption slows
        down in a large zone and stops in a small one."""
        if state == STATE_PARTIAL_DISRUPTION:
            qps = (self.secondary_eviction_limiter_qps if size > self.large_cluster_threshold
                   else 0.0)
        elif state in (STATE_NORMAL, STATE_FULL_DISRUPTION):
            qps = self.eviction_limiter_qps
        else:
            return
        self.zone_no_execute_tainter[zone].swap_limiter(qps)

    def record_node_event(self, node: Obj, reason: str, message: str, *,
                          status_change: bool = False) -> None:
        """RecordNodeEvent ("Node <name> event: ...") and RecordNodeStatusChange."""
        name = node["metadata"]["name"]
        text = message if status_change else f"Node {name} event: {message}"
        self.recorder.event(node_reference(node), "Normal", reason, text)
