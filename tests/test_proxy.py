"""The service proxy against real iptables and nftables, in network namespaces the test
builds:

    node namespace: bridge 10.250.0.1/24, the proxy's rules, the clients
      |-- veth -- endpoint namespace e1: 10.250.0.11, busybox httpd on 8080 ("e1")
      |-- veth -- e2: 10.250.0.12
      |-- veth -- e3: 10.250.0.13

The Services and EndpointSlices are real objects in the shared API server; the proxy runs
in the test process and programs the node namespace's tables (`netns`). No packet leaves
the namespaces, and the host's own tables are never touched. Tests of what packets do run
in both proxy modes (`mode`); each proxy removes the other mode's rules as it starts.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.rest import Client
from minikube_py.proxy.proxier import Proxier
from minikube_py.proxy.rules import ProxyConfig
from minikube_py.tracing.context import ANNOTATION
from minikube_py.tracing.tracer import Span, Tracer
from tests.api_helpers import eventually

pytestmark = pytest.mark.slow
MODES = ["iptables", "nftables"]

PREFIX = "mkpt-"
NETNS_DIR = Path("/var/run/netns")
ENDPOINTS = {"e1": "10.250.0.11", "e2": "10.250.0.12", "e3": "10.250.0.13"}
LB_IP = "10.250.1.100"
CLIENT = """
import sys, urllib.request
counts = {}
for _ in range(int(sys.argv[2])):
    try:
        body = urllib.request.urlopen(sys.argv[1], timeout=3).read().decode().strip()
    except OSError as error:  # URLError: what went wrong is its reason
        body = "error:" + type(getattr(error, "reason", error)).__name__
    counts[body] = counts.get(body, 0) + 1
print(repr(counts))
"""
UDP_SERVER = """
import socket, sys
server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
server.bind(("0.0.0.0", 5353))
while True:
    _, peer = server.recvfrom(100)
    server.sendto(sys.argv[1].encode(), peer)
"""
# One flow: the same source port every time, so every datagram matches one conntrack entry.
UDP_CLIENT = """
import socket, sys, time
client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
client.bind(("0.0.0.0", 40053))
client.settimeout(0.3)
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        client.sendto(b"ping", (sys.argv[1], 53))
        print(client.recv(100).decode(), flush=True)
    except socket.timeout:
        print("timeout", flush=True)
    except OSError as error:  # EPERM: the Service's REJECT rule, until its slice is synced
        print(type(error).__name__, flush=True)
    time.sleep(0.05)
