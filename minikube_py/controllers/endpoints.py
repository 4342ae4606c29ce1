"""The Endpoints controller: which pod addresses back each Service (upstream's endpoint controller).

    service (selector) + its pods --> Endpoints "<service>" with subsets:
        addresses          pods that are Ready (or all, with publishNotReadyAddresses)
        notReadyAddresses  pods that have an IP but are not Ready
        ports              each service port resolved on the pod (a named targetPort is
                           looked up in the pod's container ports)

Pods without an IP, finished pods (Succeeded/Failed) and, unless the Service publishes
not-ready addresses, pods being deleted are left out. Services without a selector are
left alone: their Endpoints are written by hand. When the Service goes, so do its
Endpoints. Upstream: pkg/controller/endpoint/endpoints_controller.go, with the helpers
it shares with the EndpointSlice controller (k8s.io/endpointslice/util), which live here.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.meta import parse_rfc3339, rfc3339
from minikube_py.api.podutil import is_pod_ready, pod_condition
from minikube_py.client.errors import APIStatusError, Forbidden, NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import Indexer, object_key, split_key
from minikube_py.controllers.base import Controller, ControllerContext, ExpectedSyncError

LAST_CHANGE_TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
HEADLESS_SERVICE_LABEL = "service.kubernetes.io/headless"
LEADER_ELECTION_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"
_NO_PORT: tuple[Any, ...] = ()  # RepackSubsets' sentinel: an address offered with no port


# -- helpers shared with the EndpointSlice controller (k8s.io/endpointslice/util) ------------


def has_status_cause(error: APIStatusError, cause_type: str) -> bool:
    """errors.HasStatusCause: the Status names this cause (e.g. NamespaceTerminating)."""
    causes = (error.status.get("details") or {}).get("causes") or []
    return any(cause.get("type") == cause_type for cause in causes)


def service_selects(service: Obj, labels: dict[str, str] | None) -> bool:
    """A Service's selector is a plain label map; no (or an empty) selector selects nothing."""
    selector = (service.get("spec") or {}).get("selector") or {}
    have = labels or {}
    return bool(selector) and all(have.get(key) == value for key, value in selector.items())


def is_service_ip_set(service: Obj) -> bool:
    """helper.IsServiceIPSet: a ClusterIP that is neither empty nor None (headless)."""
    cluster_ip = (service.get("spec") or {}).get("clusterIP", "")
    return cluster_ip not in ("", "None")


def pod_ips(pod: Obj) -> list[str]:
    """status.podIPs, or the single status.podIP of a writer that set only that."""
    status = pod.get("status") or {}
    ips = [entry.get("ip", "") for entry in status.get("podIPs") or [] if entry.get("ip")]
    return ips or ([status["podIP"]] if status.get("podIP") else [])


def should_pod_be_in_endpoints(pod: Obj, include_terminating: bool) -> bool:
    """ShouldPodBeInEndpoints: has an IP, is not finished, and is not being deleted
    (unless terminating pods are wanted)."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    if not pod_ips(pod):
        return False
    return include_terminating or not pod["metadata"].get("deletionTimestamp")


def should_set_hostname(pod: Obj, service: Obj) -> bool:
    """ShouldSetHostname: the pod names a hostname and this Service as its subdomain."""
    spec = pod.get("spec") or {}
    return (bool(spec.get("hostname")) and spec.get("subdomain") == service["metadata"]["name"]
            and pod["metadata"].get("namespace") == service["metadata"].get("namespace"))


def find_port(pod: Obj, service_port: Obj) -> int | None:
    """FindPort: a numeric targetPort as is; a named one looked up in the pod's container
    ports (and those of sidecar init containers) with the same protocol; None if absent."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int):
        return target
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for container in [*(spec.get("containers") or []), *sidecars]:
        for port in container.get("ports") or []:
            if (port.get("name") == target
                    and port.get("protocol", "TCP") == service_port.get("protocol", "TCP")):
                return int(port["containerPort"])
    return None


def pod_reference(pod: Obj) -> Obj:
    """The targetRef of an endpoint: the pod it stands for."""
    meta = pod["metadata"]
    return {"kind": "Pod", "namespace": meta.get("namespace", ""), "name": meta["name"],
            "uid": meta.get("uid", "")}


def services_for_pod(services: Indexer, namespace: str, labels: dict[str, str] | None
                     ) -> set[str]:
    """getServicesForPod: keys of the Services in the namespace whose selector matches."""
    return {object_key(service) for service in services.list(namespace)
            if service_selects(service, labels)}


