"""The iptables rules for Services, as upstream's iptables proxier writes them (pure).

A packet to a ClusterIP walks these chains of the nat table:

    PREROUTING / OUTPUT
      -> KUBE-SERVICES             one rule per ClusterIP:port (and load-balancer IP:port)
         -> KUBE-SVC-<hash>        one rule per endpoint, each taken with probability
                                   1/(endpoints left), so every endpoint gets 1/n
            -> KUBE-SEP-<hash>     DNAT to the endpoint's ip:port
      ... last rule of KUBE-SERVICES, for addresses of this node:
         -> KUBE-NODEPORTS         one rule per nodePort
            -> KUBE-EXT-<hash>     mark for masquerade, then KUBE-SVC-<hash> (or the
                                   node-local KUBE-SVL-<hash> for externalTrafficPolicy Local)
    POSTROUTING
      -> KUBE-POSTROUTING          MASQUERADE what KUBE-MARK-MASQ marked (0x4000)

and in the filter table, KUBE-SERVICES / KUBE-EXTERNAL-SERVICES REJECT connections to a
Service that has no endpoints, so clients fail at once instead of timing out.

Chain names are upstream's: the prefix and the first 16 characters of the base32 of the
sha256 of "ns/name:port" + protocol (+ the endpoint for KUBE-SEP), so
`default/kubernetes:https` over tcp is KUBE-SVC-NPX46M4PTMTKRN6Y on every cluster.
`desired_rules` returns every chain with its rules; `restore_input` turns the difference
from what was written last into one iptables-restore input. `saved_form` says how
iptables-save prints a rule back, so that a full sync can compare the kernel's rules with
ours and rewrite only the chains that differ.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import math
import re
from dataclasses import dataclass

from minikube_py.proxy.serviceports import Endpoint, ServicePort

MASQ_MARK = "0x4000"
TOP_CHAINS = {
    "filter": ("KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-NODEPORTS",
               "KUBE-PROXY-FIREWALL"),
    "nat": ("KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ"),
}
"""The proxy's fixed chains; per-service chains come and go with the Services."""
SERVICE_CHAIN_PREFIXES = ("KUBE-SVC-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-SEP-", "KUBE-FW-")

# (table, built-in chain, rule): how packets enter the proxy's chains. Ensured one by one
# (iptables -C, else -I) because a restore cannot add a rule to a built-in chain once.
JUMPS = (
    ("nat", "PREROUTING", ["-m", "comment", "--comment", "kubernetes service portals",
                           "-j", "KUBE-SERVICES"]),
    ("nat", "OUTPUT", ["-m", "comment", "--comment", "kubernetes service portals",
                       "-j", "KUBE-SERVICES"]),
    ("nat", "POSTROUTING", ["-m", "comment", "--comment", "kubernetes postrouting rules",
                            "-j", "KUBE-POSTROUTING"]),
    ("filter", "INPUT", ["-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment",
                         "kubernetes externally-visible service portals",
                         "-j", "KUBE-EXTERNAL-SERVICES"]),
    ("filter", "INPUT", ["-m", "comment", "--comment", "kubernetes health check service ports",
                         "-j", "KUBE-NODEPORTS"]),
    ("filter", "FORWARD", ["-m", "conntrack", "--ctstate", "NEW", "-m", "comment",
                           "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"]),
    ("filter", "FORWARD", ["-m", "conntrack", "--ctstate", "NEW", "-m", "comment",
                           "--comment", "kubernetes externally-visible service portals",
                           "-j", "KUBE-EXTERNAL-SERVICES"]),
    ("filter", "FORWARD", ["-m", "comment", "--comment", "kubernetes forwarding rules",
                           "-j", "KUBE-FORWARD"]),
    ("filter", "OUTPUT", ["-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment",
                          "kubernetes service portals", "-j", "KUBE-SERVICES"]),
)

Tables = dict[str, dict[str, list[str]]]
"""table -> chain -> its rules (each the text after `-A CHAIN `), in write order."""


def port_proto_hash(service_port_name: str, protocol: str, endpoint: str = "") -> str:
    """portProtoHash: 16 base32 characters of sha256(name + protocol [+ endpoint])."""
    digest = hashlib.sha256(f"{service_port_name}{protocol.lower()}{endpoint}".encode())
    return base64.b32encode(digest.digest()).decode()[:16]


def chain(prefix: str, port: ServicePort, endpoint: Endpoint | None = None) -> str:
    return prefix + port_proto_hash(port.service_port_name, port.protocol,
                                    str(endpoint) if endpoint else "")


