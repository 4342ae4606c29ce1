"""Benchmark: one flooding client against the control plane, with API Priority and Fairness
on and off.

Run from the repository root as `.venv/bin/python benchmarks/overload.py` (options:
--nodes N (100), --pods N (5000), --seconds S (60), --trials N (1), --memory-bound MB
(2048), --max-requests-inflight N (400) and --max-mutating-requests-inflight N (200), the
API server's flags, whose sum APF splits into seats; --quick: a smoke run of 5 nodes, 50
pods, a 4 s flood and 1 s windows around it; --no-append). Each trial
starts a private etcd, an API server (--enable-priority-and-fairness true, then false,
alternating), the controller-manager and the scheduler (both with --leader-elect) and N
hollow nodes, every component and every hollow node with its own bearer token
(--token-auth-file; benchmarks/apiserver.py's identities), so that APF classifies each as
upstream's bootstrap FlowSchemas do (system-node-high, system-leader-election,
kube-scheduler, ...), each node a flow of its own. Then:

    1. --pods pods bound round-robin to the hollow nodes in 10 namespaces (8 creates in
       flight), all Running; a component or node lost here is reported apart;
    2. the API server's capacity, measured as the flooder (ServiceAccount flood/flooder, in
       a FlowSchema of its own that sends it to workload-low): LISTs/s of every pod in
       every namespace (2 at a time) and ConfigMap creates/s (64 at a time);
    3. a quiet window (a quarter of --seconds, at least 5 s): the baseline of every figure
       below;
    4. the flood, for --seconds: 2 processes send LISTs of every pod and creates, open
       loop, at 8x the LIST capacity plus 2x the create capacity (10x what the server can
       serve), ignoring Retry-After, each request given upstream's 60 s, at most 256 LISTs
       and 512 creates in flight per process;
    5. in both windows: node Lease renewals and leader-election renewals (the API server's
       own apiserver_request_duration_seconds for PUT leases, which includes the APF wait;
       and each node Lease's renewTime against when a watch saw it), scheduler binds (POST
       pods/binding from the same histogram; and probe pods created 5/s, created -> bound
       as a watch sees them), a kubectl user's LISTs of 50 pods (global-default), nodes
       NotReady, the leader-election Leases' holders, and the API server's RSS each second.

Targets (issue 34): 0 leader-election leases lost and 0 nodes NotReady; lease renewals and
scheduler binds p99 <= 1 s; the flooder answered with 429s, never a timeout; the API
server's RSS peak <= --memory-bound. With APF off the same flood shows what it does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import multiprocessing
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import orjson
import uvloop

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import (  # noqa: E402
    IDENTITIES,
    BenchmarkError,
    Identities,
    cpu_seconds,
    machine_busy_seconds,
    percentile,
    private_api_server_with_identities,
    progress,
    token,
)
from benchmarks.density import difference, histograms, quantile  # noqa: E402
from benchmarks.hollow_nodes import wait_nodes_ready  # noqa: E402
from benchmarks.pod_startup import rss_megabytes  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client import transport  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402
from minikube_py.cluster.apiserver import APIServerProcess  # noqa: E402
from minikube_py.cluster.components import (  # noqa: E402
    ControllerManagerProcess,
    HollowNodesProcess,
    SchedulerProcess,
)

LOAD_NAMESPACES = 10
PROBE = "probe"
FLOOD = "flood"
REQUEST_TIMEOUT = 60.0  # upstream's --request-timeout
FLOOD_PROCESSES = 2
# The flood's demand, in multiples of what the server serves of each kind alone: 8 + 2 =
# 10x. The flooder runs on the server's two cores and spends about as much CPU on a
# create (or its 429) as the server does, where a LIST of every pod costs the server far
# more than the client: the demand is mostly LISTs, so that the flooder's own CPU does
# not stand in for the overload it is meant to cause.
LIST_DEMAND, CREATE_DEMAND = 8.0, 2.0
PROBE_RATE = 5.0  # probe pods created per second
KUBECTL_PERIOD = 0.5
LEADER_LEASES = ("kube-scheduler", "kube-controller-manager")
SETUP_CONCURRENCY = 8  # the load pods' creates in flight: the setup must not starve leases

# Who the clients are (--token-auth-file): the cluster's components as in every benchmark
# (benchmarks/apiserver.py), a flooding ServiceAccount and a kubectl user.
OVERLOAD_IDENTITIES = {
    **IDENTITIES,
    "flooder": (f"system:serviceaccount:{FLOOD}:flooder", "5",
                f"system:serviceaccounts,system:serviceaccounts:{FLOOD}"),
    "kubectl": ("alice", "6", ""),
}

FLOOD_SCHEMA = {
    "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
    "metadata": {"name": "flooder"},
    "spec": {"priorityLevelConfiguration": {"name": "workload-low"},
             "matchingPrecedence": 1000, "distinguisherMethod": {"type": "ByUser"},
             "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {
                 "name": "flooder", "namespace": FLOOD}}],
                        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                           "resources": ["*"], "namespaces": ["*"],
                                           "clusterScope": True}]}]}}


def load_pod(index: int, nodes: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"load-{index:05d}", "labels": {"app": "load"}},
            "spec": {"nodeName": f"hollow-node-{index % nodes}",
                     "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "1m",
                                                                "memory": "8Mi"}}}]}}


def probe_pod(index: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"probe-{index:05d}"},
            "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "1m",
                                                                "memory": "8Mi"}}}]}}


def configmap(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                         "data": {"key": "x" * 200}})


def parse_time(text: str) -> float:
    """A MicroTime or Time as seconds since the epoch."""
    text = text.rstrip("Z")
    layout = "%Y-%m-%dT%H:%M:%S.%f" if "." in text else "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(text, layout).replace(tzinfo=UTC).timestamp()


# -- the flooder (separate processes) -------------------------------------------------------

@dataclass
class FloodCounts:
    sent: dict[str, int] = field(default_factory=lambda: {"list": 0, "create": 0})
    held_back: dict[str, int] = field(default_factory=lambda: {"list": 0, "create": 0})
    ok: int = 0
    rejected: int = 0  # 429
    other: int = 0
    timeouts: int = 0
    errors: int = 0
    cpu_seconds: float = 0.0  # the flooder processes' own CPU
    rejected_seconds: list[float] = field(default_factory=list)
    ok_seconds: list[float] = field(default_factory=list)

    def add(self, other: FloodCounts) -> None:
        for kind in self.sent:
            self.sent[kind] += other.sent[kind]
            self.held_back[kind] += other.held_back[kind]
        for name in ("cpu_seconds", "ok", "rejected", "other", "timeouts", "errors"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.rejected_seconds += other.rejected_seconds
        self.ok_seconds += other.ok_seconds


def flood_worker(url: str, number: int, list_rate: float, create_rate: float, seconds: float,
                 conn: Connection) -> None:
    """Child process: send LISTs and creates open loop at the rates for `seconds`; send
    ("ready",) once connected, wait for ("go",), then send ("done", counts)."""
    try:
        counts = uvloop.run(_flood(url, number, list_rate, create_rate, seconds, conn))
    except Exception as err:  # reported to the parent, which fails the trial
        conn.send(("error", repr(err)))
    else:
        conn.send(("done", counts))
    conn.close()


async def _flood(url: str, number: int, list_rate: float, create_rate: float, seconds: float,
                 conn: Connection) -> FloodCounts:
    counts = FloodCounts()
    pool = transport.ConnectionPool(url, headers={
        "Accept": "application/json", "Authorization": f"Bearer {token('flooder')}"})
    caps = {"list": 256, "create": 512}
    in_flight = {"list": 0, "create": 0}
    tasks: set[asyncio.Task[None]] = set()

    async def send(kind: str, index: int) -> None:
        in_flight[kind] += 1
        started = time.monotonic()
        try:
            if kind == "list":
                answer = await pool.request("GET", "/api/v1/pods", timeout=REQUEST_TIMEOUT)
            else:
                answer = await pool.request(
                    "POST", f"/api/v1/namespaces/{FLOOD}/configmaps",
                    body=configmap(f"f{number}-{index}"),
                    headers={"Content-Type": "application/json"}, timeout=REQUEST_TIMEOUT)
        except TimeoutError:
            counts.timeouts += 1
        except transport.TransportError:
            counts.errors += 1
        else:
            if answer.status < 300:
                counts.ok += 1
                counts.ok_seconds.append(time.monotonic() - started)
            elif answer.status == 429:
                counts.rejected += 1
                counts.rejected_seconds.append(time.monotonic() - started)
            else:
                counts.other += 1
        finally:
            in_flight[kind] -= 1

    await asyncio.to_thread(conn.send, ("ready",))
    await asyncio.to_thread(conn.recv)
    started = time.monotonic()
    rates = {"list": list_rate, "create": create_rate}
    while (elapsed := time.monotonic() - started) < seconds:
        for kind, rate in rates.items():
            due = int(rate * elapsed) - counts.sent[kind]
            for _ in range(max(0, due)):
                counts.sent[kind] += 1
                if in_flight[kind] >= caps[kind]:
                    counts.held_back[kind] += 1
                    continue
                task = asyncio.create_task(send(kind, counts.sent[kind]))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        await asyncio.sleep(0.005)
    if tasks:
        await asyncio.wait(tasks)
    await pool.close()
    counts.cpu_seconds = time.process_time()
    return counts


# -- the observers (this process) -----------------------------------------------------------

@dataclass
class Window:
    """What the observers saw between `start` and `stop` (monotonic seconds)."""
    lease_lags: list[float] = field(default_factory=list)  # seen - renewTime
    lease_gaps: list[float] = field(default_factory=list)  # renewTime - previous renewTime
    binds: list[float] = field(default_factory=list)  # probe pod created -> seen bound
    probes: set[str] = field(default_factory=set)  # probe pods created in the window
    unbound: int = 0  # of those, not seen bound when the window ended
    kubectl: list[float] = field(default_factory=list)
    kubectl_statuses: dict[int, int] = field(default_factory=dict)
    not_ready: set[str] = field(default_factory=set)
    rss_peak: float = 0.0
    histograms: dict[tuple[str, str], dict[float, float]] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


class Observers:
    """Watches and samplers that record into the current window."""

    def __init__(self, admin: Client, kubectl: Client, api_pid: int) -> None:
        self.admin = admin
        self.kubectl = kubectl
        self.api_pid = api_pid
        self.window = Window()
        self.created: dict[str, float] = {}
        self.bound: set[str] = set()
        self.renewed: dict[str, float] = {}
        self.probes = 0
        self.tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> Observers:
        started = [asyncio.Event() for _ in range(3)]
        self.tasks = [asyncio.create_task(coro) for coro in (
            self.watch("leases", "kube-node-lease", self.on_lease, started[0]),
            self.watch("nodes", None, self.on_node, started[1]),
            self.watch("pods", PROBE, self.on_probe, started[2]),
            self.sample_rss(), self.kubectl_gets(), self.create_probes())]
        async with asyncio.timeout(60):
            for event in started:
                await event.wait()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def watch(self, plural: str, namespace: str | None, on_event: Any,
                    started: asyncio.Event) -> None:
        resource = self.admin.resource(plural, "coordination.k8s.io" if plural == "leases"
                                       else None)
        while True:  # a watch that ends or falls behind: list again
            with contextlib.suppress(Exception):
                listed = await resource.list(namespace)
                for obj in listed["items"]:
                    on_event(obj, listed=True)
                started.set()
                async for event_type, obj in resource.watch(
                        namespace, resource_version=listed["metadata"]["resourceVersion"]):
                    if event_type == "ERROR":
                        break
                    if event_type in ("ADDED", "MODIFIED"):
                        on_event(obj, listed=False)
            await asyncio.sleep(0.2)

    def on_lease(self, lease: dict[str, Any], listed: bool) -> None:
        name, renew = lease["metadata"]["name"], lease["spec"].get("renewTime")
        if not renew:
            return
        renewed = parse_time(renew)
        previous = self.renewed.get(name)
        if previous is not None and renewed > previous:
            self.window.lease_gaps.append(renewed - previous)
            if not listed:
                self.window.lease_lags.append(time.time() - renewed)
        self.renewed[name] = max(renewed, previous or 0.0)

    def on_node(self, node: dict[str, Any], listed: bool) -> None:
        for condition in node.get("status", {}).get("conditions", []):
            if condition["type"] == "Ready" and condition["status"] != "True":
                self.window.not_ready.add(node["metadata"]["name"])

    def on_probe(self, pod: dict[str, Any], listed: bool) -> None:
        name = pod["metadata"]["name"]
        if pod["spec"].get("nodeName") and name not in self.bound and name in self.created:
            self.bound.add(name)
            self.window.binds.append(time.monotonic() - self.created[name])

    async def sample_rss(self) -> None:
        while True:
            self.window.rss_peak = max(self.window.rss_peak, rss_megabytes(self.api_pid))
            await asyncio.sleep(1)

    async def kubectl_gets(self) -> None:
        pods = self.kubectl.resource("pods")
        while True:
            started = time.monotonic()
            try:
                await pods.list(PROBE, limit=50)
                status = 200
            except Exception as err:  # a 429 or a timeout is what this measures
                status = getattr(err, "code", 0) or 0
            self.window.kubectl.append(time.monotonic() - started)
            self.window.kubectl_statuses[status] = self.window.kubectl_statuses.get(status,
                                                                                    0) + 1
            await asyncio.sleep(KUBECTL_PERIOD)

    async def create_probes(self) -> None:
        pods = self.admin.resource("pods")
        started = time.monotonic()
        while True:
            name = f"probe-{self.probes:05d}"
            self.created[name] = time.monotonic()
            self.probes += 1
            self.window.probes.add(name)
            with contextlib.suppress(Exception):
                await pods.create(probe_pod(self.probes - 1), PROBE)
            due = started + self.probes / PROBE_RATE
            await asyncio.sleep(max(0.0, due - time.monotonic()))


def process_cpu(pid: int) -> float:
    """The CPU seconds a process has used; NaN once it has exited."""
    try:
        return cpu_seconds(pid)
    except FileNotFoundError:
        return math.nan


@contextlib.contextmanager
def recording(observers: Observers, url: str, pids: dict[str, int]) -> Iterator[Window]:
    """A fresh window for the observers; its histograms and CPU are the difference from
    entry to exit."""
    window = observers.window = Window()
    before = histograms(url)
    cpu_before = {name: process_cpu(pid) for name, pid in pids.items()}
    busy_before = machine_busy_seconds()
    started = time.monotonic()
    yield window
    window.seconds = time.monotonic() - started
    window.unbound = len(window.probes - observers.bound)
    window.histograms = difference(histograms(url), before)
    window.cpu = {name: (process_cpu(pid) - cpu_before[name]) / window.seconds
                  for name, pid in pids.items()}
    busy = (machine_busy_seconds() - busy_before) / window.seconds
    window.cpu["everything else (flooders, this client, other users)"] = busy - sum(
        window.cpu.values())


def histogram_p99(window: Window, verb: str, resource: str) -> float | None:
    buckets = window.histograms.get((verb, resource))
    if not buckets or max(buckets.values()) <= 0:
        return None
    return quantile(0.99, buckets)


# -- one trial -------------------------------------------------------------------------------

@dataclass
class Trial:
    apf: bool
    list_capacity: float
    create_capacity: float
    demand: float  # the flood's offered load over the capacity
    flood_rates: tuple[float, float]
    counts: FloodCounts
    quiet: Window
    flood: Window
    leaders_lost: list[str]
    not_ready_after: set[str]
    rss_before: float
    setup_casualties: list[str]  # leader-elected components gone before the flood began
    setup_not_ready: int  # nodes NotReady when the flood began


async def wait_all_running(client: Client, count: int, timeout: float) -> None:
    started = time.monotonic()
    while True:
        items = (await client.resource("pods").list(field_selector="status.phase=Running"))[
            "items"]
        if len([p for p in items if p["metadata"]["name"].startswith("load-")]) >= count:
            return
        if time.monotonic() - started > timeout:
            raise BenchmarkError(f"only {len(items)} of {count} pods Running after "
                                 f"{timeout:.0f} s")
        await asyncio.sleep(2)


async def served(pool: transport.ConnectionPool, method: str, path: str, body: bytes = b""
                 ) -> transport.Response:
    """The answer to a request sent again after each 429, as long as its Retry-After says
    (the server's in-flight limit turns away a closed loop wider than its seats)."""
    headers = {"Content-Type": "application/json"} if body else None
    while True:
        answer = await pool.request(method, path, body=body or None, headers=headers,
                                    timeout=REQUEST_TIMEOUT)
        if answer.status != 429:
            return answer
        await asyncio.sleep(float(answer.headers.get("retry-after", "1")))


async def capacity(url: str, pods: int, quick: bool) -> tuple[float, float]:
    """(LISTs/s of every pod, creates/s), closed loop, as the flooder."""
    pool = transport.ConnectionPool(url, headers={
        "Accept": "application/json", "Authorization": f"Bearer {token('flooder')}"})
    try:
        async def lists(count: int) -> None:
            for _ in range(count):
                answer = await served(pool, "GET", "/api/v1/pods")
                if answer.status != 200 or answer.body.count(b'"load-') < pods:
                    raise BenchmarkError(f"LIST pods: {answer.status}")

        started = time.perf_counter()
        per_client = 1 if quick else 4
        await asyncio.gather(lists(per_client), lists(per_client))
        list_rate = 2 * per_client / (time.perf_counter() - started)
        creates = 128 if quick else 1000
        names = iter(range(creates))

        async def create() -> None:
            for index in names:
                answer = await served(pool, "POST", f"/api/v1/namespaces/{FLOOD}/configmaps",
                                      configmap(f"capacity-{index}"))
                if answer.status != 201:
                    raise BenchmarkError(f"create: {answer.status}")

        started = time.perf_counter()
        await asyncio.gather(*(create() for _ in range(64)))
        create_rate = creates / (time.perf_counter() - started)
    finally:
        await pool.close()
    return list_rate, create_rate


async def flood(url: str, list_rate: float, create_rate: float, seconds: float
                ) -> tuple[FloodCounts, list[int]]:
    """Run the flooder processes; their counts summed, and their pids."""
    spawn = multiprocessing.get_context("spawn")
    workers = []
    for number in range(FLOOD_PROCESSES):
        receive, send = spawn.Pipe()
        process = spawn.Process(target=flood_worker, daemon=True, args=(
            url, number, list_rate / FLOOD_PROCESSES, create_rate / FLOOD_PROCESSES, seconds,
            send))
        process.start()
        workers.append((process, receive))
    try:
        for _, receive in workers:
            message = await asyncio.to_thread(receive.recv)
            if message[0] != "ready":
                raise BenchmarkError(f"flooder: {message[1]}")
        for _, receive in workers:
            receive.send(("go",))
        total = FloodCounts()
        for _, receive in workers:
            message = await asyncio.to_thread(receive.recv)
            if message[0] != "done":
                raise BenchmarkError(f"flooder: {message[1]}")
            total.add(message[1])
        return total, [process.pid or 0 for process, _ in workers]
    finally:
        for process, _ in workers:
            if process.is_alive():
                process.terminate()
            process.join(10)


async def not_ready_nodes(admin: Client) -> set[str]:
    nodes = (await admin.resource("nodes").list())["items"]
    return {n["metadata"]["name"] for n in nodes
            if not any(c["type"] == "Ready" and c["status"] == "True"
                       for c in n.get("status", {}).get("conditions", []))}


async def leaders(admin: Client) -> dict[str, tuple[str, int]]:
    leases = admin.resource("leases", "coordination.k8s.io")
    found = {}
    for name in LEADER_LEASES:
        with contextlib.suppress(Exception):
            spec = (await leases.get(name, "kube-system"))["spec"]
            found[name] = (spec.get("holderIdentity", ""), spec.get("leaseTransitions", 0))
    return found


async def trial(args: argparse.Namespace, apf: bool) -> Trial:
    progress(f"trial with APF {'on' if apf else 'off'}")
    async with private_api_server_with_identities((
            "--log-requests=false", "--disable-admission-plugins=ServiceAccount",
            f"--max-requests-inflight={args.max_requests_inflight}",
            f"--max-mutating-requests-inflight={args.max_mutating_requests_inflight}",
            f"--enable-priority-and-fairness={'true' if apf else 'false'}"), args.nodes,
            identities=OVERLOAD_IDENTITIES) as (tmp, etcd, api, identities):
        return await run_trial(args, apf, tmp, api, etcd.pid or 0, identities)


async def run_trial(args: argparse.Namespace, apf: bool, tmp: Path, api: APIServerProcess,
                    etcd_pid: int, identities: Identities) -> Trial:
    leader = ("--leader-elect",)
    configs = identities.kubeconfigs
    async with (ControllerManagerProcess(configs["controller-manager"], tmp / "cm.log",
                                         extra_args=leader) as manager,
                SchedulerProcess(configs["scheduler"], tmp / "scheduler.log",
                                 extra_args=leader) as scheduler,
                HollowNodesProcess(configs["nodes"], tmp / "hollow.log", count=args.nodes,
                                   token_file=identities.node_token_file,
                                   start_timeout=120) as hollow,
                Client.from_kubeconfig(configs["admin"]) as admin,
                Client.from_kubeconfig(configs["kubectl"]) as kubectl):
        pids = {"apiserver": api.pid or 0, "etcd": etcd_pid, "scheduler": scheduler.pid or 0,
                "controller-manager": manager.pid or 0, "hollow nodes": hollow.pid or 0}
        progress(f"{args.nodes} hollow nodes registering")
        await wait_nodes_ready(admin, args.nodes, 300)
        namespaces = admin.resource("namespaces")
        for name in (PROBE, FLOOD, *(f"load-{i}" for i in range(LOAD_NAMESPACES))):
            await namespaces.create({"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": name}})
        if apf:
            await admin.resource("flowschemas", "flowcontrol.apiserver.k8s.io").create(
                FLOOD_SCHEMA)
        progress(f"{args.pods} pods bound to the hollow nodes")
        pods = admin.resource("pods")
        semaphore = asyncio.Semaphore(SETUP_CONCURRENCY)

        async def create(index: int) -> None:
            async with semaphore:
                await pods.create(load_pod(index, args.nodes), f"load-{index % LOAD_NAMESPACES}")

        await asyncio.gather(*(create(i) for i in range(args.pods)))
        await wait_all_running(admin, args.pods, 600)
        progress("capacity")
        list_capacity, create_capacity = await capacity(api.url, args.pods, args.quick)
        list_rate, create_rate = LIST_DEMAND * list_capacity, CREATE_DEMAND * create_capacity
        before_leaders = await leaders(admin)
        setup_casualties = [f"{component.component} exited" for component in (
            scheduler, manager) if not component.running]
        setup_not_ready = len(await not_ready_nodes(admin))
        if setup_casualties or setup_not_ready:
            progress(f"before the flood: {setup_casualties}, {setup_not_ready} nodes NotReady")
        rss_before = rss_megabytes(api.pid or 0)
        async with Observers(admin, kubectl, api.pid or 0) as observers:
            progress("quiet window")
            with recording(observers, api.url, pids) as quiet:
                await asyncio.sleep(args.quiet)
            progress(f"flood: {list_rate:.1f} LISTs/s + {create_rate:.0f} creates/s for "
                     f"{args.seconds:.0f} s")
            with recording(observers, api.url, pids) as flooded:
                counts, _ = await flood(api.url, list_rate, create_rate, args.seconds)
            progress("after the flood")
            await asyncio.sleep(args.settle)
        after_leaders = await leaders(admin)
        not_ready_after = await not_ready_nodes(admin)
        lost = [name for name in LEADER_LEASES
                if name not in after_leaders or after_leaders[name] != before_leaders.get(name)]
        for component in (scheduler, manager, hollow):
            if not component.running:
                if component is not hollow:
                    lost.append(f"{component.component} exited")
                log = component.log_path.read_text(errors="replace").splitlines()
                progress(f"{component.component} exited; its log ends:\n" + "\n".join(log[-15:]))
    offered = {kind: counts.sent[kind] - counts.held_back[kind] for kind in counts.sent}
    demand = (offered["list"] / args.seconds / list_capacity
              + offered["create"] / args.seconds / create_capacity)
    return Trial(apf, list_capacity, create_capacity, demand, (list_rate, create_rate),
                 counts, quiet, flooded, lost, not_ready_after, rss_before, setup_casualties,
                 setup_not_ready)


