"""core/v1 services and endpoints, discovery.k8s.io/v1 endpoint slices."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.apiserver.endpoints.tables.cells import (
    NONE,
    UNKNOWN,
    UNSET,
    age,
    format_labels,
    name_of,
)
from minikube_py.apiserver.endpoints.tables.table import AGE, NAME, Cells, column, selector_column

SERVICE_COLUMNS = (
    NAME,
    column("Type", "string", "type determines how the Service is exposed."),
    column("Cluster-IP", "string", "clusterIP is the IP address of the service."),
    column(
        "External-IP",
        "string",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also "
        "accept traffic for this service.",
    ),
    column("Port(s)", "string", "The list of ports that are exposed by this service."),
    AGE,
    selector_column(
        "Route service traffic to pods with label keys and values matching this selector."
    ),
)


def service_external_ip(service: Obj) -> str:
    """getServiceExternalIP: external IPs, load-balancer ingress, or "<pending>"."""
    spec = service.get("spec") or {}
    external_ips = spec.get("externalIPs") or []
    service_type = spec.get("type", "ClusterIP")
    if service_type in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) or NONE
    if service_type == "LoadBalancer":
        ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        addresses = {entry.get("ip") or entry.get("hostname") or "" for entry in ingress}
        lb_ips = sorted(addresses - {""})
        if external_ips:
            return ",".join(lb_ips + external_ips)
        return ",".join(lb_ips) or "<pending>"
    if service_type == "ExternalName":
        return spec.get("externalName", "")
    return UNKNOWN


def service_ports(ports: list[Obj]) -> str:
    """makePortString: "80/TCP", or "80:30080/TCP" with a node port."""
    pieces: list[str] = []
    for port in ports:
        protocol = port.get("protocol", "TCP")
        if port.get("nodePort"):
            pieces.append(f"{port.get('port', 0)}:{port['nodePort']}/{protocol}")
        else:
            pieces.append(f"{port.get('port', 0)}/{protocol}")
    return ",".join(pieces)


def print_service(service: Obj, now: datetime) -> Cells:
    """printService: type, first cluster IP, external IP, ports, age; wide: selector."""
    spec = service.get("spec") or {}
    cluster_ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return [
        name_of(service),
        spec.get("type", "ClusterIP"),
        cluster_ips[0] if cluster_ips else NONE,
        service_external_ip(service),
        service_ports(spec.get("ports") or []) or NONE,
        age(service, now),
        format_labels(spec.get("selector")),
    ]


ENDPOINTS_COLUMNS = (
    NAME,
    column("Endpoints", "string", "The set of all endpoints is the union of all subsets."),
    AGE,
)


def join_host_port(host: str, port: int) -> str:
    """net.JoinHostPort: IPv6 addresses go in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def format_endpoints(endpoints: Obj) -> str:
    """formatEndpoints: up to three "ip:port" entries, then " + N more..."."""
    subsets = endpoints.get("subsets") or []
    if not subsets:
        return NONE
    entries: list[str] = []
    count = 0
    for subset in subsets:
        addresses = [address.get("ip", "") for address in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        if not ports:
            count += len(addresses)
            entries.extend(addresses)
            continue
        for port in ports:
            count += len(addresses)
            entries.extend(join_host_port(ip, port.get("port", 0)) for ip in addresses)
    text = ",".join(entries[:3])
    if count > 3:
        return f"{text} + {count - 3} more..."
    return text


def print_endpoints(endpoints: Obj, now: datetime) -> Cells:
    """printEndpoints: the first few endpoint addresses."""
    return [name_of(endpoints), format_endpoints(endpoints), age(endpoints, now)]


ENDPOINT_SLICE_COLUMNS = (
    NAME,
    column("AddressType", "string", "addressType specifies the type of address carried by "
                                    "this EndpointSlice."),
    column("Ports", "string", "ports specifies the list of network ports exposed by each "
                              "endpoint in this slice."),
    column("Endpoints", "string", "endpoints is a list of unique endpoints in this slice."),
    AGE,
)


def list_with_more(items: list[str], total: int, maximum: int = 3) -> str:
    """listWithMoreString: the first `maximum` items, then " + N more...", or "<unset>"."""
    text = ",".join(items[:maximum])
    if total > maximum:
        return f"{text} + {total - maximum} more..."
    return text or UNSET


def print_endpoint_slice(slice_: Obj, now: datetime) -> Cells:
    """printEndpointSlice: address type, first ports and first addresses."""
    ports: list[str] = []
    for port in slice_.get("ports") or []:
        if port.get("port") is not None:
            ports.append(str(port["port"]))
        elif port.get("name") is not None:
            ports.append(port["name"])
        else:
            ports.append("*")
    addresses = [
        address
        for endpoint in slice_.get("endpoints") or []
        for address in endpoint.get("addresses") or []
    ]
    return [
        name_of(slice_),
        slice_.get("addressType", ""),
        list_with_more(ports, len(ports)),
        list_with_more(addresses, len(addresses)),
        age(slice_, now),
    ]
