"""The node's NetworkPolicy rules as one nftables table, `inet kube-network-policies`.

Two base chains on the forward hook, where every packet between two pods, or between a
pod and anything off the node, passes after the proxy's DNAT (so a Service's packet is
judged by the endpoint pod it now goes to):

    chain egress   (priority filter - 10)          chain ingress  (priority filter - 5)
      ct state established,related accept            ct state established,related accept
      ip saddr vmap { <isolated pod> : goto ... }     ip daddr vmap { <isolated pod> : goto ... }

    chain egress-<ns>/<pod>: jump policy-<ns>/<policy>-egress (one per policy selecting
      the pod for egress), then `counter drop`. Ingress alike.
    chain policy-<ns>/<policy>-egress: one `accept` per rule and port, e.g.
      ip daddr { 10.244.1.0/24, 10.244.2.7 } meta l4proto tcp th dport 80 accept

Only this node's pods are in the maps: the sending node judges egress and the receiving
node ingress, so a packet between two nodes is judged once for each direction. An
`accept` ends only the base chain it was given in; the packet goes on to the other base
chain, so a packet from an egress-isolated pod to an ingress-isolated pod on the same
node must pass both. Traffic from the node itself (the kubelet's probes, host-network
pods) takes the output hook and traffic to it the input hook: neither is judged, as
upstream's NetworkPolicy docs say ("traffic to and from the node where a Pod is running
is always allowed").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minikube_py.proxy.netpol.policies import (
    CompiledPolicy,
    CompiledRule,
    PodInfo,
    PolicyIndex,
    PortMatch,
)

TABLE = "inet kube-network-policies"
BASE_CHAINS = {"egress": ("saddr", "daddr", 10), "ingress": ("daddr", "saddr", 5)}
"""direction -> (the isolated pod's address field, the peer's, how far before the filter
priority its base chain runs)."""


def policy_chain(policy: CompiledPolicy, direction: str) -> str:
    return f"policy-{policy.namespace}/{policy.name}-{direction}"


def pod_chain(pod: PodInfo, direction: str) -> str:
    return f"{direction}-{pod.namespace}/{pod.name}"


def _port_match(match: PortMatch, targets: list[tuple[str, str, int]]) -> str | None:
    """The nft match of one port ("" for any port; None: it matches nothing here, a
    named port no target pod has)."""
    protocol = match.protocol.lower()
    if match.name is not None:
        if not targets:
            return None
        elements = ", ".join(f"{ip} . {proto.lower()} . {port}"
                             for ip, proto, port in sorted(set(targets)))
        return f"ip daddr . meta l4proto . th dport {{ {elements} }}"
    if match.port is None:
        return f"meta l4proto {protocol}"
    ports = f"{match.port}-{match.end_port}" if match.end_port else str(match.port)
    return f"meta l4proto {protocol} th dport {ports}"


def rule_lines(rule: CompiledRule, peer_field: str,
               named_targets: dict[PortMatch, list[tuple[str, str, int]]]) -> list[str]:
    """One ingress or egress rule as `accept` lines (none when it allows nothing)."""
    if rule.peers is not None and not rule.peers:
        return []
    peer = f"ip {peer_field} {{ {', '.join(rule.peers)} }} " if rule.peers else ""
    if rule.ports is None:
        return [f"{peer}accept"]
    lines = []
    for match in rule.ports:
        port = _port_match(match, named_targets.get(match, []))
        if port is not None:
            lines.append(f"{peer}{port} accept")
    return lines


def policy_lines(index: PolicyIndex, policy: CompiledPolicy, direction: str) -> list[str]:
    """A policy chain's rules for one direction. A named port is resolved on the pod the
    traffic goes to: for ingress the policy's own selected pods, for egress any pod."""
    rules = getattr(policy, direction)
    peer_field = BASE_CHAINS[direction][1]
    targets = policy.selected if direction == "ingress" else index.pods
    lines = []
    for rule in rules:
        named = {match: index.named_port_targets(targets, match)
                 for match in rule.ports or [] if match.name is not None}
        lines += rule_lines(rule, peer_field, named)
    return lines


