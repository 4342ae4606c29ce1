"""The cluster's DNS records, built from Services and EndpointSlices (pure: no I/O).

What a name in the cluster domain answers, as CoreDNS's `kubernetes` plugin does
(the DNS-based service discovery spec, kubernetes/dns docs/specification.md):

    <svc>.<ns>.svc.<zone>            A     the ClusterIP; for a headless Service, the
                                           address of every ready endpoint
                                     CNAME an ExternalName Service's externalName
    <host>.<svc>.<ns>.svc.<zone>     A     one endpoint of a headless Service: <host> is the
                                           endpoint's hostname (StatefulSet pods) or its
                                           address with dashes (10-244-1-7)
    _<port>._<proto>.<svc>.<ns>.svc.<zone>
                                     SRV   one per named port: the Service's name for a
                                           ClusterIP Service, each endpoint for a headless one
    <d>.<c>.<b>.<a>.in-addr.arpa     PTR   a ClusterIP -> its Service's name; a headless
                                           endpoint's address -> its endpoint name
    <a-b-c-d>.<ns>.pod.<zone>        A     a.b.c.d (the plugin's "pods insecure" mode)

A name in the zone that none of these gives is NXDOMAIN; a name that exists but has no
record of the asked type is NODATA (NOERROR, no answer). Both carry the zone's SOA in the
authority section, so resolvers may cache the negative answer. `ClusterRecords.resolve`
is the whole lookup; the server (server.py) only encodes what it returns.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from minikube_py.api import Obj

TTL = 30
"""Seconds a cluster answer may be cached: kubeadm's Corefile sets `ttl 30`."""

SERVICE_NAME_LABEL = "kubernetes.io/service-name"


@dataclass(frozen=True)
class Record:
    """One resource record: owner name (absolute, lower case, trailing dot), type, data.

    data is an address for A, a name for CNAME and PTR, and (priority, weight, port,
    target) for SRV."""

    name: str
    rtype: str
    data: Any


@dataclass
class Answer:
    """What `resolve` found: the rcode, the answer records and any extra records
    (the A records of SRV targets)."""

    rcode: str = "NOERROR"
    records: list[Record] = field(default_factory=list)
    additional: list[Record] = field(default_factory=list)


@dataclass(frozen=True)
class Endpoint:
    """One ready endpoint of a Service: its address and, if set, its hostname."""

    address: str
    hostname: str = ""

    def label(self) -> str:
        """The endpoint's own DNS label: its hostname, or its address with dashes."""
        return self.hostname or self.address.replace(".", "-").replace(":", "-")


@dataclass
class ServiceEntry:
    """What DNS needs of one Service: its kind, ClusterIPs, named ports, and endpoints
    (merged from all of its EndpointSlices)."""

    name: str
    namespace: str
    cluster_ips: list[str] = field(default_factory=list)
    external_name: str = ""
    ports: list[tuple[str, str, int]] = field(default_factory=list)  # (name, proto, port)
    slices: dict[str, list[tuple[Endpoint, list[tuple[str, str, int]]]]] = field(
        default_factory=dict)
    publish_not_ready: bool = False

    @property
    def headless(self) -> bool:
        return not self.external_name and not self.cluster_ips

    def endpoints(self) -> list[tuple[Endpoint, list[tuple[str, str, int]]]]:
        """Every endpoint of every slice, each with the ports of its slice."""
        return [item for items in self.slices.values() for item in items]


def _ready(endpoint: Obj, publish_not_ready: bool) -> bool:
    """An endpoint counts if it is ready (unset means ready), or if the Service asks
    for not-ready addresses too (publishNotReadyAddresses)."""
    return publish_not_ready or (endpoint.get("conditions") or {}).get("ready") is not False


def reverse_name(address: str) -> str:
    """10.96.0.10 -> 10.0.96.10.in-addr.arpa."""
    return ipaddress.ip_address(address).reverse_pointer + "."


