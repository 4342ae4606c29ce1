"""The NetworkPolicy enforcer against a real API server and a real kernel: a "node"
network namespace with a bridge and three "pods" (namespaces of their own, each serving
TCP 80 and 81), whose Pod objects carry their addresses. The enforcer (proxy/netpol/)
writes the node's nft table from the policies; connections between the pods show what it
allows. The whole cluster's version is tests/e2e/test_network_policy.py."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from minikube_py.api import Obj
from minikube_py.client.rest import Client
from minikube_py.proxy.netpol.controller import NetworkPolicyController, PolicyTables
from minikube_py.proxy.netpol.nftrules import TABLE
from minikube_py.tracing.context import ANNOTATION
from minikube_py.tracing.tracer import Tracer
from tests.api_helpers import eventually
from tests.test_proxy import KeptSpans

NETNS_DIR = Path("/var/run/netns")
PREFIX = "mknp-"
NODE = "np-node"
PODS = {"a": "10.251.0.2", "b": "10.251.0.3", "c": "10.251.0.4"}
# Each connection gets the pod's name; on port 81 what the client sends next is echoed.
SERVER = """
import socket, sys, threading
def answer(connection, port):
    with connection:
        connection.sendall(sys.argv[1].encode())
        if port == 81:
            connection.sendall(connection.recv(16))
def serve(port):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("", port))
    server.listen(16)
    while True:
        connection, _ = server.accept()
        threading.Thread(target=answer, args=(connection, port), daemon=True).start()
for port in (80, 81):
    threading.Thread(target=serve, args=(port,), daemon=True).start()
threading.Event().wait()
"""
CONNECT = """
import socket, sys
try:
    print(socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1).recv(16).decode())
except OSError:
    print("refused-or-dropped")
"""

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("nft"),
    reason="network namespaces need root, and the enforcer nft (make apt installs nftables)")


def run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=check, timeout=30)


def in_ns(ns: str, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run("nsenter", f"--net={NETNS_DIR / ns}", *command, check=check)


def remove_namespaces_of_dead_runs() -> None:
    """A crashed run leaves its namespaces: remove them (and what runs in them)."""
    for path in NETNS_DIR.glob(f"{PREFIX}*") if NETNS_DIR.is_dir() else []:
        pid = path.name[len(PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            for holder in run("ip", "netns", "pids", path.name, check=False).stdout.split():
                run("kill", "-9", holder, check=False)
            run("ip", "netns", "del", path.name, check=False)


@pytest.fixture(scope="module")
def node() -> Iterator[str]:
    """The node namespace: a bridge, and a pod namespace per PODS entry serving 80, 81."""
    remove_namespaces_of_dead_runs()
    base = f"{PREFIX}{os.getpid()}"
    node_ns = f"{base}-node"
    created = [node_ns]
    servers: list[subprocess.Popen[bytes]] = []
    run("ip", "netns", "add", node_ns)
    try:
        in_ns(node_ns, "ip", "link", "set", "lo", "up")
        in_ns(node_ns, "ip", "link", "add", "br0", "type", "bridge")
        in_ns(node_ns, "ip", "addr", "add", "10.251.0.1/24", "dev", "br0")
        in_ns(node_ns, "ip", "link", "set", "br0", "up")
        for name, address in PODS.items():
            ns = f"{base}-{name}"
            run("ip", "netns", "add", ns)
            created.append(ns)
            in_ns(ns, "ip", "link", "set", "lo", "up")
            in_ns(node_ns, "ip", "link", "add", f"v{name}", "type", "veth", "peer", "name",
                  "eth0", "netns", str(NETNS_DIR / ns))
            in_ns(node_ns, "ip", "link", "set", f"v{name}", "master", "br0", "up")
            in_ns(ns, "ip", "addr", "add", f"{address}/24", "dev", "eth0")
            in_ns(ns, "ip", "link", "set", "eth0", "up")
            in_ns(ns, "ip", "route", "add", "default", "via", "10.251.0.1")
            servers.append(subprocess.Popen(
                ["nsenter", f"--net={NETNS_DIR / ns}", sys.executable, "-c", SERVER, name]))
        for name in PODS:  # each server listens before a test connects (a busy machine
            serving(f"{base}-{name}", servers)  # takes seconds to start a Python)
        yield base
    finally:
        for server in servers:
            server.kill()
            server.wait()
        for ns in created:
            run("ip", "netns", "del", ns, check=False)


def serving(ns: str, servers: list[subprocess.Popen[bytes]], timeout: float = 60) -> None:
    """Wait until the pod namespace `ns` listens on 80 and 81 (a server that exited
    fails at once; `timeout` bounds a failure only)."""
    deadline = time.monotonic() + timeout
    while True:
        listening = in_ns(ns, "ss", "-Hltn", check=False).stdout
        if all(re.search(rf":{port}\s", listening) for port in (80, 81)):
            return
        exited = [server.args for server in servers if server.poll() is not None]
        assert not exited and time.monotonic() < deadline, (ns, listening, exited)
        time.sleep(0.05)


def connect(base: str, source: str, target: str, port: int) -> str:
    """What `source` gets from `target`:port (the target's name, or refused-or-dropped)."""
    return in_ns(f"{base}-{source}", sys.executable, "-c", CONNECT, PODS[target],
                 str(port)).stdout.strip()


def pod_body(name: str) -> Obj:
    return {"metadata": {"name": name, "labels": {"pod": name}},
            "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "busybox",
                                                       "ports": [{"name": "serve-81-tcp",
                                                                  "containerPort": 81}]}]}}


