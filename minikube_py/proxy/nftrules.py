"""The nftables ruleset for Services, as upstream's nftables proxier writes it (pure).

Everything lives in one table of the proxy's own, `ip kube-proxy`, so no other program's
rules are ever touched. A packet to a ClusterIP walks:

    nat-prerouting / nat-output       base chains (type nat, priority dstnat)
      -> services                     two lookups, no per-Service rule:
           ip daddr . meta l4proto . th dport vmap @service-ips
           fib daddr type local ... meta l4proto . th dport vmap @service-nodeports
         -> service-<hash>-<ns>/<name>/<proto>/<port>
              mark traffic from outside the pod network for masquerade, then
              numgen random mod N vmap { 0 : goto endpoint-..., 1 : goto ..., ... }
            -> endpoint-<hash>-<ns>/<name>/<proto>/<port>__<ip>/<port>
                 DNAT to the endpoint (masquerade first if it talks to itself)
      NodePorts, load-balancer and external IPs go to external-<hash>-... (mark, then the
      service chain, or local-<hash>-..., this node's endpoints, for a policy Local)
    nat-postrouting -> masquerading   masquerade what mark-for-masquerade marked (0x4000)

A Service without endpoints is an element of the no-endpoint-services (or
no-endpoint-nodeports) map, looked up by the filter-* base chains for new connections:
`goto reject-chain`, so clients are refused at once (or `drop` when only the node-local
endpoints are missing).

Chain names are upstream's: a prefix, 8 base32 characters of the sha256 of the rest (so
chains differing in one digit look different), and `ns/name/proto/port`. `service_ruleset`
gives one Service's part (its chains and map elements); `assemble` adds the fixed part;
`full_input` and `incremental_input` turn that into one `nft -f` transaction.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field

from minikube_py.proxy.rules import ProxyConfig
from minikube_py.proxy.serviceports import Endpoint, ServicePort

TABLE = "ip kube-proxy"
MASQ_MARK = "0x4000"
CHAIN_NAME_MAX = 200
"""Upstream cuts chain names (their base, after the prefix) to stay under nftables'
256-character limit; the hash in front keeps cut names unique."""

BASE_CHAINS = {
    "filter-input": "type filter hook input priority -110",
    "filter-forward": "type filter hook forward priority -110",
    "filter-output": "type filter hook output priority -110",
    "nat-prerouting": "type nat hook prerouting priority dstnat",
    "nat-output": "type nat hook output priority -100",
    "nat-postrouting": "type nat hook postrouting priority srcnat",
}
"""The hooks: filter chains run just before the nat ones (dstnat is -100), so they see
the Service's address before it is rewritten."""

MAPS = {
    "service-ips": ("ipv4_addr . inet_proto . inet_service : verdict",
                    "ClusterIP, ExternalIP and LoadBalancer IP traffic"),
    "service-nodeports": ("inet_proto . inet_service : verdict", "NodePort traffic"),
    "no-endpoint-services": ("ipv4_addr . inet_proto . inet_service : verdict",
                             "vmap to drop or reject packets to services with no endpoints"),
    "no-endpoint-nodeports": ("inet_proto . inet_service : verdict",
                              "vmap to drop or reject packets to service nodeports with no "
                              "endpoints"),
}

LOCAL_ADDRESS = "fib daddr type local ip daddr != 127.0.0.0/8"
"""A NodePort is served on every address of this node but loopback."""


def fixed_chains() -> dict[str, list[str]]:
    """The chains every sync has, whatever the Services."""
    return {
        "filter-input": ["ct state new jump nodeport-endpoints-check",
                         "ct state new jump service-endpoints-check"],
        "filter-forward": ["ct state new jump service-endpoints-check"],
        "filter-output": ["ct state new jump service-endpoints-check"],
        "nat-prerouting": ["jump services"],
        "nat-output": ["jump services"],
        "nat-postrouting": ["jump masquerading"],
        "mark-for-masquerade": [f"mark set mark or {MASQ_MARK}"],
        "masquerading": [f"mark and {MASQ_MARK} == 0 return",
                         f"mark set mark xor {MASQ_MARK}",
                         "masquerade fully-random"],
        "services": ["ip daddr . meta l4proto . th dport vmap @service-ips",
                     f"{LOCAL_ADDRESS} meta l4proto . th dport vmap @service-nodeports"],
        "service-endpoints-check": [
            "ip daddr . meta l4proto . th dport vmap @no-endpoint-services"],
        "nodeport-endpoints-check": [
            f"{LOCAL_ADDRESS} meta l4proto . th dport vmap @no-endpoint-nodeports"],
        "reject-chain": ["reject"],
    }


