"""Benchmark: the API server's create, get, list and watch performance on this machine.

Run from the repository root as `.venv/bin/python benchmarks/apiserver.py` (options:
--quick: a smoke run of small counts and one trial of each; --no-append, --json,
--event-loop, --watch-processes). It starts a private etcd (data on /dev/shm) and an API
server with request logging off, measures, prints a table with PASS/FAIL beside each
target, appends it to benchmarks/RESULTS.md, and stops both.

    1. raw etcd create Txns/s over grpc.aio, 64-way (benchmarks/etcd_raw.py): the ceiling
    2. API creates/s: 64 concurrent clients POSTing small ConfigMaps; a full run alternates
       5 trials of each with 5 raw trials and reports the median trial, and the median of
       each API trial's rate over the raw trial beside it
    3. API GETs/s: 64 concurrent clients GETting them by name (a consistent read: etcd),
       the median of 5 trials
    4. LIST of 5,000 ~1.5 KB pods: in full, with resourceVersion=0, and in limit=500 pages
    5. watch fan-out: 100 watchers, 2,000 creates paced at 200/s, then unpaced; latency of
       each delivery = receipt time minus the monotonic time written into the object
       just before its create was sent (CLOCK_MONOTONIC is shared by all processes)
    6. orjson vs the stdlib json on a 5,000-pod list; in a full run, the same server on
       the other event loop (uvloop or asyncio)
    7. the price of security: creates/s and GETs/s against a server with TLS, client
       certificates and RBAC (the client a user bound to `edit` in the namespace), over
       the same against plain HTTP with AlwaysAllow, in alternating trials on fresh
       servers. Target: >= 80% of the plain figures
    8. the price of tracing: creates/s with every write traced (a span exported to the
       trace receiver, the trace recorded on the object) over untraced, alternating
       trials on fresh servers. Target: >= 90%
    9. the price of API Priority and Fairness (on by default): creates/s and GETs/s with it
       over without it (--enable-priority-and-fairness=false), alternating trials on fresh
       servers whose limits give every client a seat. Target: >= 90%

Every phase also records the CPU each process used (API server, etcd, this client, the
watch readers and everything else on the machine), from /proc, so a reader can tell which
process limited a figure, and the API server's CPU per request, which does not depend on
what else runs. Requests go through the client's keep-alive HTTP/1.1 pool
(minikube_py/client/transport.py), because aiohttp's client would take CPU from the server
on 2 cores; watches are read by aiohttp in separate processes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import math
import multiprocessing
import os
import platform
import ssl
import statistics
import subprocess
import sys
import time
from array import array
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version as package_version
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.etcd_raw import raw_create_rate, scratch_directory  # noqa: E402
from minikube_py.client import transport  # noqa: E402
from minikube_py.cluster.apiserver import APIServerProcess, ServingTLS  # noqa: E402
from minikube_py.cluster.etcd import EtcdProcess  # noqa: E402
from minikube_py.cluster.kubeconfig import (  # noqa: E402
    kubeconfig,
    write_kubeconfig,
    write_kubeconfig_document,
)
from minikube_py.process import free_port, port_in_use  # noqa: E402
from minikube_py.security import pki  # noqa: E402

RESULTS = REPO / "benchmarks" / "RESULTS.md"
SENT_MARK = b'"sent":"'
WATCH_RATE = 200.0  # creates/s in the paced watch run
# The pods created here run in a namespace no serviceaccount controller serves.
NO_SERVICE_ACCOUNTS = "--disable-admission-plugins=ServiceAccount"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Sizes:
    """How much work each phase does."""

    creates: int
    gets: int
    pods: int
    list_runs: int
    watchers: int
    watch_events: int
    concurrency: int = 64
    page: int = 500
    # The create and GET phases run this many times: the figure is the median trial,
    # because on a 2-core virtual machine one trial can run 30% slower than the next.
    trials: int = 1


FULL = Sizes(creates=4000, gets=8000, pods=5000, list_runs=10, watchers=100, watch_events=2000,
             trials=5)
QUICK = Sizes(creates=300, gets=300, pods=300, list_runs=1, watchers=10, watch_events=100)
# One trial of the event loop comparison (a full run alternates them, each on a fresh etcd).
TRIAL = Sizes(creates=3000, gets=6000, pods=5000, list_runs=5, watchers=100, watch_events=1000)
LOOP_TRIALS = 2
# One trial of the security comparison in a full run: smaller trials are all TLS
# handshakes and noise.
SECURITY_TRIAL = Sizes(creates=2000, gets=4000, pods=0, list_runs=0, watchers=0,
                       watch_events=0)
# A quick run is a smoke run: it proves the comparisons run, so it takes small trials.
QUICK_SECURITY_TRIAL = Sizes(creates=200, gets=400, pods=0, list_runs=0, watchers=0,
                             watch_events=0)
# The figure that sums up a row in the comparison, by its key in Row.numbers.
HEADLINES = (("rate", "/s"), ("median_ms", " ms median"), ("p99_ms", " ms p99"))


@dataclass
class Row:
    """One line of the results table."""

    metric: str
    value: str
    target: str = ""
    passed: bool | None = None
    cpu: dict[str, float] = field(default_factory=dict)
    numbers: dict[str, float] = field(default_factory=dict)

    @property
    def result(self) -> str:
        return "" if self.passed is None else ("PASS" if self.passed else "FAIL")


@dataclass
class Trial:
    """One run of a phase: its rate, the CPU each process used, the API server's CPU per
    request (us)."""

    rate: float
    cpu: dict[str, float]
    cost_us: float = 0.0


def median_trial(trials: list[Trial]) -> Trial:
    """The trial with the median rate (the lower middle one of an even count)."""
    return sorted(trials, key=lambda trial: trial.rate)[(len(trials) - 1) // 2]


def rates(trials: list[Trial]) -> str:
    """The rates in the order the trials ran, e.g. " (median of 5 trials: 1,650, ...)";
    nothing for a single trial."""
    if len(trials) == 1:
        return ""
    return (f" (median of {len(trials)} trials: "
            f"{', '.join(f'{trial.rate:,.0f}' for trial in trials)})")


@contextlib.asynccontextmanager
async def private_api_server(extra_args: tuple[str, ...]) -> AsyncIterator[
        tuple[Path, EtcdProcess, APIServerProcess, Path]]:
    """A scratch folder (on tmpfs), an etcd and an API server of the benchmark's own, and
    its kubeconfig: (folder, etcd, API server, kubeconfig), all gone on the way out."""
    with scratch_directory() as scratch:
        tmp = Path(scratch)
        async with (EtcdProcess(tmp / "etcd") as etcd,
                    APIServerProcess([etcd.client_url], tmp / "apiserver.log",
                                     extra_args=extra_args) as api):
            yield tmp, etcd, api, write_kubeconfig(tmp / "kubeconfig", api.url)


# -- who the clients of a benchmark's cluster are --------------------------------------------

# name -> (user, uid, groups), as a real cluster's components authenticate, so that API
# Priority and Fairness classifies each as upstream's bootstrap FlowSchemas do: the
# benchmark's own measuring client system:masters (exempt: its polls do not compete with
# the cluster), the scheduler and the controller-manager (kube-scheduler and
# kube-controller-manager: workload-high), the hollow process's shared informers a node
# (system-nodes: system). Each hollow node is a user of its own besides (node_identities).
IDENTITIES: dict[str, tuple[str, str, str]] = {
    "admin": ("admin", "1", "system:masters"),
    "scheduler": ("system:kube-scheduler", "2", ""),
    "controller-manager": ("system:kube-controller-manager", "3", ""),
    "nodes": ("system:node:hollow-node", "4", "system:nodes"),
}
HOLLOW_PREFIX = "hollow-node"  # the hollow nodes' names: hollow-node-0, ... (HollowNodesProcess)


def token(name: str) -> str:
    """The bearer token of an identity (a name of IDENTITIES, or a hollow node's)."""
    return f"benchmark-{name}-token"


def node_identities(count: int, prefix: str = HOLLOW_PREFIX) -> dict[str, tuple[str, str, str]]:
    """Each hollow node its own user, system:node:<prefix>-<i> in system:nodes, as a real
    kubelet is: a flow of its own in API Priority and Fairness (FlowSchemas system-nodes
    and system-node-high tell flows apart ByUser), where one credential for every node
    would be one flow whose queues the whole process fills."""
    return {f"{prefix}-{i}": (f"system:node:{prefix}-{i}", f"node-{i}", "system:nodes")
            for i in range(count)}


@dataclass(frozen=True)
class Identities:
    """What write_identities wrote."""

    token_file: Path  # every identity: the API server's --token-auth-file
    node_token_file: Path  # the hollow nodes' alone: their --simulated-token-file
    kubeconfigs: dict[str, Path]  # a name of the identities -> a kubeconfig of its token


def _token_lines(identities: dict[str, tuple[str, str, str]]) -> str:
    return "".join(f'{token(name)},{user},{uid},"{groups}"\n' if groups else
                   f"{token(name)},{user},{uid}\n"
                   for name, (user, uid, groups) in identities.items())


def write_identities(tmp: Path, url: str, nodes: int = 0, *,
                     identities: dict[str, tuple[str, str, str]] | None = None,
                     node_prefix: str = HOLLOW_PREFIX) -> Identities:
    """The token files of `identities` (IDENTITIES by default) and of `nodes` hollow
    nodes, and a kubeconfig per identity (the nodes' tokens are read by their process)."""
    identities = identities or IDENTITIES
    node_lines = _token_lines(node_identities(nodes, node_prefix))
    (tmp / "tokens.csv").write_text(_token_lines(identities) + node_lines)
    (tmp / "node-tokens.csv").write_text(node_lines)
    configs = {}
    for name in identities:
        document = kubeconfig(url)
        document["users"] = [{"name": "admin", "user": {"token": token(name)}}]
        configs[name] = write_kubeconfig_document(tmp / f"{name}.kubeconfig", document)
    return Identities(tmp / "tokens.csv", tmp / "node-tokens.csv", configs)


@contextlib.asynccontextmanager
async def private_api_server_with_identities(
        extra_args: tuple[str, ...], nodes: int = 0, *,
        identities: dict[str, tuple[str, str, str]] | None = None,
        node_prefix: str = HOLLOW_PREFIX) -> AsyncIterator[
            tuple[Path, EtcdProcess, APIServerProcess, Identities]]:
    """private_api_server whose clients are who write_identities says (its
    --token-auth-file): (folder, etcd, API server, identities), all gone on the way out."""
    with scratch_directory() as scratch:
        tmp = Path(scratch)
        async with EtcdProcess(tmp / "etcd") as etcd:
            api = APIServerProcess([etcd.client_url], tmp / "apiserver.log", extra_args=(
                *extra_args, f"--token-auth-file={tmp / 'tokens.csv'}"))
            written = write_identities(tmp, api.url, nodes, identities=identities,
                                       node_prefix=node_prefix)
            async with api:
                yield tmp, etcd, api, written


class BenchmarkError(Exception):
    """The API server answered something unexpected, so a figure would be meaningless."""


# -- processes and their CPU -----------------------------------------------------------------

def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: [state, ppid, ..., utime, stime, ...]."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def child_pid(marker: str) -> int:
    """The pid of this process's child whose command line contains marker."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError):
            if (int(_stat_fields(int(entry.name))[1]) == os.getpid()
                    and marker.encode() in (entry / "cmdline").read_bytes()):
                return int(entry.name)
    raise BenchmarkError(f"no child process running {marker}")


def machine_busy_seconds() -> float:
    """CPU time all cores have spent not idle, from /proc/stat (user to steal)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields)
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


