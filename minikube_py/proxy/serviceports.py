"""What the proxy needs of Services and EndpointSlices: one ServicePort per port of a
Service, with the endpoints that serve it (pure: no I/O).

Upstream keeps a ServicePortMap and an EndpointsMap (pkg/proxy/servicechangetracker.go,
endpointschangetracker.go); here both are rebuilt from the informers' caches on each
sync, which costs little next to the iptables-restore itself.

Which endpoints count (upstream's CategorizeEndpoints):
- the ready ones;
- if none is ready, the serving-and-terminating ones, so a Service whose pods are all
  shutting down keeps answering until they stop;
- for a policy Local (internalTrafficPolicy for the ClusterIP, externalTrafficPolicy for
  NodePorts and load balancers), only those on this node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minikube_py.api import Obj

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
PROXY_NAME_LABEL = "service.kubernetes.io/service-proxy-name"


@dataclass(frozen=True)
class Endpoint:
    """One address:port serving a ServicePort."""

    ip: str
    port: int
    ready: bool
    serving: bool
    terminating: bool
    node_name: str

    def __str__(self) -> str:
        return f"{self.ip}:{self.port}"


@dataclass
class ServicePort:
    """One port of one Service, as the rules need it."""

    namespace: str
    name: str
    port_name: str
    protocol: str  # TCP, UDP, SCTP
    port: int
    cluster_ips: list[str]
    node_port: int = 0
    load_balancer_ips: list[str] = field(default_factory=list)
    external_ips: list[str] = field(default_factory=list)
    session_affinity_seconds: int = 0  # 0: no ClientIP affinity
    internal_local: bool = False
    external_local: bool = False
    health_check_node_port: int = 0
    endpoints: list[Endpoint] = field(default_factory=list)

    @property
    def service_port_name(self) -> str:
        """`ns/name:port` (`ns/name` when the port has no name): upstream's String()."""
        suffix = f":{self.port_name}" if self.port_name else ""
        return f"{self.namespace}/{self.name}{suffix}"

    @property
    def has_external(self) -> bool:
        return bool(self.node_port or self.load_balancer_ips or self.external_ips)

    def usable_endpoints(self) -> list[Endpoint]:
        """Ready endpoints; if there are none, the serving-and-terminating ones."""
        ready = [e for e in self.endpoints if e.ready]
        if ready:
            return ready
        return [e for e in self.endpoints if e.serving and e.terminating]

    def local_endpoints(self, node_name: str) -> list[Endpoint]:
        """The usable endpoints on this node, with the same terminating fallback."""
        local = [e for e in self.endpoints if e.node_name == node_name]
        ready = [e for e in local if e.ready]
        return ready or [e for e in local if e.serving and e.terminating]

    def routing(self, node_name: str) -> Routing:
        """Which endpoints each kind of traffic goes to on this node, and which of the
        Service's two endpoint-choosing chains (cluster-wide and node-local) exist."""
        cluster = self.usable_endpoints()
        local = self.local_endpoints(node_name)
        internal = local if self.internal_local else cluster
        external = local if self.external_local else cluster
        uses_cluster = bool(cluster) and (not self.internal_local or bool(external))
        uses_local = bool(local) and (self.internal_local or self.external_local)
        chained = {e: None for e in (cluster if uses_cluster else [])
                   + (local if uses_local else [])}
        return Routing(cluster, local, internal, external, uses_cluster, uses_local,
                       list(chained))


@dataclass(frozen=True)
class Routing:
    """One ServicePort's endpoints as seen from one node (upstream's
    CategorizeEndpoints): `internal` serves the ClusterIP, `external` NodePorts, load
    balancers and external IPs; `chained` is every endpoint some chain jumps to."""

    cluster: list[Endpoint]
    local: list[Endpoint]
    internal: list[Endpoint]
    external: list[Endpoint]
    uses_cluster_chain: bool
    uses_local_chain: bool
    chained: list[Endpoint]


