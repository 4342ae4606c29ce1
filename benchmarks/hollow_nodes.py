"""Benchmark: many hollow nodes (simulated kubelets) in one process, like kubemark.

Run from the repository root as `.venv/bin/python benchmarks/hollow_nodes.py` (options:
--nodes N (500), --pods N (1000), --quick, --no-append). It starts a private etcd, an API
server and `python -m minikube_py.kubelet --simulate N`, then measures:

    1. seconds until all N Nodes are Ready
    2. over 60 s (5 s with --quick): the oldest Lease renewTime seen at each 5 s sample
       (target: every node heartbeats, i.e. no Lease older than its 40 s duration), the
       process's CPU and RSS
    3. N pods bound round-robin (spec.nodeName) all at once: seconds until all Running
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import (  # noqa: E402
    BenchmarkError,
    ConnectionPool,
    child_pid,
    cpu_seconds,
    create_all,
    create_namespace,
    private_api_server,
    progress,
)
from benchmarks.pod_startup import rss_megabytes  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402

# Quiet, and without ServiceAccount admission: no serviceaccount controller gives the
# benchmark's namespace a `default` account.
API_FLAGS = ("--log-requests=false", "--disable-admission-plugins=ServiceAccount")


PREFIX = "hollow"


def ready_count(nodes: list[dict[str, Any]]) -> int:
    return sum(any(c["type"] == "Ready" and c["status"] == "True"
                   for c in n.get("status", {}).get("conditions", [])) for n in nodes)


async def wait_nodes_ready(client: Client, count: int, timeout: float) -> float:
    started = time.perf_counter()
    while True:
        nodes = (await client.resource("nodes").list())["items"]
        if ready_count(nodes) >= count:
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise BenchmarkError(f"only {ready_count(nodes)} of {count} nodes Ready "
                                 f"after {timeout:.0f}s")
        await asyncio.sleep(0.5)


async def our_leases(client: Client) -> list[dict[str, Any]]:
    leases = (await client.resource("leases").list("kube-node-lease"))["items"]
    return [lease for lease in leases if lease["metadata"]["name"].startswith(PREFIX)]


async def wait_leases(client: Client, count: int, timeout: float) -> float:
    started = time.perf_counter()
    while len(await our_leases(client)) < count:
        if time.perf_counter() - started > timeout:
            raise BenchmarkError(f"not every node has its Lease after {timeout:.0f}s")
        await asyncio.sleep(0.5)
    return time.perf_counter() - started


def lease_age(lease: dict[str, Any], now: datetime) -> float:
    renewed = datetime.strptime(lease["spec"]["renewTime"][:19], "%Y-%m-%dT%H:%M:%S")
    return (now - renewed.replace(tzinfo=UTC)).total_seconds()


async def wait_pods_running(client: Client, count: int, timeout: float) -> float:
    started = time.perf_counter()
    while True:
        items = (await client.resource("pods").list("bench"))["items"]
        running = sum(p.get("status", {}).get("phase") == "Running" for p in items)
        if running >= count:
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            raise BenchmarkError(f"only {running} of {count} pods Running after {timeout:.0f}s")
        await asyncio.sleep(0.5)


async def measure(args: argparse.Namespace) -> list[Row]:
    rows: list[tuple[str, str, str, str]] = []
    idle = 5 if args.quick else 60
    async with private_api_server(API_FLAGS) as (tmp, etcd, api, kubeconfig):
        with (tmp / "hollow.log").open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "minikube_py.kubelet", f"--kubeconfig={kubeconfig}",
                "--simulate", str(args.nodes), f"--node-name={PREFIX}", "--port=0",
                stdout=log, stderr=log)
        try:
            async with Client.from_kubeconfig(kubeconfig) as client:
                progress(f"{args.nodes} hollow nodes registering")
                seconds = await wait_nodes_ready(client, args.nodes, 300)
                rows.append((f"{args.nodes} hollow nodes in one process: all Ready",
                             f"{seconds:.1f} s", "", ""))
                pid = child_pid("minikube_py.kubelet")
                seconds = await wait_leases(client, args.nodes, 60)
                rows.append(("... and every node's Lease exists", f"{seconds:.1f} s later",
                             "", ""))
                progress(f"heartbeats for {idle} s")
                oldest = 0.0
                before, wall = cpu_seconds(pid), time.perf_counter()
                for _ in range(idle // 5):
                    await asyncio.sleep(5)
                    ours = await our_leases(client)
                    now = datetime.now(UTC)
                    if len(ours) < args.nodes:
                        raise BenchmarkError(f"only {len(ours)} leases")
                    oldest = max(oldest, max(lease_age(lease, now) for lease in ours))
                share = (cpu_seconds(pid) - before) / (time.perf_counter() - wall)
                rows.append((f"oldest Lease renewal seen over {idle} s (renew every 10 s)",
                             f"{oldest:.1f} s", "< 40 s",
                             verdict(oldest < 40)))
                rows.append(("hollow process idle: CPU, RSS",
                             f"{share:.1%} of one core, {rss_megabytes(pid):.0f} MB",
                             "", ""))
                progress(f"{args.pods} pods bound round-robin")
                async with ConnectionPool(api.url, 64) as pool:
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