@contextlib.contextmanager
def measure_cpu(pids: dict[str, int]) -> Iterator[dict[str, float]]:
    """Yield a dict that, after the block, holds each process's CPU share of the wall time.

    "others" is what every other process on the machine used meanwhile: a figure taken
    while others is high was measured on a busy machine.
    """
    shares: dict[str, float] = {}
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    busy = machine_busy_seconds()
    started = time.perf_counter()
    yield shares
    wall = time.perf_counter() - started
    ours = 0.0
    for name, pid in pids.items():
        with contextlib.suppress(OSError):
            used = cpu_seconds(pid) - before[name]
            ours += used
            shares[name] = used / wall
    shares["others"] = max(0.0, machine_busy_seconds() - busy - ours) / wall


def server_cpu_us(cpu: dict[str, float], elapsed: float, count: int) -> float:
    """API server CPU per operation in microseconds: what one core could do, inverted."""
    return cpu.get("apiserver", 0.0) * elapsed / count * 1e6


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a list; 0.0 for an empty one."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


# -- objects ---------------------------------------------------------------------------------

def configmap(name: str, data: dict[str, str]) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                         "data": data})


def pod(index: int) -> bytes:
    """A realistic pod: one container with image, ports, env, resources, probes, labels."""
    return orjson.dumps({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"web-{index:05d}",
            "labels": {"app": "web", "tier": "frontend", "track": "stable",
                       "pod-template-hash": "6d9f7c8b5"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9102"},
        },
        "spec": {
            "containers": [{
                "name": "web",
                "image": "registry.k8s.io/e2e-test-images/nginx:1.15-4",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 9102, "protocol": "TCP"}],
                "env": [{"name": "LOG_LEVEL", "value": "info"},
                        {"name": "POD_INDEX", "value": str(index)},
                        {"name": "BACKEND_URL",
                         "value": "http://backend.default.svc.cluster.local:8080"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                              "limits": {"cpu": "500m", "memory": "256Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080},
                                   "periodSeconds": 10},
            }],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
        },
    })


