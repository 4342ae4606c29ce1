"""`describe networkpolicy` (describe.go: describeNetworkPolicy, describeNetworkPolicySpec).

    Name, Namespace, Created on, Labels, Annotations
    Spec: PodSelector, the allowed ingress traffic (ports, sources), the allowed egress
          traffic (ports, destinations), Policy Types
"""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    print_annotations_multiline,
    print_labels_multiline,
)
from minikube_py.mkctl.describers.writer import LEVEL_0, LEVEL_1, LEVEL_2, PrefixWriter

INDENT = "    "


def network_policy_describer(policy: Obj, lookups: Lookups, settings: Settings) -> str:
    """describeNetworkPolicy: kubectl shows no events for network policies."""
    meta = policy.get("metadata") or {}
    spec = policy.get("spec") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    w.write(LEVEL_0, f"Created on:\t{go_time_string(meta.get('creationTimestamp'))}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    w.write(LEVEL_0, "Spec:\n")
    w.write(LEVEL_1, "PodSelector: ")
    selector = spec.get("podSelector") or {}
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        w.write(LEVEL_2, "<none> (Allowing the specific traffic to all pods in this "
                         "namespace)\n")
    else:
        w.write(LEVEL_2, f"{format_label_selector(selector)}\n")
    policy_types = spec.get("policyTypes") or []
    if not policy_types or "Ingress" in policy_types:
        w.write(LEVEL_1, "Allowing ingress traffic:\n")
        print_rules(w, spec.get("ingress") or [], "from", "From", "source", "ingress")
    else:
        w.write(LEVEL_1, "Not affecting ingress traffic\n")
    if "Egress" in policy_types:
        w.write(LEVEL_1, "Allowing egress traffic:\n")
        print_rules(w, spec.get("egress") or [], "to", "To", "destination", "egress")
    else:
        w.write(LEVEL_1, "Not affecting egress traffic\n")
    w.write(LEVEL_1, f"Policy Types: {', '.join(policy_types)}\n")
    return w.tabbed()


def format_label_selector(selector: Obj) -> str:
    """metav1.FormatLabelSelector: the selector's text, "<none>" when it selects all."""
    from minikube_py.api.selectors import label_selector_to_string

    return label_selector_to_string(selector) or "<none>"


def go_time_string(timestamp: str | None) -> str:
    """time.Time.String() of a metav1.Time (decoded into the local time zone)."""
    if not timestamp:
        return "0001-01-01 00:00:00 +0000 UTC"
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S %z %Z")


def print_rules(w: PrefixWriter, rules: list[Obj], peers_field: str, title: str,
                direction: str, isolated: str) -> None:
    """printNetworkPolicySpecIngressFrom / EgressTo: per rule, its ports then its peers,
    rules apart by a rule of dashes."""
    if not rules:
        w.write(LEVEL_0, f"{INDENT}<none> (Selected pods are isolated for {isolated} "
                         "connectivity)\n")
        return
    for i, rule in enumerate(rules):
        ports = rule.get("ports") or []
        if not ports:
            w.write(LEVEL_0, f"{INDENT}To Port: <any> (traffic allowed to all ports)\n")
        for port in ports:
            number, protocol = port.get("port"), port.get("protocol") or "TCP"
            if port.get("endPort") is not None:
                w.write(LEVEL_0, f"{INDENT}To Port Range: {number}-{port['endPort']}/"
                                 f"{protocol}\n")
            else:
                shown = "<nil>" if number is None else str(number)
                w.write(LEVEL_0, f"{INDENT}To Port: {shown}/{protocol}\n")
        peers = rule.get(peers_field) or []
        if not peers:
            w.write(LEVEL_0, f"{INDENT}{title}: <any> (traffic not restricted by "
                             f"{direction})\n")
        for peer in peers:
            print_peer(w, peer, title)
        if i != len(rules) - 1:
            w.write(LEVEL_0, f"{INDENT}----------\n")


def print_peer(w: PrefixWriter, peer: Obj, title: str) -> None:
    """One source or destination: its selectors, or its IP block."""
    w.write(LEVEL_0, f"{INDENT}{title}:\n")
    pods, namespaces = peer.get("podSelector"), peer.get("namespaceSelector")
    if namespaces is not None:
        w.write(LEVEL_1, f"{INDENT}NamespaceSelector: {format_label_selector(namespaces)}\n")
    if pods is not None:
        w.write(LEVEL_1, f"{INDENT}PodSelector: {format_label_selector(pods)}\n")
    block = peer.get("ipBlock")
    if pods is None and namespaces is None and block is not None:
        w.write(LEVEL_1, f"{INDENT}IPBlock:\n")
        w.write(LEVEL_2, f"{INDENT}CIDR: {block.get('cidr', '')}\n")
        w.write(LEVEL_2, f"{INDENT}Except: {', '.join(block.get('except') or [])}\n")
