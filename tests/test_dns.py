"""Cluster DNS against the real API server: `python -m minikube_py.dns`, queried over
UDP and TCP with dnspython. Names outside the cluster go to a resolver the test itself
runs on loopback: no query leaves this machine."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.reversename
import dns.rrset
import pytest

from minikube_py.client.rest import Client
from minikube_py.process import free_port
from tests.conftest import module_own_apiserver

pytestmark = pytest.mark.slow

# A server of its own: the DNS process publishes the Service kube-system/kube-dns, a
# fixed name that another module's kube-dns would meet on a shared server
# (test_kubeadm_manifests_api's dry run got 409 AlreadyExists when it came after).
etcd, apiserver, kubeconfig = module_own_apiserver("dns")

UPSTREAM_ANSWER = "192.0.2.44"


@dataclass
class RunningDNS:
    port: int
    metrics_port: int


class UpstreamResolver(asyncio.DatagramProtocol):
    """A stand-in for the host's resolver: every A question gets UPSTREAM_ANSWER."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        query = dns.message.from_wire(data)
        response = dns.message.make_response(query)
        question = query.question[0]
        response.answer.append(dns.rrset.from_text(question.name, 60, "IN", "A",
                                                   UPSTREAM_ANSWER))
        self.transport.sendto(response.to_wire(), addr)


@pytest.fixture(scope="module")
async def upstream() -> AsyncIterator[int]:
    port = free_port()
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        UpstreamResolver, local_addr=("127.0.0.1", port))
    yield port
    transport.close()


@pytest.fixture(scope="module")
def cluster_dns(kubeconfig: Path, upstream: int, fast_tmp: Path) -> Iterator[RunningDNS]:
    """The DNS process; its advertised address (a documentation address, never sent to)
    only goes into the kube-dns EndpointSlice."""
    port, metrics_port = free_port(), free_port()
    log = (fast_tmp / "dns.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "minikube_py.dns", f"--kubeconfig={kubeconfig}",
         "--bind-address=127.0.0.1", f"--port={port}", "--advertise-address=192.0.2.53",
         f"--metrics-bind-address=127.0.0.1:{metrics_port}",
         f"--upstream=127.0.0.1:{upstream}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/healthz", timeout=1)
                break
            except OSError:
                assert process.poll() is None, (fast_tmp / "dns.log").read_text()
                assert time.monotonic() < deadline, "the DNS server did not come up"
                time.sleep(0.1)
        yield RunningDNS(port, metrics_port)
    finally:
        process.terminate()
        process.wait(10)
        log.close()


async def query(server: RunningDNS, name: str, rtype: str = "A", *,
                tcp: bool = False) -> dns.message.Message:
    message = dns.message.make_query(name, rtype)
    send = dns.query.tcp if tcp else dns.query.udp
    return await asyncio.to_thread(send, message, "127.0.0.1", timeout=2, port=server.port)


async def eventually(server: RunningDNS, name: str, rtype: str, want: set[str]) -> None:
    """Wait until the answer's records are `want` (the informers deliver the change)."""
    seen: set[str] = set()
    deadline = time.monotonic() + 60  # a bound for failures only
    while True:
        answer = await query(server, name, rtype)
        seen = {r.to_text() for rrset in answer.answer for r in rrset}
        if seen == want:
            return
        assert time.monotonic() < deadline, f"{name} {rtype}: {seen}, wanted {want}"
        await asyncio.sleep(0.1)


async def test_service_name_resolves_to_its_cluster_ip_over_udp_and_tcp(
        cluster_dns: RunningDNS, api_client: Client, namespace: str) -> None:
    created = await api_client.resource("services").create({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}},
        namespace)
    ip = created["spec"]["clusterIP"]
    name = f"web.{namespace}.svc.cluster.local."
    await eventually(cluster_dns, name, "A", {ip})
    over_tcp = await query(cluster_dns, name, tcp=True)
    assert [r.to_text() for r in over_tcp.answer[0]] == [ip]
    assert over_tcp.flags & dns.flags.AA
    srv = await query(cluster_dns, f"_http._tcp.web.{namespace}.svc.cluster.local.", "SRV")
    assert [r.to_text() for r in srv.answer[0]] == [f"0 100 80 {name}"]
    ptr = await query(cluster_dns, dns.reversename.from_address(ip).to_text(), "PTR")
    assert [r.to_text() for r in ptr.answer[0]] == [name]
    aaaa = await query(cluster_dns, name, "AAAA")
    assert aaaa.rcode() == dns.rcode.NOERROR and not aaaa.answer
    assert aaaa.authority[0].rdtype == dns.rdatatype.SOA