# -- HTTP load -------------------------------------------------------------------------------

class ConnectionPool:
    """At most `size` requests in flight, over the client's own keep-alive HTTP/1.1 pool
    (minikube_py/client/transport.py): on 2 cores every microsecond the benchmark's
    client spends is taken from the API server or etcd, and aiohttp's client costs about
    3x as much CPU per request here."""

    def __init__(self, url: str, size: int, ssl_context: ssl.SSLContext | None = None,
                 token: str = "") -> None:
        """`token`: the bearer token the requests carry (none: system:anonymous)."""
        self.url = url
        self.size = size
        self._slots = asyncio.Semaphore(size)
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = transport.ConnectionPool(url, ssl_context=ssl_context, headers=headers)

    async def __aenter__(self) -> ConnectionPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._http.close()

    async def request(self, method: str, path: str, body: bytes = b"", *,
                      expect: int = 200, content_type: str = "application/json") -> bytes:
        """The answer's body; a status other than `expect` fails the benchmark."""
        headers = {"Content-Type": content_type} if body else None
        async with self._slots:
            answer = await self._http.request(method, path, body=body, headers=headers)
        if answer.status != expect:
            raise BenchmarkError(f"{method} {path}: expected {expect}, got {answer.status}: "
                                 f"{answer.body[:300]!r}")
        return answer.body


async def run_concurrently(n: int, concurrency: int,
                           request: Callable[[int], Awaitable[object]]) -> float:
    """Call request(0..n-1) from `concurrency` workers; return the elapsed seconds."""
    indices = iter(range(n))

    async def worker() -> None:
        for index in indices:
            await request(index)

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, n)):
            group.create_task(worker())
    return time.perf_counter() - started


async def create_all(pool: ConnectionPool, path: str, bodies: list[bytes]) -> float:
    """POST every body to path from every connection of the pool; return the seconds."""
    return await run_concurrently(
        len(bodies), pool.size, lambda index: pool.request("POST", path, bodies[index],
                                                           expect=201))


async def create_namespace(pool: ConnectionPool, name: str) -> None:
    body = orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    await pool.request("POST", "/api/v1/namespaces", body, expect=201)


# -- watch readers (separate processes) -------------------------------------------------------

WatchReader = tuple[multiprocessing.process.BaseProcess, Connection]


def start_watch_readers(url: str, watchers: int, processes: int, expected: int,
                        timeout: float) -> list[WatchReader]:
    """Start `processes` reader processes holding `watchers` watches on url between them."""
    spawn = multiprocessing.get_context("spawn")
    readers = []
    for number in range(processes):
        receive, send = spawn.Pipe(duplex=False)
        share = watchers // processes + (number < watchers % processes)
        process = spawn.Process(target=watch_worker, args=(url, share, expected, timeout, send),
                                daemon=True)
        process.start()
        send.close()
        readers.append((process, receive))
    return readers


async def receive_message(receive: Connection, kind: str) -> tuple[Any, ...]:
    """The next message of a watch reader, which must be `kind` ("ready" or "done")."""
    try:
        message: tuple[Any, ...] = await asyncio.to_thread(receive.recv)
    except EOFError:
        raise BenchmarkError("a watch reader process died") from None
    if message[0] != kind:
        raise BenchmarkError(f"watch reader: {message[1]}")
    return message


def watch_worker(url: str, watchers: int, expected: int, timeout: float,
                 conn: Connection) -> None:
    """Child process: hold `watchers` watches on url; send ready, then every latency (ms).

    It runs on uvloop (cheaper per event than asyncio's loop) and never touches gRPC.
    """
    try:
        latencies, counts = uvloop.run(_read_watches(url, watchers, expected, timeout, conn))
    except Exception as err:  # reported to the parent, which fails the phase
        conn.send(("error", repr(err)))
    else:
        conn.send(("done", latencies.tobytes(), counts))
    conn.close()