@dataclass
class Ruleset:
    """The table's chains and their rules, as the enforcer wants them."""

    base: dict[str, list[str]] = field(default_factory=dict)
    """egress and ingress, the base chains."""
    chains: dict[str, list[str]] = field(default_factory=dict)
    """the pods' and policies' chains."""

    def rule_count(self) -> int:
        return sum(len(rules) for rules in (*self.base.values(), *self.chains.values()))


def ruleset(index: PolicyIndex, policies: list[CompiledPolicy], node: str) -> Ruleset:
    """The table on `node`: the chains of the policies that select its pods, and of
    those pods."""
    wanted = Ruleset()
    for direction, (own_field, _, _) in BASE_CHAINS.items():
        isolated: dict[tuple[str, str], tuple[PodInfo, list[CompiledPolicy]]] = {}
        for policy in policies:
            if getattr(policy, direction) is None:
                continue
            local = [pod for pod in policy.selected if pod.node == node]
            if not local:
                continue
            wanted.chains[policy_chain(policy, direction)] = policy_lines(
                index, policy, direction)
            for pod in local:
                isolated.setdefault((pod.namespace, pod.name), (pod, []))[1].append(policy)
        for _, (pod, selecting) in sorted(isolated.items()):
            wanted.chains[pod_chain(pod, direction)] = [
                *(f"jump {policy_chain(p, direction)}" for p in selecting), "counter drop"]
        wanted.base[direction] = ["ct state established,related accept"]
        if isolated:
            verdicts = ", ".join(f"{pod.ip} : goto {pod_chain(pod, direction)}"
                                 for pod, _ in sorted(isolated.values(), key=lambda v: v[0].ip))
            wanted.base[direction].append(f"ip {own_field} vmap {{ {verdicts} }}")
    return wanted


def _rules(name: str, rules: list[str]) -> list[str]:
    return [f"add rule {TABLE} {name} {rule}" for rule in rules]


def full_input(wanted: Ruleset) -> str:
    """One `nft -f` transaction that replaces the table (`add table` first, so the
    delete never fails on a fresh node): no packet sees half of it."""
    lines = [f"add table {TABLE}", f"delete table {TABLE}",
             f'add table {TABLE} {{ comment "NetworkPolicy enforcement" ; }}']
    for direction, (_, _, priority) in BASE_CHAINS.items():
        lines.append(f"add chain {TABLE} {direction} {{ type filter hook forward "
                     f"priority filter - {priority} ; policy accept ; }}")
    lines += [f"add chain {TABLE} {name}" for name in wanted.chains]
    for name, rules in wanted.chains.items():
        lines += _rules(name, rules)
    for name, rules in wanted.base.items():
        lines += _rules(name, rules)
    return "\n".join(lines) + "\n"


def incremental_input(wanted: Ruleset, written: Ruleset) -> str:
    """One transaction with only what differs from `written`: new chains added, changed
    ones (base chains included) flushed and refilled, then the chains no longer wanted
    flushed and deleted, once nothing jumps to them. Empty when nothing differs."""
    lines = [f"add chain {TABLE} {name}" for name in wanted.chains
             if name not in written.chains]
    for group, before in ((wanted.chains, written.chains), (wanted.base, written.base)):
        for name, rules in group.items():
            if before.get(name) == rules:
                continue
            if name in before:
                lines.append(f"flush chain {TABLE} {name}")
            lines += _rules(name, rules)
    gone = [name for name in written.chains if name not in wanted.chains]
    lines += [f"flush chain {TABLE} {name}" for name in gone]  # their jumps go first
    lines += [f"delete chain {TABLE} {name}" for name in gone]
    return "\n".join(lines) + "\n" if lines else ""
