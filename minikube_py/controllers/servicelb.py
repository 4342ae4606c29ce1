"""The service-lb controller: LoadBalancer Services get an address from a local range.

On a cloud, upstream's service-lb controller asks the cloud for a load balancer and
writes its address into the Service's status. On a laptop, kind's cloud-provider-kind and
MetalLB hand out addresses from a local range instead; this controller does the same
(`--loadbalancer-ip-range`), and the proxy routes those addresses like the ClusterIP.

    service added / updated / deleted --> queue "ns/name"
    sync: a LoadBalancer Service of our class, not being deleted?
            yes -> finalizer on (service.kubernetes.io/load-balancer-cleanup)
                   -> no address from the range yet (or not the spec.loadBalancerIP it
                      asks for): take that one, else the lowest free one, and write
                      status.loadBalancer.ingress = [{ip, ipMode: VIP}]
                      (none to give: a Warning Event SyncLoadBalancerFailed saying why,
                      the Service stays <pending> or keeps its address, retried later)
                   -> status.conditions: minikube-py.io/LoadBalancerReady, True
                      (EnsuredLoadBalancer) or False (SyncLoadBalancerFailed, the Event's
                      message): what the Event says, kept on the Service for readers such
                      as the gateway controller (api/loadbalancer.py)
            no  -> our address in its status? clear it and the condition; finalizer off
                   (the address is free)

Which addresses are taken is read from the Services themselves (their status), plus the
ones this controller has just written and the informer may not show yet, so nothing is
stored anywhere else. One worker: two syncs at once could pick the same address.
A Service with a `loadBalancerClass` other than ours belongs to another implementation
and is left alone, as upstream's controller does: without --loadbalancer-class we serve the
Services that name no class, with it only those that name it.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.loadbalancer import (
    ENSURED,
    SYNC_FAILED,
    ingress_ips,
    with_load_balancer_condition,
    without_load_balancer_condition,
)
from minikube_py.api.meta import rfc3339
from minikube_py.client.errors import Conflict, NotFound
from minikube_py.controllers.base import Controller, ControllerContext, ExpectedSyncError

log = logging.getLogger(__name__)

FINALIZER = "service.kubernetes.io/load-balancer-cleanup"


class RangeExhausted(ExpectedSyncError):
    """No free address: reported as an Event, retried with backoff."""


def parse_range(spec: str) -> list[str]:
    """`first-last` or a CIDR -> the addresses it holds, lowest first."""
    try:
        if "-" in spec:
            first, last = (ipaddress.IPv4Address(part.strip()) for part in spec.split("-", 1))
            if last < first:
                raise ValueError(f"{last} comes before {first}")
            return [str(ipaddress.IPv4Address(i)) for i in range(int(first), int(last) + 1)]
        return [str(address) for address in ipaddress.IPv4Network(spec, strict=False).hosts()]
    except ValueError as error:
        raise ValueError(f"--loadbalancer-ip-range {spec!r}: {error}") from None


class ServiceLBController(Controller):
    """Give LoadBalancer Services an address from the range (cloud-provider-kind's job)."""

    name = "service-lb"
    event_source = "service-controller"
    workers: ClassVar[int] = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.pool = parse_range(ctx.options.loadbalancer_ip_range)
        self.pool_set = set(self.pool)
        self.load_balancer_class = ctx.options.loadbalancer_class
        self.services = self.informer("services")
        self.services_client = self.client.resource("services")
        self.watch_own_kind(self.services)
        self._written: dict[str, str] = {}
        """Addresses this controller wrote, by Service key, until the informer shows them."""

    def ours(self, service: Obj) -> bool:
        """A LoadBalancer Service of our class: the one we were given, else none at all."""
        spec = service.get("spec") or {}
        return (spec.get("type") == "LoadBalancer"
                and spec.get("loadBalancerClass") == self.load_balancer_class)

    async def sync(self, key: str) -> None:
        """syncService: ensure or release the Service's address (see the module's steps)."""
        service = self.services.store.get(key)
        if service is None:
            self._written.pop(key, None)
            return
        if self.ours(service) and not service["metadata"].get("deletionTimestamp"):
            await self._ensure(key, service)
        else:
            await self._release(key, service)

    async def _ensure(self, key: str, service: Obj) -> None:
        if FINALIZER not in (service["metadata"].get("finalizers") or []):
            service = await self._set_finalizer(service, add=True)
        current = [ip for ip in ingress_ips(service) if ip in self.pool_set]
        requested = (service.get("spec") or {}).get("loadBalancerIP")
        if current and (not requested or requested in current):
            self._written.pop(key, None)
            await self._write_status(key, service, None, self._ready(service, True))
            return
        self.recorder.event(service, "Normal", "EnsuringLoadBalancer", "Ensuring load balancer")
        address, problem = self._free_address(key, service)
        if address is None:
            message = f"Error syncing load balancer: failed to ensure load balancer: {problem}"
            self.recorder.event(service, "Warning", SYNC_FAILED, message)
            await self._write_status(key, service, None, self._ready(service, False, message))
            raise RangeExhausted(f"no load-balancer address for {key}: {problem}")
        await self._write_status(key, service, {"ingress": [{"ip": address, "ipMode": "VIP"}]},
                                 self._ready(service, True))
        self._written[key] = address
        log.info("service-lb: %s gets %s", key, address)
        self.recorder.event(service, "Normal", "EnsuredLoadBalancer", "Ensured load balancer")

    def _ready(self, service: Obj, ready: bool, message: str = "Ensured load balancer"
               ) -> list[Obj] | None:
        """status.conditions with LoadBalancerReady True (EnsuredLoadBalancer) or False
        (SyncLoadBalancerFailed, saying why); None when it says so already."""
        return with_load_balancer_condition(service, ready, ENSURED if ready else SYNC_FAILED,
                                            message, rfc3339(self.now()))

    async def _write_status(self, key: str, service: Obj, load_balancer: Obj | None,
                            conditions: list[Obj] | None) -> None:
        """status.loadBalancer (None: as it is) and status.conditions (None: as they are),
        in one write when either changes."""
        status = dict(service.get("status") or {})
        if load_balancer is not None:
            status["loadBalancer"] = load_balancer
        if conditions is not None:
            status["conditions"] = conditions
        if status == (service.get("status") or {}):
            return
        try:
            await self.services_client.update_status({**service, "status": status})
        except Conflict as error:
            raise ExpectedSyncError(f"{key} changed meanwhile") from error

    def _free_address(self, key: str, service: Obj) -> tuple[str | None, str]:
        """The requested spec.loadBalancerIP if free, else the lowest free address; when
        there is none, why."""
        taken = {ip for other in self.services.store.list() if other is not service
                 for ip in ingress_ips(other)}
        taken |= {ip for other_key, ip in self._written.items() if other_key != key}
        pool = f"--loadbalancer-ip-range ({self.pool[0]}-{self.pool[-1]})"
        requested = (service.get("spec") or {}).get("loadBalancerIP")
        if requested:
            if requested not in self.pool_set:
                return None, f"requested loadBalancerIP {requested} is outside {pool}"
            if requested in taken:
                return None, (f"requested loadBalancerIP {requested} is in use by another "
                              "Service")
            return requested, ""
        free = next((ip for ip in self.pool if ip not in taken), None)
        return free, f"no free address left in {pool}"

    async def _release(self, key: str, service: Obj) -> None:
        """The Service no longer wants our address: clear it and drop the finalizer."""
        self._written.pop(key, None)
        had = [ip for ip in ingress_ips(service) if ip in self.pool_set]
        conditions = without_load_balancer_condition(service)
        if (had or conditions is not None) and not service["metadata"].get(
                "deletionTimestamp"):
            status = dict(service.get("status") or {})
            if had:
                status["loadBalancer"] = {}
            if conditions is not None:
                status["conditions"] = conditions
            try:
                service = await self.services_client.update_status({**service, "status": status})
            except NotFound:
                return
        if FINALIZER in (service["metadata"].get("finalizers") or []):
            self.recorder.event(service, "Normal", "DeletingLoadBalancer",
                                "Deleting load balancer")
            await self._set_finalizer(service, add=False)
            self.recorder.event(service, "Normal", "DeletedLoadBalancer",
                                "Deleted load balancer")
        if had:
            log.info("service-lb: %s releases %s", key, ", ".join(had))

    async def _set_finalizer(self, service: Obj, *, add: bool) -> Obj:
        """Add or remove the cleanup finalizer with a resourceVersion-guarded update."""
        finalizers = [f for f in service["metadata"].get("finalizers") or [] if f != FINALIZER]
        if add:
            finalizers.append(FINALIZER)
        meta = {**service["metadata"], "finalizers": finalizers}
        try:
            return await self.services_client.update({**service, "metadata": meta})
        except Conflict as error:
            raise ExpectedSyncError(f"{meta['namespace']}/{meta['name']} changed meanwhile"
                                    ) from error