def services_to_update_on_pod_change(services: Indexer, old: Obj, new: Obj) -> set[str]:
    """GetPodUpdateProjectionKey + GetServicesToUpdate: which Services a pod update touches.

    A change that matters for endpoints (deletion started, readiness, IPs) touches every
    Service the pod belongs to, before or after; a change of labels alone only the
    Services it joined or left.
    """
    old_meta, new_meta = old["metadata"], new["metadata"]
    if old_meta.get("resourceVersion") == new_meta.get("resourceVersion"):
        return set()
    pod_changed = (old_meta.get("deletionTimestamp") != new_meta.get("deletionTimestamp")
                   or is_pod_ready(old) != is_pod_ready(new) or pod_ips(old) != pod_ips(new))
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    labels_changed = (old_meta.get("labels") != new_meta.get("labels")
                      or old_spec.get("hostname") != new_spec.get("hostname")
                      or old_spec.get("subdomain") != new_spec.get("subdomain"))
    namespace = new_meta.get("namespace", "")
    joined = services_for_pod(services, namespace, new_meta.get("labels"))
    if not labels_changed:
        return joined if pod_changed else set()
    left = services_for_pod(services, namespace, old_meta.get("labels"))
    return joined | left if pod_changed else joined ^ left


@dataclass
class _ServiceState:
    service_trigger_time: datetime | None = None
    pod_trigger_times: dict[str, datetime] = field(default_factory=dict)


class TriggerTimeTracker:
    """TriggerTimeTracker: the `last-change-trigger-time` annotation of Endpoints(Slices).

    The annotation says when the change that led to this write happened: the earliest
    pod Ready transition (or Service creation) not seen by the previous sync, or the
    Service's creation time on its first sync. None: nothing new, drop the annotation.
    """

    def __init__(self) -> None:
        self._states: dict[str, _ServiceState] = {}

    def compute(self, service: Obj, pods: list[Obj]) -> datetime | None:
        """ComputeEndpointLastChangeTriggerTime (call once per sync of the Service)."""
        key = object_key(service)
        known = key in self._states
        state = self._states.setdefault(key, _ServiceState())
        changed: list[datetime] = []
        pod_times: dict[str, datetime] = {}
        for pod in pods:
            ready_since = (pod_condition(pod, "Ready") or {}).get("lastTransitionTime")
            if not ready_since:
                continue
            moment = parse_rfc3339(ready_since)
            name = pod["metadata"]["name"]
            pod_times[name] = moment
            previous = state.pod_trigger_times.get(name)
            if previous is None or moment > previous:
                changed.append(moment)
        created = parse_rfc3339(service["metadata"]["creationTimestamp"])
        if state.service_trigger_time is None or created > state.service_trigger_time:
            changed.append(created)
        state.pod_trigger_times = pod_times
        state.service_trigger_time = created
        if not known:
            return created
        return min(changed, default=None)

    def delete_service(self, key: str) -> None:
        self._states.pop(key, None)


def set_trigger_time(obj: Obj, trigger_time: datetime | None) -> None:
    """Write (or, with no new trigger, remove) the last-change-trigger-time annotation."""
    annotations = obj["metadata"].setdefault("annotations", {})
    if trigger_time is not None:
        annotations[LAST_CHANGE_TRIGGER_TIME] = rfc3339(trigger_time)
    else:
        annotations.pop(LAST_CHANGE_TRIGGER_TIME, None)


# -- Endpoints subsets ---------------------------------------------------------------------


def _address_order(address: Obj) -> tuple[str, str]:
    """LessEndpointAddress: by IP, then by the target pod's uid."""
    return address["ip"], (address.get("targetRef") or {}).get("uid", "")


def _port_key(port: Obj) -> tuple[Any, ...]:
    return (port.get("name", ""), port["port"], port.get("protocol", ""),
            port.get("appProtocol", ""))


def repack_subsets(subsets: list[Obj]) -> list[Obj]:
    """RepackSubsets: one subset per group of ports offered by exactly the same addresses.

    Subsets are built one (address, port) at a time; repacking groups ports whose sets of
    (address, ready) are equal, so each address appears once per subset. An address
    that is not ready on any subset of a port is not ready for that port.
    """
    addresses: dict[tuple[str, str], Obj] = {}
    ports: dict[tuple[Any, ...], Obj | None] = {}
    readiness: dict[tuple[Any, ...], dict[tuple[str, str], bool]] = {}
    for subset in subsets:
        for port in subset.get("ports") or [None]:
            key = _port_key(port) if port is not None else _NO_PORT
            ports[key] = port
            ready_by_address = readiness.setdefault(key, {})
            for ready, field_name in ((True, "addresses"), (False, "notReadyAddresses")):
                for address in subset.get(field_name) or []:
                    address_key = _address_order(address)
                    addresses.setdefault(address_key, address)
                    if ready_by_address.get(address_key, True):
                        ready_by_address[address_key] = ready
    groups: dict[frozenset[tuple[tuple[str, str], bool]], list[tuple[Any, ...]]] = {}
    for key, ready_by_address in readiness.items():
        groups.setdefault(frozenset(ready_by_address.items()), []).append(key)
    repacked: list[Obj] = []
    for members, port_keys in groups.items():
        subset: Obj = {}
        ready = sorted((addresses[a] for a, is_ready in members if is_ready), key=_address_order)
        not_ready = sorted((addresses[a] for a, is_ready in members if not is_ready),
                           key=_address_order)
        if ready:
            subset["addresses"] = ready
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        group_ports = [ports[key] for key in sorted(port_keys) if key != _NO_PORT]
        if group_ports:
            subset["ports"] = group_ports
        repacked.append(subset)
    return sorted(repacked, key=lambda s: json.dumps(s.get("ports") or [], sort_keys=True))