class ClusterRecords:
    """The index: Services by (namespace, name), kept current by the informers'
    events, and a reverse map of addresses for PTR queries."""

    def __init__(self, zone: str = "cluster.local") -> None:
        self.zone = zone.strip(".").lower() + "."
        self.services: dict[tuple[str, str], ServiceEntry] = {}
        self._slices: dict[tuple[str, str], list[Obj]] = {}
        self.generation = 0
        """Bumped on every change: the server drops its cached answers when it moves."""
        self._reverse: dict[str, list[str]] = {}
        self._reverse_generation = -1

    # -- keeping the index current (called from the informers' handlers) --------------

    def set_service(self, service: Obj) -> None:
        """A Service was added or changed."""
        meta, spec = service["metadata"], service.get("spec") or {}
        key = (meta.get("namespace", ""), meta["name"])
        entry = ServiceEntry(name=meta["name"], namespace=key[0])
        if spec.get("type") == "ExternalName":
            entry.external_name = (spec.get("externalName") or "").strip(".").lower()
        else:
            ips = spec.get("clusterIPs") or [spec.get("clusterIP") or ""]
            entry.cluster_ips = [ip for ip in ips if ip and ip != "None"]
        entry.ports = [(p.get("name", ""), p.get("protocol", "TCP"), int(p.get("port", 0)))
                       for p in spec.get("ports") or []]
        entry.publish_not_ready = bool(spec.get("publishNotReadyAddresses"))
        self.services[key] = entry
        for endpoint_slice in self._slices.get(key) or []:
            self._add_slice(entry, endpoint_slice)
        self.generation += 1

    def delete_service(self, service: Obj) -> None:
        meta = service["metadata"]
        self.services.pop((meta.get("namespace", ""), meta["name"]), None)
        self.generation += 1

    def set_slice(self, endpoint_slice: Obj) -> None:
        """An EndpointSlice was added or changed."""
        key = self._service_key(endpoint_slice)
        if key is None:
            return
        name = endpoint_slice["metadata"]["name"]
        slices = [s for s in self._slices.get(key) or [] if s["metadata"]["name"] != name]
        slices.append(endpoint_slice)
        self._slices[key] = slices
        entry = self.services.get(key)
        if entry is not None:
            self._add_slice(entry, endpoint_slice)
        self.generation += 1

    def delete_slice(self, endpoint_slice: Obj) -> None:
        key = self._service_key(endpoint_slice)
        if key is None:
            return
        name = endpoint_slice["metadata"]["name"]
        remaining = [s for s in self._slices.get(key) or [] if s["metadata"]["name"] != name]
        if remaining:
            self._slices[key] = remaining
        else:
            self._slices.pop(key, None)
        entry = self.services.get(key)
        if entry is not None:
            entry.slices.pop(name, None)
        self.generation += 1

    @staticmethod
    def _service_key(endpoint_slice: Obj) -> tuple[str, str] | None:
        meta = endpoint_slice["metadata"]
        service = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        return (meta.get("namespace", ""), service) if service else None

    @staticmethod
    def _add_slice(entry: ServiceEntry, endpoint_slice: Obj) -> None:
        if endpoint_slice.get("addressType", "IPv4") not in ("IPv4", "IPv6"):
            return
        ports = [(p.get("name", ""), p.get("protocol", "TCP"), int(p.get("port") or 0))
                 for p in endpoint_slice.get("ports") or []]
        endpoints = []
        for endpoint in endpoint_slice.get("endpoints") or []:
            if not _ready(endpoint, entry.publish_not_ready):
                continue
            for address in endpoint.get("addresses") or []:
                endpoints.append((Endpoint(address, endpoint.get("hostname", "")), ports))
        entry.slices[endpoint_slice["metadata"]["name"]] = endpoints

    # -- the lookup ------------------------------------------------------------------

    def resolve(self, name: str, rtype: str) -> Answer | None:
        """Answer one question (see the module's table); None for a name that is not
        the cluster's, which the server forwards (a reverse name of an address the
        cluster does not know falls through too, as with CoreDNS's `fallthrough`)."""
        name = name.lower()
        if name.endswith(".in-addr.arpa.") or name.endswith(".ip6.arpa."):
            return self._resolve_reverse(name, rtype)
        if name != self.zone and not name.endswith("." + self.zone):
            return None
        labels = name[: -len(self.zone)].rstrip(".").split(".") if name != self.zone else []
        if not labels:
            return Answer("NOERROR")
        if len(labels) == 3 and labels[2] == "pod":
            return self._resolve_pod(name, labels, rtype)
        if labels[-1] != "svc":
            return Answer("NXDOMAIN")
        labels = labels[:-1]
        if len(labels) <= 1:
            # svc.<zone> and <ns>.svc.<zone> exist (they hold names) but have no records.
            return Answer("NOERROR")
        if len(labels) == 2:
            return self._resolve_service(name, labels[1], labels[0], rtype)
        if len(labels) == 3:
            return self._resolve_endpoint(name, labels[2], labels[1], labels[0], rtype)
        if len(labels) == 4 and labels[0].startswith("_") and labels[1].startswith("_"):
            return self._resolve_srv(name, labels[3], labels[2], labels[0][1:],
                                     labels[1][1:], rtype)
        return Answer("NXDOMAIN")

    def _service_name(self, entry: ServiceEntry) -> str:
        return f"{entry.name}.{entry.namespace}.svc.{self.zone}"

    def _resolve_service(self, name: str, namespace: str, service: str, rtype: str) -> Answer:
        entry = self.services.get((namespace, service))
        if entry is None:
            return Answer("NXDOMAIN")
        if entry.external_name:
            return Answer(records=[Record(name, "CNAME", entry.external_name + ".")])
        if rtype == "SRV":
            return self._srv_records(name, entry, None, None)
        if entry.headless:
            addresses = sorted({ep.address for ep, _ in entry.endpoints()})
            if not addresses:
                return Answer("NXDOMAIN")
        else:
            addresses = entry.cluster_ips
        return Answer(records=[Record(name, rtype, a) for a in addresses
                               if _family(a) == rtype])

    def _resolve_endpoint(self, name: str, namespace: str, service: str, label: str,
                          rtype: str) -> Answer:
        entry = self.services.get((namespace, service))
        if entry is None or not entry.headless:
            return Answer("NXDOMAIN")
        addresses = sorted({ep.address for ep, _ in entry.endpoints() if ep.label() == label})
        if not addresses:
            return Answer("NXDOMAIN")
        return Answer(records=[Record(name, rtype, a) for a in addresses
                               if _family(a) == rtype])

    def _resolve_srv(self, name: str, namespace: str, service: str, port: str, proto: str,
                     rtype: str) -> Answer:
        entry = self.services.get((namespace, service))
        if entry is None or entry.external_name:
            return Answer("NXDOMAIN")
        answer = self._srv_records(name, entry, port, proto)
        if not answer.records:
            return Answer("NXDOMAIN")
        if rtype != "SRV":
            return Answer("NOERROR")
        return answer

    def _srv_records(self, name: str, entry: ServiceEntry, port: str | None,
                     proto: str | None) -> Answer:
        """SRV records for the Service's named ports (all of them when port is None)."""

        def wanted(port_name: str, protocol: str) -> bool:
            return bool(port_name) and (port is None or (port_name.lower() == port
                                                         and protocol.lower() == proto))

        answer = Answer()
        service_name = self._service_name(entry)
        if not entry.headless:
            for port_name, protocol, number in entry.ports:
                if wanted(port_name, protocol):
                    answer.records.append(Record(name, "SRV", (0, 100, number, service_name)))
            answer.additional = [Record(service_name, _family(ip), ip)
                                 for ip in entry.cluster_ips]
            return answer
        targets = [(ep, number) for ep, ports in entry.endpoints()
                   for port_name, protocol, number in ports if wanted(port_name, protocol)]
        weight = max(1, 100 // len(targets)) if targets else 0
        for endpoint, number in targets:
            target = f"{endpoint.label()}.{service_name}"
            answer.records.append(Record(name, "SRV", (0, weight, number, target)))
            answer.additional.append(Record(target, _family(endpoint.address),
                                            endpoint.address))
        return answer

    def _resolve_pod(self, name: str, labels: list[str], rtype: str) -> Answer:
        address = labels[0].replace("-", ".")
        try:
            ipaddress.IPv4Address(address)
        except ValueError:
            return Answer("NXDOMAIN")
        return Answer(records=[Record(name, "A", address)] if rtype == "A" else [])

    def _resolve_reverse(self, name: str, rtype: str) -> Answer | None:
        targets = self._reverse_index().get(name)
        if not targets:
            return None
        return Answer(records=[Record(name, "PTR", target) for target in targets]
                      if rtype == "PTR" else [])

    def _reverse_index(self) -> dict[str, list[str]]:
        """Reverse name -> the names it points back to, rebuilt after a change."""
        if self._reverse_generation != self.generation:
            index: dict[str, set[str]] = {}
            for entry in self.services.values():
                service_name = self._service_name(entry)
                for ip in entry.cluster_ips:
                    index.setdefault(reverse_name(ip), set()).add(service_name)
                if entry.headless:
                    for endpoint, _ in entry.endpoints():
                        index.setdefault(reverse_name(endpoint.address), set()).add(
                            f"{endpoint.label()}.{service_name}")
            self._reverse = {name: sorted(targets) for name, targets in index.items()}
            self._reverse_generation = self.generation
        return self._reverse


def _family(address: str) -> str:
    """The record type that carries this address: A or AAAA."""
    return "AAAA" if ":" in address else "A"
