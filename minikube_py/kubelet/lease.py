"""The node Lease: the kubelet's cheap, frequent heartbeat (kube-node-lease/<node name>).

Upstream k8s.io/component-helpers/apimachinery/lease/controller.go, with the kubelet's
setNodeOwnerFunc (pkg/kubelet/nodelease.go). The node lifecycle controller reads the
Lease's renewTime: a node whose Lease stops moving becomes NotReady/Unknown.

    every renew_interval (10 s, +4% jitter), sync:
        a Lease written before   PUT it back with a new renewTime (one request, no GET)
        that failed, or none     ensure: GET it, or create it if missing (retried
                                 200 ms, 400 ms, ... up to 7 s apart), then renew it
        PUT Conflict             GET the newer Lease and try again (5 tries in all)
        PUT NotFound             the Lease went with its Node: ensure it (above)
        PUT failed otherwise     try again after 200 ms, 400 ms ... (5 tries in all)
        ownerReference           the Node (with its uid) once the Node exists; until
                                 then the Lease is not created, so that the garbage
                                 collector deletes it with its Node

The spec holds holderIdentity (the node name), leaseDurationSeconds (40) and renewTime,
a MicroTime ("2026-11-22T04:00:00.123456Z").
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
from collections.abc import Callable
from datetime import datetime

from minikube_py.api import Obj
from minikube_py.api.meta import now as utc_now
from minikube_py.client.errors import ClientError, Conflict, NotFound
from minikube_py.client.leaderelection import micro_time
from minikube_py.client.rest import Client
from minikube_py.client.retry import Backoff
from minikube_py.lifecycle import wait_for_event

log = logging.getLogger(__name__)

NODE_LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION = 40  # nodeLeaseDurationSeconds
RENEW_INTERVAL = 10.0  # a quarter of the duration, as upstream
RENEW_JITTER = 0.04
MAX_UPDATE_RETRIES = 5
BACKOFF_INITIAL = 0.1
MAX_BACKOFF = 7.0


class LeaseUpdateFailed(Exception):
    """Renewing the Lease failed MAX_UPDATE_RETRIES times in a row."""


class NodeLease:
    """The lease controller for one node: create the Lease, then keep renewing it."""

    def __init__(self, client: Client, node_name: str, *, duration: int = LEASE_DURATION,
                 renew_interval: float = RENEW_INTERVAL,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self.leases = client.resource("leases")
        self.nodes = client.resource("nodes")
        self.node_name = node_name
        self.duration = duration
        self.renew_interval = renew_interval
        self.clock = clock
        self.latest: Obj | None = None  # the Lease as we last wrote or read it
        self._stopped = asyncio.Event()

    async def run(self) -> None:
        """JitterUntil(sync, renew_interval, 0.04): until stop()."""
        while not self._stopped.is_set():
            await self.sync()
            await self._sleep(self.renew_interval * (1 + random.random() * RENEW_JITTER))

    def stop(self) -> None:
        self._stopped.set()

    async def sync(self) -> None:
        """One heartbeat: renew the Lease we know; else ensure it exists and renew it."""
        if self.latest is not None:
            try:
                await self._retry_update(self.latest)
                return
            except LeaseUpdateFailed as error:
                log.info("node %s: %s; ensuring the lease exists", self.node_name, error)
        lease, created = await self._backoff_ensure()
        self.latest = lease
        if lease is not None and not created:
            try:
                await self._retry_update(lease)
            except LeaseUpdateFailed as error:
                log.error("node %s: %s, will retry after %.0fs", self.node_name, error,
                          self.renew_interval)

    async def _backoff_ensure(self) -> tuple[Obj | None, bool]:
        """backoffEnsureLease: ensure, doubling the wait after each failure up to 7 s."""
        delay = BACKOFF_INITIAL
        while not self._stopped.is_set():
            try:
                return await self._ensure()
            except ClientError as error:
                delay = min(delay * 2, MAX_BACKOFF)
                log.error("node %s: failed to ensure lease exists, will retry in %.1fs: %s",
                          self.node_name, delay, error)
                await self._sleep(delay)
        return None, False

    async def _ensure(self) -> tuple[Obj | None, bool]:
        """ensureLease: the Lease, and whether this call created it. Not created (None)
        while the Node to own it does not exist yet."""
        try:
            return await self.leases.get(self.node_name, NODE_LEASE_NAMESPACE), False
        except NotFound:
            lease = await self._new_lease(None)
            if not lease["metadata"].get("ownerReferences"):
                return None, False
            return await self.leases.create(lease, NODE_LEASE_NAMESPACE), True

    async def _retry_update(self, base: Obj) -> None:
        """retryUpdateLease: PUT a renewed copy, MAX_UPDATE_RETRIES times at most. On
        Conflict start from a fresh GET; a Lease that is gone (deleted with its Node) is
        not PUT again (sync's ensure creates it anew once the Node is back); after any
        other failure wait 200 ms, 400 ms ... (with jitter), so that a server that is
        away is not asked five times in a few milliseconds."""
        backoff = Backoff(2 * BACKOFF_INITIAL, MAX_BACKOFF, jitter=0.2)
        for attempt in range(1, MAX_UPDATE_RETRIES + 1):
            try:
                self.latest = await self.leases.update(await self._new_lease(base))
                return
            except Conflict as error:
                log.info("node %s: failed to update lease: %s", self.node_name, error)
                fresh, _ = await self._backoff_ensure()
                if fresh is None:
                    break
                base = fresh
            except NotFound:
                raise LeaseUpdateFailed("the lease is gone") from None
            except ClientError as error:
                log.error("node %s: failed to update lease (attempt %d): %s", self.node_name,
                          attempt, error)
                if attempt < MAX_UPDATE_RETRIES:
                    await self._sleep(backoff.step())
        raise LeaseUpdateFailed(f"failed {MAX_UPDATE_RETRIES} attempts to update lease")

    async def _new_lease(self, base: Obj | None) -> Obj:
        """newLease: a copy of `base` (or a new Lease) renewed now, owned by the Node."""
        if base is None:
            lease: Obj = {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.node_name, "namespace": NODE_LEASE_NAMESPACE},
                "spec": {"holderIdentity": self.node_name,
                         "leaseDurationSeconds": self.duration},
            }
        else:
            lease = copy.deepcopy(base)
        lease["spec"]["renewTime"] = micro_time(self.clock())
        if not lease["metadata"].get("ownerReferences"):
            await self._set_node_owner(lease)
        return lease

    async def _set_node_owner(self, lease: Obj) -> None:
        """setNodeOwnerFunc: the Node owns its Lease, so deleting the Node deletes it."""
        try:
            node = await self.nodes.get(self.node_name)
        except ClientError as error:
            log.info("node %s: cannot set the lease's owner yet: %s", self.node_name, error)
            return
        lease["metadata"]["ownerReferences"] = [{
            "apiVersion": "v1", "kind": "Node", "name": self.node_name,
            "uid": node["metadata"]["uid"]}]

    async def _sleep(self, seconds: float) -> None:
        """Wait, unless stop() comes first."""
        await wait_for_event(self._stopped, seconds)
