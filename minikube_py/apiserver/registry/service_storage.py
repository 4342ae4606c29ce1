"""The Service REST storage: the generic store plus cluster IP and node port allocation.

Upstream: pkg/registry/core/service/storage (storage.go and alloc.go). The strategy
(strategies/services.py) defaults and validates; this store reserves values in etcd
(allocators.py) around each write, so that a service is never stored without them and
nothing stays reserved for a write that failed:

    create: default -> dry run (allocate, validate) -> allocate -> etcd create
                                                                   | failed: release
    update: strategy steps -> allocate what the new spec adds -> write
                                                   | failed: release | done: free dropped
    delete: generic delete -> release everything the service held

The dry runs keep the generic store's promise: a refused request writes nothing to etcd.

Also here: the `kubernetes` service the API server keeps in `default`, and the repair pass
that heals allocations leaked by a crash between allocating and writing.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import ipaddress
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import orjson

from minikube_py.api import Obj, errors, meta
from minikube_py.api.defaulting import as_dict, as_list, defaulted_dict, items_of
from minikube_py.api.resources import Resource
from minikube_py.api.validation import FieldError, invalid
from minikube_py.apiserver.registry.allocators import (
    Allocated,
    AllocationError,
    IPAllocator,
    Owner,
    PortAllocator,
    RangeAllocator,
)
from minikube_py.apiserver.registry.store import (
    MAX_UPDATE_ATTEMPTS,
    DeleteOptions,
    Mutation,
    Store,
    etcd_errors,
)
from minikube_py.apiserver.registry.strategies.base import Strategy
from minikube_py.apiserver.registry.strategies.services import (
    is_headless,
    needs_cluster_ip,
    needs_health_check_node_port,
    needs_node_ports,
    service_type,
)
from minikube_py.apiserver.storage.etcd import EtcdClient, EtcdError, prefix_end
from minikube_py.apiserver.storage.watchcache import WatchCache, decode

log = logging.getLogger("minikube_py.apiserver")

LEAK_GRACE = timedelta(seconds=60)  # upstream: a create may hold an unused IP this long
RETRY_SECONDS = 1.0


def held_cluster_ips(spec: Obj) -> set[str]:
    """The cluster IPs a stored service holds (none when headless or ExternalName)."""
    return {ip for ip in as_list(spec.get("clusterIPs")) if isinstance(ip, str) and _is_ipv4(ip)}


def held_node_ports(spec: Obj) -> set[int]:
    """The node ports a stored service holds, its health check node port included."""
    ports = {port.get("nodePort") for _, port in items_of(spec, "ports")}
    ports.add(spec.get("healthCheckNodePort"))
    return {port for port in ports if _is_port(port)}


def _is_ipv4(value: str) -> bool:
    try:
        return ipaddress.ip_address(value).version == 4
    except ValueError:
        return False


def _is_port(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _invalid(service: Obj, problem: FieldError) -> errors.APIError:
    return errors.invalid("Service", "", meta.name_of(service), [problem])


@dataclass
class Allocation:
    """What one request reserved (given back by revert) and dropped (freed by commit).

    Upstream's transaction in alloc.go: a failed write reverts, a successful one commits.
    """

    ips: IPAllocator
    ports: PortAllocator
    owner: Owner
    dry_run: bool
    reserved_ips: list[str] = field(default_factory=list)
    reserved_ports: list[int] = field(default_factory=list)
    dropped_ips: set[str] = field(default_factory=set)
    dropped_ports: set[int] = field(default_factory=set)

    async def claim_ip(self, ip: str) -> None:
        await self.ips.allocate(ip, self.owner, dry_run=self.dry_run)
        self.reserved_ips.append(ip)

    async def next_ip(self) -> str:
        ip = await self.ips.allocate_next(self.owner, dry_run=self.dry_run)
        self.reserved_ips.append(ip)
        return ip

    async def claim_port(self, port: int) -> None:
        await self.ports.allocate(port, self.owner, dry_run=self.dry_run)
        self.reserved_ports.append(port)

    async def next_port(self) -> int:
        port = await self.ports.allocate_next(
            self.owner, dry_run=self.dry_run, avoid=self.reserved_ports
        )
        self.reserved_ports.append(port)
        return port

    async def revert(self) -> None:
        """The write failed: give back what this request reserved."""
        if not self.dry_run:
            await _release(self.ips, self.reserved_ips)
            await _release(self.ports, self.reserved_ports)

    async def commit(self) -> None:
        """The write succeeded: free what the service no longer holds."""
        if not self.dry_run:
            await _release(self.ips, self.dropped_ips)
            await _release(self.ports, self.dropped_ports)


async def _release(allocator: RangeAllocator[Any], values: Iterable[Any]) -> None:
    for value in values:
        await allocator.release(value)


class ServiceAllocators:
    """Cluster IPs and node ports for services (upstream's Allocators in alloc.go)."""

    def __init__(self, ips: IPAllocator, ports: PortAllocator) -> None:
        self.ips = ips
        self.ports = ports

    async def allocate(self, service: Obj, old: Obj | None, *, dry_run: bool = False
                       ) -> Allocation:
        """allocateCreate / allocateUpdate: fill in and reserve what the spec needs.

        Values the old service already holds are kept as they are; values the new spec
        drops are recorded in the Allocation, to be freed when the write succeeds.
        """
        metadata = as_dict(service.get("metadata"))
        owner = Owner(str(metadata.get("namespace", "")), str(metadata.get("name", "")))
        allocation = Allocation(self.ips, self.ports, owner, dry_run)
        spec = service.get("spec")
        old_spec = as_dict((old or {}).get("spec"))
        if not isinstance(spec, dict):
            return allocation
        try:
            await self._allocate_cluster_ip(service, spec, old_spec, allocation)
            await self._allocate_node_ports(service, spec, old_spec, allocation)
            await self._allocate_health_check_node_port(spec, old_spec, allocation)
        except BaseException:
            await allocation.revert()
            raise
        allocation.dropped_ips = held_cluster_ips(old_spec) - held_cluster_ips(spec)
        allocation.dropped_ports = held_node_ports(old_spec) - held_node_ports(spec)
        return allocation

    async def release(self, service: Obj) -> None:
        """The service is gone: free everything it held."""
        spec = as_dict(service.get("spec"))
        await _release(self.ips, held_cluster_ips(spec))
        await _release(self.ports, held_node_ports(spec))

    async def _allocate_cluster_ip(
        self, service: Obj, spec: Obj, old_spec: Obj, allocation: Allocation
    ) -> None:
        """allocClusterIPs: a requested IP if it is free, else a random one."""
        if not needs_cluster_ip(spec) or is_headless(spec):
            return
        self._check_ip_families(service, spec)
        cluster_ip, cluster_ips = spec.get("clusterIP") or "", as_list(spec.get("clusterIPs"))
        if not cluster_ip and not cluster_ips:
            try:
                ip = await allocation.next_ip()
            except AllocationError as err:
                raise errors.internal_error(f"failed to allocate a serviceIP: {err}") from None
            spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
            return
        # Anything but one well-formed IPv4 address is for validation to refuse.
        if cluster_ips != [cluster_ip] or not _is_ipv4(cluster_ip):
            return
        if cluster_ip in held_cluster_ips(old_spec):
            return
        try:
            await allocation.claim_ip(cluster_ip)
        except AllocationError as err:
            raise _invalid(service, invalid(
                "spec.clusterIPs", cluster_ips, f"failed to allocate IP {cluster_ip}: {err}"
            )) from None

    def _check_ip_families(self, service: Obj, spec: Obj) -> None:
        """initIPFamilyFields: this cluster is single-stack IPv4."""
        if spec.get("ipFamilyPolicy") == "RequireDualStack":
            raise _invalid(service, invalid(
                "spec.ipFamilyPolicy", "RequireDualStack",
                "this cluster is not configured for dual-stack services",
            ))
        for i, family in enumerate(as_list(spec.get("ipFamilies"))):
            if family != "IPv4":
                raise _invalid(service, invalid(
                    f"spec.ipFamilies[{i}]", family, "not configured on this cluster"
                ))

    async def _allocate_node_ports(
        self, service: Obj, spec: Obj, old_spec: Obj, allocation: Allocation
    ) -> None:
        """initNodePorts / updateNodePorts: one node port per service port.

        Entries of one port number (say TCP and UDP 53) share a node port, unless the
        user asked for different ones. A LoadBalancer with
        allocateLoadBalancerNodePorts=false only gets the node ports it asks for.
        """
        if service_type(spec) not in ("NodePort", "LoadBalancer"):
            return
        ours = held_node_ports(old_spec)
        by_port_number: dict[Any, int] = {}
        for i, port in items_of(spec, "ports"):
            number = port.get("nodePort") or 0
            if not isinstance(number, int) or (not number and not needs_node_ports(spec)):
                continue
            if not number:
                number = by_port_number.get(port.get("port")) or _requested_node_port(
                    spec, port.get("port")
                )
            if not number:
                try:
                    number = await allocation.next_port()
                except AllocationError as err:
                    raise errors.internal_error(f"failed to allocate a nodePort: {err}") from None
            elif number not in ours and number not in allocation.reserved_ports:
                try:
                    await allocation.claim_port(number)
                except AllocationError as err:
                    raise _invalid(
                        service, invalid(f"spec.ports[{i}].nodePort", number, str(err))
                    ) from None
            port["nodePort"] = number
            by_port_number.setdefault(port.get("port"), number)

    async def _allocate_health_check_node_port(
        self, spec: Obj, old_spec: Obj, allocation: Allocation
    ) -> None:
        """allocHealthCheckNodePort: for a LoadBalancer with externalTrafficPolicy Local."""
        if not needs_health_check_node_port(spec):
            return
        number = spec.get("healthCheckNodePort") or 0
        if not isinstance(number, int) or number in held_node_ports(old_spec):
            return
        if number:
            try:
                await allocation.claim_port(number)
            except AllocationError as err:
                raise errors.internal_error(
                    f"failed to allocate requested HealthCheck NodePort {number}: {err}"
                ) from None
            return
        try:
            spec["healthCheckNodePort"] = await allocation.next_port()
        except AllocationError as err:
            raise errors.internal_error(
                f"failed to allocate a HealthCheck NodePort 0: {err}"
            ) from None


def _requested_node_port(spec: Obj, port_number: Any) -> int:
    """findRequestedNodePort: a node port asked for by any entry of this port number."""
    for _, port in items_of(spec, "ports"):
        if port.get("port") == port_number and _is_port(port.get("nodePort")):
            return int(port["nodePort"])
    return 0


class _StoredServiceChanged(Exception):
    """Someone wrote the service between planning an update and writing it."""


class ServiceStore(Store):
    """Services: the generic store, with cluster IPs and node ports reserved around writes."""

    def __init__(
        self,
        resource: Resource,
        strategy: Strategy,
        etcd: EtcdClient,
        cache: WatchCache,
        allocators: ServiceAllocators,
    ) -> None:
        super().__init__(resource, strategy, etcd, cache)
        self.allocators = allocators

    @etcd_errors
    async def create(self, namespace: str, obj: Obj, *, dry_run: bool = False,
                     manager: str | None = None) -> Obj:
        """Create: beginCreate allocates after defaulting; a create that fails releases.

        A dry run of the whole create comes first: a request that would be refused (a
        name in use, a taken IP, an invalid field, admission) is refused before anything
        is written. Admission runs once: mutating before the IPs are planned, validating
        on the planned service (upstream's validation sees the allocated IPs too).
        """
        metadata = meta.metadata(obj)
        metadata["namespace"] = namespace
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = meta.generate_name(str(metadata["generateName"]))
        name = metadata.get("name")
        if isinstance(name, str) and name:
            if await self.etcd.get(self.key(namespace, name).encode()) is not None:
                raise errors.already_exists(self.resource.plural, self.resource.group, name)
        self.strategy.prepare_for_create(obj)
        self.strategy.default(obj)
        await self.admit_create(self.create_attributes(namespace, obj, dry_run))
        planned = copy.deepcopy(obj)
        await self.allocators.allocate(planned, None, dry_run=True)
        planned = await super().create(namespace, planned, dry_run=True, manager=manager,
                                       admit=False)
        await self.admission.validate(self.create_attributes(namespace, planned, dry_run))
        if dry_run:
            return planned
        allocation = await self.allocators.allocate(obj, None)
        try:
            return await super().create(namespace, obj, manager=manager, admit=False)
        except BaseException:
            await allocation.revert()
            raise

    @etcd_errors
    async def guaranteed_update(self, namespace: str, name: str, mutate: Mutation) -> Obj:
        """Update: plan on what was read, reserve what the plan adds, write the plan.

        The write happens only if the service is still the one read; otherwise the
        reservations are given back and the update is planned again. As for a create,
        a dry run of the allocation comes first, so that a refused one writes nothing.
        """
        for _ in range(MAX_UPDATE_ATTEMPTS):
            read = await self.get(namespace, name)
            planned = mutate(copy.deepcopy(read))
            if inspect.isawaitable(planned):
                planned = await planned
            await self.allocators.allocate(copy.deepcopy(planned), read, dry_run=True)
            allocation = await self.allocators.allocate(planned, read)
            try:
                updated = await super().guaranteed_update(
                    namespace, name, _unless_changed(read, planned)
                )
            except _StoredServiceChanged:
                await allocation.revert()
                continue
            except BaseException:
                await allocation.revert()
                raise
            await allocation.commit()
            if self._finished_deleting(updated):
                await self.allocators.release(updated)
            return updated
        raise self._conflict(name)

    @etcd_errors
    async def delete(self, namespace: str, name: str, options: DeleteOptions) -> tuple[Obj, bool]:
        """Delete: once the service is gone, its cluster IP and node ports are free."""
        obj, gone = await super().delete(namespace, name, options)
        if gone and not options.dry_run:
            await self.allocators.release(obj)
        return obj, gone


def _unless_changed(read: Obj, planned: Obj) -> Mutation:
    def write_plan(current: Obj) -> Obj:
        if current["metadata"]["resourceVersion"] != read["metadata"]["resourceVersion"]:
            raise _StoredServiceChanged()
        return planned

    return write_plan


# -- the kubernetes service ----------------------------------------------------------------


def kubernetes_service(cluster_ip: str, port: int) -> Obj:
    """The `kubernetes` Service: port 443 (https) of the first cluster IP, to the API server."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": cluster_ip,
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
            "sessionAffinity": "None",
        },
    }


async def ensure_kubernetes_service(store: ServiceStore, port: int) -> None:
    """The kubernetes service controller: create `default/kubernetes`, or fix its ports.

    Retries until it succeeds (the first IP may still be held by a leaked allocation
    that the repair pass frees).
    """
    wanted = kubernetes_service(store.allocators.ips.kubernetes_service_ip, port)
    await ensure_kubernetes_object(store, wanted, (("spec", "ports"),), "service")


async def ensure_kubernetes_endpoints(endpoints: Store, slices: Store, addresses: list[str],
                                      port: int) -> None:
    """The endpoint reconciler's write: the `kubernetes` Service's Endpoints and
    EndpointSlice name these servers (addresses:port, in this order), so that pods reach
    them at kubernetes.default.svc through the proxies' rules. Each is created, or put
    back when it says otherwise."""
    ports = [{"name": "https", "port": port, "protocol": "TCP"}]
    await ensure_kubernetes_object(
        endpoints,
        {"apiVersion": "v1", "kind": "Endpoints",
         "metadata": {"name": "kubernetes", "namespace": "default",
                      "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
         "subsets": [{"addresses": [{"ip": address} for address in addresses],
                      "ports": ports}]},
        (("subsets",),), "endpoints")
    await ensure_kubernetes_object(
        slices,
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "kubernetes", "namespace": "default",
                      "labels": {"kubernetes.io/service-name": "kubernetes"}},
         "addressType": "IPv6" if ":" in addresses[0] else "IPv4",
         "endpoints": [{"addresses": [address], "conditions": {"ready": True}}
                       for address in addresses],
         "ports": ports},
        (("endpoints",), ("ports",)), "endpoints")


async def ensure_kubernetes_object(store: Store, wanted: Obj, owned: tuple[tuple[str, ...], ...],
                                   what: str) -> None:
    """Create `wanted` (a `default/kubernetes` object) in `store`, or put back the fields
    at the `owned` paths when the stored object says otherwise; an error is logged and
    the whole step retried until it succeeds."""

    def at(obj: Any, path: tuple[str, ...]) -> Any:
        for key in path:
            obj = as_dict(obj).get(key)
        return obj

    def put_back(stored: Obj) -> Obj:
        for path in owned:
            parent = stored
            for key in path[:-1]:
                parent = defaulted_dict(parent, key)
            parent[path[-1]] = copy.deepcopy(at(wanted, path))
        return stored

    while True:
        try:
            try:
                current = await store.get("default", "kubernetes")
            except errors.APIError as err:
                if err.code != 404:
                    raise
                await store.create("default", copy.deepcopy(wanted))
                return
            if any(at(current, path) != at(wanted, path) for path in owned):
                await store.guaranteed_update("default", "kubernetes", put_back)
            return
        except errors.APIError as err:
            log.warning(orjson.dumps({"msg": f"cannot ensure the kubernetes {what}",
                                      "error": str(err)}).decode())
            await asyncio.sleep(RETRY_SECONDS)


# -- repair --------------------------------------------------------------------------------


class AllocationRepair:
    """Upstream's repair controllers (ipallocator and portallocator): etcd agrees with services.

    A key whose service is gone or holds another value leaked (the API server stopped
    between allocating and writing): it is freed once older than LEAK_GRACE, since a
    younger one may belong to a create still under way. A value a service holds
    without a key gets its key back.
    """

    def __init__(self, etcd: Any, services_prefix: str, allocators: ServiceAllocators) -> None:
        self.etcd = etcd
        self.services_prefix = services_prefix
        self.allocators = allocators

    async def run(self) -> None:
        """Repair, then again for as long as young leaks are waiting for their grace."""
        while True:
            try:
                wait = await self.repair_once()
            except EtcdError as err:
                log.warning(orjson.dumps({"msg": "allocation repair failed",
                                          "error": str(err)}).decode())
                wait = RETRY_SECONDS
            if wait is None:
                return
            await asyncio.sleep(wait)

    async def repair_once(self) -> float | None:
        """One pass; returns the seconds until a young leak is due, or None if there is none."""
        prefix = self.services_prefix.encode()
        listed = await self.etcd.range(prefix, prefix_end(prefix))
        specs: dict[Owner, Obj] = {}
        for kv in listed.kvs:
            service = decode(kv)
            owner = Owner(meta.namespace_of(service), meta.name_of(service))
            specs[owner] = as_dict(service.get("spec"))
        due: list[float] = []
        for allocator, held in ((self.allocators.ips, held_cluster_ips),
                                (self.allocators.ports, held_node_ports)):
            due += await self._free_leaks(allocator, await allocator.allocations(), specs, held)
            await self._restore_missing(allocator, await allocator.allocations(), specs, held)
        return min(due) if due else None

    async def _free_leaks(
        self, allocator: RangeAllocator[Any], keys: list[Allocated], specs: dict[Owner, Obj],
        held: Any,
    ) -> list[float]:
        now = meta.now()
        waiting: list[float] = []
        for key in keys:
            value = allocator.parse(key.name)
            spec = specs.get(key.owner) if key.owner else None
            if spec is not None and value in held(spec):
                continue
            age = now - key.created if key.created else LEAK_GRACE
            if age < LEAK_GRACE:
                wait = min(LEAK_GRACE - age, LEAK_GRACE)  # a clock ahead waits one grace
                waiting.append(wait.total_seconds() + RETRY_SECONDS)
                continue
            if await allocator.release_if_unchanged(key):
                log.warning(orjson.dumps({"msg": "released a leaked allocation",
                                          "key": key.kv.key.decode()}).decode())
        return waiting

    async def _restore_missing(
        self, allocator: RangeAllocator[Any], keys: list[Allocated], specs: dict[Owner, Obj],
        held: Any,
    ) -> None:
        allocated = {key.name for key in keys}
        for owner, spec in specs.items():
            for value in sorted(held(spec)):
                if str(value) in allocated:
                    continue
                try:
                    await allocator.allocate(value, owner)
                except AllocationError as err:
                    log.warning(orjson.dumps({
                        "msg": "a service holds a value that cannot be allocated to it",
                        "service": f"{owner.namespace}/{owner.name}", "value": value,
                        "error": str(err)}).decode())
                    continue
                log.warning(orjson.dumps({"msg": "restored a missing allocation",
                                          "key": allocator.key(value).decode()}).decode())
