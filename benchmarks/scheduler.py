"""Benchmark: the scheduler, scheduler_perf style, end to end and the algorithm alone.

Run from the repository root as `.venv/bin/python benchmarks/scheduler.py` (options:
--nodes N (1000), --pods N (3000), --quick: a smoke run of 50 nodes, 100 and 50 pods,
--algorithm-only: phase 4 alone, with no etcd, API server or scheduler process,
--no-append). It starts a private etcd (on /dev/shm), an API server and a scheduler
process, then (at the default sizes):

    1. 1,000 Node objects (10 zones) and 1,000 pods already bound to them
    2. 3,000 pods with cpu/memory requests, created 64-way at full speed: pods/s from
       the first create to the last binding seen by a watch (target >= 300/s), and the
       CPU the scheduler, the API server and etcd each used per pod
    3. 1,000 pods with a PodTopologySpread constraint (zones, maxSkew 1) and a preferred
       InterPodAffinity term, the same way (target >= 100/s)
    4. the algorithm alone, in this process: the default profile's PreFilter..Score on
       those 1,000 nodes and pods, per pod, each pod assumed on its node before the next
       cycle's snapshot as in the scheduler (target p99 <= 20 ms). Each cycle's CPU time
       is reported beside its wall time: on a shared machine the wall time's tail is
       mostly time spent waiting for a core.

Appends its table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
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
    percentile,
    private_api_server,
    progress,
)
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.component import GC_THRESHOLDS  # noqa: E402
from minikube_py.client.kubeconfig import ClientConfig  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402
from minikube_py.cluster.components import SchedulerProcess  # noqa: E402
from minikube_py.scheduler.config import default_configuration  # noqa: E402
from minikube_py.scheduler.framework.interface import CycleState  # noqa: E402
from minikube_py.scheduler.framework.types import PodInfo  # noqa: E402
from minikube_py.scheduler.plugins.registry import IN_TREE_PLUGINS  # noqa: E402
from minikube_py.scheduler.scheduler import Scheduler  # noqa: E402

ZONES = 10


def node(index: int) -> dict[str, Any]:
    name = f"node-{index:04d}"
    allocatable = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": f"zone-{index % ZONES}"}},
            "status": {"capacity": allocatable, "allocatable": allocatable,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, *, node_name: str = "", spread: bool = False) -> dict[str, Any]:
    labels = {"app": "spread" if spread else "plain"}
    spec: dict[str, Any] = {"containers": [{
        "name": "c", "image": "localhost/echo:1",
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if spread:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": labels}}]
        spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {
                "labelSelector": {"matchLabels": labels},
                "topologyKey": "topology.kubernetes.io/zone"}}]}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": spec}


async def create_nodes(pool: ConnectionPool, count: int) -> None:
    bodies = [orjson.dumps(node(i)) for i in range(count)]
    await create_all(pool, "/api/v1/nodes", bodies)

    async def set_status(index: int) -> None:
        body = node(index)
        path = f"/api/v1/nodes/{body['metadata']['name']}"
        current = orjson.loads(await pool.request("GET", path))
        current["status"] = body["status"]
        await pool.request("PUT", f"{path}/status", orjson.dumps(current))

    for start in range(0, count, 64):
        await asyncio.gather(*(set_status(i) for i in range(start, min(count, start + 64))))


async def bindings_until(client: Client, namespace: str, want: int, ready: asyncio.Event,
                         timeout: float) -> float:
    """Watch the namespace until `want` pods are bound; the time of the last binding."""
    pods = client.resource("pods")
    listed = await pods.list(namespace)
    bound = {p["metadata"]["name"] for p in listed["items"] if p["spec"].get("nodeName")}
    ready.set()
    version = listed["metadata"]["resourceVersion"]
    deadline = time.monotonic() + timeout
    async for _type, obj in pods.watch(namespace, resource_version=version,
                                       timeout_seconds=int(timeout)):
        if obj.get("spec", {}).get("nodeName"):
            bound.add(obj["metadata"]["name"])
            if len(bound) >= want:
                return time.perf_counter()
        if time.monotonic() > deadline:
            break
    raise BenchmarkError(f"only {len(bound)} of {want} pods bound in {timeout:.0f}s")


async def burst(pool: ConnectionPool, client: Client, namespace: str, count: int,
                spread: bool) -> tuple[float, float]:
    """Create `count` pods 64-way; (seconds from first create to last binding, create s)."""
    await create_namespace(pool, namespace)
    ready = asyncio.Event()
    watcher = asyncio.create_task(bindings_until(client, namespace, count, ready, 600))
    await ready.wait()
    bodies = [orjson.dumps(pod(f"p-{i:05d}", spread=spread)) for i in range(count)]
    started = time.perf_counter()
    create_seconds = await create_all(pool, f"/api/v1/namespaces/{namespace}/pods", bodies)
    return await watcher - started, create_seconds


async def burst_with_cpu(pool: ConnectionPool, client: Client, pids: dict[str, int],
                         namespace: str, count: int, spread: bool
                         ) -> tuple[float, float, dict[str, float]]:
    """burst() and each process's CPU for it: (seconds, create s, CPU ms per pod by name)."""
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    elapsed, creating = await burst(pool, client, namespace, count, spread=spread)
    return elapsed, creating, {name: (cpu_seconds(pid) - cpu_before[name]) / count * 1000
                               for name, pid in pids.items()}