"""


def run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=check, timeout=30)


def in_ns(ns: str, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run("nsenter", f"--net={NETNS_DIR / ns}", *command, check=check)


def remove_namespaces_of_dead_runs() -> None:
    """A crashed run leaves its namespaces (and their httpd processes): remove them."""
    if not NETNS_DIR.is_dir():
        return
    for path in NETNS_DIR.glob(f"{PREFIX}*"):
        pid = path.name[len(PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            kill_processes_in(path.name)
            run("ip", "netns", "del", path.name, check=False)


def kill_processes_in(ns: str) -> None:
    listed = run("ip", "netns", "pids", ns, check=False).stdout.split()
    for pid in listed:
        try:
            os.kill(int(pid), 9)
        except (ProcessLookupError, ValueError):
            pass


@dataclass
class Topology:
    node: str
    endpoints: dict[str, str]  # namespace -> address


@pytest.fixture(scope="module")
def topology(fast_tmp: Path) -> Iterator[Topology]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    remove_namespaces_of_dead_runs()
    base = f"{PREFIX}{os.getpid()}"
    node = f"{base}-node"
    created = [node]
    run("ip", "netns", "add", node)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        in_ns(node, "ip", "link", "set", "lo", "up")
        in_ns(node, "ip", "link", "add", "br0", "type", "bridge")
        in_ns(node, "ip", "addr", "add", "10.250.0.1/24", "dev", "br0")
        in_ns(node, "ip", "link", "set", "br0", "up")
        in_ns(node, "ip", "route", "add", "default", "dev", "br0")
        for name, address in ENDPOINTS.items():
            ns = f"{base}-{name}"
            run("ip", "netns", "add", ns)
            created.append(ns)
            in_ns(ns, "ip", "link", "set", "lo", "up")
            in_ns(node, "ip", "link", "add", f"v{name}", "type", "veth", "peer", "name",
                  "eth0", "netns", str(NETNS_DIR / ns))
            in_ns(node, "ip", "link", "set", f"v{name}", "master", "br0", "up")
            in_ns(ns, "ip", "addr", "add", f"{address}/24", "dev", "eth0")
            in_ns(ns, "ip", "link", "set", "eth0", "up")
            in_ns(ns, "ip", "route", "add", "default", "via", "10.250.0.1")
            www = fast_tmp / f"www-{name}"
            www.mkdir(exist_ok=True)
            (www / "index.html").write_text(f"{name}\n")
            processes.append(subprocess.Popen(
                ["nsenter", f"--net={NETNS_DIR / ns}", "busybox", "httpd", "-f", "-p", "8080",
                 "-h", str(www)]))
            processes.append(subprocess.Popen(
                ["nsenter", f"--net={NETNS_DIR / ns}", "/usr/bin/python3", "-c", UDP_SERVER,
                 name]))
        yield Topology(node, {f"{base}-{n}": a for n, a in ENDPOINTS.items()})
    finally:
        for process in processes:
            process.kill()
            process.wait()
        for ns in created:
            kill_processes_in(ns)
            run("ip", "netns", "del", ns, check=False)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    if request.param == "nftables" and not shutil.which("nft"):
        pytest.skip("nft is not installed (make apt installs nftables)")
    return str(request.param)


@pytest.fixture
async def proxier(topology: Topology, kubeconfig: Path, mode: str) -> AsyncIterator[Proxier]:
    async with Client.from_kubeconfig(kubeconfig, user_agent="kube-proxy") as client, \
            Proxier(client, ProxyConfig("node-1", "10.244.0.0/16"),
                    netns=str(NETNS_DIR / topology.node), mode=mode) as running:
        yield running


def requests(topology: Topology, url: str, count: int) -> Counter[str]:
    """`count` new connections from the node namespace; how many each answer got."""
    out = in_ns(topology.node, "/usr/bin/python3", "-c", CLIENT, url, str(count)).stdout
    return Counter(eval(out))  # the client prints a dict literal of str -> int


def rules_text(topology: Topology) -> str:
    """iptables-save of the node namespace, without counters and comments lines."""
    saved = in_ns(topology.node, "iptables-save").stdout
    return "\n".join(re.sub(r"\[\d+:\d+\]", "", line) for line in saved.splitlines()
                     if not line.startswith("#"))


def nft_table(topology: Topology, *, handles: bool = False) -> str:
    """`nft list table ip kube-proxy` of the node namespace ("" when there is none)."""
    listed = in_ns(topology.node, "nft", *(["-a"] if handles else []), "list", "table", "ip",
                   "kube-proxy", check=False)
    return listed.stdout if listed.returncode == 0 else ""


def proxy_rules(topology: Topology, mode: str) -> str:
    """What the proxy wrote in this mode: iptables-save, or the nftables table."""
    return rules_text(topology) if mode == "iptables" else nft_table(topology)


def chain_blocks(table: str) -> dict[str, str]:
    """`nft list table` output cut into its chains: name -> the chain's text."""
    return {match.group(1): match.group(0)
            for match in re.finditer(r"\tchain (\S+) \{[^\n]*\n.*?\n\t\}", table, re.DOTALL)}


async def create_service(api: Client, namespace: str, name: str, addresses: list[str],
                         **spec: Any) -> Obj:
    service = await api.resource("services").create({
        "metadata": {"name": name},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}], **spec}},
        namespace)
    await api.resource("endpointslices", "discovery.k8s.io").create(
        slice_body(name, addresses), namespace)
    return service


def slice_body(name: str, addresses: list[str]) -> Obj:
    return {"metadata": {"name": f"{name}-1", "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": [a], "nodeName": "node-1",
                           "conditions": {"ready": True}} for a in addresses]}


async def wait_answers(topology: Topology, url: str) -> None:
    async def answered() -> bool:
        counts = await asyncio.to_thread(requests, topology, url, 1)
        return not any(k.startswith("error") for k in counts)

    await eventually(answered, interval=0.1, what=f"{url} to answer")


def routes_to(topology: Topology, mode: str, namespace: str, service: str, address: str
              ) -> bool:
    """Whether the proxy's rules still send the Service's port `http` to `address`."""
    rules = proxy_rules(topology, mode)
    if mode == "iptables":  # the endpoint's DNAT rule carries the Service port's comment
        return any(f"{namespace}/{service}:http" in line and f"{address}:" in line
                   for line in rules.splitlines())
    return f"{namespace}/{service}/tcp/http__{address}/" in rules  # its chain's name


