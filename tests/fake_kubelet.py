"""A stand-in for the kubelet in controller tests: it makes pods Running and Ready.

Controllers only see pods through the API, so a test can play the kubelet by writing pod
status, exactly what a real kubelet writes (phase, conditions, podIP, containerStatuses).
It also finishes graceful deletions, as a kubelet does once containers have stopped.
"""

from __future__ import annotations

import asyncio
import itertools

from minikube_py.api import Obj
from minikube_py.api.meta import now, rfc3339
from minikube_py.client.errors import Conflict, NotFound
from minikube_py.client.informer import EventHandler, SharedInformer
from minikube_py.client.rest import Client

_ip = itertools.count(2)


def running_status(pod: Obj, *, ready: bool = True) -> Obj:
    """The status a kubelet writes for a pod whose containers all started."""
    stamp = rfc3339(now())
    flag = "True" if ready else "False"
    conditions = [
        {"type": kind, "status": status, "lastTransitionTime": stamp}
        for kind, status in (("PodScheduled", "True"), ("Initialized", "True"),
                             ("ContainersReady", flag), ("Ready", flag))
    ]
    number = next(_ip)
    containers = [{"name": c["name"], "image": c.get("image", ""), "ready": ready,
                   "restartCount": 0, "started": True,
                   "state": {"running": {"startedAt": stamp}}}
                  for c in pod.get("spec", {}).get("containers", [])]
    return {"phase": "Running", "conditions": conditions, "startTime": stamp,
            "podIP": f"10.244.{number // 250}.{number % 250 + 1}",
            "hostIP": "192.168.0.10", "containerStatuses": containers}


class FakeKubelet:
    """Make every pod of a namespace Running (and Ready unless told otherwise)."""

    def __init__(self, client: Client, namespace: str, *, ready: bool = True,
                 delay: float = 0.0) -> None:
        self.pods = client.resource("pods")
        self.namespace = namespace
        self.ready = ready
        self.delay = delay
        self.informer = SharedInformer(client, "pods", namespace=namespace)
        self.informer.add_event_handler(EventHandler(
            on_add=self._changed, on_update=lambda _old, new: self._changed(new)))
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> FakeKubelet:
        self.informer.run_in_background()
        await self.informer.wait_for_sync()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.informer.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _changed(self, pod: Obj) -> None:
        task = asyncio.create_task(self._handle(pod))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, pod: Obj) -> None:
        meta = pod["metadata"]
        try:
            if meta.get("deletionTimestamp"):
                await self.pods.delete(meta["name"], self.namespace, grace_period_seconds=0,
                                       preconditions={"uid": meta["uid"]})
                return
            if pod.get("status", {}).get("phase") in ("Running", "Succeeded", "Failed"):
                return
            if self.delay:
                await asyncio.sleep(self.delay)
            fresh = await self.pods.get(meta["name"], self.namespace)
            if fresh.get("status", {}).get("phase") in ("Running", "Succeeded", "Failed"):
                return
            fresh["status"] = running_status(fresh, ready=self.ready)
            await self.pods.update_status(fresh)
        except (NotFound, Conflict):
            return

    async def set_phase(self, name: str, phase: str, *, exit_code: int = 0) -> None:
        """Finish a pod's containers (Succeeded or Failed), as a kubelet reports it."""
        pod = await self.pods.get(name, self.namespace)
        stamp = rfc3339(now())
        pod["status"] = {**pod.get("status", {}), "phase": phase, "containerStatuses": [
            {"name": c["name"], "image": c.get("image", ""), "ready": False,
             "restartCount": 0, "state": {"terminated": {
                 "exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                 "finishedAt": stamp}}}
            for c in pod["spec"]["containers"]]}
        for condition in pod["status"].get("conditions", []):
            if condition["type"] in ("Ready", "ContainersReady"):
                condition["status"] = "False"
        await self.pods.update_status(pod)