def cpu_per_pod(cpu_ms: dict[str, float]) -> str:
    """Each process's CPU per pod: "scheduler CPU 1.10 ms per pod, API server 1.21 ms,
    etcd 0.32 ms"."""
    first, *others = cpu_ms.items()
    return ", ".join([f"{first[0]} CPU {first[1]:.2f} ms per pod",
                      *(f"{name} {ms:.2f} ms" for name, ms in others)])


async def algorithm_latencies(nodes: int, existing: int, pods: int, spread: bool
                              ) -> tuple[list[float], list[float]]:
    """The default profile's scheduling algorithm alone, per pod: each cycle takes a fresh
    snapshot of the scheduler's cache and assumes the pod on the node chosen, as the
    scheduler does (so each cycle sees the node the previous pod changed). (wall seconds
    and CPU seconds of each cycle)"""
    # A scheduler that is never started: no informer runs, nothing talks to a server.
    scheduler = Scheduler(Client(ClientConfig(server="http://127.0.0.1:1")),
                          default_configuration(), IN_TREE_PLUGINS)
    for i in range(nodes):
        scheduler.cache.add_node(node(i))
    for i in range(existing):
        existing_pod = pod(f"e-{i}", node_name=f"node-{i % nodes:04d}", spread=spread)
        existing_pod["metadata"].update(namespace="bench", uid=f"uid-e-{i}")
        scheduler.cache.add_pod(existing_pod)
    fwk = scheduler.profiles["default-scheduler"]
    latencies = []
    cpu_times = []
    # as in the scheduler process (run_component): garbage collected rarely
    thresholds = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        for i in range(pods):
            candidate = pod(f"new-{i}", spread=spread)
            candidate["metadata"].update(namespace="bench", uid=f"uid-new-{i}")
            pod_info = PodInfo.of(candidate)
            started, cpu_started = time.perf_counter(), time.process_time()
            fwk.set_snapshot(scheduler.cache.update_snapshot())
            host = await scheduler.schedule_pod(fwk, CycleState(), pod_info)
            latencies.append(time.perf_counter() - started)
            cpu_times.append(time.process_time() - cpu_started)
            scheduler.cache.assume_pod(pod_info, host)
    finally:
        gc.set_threshold(*thresholds)
    return latencies, cpu_times


