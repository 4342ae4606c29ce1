"""The iptables mode's full sync against real iptables (nf_tables backend), in a bare
network namespace of the test's own: the kernel prints back every rule the proxy writes as
`saved_form` says, so a full sync that finds the tables as it left them writes nothing,
and one that finds drift rewrites just the chains that drifted."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.proxy.iptables import LIST_FIRST_FROM, IPTables, IPTablesWriter, ours
from minikube_py.proxy.rules import (
    JUMPS,
    ProxyConfig,
    Tables,
    assemble,
    rule_text,
    saved_form,
)
from minikube_py.proxy.serviceports import service_ports

pytestmark = pytest.mark.slow

PREFIX = "mkps-"
NETNS_DIR = Path("/var/run/netns")
CONFIG = ProxyConfig(node_name="node-1", cluster_cidr="10.244.0.0/16")


def run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=check, timeout=60)


@pytest.fixture
def netns() -> Iterator[str]:
    """A fresh, empty network namespace (and those of crashed runs removed)."""
    for path in NETNS_DIR.glob(f"{PREFIX}*") if NETNS_DIR.is_dir() else []:
        pid = path.name[len(PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            run("ip", "netns", "del", path.name, check=False)
    name = f"{PREFIX}{os.getpid()}-sync"
    run("ip", "netns", "add", name)
    try:
        yield str(NETNS_DIR / name)
    finally:
        run("ip", "netns", "del", name, check=False)


def service(name: str, **spec: Any) -> Obj:
    body: Obj = {"clusterIP": "10.96.0.50", "ports": [
        {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}
    body.update(spec)
    return {"metadata": {"name": name, "namespace": "default"}, "spec": body}


def endpoint_slice(svc: Obj, addresses: list[str], node: str = "node-1") -> Obj:
    name = svc["metadata"]["name"]
    return {"metadata": {"name": f"{name}-x", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "ports": [{"name": p.get("name", ""), "port": p["targetPort"],
                       "protocol": p["protocol"]} for p in svc["spec"]["ports"]],
            "endpoints": [{"addresses": [a], "nodeName": node, "conditions": {"ready": True}}
                          for a in addresses]}


def every_kind_of_rule() -> list[Obj]:
    """Services whose rules use every match and target the proxy writes; with slices."""
    def node_port(port: int) -> list[Obj]:
        return [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080,
                 "nodePort": port}]
    services = [
        service("web"),
        service("affinity", sessionAffinity="ClientIP",
                sessionAffinityConfig={"clientIP": {"timeoutSeconds": 300}}),
        service("nodeport", type="NodePort", ports=node_port(30080)),
        service("lb-local", type="LoadBalancer", externalTrafficPolicy="Local",
                healthCheckNodePort=31000, ports=node_port(30081)),
        service("external-ip", externalIPs=["192.0.2.7"]),
        service("internal-local", internalTrafficPolicy="Local"),
        service("dns", ports=[{"name": "dns", "port": 53, "protocol": "UDP",
                               "targetPort": 5353}]),
        service("sctp", ports=[{"name": "s", "port": 9, "protocol": "SCTP", "targetPort": 9}]),
        service("far-local", type="NodePort", externalTrafficPolicy="Local",
                ports=node_port(30083)),
        service("empty", type="NodePort", externalIPs=["192.0.2.8"], ports=node_port(30082)),
    ]
    services[3]["status"] = {"loadBalancer": {"ingress": [{"ip": "172.18.255.200"}]}}
    addresses = ["10.244.1.2", "10.244.1.3", "10.244.1.4"]
    slices = [endpoint_slice(svc, addresses, "node-2" if svc["metadata"]["name"] == "far-local"
                             else "node-1")
              for svc in services if svc["metadata"]["name"] != "empty"]
    return [services, slices]


def fragments(writer: IPTablesWriter, services: list[Obj], slices: list[Obj]) -> list[Tables]:
    by_service: dict[str, list[Any]] = {}
    for port in service_ports(services, slices):
        by_service.setdefault(port.name, []).append(port)
    return [writer.service_rules(by_service[name]) for name in sorted(by_service)]


def kernel_matches(kernel: Tables, desired: Tables) -> None:
    for table, chains in desired.items():
        owned = {name for name in kernel.get(table, {}) if ours(table, name)}
        assert owned == set(chains), table
        for name, rules in chains.items():
            assert kernel[table][name] == [saved_form(rule) for rule in rules], name


async def test_every_rule_the_proxy_writes_reads_back_as_saved_form(netns: str) -> None:
    writer = IPTablesWriter(CONFIG, netns)
    services, slices = every_kind_of_rule()
    text = await writer.write(fragments(writer, services, slices), full=True)
    assert "-m recent" in text and "--probability" in text and "-j REJECT" in text
    assert "--or-mark" in text and "-m addrtype" in text and "-p udp" in text
    kernel = await writer.iptables.tables()
    kernel_matches(kernel, writer.written)
    for table, builtin, rule in JUMPS:
        assert kernel[table][builtin].count(saved_form(rule_text(rule))) == 1


async def test_a_full_sync_writes_nothing_over_its_own_rules_and_repairs_drift(
        netns: str) -> None:
    writer = IPTablesWriter(CONFIG, netns)
    services, slices = every_kind_of_rule()
    parts = fragments(writer, services, slices)
    assert await writer.write(parts, full=True)
    assert await writer.write(parts, full=True) == ""  # the tables are as it left them

    desired = assemble(parts)
    svc = next(name for name in desired["nat"] if name.startswith("KUBE-SVC-"))
    nat = ["nsenter", f"--net={netns}", "iptables", "-w", "5", "-t", "nat"]
    run(*nat, "-A", svc, "-j", "RETURN")                    # a rule added by hand
    run(*nat, "-N", "KUBE-SEP-LEFTOVERFROMCRASH")            # a chain nobody wants
    run(*nat, "-A", "KUBE-SEP-LEFTOVERFROMCRASH", "-j", "KUBE-MARK-MASQ")
    table, builtin, rule = JUMPS[0]
    run("nsenter", f"--net={netns}", "iptables", "-w", "5", "-t", table, "-D", builtin, *rule)

    text = await writer.write(parts, full=True)
    declared = sorted(line[1:].split()[0] for line in text.splitlines()
                      if line.startswith(":"))
    assert declared == sorted([svc, "KUBE-SEP-LEFTOVERFROMCRASH"]), text
    assert "-X KUBE-SEP-LEFTOVERFROMCRASH" in text
    kernel = await writer.iptables.tables()
    kernel_matches(kernel, desired)
    assert any(line.endswith("-j KUBE-SERVICES") for line in kernel["nat"]["PREROUTING"])
    assert await writer.write(parts, full=True) == ""


async def test_a_restore_of_thousands_of_chains_writes_exactly_its_rules(netns: str) -> None:
    """Above LIST_FIRST_FROM chains the restore starts each table with `-S` (see
    iptables.py); the rules written are still exactly the input's."""
    services = [service(f"s{i}", clusterIP=f"10.96.{i // 250}.{i % 250 + 2}")
                for i in range(LIST_FIRST_FROM // 2)]
    slices = [endpoint_slice(svc, [f"10.244.{i // 250}.{i % 250 + 2}", "10.244.9.9"])
              for i, svc in enumerate(services)]
    writer = IPTablesWriter(CONFIG, netns)
    parts = fragments(writer, services, slices)
    text = await writer.write(parts, full=True)
    assert text.count("\n:") >= LIST_FIRST_FROM
    kernel_matches(await writer.iptables.tables(), writer.written)
    assert await writer.write(parts, full=True) == ""


async def test_the_list_first_line_goes_only_into_large_inputs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[str] = []

    async def capture(*command: str, stdin: bytes | None = None) -> tuple[int, str, str]:
        sent.append((stdin or b"").decode())
        return 0, "", ""
    iptables = IPTables()
    monkeypatch.setattr(iptables, "_run", capture)
    small = "*nat\n:KUBE-SVC-A - [0:0]\n-A KUBE-SVC-A -j RETURN\nCOMMIT\n"
    await iptables.restore(small)
    chains = "".join(f":KUBE-SEP-{i} - [0:0]\n" for i in range(LIST_FIRST_FROM))
    large = f"*filter\n:KUBE-FORWARD - [0:0]\nCOMMIT\n*nat\n{chains}COMMIT\n"
    await iptables.restore(large)
    assert sent[0] == small
    assert sent[1] == large.replace("*filter\n", "*filter\n-S\n").replace("*nat\n",
                                                                         "*nat\n-S\n")
