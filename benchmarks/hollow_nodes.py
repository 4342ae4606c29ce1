"""Benchmark: many hollow nodes (simulated kubelets) in one process, like kubemark.

Run from the repository root as `.venv/bin/python benchmarks/hollow_nodes.py` (options:
--nodes N (500), --pods N (1000), --quick, --no-append). It starts a private etcd, an API
server and `python -m minikube_py.kubelet --simulate N`, each hollow node its own user
(`system:node:hollow-node-<i>` in system:nodes, by a token of its own: a flow of its own in
API Priority and Fairness, as a real kubelet), and the benchmark's own client an admin
(system:masters: exempt, so its polls do not compete with the nodes), then measures:

    1. seconds until all N Nodes are Ready (target: 60 s, for 5,000 nodes)
    2. over 60 s (5 s with --quick): the oldest Lease renewTime seen at each 5 s sample
       (target: every node heartbeats, i.e. no Lease older than its 40 s duration); the
       time between one renewal of a Lease and its next, from the renewTimes the samples
       saw (a sample comes every 5 s, a renewal every 10 s: each renewal is seen), against
       the kubelet's interval of 10 s (+4% jitter); a renewal is missed when the next comes
       more than 20 s after the last, or has not come 20 s after the last by the last
       sample (target: none missed); the process's CPU and RSS
    3. --pods pods bound round-robin (spec.nodeName) all at once: seconds until all Running
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import (  # noqa: E402
    HOLLOW_PREFIX,
    BenchmarkError,
    ConnectionPool,
    child_pid,
    cpu_seconds,
    create_all,
    create_namespace,
    percentile,
    private_api_server_with_identities,
    progress,
    token,
)
from benchmarks.pod_startup import rss_megabytes  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.errors import TooManyRequests  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402

# Quiet, and without ServiceAccount admission: no serviceaccount controller gives the
# benchmark's namespace a `default` account.
API_FLAGS = ("--log-requests=false", "--disable-admission-plugins=ServiceAccount")


PREFIX = HOLLOW_PREFIX
RENEW_INTERVAL = 10.0  # the kubelet's (minikube_py/kubelet/lease.py), as upstream's
APF_COUNTER = re.compile(
    r'^apiserver_flowcontrol_(dispatched|rejected)_requests_total\{([^}]*)\} (\S+)$',
    re.MULTILINE)
LEVEL = re.compile(r'priority_level="([^"]*)"')


def apf_counts(url: str, outcome: str = "rejected") -> dict[str, int]:
    """The requests API Priority and Fairness has answered 429 ("rejected") or served
    ("dispatched") so far, by priority level."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    found: dict[str, int] = {}
    for kind, labels, value in APF_COUNTER.findall(text):
        if kind != outcome:
            continue
        level = match.group(1) if (match := LEVEL.search(labels)) else ""
        found[level] = found.get(level, 0) + int(float(value))
    return found


def apf_rejections(url: str) -> dict[str, int]:
    """The requests API Priority and Fairness has answered 429 so far, by priority level."""
    return apf_counts(url, "rejected")


def counts_since(now: dict[str, int], before: dict[str, int]) -> str:
    """The growth of each priority level's count, "node-high 120, system 40" ("none")."""
    counts = {level: count - before.get(level, 0) for level, count in now.items()}
    return ", ".join(f"{level} {count}" for level, count in sorted(counts.items())
                     if count) or "none"


async def list_items(client: Client, plural: str, namespace: str | None = None
                     ) -> list[dict[str, Any]]:
    """A poll's LIST. While thousands of nodes register, API Priority and Fairness may
    answer a LIST of them 429 after the client's own retries: the poll just asks again."""
    while True:
        try:
            return (await client.resource(plural).list(namespace))["items"]
        except TooManyRequests as error:
            await asyncio.sleep(error.retry_after or 1.0)


def ready_count(nodes: list[dict[str, Any]]) -> int:
    return sum(any(c["type"] == "Ready" and c["status"] == "True"
                   for c in n.get("status", {}).get("conditions", [])) for n in nodes)


async def wait_nodes_ready(client: Client, count: int, timeout: float) -> float:
    started = time.perf_counter()
    while True:
        nodes = await list_items(client, "nodes")
        if ready_count(nodes) >= count:
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise BenchmarkError(f"only {ready_count(nodes)} of {count} nodes Ready "
                                 f"after {timeout:.0f}s")
        await asyncio.sleep(0.5)


async def our_leases(client: Client) -> list[dict[str, Any]]:
    leases = await list_items(client, "leases", "kube-node-lease")
    return [lease for lease in leases if lease["metadata"]["name"].startswith(PREFIX)]


async def wait_leases(client: Client, count: int, timeout: float) -> float:
    started = time.perf_counter()
    while len(await our_leases(client)) < count:
        if time.perf_counter() - started > timeout:
            raise BenchmarkError(f"not every node has its Lease after {timeout:.0f}s")
        await asyncio.sleep(0.5)
    return time.perf_counter() - started


