"""Benchmark: how fast the controller-manager turns a Deployment into pods, and what it
costs when idle.

Run from the repository root as `.venv/bin/python benchmarks/controllers.py` (options:
--quick: a smoke run of 50 pods, a Deployment of 50 scaled to 150 and a 5 s idle window;
--no-append). It starts a private etcd (on /dev/shm), an API server and a
controller-manager process (every controller), then:

    1. baseline: 1,000 pods POSTed by a 64-way client, the API server's own create rate
       for these pods, which bounds how fast any controller can create them
    2. a Deployment of 1,000 replicas: seconds from its create until 1,000 pods exist
       (seen by a watch), against the target and as a ratio to the baseline
    3. scale it to 4,000 (5,000 pods in the cluster with the baseline's): seconds until
       they exist
    4. idle: once the Deployment's status shows 4,000 replicas, 10 s to settle, then the
       controller-manager's CPU over 60 s while it holds those 5,000 pods (no kubelet
       runs, so nothing changes): target <= 2% of one core

Appends its table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
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
    machine_busy_seconds,
    private_api_server,
    progress,
)
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402
from minikube_py.cluster.components import ControllerManagerProcess  # noqa: E402

# Quiet, and without ServiceAccount admission: no serviceaccount controller gives the
# benchmark's namespace a `default` account.
API_FLAGS = ("--log-requests=false", "--disable-admission-plugins=ServiceAccount")


TEMPLATE_LABELS = {"app": "bench"}


def pod_template() -> dict[str, Any]:
    return {"metadata": {"labels": TEMPLATE_LABELS}, "spec": {"containers": [{
        "name": "web", "image": "localhost/echo:1",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


def deployment(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "bench", "namespace": "bench"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": TEMPLATE_LABELS},
                     "template": pod_template()}}


def baseline_pod(index: int) -> bytes:
    template = pod_template()
    return orjson.dumps({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"baseline-{index:05d}", **template["metadata"]},
                         "spec": template["spec"]})


async def count_pods_until(client: Client, namespace: str, want: int, timeout: float) -> float:
    """Watch the namespace's pods from now; return the time at which `want` exist."""
    pods = client.resource("pods")
    listed = await pods.list(namespace)
    seen = {p["metadata"]["name"] for p in listed["items"]}
    version = listed["metadata"]["resourceVersion"]
    deadline = time.monotonic() + timeout
    while len(seen) < want:
        if time.monotonic() > deadline:
            raise BenchmarkError(f"only {len(seen)} of {want} pods after {timeout:.0f}s")
        async for event_type, obj in pods.watch(namespace, resource_version=version,
                                                timeout_seconds=int(timeout)):
            version = obj.get("metadata", {}).get("resourceVersion", version)
            if event_type == "ADDED":
                seen.add(obj["metadata"]["name"])
                if len(seen) >= want:
                    break
    return time.perf_counter()


async def wait_for_status(client: Client, replicas: int, timeout: float = 120) -> None:
    """Until the Deployment's status counts every replica (the controllers caught up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = (await client.resource("deployments", "apps").get("bench", "bench")).get(
            "status", {})
        if status.get("replicas") == replicas:
            return
        await asyncio.sleep(0.5)
    raise BenchmarkError(f"the Deployment's status did not reach {replicas} replicas")


async def measure(args: argparse.Namespace) -> list[Row]:
    first, second, idle_seconds = (50, 100, 5) if args.quick else (1000, 3000, 60)
    settle = 1 if args.quick else 10
    rows: list[tuple[str, str, str, str]] = []
    async with private_api_server(API_FLAGS) as (tmp, etcd, api, kubeconfig):
        async with ConnectionPool(api.url, 64) as pool, Client.from_kubeconfig(
                kubeconfig) as client:
            for namespace in ("baseline", "bench"):
                await create_namespace(pool, namespace)
            progress(f"baseline: {first} pods POSTed 64-way")
            seconds = await create_all(pool, "/api/v1/namespaces/baseline/pods",
                                       [baseline_pod(i) for i in range(first)])
            baseline_rate = first / seconds
            rows.append((f"baseline: API creates of {first:,} pods (64-way client)",
                         f"{seconds:.2f} s ({baseline_rate:,.0f}/s)", "", ""))

            async with ControllerManagerProcess(kubeconfig, tmp / "cm.log") as manager:
                cm_pid = child_pid("minikube_py.controllers")
                await asyncio.sleep(2)  # caches synced, controllers idle
                progress(f"Deployment of {first} replicas")
                started = time.perf_counter()
                watcher = asyncio.create_task(count_pods_until(client, "bench", first, 120))
                await client.resource("deployments", "apps").create(deployment(first))
                elapsed = await watcher - started
                target = 5.0 * first / 1000
                rows.append((
                    f"Deployment of {first:,} replicas: until {first:,} pods exist",
                    f"{elapsed:.2f} s ({first / elapsed:,.0f} pods/s, "
                    f"{elapsed / seconds:.2f}x the baseline's time)",
                    f"<= {target:.0f} s", verdict(elapsed <= target)))

                progress(f"scale to {first + second}")
                started = time.perf_counter()
                watcher = asyncio.create_task(
                    count_pods_until(client, "bench", first + second, 300))
                await client.resource("deployments", "apps").patch(
                    "bench", {"spec": {"replicas": first + second}}, "bench")
                elapsed = await watcher - started
                rows.append((f"scale {first:,} -> {first + second:,}: until they exist",
                             f"{elapsed:.2f} s ({second / elapsed:,.0f} pods/s)", "", ""))

                await wait_for_status(client, first + second)
                await asyncio.sleep(settle)
                progress(f"idle CPU over {idle_seconds} s")
                samples = []
                busy = machine_busy_seconds()
                before, wall = cpu_seconds(cm_pid), time.perf_counter()
                for _ in range(idle_seconds // 5):
                    mark = cpu_seconds(cm_pid)
                    await asyncio.sleep(5)
                    samples.append((cpu_seconds(cm_pid) - mark) / 5)
                used = cpu_seconds(cm_pid) - before
                wall = time.perf_counter() - wall
                others = (machine_busy_seconds() - busy - used) / wall
                share = used / wall
                rows.append((
                    f"idle controller-manager holding {first + second + first:,} pods, "
                    f"{idle_seconds} s",
                    f"{share:.2%} of one core (median of 5 s samples "
                    f"{statistics.median(samples):.2%}); other processes {others:.0%}",
                    "<= 2%", verdict(share <= 0.02)))
                assert manager.running
    return rows


def main() -> None:
    run_benchmark(__doc__.splitlines()[0], "controllers", "controllers.py", measure)


if __name__ == "__main__":
    main()
