"""The proxy's nftables ruleset (nftrules.py), as upstream's nftables proxier writes it."""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.proxy.nftrules import (
    assemble,
    chain_base,
    endpoint_chain,
    full_input,
    incremental_input,
    service_ruleset,
)
from minikube_py.proxy.rules import ProxyConfig
from minikube_py.proxy.serviceports import service_ports

CONFIG = ProxyConfig(node_name="node-1", cluster_cidr="10.244.0.0/16")


def service(name: str = "web", cluster_ip: str = "10.96.0.50", **spec: Any) -> Obj:
    body: Obj = {"clusterIP": cluster_ip, "ports": [
        {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}
    body.update(spec)
    return {"metadata": {"name": name, "namespace": "default"}, "spec": body}


def endpoint_slice(addresses: list[str], *, name: str = "web") -> Obj:
    return {"metadata": {"name": f"{name}-x", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": [a], "nodeName": "node-1",
                           "conditions": {"ready": True}} for a in addresses]}


def test_chain_names_are_a_hash_then_namespace_name_protocol_port() -> None:
    ports = service_ports([service()], [endpoint_slice(["10.244.1.2"])])
    base = chain_base(ports[0])
    assert base.endswith("-default/web/tcp/http") and len(base.split("-")[0]) == 8
    assert endpoint_chain(ports[0], ports[0].endpoints[0]).startswith("endpoint-")
    assert endpoint_chain(ports[0], ports[0].endpoints[0]).endswith(
        "-default/web/tcp/http__10.244.1.2/8080")


def test_cluster_ip_picks_an_endpoint_with_one_numgen_vmap() -> None:
    ports = service_ports([service()], [endpoint_slice(["10.244.1.2", "10.244.1.3",
                                                       "10.244.1.4"])])
    ruleset = service_ruleset(ports, CONFIG)
    chain = f"service-{chain_base(ports[0])}"
    assert ruleset.elements["service-ips"] == {"10.96.0.50 . tcp . 80": f"goto {chain}"}
    rules = ruleset.chains[chain]
    assert rules[0] == ("ip daddr 10.96.0.50 tcp dport 80 ip saddr != 10.244.0.0/16 "
                        "jump mark-for-masquerade")
    endpoints = [endpoint_chain(ports[0], e) for e in ports[0].endpoints]
    assert rules[1] == ("numgen random mod 3 vmap { " + ", ".join(
        f"{i} : goto {name}" for i, name in enumerate(endpoints)) + " }")
    assert ruleset.chains[endpoints[0]] == [
        "ip saddr 10.244.1.2 jump mark-for-masquerade",
        "meta l4proto tcp dnat to 10.244.1.2:8080"]


def test_service_without_endpoints_is_rejected_through_the_no_endpoint_maps() -> None:
    ports = service_ports([service(type="NodePort", ports=[
        {"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080}])], [])
    ruleset = service_ruleset(ports, CONFIG)
    assert ruleset.chains == {}
    assert ruleset.elements["no-endpoint-services"] == {
        "10.96.0.50 . tcp . 80": "goto reject-chain"}
    assert ruleset.elements["no-endpoint-nodeports"] == {"tcp . 30080": "goto reject-chain"}


def test_full_input_replaces_the_table_in_one_transaction() -> None:
    ports = service_ports([service()], [endpoint_slice(["10.244.1.2"])])
    lines = full_input(assemble([service_ruleset(ports, CONFIG)])).splitlines()
    assert lines[:3] == ["add table ip kube-proxy", "delete table ip kube-proxy",
                         'add table ip kube-proxy { comment "rules for kube-proxy" ; }']
    assert ("add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority "
            "dstnat ; }") in lines


def test_incremental_input_touches_only_the_changed_service() -> None:
    def table(web: list[str], api: list[str]) -> Any:
        return assemble([
            service_ruleset(service_ports([service("api", "10.96.0.60")],
                                          [endpoint_slice(api, name="api")]), CONFIG),
            service_ruleset(service_ports([service()], [endpoint_slice(web)]), CONFIG)])

    before = table(["10.244.1.2"], ["10.244.2.2"])
    assert incremental_input(before, before) == ""
    text = incremental_input(table(["10.244.1.3"], ["10.244.2.2"]), before)
    assert "default/api/" not in text and "10.96.0.60" not in text
    assert "flush chain ip kube-proxy service-" in text
    assert text.splitlines()[-1].startswith(
        "delete chain ip kube-proxy endpoint-") and "10.244.1.2/8080" in text.splitlines()[-1]
    gone = incremental_input(assemble([]), before)
    assert "delete element ip kube-proxy service-ips { 10.96.0.60 . tcp . 80, " in gone


def test_a_changed_affinity_timeout_declares_the_set_again() -> None:
    def table(seconds: int) -> Any:
        spec = {"sessionAffinity": "ClientIP",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": seconds}}}
        return assemble([service_ruleset(service_ports(
            [service(**spec)], [endpoint_slice(["10.244.1.2"])]), CONFIG)])

    text = incremental_input(table(120), table(60))
    assert "add set ip kube-proxy affinity-" in text and "timeout 120s" in text
    assert incremental_input(table(60), table(60)) == ""
