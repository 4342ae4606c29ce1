"""Lab: a custom Deployment controller on minikube_py.client (the seed's Go example in Python).

    informer (list+watch Deployments) --> handlers print and queue "ns/name"
        --> RateLimitingQueue --> 4 workers --> process_deployment(key) --> reconcile_deployment

reconcile_deployment keeps a ConfigMap `<deployment>-report` next to every Deployment with
its replica counts and images. The report is owned by the Deployment (an ownerReference),
so the garbage collector deletes it together with the Deployment.

Where the seed uses a bare Go channel, this uses a workqueue: a key queued many times is
synced once, no two workers ever hold the same key, and a failed sync is retried with
backoff (see README.md, "Why a workqueue").
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import signal
import sys

from minikube_py.api import Obj
from minikube_py.client.informer import EventHandler, SharedInformer
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.rest import Client
from minikube_py.client.store import object_key
from minikube_py.client.workqueue import RateLimitingQueue, ShutDown

MANAGED_BY = "app.kubernetes.io/managed-by"  # the label that marks the reports we write
MANAGER = "deployment-report-lab"


class NotOurs(Exception):
    """A ConfigMap with the report's name exists and belongs to someone else: never touch it."""


def say(line: str) -> None:
    print(line, flush=True)  # flushed at once, so a pipe (or a test) sees every line


def desired_report(deployment: Obj) -> Obj:
    """The report as it should be now: counts and images, owned by (and labelled for) us."""
    meta, spec, status = deployment["metadata"], deployment["spec"], deployment.get("status", {})
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": meta["name"],
             "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}
    containers = spec["template"]["spec"].get("containers", [])
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"{meta['name']}-report", "namespace": meta["namespace"],
                         "labels": {MANAGED_BY: MANAGER}, "ownerReferences": [owner]},
            "data": {"replicas": str(spec.get("replicas", 1)),
                     "readyReplicas": str(status.get("readyReplicas", 0)),
                     "availableReplicas": str(status.get("availableReplicas", 0)),
                     "images": ",".join(container["image"] for container in containers)}}


def is_owned_by(obj: Obj, owner: Obj) -> bool:
    """True when one of the object's ownerReferences names the owner (by uid, not name)."""
    references = obj["metadata"].get("ownerReferences") or []
    return any(ref.get("uid") == owner["metadata"]["uid"] for ref in references)


