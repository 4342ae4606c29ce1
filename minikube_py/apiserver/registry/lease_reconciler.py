"""The lease endpoint reconciler: the `kubernetes` Service's endpoints are the API servers
that are alive (upstream's pkg/controlplane/reconcilers/lease.go,
--endpoint-reconciler-type=lease, the default).

Every API server keeps a key of its own in etcd, on a TTL, and from the keys that are
there computes the endpoints:

    every reconcile interval (10 s):
      UpdateLease   put /registry/masterleases/<advertise address> (an Endpoints naming
                    it) on an etcd lease of --master-endpoint-reconcile-ttl (15 s)
      list          every key under /registry/masterleases/: the servers that renewed
                    theirs within the TTL (etcd deleted the others' when their lease
                    ran out)
      reconcile     the `kubernetes` Endpoints and EndpointSlice name those addresses,
                    sorted (written only when they say otherwise)
    on a clean stop: RemoveEndpoints, delete this server's key and reconcile once, so
                    that the others need not wait for the TTL

So an API server killed with -9 leaves the endpoints at most TTL plus one interval after
its last renewal. The keys live outside any resource's prefix: no API serves them
(`etcdctl get --prefix /registry/masterleases/` shows them).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging

import orjson

from minikube_py.api import Obj
from minikube_py.apiserver.registry.service_storage import ensure_kubernetes_endpoints
from minikube_py.apiserver.registry.store import Store
from minikube_py.apiserver.storage.etcd import EtcdClient, EtcdError, prefix_end

log = logging.getLogger(__name__)

MASTER_LEASES = "/registry/masterleases/"
RECONCILE_INTERVAL = 10.0
"""Upstream's EndpointInterval: how often each server renews its key and reconciles."""
LEASE_TTL = 15
"""Upstream's --master-endpoint-reconcile-ttl default, seconds."""


def master_lease(address: str) -> Obj:
    """The value of a server's key: an Endpoints naming it (as upstream stores it)."""
    return {"kind": "Endpoints", "apiVersion": "v1", "metadata": {"name": address},
            "subsets": [{"addresses": [{"ip": address}]}]}


def _sort_key(address: str) -> tuple[int, int]:
    parsed = ipaddress.ip_address(address)
    return parsed.version, int(parsed)


class LeaseEndpointReconciler:
    """Keep this server's master lease and the `kubernetes` endpoints the leases name."""

    def __init__(self, etcd: EtcdClient, endpoints: Store, slices: Store, address: str,
                 port: int, *, interval: float = RECONCILE_INTERVAL,
                 ttl: int = LEASE_TTL) -> None:
        self.etcd = etcd
        self.endpoints = endpoints
        self.slices = slices
        self.address = address
        self.port = port
        self.interval = interval
        self.ttl = ttl

    @property
    def key(self) -> bytes:
        return f"{MASTER_LEASES}{self.address}".encode()

    async def run(self) -> None:
        """Renew and reconcile every interval, until cancelled; a failed round (etcd
        away) is logged and the next one tried."""
        while True:
            try:
                await self.update_lease()
                await self.reconcile()
            except EtcdError as error:
                log.warning(orjson.dumps({"msg": "cannot reconcile the kubernetes endpoints",
                                          "error": str(error)}).decode())
            await asyncio.sleep(self.interval)

    async def update_lease(self) -> None:
        """UpdateLease: this server's key, on a fresh lease of ttl seconds."""
        lease = await self.etcd.lease_grant(self.ttl)
        await self.etcd.put(self.key, orjson.dumps(master_lease(self.address)), lease=lease)

    async def live_addresses(self) -> list[str]:
        """The addresses of every server whose key has not expired, sorted."""
        prefix = MASTER_LEASES.encode()
        listed = await self.etcd.range(prefix, prefix_end(prefix))
        addresses = {kv.key[len(prefix):].decode() for kv in listed.kvs}
        return sorted(addresses, key=_sort_key)

    async def reconcile(self) -> None:
        """The kubernetes Endpoints and EndpointSlice name the live servers."""
        addresses = await self.live_addresses()
        if addresses:
            await ensure_kubernetes_endpoints(self.endpoints, self.slices, addresses,
                                              self.port)

    async def remove_endpoints(self) -> None:
        """RemoveEndpoints (a clean stop): drop this server's key, then reconcile."""
        try:
            await self.etcd.delete(self.key)
        except EtcdError:
            return
        await self.reconcile()