@pytest.fixture
async def pods(api_client: Client, namespace: str) -> AsyncIterator[str]:
    """The pods' objects in `namespace`, with the addresses their namespaces have."""
    for name, address in PODS.items():
        created = await api_client.resource("pods").create(pod_body(name), namespace)
        created["status"] = {"phase": "Running", "podIP": address,
                             "podIPs": [{"ip": address}]}
        await api_client.resource("pods").update_status(created)
    yield namespace
    for name in PODS:
        await api_client.resource("pods").delete(name, namespace, grace_period_seconds=0)


@pytest.fixture
async def enforcer(node: str, kubeconfig: Path, pods: str
                   ) -> AsyncIterator[NetworkPolicyController]:
    async with Client.from_kubeconfig(kubeconfig, user_agent="kube-proxy") as client, \
            NetworkPolicyController(client, NODE, netns=str(NETNS_DIR / f"{node}-node"),
                                    min_sync_period=0.01) as running:
        yield running
        assert running.failed_syncs == 0, "a write of the table failed (see the log)"
    await PolicyTables(str(NETNS_DIR / f"{node}-node")).cleanup()


async def create_policy(api: Client, namespace: str, name: str, spec: Obj) -> None:
    await api.resource("networkpolicies", "networking.k8s.io").create(
        {"metadata": {"name": name}, "spec": spec}, namespace)


async def until_answers(node: str, source: str, target: str, port: int, expected: str
                        ) -> None:
    async def answered() -> bool:
        return await asyncio.to_thread(connect, node, source, target, port) == expected

    await eventually(answered, interval=0.05,
                     what=f"{source} -> {target}:{port} to give {expected!r}")


async def test_a_deny_all_ingress_policy_isolates_the_pods_it_selects_only(
        node: str, api_client: Client, pods: str, enforcer: NetworkPolicyController) -> None:
    assert connect(node, "a", "b", 80) == "b"
    await create_policy(api_client, pods, "deny-b", {
        "podSelector": {"matchLabels": {"pod": "b"}}, "policyTypes": ["Ingress"]})
    await until_answers(node, "a", "b", 80, "refused-or-dropped")
    assert connect(node, "c", "b", 81) == "refused-or-dropped"
    assert connect(node, "b", "a", 80) == "a"  # b is isolated for ingress, not egress
    assert connect(node, "node", "b", 80) == "b"  # the node's own traffic is never judged
    listed = in_ns(f"{node}-node", "nft", "list", "table", *TABLE.split()).stdout
    assert f"ingress-{pods}/b" in listed and "counter packets 0 " not in listed


async def test_an_egress_allow_and_an_ingress_allow_must_both_hold(
        node: str, api_client: Client, pods: str, enforcer: NetworkPolicyController) -> None:
    """a may send to b on 80 and 81 (egress), b takes only the named port serve-81-tcp
    from a (ingress): a packet between them passes both base chains."""
    await create_policy(api_client, pods, "a-out", {
        "podSelector": {"matchLabels": {"pod": "a"}}, "policyTypes": ["Egress"],
        "egress": [{"to": [{"podSelector": {"matchLabels": {"pod": "b"}}}],
                    "ports": [{"port": 80, "endPort": 81}]}]})
    await create_policy(api_client, pods, "b-in", {
        "podSelector": {"matchLabels": {"pod": "b"}}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"ipBlock": {"cidr": "10.251.0.0/24",
                                           "except": ["10.251.0.4/32"]}}],
                     "ports": [{"port": "serve-81-tcp"}]}]})
    await until_answers(node, "a", "b", 80, "refused-or-dropped")
    await until_answers(node, "a", "b", 81, "b")
    assert connect(node, "a", "c", 81) == "refused-or-dropped"  # a's egress: only to b
    assert connect(node, "c", "b", 81) == "refused-or-dropped"  # the ipBlock's except


