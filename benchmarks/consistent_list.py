"""Benchmark: a consistent LIST (no resourceVersion) from etcd and from the watch cache.

Run from the repository root as `.venv/bin/python benchmarks/consistent_list.py`
(options: --pods 5000,30000, --runs 7, --quick: 100 and 300 pods, 2 runs; --no-append).
It starts a private etcd (on /dev/shm) and two API servers on it, one with
--feature-gates=ConsistentListFromCache=false (every consistent LIST reads etcd) and one
with it on (the default: served from the watch cache once one keys-only Range shows the
cache fresh, storage/consistent_read.py). For each count it creates the pods
(benchmarks/apiserver.py's ~1.5 KB pod) through the first server, then times a full LIST
of them on each server in alternating runs, kubectl's first page (limit=500) and all its
pages, and reports medians with each server's CPU per LIST. It also times the freshness check's
Range alone, from a client of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import (  # noqa: E402
    ConnectionPool,
    create_all,
    create_namespace,
    pod,
    progress,
)
from benchmarks.etcd_raw import scratch_directory  # noqa: E402
from minikube_py.apiserver.storage.etcd import prefix_end  # noqa: E402
from minikube_py.cluster.apiserver import APIServerProcess  # noqa: E402
from minikube_py.cluster.etcd import EtcdProcess  # noqa: E402

RESULTS = REPO / "benchmarks" / "RESULTS.md"
NAMESPACE = "bench-pods"
PATH = f"/api/v1/namespaces/{NAMESPACE}/pods"
COMMON = ("--log-requests=false", "--disable-admission-plugins=ServiceAccount")


@dataclass
class Server:
    name: str
    pool: ConnectionPool
    pid: int


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def timed_list(server: Server, query: str, expected: int, *, every_page: bool = False
                     ) -> tuple[float, float]:
    """One LIST (every_page: following continue tokens, as kubectl get does): (seconds,
    the server's CPU seconds); fails unless `expected` items came."""
    cpu = cpu_seconds(server.pid)
    started = time.perf_counter()
    bodies = [await server.pool.request("GET", f"{PATH}?{query}" if query else PATH)]
    while every_page and (token := orjson.loads(bodies[-1])["metadata"].get("continue")):
        bodies.append(await server.pool.request("GET", f"{PATH}?{query}&continue={token}"))
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds(server.pid) - cpu
    items = sum(len(orjson.loads(body)["items"]) for body in bodies)
    if items != expected:
        raise SystemExit(f"{server.name}: LIST {query!r} returned {items}, not {expected}")
    return elapsed, cpu


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


async def measure(servers: list[Server], etcd: EtcdProcess, pods: int, runs: int
                  ) -> list[tuple[str, str]]:
    """Rows (what, figures) for one pod count, the servers' runs alternating."""
    rows = []
    for query, label, expected, every_page in (
            ("", "full LIST", pods, False),
            ("limit=500", "first page, limit=500", min(500, pods), False),
            ("limit=500", "every page, limit=500 (as kubectl get)", pods, True)):
        timings: dict[str, list[tuple[float, float]]] = {s.name: [] for s in servers}
        for server in servers:  # a first LIST each, not counted: warms connections
            await timed_list(server, query, expected, every_page=every_page)
        for _ in range(runs):
            for server in servers:
                timings[server.name].append(
                    await timed_list(server, query, expected, every_page=every_page))
        for server in servers:
            wall = [t for t, _ in timings[server.name]]
            cpu = [c for _, c in timings[server.name]]
            rows.append((f"{pods:,} pods, {label}, {server.name}",
                         f"median {median_ms(wall):,.0f} ms (min {min(wall) * 1000:,.0f}, "
                         f"max {max(wall) * 1000:,.0f}); API server CPU "
                         f"{median_ms(cpu):,.0f} ms"))
    async with etcd.client() as client:
        prefix = b"/registry/pods/"
        checks = []
        for _ in range(runs):
            started = time.perf_counter()
            state = await client.range_state(prefix, prefix_end(prefix))
            checks.append(time.perf_counter() - started)
        if state.count != pods:
            raise SystemExit(f"the freshness Range counted {state.count} pods, not {pods}")
        rows.append((f"{pods:,} pods, the freshness check alone (keys-only Range, "
                     "newest write first, limit 1)", f"median {median_ms(checks):,.1f} ms"))
    return rows


async def wait_until_cached(server: Server, pods: int) -> None:
    """Until a resourceVersion=0 LIST (the cache as it is) holds every pod."""
    while True:
        body = await server.pool.request("GET", f"{PATH}?resourceVersion=0")
        if len(orjson.loads(body)["items"]) >= pods:
            return
        await asyncio.sleep(0.2)


async def run(counts: list[int], runs: int) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    with scratch_directory() as scratch:
        tmp = Path(scratch)
        async with (EtcdProcess(tmp / "etcd") as etcd,
                    APIServerProcess([etcd.client_url], tmp / "off.log", extra_args=(
                        *COMMON, "--feature-gates=ConsistentListFromCache=false")) as off,
                    APIServerProcess([etcd.client_url], tmp / "on.log", extra_args=COMMON) as on,
                    ConnectionPool(off.url, 64) as off_pool,
                    ConnectionPool(on.url, 1) as on_pool):
            assert off.pid is not None and on.pid is not None
            servers = [Server("gate off (etcd)", off_pool, off.pid),
                       Server("gate on (watch cache)", on_pool, on.pid)]
            await create_namespace(off_pool, NAMESPACE)
            created = 0
            for count in counts:
                progress(f"creating pods {created:,}..{count:,}")
                await create_all(off_pool, PATH, [pod(i) for i in range(created, count)])
                created = count
                for server in servers:
                    await wait_until_cached(server, count)
                progress(f"measuring {count:,} pods")
                rows += await measure(servers, etcd, count, runs)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", default="5000,30000",
                        help="comma-separated pod counts, ascending (default 5000,30000)")
    parser.add_argument("--runs", type=int, default=7, help="LISTs per server and count")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 100 and 300 pods, 2 runs")
    parser.add_argument("--no-append", action="store_true",
                        help=f"do not append the results to {RESULTS.relative_to(REPO)}")
    args = parser.parse_args()
    if args.quick:
        args.pods, args.runs = "100,300", 2
    counts = sorted(int(c) for c in args.pods.split(","))
    rows = asyncio.run(run(counts, args.runs))
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"## Consistent LIST from etcd and from the watch cache ({when})", "",
             f"`benchmarks/consistent_list.py --pods {args.pods} --runs {args.runs}` on "
             f"{platform.node()}, nproc {len(os.sched_getaffinity(0))}; both servers on one etcd, "
             "their LISTs alternating.", "",
             "| what | result |", "|---|---|"]
    lines += [f"| {what} | {figures} |" for what, figures in rows]
    print("\n".join(lines))
    if not args.no_append:
        with RESULTS.open("a") as results:
            results.write("\n" + "\n".join(lines) + "\n")
        progress(f"appended to {RESULTS}")


if __name__ == "__main__":
    main()
