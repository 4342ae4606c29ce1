"""The pod garbage collector: delete pods nobody else will (upstream
pkg/controller/podgc/gc_controller.go).

    every gc_check_period (20 s), from the informer caches:
        terminated pods (Succeeded/Failed) beyond --terminated-pod-gc-threshold
            -> delete the oldest, evicted ones first
        terminating pods on a not-ready node tainted node.kubernetes.io/out-of-service
            -> force delete (the node is known to be down; its kubelet will never finish)
        orphaned pods: bound to a node that does not exist for quarantine_time (40 s,
            confirmed by a live GET) -> mark Failed (DisruptionTarget) and force delete
        terminating pods never bound to a node -> force delete

A force delete is a delete with grace period 0: no kubelet is left to stop the
containers, so there is nothing to wait for.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.meta import parse_rfc3339
from minikube_py.client.errors import ClientError, NotFound
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.podstatus import (
    is_node_ready,
    patch_pod_status,
    update_pod_condition,
)

log = logging.getLogger(__name__)

TAINT_NODE_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
_TERMINAL_PHASES = ("Succeeded", "Failed")


def is_pod_terminated(pod: Obj) -> bool:
    """isPodTerminated: any phase but Pending, Running and Unknown."""
    return (pod.get("status") or {}).get("phase") not in ("Pending", "Running", "Unknown")


def is_pod_terminating(pod: Obj) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def by_eviction_and_creation_timestamp(pod: Obj) -> tuple[bool, datetime, str]:
    """byEvictionAndCreationTimestamp: evicted pods first, then the oldest, then by name."""
    status = pod.get("status") or {}
    evicted = status.get("phase") == "Failed" and status.get("reason") == "Evicted"
    created = parse_rfc3339(pod["metadata"]["creationTimestamp"])
    return not evicted, created, pod["metadata"]["name"]


class PodGCController(Controller):
    """Deletes orphaned, excess terminated and stuck terminating pods (PodGCController)."""

    name: ClassVar[str] = "podgc"
    gc_check_period: ClassVar[float] = 20.0
    quarantine_time: ClassVar[float] = 40.0

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.pods_client = self.client.resource("pods")
        self.nodes_client = self.client.resource("nodes")
        self.pods = self.informer("pods")
        self.nodes = self.informer("nodes")
        # Nodes seen missing, and when first: the quarantine (upstream's delaying nodeQueue).
        self.missing_nodes: dict[str, datetime] = {}

    async def run(self, workers: int | None = None) -> None:
        """No workqueue: one pass every gc_check_period (wait.Until)."""
        while True:
            try:
                await self.sync(self.name)
            except ClientError as error:
                log.warning("%s: pass failed: %s", self.name, error)
            await asyncio.sleep(self.gc_check_period)

    async def sync(self, key: str) -> None:
        """One pass over every pod (podgc has no workqueue, so there is one key)."""
        pods = self.pods.store.list()
        nodes = self.nodes.store.list()
        if self.ctx.options.terminated_pod_gc_threshold > 0:
            await self.gc_terminated(pods)
        await self.gc_terminating(pods)
        await self.gc_orphaned(pods, nodes)
        await self.gc_unscheduled_terminating(pods)

    async def gc_terminated(self, pods: list[Obj]) -> None:
        """Keep at most terminated_pod_gc_threshold finished pods."""
        terminated = [pod for pod in pods if is_pod_terminated(pod)]
        excess = len(terminated) - self.ctx.options.terminated_pod_gc_threshold
        if excess <= 0:
            return
        log.info("%s: garbage collecting %d terminated pods", self.name, excess)
        terminated.sort(key=by_eviction_and_creation_timestamp)
        await self.delete_all(terminated[:excess], None)

    async def gc_terminating(self, pods: list[Obj]) -> None:
        """Terminating pods on a not-ready node declared out of service."""
        stuck = []
        for pod in pods:
            if not is_pod_terminating(pod):
                continue
            node = self.nodes.store.get_by_name("", (pod.get("spec") or {}).get("nodeName", ""))
            if node is None:
                continue
            taints = (node.get("spec") or {}).get("taints") or []
            if not is_node_ready(node) and any(
                    taint.get("key") == TAINT_NODE_OUT_OF_SERVICE for taint in taints):
                stuck.append(pod)
        stuck.sort(key=by_eviction_and_creation_timestamp)
        await self.delete_all(stuck, None)

    async def gc_orphaned(self, pods: list[Obj], nodes: list[Obj]) -> None:
        """Pods bound to a node that stayed missing through the quarantine."""
        existing = {node["metadata"]["name"] for node in nodes}
        now = self.now()
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name and node_name not in existing:
                self.missing_nodes.setdefault(node_name, now)
        deleted = await self.discover_deleted_nodes(existing, now)
        orphaned = [pod for pod in pods if (pod.get("spec") or {}).get("nodeName") in deleted]
        for pod in orphaned:
            log.info("%s: pod %s/%s is bound to missing node %s; deleting it", self.name,
                     pod["metadata"]["namespace"], pod["metadata"]["name"],
                     pod["spec"]["nodeName"])
        await self.delete_all(orphaned, {
            "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
            "message": "PodGC: node no longer exists"})

    async def discover_deleted_nodes(self, existing: set[str], now: datetime) -> set[str]:
        """Nodes out of quarantine that a live GET confirms are gone."""
        deleted = set()
        quarantine = timedelta(seconds=self.quarantine_time)
        for name, since in list(self.missing_nodes.items()):
            if since + quarantine > now:
                continue
            del self.missing_nodes[name]
            if name in existing:
                continue
            try:
                await self.nodes_client.get(name)
            except NotFound:
                deleted.add(name)
            except ClientError as error:
                log.warning("%s: getting node %s: %s", self.name, name, error)
        return deleted

    async def gc_unscheduled_terminating(self, pods: list[Obj]) -> None:
        """Terminating pods that were never bound: no kubelet will finish them."""
        unscheduled = [pod for pod in pods
                       if is_pod_terminating(pod) and not (pod.get("spec") or {}).get("nodeName")]
        await self.delete_all(unscheduled, None)

    async def delete_all(self, pods: list[Obj], condition: Obj | None) -> None:
        results = await asyncio.gather(
            *(self.mark_failed_and_delete_pod(pod, condition) for pod in pods),
            return_exceptions=True)
        for pod, result in zip(pods, results, strict=True):
            if isinstance(result, Exception) and not isinstance(result, NotFound):
                log.warning("%s: deleting pod %s/%s failed: %s", self.name,
                            pod["metadata"]["namespace"], pod["metadata"]["name"], result)

    async def mark_failed_and_delete_pod(self, pod: Obj, condition: Obj | None) -> None:
        """markFailedAndDeletePodWithCondition: phase Failed first (no kubelet will ever
        set it), then a delete with grace period 0."""
        metadata = pod["metadata"]
        log.info("%s: force deleting pod %s/%s", self.name, metadata["namespace"],
                 metadata["name"])
        old = pod.get("status") or {}
        if old.get("phase") not in _TERMINAL_PHASES:
            status = {**old, "phase": "Failed",
                      "conditions": [dict(c) for c in old.get("conditions") or []]}
            if condition is not None:
                update_pod_condition(status, condition, self.now())
            await patch_pod_status(self.pods_client, pod, status)
        await self.pods_client.delete(metadata["name"], metadata["namespace"],
                                      grace_period_seconds=0)