def comment(text: str) -> str:
    """`-m comment --comment X`, quoted as iptables-save prints it (when it has spaces)."""
    return f'-m comment --comment "{text}"' if " " in text else f"-m comment --comment {text}"


@dataclass(frozen=True)
class ProxyConfig:
    """What the rules depend on besides the Services: this node and the pod network."""

    node_name: str
    cluster_cidr: str = ""


def empty_tables() -> Tables:
    return {table: {name: [] for name in names} for table, names in TOP_CHAINS.items()}


def service_rules(ports: list[ServicePort], config: ProxyConfig) -> Tables:
    """The rules of one Service's ports: its own chains, and its lines of the top chains
    (a fragment: `assemble` puts the fragments of all Services together)."""
    tables = empty_tables()
    for port in sorted(ports, key=lambda p: (p.service_port_name, p.protocol)):
        _service_port_rules(port, config, tables)
        if port.external_local and port.health_check_node_port:
            name = f"{port.namespace}/{port.name} health check node port"
            rule = (f"{comment(name)} -m tcp -p tcp --dport {port.health_check_node_port} "
                    "-j ACCEPT")
            if rule not in tables["filter"]["KUBE-NODEPORTS"]:
                tables["filter"]["KUBE-NODEPORTS"].append(rule)
    return tables


def assemble(fragments: list[Tables]) -> Tables:
    """syncProxyRules' output: the fixed rules, then every Service's fragment (in the
    order given), then the last rule of nat KUBE-SERVICES."""
    tables = empty_tables()
    nat, filter_ = tables["nat"], tables["filter"]
    nat["KUBE-POSTROUTING"] += [
        f"-m mark ! --mark {MASQ_MARK}/{MASQ_MARK} -j RETURN",
        f"-j MARK --xor-mark {MASQ_MARK}",
        f"{comment('kubernetes service traffic requiring SNAT')} -j MASQUERADE --random-fully",
    ]
    nat["KUBE-MARK-MASQ"].append(f"-j MARK --or-mark {MASQ_MARK}")
    filter_["KUBE-FORWARD"] += [
        "-m conntrack --ctstate INVALID -j DROP",
        f"{comment('kubernetes forwarding rules')} -m mark --mark {MASQ_MARK}/{MASQ_MARK} "
        "-j ACCEPT",
        f"{comment('kubernetes forwarding conntrack rule')} -m conntrack --ctstate "
        "RELATED,ESTABLISHED -j ACCEPT",
    ]
    for fragment in fragments:
        for table, chains in fragment.items():
            for name, rules in chains.items():
                if name in tables[table]:
                    tables[table][name] += rules
                else:
                    tables[table][name] = rules
    nat["KUBE-SERVICES"].append(
        f"{comment('kubernetes service nodeports; NOTE: this must be the last rule in this chain')}"
        " -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS")
    return tables


def desired_rules(ports: list[ServicePort], config: ProxyConfig) -> Tables:
    """Every chain the proxy wants for these ServicePorts, with its rules."""
    by_service: dict[tuple[str, str], list[ServicePort]] = {}
    for port in ports:
        by_service.setdefault((port.namespace, port.name), []).append(port)
    return assemble([service_rules(by_service[key], config) for key in sorted(by_service)])


def _service_port_rules(port: ServicePort, config: ProxyConfig, tables: Tables) -> None:
    """The rules of one ServicePort (see the module's diagram)."""
    nat, filter_ = tables["nat"], tables["filter"]
    name, proto = port.service_port_name, port.protocol.lower()
    match = f"-m {proto} -p {proto}"
    svc, svl, ext = chain("KUBE-SVC-", port), chain("KUBE-SVL-", port), chain("KUBE-EXT-", port)
    routing = port.routing(config.node_name)
    cluster = routing.cluster

    for ip in port.cluster_ips:
        destination = f"{match} -d {ip}/32 --dport {port.port}"
        if routing.internal:
            nat["KUBE-SERVICES"].append(f"{comment(name + ' cluster IP')} {destination} "
                                        f"-j {svl if port.internal_local else svc}")
        elif cluster:
            filter_["KUBE-SERVICES"].append(
                f"{comment(name + ' has no local endpoints')} {destination} -j DROP")
        else:
            filter_["KUBE-SERVICES"].append(
                f"{comment(name + ' has no endpoints')} {destination} -j REJECT")

    if port.has_external:
        _external_rules(port, config, tables, routing.external, svc, svl, ext, match)

    if routing.uses_cluster_chain:
        rules = nat.setdefault(svc, [])
        if config.cluster_cidr:
            for ip in port.cluster_ips:
                rules.append(f"{comment(name + ' cluster IP')} {match} -d {ip}/32 "
                             f"--dport {port.port} ! -s {config.cluster_cidr} -j KUBE-MARK-MASQ")
        rules += _endpoint_jumps(port, cluster)
    if routing.uses_local_chain:
        nat.setdefault(svl, []).extend(_endpoint_jumps(port, routing.local))
    for endpoint in routing.chained:
        sep = chain("KUBE-SEP-", port, endpoint)
        affinity = (f"-m recent --name {sep} --set " if port.session_affinity_seconds else "")
        nat[sep] = [f"{comment(name)} -s {endpoint.ip}/32 -j KUBE-MARK-MASQ",
                    f"{comment(name)} {affinity}{match} -j DNAT --to-destination {endpoint}"]