async def _read_watches(url: str, watchers: int, expected: int, timeout: float,
                        conn: Connection) -> tuple[array[float], list[int]]:
    latencies: array[float] = array("d")
    counts = [0] * watchers
    connected: list[int] = []
    all_connected = asyncio.Event()

    async def watch(number: int, http: aiohttp.ClientSession) -> None:
        async with http.get(url, headers={"Accept": "application/json"}) as response:
            if response.status != 200:
                raise BenchmarkError(f"watch answered {response.status}")
            connected.append(number)
            if len(connected) == watchers:
                all_connected.set()
            pending = b""
            async for chunk in response.content.iter_any():
                received = time.monotonic()
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    start = line.find(SENT_MARK) + len(SENT_MARK)
                    if start < len(SENT_MARK):
                        continue  # a BOOKMARK
                    sent = float(line[start:line.index(b'"', start)])
                    latencies.append((received - sent) * 1000)
                    counts[number] += 1
                if counts[number] >= expected:
                    return

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        tasks = [asyncio.create_task(watch(number, http)) for number in range(watchers)]
        ready = asyncio.create_task(all_connected.wait())
        await asyncio.wait([ready, *tasks], timeout=30, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                task.result()  # a watch that ended already: raise its error
        if not ready.done():
            ready.cancel()
            raise BenchmarkError(f"only {len(connected)} of {watchers} watches connected")
        conn.send(("ready", watchers))
        done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for task in done:
            task.result()
    return latencies, counts


# -- the benchmark ---------------------------------------------------------------------------

class Bench:
    """The measurements against one API server, through one pool of connections."""

    def __init__(self, pool: ConnectionPool, sizes: Sizes, pids: dict[str, int]) -> None:
        self.pool = pool
        self.sizes = sizes
        self.pids = pids
        self.list_body = b""

    async def raw_trial(self, client: Any) -> Trial:
        with measure_cpu(self.pids) as cpu:
            rate = await raw_create_rate(client, self.sizes.creates, self.sizes.concurrency)
        return Trial(rate, cpu)

    async def api_trial(self, count: int, run: Callable[[], Awaitable[float]]) -> Trial:
        """Time `run` (count requests; it answers the seconds taken) and the CPU it used."""
        with measure_cpu(self.pids) as cpu:
            elapsed = await run()
        return Trial(count / elapsed, cpu, server_cpu_us(cpu, elapsed, count))

    async def create_trial(self, trial: int) -> Trial:
        bodies = [configmap(f"cm-{trial}-{index:05d}", {"index": str(index), "owner": "benchmark"})
                  for index in range(self.sizes.creates)]
        return await self.api_trial(self.sizes.creates, lambda: create_all(
            self.pool, "/api/v1/namespaces/bench/configmaps", bodies))

    async def creates(self, client: Any | None) -> list[Row]:
        """API creates, and with an etcd client raw etcd creates, in alternating trials.

        Each API trial is compared with the raw trial run just before or after it (the
        order alternates), so both see the same state of the machine; the share of raw
        is the median of those ratios.
        """
        await create_namespace(self.pool, "bench")
        raw: list[Trial] = []
        api: list[Trial] = []
        for trial in range(self.sizes.trials):
            raw_first = trial % 2 == 0
            if client is not None and raw_first:
                raw.append(await self.raw_trial(client))
            api.append(await self.create_trial(trial))
            if client is not None and not raw_first:
                raw.append(await self.raw_trial(client))
        rows = []
        if raw:
            middle = median_trial(raw)
            rows.append(Row(f"raw etcd create Txn/s ({self.sizes.concurrency}-way, grpc.aio)",
                            f"{middle.rate:,.0f}/s{rates(raw)}", cpu=middle.cpu,
                            numbers={"rate": middle.rate}))
        middle = median_trial(api)
        cost = statistics.median(trial.cost_us for trial in api)
        row = Row(f"API creates/s ({self.sizes.concurrency} clients, ConfigMaps)",
                  f"{middle.rate:,.0f}/s{rates(api)}", ">= 1,500/s", middle.rate >= 1500,
                  middle.cpu, {"rate": middle.rate, "apiserver_cpu_us": cost})
        if raw:
            ratios = [made.rate / ceiling.rate for made, ceiling in zip(api, raw, strict=True)]
            share = statistics.median(ratios)
            row.value += (f"; {share:.0%} of raw (median of the trials' ratios: "
                          f"{', '.join(f'{ratio:.0%}' for ratio in ratios)})")
            row.target = ">= 35% of raw, >= 1,500/s"
            row.passed = share >= 0.35 and middle.rate >= 1500
            row.numbers["share_of_raw"] = share
        row.value += f"; API server CPU {cost:,.0f} us each (median)"
        return [*rows, row]

    async def gets(self) -> Row:
        """GETs by name of the first create trial's ConfigMaps, in sizes.trials trials."""
        base = "/api/v1/namespaces/bench/configmaps/cm-0-"
        paths = [f"{base}{index % self.sizes.creates:05d}" for index in range(self.sizes.gets)]
        trials = [await self.api_trial(self.sizes.gets, lambda: run_concurrently(
                      self.sizes.gets, self.sizes.concurrency,
                      lambda index: self.pool.request("GET", paths[index])))
                  for _ in range(self.sizes.trials)]
        middle = median_trial(trials)
        cost = statistics.median(trial.cost_us for trial in trials)
        return Row(f"API GETs/s ({self.sizes.concurrency} clients, by name)",
                   f"{middle.rate:,.0f}/s{rates(trials)}; API server CPU {cost:,.0f} us each "
                   "(median)", ">= 4,000/s", middle.rate >= 4000, middle.cpu,
                   {"rate": middle.rate, "apiserver_cpu_us": cost})

    async def create_pods(self) -> float:
        """Create the pods LIST reads; return the creates/s (reported, not a target)."""
        await create_namespace(self.pool, "bench-pods")
        bodies = [pod(index) for index in range(self.sizes.pods)]
        return self.sizes.pods / await create_all(self.pool, "/api/v1/namespaces/bench-pods/pods",
                                                  bodies)

    async def _list_once(self, query: str) -> tuple[float, list[bytes]]:
        """One full LIST, following continue tokens; the elapsed seconds and each page."""
        path = "/api/v1/namespaces/bench-pods/pods"
        pages: list[bytes] = []
        token = ""
        started = time.perf_counter()
        while True:
            params = "&".join(part for part in (query, token and f"continue={token}") if part)
            body = await self.pool.request("GET", f"{path}?{params}" if params else path)
            pages.append(body)
            # The list metadata precedes the items, so the token is near the start.
            start = body.find(b'"continue":"', 0, 2048)
            if start < 0:
                break
            start += len(b'"continue":"')
            token = body[start:body.index(b'"', start)].decode()
        return time.perf_counter() - started, pages

    async def _wait_for_watch_cache(self, timeout: float = 30.0) -> None:
        """Wait until a resourceVersion=0 LIST (served by the watch cache) has every pod."""
        deadline = time.monotonic() + timeout
        while True:
            _, pages = await self._list_once("resourceVersion=0")
            if len(orjson.loads(pages[0])["items"]) == self.sizes.pods:
                return
            if time.monotonic() > deadline:
                raise BenchmarkError(f"the watch cache did not see all pods in {timeout:.0f}s")
            await asyncio.sleep(0.1)

    async def lists(self) -> list[Row]:
        rows = []
        pods = self.sizes.pods
        await self._wait_for_watch_cache()
        for query, metric, target in (
            ("", f"LIST {pods:,} pods (full, consistent: the watch cache once fresh)", 0.200),
            ("resourceVersion=0", f"LIST {pods:,} pods (resourceVersion=0, watch cache)", None),
            (f"limit={self.sizes.page}", f"LIST {pods:,} pods ({self.sizes.page}-item pages)",
             None),
        ):
            timings = []
            with measure_cpu(self.pids) as cpu:
                for _ in range(self.sizes.list_runs):
                    elapsed, pages = await self._list_once(query)
                    timings.append(elapsed)
            items = [item for page in pages for item in orjson.loads(page)["items"]]
            if len(items) != pods:
                raise BenchmarkError(f"LIST {query!r} returned {len(items)} of {pods} pods")
            if not query:
                self.list_body = pages[0]
            median, p90 = statistics.median(timings) * 1000, percentile(timings, 90) * 1000
            cost = server_cpu_us(cpu, sum(timings), len(timings)) / 1000
            row = Row(metric, f"median {median:.0f} ms, p90 {p90:.0f} ms; API server CPU "
                      f"{cost:.0f} ms each", cpu=cpu,
                      numbers={"median_ms": median, "p90_ms": p90, "apiserver_cpu_ms": cost,
                               "bytes": sum(len(page) for page in pages)})
            if target is not None:
                row.target = f"median <= {target * 1000:.0f} ms"
                row.passed = median <= target * 1000
            rows.append(row)
        average = rows[0].numbers["bytes"] / pods
        rows[0].value += f" ({rows[0].numbers['bytes'] / 1e6:.1f} MB, {average:,.0f} B/pod)"
        return rows

    async def watch(self, rate: float | None, processes: int) -> Row:
        """Watch fan-out; rate None creates as fast as `concurrency` clients can."""
        sizes = self.sizes
        namespace = "bench-watch-paced" if rate else "bench-watch-unpaced"
        await create_namespace(self.pool, namespace)
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        budget = sizes.watch_events / (rate or 500) + 60
        readers = start_watch_readers(f"{self.pool.url}{path}?watch=true", sizes.watchers,
                                      processes, sizes.watch_events, budget)
        try:
            for _, receive in readers:
                await receive_message(receive, "ready")
            pids = {**self.pids, **{f"watchers{n}": process.pid
                                    for n, (process, _) in enumerate(readers) if process.pid}}
            started = time.perf_counter()
            with measure_cpu(pids) as cpu:
                sent_rate = await self._write_events(path, rate)
                answers = [await receive_message(receive, "done") for _, receive in readers]
            elapsed = time.perf_counter() - started
        finally:
            for process, _ in readers:
                process.join(timeout=10)
                if process.is_alive():
                    process.kill()
        latencies: array[float] = array("d")
        counts: list[int] = []
        for _, received, per_watcher in answers:
            latencies.frombytes(received)
            counts.extend(per_watcher)
        if not latencies:
            raise BenchmarkError("no watch event arrived")
        values = latencies.tolist()
        expected = sizes.watchers * sizes.watch_events
        p50, p99 = percentile(values, 50), percentile(values, 99)
        cost = server_cpu_us(cpu, elapsed, len(values))
        pace = f"paced {rate:.0f}/s" if rate else f"unpaced, {sent_rate:,.0f}/s"
        row = Row(f"watch latency, {sizes.watchers} watchers x {sizes.watch_events:,} creates "
                  f"({pace})", f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {max(values):.0f} ms; "
                  f"API server CPU {cost:.0f} us per delivery",
                  cpu=cpu, numbers={"p50_ms": p50, "p99_ms": p99, "max_ms": max(values),
                                    "apiserver_cpu_us_per_delivery": cost,
                                    "delivered": len(values), "expected": expected,
                                    "fewest_per_watcher": min(counts), "sent_rate": sent_rate})
        if len(values) != expected:
            row.value += f"; {len(values):,} of {expected:,} delivered"
        if rate:
            row.target = "p99 <= 100 ms"
            row.passed = p99 <= 100 and len(values) == expected
        return row

    async def _write_events(self, path: str, rate: float | None) -> float:
        """Create watch_events ConfigMaps carrying their send time; return the creates/s."""
        n = self.sizes.watch_events

        async def create(index: int) -> None:
            await self.pool.request(
                "POST", path, configmap(f"ev-{index:05d}", {"sent": repr(time.monotonic())}),
                expect=201)

        if rate is None:
            return n / await run_concurrently(n, self.sizes.concurrency, create)
        # Paced: one create every 1/rate s, whether or not the previous ones have finished
        # (the pool still bounds how many are in flight).
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with asyncio.TaskGroup() as group:
            for index in range(n):
                delay = started + index / rate - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                group.create_task(create(index))
        return n / (loop.time() - started)

    def encoders(self) -> list[Row]:
        """orjson vs json: encoding the full pod list, decoding each stored pod."""
        listed = orjson.loads(self.list_body)
        items = [orjson.dumps(item) for item in listed["items"]]

        def best(call: Callable[[], object], runs: int = 5) -> float:
            """The fastest of `runs` calls in ms, with the garbage collector off (as timeit)."""
            timings = []
            gc.disable()
            try:
                for _ in range(runs):
                    started = time.perf_counter()
                    call()
                    timings.append(time.perf_counter() - started)
            finally:
                gc.enable()
            return min(timings) * 1000

        encode_orjson = best(lambda: orjson.dumps(listed))
        encode_json = best(lambda: json.dumps(listed, separators=(",", ":")).encode())
        decode_orjson = best(lambda: [orjson.loads(item) for item in items])
        decode_json = best(lambda: [json.loads(item) for item in items])
        count = len(items)
        return [
            Row(f"encode {count:,}-pod list: orjson vs json",
                f"{encode_orjson:.1f} ms vs {encode_json:.1f} ms "
                f"({encode_json / encode_orjson:.1f}x)",
                numbers={"orjson_ms": encode_orjson, "json_ms": encode_json}),
            Row(f"decode {count:,} pods one by one: orjson vs json",
                f"{decode_orjson:.1f} ms vs {decode_json:.1f} ms "
                f"({decode_json / decode_orjson:.1f}x)",
                numbers={"orjson_ms": decode_orjson, "json_ms": decode_json}),
        ]


@contextlib.asynccontextmanager
async def api_server(etcd: EtcdProcess, log: Path, event_loop: str, concurrency: int
                     ) -> AsyncIterator[tuple[ConnectionPool, int]]:
    """An API server on etcd with request logging off: a pool of connections, and its pid."""
    extra = ("--log-requests=false", f"--event-loop={event_loop}", NO_SERVICE_ACCOUNTS)
    async with (APIServerProcess([etcd.client_url], log, extra_args=extra) as server,
                ConnectionPool(server.url, concurrency) as pool):
        yield pool, child_pid("minikube_py.apiserver")


TrialResult = tuple[tuple[float, float], tuple[float, float]]
"""(creates/s, GETs/s) and the API server's CPU per create and per GET (us)."""


async def security_trial(tmp: Path, secured: bool, sizes: Sizes,
                         server_args: tuple[str, ...] = ()) -> TrialResult:
    """(creates/s, GETs/s) and the API server's CPU per create and per GET (us), on a fresh
    etcd and API server, plain or secured, started with `server_args` besides."""
    async with EtcdProcess(tmp / "etcd") as etcd:
        assert etcd.pid is not None
        extra = ["--log-requests=false", NO_SERVICE_ACCOUNTS, *server_args]
        tls, admin_context = None, None
        if secured:
            ca = pki.new_ca()
            serving = pki.issue(ca, "kube-apiserver", ip_addresses=("127.0.0.1",), server=True)
            cert, key = serving.write(tmp, "apiserver")
            (tmp / "ca.crt").write_bytes(ca.cert_pem)
            tls = ServingTLS(cert, key, tmp / "ca.crt")
            # as `up --secure` runs it
            extra += ["--authorization-mode=Node,RBAC",
                      "--enable-admission-plugins=NodeRestriction"]
            admin_context = client_context(tmp, ca, "kubernetes-admin", ("system:masters",))
            # the user's certificate, for the client process (security_client)
            pki.issue(ca, "bench-user", client=True).write(tmp, "bench-user")
        async with APIServerProcess([etcd.client_url], tmp / "apiserver.log",
                                    extra_args=tuple(extra), tls=tls) as server:
            async with ConnectionPool(server.url, 4, admin_context) as admin:
                await create_namespace(admin, "bench")
                if secured:
                    await grant_edit(admin, "bench", "bench-user")
            user = (str(tmp / "ca.crt"), str(tmp / "bench-user.crt"),
                    str(tmp / "bench-user.key")) if secured else None
            pids = {"apiserver": child_pid("minikube_py.apiserver"), "etcd": etcd.pid}
            spawn = multiprocessing.get_context("spawn")
            receive, send = spawn.Pipe(duplex=False)
            client = spawn.Process(target=security_client,
                                   args=(server.url, user, sizes, pids, send))
            client.start()
            try:
                result = await asyncio.to_thread(receive.recv)
            finally:
                await asyncio.to_thread(client.join, 30)
    if isinstance(result, str):
        raise BenchmarkError(result)
    return result


def security_client(url: str, user: tuple[str, str, str] | None, sizes: Sizes,
                    pids: dict[str, int], send: Connection) -> None:
    """The security trial's creates and GETs, in a process of their own on uvloop: the
    client's TLS (asyncio's is slow Python) must not take the CPU the comparison is
    about from the server. Sends ((creates/s, GETs/s), (us per create, us per GET))."""
    async def run() -> tuple[tuple[float, float], tuple[float, float]]:
        context = None
        if user is not None:
            ca_file, cert_file, key_file = user
            context = ssl.create_default_context(cafile=ca_file)
            context.load_cert_chain(cert_file, key_file)
        async with ConnectionPool(url, sizes.concurrency, context) as pool:
            bench = Bench(pool, sizes, {**pids, "client": os.getpid()})
            created = await bench.create_trial(0)
            got = await bench.gets()
        return ((created.rate, got.numbers["rate"]),
                (created.cost_us, got.numbers["apiserver_cpu_us"]))

    try:
        send.send(uvloop.run(run()))
    except Exception as error:  # noqa: BLE001 - reported by the parent as one line
        send.send(f"security trial client failed: {error!r}")


def client_context(tmp: Path, ca: pki.KeyPair, user: str, groups: tuple[str, ...]
                   ) -> ssl.SSLContext:
    """TLS as a client with a certificate for `user` in `groups`."""
    cert, key = pki.issue(ca, user, organizations=groups, client=True).write(tmp, user)
    context = ssl.create_default_context(cafile=tmp / "ca.crt")
    context.load_cert_chain(cert, key)
    return context


async def grant_edit(admin: ConnectionPool, namespace: str, user: str) -> None:
    """A RoleBinding of the bootstrap role `edit` to the user; waits until it applies."""
    body = orjson.dumps({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": f"{user}-edits"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "edit"},
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]})
    path = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings"
    deadline = time.monotonic() + 30
    while True:  # the bootstrap roles come a moment after the server is ready
        try:
            await admin.request("POST", path, body, expect=201)
            return
        except BenchmarkError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def alternate(trials: int, what: str, sides: tuple[str, str],
                    run: Callable[[str, int], Awaitable[TrialResult]]
                    ) -> dict[str, list[TrialResult]]:
    """`trials` trials of each side, the order alternating so neither always runs first."""
    results: dict[str, list[TrialResult]] = {side: [] for side in sides}
    for trial in range(trials):
        for side in sides if trial % 2 == 0 else sides[::-1]:
            progress(f"{what} comparison: {side}, trial {trial + 1} of {trials}")
            results[side].append(await run(side, trial))
    return results