async def until_rules(topology: Topology, mode: str, what: str,
                      condition: Callable[[str], bool]) -> None:
    """Until the proxy's rules meet `condition` (a sync is due within a second; under
    load it can take longer, and the bound is for failures only)."""
    async def met() -> bool:
        return condition(await asyncio.to_thread(proxy_rules, topology, mode))

    await eventually(met, what=what)


async def test_cluster_ip_spreads_connections_and_drops_a_removed_endpoint(
        proxier: Proxier, topology: Topology, api_client: Client, namespace: str,
        mode: str) -> None:
    service = await create_service(api_client, namespace, "web", list(ENDPOINTS.values()))
    url = f"http://{service['spec']['clusterIP']}/"
    await wait_answers(topology, url)
    counts = requests(topology, url, 300)
    assert sorted(counts) == ["e1", "e2", "e3"], counts
    for name in ("e1", "e2", "e3"):
        assert 70 <= counts[name] <= 130, counts  # within 30% of 100 each
    slices = api_client.resource("endpointslices", "discovery.k8s.io")
    current = await slices.get("web-1", namespace)
    assert routes_to(topology, mode, namespace, "web", ENDPOINTS["e3"])
    current["endpoints"] = current["endpoints"][:2]  # e3 goes
    await slices.update(current)
    await until_rules(topology, mode, "e3 out of the rules", lambda _: not routes_to(
        topology, mode, namespace, "web", ENDPOINTS["e3"]))
    after = requests(topology, url, 60)
    assert "e3" not in after and sum(after.values()) == 60 and not any(
        k.startswith("error") for k in after), after


async def test_node_port_and_load_balancer_ip_answer(
        proxier: Proxier, topology: Topology, api_client: Client, namespace: str) -> None:
    service = await create_service(api_client, namespace, "lb", ["10.250.0.11"],
                                   type="LoadBalancer")
    node_port = service["spec"]["ports"][0]["nodePort"]
    service["status"] = {"loadBalancer": {"ingress": [{"ip": LB_IP, "ipMode": "VIP"}]}}
    await api_client.resource("services").update_status(service)
    await wait_answers(topology, f"http://10.250.0.1:{node_port}/")
    assert requests(topology, f"http://10.250.0.1:{node_port}/", 5) == Counter({"e1": 5})
    await wait_answers(topology, f"http://{LB_IP}/")
    assert requests(topology, f"http://{LB_IP}/", 5) == Counter({"e1": 5})


async def test_service_without_endpoints_is_refused_at_once_and_deleted_leaves_no_chain(
        proxier: Proxier, topology: Topology, api_client: Client, namespace: str,
        mode: str) -> None:
    service = await create_service(api_client, namespace, "empty", [])
    url = f"http://{service['spec']['clusterIP']}/"
    refusal = (f"{namespace}/empty:http has no endpoints" if mode == "iptables"
               else f"{service['spec']['clusterIP']} . tcp . 80 : goto reject-chain")
    await until_rules(topology, mode, "the Service's refusal", lambda rules: refusal in rules)
    # REJECT: refused at once, not dropped (which would end in a timeout)
    assert requests(topology, url, 1) == Counter({"error:ConnectionRefusedError": 1})
    with_endpoints = await create_service(api_client, namespace, "gone", ["10.250.0.12"])
    await wait_answers(topology, f"http://{with_endpoints['spec']['clusterIP']}/")
    gone = (f"{namespace}/gone:http" if mode == "iptables"
            else f"{namespace}/gone/tcp/http")
    assert gone in proxy_rules(topology, mode)
    gone_ip = with_endpoints["spec"]["clusterIP"]
    await api_client.resource("services").delete("gone", namespace)
    await api_client.resource("endpointslices", "discovery.k8s.io").delete("gone-1", namespace)
    await until_rules(topology, mode, "the deleted Service's rules gone", lambda left: (
        f"{namespace}/gone" not in left and f"{gone_ip} " not in left))


