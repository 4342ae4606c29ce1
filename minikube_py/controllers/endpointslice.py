"""The EndpointSlice controller: a Service's endpoints cut into slices of at most 100.

    service (selector) + its pods --> EndpointSlices labelled kubernetes.io/service-name,
    owned by the Service, one group of slices per distinct set of resolved ports:

        endpoints: [{addresses: [podIP], conditions: {ready, serving, terminating},
                     nodeName, zone, targetRef: the pod}]

Unlike Endpoints, slices also list terminating pods (ready false, serving = their
readiness, terminating true), so proxies can drain them. Each sync compares the desired
endpoints with the existing slices and changes as few slices as it can: it updates slices
that lost or changed endpoints, fills them up, then fills the fullest unchanged slice that
fits, and creates new slices only for the rest. A Service with no endpoints keeps one empty
placeholder slice. Slices go with their Service through the garbage collector (the owner
reference). Upstream: pkg/controller/endpointslice and k8s.io/endpointslice/reconciler.go.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.podutil import is_pod_ready
from minikube_py.client.errors import APIStatusError, NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import object_key, split_key
from minikube_py.controllers.base import Controller, ControllerContext, ExpectedSyncError
from minikube_py.controllers.controller_ref import owner_reference
from minikube_py.controllers.endpoints import (
    HEADLESS_SERVICE_LABEL,
    NAMESPACE_TERMINATING_CAUSE,
    TriggerTimeTracker,
    find_port,
    has_status_cause,
    is_service_ip_set,
    pod_ips,
    pod_reference,
    service_selects,
    services_for_pod,
    services_to_update_on_pod_change,
    set_trigger_time,
    should_pod_be_in_endpoints,
    should_set_hostname,
)

PortMapKey = tuple[str, ...]
EndpointKey = tuple[Any, ...]

MAX_ENDPOINTS_PER_SLICE = 100  # --max-endpoints-per-slice default
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
ZONE_LABEL = "topology.kubernetes.io/zone"
# A slice change is synced a little later, so that changes to many slices batch up.
ENDPOINT_SLICE_CHANGE_MIN_SYNC_DELAY = 1.0
_DELETION_EXPECTED = -1
_RESERVED_LABELS = (SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_SERVICE_LABEL)


class StaleInformerCache(ExpectedSyncError):
    """The slice cache has not caught up with the controller's own writes yet; retry."""