def compared_rows(results: dict[str, list[TrialResult]], sides: tuple[str, str], metric: str,
                  share: float) -> list[Row]:
    """Creates/s and GETs/s of sides[1] over sides[0] (medians), passing at >= `share`."""
    base, other = sides
    trials = len(results[base])
    rows = []
    for index, what in enumerate(("creates/s", "GETs/s")):
        base_rate, rate = (statistics.median(r[0][index] for r in results[side])
                           for side in sides)
        base_us, cost_us = (statistics.median(r[1][index] for r in results[side])
                            for side in sides)
        rows.append(Row(f"{metric}: API {what}",
                        f"{rate:,.0f}/s vs {base_rate:,.0f}/s ({100 * rate / base_rate:.0f}%, "
                        f"median of {trials}); API server CPU {cost_us:,.0f} vs "
                        f"{base_us:,.0f} us each", f">= {share:.0%} of {base}",
                        rate >= share * base_rate,
                        numbers={"rate": rate, f"{base}_rate": base_rate,
                                 "apiserver_cpu_us": cost_us, f"{base}_cpu_us": base_us}))
    return rows


async def compare_security(tmp: Path, sizes: Sizes, trials: int) -> list[Row]:
    """Alternate plain and secured trials; the medians, and secured over plain. The API
    server's CPU per request is reported beside: on 2 cores the client's own TLS work
    (asyncio's, in this process) takes CPU from the server too."""
    sides = ("plain", "secured")
    results = await alternate(trials, "security", sides, lambda side, trial: security_trial(
        tmp / f"{side}-{trial}", side == "secured", sizes))
    return compared_rows(results, sides,
                         "TLS + client certificates + Node,RBAC vs plain HTTP", 0.8)


