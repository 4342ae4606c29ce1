"""`describe service` (describe.go: describeService, formatEndpointSlices).

    Name, Namespace, Labels, Annotations, Selector, Type, IP Family Policy, IP Families,
    IP, IPs, External IPs, LoadBalancer Ingress
    per port: Port, TargetPort, NodePort, Endpoints (from the service's EndpointSlices)
    Session Affinity, traffic policies, Events
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    describe_events,
    print_annotations_multiline,
    print_labels_multiline,
    search_events,
)
from minikube_py.mkctl.describers.writer import LEVEL_0, LEVEL_1, LEVEL_2, PrefixWriter
from minikube_py.mkctl.errors import MkctlError

MAX_ENDPOINTS = 3


def service_describer(service: Obj, lookups: Lookups, settings: Settings) -> str:
    """ServiceDescriber: the service, its EndpointSlices (by the service-name label) and
    its events."""
    meta = service.get("metadata") or {}
    namespace, name = meta.get("namespace", ""), meta.get("name", "")
    try:
        slices = lookups.list(
            f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
            {"labelSelector": f"kubernetes.io/service-name={name}"})
    except MkctlError:
        slices = []
    events = search_events(lookups, namespace, name, "Service", meta.get("uid", ""), settings)
    return describe_service(service, slices, events)


def format_labels(labels: dict[str, str] | None) -> str:
    """labels.FormatLabels: "a=1,b=2", sorted; "<none>" for none."""
    if not labels:
        return "<none>"
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def _ingress(ingress: list[Obj]) -> str:
    """buildIngressString."""
    shown = []
    for point in ingress:
        if point.get("ip"):
            shown.append(point["ip"] + (f" ({point['ipMode']})" if point.get("ipMode") else ""))
        else:
            shown.append(point.get("hostname", ""))
    return ", ".join(shown)


def _host_port(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def format_endpoint_slices(slices: list[Obj], port_name: str | None) -> str:
    """formatEndpointSlices: the first three ready endpoints (address:port of the named
    port), then "+ N more..."."""
    if not slices:
        return "<none>"
    shown: list[str] = []
    more = False
    count = 0

    def add(endpoint: Obj, text: str) -> None:
        nonlocal more, count
        if len(shown) == MAX_ENDPOINTS:
            more = True
        if (endpoint.get("conditions") or {}).get("ready") is False:
            return
        if not more:
            shown.append(text)
        count += 1

    for endpoint_slice in slices:
        endpoints = endpoint_slice.get("endpoints") or []
        ports = endpoint_slice.get("ports") or []
        if not ports:
            for endpoint in endpoints:
                add(endpoint, (endpoint.get("addresses") or [""])[0])
            continue
        for port in ports:
            if port_name is not None and port.get("name", "") != port_name:
                continue
            for endpoint in endpoints:
                add(endpoint, _host_port((endpoint.get("addresses") or [""])[0],
                                         port.get("port", 0)))
    text = ",".join(shown)
    return f"{text} + {count - MAX_ENDPOINTS} more..." if more else text


def describe_service(service: Obj, slices: list[Obj], events: list[Obj] | None) -> str:
    """describeService."""
    meta, spec = service.get("metadata") or {}, service.get("spec") or {}
    status = service.get("status") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    w.write(LEVEL_0, f"Selector:\t{format_labels(spec.get('selector'))}\n")
    w.write(LEVEL_0, f"Type:\t{spec.get('type', '')}\n")
    if spec.get("ipFamilyPolicy") is not None:
        w.write(LEVEL_0, f"IP Family Policy:\t{spec['ipFamilyPolicy']}\n")
    w.write(LEVEL_0, f"IP Families:\t{','.join(spec.get('ipFamilies') or []) or '<none>'}\n")
    w.write(LEVEL_0, f"IP:\t{spec.get('clusterIP', '')}\n")
    w.write(LEVEL_0, f"IPs:\t{','.join(spec.get('clusterIPs') or []) or '<none>'}\n")
    if spec.get("externalIPs"):
        w.write(LEVEL_0, f"External IPs:\t{','.join(spec['externalIPs'])}\n")
    if spec.get("loadBalancerIP"):
        w.write(LEVEL_0, f"Desired LoadBalancer IP:\t{spec['loadBalancerIP']}\n")
    if spec.get("externalName"):
        w.write(LEVEL_0, f"External Name:\t{spec['externalName']}\n")
    ingress = (status.get("loadBalancer") or {}).get("ingress") or []
    if ingress:
        w.write(LEVEL_0, f"LoadBalancer Ingress:\t{_ingress(ingress)}\n")
    for port in spec.get("ports") or []:
        name = port.get("name") or "<unset>"
        protocol = port.get("protocol", "")
        w.write(LEVEL_0, f"Port:\t{name}\t{port.get('port', 0)}/{protocol}\n")
        w.write(LEVEL_0, f"TargetPort:\t{port.get('targetPort', 0)}/{protocol}\n")
        if port.get("appProtocol") is not None:
            w.write(LEVEL_0, f"AppProtocol:\t{port['appProtocol']}\n")
        if port.get("nodePort"):
            w.write(LEVEL_0, f"NodePort:\t{name}\t{port['nodePort']}/{protocol}\n")
        w.write(LEVEL_0, "Endpoints:\t"
                         f"{format_endpoint_slices(slices, port.get('name', ''))}\n")
    w.write(LEVEL_0, f"Session Affinity:\t{spec.get('sessionAffinity', '')}\n")
    if spec.get("externalTrafficPolicy"):
        w.write(LEVEL_0, f"External Traffic Policy:\t{spec['externalTrafficPolicy']}\n")
    if spec.get("internalTrafficPolicy") is not None:
        w.write(LEVEL_0, f"Internal Traffic Policy:\t{spec['internalTrafficPolicy']}\n")
    if spec.get("healthCheckNodePort"):
        w.write(LEVEL_0, f"HealthCheck NodePort:\t{spec['healthCheckNodePort']}\n")
    if spec.get("loadBalancerSourceRanges"):
        w.write(LEVEL_0, "LoadBalancer Source Ranges:\t"
                         f"{','.join(spec['loadBalancerSourceRanges'])}\n")
    if spec.get("trafficDistribution") is not None:
        w.write(LEVEL_0, f"Traffic Distribution:\t{spec['trafficDistribution']}\n")
    describe_events(events, w)
    return w.tabbed()


def endpoints_describer(endpoints: Obj, lookups: Lookups, settings: Settings) -> str:
    """EndpointsDescriber + describeEndpoints: each subset's ready and not-ready
    addresses and its ports."""
    meta = endpoints.get("metadata") or {}
    events = search_events(lookups, meta.get("namespace", ""), meta.get("name", ""),
                           "Endpoints", meta.get("uid", ""), settings)
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    w.write(LEVEL_0, "Subsets:\n")
    for subset in endpoints.get("subsets") or []:
        for title, field in (("Addresses", "addresses"),
                             ("NotReadyAddresses", "notReadyAddresses")):
            ips = ",".join(address.get("ip", "") for address in subset.get(field) or [])
            w.write(LEVEL_1, f"{title}:\t{ips or '<none>'}\n")
        if subset.get("ports"):
            w.write(LEVEL_1, "Ports:\n")
            w.write(LEVEL_2, "Name\tPort\tProtocol\n")
            w.write(LEVEL_2, "----\t----\t--------\n")
            for port in subset["ports"]:
                w.write(LEVEL_2, f"{port.get('name') or '<unset>'}\t{port.get('port', 0)}\t"
                                 f"{port.get('protocol', '')}\n")
        w.write(LEVEL_0, "\n")
    describe_events(events, w)
    return w.tabbed()