def _without_target_versions(subsets: list[Obj]) -> list[Obj]:
    """Subsets with targetRef.resourceVersion dropped: a pod update alone is no change."""
    cleaned = copy.deepcopy(subsets)
    for subset in cleaned:
        for field_name in ("addresses", "notReadyAddresses"):
            for address in subset.get(field_name) or []:
                (address.get("targetRef") or {}).pop("resourceVersion", None)
    return cleaned


def endpoint_address(service: Obj, pod: Obj) -> Obj | None:
    """podToEndpointAddressForService: the pod's IP of the Service's first IP family."""
    spec = service.get("spec") or {}
    families = spec.get("ipFamilies") or []
    if families:
        want_v6 = families[0] == "IPv6"
    elif is_service_ip_set(service):
        want_v6 = ":" in spec.get("clusterIP", "")
    else:
        want_v6 = ":" in (pod.get("status") or {}).get("podIP", "")
    ip = next((ip for ip in pod_ips(pod) if (":" in ip) == want_v6), None)
    if ip is None:
        return None
    address: Obj = {"ip": ip}
    if (pod.get("spec") or {}).get("nodeName"):
        address["nodeName"] = pod["spec"]["nodeName"]
    if should_set_hostname(pod, service):
        address["hostname"] = pod["spec"]["hostname"]
    address["targetRef"] = pod_reference(pod)
    return address


def endpoint_port(service_port: Obj, number: int) -> Obj:
    """endpointPortFromServicePort."""
    port: Obj = {"port": number, "protocol": service_port.get("protocol", "TCP")}
    if service_port.get("name"):
        port["name"] = service_port["name"]
    if service_port.get("appProtocol"):
        port["appProtocol"] = service_port["appProtocol"]
    return port


def desired_subsets(service: Obj, pods: list[Obj]) -> list[Obj]:
    """The subsets a Service's Endpoints should have: one per (address, port), repacked."""
    spec = service.get("spec") or {}
    publish_not_ready = bool(spec.get("publishNotReadyAddresses"))
    subsets: list[Obj] = []
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, publish_not_ready):
            continue
        address = endpoint_address(service, pod)
        if address is None:
            continue
        field_name = ("addresses" if publish_not_ready or is_pod_ready(pod)
                      else "notReadyAddresses")
        service_ports = spec.get("ports") or []
        if not service_ports:
            if spec.get("clusterIP") == "None":  # headless services may have no ports
                subsets.append({field_name: [address]})
            continue
        for service_port in service_ports:
            number = find_port(pod, service_port)
            if number is not None:
                subsets.append({field_name: [address],
                                "ports": [endpoint_port(service_port, number)]})
    return repack_subsets(subsets)


