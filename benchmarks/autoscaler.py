"""Benchmark: the cluster autoscaler growing and shrinking a group of hollow nodes.

Run from the repository root as `.venv/bin/python benchmarks/autoscaler.py` (options:
--pods N (1000), --unneeded SECONDS (10), --quick: a smoke run of 50 pods and 2 s,
--no-append). It starts a private etcd, an API server, the scheduler and
`python -m minikube_py.autoscaler` (a group of 4-core hollow nodes, MIN 1, scanning every
second), then measures:

    1. N pods of 100m each, created at once, all pending on the one node there is:
       seconds until all are Running (target: 30 s), and how long each scale-up decision
       took inside the autoscaler's loop, from its log (target: p99 <= 1 s)
    2. every pod deleted: once the kubelets have ended them all (the cluster is empty),
       seconds until the group is back to MIN nodes (target: the unneeded time + 10 s)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import (  # noqa: E402
    BenchmarkError,
    ConnectionPool,
    create_all,
    create_namespace,
    private_api_server,
    progress,
)
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402

API_FLAGS = ("--log-requests=false", "--disable-admission-plugins=ServiceAccount")
GROUP = "pool"
NODE_CPU = 4
DECISION = re.compile(r"Scale-up: setting group \S+ size to (\d+) \(decided in ([\d.]+) s\)")


async def running_count(client: Client) -> int:
    items = (await client.resource("pods").list("bench"))["items"]
    return sum((p.get("status") or {}).get("phase") == "Running" for p in items)


async def group_size(client: Client) -> int:
    listed = await client.resource("nodes").list(
        label_selector=f"autoscaler.minikube-py.io/node-group={GROUP}")
    return len(listed["items"])


async def wait_until(check: Callable[[], Awaitable[bool]], what: str, timeout: float
                     ) -> float:
    """Poll `check()` every 0.2 s until it is true; the seconds taken."""
    started = time.perf_counter()
    while not await check():
        if time.perf_counter() - started > timeout:
            raise BenchmarkError(f"{what}: not after {timeout:.0f} s")
        await asyncio.sleep(0.2)
    return time.perf_counter() - started


async def measure(args: argparse.Namespace) -> list[Row]:
    pods = 50 if args.quick else args.pods
    unneeded = 2.0 if args.quick else args.unneeded
    per_node = NODE_CPU * 1000 // 100
    most = -(-pods // per_node) + 2
    rows: list[Row] = []
    async with private_api_server(API_FLAGS) as (tmp, etcd, api, kubeconfig):
        processes = []
        autoscaler_log = tmp / "autoscaler.log"
        with (tmp / "scheduler.log").open("wb") as scheduler_log, \
                autoscaler_log.open("wb") as log:
            processes.append(await asyncio.create_subprocess_exec(
                sys.executable, "-m", "minikube_py.scheduler", f"--kubeconfig={kubeconfig}",
                "--port=0", stdout=scheduler_log, stderr=scheduler_log))
            processes.append(await asyncio.create_subprocess_exec(
                sys.executable, "-m", "minikube_py.autoscaler", f"--kubeconfig={kubeconfig}",
                "--port=0", f"--nodes=1:{most}:{GROUP}", f"--node-cpu={NODE_CPU}",
                "--scan-interval=1s", f"--scale-down-unneeded-time={unneeded}s",
                "--scale-down-delay-after-add=0s", "--v=2", stdout=log, stderr=log))
        try:
            async with Client.from_kubeconfig(kubeconfig) as client:
                progress("the group's minimum: one hollow node")
                await wait_until(lambda: _at_least(client, 1), "the first node", 120)
                progress(f"{pods} pods of 100m created at once")
                async with ConnectionPool(api.url, 32) as pool:
                    await create_namespace(pool, "bench")
                    bodies = [orjson.dumps({
                        "apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": f"p-{i:05d}", "ownerReferences": [{
                            "apiVersion": "apps/v1", "kind": "ReplicaSet",
                            "name": "bench", "uid": "bench-rs", "controller": True}]},
                        "spec": {"containers": [{
                            "name": "app", "image": "localhost/busybox:1.36",
                            "resources": {"requests": {"cpu": "100m"}}}]}})
                        for i in range(pods)]
                    started = time.perf_counter()
                    await create_all(pool, "/api/v1/namespaces/bench/pods", bodies)

                    async def all_running() -> bool:
                        return await running_count(client) >= pods

                    await wait_until(all_running, f"{pods} pods Running", 600)
                    elapsed = time.perf_counter() - started
                nodes = await group_size(client)
                rows.append((f"{pods} pending pods (100m, {per_node} per {NODE_CPU}-core "
                             f"node): create -> all Running",
                             f"{elapsed:.1f} s, {nodes} nodes", "<= 30 s",
                             verdict(elapsed <= 30)))
                decisions = [float(m.group(2)) for m in
                             DECISION.finditer(autoscaler_log.read_text(errors="replace"))]
                if not decisions:
                    raise BenchmarkError("the autoscaler logged no scale-up decision")
                p99 = sorted(decisions)[max(0, -(-len(decisions) * 99 // 100) - 1)]
                rows.append((f"scale-up decisions ({len(decisions)}): median, p99",
                             f"{statistics.median(decisions) * 1000:.0f} ms, "
                             f"{p99 * 1000:.0f} ms", "p99 <= 1 s", verdict(p99 <= 1.0)))
                progress("every pod deleted: the group shrinks to its minimum")
                await client.resource("pods").delete_collection("bench")
                started = time.perf_counter()

                async def pods_gone() -> bool:
                    return not (await client.resource("pods").list("bench"))["items"]

                gone = await wait_until(pods_gone, "every pod gone", 600)
                seconds = await wait_until(lambda: _at_most(client, 1),
                                           "back to one node", 600)
                rows.append((f"emptied group (every pod gone) back to MIN (1 node of "
                             f"{nodes}), unneeded time {unneeded:.0f} s",
                             f"{seconds:.1f} s", f"<= {unneeded + 10:.0f} s",
                             verdict(seconds <= unneeded + 10)))
                rows.append(("... and from the pods' deletion: the kubelets ending "
                             "every pod, then that", f"{gone:.1f} s + {seconds:.1f} s",
                             "", ""))
        finally:
            for process in processes:
                process.terminate()
            async with asyncio.timeout(60):
                for process in processes:
                    await process.wait()
    return rows


async def _at_least(client: Client, count: int) -> bool:
    return await group_size(client) >= count


async def _at_most(client: Client, count: int) -> bool:
    return await group_size(client) <= count


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pods", type=int, default=1000, help="pending pods")
    parser.add_argument("--unneeded", type=float, default=10.0,
                        help="--scale-down-unneeded-time, seconds")


def main() -> None:
    run_benchmark(__doc__.splitlines()[0], "cluster autoscaler", "autoscaler.py", measure,
                  add_arguments=add_arguments)


if __name__ == "__main__":
    main()