class DeploymentController:
    """Watches Deployments and keeps a report ConfigMap in step with each one."""

    def __init__(self, client: Client, namespace: str | None = None) -> None:
        self.configmaps = client.resource("configmaps")
        self.deployment_informer = SharedInformer(client, "deployments", "apps",
                                                  namespace=namespace)
        # A second informer caches the reports we own (and only those: a label selector),
        # so a sync reads the current report from memory instead of asking the API server.
        self.report_informer = SharedInformer(client, "configmaps", namespace=namespace,
                                              label_selector=f"{MANAGED_BY}={MANAGER}")
        self.queue = RateLimitingQueue("deployment-report")
        self.deployment_informer.add_event_handler(EventHandler(
            on_add=self.handle_add, on_update=self.handle_update, on_delete=self.handle_delete))
        self.report_informer.add_event_handler(EventHandler(
            on_update=lambda _old, new: self.handle_report(new), on_delete=self.handle_report))

    # -- handlers: run in the informer, must be quick: print and queue a key ------------------
    # The queue holds keys, not objects: a worker reads the newest state from the cache when
    # it gets to the key, however many events came in meanwhile.

    def handle_add(self, deployment: Obj) -> None:
        say(f"Deployment ADDED: {object_key(deployment)}")
        self.queue.add(object_key(deployment))

    def handle_update(self, old: Obj, new: Obj) -> None:
        say(f"Deployment UPDATED: {object_key(new)}")
        self.queue.add(object_key(new))

    def handle_delete(self, deployment: Obj) -> None:
        """The seed only prints; queueing the key lets the sync see it gone (cleanup goes there)."""
        say(f"Deployment DELETED: {object_key(deployment)}")
        self.queue.add(object_key(deployment))

    def handle_report(self, report: Obj) -> None:
        """Someone edited or deleted a report: queue its Deployment so it is written again."""
        namespace = report["metadata"]["namespace"]
        for ref in report["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "Deployment":
                self.queue.add(f"{namespace}/{ref['name']}")

    # -- the loop ------------------------------------------------------------------------------

    async def run(self, workers: int, stop: asyncio.Event) -> bool:
        """Run: start the informers, wait for their caches, run workers until `stop` is set."""
        informers = (self.deployment_informer, self.report_informer)
        for informer in informers:
            informer.run_in_background()
        tasks: list[asyncio.Task[None]] = []
        try:
            if not await wait_for_cache_sync(stop, *informers):
                say("Failed to sync cache")
                return False
            say(f"Caches synced; starting {workers} workers")
            tasks = [asyncio.create_task(self.worker()) for _ in range(workers)]
            await stop.wait()
            return True
        finally:
            # Cutting a sync short is harmless: every sync is idempotent and redone on start.
            self.queue.shut_down()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for informer in informers:
                await informer.stop()

    async def worker(self) -> None:
        """runWorker: take a key (no other worker holds it), process it, report the outcome."""
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            try:
                await self.process_deployment(key)
            except Exception as error:
                say(f"Error reconciling deployment {key}: {error}")
                self.queue.add_rate_limited(key)  # back off: 5 ms, 10 ms, ... up to 1000 s
            else:
                self.queue.forget(key)  # success: the next failure starts from 5 ms again
            finally:
                self.queue.done(key)  # the key may be queued again (if it changed meanwhile)

    async def process_deployment(self, key: str) -> None:
        """Read the Deployment from the cache (never from the API server) and reconcile it."""
        deployment = self.deployment_informer.store.get(key)
        if deployment is None:
            say(f"Deployment {key} no longer exists")
            return
        await self.reconcile_deployment(deployment)

    async def reconcile_deployment(self, deployment: Obj) -> None:
        """Create or update `<name>-report` to match the Deployment; write only on change.

        Level-based: it compares what is (the cached report) with what should be (computed
        from the Deployment now), whatever events led here. Raising means "retry later".
        """
        meta = deployment["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        say(f"Reconciling deployment {namespace}/{name} "
            f"(replicas: {deployment['spec'].get('replicas', 1)})")
        if meta.get("deletionTimestamp"):
            return  # being deleted: the garbage collector removes the report with it
        desired = desired_report(deployment)
        report_key = object_key(desired)
        current = self.report_informer.store.get(report_key)
        if current is None:
            await self.configmaps.create(desired, namespace)
            say(f"Created ConfigMap {report_key}")
        elif not is_owned_by(current, deployment):
            raise NotOurs(f"ConfigMap {report_key} exists and is not owned by this Deployment")
        elif current.get("data") != desired["data"]:
            report = copy.deepcopy(current)  # cached objects are shared: copy before changing
            report["data"] = desired["data"]
            await self.configmaps.update(report)  # carries resourceVersion: stale -> Conflict
            say(f"Updated ConfigMap {report_key}")


async def wait_for_cache_sync(stop: asyncio.Event, *informers: SharedInformer) -> bool:
    """cache.WaitForCacheSync: True once every informer has listed, False if stopped first."""
    synced = asyncio.ensure_future(asyncio.gather(*(i.wait_for_sync() for i in informers)))
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({synced, stopped}, return_when=asyncio.FIRST_COMPLETED)
    synced.cancel()
    stopped.cancel()
    return all(informer.has_synced() for informer in informers)


async def main_async(args: argparse.Namespace) -> bool:
    """Wire the stop signal (Ctrl-C, SIGTERM, --timeout), connect, run the controller."""
    stop = asyncio.Event()  # the seed's stopCh
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    if args.timeout is not None:
        loop.call_later(args.timeout, stop.set)
    async with Client.from_kubeconfig(args.kubeconfig, user_agent=MANAGER) as client:
        return await DeploymentController(client, args.namespace).run(args.workers, stop)


def main() -> None:
    parser = argparse.ArgumentParser(
        description="A Deployment controller that keeps a <name>-report ConfigMap per Deployment.")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
    parser.add_argument("--namespace", default=None,
                        help="watch only this namespace (default: all namespaces)")
    parser.add_argument("--workers", type=int, default=4, help="concurrent workers")
    parser.add_argument("--timeout", type=float, default=None,
                        help="stop after this many seconds (default: run until Ctrl-C)")
    args = parser.parse_args()
    try:
        ok = asyncio.run(main_async(args))
    except KubeconfigError as error:
        sys.exit(f"deployment_controller: {error}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