def _service_key_of_slice(endpoint_slice: Obj) -> str | None:
    name = (endpoint_slice["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL)
    return f"{endpoint_slice['metadata'].get('namespace', '')}/{name}" if name else None


def _generation(endpoint_slice: Obj) -> int:
    return int(endpoint_slice["metadata"].get("generation") or 0)


class EndpointSliceTracker:
    """EndpointSliceTracker: the generation of every slice this controller wrote, per
    Service, so a sync can tell a cache that lags behind its own writes (and would make
    it create a slice twice) from a slice someone else changed."""

    def __init__(self) -> None:
        self._generations: dict[str, dict[str, int]] = {}
        self._service_uids: dict[str, str] = {}

    def _of(self, endpoint_slice: Obj) -> dict[str, int] | None:
        return self._generations.get(_service_key_of_slice(endpoint_slice) or "")

    def has(self, endpoint_slice: Obj) -> bool:
        generations = self._of(endpoint_slice)
        return generations is not None and endpoint_slice["metadata"]["uid"] in generations

    def should_sync(self, endpoint_slice: Obj) -> bool:
        """True unless this is (at most) the generation we wrote ourselves."""
        generations = self._of(endpoint_slice) or {}
        tracked = generations.get(endpoint_slice["metadata"]["uid"])
        return tracked is None or _generation(endpoint_slice) > tracked

    def stale_slices(self, service: Obj, slices: list[Obj]) -> bool:
        """StaleSlices: a cached slice is older than what we wrote, one we deleted is still
        there, or one we wrote is missing. Tracking restarts when the Service's uid changes."""
        key = object_key(service)
        uid = service["metadata"].get("uid", "")
        if self._service_uids.get(key, uid) != uid:
            self._generations.pop(key, None)
        self._service_uids[key] = uid
        generations = self._generations.get(key)
        if generations is None:
            return False
        provided = {s["metadata"]["uid"] for s in slices}
        for endpoint_slice in slices:
            tracked = generations.get(endpoint_slice["metadata"]["uid"])
            if tracked is not None and (tracked == _DELETION_EXPECTED
                                        or tracked > _generation(endpoint_slice)):
                return True
        return any(generation != _DELETION_EXPECTED and slice_uid not in provided
                   for slice_uid, generation in generations.items())

    def update(self, endpoint_slice: Obj) -> None:
        key = _service_key_of_slice(endpoint_slice) or ""
        self._generations.setdefault(key, {})[endpoint_slice["metadata"]["uid"]] = _generation(
            endpoint_slice)

    def expect_deletion(self, endpoint_slice: Obj) -> None:
        key = _service_key_of_slice(endpoint_slice) or ""
        self._generations.setdefault(key, {})[endpoint_slice["metadata"]["uid"]] = (
            _DELETION_EXPECTED)

    def handle_deletion(self, endpoint_slice: Obj) -> bool:
        """Forget a deleted slice; True if we expected the deletion (we made it)."""
        generations = self._of(endpoint_slice)
        if generations is None:
            return True
        tracked = generations.pop(endpoint_slice["metadata"]["uid"], None)
        return tracked is None or tracked == _DELETION_EXPECTED

    def delete_service(self, key: str) -> None:
        self._generations.pop(key, None)
        self._service_uids.pop(key, None)


# -- building slices -----------------------------------------------------------------------


def address_types(service: Obj) -> list[str]:
    """getAddressTypesForService: from spec.ipFamilies (else from the ClusterIP's family)."""
    spec = service.get("spec") or {}
    families = spec.get("ipFamilies") or []
    if families:
        return [family for family in ("IPv4", "IPv6") if family in families]
    if is_service_ip_set(service):
        return ["IPv6" if ":" in spec.get("clusterIP", "") else "IPv4"]
    return ["IPv4", "IPv6"]


def endpoint_ports(service: Obj, pod: Obj) -> list[Obj]:
    """getEndpointPorts: every service port whose targetPort the pod offers."""
    ports: list[Obj] = []
    for service_port in (service.get("spec") or {}).get("ports") or []:
        number = find_port(pod, service_port)
        if number is None:
            continue
        port: Obj = {"name": service_port.get("name", ""), "port": number,
                     "protocol": service_port.get("protocol", "TCP")}
        if service_port.get("appProtocol"):
            port["appProtocol"] = service_port["appProtocol"]
        ports.append(port)
    return ports


def unmatched_target_ports(service: Obj, pods: list[Obj]) -> list[str]:
    """For each service port whose named targetPort some selected pods do not declare, a
    sentence naming them: those pods get no endpoint on that port, so the proxy has none to
    send it to (upstream only logs this at -v=4; a Warning Event shows it in describe)."""
    problems = []
    for service_port in (service.get("spec") or {}).get("ports") or []:
        target = service_port.get("targetPort")
        if not isinstance(target, str):
            continue
        missing = sorted(pod["metadata"]["name"] for pod in pods
                         if should_pod_be_in_endpoints(pod, include_terminating=True)
                         and find_port(pod, service_port) is None)
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more"
                                              if len(missing) > 3 else "")
            label = service_port.get("name") or service_port.get("port")
            problems.append(f'Service port {label} targets the port named "{target}", which '
                            f"no container of pod {shown} declares: no endpoint on that port")
    return problems


def port_map_key(ports: list[Obj]) -> PortMapKey:
    """NewPortMapKey: the same set of ports in any order gives the same key."""
    return tuple(sorted(json.dumps(port, sort_keys=True) for port in ports))


def pod_to_endpoint(pod: Obj, node: Obj | None, service: Obj, address_type: str) -> Obj:
    """podToEndpoint: a pod as one endpoint of a slice of `address_type`."""
    serving = is_pod_ready(pod)
    terminating = bool(pod["metadata"].get("deletionTimestamp"))
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    want_v6 = address_type == "IPv6"
    endpoint: Obj = {
        "addresses": [ip for ip in pod_ips(pod) if (":" in ip) == want_v6],
        # a terminating pod is never "ready", unless the Service publishes everything
        "conditions": {"ready": publish or (serving and not terminating), "serving": serving,
                       "terminating": terminating},
    }
    if should_set_hostname(pod, service):
        endpoint["hostname"] = pod["spec"]["hostname"]
    endpoint["targetRef"] = pod_reference(pod)
    if (pod.get("spec") or {}).get("nodeName"):
        endpoint["nodeName"] = pod["spec"]["nodeName"]
    zone = (((node or {}).get("metadata") or {}).get("labels") or {}).get(ZONE_LABEL)
    if zone:
        endpoint["zone"] = zone
    return endpoint


def endpoint_key(endpoint: Obj) -> EndpointKey:
    """hashEndpoint: addresses, hostname and the target pod identify an endpoint."""
    target = endpoint.get("targetRef") or {}
    return (tuple(sorted(endpoint.get("addresses") or [])), endpoint.get("hostname", ""),
            target.get("namespace", ""), target.get("name", ""))


def endpoints_equal_beyond_hash(a: Obj, b: Obj) -> bool:
    """EndpointsEqualBeyondHash: same node, zone, conditions and target (any version)."""
    def target(endpoint: Obj) -> Obj:
        return {k: v for k, v in (endpoint.get("targetRef") or {}).items()
                if k != "resourceVersion"}
    return (a.get("nodeName") == b.get("nodeName") and a.get("zone") == b.get("zone")
            and (a.get("conditions") or {}) == (b.get("conditions") or {})
            and target(a) == target(b))


def slice_labels(endpoint_slice: Obj, service: Obj) -> tuple[dict[str, str], bool]:
    """setEndpointSliceLabels: the Service's labels plus the reserved ones, and whether the
    slice's own (non-reserved) labels differ from the Service's."""
    def unreserved(labels: dict[str, str] | None) -> dict[str, str]:
        return {k: v for k, v in (labels or {}).items() if k not in _RESERVED_LABELS}
    have = unreserved(endpoint_slice["metadata"].get("labels"))
    labels = unreserved(service["metadata"].get("labels"))
    changed = have != labels
    if not is_service_ip_set(service):
        labels[HEADLESS_SERVICE_LABEL] = ""
    labels[SERVICE_NAME_LABEL] = service["metadata"]["name"]
    labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
    return labels, changed


def new_endpoint_slice(service: Obj, ports: list[Obj], address_type: str) -> Obj:
    """newEndpointSlice: an empty slice owned by the Service, named `<service>-xxxxx`."""
    meta = service["metadata"]
    endpoint_slice: Obj = {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"generateName": f"{meta['name']}-", "namespace": meta["namespace"],
                     "labels": {},
                     "ownerReferences": [owner_reference(
                         {"apiVersion": "v1", "kind": "Service", "metadata": meta})]},
        "addressType": address_type, "endpoints": [], "ports": copy.deepcopy(ports),
    }
    endpoint_slice["metadata"]["labels"], _ = slice_labels(endpoint_slice, service)
    return endpoint_slice


