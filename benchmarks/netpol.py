"""NetworkPolicy enforcement: create-to-enforced, revoke, added connection latency, full
re-sync against its floor, and allowed flows during churn, at 1,000 policies over 200 pods.

A real etcd and API server; the enforcer (proxy/netpol/, NetworkPolicyController, in this
process) programs a "node" network namespace with a bridge and two real pods, a client and
a server (a TCP server on port 80), among 200 Pod objects in 20 namespaces and 1,000
policies that select the other pods (each isolates pods of one app and allows another app
of some namespaces on one port). A prober in the client pod connects to the server every
2 ms (50 ms timeout) and reports each change between open and blocked, with the start time
of the attempt (CLOCK_MONOTONIC, the same clock as ours). Measured, as kube-network-policies'
scalability test measures (from the API call to the effect on traffic):
- create -> enforced: a policy isolating the server is created; until the first attempt
  that is blocked (each trial then deletes it: delete -> revoked, until the first attempt
  that connects again);
- added new-connection latency: connect + first byte from the client, with the enforcer
  stopped and its table in place, to the server (isolated, the client allowed by a
  policy: the verdict map, the pod's chain, the policy's rule) and to a second server no
  policy selects, 2,000 connections each, interleaved one by one so that the machine's
  load falls on both alike; the p99 difference. For reference, the isolated server with
  the whole table and with none, alternating in tenths (conntrack is on in both, as the
  proxy's NAT has it on every node);
- full re-sync: the enforcer's sync with every policy compiled and the table rewritten,
  against the floor, `nft -f` of the same input into a fresh namespace;
- churn: 100 creates and deletes of other policies while the client connects to the server
  (allowed) continuously: failed connections.

Targets (issue 32): create -> enforced p99 <= 300 ms; revoke <= 1 s; added latency p99 <=
1 ms; full re-sync <= 1.6 x the floor; 0 failed allowed connections during churn.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.apiserver import BenchmarkError, percentile, private_api_server, progress  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.api import Obj  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402
from minikube_py.proxy.netpol.controller import NetworkPolicyController  # noqa: E402
from minikube_py.proxy.netpol.nftrules import TABLE, full_input  # noqa: E402

BASE = f"mknb-{os.getpid()}"
NODE = "node-0"
CLIENT, SERVER, PLAIN = "10.253.0.2", "10.253.0.3", "10.253.0.4"
NAMESPACES = 20
ROUNDS = 10
API_FLAGS = ("--log-requests=false", "--disable-admission-plugins=ServiceAccount")
SERVER_SCRIPT = """
import socket, threading
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("", 80))
server.listen(256)
while True:
    connection, _ = server.accept()
    connection.sendall(b"x")
    connection.close()
"""
PROBER_SCRIPT = """
import socket, sys, time
mode, ip = sys.argv[1], sys.argv[2]
def attempt(timeout):
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.connect((ip, 80))
        return s.recv(1) == b"x"
    except OSError:
        return False
    finally:
        s.close()
if mode == "watch":
    state = None
    while True:
        started = time.monotonic()
        ok = attempt(0.05)
        if ok != state:
            print(f"{started} {int(ok)}", flush=True)
            state = ok
        time.sleep(0.002)
elif mode == "latency":  # connections to each target in turn; a line of times each
    targets = sys.argv[2].split(",")
    times = {target: [] for target in targets}
    for n in range(int(sys.argv[3])):
        ip = targets[n % len(targets)]
        started = time.perf_counter()
        s = socket.socket()
        s.settimeout(1.0)
        try:
            s.connect((ip, 80))
            assert s.recv(1) == b"x"
        except (OSError, AssertionError):
            print("failed", ip, flush=True)
            sys.exit(1)
        finally:
            s.close()
        times[ip].append(time.perf_counter() - started)
    for target in targets:
        print(" ".join(f"{t:.6f}" for t in times[target]), flush=True)
"""


def run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=check, timeout=60)


def in_ns(name: str, *command: str) -> list[str]:
    return ["nsenter", f"--net=/var/run/netns/{BASE}-{name}", *command]


def add_netns(cleanup: contextlib.ExitStack, name: str) -> None:
    """`ip netns add` BASE-name, its deletion registered first: an add that fails halfway
    may leave the name behind, and a later step's failure must not leak this one."""
    cleanup.callback(run, "ip", "netns", "del", f"{BASE}-{name}", check=False)
    run("ip", "netns", "add", f"{BASE}-{name}")


def stop_server(server: subprocess.Popen[bytes]) -> None:
    """Kill a pod's TCP server and reap it."""
    server.kill()
    server.wait()


@contextlib.contextmanager
def node_network() -> Iterator[None]:
    """The node namespace, its bridge, and the client and server pods; on exit the servers
    are stopped and every namespace made is deleted, also when making them failed midway."""
    with contextlib.ExitStack() as cleanup:
        _make_node(cleanup)
        yield


