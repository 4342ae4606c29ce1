"""The proxy's rules (rules.py), as upstream's iptables proxier writes them."""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.proxy.rules import (
    ProxyConfig,
    chain,
    desired_rules,
    port_proto_hash,
    restore_input,
    saved_form,
)
from minikube_py.proxy.serviceports import ServicePort, service_ports

CONFIG = ProxyConfig(node_name="node-1", cluster_cidr="10.244.0.0/16")


def service(name: str = "web", **spec: Any) -> Obj:
    body: Obj = {"clusterIP": "10.96.0.50", "ports": [
        {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}
    body.update(spec)
    return {"metadata": {"name": name, "namespace": "default"}, "spec": body}


def endpoint_slice(addresses: list[str], *, name: str = "web", ready: bool = True,
                   node: str = "node-1", **conditions: bool) -> Obj:
    return {"metadata": {"name": f"{name}-x", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": [a], "nodeName": node,
                           "conditions": {"ready": ready, **conditions}} for a in addresses]}


def test_chain_names_are_upstreams() -> None:
    assert port_proto_hash("default/kubernetes:https", "TCP") == "NPX46M4PTMTKRN6Y"
    assert port_proto_hash("kube-system/kube-dns:dns", "UDP") == "TCOU7JCQXEZGVUNU"


def test_cluster_ip_with_three_endpoints_is_a_probability_cascade() -> None:
    ports = service_ports([service()], [endpoint_slice(["10.244.1.2", "10.244.1.3",
                                                       "10.244.1.4"])])
    tables = desired_rules(ports, CONFIG)
    svc = chain("KUBE-SVC-", ports[0])
    assert tables["nat"]["KUBE-SERVICES"][0] == (
        f'-m comment --comment "default/web:http cluster IP" -m tcp -p tcp '
        f"-d 10.96.0.50/32 --dport 80 -j {svc}")
    rules = tables["nat"][svc]
    assert rules[0].endswith("! -s 10.244.0.0/16 -j KUBE-MARK-MASQ")
    assert "--probability 0.3333333333" in rules[1]
    assert "--probability 0.5000000000" in rules[2]
    assert "statistic" not in rules[3]
    sep = chain("KUBE-SEP-", ports[0], ports[0].endpoints[0])
    assert tables["nat"][sep] == [
        "-m comment --comment default/web:http -s 10.244.1.2/32 -j KUBE-MARK-MASQ",
        "-m comment --comment default/web:http -m tcp -p tcp -j DNAT "
        "--to-destination 10.244.1.2:8080"]
    assert tables["nat"]["KUBE-SERVICES"][-1].endswith(
        "-m addrtype --dst-type LOCAL -j KUBE-NODEPORTS")


def test_service_without_endpoints_is_rejected_in_the_filter_table() -> None:
    tables = desired_rules(service_ports([service()], []), CONFIG)
    assert tables["filter"]["KUBE-SERVICES"] == [
        '-m comment --comment "default/web:http has no endpoints" -m tcp -p tcp '
        "-d 10.96.0.50/32 --dport 80 -j REJECT"]
    assert not any(name.startswith("KUBE-SVC-") for name in tables["nat"])


def test_unready_endpoints_are_left_out_unless_all_are_terminating() -> None:
    mixed = service_ports([service()], [endpoint_slice(["10.244.1.2"]),
                                        {**endpoint_slice(["10.244.1.9"], ready=False),
                                         "metadata": {"name": "web-y", "namespace": "default",
                                                      "labels": {"kubernetes.io/service-name":
                                                                 "web"}}}])
    assert [str(e) for e in mixed[0].usable_endpoints()] == ["10.244.1.2:8080"]
    draining = service_ports([service()], [endpoint_slice(
        ["10.244.1.9"], ready=False, serving=True, terminating=True)])
    assert [str(e) for e in draining[0].usable_endpoints()] == ["10.244.1.9:8080"]


def test_node_port_goes_through_the_external_chain() -> None:
    ports = service_ports([service(type="NodePort", ports=[
        {"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080}])],
        [endpoint_slice(["10.244.1.2"])])
    tables = desired_rules(ports, CONFIG)
    ext, svc = chain("KUBE-EXT-", ports[0]), chain("KUBE-SVC-", ports[0])
    assert tables["nat"]["KUBE-NODEPORTS"] == [
        f"-m comment --comment default/web:http -m tcp -p tcp --dport 30080 -j {ext}"]
    assert tables["nat"][ext] == [
        '-m comment --comment "masquerade traffic for default/web:http external '
        'destinations" -j KUBE-MARK-MASQ', f"-j {svc}"]


def test_external_traffic_policy_local_uses_only_this_nodes_endpoints() -> None:
    ports = service_ports([service(type="NodePort", externalTrafficPolicy="Local",
                                   healthCheckNodePort=32000, ports=[
        {"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080}])],
        [endpoint_slice(["10.244.1.2"], node="node-1"),
         {**endpoint_slice(["10.244.2.2"], node="node-2"),
          "metadata": {"name": "web-2", "namespace": "default",
                       "labels": {"kubernetes.io/service-name": "web"}}}])
    tables = desired_rules(ports, CONFIG)
    svl = chain("KUBE-SVL-", ports[0])
    assert [r for r in tables["nat"][svl] if "KUBE-SEP" in r] == [
        r for r in tables["nat"][svl]]
    assert len(tables["nat"][svl]) == 1  # node-1's endpoint only
    assert tables["nat"][chain("KUBE-EXT-", ports[0])][-1] == f"-j {svl}"
    assert any("--dport 32000 -j ACCEPT" in r for r in tables["filter"]["KUBE-NODEPORTS"])


def test_session_affinity_adds_recent_matches() -> None:
    ports = service_ports([service(sessionAffinity="ClientIP")],
                          [endpoint_slice(["10.244.1.2", "10.244.1.3"])])
    tables = desired_rules(ports, CONFIG)
    sep = chain("KUBE-SEP-", ports[0], ports[0].endpoints[0])
    svc_rules = tables["nat"][chain("KUBE-SVC-", ports[0])]
    assert f"-m recent --name {sep} --rcheck --seconds 10800 --reap -j {sep}" in svc_rules[1]
    assert f"-m recent --name {sep} --set" in tables["nat"][sep][1]


def test_incremental_input_rewrites_only_changed_chains_and_deletes_gone_ones() -> None:
    before = desired_rules(service_ports([service()], [endpoint_slice(
        ["10.244.1.2", "10.244.1.3"])]), CONFIG)
    ports = service_ports([service()], [endpoint_slice(["10.244.1.2"])])
    after = desired_rules(ports, CONFIG)
    text = restore_input(after, before, stale={})
    kept = chain("KUBE-SEP-", ports[0], ports[0].endpoints[0])
    assert f":{chain('KUBE-SVC-', ports[0])} - [0:0]" in text
    assert f":{kept} " not in text  # unchanged: not declared, so not flushed and refilled
    assert text.count("-X KUBE-SEP-") == 1
    assert "*filter" not in text  # nothing changed there
    assert restore_input(after, after, stale={}) == ""


def test_full_input_deletes_stale_chains_it_is_told_of() -> None:
    tables = desired_rules([], CONFIG)
    text = restore_input(tables, {}, stale={"nat": {"KUBE-SVC-OLDOLDOLDOLDOLDO"}})
    assert ":KUBE-SVC-OLDOLDOLDOLDOLDO - [0:0]" in text
    assert "-X KUBE-SVC-OLDOLDOLDOLDOLDO" in text


def test_headless_and_external_name_services_get_no_rules() -> None:
    headless = service("db", clusterIP="None")
    external = {"metadata": {"name": "ext", "namespace": "default"},
                "spec": {"type": "ExternalName", "externalName": "example.org"}}
    assert service_ports([headless, external], []) == []


def test_ports_of_a_service_port_table_are_stable() -> None:
    ports = [ServicePort("ns", "a", "", "TCP", 80, ["10.96.0.9"])]
    assert ports[0].service_port_name == "ns/a"


def test_saved_form_is_how_iptables_save_prints_a_rule_back() -> None:
    """The pairs are what iptables-save 1.8.9 (nf_tables) printed for the rules on the left
    (tests/test_proxy_iptables_sync.py checks every kind against the kernel)."""
    pairs = {
        '-m comment --comment "default/web:http cluster IP" -m tcp -p tcp -d 10.96.0.50/32 '
        "--dport 80 ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ":
        '! -s 10.244.0.0/16 -d 10.96.0.50/32 -p tcp -m comment --comment '
        '"default/web:http cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ',
        "-m comment --comment default/web:http -m recent --name KUBE-SEP-X --set "
        "-m tcp -p tcp -j DNAT --to-destination 10.244.1.2:8080":
        '-p tcp -m comment --comment "default/web:http" -m recent --set --name KUBE-SEP-X '
        "--mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 10.244.1.2:8080",
        '-m comment --comment "a -> b" -m recent --name KUBE-SEP-X --rcheck --seconds 300 '
        "--reap -j KUBE-SEP-X":
        '-m comment --comment "a -> b" -m recent --rcheck --seconds 300 --reap '
        "--name KUBE-SEP-X --mask 255.255.255.255 --rsource -j KUBE-SEP-X",
        "-m statistic --mode random --probability 0.3333333333 -j KUBE-SEP-X":
        "-m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-X",
        "-j MARK --or-mark 0x4000": "-j MARK --set-xmark 0x4000/0x4000",
        "-j MARK --xor-mark 0x4000": "-j MARK --set-xmark 0x4000/0x0",
        "-m mark ! --mark 0x4000/0x4000 -j RETURN": "-m mark ! --mark 0x4000/0x4000 -j RETURN",
        '-m comment --comment "x has no endpoints" -m addrtype --dst-type LOCAL -m tcp '
        "-p tcp --dport 30082 -j REJECT":
        '-p tcp -m comment --comment "x has no endpoints" -m addrtype --dst-type LOCAL '
        "-m tcp --dport 30082 -j REJECT --reject-with icmp-port-unreachable",
    }
    for written, saved in pairs.items():
        assert saved_form(written) == saved, written