def _external_rules(port: ServicePort, config: ProxyConfig, tables: Tables,
                    external: list[Endpoint], svc: str, svl: str, ext: str,
                    match: str) -> None:
    """NodePort, load-balancer and external IPs: through KUBE-EXT-<hash>, or REJECT."""
    nat, filter_ = tables["nat"], tables["filter"]
    name = port.service_port_name
    targets = [(ip, f"{name} loadbalancer IP") for ip in port.load_balancer_ips]
    targets += [(ip, f"{name} external IP") for ip in port.external_ips]
    if not external:
        reason = "has no local endpoints" if port.usable_endpoints() else "has no endpoints"
        verdict = "DROP" if port.usable_endpoints() else "REJECT"
        for ip, _ in targets:
            filter_["KUBE-EXTERNAL-SERVICES"].append(
                f"{comment(name + ' ' + reason)} {match} -d {ip}/32 --dport {port.port} "
                f"-j {verdict}")
        if port.node_port:
            filter_["KUBE-EXTERNAL-SERVICES"].append(
                f"{comment(name + ' ' + reason)} -m addrtype --dst-type LOCAL {match} "
                f"--dport {port.node_port} -j {verdict}")
        return
    for ip, text in targets:
        nat["KUBE-SERVICES"].append(
            f"{comment(text)} {match} -d {ip}/32 --dport {port.port} -j {ext}")
    if port.node_port:
        nat["KUBE-NODEPORTS"].append(f"{comment(name)} {match} --dport {port.node_port} "
                                     f"-j {ext}")
    rules = nat.setdefault(ext, [])
    if port.external_local:
        if config.cluster_cidr:
            rules.append(f"{comment('pod traffic for ' + name + ' external destinations')} "
                         f"-s {config.cluster_cidr} -j {svc}")
        rules += [
            f"{comment('masquerade LOCAL traffic for ' + name + ' external destinations')} "
            "-m addrtype --src-type LOCAL -j KUBE-MARK-MASQ",
            f"{comment('route LOCAL traffic for ' + name + ' external destinations')} "
            f"-m addrtype --src-type LOCAL -j {svc}",
            f"-j {svl}",
        ]
    else:
        rules += [f"{comment('masquerade traffic for ' + name + ' external destinations')} "
                  "-j KUBE-MARK-MASQ", f"-j {svc}"]


def _endpoint_jumps(port: ServicePort, endpoints: list[Endpoint]) -> list[str]:
    """Affinity checks, then the probability cascade: endpoint i of n is taken with
    probability 1/(n-i), so each ends up with 1/n of new connections."""
    name = port.service_port_name
    rules = []
    if port.session_affinity_seconds:
        for endpoint in endpoints:
            sep = chain("KUBE-SEP-", port, endpoint)
            rules.append(f"{comment(f'{name} -> {endpoint}')} -m recent --name {sep} --rcheck "
                         f"--seconds {port.session_affinity_seconds} --reap -j {sep}")
    for i, endpoint in enumerate(endpoints):
        sep = chain("KUBE-SEP-", port, endpoint)
        left = len(endpoints) - i
        statistic = (f" -m statistic --mode random --probability {1 / left:.10f}"
                     if left > 1 else "")
        rules.append(f"{comment(f'{name} -> {endpoint}')}{statistic} -j {sep}")
    return rules