@dataclass
class Ruleset:
    """The proxy's table, or one Service's part of it."""

    chains: dict[str, list[str]] = field(default_factory=dict)
    """chain -> its rules, in order."""
    elements: dict[str, dict[str, str]] = field(default_factory=dict)
    """map -> key -> verdict."""
    affinity_sets: dict[str, int] = field(default_factory=dict)
    """set of recent clients of an endpoint -> its timeout in seconds (ClientIP affinity)."""

    def rule_count(self) -> int:
        return sum(len(rules) for rules in self.chains.values())


def hash_and_truncate(name: str) -> str:
    """hashAndTruncate: 8 base32 characters of sha256(name), "-", then the name."""
    digest = base64.b32encode(hashlib.sha256(name.encode()).digest()).decode()[:8]
    name = f"{digest}-{name}"
    return name if len(name) <= CHAIN_NAME_MAX else name[:CHAIN_NAME_MAX - 3] + "..."


def chain_base(port: ServicePort) -> str:
    """servicePortChainNameBase: `<hash>-ns/name/proto/port`."""
    return hash_and_truncate(f"{port.namespace}/{port.name}/{port.protocol.lower()}/"
                             f"{port.port_name}")


def endpoint_chain(port: ServicePort, endpoint: Endpoint) -> str:
    """`endpoint-<hash>-ns/name/proto/port__ip/port`."""
    return "endpoint-" + hash_and_truncate(
        f"{port.namespace}/{port.name}/{port.protocol.lower()}/{port.port_name}"
        f"__{endpoint.ip}/{endpoint.port}")


def service_ruleset(ports: list[ServicePort], config: ProxyConfig) -> Ruleset:
    """The chains and map elements of one Service's ports (`assemble` joins them)."""
    ruleset = Ruleset(elements={name: {} for name in MAPS})
    for port in sorted(ports, key=lambda p: (p.service_port_name, p.protocol)):
        _service_port(port, config, ruleset)
    return ruleset


def assemble(parts: list[Ruleset]) -> Ruleset:
    """The whole table: the fixed chains, then every Service's part."""
    table = Ruleset(chains=fixed_chains(), elements={name: {} for name in MAPS})
    for part in parts:
        table.chains.update(part.chains)
        for name, elements in part.elements.items():
            table.elements[name].update(elements)
        table.affinity_sets.update(part.affinity_sets)
    return table


def _service_port(port: ServicePort, config: ProxyConfig, ruleset: Ruleset) -> None:
    """One ServicePort's chains and elements (see the module's diagram)."""
    chains, elements = ruleset.chains, ruleset.elements
    proto = port.protocol.lower()
    base = chain_base(port)
    service, local, external = f"service-{base}", f"local-{base}", f"external-{base}"
    routing = port.routing(config.node_name)
    cluster = routing.cluster

    for ip in port.cluster_ips:
        key = f"{ip} . {proto} . {port.port}"
        if routing.internal:
            elements["service-ips"][key] = (
                f"goto {local if port.internal_local else service}")
        else:
            elements["no-endpoint-services"][key] = (
                "drop" if cluster else "goto reject-chain")

    if port.has_external:
        targets = [*port.load_balancer_ips, *port.external_ips]
        if routing.external:
            for ip in targets:
                elements["service-ips"][f"{ip} . {proto} . {port.port}"] = f"goto {external}"
            if port.node_port:
                elements["service-nodeports"][f"{proto} . {port.node_port}"] = (
                    f"goto {external}")
            chains[external] = _external_chain(port, config, service, local)
        else:
            verdict = "drop" if cluster else "goto reject-chain"
            for ip in targets:
                elements["no-endpoint-services"][f"{ip} . {proto} . {port.port}"] = verdict
            if port.node_port:
                elements["no-endpoint-nodeports"][f"{proto} . {port.node_port}"] = verdict

    if routing.uses_cluster_chain:
        rules = chains[service] = []
        if config.cluster_cidr:
            rules += [f"ip daddr {ip} {proto} dport {port.port} ip saddr != "
                      f"{config.cluster_cidr} jump mark-for-masquerade"
                      for ip in port.cluster_ips]
        rules += _endpoint_choice(port, cluster, ruleset)
    if routing.uses_local_chain:
        chains[local] = _endpoint_choice(port, routing.local, ruleset)
    for endpoint in routing.chained:
        name = endpoint_chain(port, endpoint)
        rules = [f"ip saddr {endpoint.ip} jump mark-for-masquerade"]
        if port.session_affinity_seconds:
            affinity = f"affinity-{name.removeprefix('endpoint-')}"
            ruleset.affinity_sets[affinity] = port.session_affinity_seconds
            rules.append(f"update @{affinity} {{ ip saddr }}")
        rules.append(f"meta l4proto {proto} dnat to {endpoint.ip}:{endpoint.port}")
        chains[name] = rules