def _make_node(cleanup: contextlib.ExitStack) -> None:
    add_netns(cleanup, "node")
    run(*in_ns("node", "ip", "link", "set", "lo", "up"))
    run(*in_ns("node", "ip", "link", "add", "br0", "type", "bridge"))
    run(*in_ns("node", "ip", "addr", "add", "10.253.0.1/24", "dev", "br0"))
    run(*in_ns("node", "ip", "link", "set", "br0", "up"))
    # conntrack on in both latency conditions, as on every node (the proxy's NAT needs it):
    # an empty nat base chain turns it on
    subprocess.run(in_ns("node", "nft", "-f", "-"), check=True, text=True, input=(
        "add table ip node-nat\n"
        "add chain ip node-nat prerouting { type nat hook prerouting priority dstnat ; }\n"))
    for name, address in (("client", CLIENT), ("server", SERVER), ("plain", PLAIN)):
        add_netns(cleanup, name)
        run(*in_ns(name, "ip", "link", "set", "lo", "up"))
        run(*in_ns("node", "ip", "link", "add", f"v{name}", "type", "veth", "peer", "name",
                   "eth0", "netns", f"/var/run/netns/{BASE}-{name}"))
        run(*in_ns("node", "ip", "link", "set", f"v{name}", "master", "br0", "up"))
        run(*in_ns(name, "ip", "addr", "add", f"{address}/24", "dev", "eth0"))
        run(*in_ns(name, "ip", "link", "set", "eth0", "up"))
    for name in ("server", "plain"):
        cleanup.callback(stop_server,
                         subprocess.Popen(in_ns(name, sys.executable, "-c", SERVER_SCRIPT)))


def pod(i: int) -> tuple[str, Obj, str]:
    """Pod i: (namespace, object, IP). Pods 0, 1 and 2 are the client, the server and a
    second server no policy selects."""
    if i < 3:
        name, address = (("client", CLIENT), ("server", SERVER), ("plain", PLAIN))[i]
        return "bench-pods", {"metadata": {"name": name, "labels": {"app": name}},
                              "spec": {"nodeName": NODE, "containers": [
                                  {"name": "c", "image": "busybox"}]}}, address
    namespace = f"bench-{i % NAMESPACES}"
    return namespace, {"metadata": {"name": f"p{i}", "labels": {"app": f"app{i % 50}"}},
                       "spec": {"nodeName": NODE if i % 2 else "node-1",
                                "containers": [{"name": "c", "image": "busybox", "ports": [
                                    {"name": "http", "containerPort": 8080}]}]}}, (
        f"10.254.{i // 250}.{i % 250 + 1}")


def background_policy(i: int) -> tuple[str, Obj]:
    return f"bench-{i % NAMESPACES}", {
        "metadata": {"name": f"pol-{i}"},
        "spec": {"podSelector": {"matchLabels": {"app": f"app{i % 50}"}},
                 "policyTypes": ["Ingress"],
                 "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {
                     "team": f"t{i % 4}"}}, "podSelector": {"matchLabels": {
                         "app": f"app{(i + 1) % 50}"}}}], "ports": [{"port": 8080 + i % 5}]}]}}


def deny_server(name: str) -> Obj:
    return {"metadata": {"name": name},
            "spec": {"podSelector": {"matchLabels": {"app": "server"}},
                     "policyTypes": ["Ingress"]}}


ALLOW_CLIENT = {"metadata": {"name": "allow-client"},
                "spec": {"podSelector": {"matchLabels": {"app": "server"}},
                         "policyTypes": ["Ingress"],
                         "ingress": [{"from": [{"podSelector": {"matchLabels": {
                             "app": "client"}}}], "ports": [{"port": 80}]}]}}


class Watcher:
    """The client's prober in watch mode: every change between open and blocked."""

    def __init__(self) -> None:
        self.changes: list[tuple[float, bool]] = []
        self.process: asyncio.subprocess.Process | None = None
        self.reader: asyncio.Task[None] | None = None
        self.changed = asyncio.Event()

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *in_ns("client", sys.executable, "-c", PROBER_SCRIPT, "watch", SERVER),
            stdout=asyncio.subprocess.PIPE)
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        async for line in self.process.stdout:
            started, state = line.decode().split()
            self.changes.append((float(started), state == "1"))
            self.changed.set()

    async def first(self, state: bool, after: float, timeout: float = 30.0) -> float:
        """The start time of the first attempt at or after `after` in `state`."""
        async with asyncio.timeout(timeout):
            while True:
                for started, seen in self.changes:
                    if seen == state and started >= after:
                        return started
                # the state may have been reached just before `after` and held since
                if self.changes and self.changes[-1][1] == state and \
                        self.changes[-1][0] >= after - 0.06:
                    return max(self.changes[-1][0], after)
                self.changed.clear()
                await self.changed.wait()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        if self.reader is not None:
            await asyncio.gather(self.reader, return_exceptions=True)