async def test_headless_service_answers_pod_ips_and_hostnames(
        cluster_dns: RunningDNS, api_client: Client, namespace: str) -> None:
    await api_client.resource("services").create({
        "metadata": {"name": "db"},
        "spec": {"clusterIP": "None", "ports": [{"name": "pg", "port": 5432}]}}, namespace)
    await api_client.resource("endpointslices", "discovery.k8s.io").create({
        "metadata": {"name": "db-1", "labels": {"kubernetes.io/service-name": "db"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.9.4"], "hostname": "db-0",
                       "conditions": {"ready": True}},
                      {"addresses": ["10.244.9.5"], "hostname": "db-1",
                       "conditions": {"ready": True}}],
        "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]}, namespace)
    await eventually(cluster_dns, f"db.{namespace}.svc.cluster.local.", "A",
                     {"10.244.9.4", "10.244.9.5"})
    await eventually(cluster_dns, f"db-1.db.{namespace}.svc.cluster.local.", "A",
                     {"10.244.9.5"})
    srv = await query(cluster_dns, f"_pg._tcp.db.{namespace}.svc.cluster.local.", "SRV")
    assert sorted(r.to_text() for r in srv.answer[0]) == [
        f"0 50 5432 db-0.db.{namespace}.svc.cluster.local.",
        f"0 50 5432 db-1.db.{namespace}.svc.cluster.local."]


async def test_external_name_and_nxdomain(cluster_dns: RunningDNS, api_client: Client,
                                          namespace: str) -> None:
    await api_client.resource("services").create({
        "metadata": {"name": "ext"},
        "spec": {"type": "ExternalName", "externalName": "db.example.org"}}, namespace)
    name = f"ext.{namespace}.svc.cluster.local."
    await eventually(cluster_dns, name, "CNAME", {"db.example.org."})
    missing = await query(cluster_dns, f"nothing.{namespace}.svc.cluster.local.")
    assert missing.rcode() == dns.rcode.NXDOMAIN
    assert missing.authority[0].rdtype == dns.rdatatype.SOA


async def test_other_names_go_to_the_upstream_resolver(cluster_dns: RunningDNS) -> None:
    answer = await query(cluster_dns, "www.example.org.")
    assert answer.rcode() == dns.rcode.NOERROR
    assert [r.to_text() for r in answer.answer[0]] == [UPSTREAM_ANSWER]


async def test_malformed_query_gets_formerr_and_the_server_keeps_answering(
        cluster_dns: RunningDNS) -> None:
    loop = asyncio.get_running_loop()
    answers: asyncio.Queue[bytes] = asyncio.Queue()

    class Client(asyncio.DatagramProtocol):
        def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
            answers.put_nowait(data)

    transport, _ = await loop.create_datagram_endpoint(
        Client, remote_addr=("127.0.0.1", cluster_dns.port))
    try:
        transport.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07trunc")
        async with asyncio.timeout(2):
            reply = await answers.get()
        assert reply[:2] == b"\x12\x34" and reply[3] & 0xF == dns.rcode.FORMERR
        transport.sendto(b"\x12\x35\x81\x80" + b"\0" * 8)  # a response: dropped
        transport.sendto(b"\x12\x36")  # no header at all
        async with asyncio.timeout(2):
            reply = await answers.get()
        assert reply[:2] == b"\x12\x36" and reply[3] & 0xF == dns.rcode.FORMERR
        assert answers.empty()
    finally:
        transport.close()
    after = await query(cluster_dns, "kubernetes.default.svc.cluster.local.")
    assert [r.to_text() for r in after.answer[0]] == ["10.96.0.1"]


async def test_kube_dns_service_points_at_the_server(cluster_dns: RunningDNS,
                                                     api_client: Client) -> None:
    service = await api_client.resource("services").get("kube-dns", "kube-system")
    assert service["spec"]["clusterIP"] == "10.96.0.10"
    assert {(p["name"], p["port"], p["protocol"]) for p in service["spec"]["ports"]} == {
        ("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"), ("metrics", 9153, "TCP")}
    endpoint_slice = await api_client.resource("endpointslices", "discovery.k8s.io").get(
        "kube-dns-cluster-dns", "kube-system")
    assert endpoint_slice["endpoints"][0]["addresses"] == ["192.0.2.53"]
    assert {p["port"] for p in endpoint_slice["ports"]} == {cluster_dns.port,
                                                            cluster_dns.metrics_port}
    await eventually(cluster_dns, "kube-dns.kube-system.svc.cluster.local.", "A",
                     {"10.96.0.10"})
    metrics = urllib.request.urlopen(
        f"http://127.0.0.1:{cluster_dns.metrics_port}/metrics", timeout=5).read().decode()
    assert 'coredns_dns_requests_total{proto="udp"}' in metrics