# -- the report ------------------------------------------------------------------------------

def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def figures(values: list[float], unit: str = "ms", scale: float = 1000.0) -> str:
    """The median of the trials, and each trial's figure when there are several."""
    text = f"{median(values) * scale:,.0f} {unit}"
    if len(values) > 1:
        text += " (trials: " + ", ".join(f"{v * scale:,.0f}" for v in values) + ")"
    return text


def sent(trial: Trial, kind: str) -> float:
    """Requests of a kind the flooder sent per second (not those held back at its cap)."""
    counts = trial.counts
    return (counts.sent[kind] - counts.held_back[kind]) / trial.flood.seconds


def rows_for(trials: list[Trial], memory_bound: float, settle: float) -> list[Row]:
    mode = "APF on" if trials[0].apf else "APF off"
    rows: list[Row] = []
    demand = [t.demand for t in trials]
    rows.append((
        f"{mode}: flood offered (LIST every pod + ConfigMap creates, open loop)",
        f"{median(demand):.1f}x capacity; " + "; ".join(
            f"{sent(t, 'list'):.1f} LISTs/s + {sent(t, 'create'):,.0f} creates/s sent "
            f"against a capacity of {t.list_capacity:.1f} LISTs/s, "
            f"{t.create_capacity:,.0f} creates/s ({sum(t.counts.held_back.values()):,} "
            "more were due but the flooder had its cap in flight)"
            for t in trials),
        ">= 10x", verdict(round(median(demand), 1) >= 10)))
    lost = [len(t.leaders_lost) for t in trials]
    rows.append((f"{mode}: leader-election leases lost (scheduler, controller-manager)",
                 ", ".join(str(n) + (f" ({', '.join(t.leaders_lost)}; before the flood: "
                                     f"{len(t.setup_casualties)})" if n else "")
                           for n, t in zip(lost, trials, strict=True)),
                 "0", verdict(max(lost) == 0)))
    not_ready = [len(t.quiet.not_ready | t.flood.not_ready | t.not_ready_after)
                 for t in trials]
    rows.append((f"{mode}: nodes NotReady in the quiet window, the flood or "
                 f"{settle:.0f} s after",
                 ", ".join(f"{n} (when the flood began: {t.setup_not_ready})"
                           for n, t in zip(not_ready, trials, strict=True)),
                 "0", verdict(max(not_ready) == 0)))
    for label, verb, resource in (
            ("lease renewals (PUT leases: node and leader-election), server p99",
             "PUT", "leases"),
            ("scheduler binds (POST pods/binding), server p99", "POST", "pods/binding")):
        flood_p99 = [histogram_p99(t.flood, verb, resource) for t in trials]
        quiet_p99 = [histogram_p99(t.quiet, verb, resource) for t in trials]
        if any(value is None for value in flood_p99):
            rows.append((f"{mode}: {label}", "none served during the flood", "<= 1 s",
                         "FAIL"))
            continue
        floods = [v for v in flood_p99 if v is not None]
        quiets = [v for v in quiet_p99 if v is not None]
        ratio = f" ({median(floods) / median(quiets):.1f}x)" if quiets and median(quiets) else ""
        rows.append((f"{mode}: {label}",
                     f"flood {figures(floods)}; quiet {figures(quiets)}{ratio}",
                     "<= 1 s", verdict(median(floods) <= 1)))
    lags = [percentile(t.flood.lease_lags, 99) for t in trials]
    gaps = [max(t.flood.lease_gaps, default=0.0) for t in trials]
    rows.append((f"{mode}: node Lease renewTime -> seen by a watch, p99; longest gap between "
                 "renewals (every 10 s)",
                 f"flood {figures(lags)}, quiet "
                 f"{figures([percentile(t.quiet.lease_lags, 99) for t in trials])}; longest gap "
                 f"{figures(gaps, 's', 1.0)}", "", ""))
    binds = [percentile(t.flood.binds, 99) for t in trials]
    unbound = [t.flood.unbound for t in trials]
    rows.append((f"{mode}: probe pods (5/s) created -> seen bound, p99",
                 f"flood {figures(binds)}, quiet "
                 f"{figures([percentile(t.quiet.binds, 99) for t in trials])}; "
                 "created in the flood and not bound by its end: "
                 f"{', '.join(map(str, unbound))}", "", ""))
    timeouts = [t.counts.timeouts + t.counts.errors for t in trials]
    rejected = [t.counts.rejected for t in trials]
    rows.append((f"{mode}: flooder's answers",
                 "; ".join(f"{t.counts.ok:,} 2xx, {t.counts.rejected:,} 429 (p99 "
                           f"{percentile(t.counts.rejected_seconds, 99) * 1000:,.0f} ms), "
                           f"{t.counts.other:,} other, {t.counts.timeouts:,} timeouts, "
                           f"{t.counts.errors:,} connection errors" for t in trials),
                 "429s, no timeouts",
                 verdict(max(timeouts) == 0 and min(rejected) > 0)))
    rows.append((f"{mode}: kubectl user's LIST (global-default), p99",
                 f"flood {figures([percentile(t.flood.kubectl, 99) for t in trials])}, quiet "
                 f"{figures([percentile(t.quiet.kubectl, 99) for t in trials])}; statuses "
                 + "; ".join(str(dict(sorted(t.flood.kubectl_statuses.items())))
                             for t in trials), "", ""))
    peaks = [t.flood.rss_peak for t in trials]
    rows.append((f"{mode}: API server RSS peak during the flood",
                 f"{figures(peaks, 'MB', 1.0)} (before: "
                 f"{median([t.rss_before for t in trials]):,.0f} MB)",
                 f"<= {memory_bound:,.0f} MB", verdict(median(peaks) <= memory_bound)))
    rows.append((f"{mode}: CPU during the flood (% of one core, median)", ", ".join(
        f"{name} {100 * median([t.flood.cpu[name] for t in trials]):.0f}%"
        for name in trials[0].flood.cpu) + ", of which the flooders " + ", ".join(
        f"{100 * t.counts.cpu_seconds / t.flood.seconds:.0f}%" for t in trials), "", ""))
    return rows