async def test_deleting_the_policy_lifts_the_isolation(
        node: str, api_client: Client, pods: str, enforcer: NetworkPolicyController) -> None:
    await create_policy(api_client, pods, "deny-all", {"podSelector": {},
                                                       "policyTypes": ["Ingress", "Egress"]})
    await until_answers(node, "a", "c", 80, "refused-or-dropped")
    await api_client.resource("networkpolicies", "networking.k8s.io").delete("deny-all", pods)
    await until_answers(node, "a", "c", 80, "c")


async def test_an_established_connection_outlives_a_new_deny(
        node: str, api_client: Client, pods: str, enforcer: NetworkPolicyController) -> None:
    """conntrack's ESTABLISHED is accepted first: a connection open before the policy
    keeps working (b echoes what a sends on it), a new one is dropped."""
    client = subprocess.Popen(
        ["nsenter", f"--net={NETNS_DIR / f'{node}-a'}", sys.executable, "-c",
         "import socket, sys\n"
         "s = socket.create_connection((sys.argv[1], 81), timeout=10)\n"
         "print(s.recv(1).decode(), flush=True)\n"
         "sys.stdin.readline()\n"
         "s.sendall(b'echo')\n"
         "try:\n"
         "    print(s.recv(16).decode(), flush=True)\n"
         "except OSError as error:\n"
         "    print(error, flush=True)\n", PODS["b"]],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout is not None and client.stdin is not None
        assert client.stdout.readline().strip() == "b"
        await create_policy(api_client, pods, "deny-b", {
            "podSelector": {"matchLabels": {"pod": "b"}}, "policyTypes": ["Ingress"]})
        await until_answers(node, "c", "b", 81, "refused-or-dropped")
        client.stdin.write("go\n")
        client.stdin.flush()
        assert client.stdout.readline().strip() == "echo"
    finally:
        client.kill()
        client.wait()


async def test_proxy_cleanup_removes_the_table(
        node: str, api_client: Client, pods: str, enforcer: NetworkPolicyController) -> None:
    await create_policy(api_client, pods, "deny-all", {"podSelector": {}})
    await until_answers(node, "a", "c", 80, "refused-or-dropped")
    cleaned = await asyncio.to_thread(
        run, sys.executable, "-m", "minikube_py.proxy", "--cleanup",
        f"--netns={NETNS_DIR / f'{node}-node'}")
    assert "removed the NetworkPolicy table" in cleaned.stdout
    assert in_ns(f"{node}-node", "nft", "list", "table", *TABLE.split(),
                 check=False).returncode != 0
    assert connect(node, "a", "c", 80) == "c"
    await enforcer.stop()  # before its periodic rewrite puts the table back


async def test_a_policy_s_sync_is_a_span_of_its_trace(
        node: str, kubeconfig: Path, api_client: Client, pods: str) -> None:
    """The sync that writes a policy's rules continues the trace the policy carries (its
    create, in a cluster: `mkctl trace networkpolicy/<name>`), naming its chains."""
    trace = "d" * 32
    await api_client.resource("networkpolicies", "networking.k8s.io").create(
        {"metadata": {"name": "traced", "annotations": {
            ANNOTATION: f"00-{trace}-{'4' * 16}-01"}},
         "spec": {"podSelector": {"matchLabels": {"pod": "b"}},
                  "policyTypes": ["Ingress"]}}, pods)
    kept = KeptSpans()
    async with Client.from_kubeconfig(kubeconfig, trace_context=True) as client, \
            NetworkPolicyController(client, NODE, netns=str(NETNS_DIR / f"{node}-node"),
                                    min_sync_period=0.01, tracer=Tracer("kube-proxy", kept)):
        async def synced() -> bool:
            return any(span.context.trace_id == trace for span in kept.spans)

        await eventually(synced, interval=0.05, what="the sync's span in the policy's trace")
    await PolicyTables(str(NETNS_DIR / f"{node}-node")).cleanup()
    (span,) = [span for span in kept.spans if span.context.trace_id == trace]
    assert span.name == "networkpolicy sync" and span.parent_id == "4" * 16
    assert span.attributes["k8s.name"] == "traced" and span.attributes["node"] == NODE
    assert span.attributes["chains"] == [f"policy-{pods}/traced-ingress"]
