"""Benchmark: pod startup latency through the kubelet, against the container runtime's floor.

Run from the repository root as `.venv/bin/python benchmarks/pod_startup.py` (options:
--quick, --no-append, --pods N). It starts a private containerd node (real runc and CNI),
etcd, an API server and a kubelet process, then measures:

    a. the runtime's floor, no kubelet: one pod alone (RunPodSandbox + CreateContainer +
       StartContainer over CRI)
    b. one pod through the API on the idle node: create -> Running seen by a watch
       (median of 5; one with --quick): target <= 0.5 s
    c. five trials (one with --quick), each of: N pods started straight over CRI all
       at once (T_raw) and, for reference, as many at a time as the kubelet starts
       (--max-parallel-starts), with the kubelet process stopped (SIGSTOP); then N busybox
       pods created through the API at once, per pod create -> Running seen by a watch.
       Each trial's p50 and p99 are divided by that trial's T_raw, so the floor and the
       kubelet run minutes apart never meet; the medians of the trials' ratios meet the
       targets p99 <= 1.25 x T_raw, p50 <= 0.6 x T_raw
    d. the kubelet idle with those N pods (10 s to settle, then 60 s; 1 s and 5 s with
       --quick): CPU share of one core and RSS: targets <= 3% and <= 100 MB

Appends its table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import (  # noqa: E402
    BenchmarkError,
    cpu_seconds,
    percentile,
    progress,
)
from benchmarks.etcd_raw import scratch_directory  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402
from minikube_py.cluster.apiserver import APIServerProcess  # noqa: E402
from minikube_py.cluster.components import KubeletProcess  # noqa: E402
from minikube_py.cluster.etcd import EtcdProcess  # noqa: E402
from minikube_py.cluster.kubeconfig import write_kubeconfig  # noqa: E402
from minikube_py.cluster.runtime_setup import (  # noqa: E402
    Containerd,
    NodeRuntimeConfig,
    free_pod_cidr,
    load_image,
)
from minikube_py.cri import RemoteRuntime  # noqa: E402
from minikube_py.gen.cri import api_pb2  # noqa: E402
from minikube_py.images.catalog import build_catalog  # noqa: E402
from minikube_py.kubelet.podstate import MANAGED_LABEL  # noqa: E402

# Quiet, and without ServiceAccount admission: no serviceaccount controller gives the
# benchmark's namespace a `default` account.
API_FLAGS = ("--log-requests=false", "--disable-admission-plugins=ServiceAccount")

BUSYBOX = "localhost/busybox:1.36"
# Floor and burst, this many times over; the medians are quoted. One trial's ratio can
# be 0.4 or 0.7 on a 2-core virtual machine, mostly because T_raw itself varies by 30%.
TRIALS = 5
QUICK_TRIALS = 1
SINGLES = 5  # single pods timed one after another (after one that warms the kubelet)
QUICK_SINGLES = 1
NAMESPACE = "bench"


async def start_raw_pod(runtime: RemoteRuntime, name: str, logs: Path) -> float:
    """RunPodSandbox + CreateContainer + StartContainer straight over CRI; seconds taken."""
    started = time.perf_counter()
    config = api_pb2.PodSandboxConfig(
        metadata=api_pb2.PodSandboxMetadata(name=name, uid=name, namespace="raw"),
        hostname=name, log_directory=str(logs / name), labels={"bench": "raw"})
    (logs / name).mkdir(parents=True, exist_ok=True)
    sandbox = await runtime.run_pod_sandbox(api_pb2.RunPodSandboxRequest(config=config),
                                            timeout=120)
    created = await runtime.create_container(api_pb2.CreateContainerRequest(
        pod_sandbox_id=sandbox.pod_sandbox_id, sandbox_config=config,
        config=api_pb2.ContainerConfig(
            metadata=api_pb2.ContainerMetadata(name="app"),
            image=api_pb2.ImageSpec(image=BUSYBOX), command=["sleep", "3600"],
            log_path="app/0.log", labels={"bench": "raw"})), timeout=120)
    await runtime.start_container(
        api_pb2.StartContainerRequest(container_id=created.container_id), timeout=120)
    return time.perf_counter() - started


async def raw_burst(runtime: RemoteRuntime, names: list[str], logs: Path,
                    at_once: int) -> tuple[float, float]:
    """Start the pods over CRI, at most `at_once` at a time: (all done, p50) in seconds."""
    slots = asyncio.Semaphore(at_once)
    done: list[float] = []
    started = time.perf_counter()

    async def one(name: str) -> None:
        async with slots:
            await start_raw_pod(runtime, name, logs)
        done.append(time.perf_counter() - started)
    await asyncio.gather(*(one(name) for name in names))
    total = time.perf_counter() - started
    await remove_raw_pods(runtime)
    return total, percentile(done, 50)


async def remove_raw_pods(runtime: RemoteRuntime) -> None:
    listing = await runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
        filter=api_pb2.PodSandboxFilter(label_selector={"bench": "raw"})))
    for sandbox in listing.items:
        await runtime.stop_pod_sandbox(
            api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox.id), timeout=60)
        await runtime.remove_pod_sandbox(
            api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sandbox.id), timeout=60)


def busybox_pod(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "app", "image": BUSYBOX,
                                     "command": ["sleep", "3600"]}]}}


async def running_times(client: Client, names: set[str], version: str,
                        timeout: float) -> dict[str, float]:
    """Watch from `version`; the perf_counter time each named pod is first seen Running."""
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    pods = client.resource("pods")
    while len(seen) < len(names):
        if time.monotonic() > deadline:
            raise BenchmarkError(f"only {len(seen)} of {len(names)} pods Running after "
                                 f"{timeout:.0f}s")
        async for _, pod in pods.watch(NAMESPACE, resource_version=version,
                                       timeout_seconds=int(timeout)):
            version = pod.get("metadata", {}).get("resourceVersion", version)
            name = pod.get("metadata", {}).get("name")
            if (name in names and name not in seen
                    and pod.get("status", {}).get("phase") == "Running"):
                seen[name] = time.perf_counter()
                if len(seen) == len(names):
                    break
    return seen


async def create_and_time(client: Client, names: list[str], node: str) -> list[float]:
    """Create the pods at once; seconds from each create call to its Running."""
    listed = await client.resource("pods").list(NAMESPACE)
    watcher = asyncio.create_task(running_times(
        client, set(names), listed["metadata"]["resourceVersion"], 120))
    sent: dict[str, float] = {}

    async def create(name: str) -> None:
        sent[name] = time.perf_counter()
        await client.resource("pods").create(busybox_pod(name, node), NAMESPACE)
    await asyncio.gather(*(create(name) for name in names))
    running = await watcher
    return [running[name] - sent[name] for name in names]


async def delete_all_and_wait(client: Client) -> None:
    pods = client.resource("pods")
    await pods.delete_collection(NAMESPACE)
    deadline = time.monotonic() + 60
    while (await pods.list(NAMESPACE))["items"]:
        if time.monotonic() > deadline:
            raise BenchmarkError("pods were not deleted within 60 s")
        await asyncio.sleep(0.2)


async def wait_node_ready(client: Client, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            node = await client.resource("nodes").get(name)
        except Exception:  # noqa: BLE001 - not registered yet
            node = {}
        conditions = {c["type"]: c["status"] for c in node.get("status", {}).get(
            "conditions", [])}
        if conditions.get("Ready") == "True":
            return
        await asyncio.sleep(0.2)
    raise BenchmarkError(f"node {name} not Ready after {timeout:.0f}s")


def rss_megabytes(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def measure(args: argparse.Namespace) -> list[Row]:
    count, idle_seconds = args.pods, (5 if args.quick else 60)
    settle = 1 if args.quick else 10
    rows: list[tuple[str, str, str, str]] = []
    with scratch_directory() as scratch:
        tmp = Path(scratch)
        progress("building and loading images")
        archives = await asyncio.to_thread(build_catalog, tmp / "images")
        node_config = NodeRuntimeConfig(node_name=f"bench-{os.getpid()}",
                                        base_dir=tmp / "node", pod_cidr=free_pod_cidr())
        async with Containerd(node_config) as containerd:
            for archive in archives:
                await load_image(node_config, archive.path)
            async with (RemoteRuntime(containerd.endpoint) as runtime,
                        EtcdProcess(tmp / "etcd") as etcd,
                        APIServerProcess([etcd.client_url], tmp / "apiserver.log",
                                         extra_args=API_FLAGS) as api):
                progress("the runtime's floor: one pod alone")
                await start_raw_pod(runtime, "warmup", tmp / "raw-logs")
                await remove_raw_pods(runtime)
                single_raw = await start_raw_pod(runtime, "single", tmp / "raw-logs")
                await remove_raw_pods(runtime)
                rows.append(("runtime floor: one pod alone over CRI", f"{single_raw:.3f} s",
                             "", ""))
                kubeconfig = write_kubeconfig(tmp / "kubeconfig", api.url)
                async with Client.from_kubeconfig(kubeconfig) as client:
                    await client.resource("namespaces").create(
                        {"metadata": {"name": NAMESPACE}})
                    async with KubeletProcess(
                            kubeconfig, tmp / "kubelet.log", node_name=node_config.node_name,
                            runtime_endpoint=containerd.endpoint,
                            root_dir=tmp / "kubelet", pod_cidr=node_config.pod_cidr,
                            extra_args=(f"--max-parallel-starts={args.max_parallel_starts}",),
                            ) as kubelet:
                        await wait_node_ready(client, node_config.node_name)
                        assert kubelet.pid is not None
                        await measure_through_kubelet(
                            Bench(client, runtime, node_config.node_name, kubelet.pid,
                                  tmp / "raw-logs", count, args.max_parallel_starts,
                                  QUICK_TRIALS if args.quick else TRIALS,
                                  QUICK_SINGLES if args.quick else SINGLES),
                            idle_seconds, settle, rows)
                        await delete_all_and_wait(client)
    return rows


@dataclass
class Bench:
    client: Client
    runtime: RemoteRuntime
    node: str
    kubelet_pid: int
    raw_logs: Path
    count: int
    at_once: int  # the kubelet's --max-parallel-starts
    trials: int
    singles: int


async def floor_trial(bench: Bench, trial: int) -> tuple[float, float]:
    """With the kubelet stopped: T_raw (all at once), and p50 when started as many at a
    time as the kubelet does."""
    names = [f"raw-{trial}-{i}" for i in range(bench.count)]
    os.kill(bench.kubelet_pid, signal.SIGSTOP)
    try:
        t_raw, _ = await raw_burst(bench.runtime, names, bench.raw_logs, bench.count)
        _, bounded_p50 = await raw_burst(bench.runtime, [f"{name}-b" for name in names],
                                         bench.raw_logs, bench.at_once)
    finally:
        os.kill(bench.kubelet_pid, signal.SIGCONT)
    return t_raw, bounded_p50


async def wait_runtime_empty(runtime: RemoteRuntime, timeout: float = 60) -> None:
    """Until the kubelet has torn down every sandbox it ran (after the API deletes)."""
    deadline = time.monotonic() + timeout
    selector = {MANAGED_LABEL: "true"}
    while (await runtime.list_pod_sandbox(api_pb2.ListPodSandboxRequest(
            filter=api_pb2.PodSandboxFilter(label_selector=selector)))).items:
        if time.monotonic() > deadline:
            raise BenchmarkError(f"the kubelet left sandboxes after {timeout:.0f}s")
        await asyncio.sleep(0.2)


async def measure_through_kubelet(bench: Bench, idle_seconds: int, settle: float,
                                  rows: list[tuple[str, str, str, str]]) -> None:
    client, count = bench.client, bench.count
    progress("one pod at a time on the idle node")
    singles = []
    for index in range(1 + bench.singles):
        singles += await create_and_time(client, [f"single-{index}"], bench.node)
        await delete_all_and_wait(client)
    single = statistics.median(singles[1:])  # the first one warms the kubelet's caches
    rows.append((f"one pod on an idle node: create -> Running (median of {bench.singles})",
                 f"{single:.3f} s", "<= 0.5 s", verdict(single <= 0.5)))

    floors, bounded, p50s, p99s = [], [], [], []
    for trial in range(bench.trials):
        await wait_runtime_empty(bench.runtime)
        progress(f"trial {trial + 1}: the runtime alone, {count} pods; then through the "
                 f"kubelet")
        t_raw, bounded_p50 = await floor_trial(bench, trial)
        latencies = await create_and_time(
            client, [f"burst-{trial}-{i:02d}" for i in range(count)], bench.node)
        floors.append(t_raw)
        bounded.append(bounded_p50 / t_raw)
        p50s.append(percentile(latencies, 50) / t_raw)
        p99s.append(percentile(latencies, 99) / t_raw)
        if trial + 1 < bench.trials:
            await delete_all_and_wait(client)

    def each(values: list[float], unit: str = " x") -> str:
        return ", ".join(f"{value:.2f}{unit}" for value in values)
    p50, p99 = statistics.median(p50s), statistics.median(p99s)
    rows.append((f"runtime floor: {count} pods at once over CRI (T_raw)",
                 f"{statistics.median(floors):.2f} s (trials {each(floors, ' s')})", "", ""))
    rows.append((f"runtime alone, {bench.at_once} at a time: p50",
                 f"{statistics.median(bounded):.2f} x T_raw (trials {each(bounded)})", "", ""))
    rows.append((f"{count} pods at once: create -> Running p50",
                 f"{p50:.2f} x T_raw (trials {each(p50s)})", "<= 0.6 x T_raw",
                 verdict(p50 <= 0.6)))
    rows.append((f"{count} pods at once: create -> Running p99",
                 f"{p99:.2f} x T_raw (trials {each(p99s)})", "<= 1.25 x T_raw",
                 verdict(p99 <= 1.25)))

    await asyncio.sleep(settle)  # statuses written, probes and PLEG in their steady state
    progress(f"idle kubelet with {count} pods for {idle_seconds} s")
    pid = bench.kubelet_pid
    samples = []
    before, wall = cpu_seconds(pid), time.perf_counter()
    for _ in range(idle_seconds // 5):
        mark = cpu_seconds(pid)
        await asyncio.sleep(5)
        samples.append((cpu_seconds(pid) - mark) / 5)
    share = (cpu_seconds(pid) - before) / (time.perf_counter() - wall)
    rss = rss_megabytes(pid)
    rows.append((f"idle kubelet with {count} pods: CPU over {idle_seconds} s",
                 f"{share:.2%} of one core (median of 5 s samples "
                 f"{statistics.median(samples):.2%})", "<= 3%",
                 verdict(share <= 0.03)))
    rows.append((f"idle kubelet with {count} pods: RSS", f"{rss:.0f} MB", "<= 100 MB",
                 verdict(rss <= 100)))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pods", type=int, default=30, help="pods started at once")
    parser.add_argument("--max-parallel-starts", type=int, default=3,
                        help="the kubelet's bound on pods starting at the same time")


def main() -> None:
    run_benchmark(__doc__.splitlines()[0], "pod startup", "pod_startup.py", measure,
                  add_arguments=add_arguments,
                  note=lambda args: f"kubelet --max-parallel-starts={args.max_parallel_starts}")


if __name__ == "__main__":
    main()