FAIRNESS_LIMITS = ("--max-requests-inflight=3000", "--max-mutating-requests-inflight=1000")
"""The APF comparison is of APF's own work (classify, seat, count), so every one of the 64
anonymous clients gets a seat: the catch-all level's nominal seats are 5/245 of the
server's limit, 82 of 4,000. With the default 600, it has 13 and the rest queue, as
upstream's does for anonymous requests."""


async def compare_fairness(tmp: Path, sizes: Sizes, trials: int) -> list[Row]:
    """Alternate trials with API Priority and Fairness off and on (the default): every
    request classified, seated and counted against its priority level's concurrency."""
    sides = ("off", "on")
    results = await alternate(trials, "APF", sides, lambda side, trial: security_trial(
        tmp / f"apf-{side}-{trial}", False, sizes, (
            *FAIRNESS_LIMITS,
            f"--enable-priority-and-fairness={'true' if side == 'on' else 'false'}")))
    return compared_rows(results, sides, "API Priority and Fairness on vs off", 0.9)


async def tracing_trial(tmp: Path, endpoint: str | None, sizes: Sizes) -> tuple[float, float]:
    """(creates/s, the API server's CPU per create in us) on a fresh etcd and API server,
    with every write traced to `endpoint` (the trace receiver), or without tracing."""
    async with EtcdProcess(tmp / "etcd") as etcd:
        assert etcd.pid is not None
        extra = ["--log-requests=false", NO_SERVICE_ACCOUNTS]
        if endpoint is not None:
            config = tmp / "tracing.yaml"
            config.write_text("apiVersion: apiserver.config.k8s.io/v1\n"
                              "kind: TracingConfiguration\n"
                              f"endpoint: {endpoint}\nsamplingRatePerMillion: 1000000\n")
            extra.append(f"--tracing-config-file={config}")
        async with APIServerProcess([etcd.client_url], tmp / "apiserver.log",
                                    extra_args=tuple(extra)) as server:
            async with ConnectionPool(server.url, sizes.concurrency) as pool:
                await create_namespace(pool, "bench")
                bench = Bench(pool, sizes, {"apiserver": child_pid("minikube_py.apiserver"),
                                            "etcd": etcd.pid, "client": os.getpid()})
                created = await bench.create_trial(0)
    return created.rate, created.cost_us