def owned_by(endpoint_slice: Obj, service: Obj) -> bool:
    return any(ref.get("uid") == service["metadata"].get("uid") and ref.get("kind") == "Service"
               and ref.get("apiVersion") == "v1"
               for ref in endpoint_slice["metadata"].get("ownerReferences") or [])


def _is_placeholder(endpoint_slice: Obj, placeholder: Obj) -> bool:
    """placeholderSliceCompare: the existing slice is the empty slice we would create."""
    return (endpoint_slice["metadata"].get("labels") == placeholder["metadata"]["labels"]
            and endpoint_slice["metadata"].get("ownerReferences")
            == placeholder["metadata"]["ownerReferences"]
            and endpoint_slice.get("addressType") == placeholder["addressType"]
            and not endpoint_slice.get("endpoints") and not endpoint_slice.get("ports"))


def _slice_to_fill(slices: list[Obj], count: int) -> Obj | None:
    """getSliceToFill: the slice that will be closest to full once `count` endpoints join."""
    best, best_room = None, MAX_ENDPOINTS_PER_SLICE
    for endpoint_slice in slices:
        room = MAX_ENDPOINTS_PER_SLICE - (count + len(endpoint_slice.get("endpoints") or []))
        if 0 <= room < best_room:
            best, best_room = endpoint_slice, room
            if room == 0:
                break
    return best