async def latencies(count: int, *targets: str) -> list[list[float]]:
    """connect + first byte from the client, `count` connections to the targets in turn:
    the times of each target's."""
    done = await asyncio.create_subprocess_exec(
        *in_ns("client", sys.executable, "-c", PROBER_SCRIPT, "latency", ",".join(targets),
               str(count)), stdout=asyncio.subprocess.PIPE)
    out, _ = await done.communicate()
    if done.returncode != 0:
        raise BenchmarkError(f"the client could not connect: {out.decode().strip()}")
    return [sorted(float(t) for t in line.split()) for line in out.decode().splitlines()]


def floor_load(text: str) -> float:
    """The floor: `nft -f` of the enforcer's input into a fresh namespace."""
    try:
        run("ip", "netns", "add", f"{BASE}-floor")
        started = time.perf_counter()
        done = subprocess.run(in_ns("floor", "nft", "-f", "-"), input=text,
                              capture_output=True, text=True)
        elapsed = time.perf_counter() - started
    finally:
        run("ip", "netns", "del", f"{BASE}-floor", check=False)
    if done.returncode != 0:
        raise BenchmarkError(f"nft -f: {done.stderr.strip()[:300]}")
    return elapsed


async def churn_failures(client: Client, operations: int) -> tuple[int, int]:
    """Connections the client tries and that fail while other policies come and go."""
    policies = client.resource("networkpolicies", "networking.k8s.io")
    counting = await asyncio.create_subprocess_exec(
        *in_ns("client", sys.executable, "-c",
               "import socket, sys, threading\n"
               "stop = threading.Event()\n"
               "threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()),"
               " daemon=True).start()\n"
               "attempts = failures = 0\n"
               "while not stop.is_set():\n"
               "    attempts += 1\n"
               "    s = socket.socket(); s.settimeout(1.0)\n"
               "    try:\n"
               "        s.connect((sys.argv[1], 80)); assert s.recv(1) == b'x'\n"
               "    except (OSError, AssertionError):\n"
               "        failures += 1\n"
               "    finally:\n"
               "        s.close()\n"
               "print(attempts, failures, flush=True)\n", SERVER),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    for i in range(operations):
        namespace, body = background_policy(10_000 + i)
        if i % 2 == 0:
            await policies.create(body, namespace)
        else:
            namespace, body = background_policy(10_000 + i - 1)
            await policies.delete(body["metadata"]["name"], namespace)
        await asyncio.sleep(0.02)
    out, _ = await counting.communicate(b"stop\n")
    attempts, failures = (int(v) for v in out.split())
    return attempts, failures


async def measure(args: argparse.Namespace) -> list[Row]:
    if os.geteuid() != 0:
        raise BenchmarkError("network namespaces need root")
    # --quick is a smoke run: every phase, with the fewest policies, trials and connections
    policies_count, trials, latency_count = (
        (20, 1, 50) if args.quick else (args.policies, 20, 2000))
    with node_network():
        async with private_api_server(API_FLAGS) as (tmp, etcd, api, kubeconfig):
            async with Client.from_kubeconfig(kubeconfig) as client:
                return await _measure(client, policies_count, trials, latency_count)


async def _measure(client: Client, policies_count: int, trials: int, latency_count: int
                   ) -> list[Row]:
    namespaces, pods = client.resource("namespaces"), client.resource("pods")
    policies = client.resource("networkpolicies", "networking.k8s.io")
    for i, name in enumerate(("bench-pods", *(f"bench-{n}" for n in range(NAMESPACES)))):
        await namespaces.create({"metadata": {"name": name, "labels": {"team": f"t{i % 4}"}}})
    progress("200 pods and their addresses")
    for i in range(200):
        namespace, body, address = pod(i)
        created = await pods.create(body, namespace)
        created["status"] = {"phase": "Running", "podIP": address, "podIPs": [{"ip": address}]}
        await pods.update_status(created)
    progress(f"{policies_count} policies")
    for i in range(policies_count):
        namespace, body = background_policy(i)
        await policies.create(body, namespace)
    enforcer = NetworkPolicyController(client, NODE, netns=f"/var/run/netns/{BASE}-node",
                                       min_sync_period=0.0)
    watcher = Watcher()
    rows: list[Row] = []
    async with enforcer:
        await watcher.start()
        try:
            await watcher.first(True, 0.0)
            assert enforcer.written is not None
            size = (f"{policies_count:,} policies over 200 pods "
                    f"({enforcer.written.rule_count():,} rules on the node)")
            progress("create -> enforced, delete -> revoked")
            enforced, revoked = [], []
            for trial in range(trials):
                before = time.monotonic()
                await policies.create(deny_server(f"deny-{trial}"), "bench-pods")
                enforced.append(await watcher.first(False, before) - before)
                before = time.monotonic()
                await policies.delete(f"deny-{trial}", "bench-pods")
                revoked.append(await watcher.first(True, before) - before)
            rows.append((f"create -> enforced, {size}",
                         f"p99 {percentile(enforced, 99) * 1000:.0f} ms, median "
                         f"{statistics.median(enforced) * 1000:.0f} ms ({trials} trials)",
                         "p99 <= 300 ms", verdict(percentile(enforced, 99) <= 0.3)))
            rows.append(("delete -> revoked (connections open again)",
                         f"max {max(revoked) * 1000:.0f} ms, median "
                         f"{statistics.median(revoked) * 1000:.0f} ms", "<= 1 s",
                         verdict(max(revoked) <= 1.0)))
            await watcher.stop()

            progress("added new-connection latency")
            await policies.create(ALLOW_CLIENT, "bench-pods")
            await policies.create(deny_server("deny-others"), "bench-pods")
            deadline = time.monotonic() + 30
            while "ingress-bench-pods/server" not in (
                    enforcer.written.chains if enforcer.written else {}):
                if time.monotonic() > deadline:
                    raise BenchmarkError("the server's isolation never reached the table")
                await asyncio.sleep(0.05)
            assert enforcer.written is not None
            table = full_input(enforcer.written)
            await enforcer.stop()  # its CPU would weigh on one condition only
            await enforcer.nft.apply(table)
            isolated, plain = await latencies(2 * latency_count, SERVER, PLAIN)
            added = percentile(isolated, 99) - percentile(plain, 99)
            rows.append(("new-connection latency the enforcement adds (connect + first "
                         "byte to an isolated server the client is allowed to, against "
                         "one no policy selects, connections interleaved)",
                         f"p99 {added * 1000:+.3f} ms "
                         f"(p99 {percentile(isolated, 99) * 1000:.3f} vs "
                         f"{percentile(plain, 99) * 1000:.3f} ms; medians "
                         f"{statistics.median(isolated) * 1000:.3f} vs "
                         f"{statistics.median(plain) * 1000:.3f} ms; {latency_count} "
                         "connections each)", "p99 <= 1 ms", verdict(added <= 0.001)))
            with_table, without = [], []
            for _ in range(ROUNDS):  # alternating, so the machine's load falls on both
                await enforcer.nft.apply(table)
                with_table += (await latencies(latency_count // ROUNDS, SERVER))[0]
                await enforcer.nft.cleanup()
                without += (await latencies(latency_count // ROUNDS, SERVER))[0]
            rows.append(("the same to the isolated server, with the whole table and with "
                         "none (alternating in tenths)",
                         f"p99 {percentile(with_table, 99) * 1000:.3f} vs "
                         f"{percentile(without, 99) * 1000:.3f} ms;"
                         f" medians {statistics.median(with_table) * 1000:.3f} vs "
                         f"{statistics.median(without) * 1000:.3f} ms", "", ""))
            await enforcer.nft.apply(table)

            progress("full re-sync against nft -f")
            fulls, floors = [], []
            for trial in range(trials):
                order = ("floor", "sync") if trial % 2 == 0 else ("sync", "floor")
                for kind in order:
                    if kind == "floor":
                        floors.append(floor_load(table))
                    else:
                        started = time.perf_counter()
                        await enforcer.sync(force=True)
                        fulls.append(time.perf_counter() - started)
            ratio = statistics.median(f / r for f, r in zip(fulls, floors, strict=True))
            rows.append((f"full re-sync (compile every policy, rewrite {TABLE})",
                         f"{statistics.median(fulls) * 1000:.0f} ms; floor `nft -f` "
                         f"{statistics.median(floors) * 1000:.0f} ms; {ratio:.2f} x the floor",
                         "<= 1.6 x the floor", verdict(ratio <= 1.6)))
        finally:
            await watcher.stop()

    progress("churn")
    async with NetworkPolicyController(client, NODE, netns=f"/var/run/netns/{BASE}-node",
                                       min_sync_period=0.0):
        attempts, failures = await churn_failures(client, 20 if trials < 10 else 100)
    rows.append(("allowed connections failed during policy churn",
                 f"{failures} of {attempts}", "0", verdict(failures == 0)))
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policies", type=int, default=1000)


def main() -> None:
    run_benchmark(__doc__.splitlines()[0], "NetworkPolicy enforcement", "netpol.py", measure,
                  add_arguments=add_arguments)


if __name__ == "__main__":
    main()
