"""The taint-eviction controller: delete pods from nodes with NoExecute taints they do not
tolerate (upstream pkg/controller/tainteviction/taint_eviction.go, split out of the node
lifecycle controller in 1.29).

    node event (its NoExecute taints changed) --> queue "name" --> sync, handleNodeUpdate:
        remember the node's NoExecute taints; for every pod on it, processPodOnNode
    pod event (bound, or tolerations changed) --> queue "ns/name" --> sync, handlePodUpdate:
        processPodOnNode with the node's remembered taints
    processPodOnNode:
        a taint not tolerated              -> evict now
        all tolerated, some for N seconds  -> evict N seconds (the shortest) after now
        all tolerated forever, or no taint -> cancel a scheduled eviction

Evicting is deleting (gracefully), after setting the pod condition DisruptionTarget.
The eviction timers live in a TimedWorkerQueue; an Event says when one is set or cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.scheduling.taints import get_matching_tolerations, min_toleration_seconds
from minikube_py.client.errors import ClientError
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import NODE_NAME_INDEX, object_key, split_key
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.podstatus import patch_pod_status, update_pod_condition

log = logging.getLogger(__name__)

UPDATE_WORKER_SIZE = 8
DELETE_RETRIES = 5
DELETE_RETRY_DELAY = 0.01


def no_execute_taints(node: Obj | None) -> list[Obj]:
    taints = ((node or {}).get("spec") or {}).get("taints") or []
    return [taint for taint in taints if taint.get("effect") == "NoExecute"]


@dataclass
class TimedWorker:
    """One scheduled eviction; `handle` is None once it runs (it can no longer be cancelled)."""

    created_at: datetime
    fire_at: datetime
    handle: asyncio.TimerHandle | None


class TimedWorkerQueue:
    """Run `work(key)` no earlier than a given time, once per key, cancellable until then."""

    def __init__(self, work: Callable[[str], Awaitable[None]]) -> None:
        self.work = work
        self.workers: dict[str, TimedWorker] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def add_work(self, key: str, created_at: datetime, fire_at: datetime) -> None:
        """AddWork: schedule unless work for the key is already scheduled or running."""
        if key in self.workers:
            return
        delay = (fire_at - created_at).total_seconds()
        worker = TimedWorker(created_at, fire_at, None)
        self.workers[key] = worker
        if delay <= 0:
            self._start(key)
        else:
            worker.handle = asyncio.get_running_loop().call_later(delay, self._start, key)

    def cancel_work(self, key: str) -> bool:
        """CancelWork: forget the key; True only when a pending timer was stopped."""
        worker = self.workers.pop(key, None)
        if worker is None or worker.handle is None:
            return False
        worker.handle.cancel()
        return True

    def get(self, key: str) -> TimedWorker | None:
        return self.workers.get(key)

    def _start(self, key: str) -> None:
        worker = self.workers.get(key)
        if worker is not None:
            worker.handle = None
        task = asyncio.create_task(self._run(key), name=f"evict-{key}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, key: str) -> None:
        try:
            await self.work(key)
        finally:
            self.workers.pop(key, None)

    async def cancel_all(self) -> None:
        """Stop every timer and running eviction (the controller is stopping)."""
        for worker in self.workers.values():
            if worker.handle is not None:
                worker.handle.cancel()
        self.workers.clear()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


class TaintEvictionController(Controller):
    """Evicts pods that do not tolerate their node's NoExecute taints (upstream Controller)."""

    name: ClassVar[str] = "taint-eviction-controller"
    event_source: ClassVar[str] = "taint-eviction-controller"
    workers: ClassVar[int] = UPDATE_WORKER_SIZE

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.pods_client = self.client.resource("pods")
        self.pods = self.informer("pods")
        self.pods.add_event_handler(EventHandler(
            on_add=lambda pod: self.pod_updated(None, pod), on_update=self.pod_updated,
            on_delete=lambda pod: self.pod_updated(pod, None)))
        self.nodes = self.informer("nodes")
        self.nodes.add_event_handler(EventHandler(
            on_add=lambda node: self.node_updated(None, node), on_update=self.node_updated,
            on_delete=lambda node: self.node_updated(node, None)))
        self.tainted_nodes: dict[str, list[Obj]] = {}
        self.evictions = TimedWorkerQueue(self.delete_pod)

    async def run(self, workers: int | None = None) -> None:
        try:
            await super().run(workers)
        finally:
            await self.evictions.cancel_all()

    # -- informer handlers ----------------------------------------------------------------------

    def pod_updated(self, old: Obj | None, new: Obj | None) -> None:
        """PodUpdated: queue the pod when it is new, gone, moved, or its tolerations changed."""
        if old is not None and new is not None:
            old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
            if (old_spec.get("tolerations") == new_spec.get("tolerations")
                    and old_spec.get("nodeName") == new_spec.get("nodeName")):
                return
        pod = new if new is not None else old
        assert pod is not None
        self.queue.add(object_key(pod))

    def node_updated(self, old: Obj | None, new: Obj | None) -> None:
        """NodeUpdated: queue the node when its NoExecute taints changed."""
        if old is not None and new is not None and no_execute_taints(old) == no_execute_taints(
                new):
            return
        node = new if new is not None else old
        assert node is not None
        self.queue.add(node["metadata"]["name"])

    # -- the workers ----------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """A node name: handleNodeUpdate. A pod key: handlePodUpdate."""
        namespace, name = split_key(key)
        if namespace:
            self.handle_pod_update(namespace, name)
        else:
            self.handle_node_update(name)

    def handle_pod_update(self, namespace: str, name: str) -> None:
        pod = self.pods.store.get_by_name(namespace, name)
        key = f"{namespace}/{name}"
        if pod is None:
            self.cancel_work_with_event(namespace, name)
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or node_name not in self.tainted_nodes:
            return
        self.process_pod_on_node(key, pod, self.tainted_nodes[node_name], self.now())

    def handle_node_update(self, name: str) -> None:
        node = self.nodes.store.get_by_name("", name)
        if node is None:
            self.tainted_nodes.pop(name, None)
            return
        taints = no_execute_taints(node)
        if taints:
            self.tainted_nodes[name] = taints
        else:
            self.tainted_nodes.pop(name, None)
        pods = self.pods.store.by_index(NODE_NAME_INDEX, name)
        now = self.now()
        for pod in pods:
            if taints:
                self.process_pod_on_node(object_key(pod), pod, taints, now)
            else:
                metadata = pod["metadata"]
                self.cancel_work_with_event(metadata["namespace"], metadata["name"])

    def process_pod_on_node(self, key: str, pod: Obj, taints: list[Obj], now: datetime
                            ) -> None:
        """processPodOnNode: evict now, schedule an eviction, or cancel one."""
        namespace, name = split_key(key)
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        all_tolerated, used = get_matching_tolerations(taints, tolerations)
        if not all_tolerated:
            log.info("%s: not all taints are tolerated by pod %s on node %s", self.name, key,
                     pod["spec"]["nodeName"])
            self.cancel_work_with_event(namespace, name)
            self.evictions.add_work(key, now, now)
            return
        seconds = min_toleration_seconds(used)
        if seconds is None:
            self.cancel_work_with_event(namespace, name)
            return
        start = now
        trigger = now + timedelta(seconds=seconds)
        scheduled = self.evictions.get(key)
        if scheduled is not None:
            start = scheduled.created_at
            if start + timedelta(seconds=seconds) < trigger:
                return
            self.cancel_work_with_event(namespace, name)
        self.evictions.add_work(key, start, trigger)

    def cancel_work_with_event(self, namespace: str, name: str) -> None:
        if self.evictions.cancel_work(f"{namespace}/{name}"):
            self.recorder.event(_pod_reference(namespace, name), "Normal", "TaintManagerEviction",
                                f"Cancelling deletion of Pod {namespace}/{name}")

    async def delete_pod(self, key: str) -> None:
        """deletePodHandler: an Event, then the DisruptionTarget condition and the delete."""
        namespace, name = split_key(key)
        log.info("%s: deleting pod %s", self.name, key)
        self.recorder.event(_pod_reference(namespace, name), "Normal", "TaintManagerEviction",
                            f"Marking for deletion Pod {key}")
        for attempt in range(DELETE_RETRIES):
            try:
                await self.add_condition_and_delete_pod(namespace, name)
                return
            except ClientError as error:
                if attempt == DELETE_RETRIES - 1:
                    log.warning("%s: evicting pod %s failed: %s", self.name, key, error)
                    return
                await asyncio.sleep(DELETE_RETRY_DELAY)

    async def add_condition_and_delete_pod(self, namespace: str, name: str) -> None:
        pod = await self.pods_client.get(name, namespace)
        status = dict(pod.get("status") or {})
        status["conditions"] = [dict(c) for c in status.get("conditions") or []]
        if update_pod_condition(status, {
            "type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
        }, self.now()):
            await patch_pod_status(self.pods_client, pod, status)
        await self.pods_client.delete(name, namespace)


def _pod_reference(namespace: str, name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace}}