def renew_time(lease: dict[str, Any]) -> datetime:
    """spec.renewTime, a MicroTime ("2026-11-22T04:00:00.123456Z")."""
    return datetime.strptime(lease["spec"]["renewTime"].rstrip("Z"),
                             "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC)


def lease_age(lease: dict[str, Any], now: datetime) -> float:
    return (now - renew_time(lease)).total_seconds()


def renewal_intervals(samples: list[dict[str, datetime]]) -> list[float]:
    """Seconds between each Lease's consecutive renewals, from samples of
    {lease name: renewTime} taken more often than the Leases are renewed."""
    intervals: list[float] = []
    for earlier, later in zip(samples, samples[1:], strict=False):
        for name, renewed in later.items():
            before = earlier.get(name)
            if before is not None and renewed != before:
                intervals.append((renewed - before).total_seconds())
    return intervals


async def wait_pods_running(client: Client, count: int, timeout: float) -> float:
    started = time.perf_counter()
    while True:
        items = await list_items(client, "pods", "bench")
        running = sum(p.get("status", {}).get("phase") == "Running" for p in items)
        if running >= count:
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise BenchmarkError(f"only {running} of {count} pods Running after {timeout:.0f}s")
        await asyncio.sleep(0.5)


async def measure(args: argparse.Namespace) -> list[Row]:
    rows: list[tuple[str, str, str, str]] = []
    idle = 5 if args.quick else 60
    async with private_api_server_with_identities(API_FLAGS, args.nodes) as (
            tmp, etcd, api, identities):
        with (tmp / "hollow.log").open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "minikube_py.kubelet",
                f"--kubeconfig={identities.kubeconfigs['nodes']}",
                f"--simulated-token-file={identities.node_token_file}",
                "--simulate", str(args.nodes), f"--node-name={PREFIX}", "--port=0",
                stdout=log, stderr=log)
        try:
            async with Client.from_kubeconfig(identities.kubeconfigs["admin"]) as client:
                progress(f"{args.nodes} hollow nodes registering")
                seconds = await wait_nodes_ready(client, args.nodes, 300)
                rows.append((f"{args.nodes} hollow nodes in one process: all Ready",
                             f"{seconds:.1f} s", "<= 60 s", verdict(seconds <= 60)))
                pid = child_pid("minikube_py.kubelet")
                seconds = await wait_leases(client, args.nodes, 60)
                rows.append(("... and every node's Lease exists", f"{seconds:.1f} s later",
                             "", ""))
                progress(f"heartbeats for {idle} s")
                rejected_at_start = apf_rejections(api.url)
                served_at_start = apf_counts(api.url, "dispatched")
                oldest = 0.0
                samples: list[dict[str, datetime]] = []
                before, wall = cpu_seconds(pid), time.perf_counter()
                for _ in range(idle // 5 + 1):
                    if samples:
                        await asyncio.sleep(5)
                    now = datetime.now(UTC)  # before the LIST: no Lease looks older than it is
                    ours = await our_leases(client)
                    if len(ours) < args.nodes:
                        raise BenchmarkError(f"only {len(ours)} leases")
                    oldest = max(oldest, max(lease_age(lease, now) for lease in ours))
                    samples.append({lease["metadata"]["name"]: renew_time(lease)
                                    for lease in ours})
                share = (cpu_seconds(pid) - before) / (time.perf_counter() - wall)
                rows.append((f"oldest Lease renewal seen over {idle} s (renew every 10 s)",
                             f"{oldest:.1f} s", "< 40 s",
                             verdict(oldest < 40)))
                intervals = renewal_intervals(samples)
                # and a Lease not renewed since long before the last sample is missing one
                missed = (sum(interval > 2 * RENEW_INTERVAL for interval in intervals)
                          + sum(lease_age(lease, now) > 2 * RENEW_INTERVAL for lease in ours))
                rows.append(("time from one renewal of a Lease to its next: p50 / p99 / max "
                             f"({len(intervals)} renewals)",
                             f"{percentile(intervals, 50):.2f} / "
                             f"{percentile(intervals, 99):.2f} / "
                             f"{max(intervals, default=0.0):.2f} s", "10-10.4 s", ""))
                rows.append((f"renewals missed (the next more than {2 * RENEW_INTERVAL:.0f} s "
                             "after the last)", str(missed), "0",
                             verdict(missed == 0)))
                rejected_after = apf_rejections(api.url)
                served_after = apf_counts(api.url, "dispatched")
                rows.append(("429s from API Priority and Fairness by priority level: "
                             "registration / heartbeats",
                             f"{counts_since(rejected_at_start, {})} / "
                             f"{counts_since(rejected_after, rejected_at_start)}", "", ""))
                rows.append(("requests served by priority level: registration / heartbeats",
                             f"{counts_since(served_at_start, {})} / "
                             f"{counts_since(served_after, served_at_start)}", "", ""))
                rows.append(("hollow process idle: CPU, RSS",
                             f"{share:.1%} of one core, {rss_megabytes(pid):.0f} MB",
                             "", ""))
                progress(f"{args.pods} pods bound round-robin")
                async with ConnectionPool(api.url, 64, token=token("admin")) as pool:
                    await create_namespace(pool, "bench")
                    bodies = [orjson.dumps({
                        "apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"p-{i:05d}"},
                        "spec": {"nodeName": f"{PREFIX}-{i % args.nodes}",
                                 "containers": [{"name": "app",
                                                 "image": "localhost/busybox:1.36"}]}})
                        for i in range(args.pods)]
                    started = time.perf_counter()
                    await create_all(pool, "/api/v1/namespaces/bench/pods", bodies)
                    await wait_pods_running(client, args.pods, 300)
                    elapsed = time.perf_counter() - started
                rows.append((f"{args.pods} pods on hollow nodes: create -> all Running",
                             f"{elapsed:.1f} s ({args.pods / elapsed:.0f} pods/s)",
                             "", ""))
                rows.append(("hollow process RSS with the pods",
                             f"{rss_megabytes(pid):.0f} MB", "", ""))
        finally:
            process.terminate()
            async with asyncio.timeout(60):
                await process.wait()
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=500, help="hollow nodes")
    parser.add_argument("--pods", type=int, default=1000, help="pods bound to them")


def main() -> None:
    run_benchmark(__doc__.splitlines()[0], "hollow nodes", "hollow_nodes.py", measure,
                  add_arguments=add_arguments)


if __name__ == "__main__":
    main()
