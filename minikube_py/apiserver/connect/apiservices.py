"""APIServices: which server serves each group-version (the aggregation layer's registry).

Upstream's kube-aggregator keeps one APIService per group-version: this server's own are
`Local` and always Available; one that names a Service is checked by its availability
controller (is the Service there, does it have ready endpoints, does the server answer
discovery), and requests for its group are proxied to it.

Here, at start, the API server writes a Local APIService for every group-version it
serves (`kubectl get apiservices`), and a loop keeps the Available condition of the
others as upstream's checks would find it; the last check, discovery, is the
aggregator's (aggregation.py), which then proxies the group.
"""

from __future__ import annotations

import asyncio
import copy
import logging

import orjson

from minikube_py.api import Obj, errors
from minikube_py.api.meta import now_rfc3339
from minikube_py.api.resources import RESOURCES
from minikube_py.apiserver.connect.aggregation import Aggregator
from minikube_py.apiserver.registry.store import Store

log = logging.getLogger(__name__)

CHECK_PERIOD = 5.0  # seconds between availability checks of Service-backed APIServices
# (groupPriorityMinimum, versionPriority) of the built-in groups, as upstream registers them.
PRIORITIES = {
    "": (18000, 1),
    "apiregistration.k8s.io": (18000, 15),
    "apps": (17800, 15),
    "events.k8s.io": (17750, 15),
    "autoscaling": (17500, 15),
    "batch": (17400, 15),
    "certificates.k8s.io": (17300, 15),
    "networking.k8s.io": (17200, 15),
    "policy": (17100, 15),
    "rbac.authorization.k8s.io": (17000, 15),
    "storage.k8s.io": (16800, 15),
    "admissionregistration.k8s.io": (16700, 15),
    "scheduling.k8s.io": (16600, 15),
    "flowcontrol.apiserver.k8s.io": (16100, 21),
    "coordination.k8s.io": (16500, 15),
    "discovery.k8s.io": (16200, 15),
}
# Versions ranked above their group's other versions (upstream: autoscaling/v2 over v1).
VERSION_PRIORITIES = {("autoscaling", "v2"): 30}
LOCAL = {"type": "Available", "status": "True", "reason": "Local",
         "message": "Local APIServices are always available"}


def local_api_services() -> list[Obj]:
    """One Local APIService per group-version this server serves."""
    served = sorted({(resource.group, resource.version) for resource in RESOURCES})
    found = []
    for group, version in served:
        group_priority, version_priority = PRIORITIES.get(group, (1000, 15))
        version_priority = VERSION_PRIORITIES.get((group, version), version_priority)
        spec = {"group": group} if group else {}  # the core group: "v1.", no group
        found.append({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                      "metadata": {"name": f"{version}.{group}"},
                      "spec": {**spec, "version": version,
                               "groupPriorityMinimum": group_priority,
                               "versionPriority": version_priority}})
    return found


def availability(api_service: Obj, services: Store, slices: Store) -> Obj | str:
    """The Available condition upstream's checks would give (without time), or, when the
    Service has a ready endpoint, its base URL: the discovery check comes next."""
    reference = (api_service.get("spec") or {}).get("service")
    if not reference:
        return dict(LOCAL)
    namespace, name = reference.get("namespace", ""), reference.get("name", "")
    service = services.cache.get(services.key(namespace, name))
    if service is None:
        return {"type": "Available", "status": "False", "reason": "ServiceNotFound",
                "message": f'service/{name} in "{namespace}" is not present'}
    port = reference.get("port", 443)
    port_name = next((p.get("name", "") for p in (service.get("spec") or {}).get("ports") or ()
                      if p.get("port") == port), "")
    ready = [(address, target)
             for endpoint_slice in slices.cache.list(f"{namespace}/")
             if ((endpoint_slice.get("metadata") or {}).get("labels") or {}).get(
                 "kubernetes.io/service-name") == name
             for target in [next((p.get("port") for p in endpoint_slice.get("ports") or ()
                                  if p.get("name", "") == port_name), None)]
             if target is not None
             for endpoint in endpoint_slice.get("endpoints") or ()
             if (endpoint.get("conditions") or {}).get("ready") is not False
             for address in endpoint.get("addresses") or ()]
    if not ready:
        return {"type": "Available", "status": "False", "reason": "MissingEndpoints",
                "message": f'endpoints for service/{name} in "{namespace}" have no '
                           f'addresses with port name "{port_name}"'}
    address, target = ready[0]
    return f"http://{address}:{target}"


class APIServiceAvailability:
    """Writes the Local APIServices, then keeps every APIService's Available condition."""

    def __init__(self, api_services: Store, services: Store, slices: Store,
                 aggregator: Aggregator) -> None:
        self.api_services, self.services, self.slices = api_services, services, slices
        self.aggregator = aggregator

    async def run(self) -> None:
        await self.register_local()
        while True:
            for api_service in self.api_services.cache.list(""):
                found = availability(api_service, self.services, self.slices)
                if isinstance(found, str):
                    condition = await self.aggregator.check(api_service, found)
                else:
                    condition = found
                    self.aggregator.forget(api_service)
                if not _shows(api_service, condition):  # a write only for a change
                    await self.set_available(api_service["metadata"]["name"], condition)
            await asyncio.sleep(CHECK_PERIOD)

    async def register_local(self) -> None:
        for api_service in local_api_services():
            name = api_service["metadata"]["name"]
            try:
                await self.api_services.create("", api_service)
            except errors.APIError as err:
                if err.code != 409:
                    log.warning(orjson.dumps({"msg": "cannot register APIService",
                                              "name": name, "error": str(err)}).decode())
                    continue
            await self.set_available(name, dict(LOCAL))

    async def set_available(self, name: str, condition: Obj) -> None:
        """Write the Available condition through the status path when it changed;
        lastTransitionTime moves only when its status does."""

        async def with_condition(current: Obj) -> Obj:
            if _shows(current, condition):
                return current
            conditions = (current.get("status") or {}).get("conditions") or []
            old = _available(current)
            kept = (old is not None and old.get("status") == condition["status"]
                    and old.get("lastTransitionTime"))
            written = {"type": condition["type"], "status": condition["status"],
                       "lastTransitionTime": old["lastTransitionTime"] if kept else now_rfc3339(),
                       "reason": condition["reason"], "message": condition["message"]}
            new = copy.deepcopy(current)
            new["status"] = {"conditions": [
                *(c for c in conditions if c.get("type") != "Available"), written]}
            return await self.api_services.prepare_update(new, current, "status")

        try:
            await self.api_services.guaranteed_update("", name, with_condition)
        except errors.APIError as err:
            if err.code != 404:  # deleted meanwhile: nothing to report
                log.warning(orjson.dumps({"msg": "cannot update APIService status",
                                          "name": name, "error": str(err)}).decode())


def _available(api_service: Obj) -> Obj | None:
    """The APIService's Available condition, if it has one."""
    conditions = (api_service.get("status") or {}).get("conditions") or ()
    return next((c for c in conditions if c.get("type") == "Available"), None)


def _shows(api_service: Obj, condition: Obj) -> bool:
    """Whether its Available condition says `condition` already (time aside)."""
    old = _available(api_service)
    return old is not None and all(old.get(key) == value for key, value in condition.items())