async def test_a_removed_udp_endpoint_loses_its_conntrack_flow(
        proxier: Proxier, topology: Topology, api_client: Client, namespace: str) -> None:
    """One UDP flow keeps its conntrack entry, and with it its endpoint, as long as it
    sends; when the endpoint leaves the EndpointSlice the proxy deletes the entry, so the
    flow's next datagram is balanced again, to an endpoint that is still there."""
    service = await api_client.resource("services").create({
        "metadata": {"name": "dns"},
        "spec": {"ports": [{"name": "dns", "port": 53, "protocol": "UDP",
                            "targetPort": 5353}]}}, namespace)
    slices = api_client.resource("endpointslices", "discovery.k8s.io")
    body = slice_body("dns", ["10.250.0.11"])
    body["ports"] = [{"name": "dns", "port": 5353, "protocol": "UDP"}]
    await slices.create(body, namespace)
    client = await asyncio.create_subprocess_exec(
        "nsenter", f"--net={NETNS_DIR / topology.node}", "/usr/bin/python3", "-c", UDP_CLIENT,
        # the client's lifetime bounds a failure: the rules never moved the flow
        service["spec"]["clusterIP"], "120", stdout=asyncio.subprocess.PIPE)
    assert client.stdout is not None
    try:
        answers: list[str] = []

        async def next_answer() -> str:
            assert client.stdout is not None
            async with asyncio.timeout(30):
                line = await client.stdout.readline()
            assert line, answers  # the client's time ran out
            answers.append(line.decode().strip())
            return answers[-1]

        while await next_answer() != "e1":  # until the rules take the flow to e1
            continue
        current = await slices.get("dns-1", namespace)
        current["endpoints"][0]["addresses"] = ["10.250.0.12"]  # e1 goes, e2 comes
        await slices.update(current)
        while await next_answer() != "e2":
            continue
        for _ in range(10):
            assert await next_answer() != "e1", answers  # the old flow is gone for good
    finally:
        client.kill()
        await client.wait()


async def test_restarted_proxy_writes_no_rule_change(
        topology: Topology, kubeconfig: Path, api_client: Client, namespace: str,
        mode: str) -> None:
    await create_service(api_client, namespace, "steady", ["10.250.0.11", "10.250.0.12"])
    async with Client.from_kubeconfig(kubeconfig) as client:
        config = ProxyConfig("node-1", "10.244.0.0/16")
        netns = str(NETNS_DIR / topology.node)
        async with Proxier(client, config, netns=netns, mode=mode):
            before = proxy_rules(topology, mode)
        assert f"{namespace}/steady" in before
        async with Proxier(client, config, netns=netns, mode=mode) as again:
            assert again.syncs == 1
            assert proxy_rules(topology, mode) == before


async def test_cleanup_removes_every_chain_and_jump(topology: Topology, kubeconfig: Path,
                                                   api_client: Client, namespace: str,
                                                   mode: str) -> None:
    await create_service(api_client, namespace, "tidy", ["10.250.0.11"])
    async with Client.from_kubeconfig(kubeconfig) as client, Proxier(
            client, ProxyConfig("node-1"), netns=str(NETNS_DIR / topology.node), mode=mode):
        assert f"{namespace}/tidy" in proxy_rules(topology, mode)
    cleaned = subprocess.run(
        [sys.executable, "-m", "minikube_py.proxy", "--cleanup",
         f"--netns={NETNS_DIR / topology.node}"], capture_output=True, text=True, timeout=30)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "KUBE-" not in rules_text(topology)
    assert nft_table(topology) == ""


async def test_nftables_incremental_sync_rewrites_only_the_changed_service(
        topology: Topology, kubeconfig: Path, api_client: Client, namespace: str) -> None:
    """After one endpoint of one Service changes, the table and every chain of the other
    Services keep their handles (nft -a): the sync flushed and refilled only the changed
    chains."""
    if not shutil.which("nft"):
        pytest.skip("nft is not installed (make apt installs nftables)")
    await create_service(api_client, namespace, "still", ["10.250.0.11", "10.250.0.12"])
    moving = await create_service(api_client, namespace, "moving", ["10.250.0.11"])
    async with Client.from_kubeconfig(kubeconfig) as client, Proxier(
            client, ProxyConfig("node-1", "10.244.0.0/16"),
            netns=str(NETNS_DIR / topology.node), mode="nftables") as proxier:
        await wait_answers(topology, f"http://{moving['spec']['clusterIP']}/")
        table_before = nft_table(topology, handles=True)
        before = chain_blocks(table_before)
        syncs = proxier.syncs
        slices = api_client.resource("endpointslices", "discovery.k8s.io")
        current = await slices.get("moving-1", namespace)
        current["endpoints"][0]["addresses"] = ["10.250.0.13"]
        await slices.update(current)
        async def moved() -> bool:
            return await asyncio.to_thread(
                requests, topology, f"http://{moving['spec']['clusterIP']}/", 1) == Counter(
                {"e3": 1})

        await eventually(moved, interval=0.1, what="the Service to reach its new endpoint")

        async def counted() -> bool:  # the rules are live before the sync ends and counts
            return proxier.syncs > syncs
        await eventually(counted, interval=0.05, what="the sync that moved it to be counted")
        table_after = nft_table(topology, handles=True)
        after = chain_blocks(table_after)
    # the table itself was not replaced (a new table would have a new handle)
    assert table_after.splitlines()[0] == table_before.splitlines()[0]
    moved = f"{namespace}/moving/"
    assert len(before) > 10 and any(f"{namespace}/still/" in name for name in before)
    assert all(moved in name for name in set(before) ^ set(after))
    assert any(moved in name for name in set(after) - set(before))  # the new endpoint
    for name in set(before) & set(after):
        if moved in name and name.startswith("service-"):
            assert after[name] != before[name]  # refilled: new rules, new handles
        else:
            assert after[name] == before[name], name