async def measure(args: argparse.Namespace) -> list[Row]:
    nodes, existing, plain, spread = (50, 50, 100, 50) if args.quick else (
        args.nodes, args.nodes, args.pods, args.pods // 3)
    rows: list[Row] = []
    if not args.algorithm_only:
        rows += await end_to_end(nodes, existing, plain, spread)
    progress("the algorithm alone")
    for spread_pods, label in ((False, "requests only"), (True, "spread + affinity")):
        latencies, cpu_times = await algorithm_latencies(
            nodes, existing, 50 if args.quick else args.algorithm_pods, spread_pods)
        p50 = statistics.median(latencies) * 1000
        p99 = percentile(latencies, 99) * 1000
        cpu = (f"CPU time p50 {statistics.median(cpu_times) * 1000:.1f} ms, "
               f"p99 {percentile(cpu_times, 99) * 1000:.1f} ms, "
               f"mean {statistics.mean(cpu_times) * 1000:.2f} ms")
        rows.append((f"algorithm alone, {nodes:,} nodes, {label}",
                     f"p50 {p50:.1f} ms, p99 {p99:.1f} ms per pod ({cpu})",
                     "p99 <= 20 ms", verdict(p99 <= 20)))
    return rows


async def end_to_end(nodes: int, existing: int, plain: int, spread: int) -> list[Row]:
    """Phases 1-3: a private etcd, API server and scheduler process; pods/s and each
    process's CPU per pod."""
    rows: list[Row] = []
    extra = ("--log-requests=false", "--disable-admission-plugins=ServiceAccount",
             "--max-requests-inflight=800",
             "--max-mutating-requests-inflight=400")
    async with private_api_server(extra) as (tmp, etcd, api, kubeconfig):
        async with ConnectionPool(api.url, 64) as pool, Client.from_kubeconfig(
                kubeconfig) as client:
            progress(f"{nodes} nodes, {existing} bound pods")
            await create_nodes(pool, nodes)
            await create_namespace(pool, "existing")
            await create_all(pool, "/api/v1/namespaces/existing/pods", [
                orjson.dumps(pod(f"e-{i:05d}", node_name=f"node-{i % nodes:04d}"))
                for i in range(existing)])
            async with SchedulerProcess(kubeconfig, tmp / "scheduler.log",
                                        start_timeout=60) as _scheduler:
                assert api.pid is not None and etcd.pid is not None
                # the API server serves a pod's create, its binding and its Scheduled
                # Event, and sends the watch events of each
                pids = {"scheduler": child_pid("minikube_py.scheduler"),
                        "API server": api.pid, "etcd": etcd.pid}
                await asyncio.sleep(2)
                progress(f"{plain} pods with requests")
                elapsed, creating, cpu_ms = await burst_with_cpu(
                    pool, client, pids, "plain", plain, spread=False)
                rate = plain / elapsed
                rows.append((
                    f"end to end: {plain:,} pods with requests, {nodes:,} nodes",
                    f"{rate:,.0f} pods/s ({elapsed:.1f} s; creates took {creating:.1f} s; "
                    f"{cpu_per_pod(cpu_ms)})",
                    ">= 300 pods/s", verdict(rate >= 300)))
                progress(f"{spread} pods with spread + affinity")
                elapsed, _, cpu_ms = await burst_with_cpu(
                    pool, client, pids, "spread", spread, spread=True)
                rate = spread / elapsed
                rows.append((
                    f"end to end: {spread:,} pods with PodTopologySpread + "
                    "InterPodAffinity",
                    f"{rate:,.0f} pods/s ({elapsed:.1f} s; {cpu_per_pod(cpu_ms)})",
                    ">= 100 pods/s", verdict(rate >= 100)))
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=1000,
                        help="nodes, and as many pods already bound to them")
    parser.add_argument("--pods", type=int, default=3000,
                        help="pods with requests (a third as many with spread + affinity)")
    parser.add_argument("--algorithm-pods", type=int, default=500,
                        help="pods scheduled by the algorithm alone, per workload")
    parser.add_argument("--algorithm-only", action="store_true",
                        help="only the algorithm alone: no etcd, API server or scheduler")


def main() -> None:
    run_benchmark(__doc__.splitlines()[0], "scheduler", "scheduler.py", measure,
                  add_arguments=add_arguments)


if __name__ == "__main__":
    main()