@contextlib.contextmanager
def trace_receiver(tmp: Path) -> Iterator[str]:
    """`python -m minikube_py.tracestore` on a free port: the endpoint (host:port)."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "minikube_py.tracestore",
                                f"--data-dir={tmp / 'spans'}", f"--port={port}"],
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while not port_in_use(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise BenchmarkError("the trace receiver did not start")
            time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


async def compare_tracing(tmp: Path, sizes: Sizes, trials: int) -> list[Row]:
    """Alternate untraced and traced trials (every create a span, exported to the trace
    receiver, and the trace recorded on the object); the medians, traced over untraced."""
    results: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with trace_receiver(tmp) as endpoint:
        for trial in range(trials):
            for traced in (False, True) if trial % 2 == 0 else (True, False):
                progress(f"tracing comparison: {'traced' if traced else 'untraced'}, "
                         f"trial {trial + 1} of {trials}")
                results[traced].append(await tracing_trial(
                    tmp / f"{'traced' if traced else 'untraced'}-{trial}",
                    endpoint if traced else None, sizes))
    off = statistics.median(rate for rate, _ in results[False])
    on = statistics.median(rate for rate, _ in results[True])
    off_us = statistics.median(cost for _, cost in results[False])
    on_us = statistics.median(cost for _, cost in results[True])
    return [Row("tracing on vs off: API creates/s",
                f"{on:,.0f}/s vs {off:,.0f}/s ({100 * on / off:.0f}%, median of {trials}); "
                f"API server CPU {on_us:,.0f} vs {off_us:,.0f} us each",
                ">= 90% of off", on >= 0.9 * off,
                numbers={"rate": on, "untraced_rate": off, "apiserver_cpu_us": on_us,
                         "untraced_cpu_us": off_us})]


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


async def loop_trial(tmp: Path, event_loop: str, watch_processes: int) -> list[Row]:
    """One trial of the event loop comparison: a fresh etcd and API server, TRIAL sizes."""
    async with EtcdProcess(tmp / "etcd") as etcd:
        assert etcd.pid is not None
        async with api_server(etcd, tmp / "apiserver.log", event_loop,
                              TRIAL.concurrency) as (pool, pid):
            bench = Bench(pool, TRIAL, {"apiserver": pid, "etcd": etcd.pid,
                                        "client": os.getpid()})
            rows = [*await bench.creates(None), await bench.gets()]
            await bench.create_pods()
            rows += (await bench.lists())[:2]
            rows.append(await bench.watch(WATCH_RATE, watch_processes))
    return rows


async def compare_loops(tmp: Path, loops: tuple[str, str], watch_processes: int
                        ) -> list[tuple[str, list[str], list[str]]]:
    """Alternate trials of both loops, so neither always runs first (order matters here).

    Returns (metric, headline figure of each trial on loops[0], ... on loops[1]).
    """
    results: dict[str, list[list[Row]]] = {loop: [] for loop in loops}
    for trial in range(LOOP_TRIALS):
        for loop in loops if trial % 2 == 0 else loops[::-1]:
            progress(f"event loop comparison: {loop}, trial {trial + 1} of {LOOP_TRIALS}")
            results[loop].append(await loop_trial(tmp / f"{loop}-{trial}", loop,
                                                  watch_processes))
    headlines = []
    for index, row in enumerate(results[loops[0]][0]):
        key, unit = next((key, unit) for key, unit in HEADLINES if key in row.numbers)
        first, second = ([f"{rows[index].numbers[key]:,.0f}{unit}" for rows in results[loop]]
                         for loop in loops)
        headlines.append((row.metric, first, second))
    return headlines


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Start etcd and the API server, run every phase, stop both; return the report."""
    sizes = QUICK if args.quick else FULL
    load_at_start = os.getloadavg()[0]
    other_loop = "asyncio" if args.event_loop == "uvloop" else "uvloop"
    rows: list[Row] = []
    comparison: list[tuple[str, list[str], list[str]]] = []
    with scratch_directory() as tmp:
        async with EtcdProcess(Path(tmp) / "etcd") as etcd, etcd.client() as client:
            etcd_version = await client.server_version()
            assert etcd.pid is not None
            log = Path(tmp) / "apiserver.log"
            async with api_server(etcd, log, args.event_loop, sizes.concurrency) as (pool, pid):
                bench = Bench(pool, sizes, {"apiserver": pid, "etcd": etcd.pid,
                                            "client": os.getpid()})
                progress(f"raw etcd and API creates, {sizes.trials} alternating trials")
                rows += await bench.creates(client)
                progress("API GETs")
                rows.append(await bench.gets())
                progress(f"creating {sizes.pods:,} pods")
                pod_rate = await bench.create_pods()
                progress("LISTs")
                rows += await bench.lists()
                progress("watch fan-out, paced")
                rows.append(await bench.watch(WATCH_RATE, args.watch_processes))
                progress("watch fan-out, unpaced")
                rows.append(await bench.watch(None, args.watch_processes))
                rows += bench.encoders()
        trial, trials = (QUICK_SECURITY_TRIAL, 1) if args.quick else (SECURITY_TRIAL, 3)
        rows += await compare_security(Path(tmp) / "security", trial, trials)
        rows += await compare_tracing(Path(tmp) / "tracing", trial, trials)
        rows += await compare_fairness(Path(tmp) / "fairness", trial, trials)
        if not args.quick:
            comparison = await compare_loops(Path(tmp), (args.event_loop, other_loop),
                                             args.watch_processes)
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "quick" if args.quick else "full",
        "nproc": os.cpu_count() or 0,
        "event_loop": args.event_loop,
        "other_loop": other_loop,
        "watch_processes": args.watch_processes,
        "load_at_start": load_at_start,
        "pod_creates_per_s": pod_rate,
        "versions": {
            "python": platform.python_version(),
            "etcd": etcd_version,
            **{name: package_version(name) for name in ("aiohttp", "orjson", "uvloop", "grpcio")},
        },
        "commit": git_commit(REPO),
        "rows": [asdict(row) | {"result": row.result} for row in rows],
        "comparison": comparison,
    }