async def test_client_ip_affinity_and_local_external_policy_answer(
        proxier: Proxier, topology: Topology, api_client: Client, namespace: str) -> None:
    """sessionAffinity ClientIP keeps every new connection of a client on one endpoint;
    a LoadBalancer with externalTrafficPolicy Local answers at its node port from this
    node's endpoints."""
    sticky = await create_service(
        api_client, namespace, "sticky", list(ENDPOINTS.values()),
        sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}})
    url = f"http://{sticky['spec']['clusterIP']}/"
    await wait_answers(topology, url)
    counts = requests(topology, url, 30)
    assert len(counts) == 1 and sum(counts.values()) == 30, counts
    local = await create_service(api_client, namespace, "local", ["10.250.0.12"],
                                 type="LoadBalancer", externalTrafficPolicy="Local")
    node_port = local["spec"]["ports"][0]["nodePort"]
    await wait_answers(topology, f"http://10.250.0.1:{node_port}/")
    assert requests(topology, f"http://10.250.0.1:{node_port}/", 5) == Counter({"e2": 5})


class KeptSpans:
    """A span exporter that keeps what it is given, for the assertions."""

    def __init__(self) -> None:
        self.spans: list[Span] = []

    def export(self, span: Span) -> None:
        self.spans.append(span)

    def syncs_in(self, trace_id: str) -> list[Span]:
        return [s for s in self.spans
                if s.name == "iptables sync" and s.context.trace_id == trace_id]


async def test_a_sync_is_a_span_of_the_service_and_of_the_slice_change_that_caused_it(
        topology: Topology, kubeconfig: Path, api_client: Client, namespace: str) -> None:
    """The sync that writes a Service's rules is in the Service's trace and in the trace
    of the EndpointSlice change that dirtied it (a pod's trace, in a cluster), so a pod's
    trace ends where the pod became reachable."""
    service_trace, first, second = "a" * 32, "b" * 32, "c" * 32
    slices = api_client.resource("endpointslices", "discovery.k8s.io")
    await api_client.resource("services").create({
        "metadata": {"name": "traced",
                     "annotations": {ANNOTATION: f"00-{service_trace}-{'1' * 16}-01"}},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}, namespace)
    body = slice_body("traced", ["10.250.0.11"])
    body["metadata"]["annotations"] = {ANNOTATION: f"00-{first}-{'2' * 16}-01"}
    await slices.create(body, namespace)
    kept = KeptSpans()
    async with Client.from_kubeconfig(kubeconfig, trace_context=True) as client, Proxier(
            client, ProxyConfig("node-1"), netns=str(NETNS_DIR / topology.node),
            tracer=Tracer("kube-proxy", kept)):
        async def both_synced() -> bool:
            return bool(kept.syncs_in(service_trace) and kept.syncs_in(first))

        await eventually(both_synced, interval=0.1, what="the syncs of both traces")
        span = kept.syncs_in(first)[0]
        assert span.parent_id == "2" * 16
        assert span.attributes["k8s.name"] == "traced"
        assert span.attributes["endpoints"] == ["10.250.0.11:8080"]
        assert kept.syncs_in(service_trace)[0].parent_id == "1" * 16
        current = await client.resource("endpointslices", "discovery.k8s.io").get(
            "traced-1", namespace)  # as the proxy sees it, with its trace
        current["metadata"]["annotations"][ANNOTATION] = f"00-{second}-{'3' * 16}-01"
        current["endpoints"][0]["addresses"] = ["10.250.0.12"]
        await slices.update(current)
        async def second_synced() -> bool:
            return bool(kept.syncs_in(second))

        await eventually(second_synced, interval=0.1, what="the sync of the second trace")
        assert [s.attributes["endpoints"] for s in kept.syncs_in(second)] == [
            ["10.250.0.12:8080"]]
    assert len(kept.syncs_in(first)) == 1  # a trace gets the sync its change caused, once