async def measure(args: argparse.Namespace) -> list[Row]:
    if args.quick:  # a smoke run: every phase, on the fewest objects, in the shortest windows
        args.nodes, args.pods, args.seconds, args.trials = 5, 50, 4.0, 1
        args.quiet, args.settle = 1.0, 1.0
    else:
        args.quiet, args.settle = max(5.0, args.seconds / 4), 5.0
    results: dict[bool, list[Trial]] = {True: [], False: []}
    for _ in range(args.trials):
        for apf in (True, False):
            results[apf].append(await trial(args, apf))
    return [*rows_for(results[True], args.memory_bound, args.settle),
            *rows_for(results[False], args.memory_bound, args.settle)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=100, help="hollow nodes")
    parser.add_argument("--pods", type=int, default=5000, help="pods the flooder LISTs")
    parser.add_argument("--seconds", type=float, default=60.0, help="the flood's length")
    parser.add_argument("--trials", type=int, default=1, help="trials with APF on and off")
    parser.add_argument("--max-requests-inflight", type=int, default=400,
                        help="the API server's flag (its default); with APF, the seats")
    parser.add_argument("--max-mutating-requests-inflight", type=int, default=200,
                        help="the API server's flag (its default)")
    parser.add_argument("--memory-bound", type=float, default=2048.0,
                        help="the API server's RSS bound, MB")


def note(args: argparse.Namespace) -> str:
    return (f"{args.nodes} hollow nodes, {args.pods} pods, a {args.seconds:.0f} s flood, "
            f"{args.trials} trial(s) with APF on and off alternating; API server "
            f"--max-requests-inflight={args.max_requests_inflight} "
            f"--max-mutating-requests-inflight={args.max_mutating_requests_inflight}")


if __name__ == "__main__":
    run_benchmark(__doc__.splitlines()[0], "overload (API Priority and Fairness)",
                  "overload.py", measure, add_arguments=add_arguments, note=note)