def git_commit(repo: Path) -> str:
    """The checked-out commit, read from .git's files ('' when there is none)."""
    git = repo / ".git"
    with contextlib.suppress(OSError, IndexError):
        if git.is_file():  # a linked work tree: "gitdir: <path>"
            git = Path(git.read_text().split(":", 1)[1].strip())
        common = git
        if (git / "commondir").is_file():
            common = (git / (git / "commondir").read_text().strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:12]
        ref = head.removeprefix("ref: ")
        for place in (git, common):
            if (place / ref).is_file():
                return (place / ref).read_text().strip()[:12]
        for line in (common / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0][:12]
    return ""


# -- the report ------------------------------------------------------------------------------

def table(report: dict[str, Any]) -> list[tuple[str, ...]]:
    header = ("metric", "value", "target", "result", "CPU share of one core")
    return [header, *((row["metric"], row["value"], row["target"], row["result"],
                       ", ".join(f"{name} {share:.0%}" for name, share in row["cpu"].items()))
                      for row in report["rows"])]


def print_table(report: dict[str, Any]) -> None:
    lines = table(report)
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True))
              .rstrip())
    print(f"(pods created at {report['pod_creates_per_s']:,.0f}/s for the LIST phase)")
    if report["comparison"]:
        print(f"\nevent loop comparison, {LOOP_TRIALS} alternating trials each on a fresh "
              f"etcd: {report['event_loop']} | {report['other_loop']}")
        for metric, first, second in report["comparison"]:
            print(f"  {metric}: {', '.join(first)} | {', '.join(second)}")


def markdown(report: dict[str, Any]) -> str:
    versions = report["versions"]
    lines = [
        f"## {report['date']}: {report['mode']} run, API server on {report['event_loop']}",
        "",
        f"nproc {report['nproc']}; Python {versions['python']}; etcd {versions['etcd']}; "
        f"aiohttp {versions['aiohttp']}; orjson {versions['orjson']}; uvloop "
        f"{versions['uvloop']}; grpcio {versions['grpcio']}; commit "
        f"{report['commit'] or 'unknown'}; 1-minute load average at start "
        f"{report['load_at_start']:.2f}; watch readers in {report['watch_processes']} "
        "separate process(es). CPU column: share of one core used by each process during "
        "the phase (nproc cores in all); others = every other process on the machine.",
        "",
    ]
    rows = table(report)
    lines.append("| " + " | ".join(rows[0]) + " |")
    lines.append("|" + "---|" * len(rows[0]))
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    lines.append("")
    lines.append(f"Pods for the LIST phase were created at {report['pod_creates_per_s']:,.0f}/s.")
    if report["comparison"]:
        lines += ["", f"Event loop comparison: {LOOP_TRIALS} trials of each, alternating, each "
                  "on a fresh etcd and API server (trial sizes: "
                  f"{TRIAL.creates:,} creates, {TRIAL.gets:,} GETs, {TRIAL.pods:,} pods, "
                  f"{TRIAL.watchers} watchers x {TRIAL.watch_events:,} creates).", "",
                  f"| metric | {report['event_loop']} | {report['other_loop']} |",
                  "|---|---|---|"]
        lines += [f"| {metric} | {', '.join(first)} | {', '.join(second)} |"
                  for metric, first, second in report["comparison"]]
    return "\n".join(lines) + "\n"


def append_results(report: dict[str, Any]) -> None:
    if not RESULTS.exists():
        RESULTS.write_text("# Benchmark results\n\nAppended by `benchmarks/apiserver.py`, "
                           "newest last.\n")
    with RESULTS.open("a") as results:
        results.write("\n" + markdown(report))


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    parser.add_argument("--no-append", action="store_true",
                        help=f"do not append the results to {RESULTS.relative_to(REPO)}")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--event-loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="the API server's event loop (a full run also tries the other)")
    parser.add_argument("--watch-processes", type=int, default=1,
                        help="processes reading the watches (default 1)")
    args = parser.parse_args()
    try:
        # asyncio's own loop, not uvloop, on purpose: this process holds a gRPC channel while
        # it starts API servers, and asyncio spawns them with vfork, which skips gRPC's fork
        # handlers; libuv's fork runs them, and they can hang the child before its exec.
        report = asyncio.run(measure(args))
    except BenchmarkError as err:
        sys.exit(f"benchmark failed: {err}")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    if not args.no_append:
        append_results(report)
        progress(f"appended to {RESULTS}")


if __name__ == "__main__":
    main()