class EndpointsController(Controller):
    """Keep each selector Service's Endpoints equal to its pods' addresses and readiness."""

    name = "endpoint"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.endpoints_api = self.client.resource("endpoints")
        services = self.informer("services")
        pods = self.informer("pods")
        endpoints = self.informer("endpoints")
        self.services = services.store
        self.pods = pods.store
        self.endpoints = endpoints.store
        self.trigger_times = TriggerTimeTracker()
        # Endpoints key -> resourceVersion we replaced (staleEndpointsTracker)
        self.stale_versions: dict[str, str] = {}
        # Endpoints we created that the cache has not shown yet: a sync must not create
        # them again (and fail with AlreadyExists) while the informer catches up
        self.created_unseen: set[str] = set()
        self.watch_own_kind(services)
        pods.add_event_handler(EventHandler(
            on_add=self.add_pod, on_update=self.update_pod, on_delete=self.add_pod))
        endpoints.add_event_handler(EventHandler(
            on_add=lambda obj: self.created_unseen.discard(object_key(obj)),
            on_delete=self.endpoints_deleted))

    def endpoints_deleted(self, endpoints: Obj) -> None:
        """Endpoints deleted by someone else are recreated (if their Service remains)."""
        self.created_unseen.discard(object_key(endpoints))
        self.enqueue(endpoints)

    def add_pod(self, pod: Obj) -> None:
        """A pod appeared or went: sync every Service that selects it."""
        for key in services_for_pod(self.services, pod["metadata"].get("namespace", ""),
                                    pod["metadata"].get("labels")):
            self.queue.add(key)

    def update_pod(self, old: Obj, new: Obj) -> None:
        for key in services_to_update_on_pod_change(self.services, old, new):
            self.queue.add(key)

    async def run(self, workers: int | None = None) -> None:
        """checkLeftoverEndpoints, then the workers: Endpoints whose Service went while
        the controller was down are found and deleted once, at start."""
        for endpoints in self.endpoints.list():
            annotations = endpoints["metadata"].get("annotations") or {}
            if LEADER_ELECTION_ANNOTATION not in annotations:
                self.enqueue(endpoints)
        await super().run(workers)

    async def sync(self, key: str) -> None:
        """syncService: compute the Service's subsets from its pods; write them if changed."""
        namespace, name = split_key(key)
        service = self.services.get(key)
        if service is None:
            try:
                await self.endpoints_api.delete(name, namespace)
            except NotFound:
                pass
            self.trigger_times.delete_service(key)
            self.stale_versions.pop(key, None)
            self.created_unseen.discard(key)
            return
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName" or not spec.get("selector"):
            return
        pods = [pod for pod in self.pods.list(namespace)
                if service_selects(service, pod["metadata"].get("labels"))]
        # A cache behind our own writes is checked first: a retry must still see the
        # trigger times of this change (the tracker remembers what it has reported).
        current = self.endpoints.get(key)
        if current is None and key in self.created_unseen:
            raise ExpectedSyncError(
                f"endpoints informer cache is out of date, endpoints {key} created but not "
                "seen yet")
        if current is not None and self.stale_versions.get(key) == current["metadata"].get(
                "resourceVersion"):
            raise ExpectedSyncError(
                f"endpoints informer cache is out of date, resource version "
                f"{current['metadata']['resourceVersion']} already processed for endpoints "
                f"{key}")
        trigger_time = self.trigger_times.compute(service, pods)
        subsets = desired_subsets(service, pods)
        service_labels = service["metadata"].get("labels") or {}
        if current is not None:
            current_labels = dict(current["metadata"].get("labels") or {})
            current_labels.pop(HEADLESS_SERVICE_LABEL, None)
            if (_without_target_versions(current.get("subsets") or []) == subsets
                    and current_labels == service_labels):
                return
        await self._write(service, current, subsets, trigger_time)

    async def _write(self, service: Obj, current: Obj | None, subsets: list[Obj],
                     trigger_time: datetime | None) -> None:
        meta = service["metadata"]
        if current is None:
            endpoints: Obj = {"apiVersion": "v1", "kind": "Endpoints",
                              "metadata": {"name": meta["name"], "namespace": meta["namespace"]}}
        else:
            endpoints = copy.deepcopy(current)
        labels = dict(meta.get("labels") or {})
        if is_service_ip_set(service):
            labels.pop(HEADLESS_SERVICE_LABEL, None)
        else:
            labels[HEADLESS_SERVICE_LABEL] = ""
        endpoints["metadata"]["labels"] = labels
        set_trigger_time(endpoints, trigger_time)
        if subsets:
            endpoints["subsets"] = subsets
        else:
            endpoints.pop("subsets", None)
        try:
            if current is None:
                await self.endpoints_api.create(endpoints)
                self.created_unseen.add(object_key(endpoints))
            else:
                updated = await self.endpoints_api.update(endpoints)
                old_version = current["metadata"].get("resourceVersion", "")
                if updated["metadata"].get("resourceVersion") != old_version:
                    self.stale_versions[object_key(current)] = old_version
        except APIStatusError as error:
            if (current is None and isinstance(error, Forbidden)
                    and has_status_cause(error, NAMESPACE_TERMINATING_CAUSE)):
                return  # the namespace is going away; creates will keep failing
            if current is None:
                self.recorder.event(
                    endpoints, "Warning", "FailedToCreateEndpoint",
                    f"Failed to create endpoint for service {meta['namespace']}/{meta['name']}: "
                    f"{error}")
            else:
                self.recorder.event(
                    endpoints, "Warning", "FailedToUpdateEndpoint",
                    f"Failed to update endpoint {meta['namespace']}/{meta['name']}: {error}")
            raise ExpectedSyncError(str(error)) from error