def restore_input(desired: Tables, written: Tables, *, stale: dict[str, set[str]]) -> str:
    """One iptables-restore --noflush input: every chain of `desired` that differs from
    `written` is declared (which flushes it) and refilled; chains in `stale` (and chains
    written before that are no longer desired) are flushed and deleted. Pass an empty
    `written` for a full sync."""
    lines = []
    for table in ("filter", "nat"):
        wanted = desired.get(table) or {}
        before = written.get(table) or {}
        changed = [name for name, rules in wanted.items() if before.get(name) != rules]
        gone = sorted((set(before) | stale.get(table, set())) - set(wanted))
        if not changed and not gone:
            continue
        lines.append(f"*{table}")
        lines += [f":{name} - [0:0]" for name in changed + gone]
        for name in changed:
            lines += [f"-A {name} {rule}" for rule in wanted[name]]
        lines += [f"-X {name}" for name in gone]
        lines.append("COMMIT")
    return "\n".join(lines) + "\n" if lines else ""


TOKEN = re.compile(r'"[^"]*"|\S+')
ADDRESS_OPTIONS = ("-s", "-d", "-i", "-o", "-p")
"""The options iptables-save prints first, in this order, whatever order they were given in."""


def rule_text(tokens: list[str]) -> str:
    """A rule given as arguments (as in JUMPS), written as restore input: quoted where
    an argument has spaces."""
    return " ".join(f'"{token}"' if " " in token else token for token in tokens)


@functools.lru_cache(maxsize=1 << 17)
def saved_form(rule: str) -> str:
    """How `iptables-save` (nf_tables backend) prints back a rule the proxy wrote, the text
    after `-A CHAIN`: the address and protocol options first; comments always quoted;
    probabilities as the kernel keeps them (a fraction of 2^31, 11 decimals); `recent`
    with its defaults spelt out; MARK's --or-mark/--xor-mark as --set-xmark; REJECT with
    its default ICMP type. A rule this gets wrong is only rewritten by every full sync."""
    tokens = [token.strip('"') for token in TOKEN.findall(rule)]
    first: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(tokens):
        negated = tokens[i] == "!" and i + 1 < len(tokens) and tokens[i + 1] in ADDRESS_OPTIONS
        option = tokens[i + 1] if negated else tokens[i]
        if option in ADDRESS_OPTIONS:
            value = tokens[i + 2 if negated else i + 1]
            first[option] = f"{'! ' if negated else ''}{option} {value}"
            i += 3 if negated else 2
        else:
            rest.append(tokens[i])
            i += 1
    parts = [first[option] for option in ADDRESS_OPTIONS if option in first]
    for segment in _segments(rest):
        parts.append(" ".join(_saved_segment(segment)))
    return " ".join(parts)


def _segments(tokens: list[str]) -> list[list[str]]:
    """`-m MODULE options...` and `-j TARGET options...`, each on its own."""
    segments: list[list[str]] = []
    for token in tokens:
        if token in ("-m", "-j") or not segments:
            segments.append([])
        segments[-1].append(token)
    return segments


def _saved_segment(segment: list[str]) -> list[str]:
    kind, name, options = segment[0], segment[1] if len(segment) > 1 else "", segment[2:]
    if kind == "-m" and name == "comment":
        return [kind, name, "--comment", f'"{options[1]}"']
    if kind == "-m" and name == "statistic" and "--probability" in options:
        at = options.index("--probability") + 1
        fraction = math.floor(float(options[at]) * 0x80000000 + 0.5) / 0x80000000
        options = [*options[:at], f"{fraction:.11f}", *options[at + 1:]]
    elif kind == "-m" and name == "recent":
        flags = [o for o in options if o in ("--set", "--rcheck", "--update", "--remove")]
        seconds = (["--seconds", options[options.index("--seconds") + 1]]
                   if "--seconds" in options else [])
        reap = ["--reap"] if "--reap" in options else []
        recent = options[options.index("--name") + 1] if "--name" in options else "DEFAULT"
        options = [*flags, *seconds, *reap, "--name", recent, "--mask", "255.255.255.255",
                   "--rsource"]
    elif kind == "-j" and name == "MARK" and options[:1] == ["--or-mark"]:
        options = ["--set-xmark", f"{options[1]}/{options[1]}"]
    elif kind == "-j" and name == "MARK" and options[:1] == ["--xor-mark"]:
        options = ["--set-xmark", f"{options[1]}/0x0"]
    elif kind == "-j" and name == "REJECT" and not options:
        options = ["--reject-with", "icmp-port-unreachable"]
    return [kind, name, *options]


def rule_count(tables: Tables, table: str) -> int:
    return sum(len(rules) for rules in (tables.get(table) or {}).values())
