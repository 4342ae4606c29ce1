"""The NetworkPolicy enforcer's pure logic: which pods a policy isolates, what each rule
allows, and the nft table that says so (proxy/netpol/policies.py, nftrules.py). The
kernel's side is in tests/e2e/test_network_policy.py; here `nft` only parses the table,
in a network namespace of its own."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest

from minikube_py.proxy.netpol.controller import compile_node
from minikube_py.proxy.netpol.nftrules import TABLE, full_input, incremental_input
from minikube_py.proxy.netpol.policies import (
    PodInfo,
    PolicyIndex,
    PortMatch,
    collapse,
    ip_block_networks,
)


def pod(namespace: str, name: str, ip: str, node: str = "node-1", **extra: Any
        ) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": "c", "ports": [
        {"name": "serve-80-tcp", "containerPort": 80},
        {"name": "dns", "containerPort": 5353, "protocol": "UDP"}]}]}
    spec.update(extra.pop("spec", {}))
    return {"metadata": {"namespace": namespace, "name": name,
                         "labels": extra.pop("labels", {"pod": name})},
            "spec": spec, "status": {"podIP": ip, "phase": "Running", **extra}}


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name,
                         "labels": {"kubernetes.io/metadata.name": name, **labels}}}


def policy(ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name}, "spec": spec}


PODS = [pod("x", "a", "10.244.1.2"), pod("x", "b", "10.244.1.3"),
        pod("y", "a", "10.244.2.2", node="node-2"), pod("y", "b", "10.244.1.4")]
NAMESPACES = [namespace("x"), namespace("y", team="blue")]


def table_text(policies: list[dict[str, Any]], pods: list[dict[str, Any]],
               namespaces: list[dict[str, Any]], node: str) -> str:
    return full_input(compile_node(policies, pods, namespaces, node))


def index() -> PolicyIndex:
    return PolicyIndex([info for p in PODS if (info := PodInfo.from_pod(p))],
                       {n["metadata"]["name"]: n["metadata"]["labels"] for n in NAMESPACES})


def test_ip_block_is_the_cidr_minus_its_excepts() -> None:
    assert ip_block_networks("10.0.0.0/8", ["10.1.0.0/16", "10.0.0.0/9"]) == ["10.128.0.0/9"]
    assert ip_block_networks("10.244.1.7/32", []) == ["10.244.1.7/32"]
    assert ip_block_networks("10.244.1.0/24", ["10.244.1.0/24"]) == []
    assert ip_block_networks("fd00::/8", []) == []


def test_except_inside_the_block_leaves_the_rest() -> None:
    networks = ip_block_networks("10.244.1.0/30", ["10.244.1.1/32"])
    assert networks == ["10.244.1.0/32", "10.244.1.2/31"]


def test_collapse_merges_pods_into_an_overlapping_block() -> None:
    assert collapse(["10.244.1.2", "10.244.1.0/24", "10.244.2.9"]) == [
        "10.244.1.0/24", "10.244.2.9"]


def test_a_pod_takes_no_part_without_an_ip_on_host_network_or_finished() -> None:
    assert PodInfo.from_pod(pod("x", "p", "")) is None
    assert PodInfo.from_pod(pod("x", "p", "172.18.0.11", spec={"hostNetwork": True})) is None
    assert PodInfo.from_pod(pod("x", "p", "10.244.1.9", phase="Succeeded")) is None
    info = PodInfo.from_pod(pod("x", "p", "10.244.1.9"))
    assert info is not None and info.named_ports == {("serve-80-tcp", "TCP"): 80,
                                                     ("dns", "UDP"): 5353}


def test_policy_types_decide_the_directions_a_pod_is_isolated_for() -> None:
    compiled = index().compile(policy("x", "p", {"podSelector": {}, "egress": [{}],
                                                 "policyTypes": ["Egress"]}))
    assert compiled.ingress is None and compiled.egress is not None
    compiled = index().compile(policy("x", "p", {"podSelector": {}}))
    assert compiled.ingress == [] and compiled.egress is None
    # unset policyTypes, as upstream defaults them: Ingress, and Egress when egress is given
    compiled = index().compile(policy("x", "p", {"podSelector": {}, "egress": [{}]}))
    assert compiled.ingress == [] and compiled.egress is not None


def test_pod_selector_alone_selects_peers_of_the_policys_namespace_only() -> None:
    compiled = index().compile(policy("x", "p", {"podSelector": {}, "ingress": [
        {"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}]}))
    assert compiled.ingress is not None and compiled.ingress[0].peers == ["10.244.1.3"]


def test_namespace_selector_with_pod_selector_is_an_and() -> None:
    compiled = index().compile(policy("x", "p", {"podSelector": {}, "ingress": [{"from": [
        {"namespaceSelector": {"matchLabels": {"team": "blue"}},
         "podSelector": {"matchLabels": {"pod": "a"}}}]}]}))
    assert compiled.ingress is not None and compiled.ingress[0].peers == ["10.244.2.2"]


def test_the_same_peers_in_two_namespaces_are_each_namespaces_pods() -> None:
    """One index compiles both: a `from` repeated by policies of two namespaces is
    resolved once for each namespace, not once for both."""
    peers = {"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}
    compiled = index()
    in_x = compiled.compile(policy("x", "p", {"podSelector": {}, "ingress": [peers]}))
    in_y = compiled.compile(policy("y", "p", {"podSelector": {}, "ingress": [peers]}))
    assert in_x.ingress is not None and in_x.ingress[0].peers == ["10.244.1.3"]
    assert in_y.ingress is not None and in_y.ingress[0].peers == ["10.244.1.4"]


def test_a_selector_selects_the_pods_that_meet_all_its_requirements() -> None:
    """matchLabels and matchExpressions together, and In of several values, against
    pods whose labels meet some of them."""
    labelled = [pod("z", name, f"10.244.3.{i + 2}", labels=labels) for i, (name, labels) in
                enumerate((("web-a", {"app": "web", "tier": "a"}),
                           ("web-b", {"app": "web", "tier": "b"}),
                           ("web", {"app": "web"}),
                           ("db-a", {"app": "db", "tier": "a"})))]
    pods = PolicyIndex([info for p in labelled if (info := PodInfo.from_pod(p))], {})
    selected = {name: [p.name for p in pods.pods_matching("z", selector)]
                for name, selector in (
                    ("app=web,tier in (a)", {"matchLabels": {"app": "web"}, "matchExpressions": [
                        {"key": "tier", "operator": "In", "values": ["a"]}]}),
                    ("tier=a,app notin (web)", {"matchLabels": {"tier": "a"}, "matchExpressions": [
                        {"key": "app", "operator": "NotIn", "values": ["web"]}]}),
                    ("tier in (a, b)", {"matchExpressions": [
                        {"key": "tier", "operator": "In", "values": ["a", "b"]}]}),
                    ("app=cache", {"matchLabels": {"app": "cache"}}))}
    assert selected == {"app=web,tier in (a)": ["web-a"], "tier=a,app notin (web)": ["db-a"],
                        "tier in (a, b)": ["db-a", "web-a", "web-b"], "app=cache": []}


def test_two_peers_are_an_or() -> None:
    compiled = index().compile(policy("x", "p", {"podSelector": {}, "ingress": [{"from": [
        {"namespaceSelector": {"matchLabels": {"team": "blue"}}},
        {"podSelector": {"matchLabels": {"pod": "b"}}}]}]}))
    assert compiled.ingress is not None
    assert compiled.ingress[0].peers == ["10.244.1.3", "10.244.1.4", "10.244.2.2"]


def test_ports_default_to_tcp_and_keep_ranges_and_names() -> None:
    compiled = index().compile(policy("x", "p", {"podSelector": {}, "ingress": [{"ports": [
        {"port": 80}, {"port": 81, "endPort": 90, "protocol": "UDP"},
        {"port": "serve-80-tcp"}, {"protocol": "SCTP"}]}]}))
    assert compiled.ingress is not None and compiled.ingress[0].peers is None
    assert compiled.ingress[0].ports == [
        PortMatch("TCP", 80), PortMatch("UDP", 81, 90), PortMatch("TCP", name="serve-80-tcp"),
        PortMatch("SCTP")]


def test_only_the_nodes_isolated_pods_are_in_its_maps() -> None:
    text = table_text([policy("x", "deny", {"podSelector": {}, "policyTypes": ["Ingress"]}),
                         policy("y", "deny", {"podSelector": {}, "policyTypes": ["Egress"]})],
                        PODS, NAMESPACES, "node-1")
    assert ("ip daddr vmap { 10.244.1.2 : goto ingress-x/a, 10.244.1.3 : goto ingress-x/b }"
            in text)
    assert "ip saddr vmap { 10.244.1.4 : goto egress-y/b }" in text
    assert "10.244.2.2 : goto" not in text  # y/a lives on node-2
    assert f"add rule {TABLE} ingress-x/a counter drop" in text


def test_a_named_ingress_port_resolves_on_each_selected_pod() -> None:
    pods = [*PODS, pod("x", "c", "10.244.1.9", spec={"containers": [{"name": "c", "ports": [
        {"name": "serve-80-tcp", "containerPort": 8080}]}]})]
    text = table_text([policy("x", "named", {"podSelector": {}, "ingress": [
        {"ports": [{"port": "serve-80-tcp", "protocol": "TCP"}]}]})], pods, NAMESPACES,
        "node-1")
    assert ("ip daddr . meta l4proto . th dport { 10.244.1.2 . tcp . 80, 10.244.1.3 . tcp . 80,"
            " 10.244.1.9 . tcp . 8080 } accept") in text


def test_a_named_egress_port_resolves_on_the_pods_traffic_goes_to() -> None:
    text = table_text([policy("x", "dns", {"podSelector": {"matchLabels": {"pod": "a"}},
                                             "egress": [{"ports": [{"port": "dns",
                                                                    "protocol": "UDP"}]}]})],
                        PODS, NAMESPACES, "node-1")
    assert "10.244.2.2 . udp . 5353" in text and "10.244.1.4 . udp . 5353" in text


def test_a_rule_whose_peers_select_nobody_allows_nothing() -> None:
    text = table_text([policy("x", "none", {"podSelector": {}, "ingress": [
        {"from": [{"podSelector": {"matchLabels": {"pod": "nobody"}}}]}]})],
        PODS, NAMESPACES, "node-1")
    assert f"add chain {TABLE} policy-x/none-ingress" in text
    assert f"add rule {TABLE} policy-x/none-ingress" not in text


DENY_X = policy("x", "deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
ALLOW_B = policy("x", "allow-b", {"podSelector": {"matchLabels": {"pod": "a"}}, "ingress": [
    {"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}]})


def test_an_incremental_write_touches_only_what_changed() -> None:
    before = compile_node([DENY_X, ALLOW_B], PODS, NAMESPACES, "node-1")
    after = compile_node([DENY_X], PODS, NAMESPACES, "node-1")
    lines = incremental_input(after, before).splitlines()
    assert lines == [f"flush chain {TABLE} ingress-x/a",
                     f"add rule {TABLE} ingress-x/a jump policy-x/deny-ingress",
                     f"add rule {TABLE} ingress-x/a counter drop",
                     f"flush chain {TABLE} policy-x/allow-b-ingress",
                     f"delete chain {TABLE} policy-x/allow-b-ingress"]
    assert incremental_input(after, after) == ""


nft_present = pytest.mark.skipif(not shutil.which("nft") or not shutil.which("unshare"),
                                 reason="nft (make apt installs nftables) and unshare")


@nft_present
def test_nft_takes_a_full_write_then_incremental_ones() -> None:
    first = compile_node([DENY_X], PODS, NAMESPACES, "node-1")
    second = compile_node([DENY_X, ALLOW_B], PODS, NAMESPACES, "node-1")
    script = (full_input(first) + incremental_input(second, first)
              + incremental_input(first, second)
              + incremental_input(compile_node([], PODS, NAMESPACES, "node-1"), first))
    done = subprocess.run(["unshare", "--net", "sh", "-c",
                           f"nft -f - && nft list table {TABLE}"], input=script,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "allow-b" not in done.stdout and "ingress-x/a" not in done.stdout


@nft_present
def test_nft_accepts_the_table() -> None:
    text = table_text([
        policy("x", "all", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                            "ingress": [{"from": [
                                {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.244.2.0/24"]}},
                                {"namespaceSelector": {}}],
                                "ports": [{"port": 80}, {"port": 81, "endPort": 90},
                                          {"port": "serve-80-tcp"}, {"protocol": "SCTP"}]}],
                            "egress": [{"to": [{"podSelector": {}}]}]})],
        PODS, NAMESPACES, "node-1")
    done = subprocess.run(["unshare", "--net", "nft", "-c", "-f", "-"], input=text,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