def service_ports(services: list[Obj], slices: list[Obj]) -> list[ServicePort]:
    """Every proxied ServicePort, with its endpoints from the slices of its Service."""
    by_service: dict[tuple[str, str], list[Obj]] = {}
    for endpoint_slice in slices:
        meta = endpoint_slice["metadata"]
        service_name = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if service_name and endpoint_slice.get("addressType", "IPv4") == "IPv4":
            by_service.setdefault((meta.get("namespace", ""), service_name), []).append(
                endpoint_slice)
    ports = []
    for service in services:
        meta, spec = service["metadata"], service.get("spec") or {}
        if not _proxied(service):
            continue
        key = (meta.get("namespace", ""), meta["name"])
        for port in spec.get("ports") or []:
            service_port = _service_port(service, port)
            service_port.endpoints = _endpoints(by_service.get(key) or [], port)
            ports.append(service_port)
    return ports


def _proxied(service: Obj) -> bool:
    """ClusterIP-bearing Services that no other proxy claims (upstream skips headless
    and ExternalName Services, and those labelled for another service proxy)."""
    spec = service.get("spec") or {}
    cluster_ip = spec.get("clusterIP") or ""
    labels = service["metadata"].get("labels") or {}
    return (spec.get("type") != "ExternalName" and cluster_ip not in ("", "None")
            and PROXY_NAME_LABEL not in labels)


def _service_port(service: Obj, port: Obj) -> ServicePort:
    meta, spec = service["metadata"], service.get("spec") or {}
    status = service.get("status") or {}
    ingress = (status.get("loadBalancer") or {}).get("ingress") or []
    affinity = 0
    if spec.get("sessionAffinity") == "ClientIP":
        config = (spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}
        affinity = int(config.get("timeoutSeconds") or 10800)
    cluster_ips = [ip for ip in spec.get("clusterIPs") or [spec["clusterIP"]]
                   if ":" not in ip]
    return ServicePort(
        namespace=meta.get("namespace", ""), name=meta["name"],
        port_name=port.get("name", ""), protocol=port.get("protocol", "TCP"),
        port=int(port["port"]), cluster_ips=cluster_ips,
        node_port=int(port.get("nodePort") or 0)
        if spec.get("type") in ("NodePort", "LoadBalancer") else 0,
        load_balancer_ips=[i["ip"] for i in ingress if i.get("ip") and ":" not in i["ip"]]
        if spec.get("type") == "LoadBalancer" else [],
        external_ips=[ip for ip in spec.get("externalIPs") or [] if ":" not in ip],
        session_affinity_seconds=affinity,
        internal_local=spec.get("internalTrafficPolicy") == "Local",
        external_local=spec.get("externalTrafficPolicy") == "Local"
        and spec.get("type") in ("NodePort", "LoadBalancer"),
        health_check_node_port=int(spec.get("healthCheckNodePort") or 0),
    )


def _endpoints(slices: list[Obj], port: Obj) -> list[Endpoint]:
    """The endpoints of the slices' port named like the Service port (upstream matches
    slice ports to service ports by name)."""
    found: dict[str, Endpoint] = {}
    for endpoint_slice in slices:
        number = next((p.get("port") for p in endpoint_slice.get("ports") or []
                       if (p.get("name") or "") == (port.get("name") or "")
                       and p.get("protocol", "TCP") == port.get("protocol", "TCP")), None)
        if not number:
            continue
        for endpoint in endpoint_slice.get("endpoints") or []:
            conditions = endpoint.get("conditions") or {}
            ready = conditions.get("ready") is not False
            for address in (endpoint.get("addresses") or [])[:1]:
                found[f"{address}:{number}"] = Endpoint(
                    ip=address, port=int(number), ready=ready,
                    serving=conditions.get("serving", ready) is not False,
                    terminating=bool(conditions.get("terminating")),
                    node_name=endpoint.get("nodeName") or "")
    return [found[key] for key in sorted(found)]