def _pop_endpoints(desired: dict[EndpointKey, Obj], room: int) -> list[Obj]:
    """Take up to `room` endpoints out of the desired set (in a stable order)."""
    return [desired.pop(key) for key in sorted(desired)[:max(room, 0)]]


@dataclass
class SliceChanges:
    """What one sync writes: slices to create, update and delete."""

    create: list[Obj] = field(default_factory=list)
    update: list[Obj] = field(default_factory=list)
    delete: list[Obj] = field(default_factory=list)

    def extend(self, other: SliceChanges) -> None:
        self.create += other.create
        self.update += other.update
        self.delete += other.delete


def reconcile_port_mapping(service: Obj, existing: list[Obj], desired: dict[EndpointKey, Obj],
                           ports: list[Obj], address_type: str) -> SliceChanges:
    """reconcileByPortMapping: the slices of one set of ports, changed as little as possible.

    1. drop endpoints no longer desired from existing slices, refresh changed ones;
    2. fill the slices being updated anyway with the endpoints still to place;
    3. put the rest into the unchanged slice they fit best, else into new slices.
    """
    by_name: dict[str, Obj] = {}
    unchanged: list[str] = []
    to_update: list[str] = []
    to_delete: list[str] = []
    for endpoint_slice in existing:
        name = endpoint_slice["metadata"]["name"]
        by_name[name] = endpoint_slice
        kept: list[Obj] = []
        endpoint_changed = False
        for endpoint in endpoint_slice.get("endpoints") or []:
            wanted = desired.pop(endpoint_key(endpoint), None)
            if wanted is not None:
                kept.append(wanted)
                endpoint_changed |= not endpoints_equal_beyond_hash(wanted, endpoint)
        labels, labels_changed = slice_labels(endpoint_slice, service)
        if endpoint_changed or len(kept) != len(endpoint_slice.get("endpoints") or []):
            if not kept:
                to_delete.append(name)
                continue
            changed = copy.deepcopy(endpoint_slice)
            changed["endpoints"] = kept
        elif labels_changed:
            changed = copy.deepcopy(endpoint_slice)
        else:
            unchanged.append(name)
            continue
        changed["metadata"]["labels"] = labels
        by_name[name] = changed
        to_update.append(name)

    for name in sorted(to_update, key=lambda n: -len(by_name[n]["endpoints"])):
        endpoint_slice = by_name[name]
        endpoint_slice["endpoints"] += _pop_endpoints(
            desired, MAX_ENDPOINTS_PER_SLICE - len(endpoint_slice["endpoints"]))

    changes = SliceChanges()
    while desired:
        target = None
        if len(desired) < MAX_ENDPOINTS_PER_SLICE and unchanged:
            target = _slice_to_fill([by_name[n] for n in unchanged], len(desired))
        if target is None:
            target = new_endpoint_slice(service, ports, address_type)
        else:
            target = copy.deepcopy(target)
            by_name[target["metadata"]["name"]] = target
        target["endpoints"] = list(target.get("endpoints") or [])
        target["endpoints"] += _pop_endpoints(
            desired, MAX_ENDPOINTS_PER_SLICE - len(target["endpoints"]))
        name = target["metadata"].get("name")
        if name:
            unchanged.remove(name)
            to_update.append(name)
        else:
            changes.create.append(target)
    changes.update = [by_name[name] for name in to_update]
    changes.delete = [by_name[name] for name in to_delete]
    return changes


