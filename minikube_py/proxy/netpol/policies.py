"""NetworkPolicy semantics, without a kernel: which pods a policy isolates, and which
peers and ports each of its rules allows (upstream's networking/v1 types.go comments).

    a pod is isolated for ingress (egress) when some policy of its namespace selects it
      (spec.podSelector) and lists Ingress (Egress) in spec.policyTypes
    traffic to (from) an isolated pod is allowed when at least one rule of one such
      policy allows it: policies only add to what is allowed, never take away
    a rule allows a peer and a port:
      from/to absent or empty     any peer
      podSelector                 pods of the policy's namespace
      namespaceSelector           every pod of the namespaces it selects
      both, in one peer           the selected pods of the selected namespaces
      ipBlock                     the CIDR minus its excepts
      ports absent or empty       any port; a port without protocol is TCP; a port
                                  with endPort is the range port..endPort; a named port
                                  is the number of the container port of that name
                                  and protocol, on the pod traffic goes to

Host-network pods take no part: their address is their node's, which a policy neither
isolates nor selects, as upstream's implementations do. Only IPv4 is compiled (the
cluster has no IPv6 pods); an IPv6 ipBlock allows nothing here.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import orjson

from minikube_py.api import Obj
from minikube_py.api.selectors import (
    DOUBLE_EQUALS,
    EQUALS,
    IN,
    LabelSelector,
    SelectorError,
    label_selector_from_dict,
)

PROTOCOLS = ("TCP", "UDP", "SCTP")


@dataclass(frozen=True)
class PodInfo:
    """What a policy reads of a pod: where it lives, its labels, its address and the
    numbers of its named ports."""

    namespace: str
    name: str
    labels: Mapping[str, str]
    ip: str
    node: str
    named_ports: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """(name, protocol) -> containerPort."""

    @classmethod
    def from_pod(cls, pod: Obj) -> PodInfo | None:
        """The pod as a policy sees it; None when it takes no part (no IPv4 address yet,
        host network, or finished)."""
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        ip = status.get("podIP") or ""
        if (not ip or ":" in ip or spec.get("hostNetwork")
                or status.get("phase") in ("Succeeded", "Failed")):
            return None
        named = {(port["name"], port.get("protocol") or "TCP"): int(port["containerPort"])
                 for container in spec.get("containers") or []
                 for port in container.get("ports") or []
                 if port.get("name") and port.get("containerPort")}
        meta = pod["metadata"]
        return cls(meta.get("namespace", ""), meta["name"], meta.get("labels") or {}, ip,
                   spec.get("nodeName") or "", named)


@dataclass(frozen=True)
class PortMatch:
    """One entry of a rule's ports: a protocol and a number, a range, a name, or none
    (every port of the protocol)."""

    protocol: str
    port: int | None = None
    end_port: int | None = None
    name: str | None = None


@dataclass
class CompiledRule:
    """One ingress or egress rule: the peers' addresses (None: any peer) and its ports
    (None: any port)."""

    peers: list[str] | None
    ports: list[PortMatch] | None


@dataclass
class CompiledPolicy:
    """A policy, as it applies now: the pods it selects and its rules, per direction."""

    namespace: str
    name: str
    selected: list[PodInfo]
    ingress: list[CompiledRule] | None
    """None: the policy does not isolate for ingress; []: it isolates and allows nothing."""
    egress: list[CompiledRule] | None


def _key(selector: Obj | None) -> bytes:
    """A selector as a dictionary key: equal selectors, equal keys."""
    return orjson.dumps(selector, option=orjson.OPT_SORT_KEYS)


@functools.lru_cache(maxsize=4096)
def _parse_selector(key: bytes) -> LabelSelector:
    """A policy's selector, from its _key (parsed once for every sync: selectors change
    far less often than syncs happen); one the API server let through but that does not
    parse selects nothing (fail closed)."""
    try:
        return label_selector_from_dict(orjson.loads(key))
    except SelectorError:
        return LabelSelector.match_nothing()


def ip_block_networks(cidr: str, excepts: Iterable[str]) -> list[str]:
    """An ipBlock as IPv4 networks: the CIDR minus each except, collapsed ("" parts and
    IPv6 give nothing)."""
    try:
        block = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return []
    if not isinstance(block, ipaddress.IPv4Network):
        return []
    networks = [block]
    for text in excepts:
        try:
            hole = ipaddress.ip_network(text, strict=False)
        except ValueError:
            continue
        if not isinstance(hole, ipaddress.IPv4Network):
            continue
        kept: list[ipaddress.IPv4Network] = []
        for network in networks:
            if hole.supernet_of(network):
                continue
            if network.supernet_of(hole):
                kept.extend(network.address_exclude(hole))
            else:
                kept.append(network)
        networks = kept
    return [str(n) for n in ipaddress.collapse_addresses(networks)]


def collapse(addresses: Iterable[str]) -> list[str]:
    """Pod IPs and networks as non-overlapping elements of one nft set: only addresses,
    each once, in order; with networks among them, the fewest networks, /32s written as
    plain addresses."""
    addresses = set(addresses)
    if not any("/" in a for a in addresses):
        return sorted(addresses, key=socket.inet_aton)
    networks = ipaddress.collapse_addresses(
        ipaddress.ip_network(a, strict=False) for a in addresses)
    return [str(n.network_address) if n.prefixlen == 32 else str(n) for n in networks]


class PolicyIndex:
    """Every pod and namespace the enforcer knows, to resolve selectors against."""

    def __init__(self, pods: Iterable[PodInfo], namespace_labels: Mapping[str, Mapping[str, str]]
                 ) -> None:
        self.pods = sorted(pods, key=lambda p: (p.namespace, p.name))
        self.namespace_labels = namespace_labels
        self.by_namespace: dict[str, list[PodInfo]] = {}
        for pod in self.pods:
            self.by_namespace.setdefault(pod.namespace, []).append(pod)
        self._namespaces: dict[bytes, list[str]] = {}
        self._matching: dict[tuple[str, bytes], list[PodInfo]] = {}
        self._peers: dict[tuple[str, bytes], list[str]] = {}
        self._by_label: dict[str, dict[tuple[str, str], list[PodInfo]]] = {}

    def pods_matching(self, namespace: str, selector: Obj | None,
                      key: bytes | None = None) -> list[PodInfo]:
        """The pods of a namespace a pod selector selects (matched once per sync for each
        namespace and selector: policies repeat selectors); `key` its _key, if known."""
        if key is None:
            key = _key(selector)
        if (pods := self._matching.get((namespace, key))) is None:
            chosen = _parse_selector(key)
            pods = self._matching[(namespace, key)] = [
                p for p in self._candidates(namespace, chosen) if chosen.matches(p.labels)]
        return pods

    def _candidates(self, namespace: str, chosen: LabelSelector) -> list[PodInfo]:
        """The pods of a namespace a selector may select: those with the label its first
        one-value equality requires (a matchLabels entry), else all of them."""
        for requirement in chosen.requirements:
            if requirement.operator in (EQUALS, DOUBLE_EQUALS, IN) and (
                    len(requirement.values) == 1):
                if (labelled := self._by_label.get(namespace)) is None:
                    labelled = self._by_label[namespace] = {}
                    for pod in self.by_namespace.get(namespace, []):
                        for label in pod.labels.items():
                            labelled.setdefault(label, []).append(pod)
                return labelled.get((requirement.key, requirement.values[0]), [])
        return self.by_namespace.get(namespace, [])

    def matching_namespaces(self, selector: Obj) -> list[str]:
        """The namespaces a namespaceSelector selects (once per sync for each selector)."""
        key = _key(selector)
        if (names := self._namespaces.get(key)) is None:
            chosen = _parse_selector(key)
            names = self._namespaces[key] = [
                name for name, labels in self.namespace_labels.items() if chosen.matches(labels)]
        return names

    def selects_on(self, policy: Obj, node: str) -> bool:
        """Whether the policy selects a pod of `node` (only those policies shape its
        table)."""
        spec = policy.get("spec") or {}
        return any(pod.node == node for pod in self.selected(
            policy["metadata"].get("namespace", ""), spec.get("podSelector") or {}))

    def selected(self, namespace: str, selector: Obj | None) -> list[PodInfo]:
        """spec.podSelector: the pods of the policy's namespace it selects."""
        return self.pods_matching(namespace, selector)

    def peer_addresses(self, namespace: str, peer: Obj) -> list[str]:
        """One NetworkPolicyPeer's addresses."""
        if (block := peer.get("ipBlock")) is not None:
            return ip_block_networks(block.get("cidr") or "", block.get("except") or [])
        namespaces = ([namespace] if peer.get("namespaceSelector") is None
                      else self.matching_namespaces(peer["namespaceSelector"]))
        selector = peer.get("podSelector") or {}
        key = _key(selector)
        return [p.ip for ns in namespaces for p in self.pods_matching(ns, selector, key)]

    def peers(self, namespace: str, peers: list[Obj]) -> list[str]:
        """A rule's `from` or `to`: the addresses of all its peers, collapsed (once per
        sync for each namespace and list of peers: policies repeat them)."""
        key = (namespace, orjson.dumps(peers, option=orjson.OPT_SORT_KEYS))
        if (addresses := self._peers.get(key)) is None:
            addresses = self._peers[key] = collapse(
                a for peer in peers for a in self.peer_addresses(namespace, peer))
        return addresses

    def rule(self, namespace: str, rule: Obj, peers_field: str) -> CompiledRule:
        """One ingress (peers in `from`) or egress (`to`) rule."""
        peers = rule.get(peers_field) or []
        ports = rule.get("ports") or []
        return CompiledRule(self.peers(namespace, peers) if peers else None,
                            [port_match(p) for p in ports] if ports else None)

    def compile(self, policy: Obj) -> CompiledPolicy:
        """A policy against the pods and namespaces of now."""
        meta, spec = policy["metadata"], policy.get("spec") or {}
        namespace = meta.get("namespace", "")
        types = spec.get("policyTypes") or (
            ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"])
        directions = {}
        for policy_type, field_name, peers_field in (("Ingress", "ingress", "from"),
                                                     ("Egress", "egress", "to")):
            directions[field_name] = ([self.rule(namespace, r, peers_field)
                                       for r in spec.get(field_name) or []]
                                      if policy_type in types else None)
        return CompiledPolicy(namespace, meta["name"],
                              self.selected(namespace, spec.get("podSelector") or {}),
                              directions["ingress"], directions["egress"])

    def named_port_targets(self, pods: Iterable[PodInfo], match: PortMatch
                           ) -> list[tuple[str, str, int]]:
        """(pod IP, protocol, number) of each pod with a container port of that name."""
        assert match.name is not None
        return [(p.ip, match.protocol, number) for p in pods
                if (number := p.named_ports.get((match.name, match.protocol))) is not None]


def port_match(port: Obj) -> PortMatch:
    """A NetworkPolicyPort."""
    protocol = port.get("protocol") or "TCP"
    value = port.get("port")
    if isinstance(value, str) and not value.isdigit():
        return PortMatch(protocol, name=value)
    if value is None:
        return PortMatch(protocol)
    end_port = port.get("endPort")
    return PortMatch(protocol, int(value), int(end_port) if end_port else None)