def _external_chain(port: ServicePort, config: ProxyConfig, service: str,
                    local: str) -> list[str]:
    """external-<hash>: traffic to a NodePort, load-balancer or external IP."""
    if not port.external_local:
        return ["jump mark-for-masquerade", f"goto {service}"]
    rules = []
    if config.cluster_cidr:
        rules.append(f"ip saddr {config.cluster_cidr} goto {service}")
    return [*rules, "fib saddr type local jump mark-for-masquerade",
            f"fib saddr type local goto {service}", f"goto {local}"]


def _endpoint_choice(port: ServicePort, endpoints: list[Endpoint], ruleset: Ruleset
                     ) -> list[str]:
    """Affinity checks, then one random pick: numgen gives each endpoint 1/n of new
    connections in a single rule (iptables needs a cascade of probabilities)."""
    names = [endpoint_chain(port, endpoint) for endpoint in endpoints]
    rules = []
    if port.session_affinity_seconds:
        rules += [f"ip saddr @affinity-{name.removeprefix('endpoint-')} goto {name}"
                  for name in names]
    choices = ", ".join(f"{i} : goto {name}" for i, name in enumerate(names))
    rules.append(f"numgen random mod {len(names)} vmap {{ {choices} }}")
    return rules


def _declarations(table: Ruleset, chains: list[str], sets: list[str]) -> list[str]:
    """`add chain` (a base chain with its hook) and `add set` lines; adding what exists
    changes nothing."""
    lines = []
    for name in chains:
        hook = BASE_CHAINS.get(name)
        lines.append(f"add chain {TABLE} {name} {{ {hook} ; }}" if hook
                     else f"add chain {TABLE} {name}")
    for name in sets:
        lines.append(f"add set {TABLE} {name} {{ type ipv4_addr ; flags dynamic,timeout ; "
                     f"timeout {table.affinity_sets[name]}s ; }}")
    return lines


def _rules(table: Ruleset, chains: list[str]) -> list[str]:
    return [f"add rule {TABLE} {name} {rule}" for name in chains for rule in table.chains[name]]


def _add_elements(name: str, elements: dict[str, str]) -> list[str]:
    if not elements:
        return []
    return [f"add element {TABLE} {name} {{ "
            + ", ".join(f"{key} : {verdict}" for key, verdict in elements.items()) + " }"]


def full_input(table: Ruleset) -> str:
    """A full sync: the table removed and written anew, in one transaction (`add table`
    first, so the delete never fails on a fresh node)."""
    lines = [f"add table {TABLE}", f"delete table {TABLE}"]
    lines += table_input(table).splitlines()
    return "\n".join(lines) + "\n"


def table_input(table: Ruleset) -> str:
    """The whole table, as `nft -f` creates it on a node without it."""
    lines = [f'add table {TABLE} {{ comment "rules for kube-proxy" ; }}']
    lines += _declarations(table, list(table.chains), sorted(table.affinity_sets))
    lines += [f'add map {TABLE} {name} {{ type {kind} ; comment "{text}" ; }}'
              for name, (kind, text) in MAPS.items()]
    lines += _rules(table, list(table.chains))
    for name in MAPS:
        lines += _add_elements(name, table.elements[name])
    return "\n".join(lines) + "\n"


def incremental_input(desired: Ruleset, written: Ruleset) -> str:
    """An incremental sync: the chains that differ from `written` flushed and refilled,
    map elements that differ replaced, then the chains and sets no longer wanted flushed
    and deleted (after nothing refers to them). Empty when nothing differs."""
    changed = [name for name, rules in desired.chains.items()
               if written.chains.get(name) != rules]
    gone = sorted(set(written.chains) - set(desired.chains))
    new_sets = sorted(name for name, timeout in desired.affinity_sets.items()
                      if written.affinity_sets.get(name) != timeout)  # new, or a new timeout
    gone_sets = sorted(set(written.affinity_sets) - set(desired.affinity_sets))
    lines = _declarations(desired, changed, new_sets)
    lines += [f"flush chain {TABLE} {name}" for name in changed if name in written.chains]
    lines += _rules(desired, changed)
    for name in MAPS:
        before, after = (written.elements.get(name) or {}), desired.elements[name]
        stale = [key for key, verdict in before.items() if after.get(key) != verdict]
        if stale:
            lines.append(f"delete element {TABLE} {name} {{ {', '.join(stale)} }}")
        lines += _add_elements(name, {key: verdict for key, verdict in after.items()
                                      if before.get(key) != verdict})
    lines += [f"flush chain {TABLE} {name}" for name in gone]
    lines += [f"delete chain {TABLE} {name}" for name in gone]
    lines += [f"delete set {TABLE} {name}" for name in gone_sets]
    return "\n".join(lines) + "\n" if lines else ""