def _aggregate(errors: list[str]) -> str:
    """utilerrors.NewAggregate's message: one error as is, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


class EndpointSliceController(Controller):
    """Keep each selector Service's EndpointSlices equal to its pods' endpoints."""

    name = "endpointslice"
    event_source = "endpoint-slice-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.slices_api = self.client.resource("endpointslices", "discovery.k8s.io")
        services = self.informer("services")
        pods = self.informer("pods")
        slices = self.informer("endpointslices", "discovery.k8s.io")
        self.services = services.store
        self.pods = pods.store
        self.slices = slices.store
        self.nodes = self.informer("nodes").store
        self.tracker = EndpointSliceTracker()
        self.trigger_times = TriggerTimeTracker()
        self.watch_own_kind(services)
        pods.add_event_handler(EventHandler(
            on_add=self.add_pod, on_update=self.update_pod, on_delete=self.add_pod))
        slices.add_event_handler(EventHandler(
            on_add=self.add_slice, on_update=self.update_slice, on_delete=self.delete_slice))

    # -- informer handlers -------------------------------------------------------------------

    def add_pod(self, pod: Obj) -> None:
        for key in services_for_pod(self.services, pod["metadata"].get("namespace", ""),
                                    pod["metadata"].get("labels")):
            self.enqueue_caused_by(key, pod)

    def update_pod(self, old: Obj, new: Obj) -> None:
        for key in services_to_update_on_pod_change(self.services, old, new):
            self.enqueue_caused_by(key, new)

    def _queue_service_of(self, endpoint_slice: Obj) -> None:
        key = _service_key_of_slice(endpoint_slice)
        if key is not None:
            self.queue.add_after(key, ENDPOINT_SLICE_CHANGE_MIN_SYNC_DELAY)

    @staticmethod
    def managed_by_us(endpoint_slice: Obj) -> bool:
        labels = endpoint_slice["metadata"].get("labels") or {}
        return labels.get(MANAGED_BY_LABEL) == CONTROLLER_NAME

    def add_slice(self, endpoint_slice: Obj) -> None:
        """A slice we did not just write ourselves: resync its Service."""
        if self.managed_by_us(endpoint_slice) and self.tracker.should_sync(endpoint_slice):
            self._queue_service_of(endpoint_slice)

    def update_slice(self, old: Obj, new: Obj) -> None:
        old_service = (old["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL)
        new_service = (new["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL)
        if old_service != new_service:
            self._queue_service_of(new)
            self._queue_service_of(old)
        elif (self.managed_by_us(old) != self.managed_by_us(new)
              or (self.managed_by_us(new) and self.tracker.should_sync(new))):
            self._queue_service_of(new)

    def delete_slice(self, endpoint_slice: Obj) -> None:
        """A slice someone else deleted is recreated by a resync of its Service."""
        if (self.managed_by_us(endpoint_slice) and self.tracker.has(endpoint_slice)
                and not self.tracker.handle_deletion(endpoint_slice)):
            self._queue_service_of(endpoint_slice)

    # -- sync ------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """syncService: reconcile the Service's slices with its pods."""
        namespace, name = split_key(key)
        service = self.services.get(key)
        if service is None:
            self.tracker.delete_service(key)
            self.trigger_times.delete_service(key)
            return
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName" or not spec.get("selector"):
            return
        pods = [pod for pod in self.pods.list(namespace)
                if service_selects(service, pod["metadata"].get("labels"))]
        slices = [s for s in self.slices.list(namespace)
                  if (s["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL) == name
                  and self.managed_by_us(s) and not s["metadata"].get("deletionTimestamp")]
        if self.tracker.stale_slices(service, slices):
            raise StaleInformerCache("EndpointSlice informer cache is out of date")
        for problem in unmatched_target_ports(service, pods):
            self.recorder.event(service, "Warning", "TargetPortNotFound", problem)
        trigger_time = self.trigger_times.compute(service, pods)
        errors = await self.reconcile(service, pods, slices, trigger_time)
        if errors:
            message = _aggregate(errors)
            self.recorder.event(service, "Warning", "FailedToUpdateEndpointSlices",
                                f"Error updating Endpoint Slices for Service {key}: {message}")
            raise ExpectedSyncError(message)

    async def reconcile(self, service: Obj, pods: list[Obj], existing: list[Obj],
                        trigger_time: datetime | None) -> list[str]:
        """Reconcile: per address type of the Service, plan the slice changes and write them.
        Returns the errors met (pods skipped, writes that failed)."""
        errors: list[str] = []
        changes = SliceChanges()
        types = address_types(service)
        changes.delete += [s for s in existing if s.get("addressType") not in types]
        for address_type in types:
            of_type = [s for s in existing if s.get("addressType") == address_type]
            changes.extend(self._plan(service, pods, of_type, address_type, errors))
        failure = await self._finalize(service, changes, trigger_time)
        if failure:
            errors.append(failure)
        return errors

    def _plan(self, service: Obj, pods: list[Obj], existing: list[Obj], address_type: str,
              errors: list[str]) -> SliceChanges:
        """reconcileByAddressType: desired endpoints grouped by their resolved ports."""
        meta = service["metadata"]
        publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
        changes = SliceChanges()
        existing_by_ports: dict[PortMapKey, list[Obj]] = {}
        for endpoint_slice in existing:
            if owned_by(endpoint_slice, service):
                key = port_map_key(endpoint_slice.get("ports") or [])
                existing_by_ports.setdefault(key, []).append(endpoint_slice)
            else:
                changes.delete.append(endpoint_slice)
        desired: dict[PortMapKey, dict[EndpointKey, Obj]] = {}
        desired_ports: dict[PortMapKey, list[Obj]] = {}
        for pod in pods:
            if not should_pod_be_in_endpoints(pod, include_terminating=True):
                continue
            ports = endpoint_ports(service, pod)
            key = port_map_key(ports)
            endpoints = desired.setdefault(key, {})
            desired_ports.setdefault(key, ports)
            node_name = (pod.get("spec") or {}).get("nodeName", "")
            node = self.nodes.get(node_name) if node_name else None
            if node is None and not publish:
                errors.append(f"skipping Pod {pod['metadata']['name']} for Service "
                              f"{meta['namespace']}/{meta['name']}: Node {node_name} Not Found")
                continue
            endpoint = pod_to_endpoint(pod, node, service, address_type)
            if endpoint["addresses"]:
                endpoints[endpoint_key(endpoint)] = endpoint
        for key, endpoints in desired.items():
            changes.extend(reconcile_port_mapping(
                service, existing_by_ports.get(key) or [], endpoints, desired_ports[key],
                address_type))
        for key, leftover in existing_by_ports.items():
            if key not in desired:
                changes.delete += leftover
        if len(existing) == len(changes.delete) and not changes.create:
            placeholder = new_endpoint_slice(service, [], address_type)
            if len(changes.delete) == 1 and _is_placeholder(changes.delete[0], placeholder):
                changes.delete = []
            else:
                changes.create.append(placeholder)
        return changes

    async def _finalize(self, service: Obj, changes: SliceChanges,
                        trigger_time: datetime | None) -> str | None:
        """finalize: write the changes (creates become updates of slices to delete);
        returns what failed, if anything."""
        meta = service["metadata"]
        where = f"Service {meta['namespace']}/{meta['name']}"
        for victim in list(changes.delete):
            if not changes.create:
                break
            if (victim.get("addressType") == changes.create[-1]["addressType"]
                    and owned_by(victim, service)):
                reused = changes.create.pop()
                reused["metadata"]["name"] = victim["metadata"]["name"]
                changes.update.append(reused)
                changes.delete.remove(victim)
        # No new slices for a Service being deleted: the garbage collector is removing them.
        for endpoint_slice in changes.create if not meta.get("deletionTimestamp") else []:
            set_trigger_time(endpoint_slice, trigger_time)
            try:
                self.tracker.update(await self.slices_api.create(endpoint_slice))
            except APIStatusError as error:
                if has_status_cause(error, NAMESPACE_TERMINATING_CAUSE):
                    return None  # the namespace is going away; creates will keep failing
                return f"failed to create EndpointSlice for {where}: {error}"
        for endpoint_slice in changes.update:
            set_trigger_time(endpoint_slice, trigger_time)
            slice_name = endpoint_slice["metadata"]["name"]
            try:
                self.tracker.update(await self.slices_api.update(endpoint_slice))
            except APIStatusError as error:
                return f"failed to update {slice_name} EndpointSlice for {where}: {error}"
        for endpoint_slice in changes.delete:
            slice_name = endpoint_slice["metadata"]["name"]
            try:
                await self.slices_api.delete(slice_name, meta["namespace"])
            except NotFound:
                continue
            except APIStatusError as error:
                return f"failed to delete {slice_name} EndpointSlice for {where}: {error}"
            self.tracker.expect_deletion(endpoint_slice)
        return None
