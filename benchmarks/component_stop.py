"""Benchmark: how long each component takes to stop on SIGTERM (target: 2 s).

Run from the repository root as `.venv/bin/python benchmarks/component_stop.py` (options:
--quick: one round; --rounds N; --no-append). It starts a private etcd (on /dev/shm) and
an API server, then, in each round, starts every component as `minikube-py up` runs it
(-v 2): the controller-manager, the scheduler, a kubelet (one hollow node: the kubelet's
own code on the simulated runtime), cluster DNS and a second API server on the same etcd,
with a ReplicaSet of 20 pods running on the hollow node so that each has work in hand
(watches open, probes and leases renewing). It then sends each SIGTERM in turn and times
how long until it has exited, and checks its exit code is 0.

Baseline: a bare `python -c` process that sleeps, SIGTERMed the same way: what starting
to exit costs this machine, whatever the component does.

The figures: per component, the median and the slowest of the rounds, against 2 s, and
the median's ratio to the baseline's. Appends its table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import BenchmarkError, private_api_server, progress  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402
from minikube_py.cluster.apiserver import APIServerProcess  # noqa: E402
from minikube_py.cluster.components import (  # noqa: E402
    ControllerManagerProcess,
    DNSProcess,
    HollowNodesProcess,
    SchedulerProcess,
)
from minikube_py.process import ComponentProcess, free_port  # noqa: E402

TARGET_SECONDS = 2.0
NAMESPACE = "stop"
PODS = 20
API_FLAGS = ("--log-requests=false", "--disable-admission-plugins=ServiceAccount")


def replica_set(node: str) -> dict[str, object]:
    """PODS pods for `node` (this round's hollow node, not those of rounds before)."""
    labels = {"app": "steady"}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "steady"},
            "spec": {"replicas": PODS, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "nodeSelector": {"kubernetes.io/hostname": node}, "containers": [{
                         "name": "c", "image": "localhost/echo:1",
                         "readinessProbe": {"exec": {"command": ["true"]},
                                            "periodSeconds": 1}}]}}}}


async def wait_exit(process: ComponentProcess, pid: int, limit: float) -> tuple[float, int]:
    """SIGTERM pid and wait until `process` has exited: (seconds, exit code)."""
    started = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    while process.running:
        if time.monotonic() - started > limit:
            raise BenchmarkError(f"{process.component} still ran {limit:.0f} s after SIGTERM")
        await asyncio.sleep(0.005)
    code = process.returncode
    return time.monotonic() - started, -1 if code is None else code


def baseline_stop() -> float:
    """A bare Python process that sleeps, SIGTERMed: seconds until it has exited."""
    process = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                                "print('ready', flush=True)\ntime.sleep(3600)"],
                               stdout=subprocess.PIPE)
    assert process.stdout is not None
    process.stdout.readline()
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    return time.monotonic() - started


async def all_running(client: Client, namespace: str) -> bool:
    pods = (await client.resource("pods").list(namespace))["items"]
    return len(pods) == PODS and all(
        (pod.get("status") or {}).get("phase") == "Running" for pod in pods)


async def until(check, what: str, timeout: float = 120) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise BenchmarkError(f"{what} did not happen within {timeout:.0f} s")
        await asyncio.sleep(0.2)


async def one_round(tmp: Path, etcd_url: str, kubeconfig: Path, round_number: int
                    ) -> dict[str, tuple[float, int]]:
    """Every component started, the ReplicaSet running (in a namespace of the round's
    own), then each SIGTERMed in turn."""
    directory = tmp / f"round-{round_number}"
    namespace = f"{NAMESPACE}-{round_number}"
    directory.mkdir()
    verbose = ("-v", "2")
    components: dict[str, ComponentProcess] = {
        "controller-manager": ControllerManagerProcess(
            kubeconfig, directory / "controller-manager.log", extra_args=verbose),
        "scheduler": SchedulerProcess(kubeconfig, directory / "scheduler.log",
                                      extra_args=verbose),
        "kubelet (hollow)": HollowNodesProcess(
            kubeconfig, directory / "kubelet.log", count=1,
            extra_args=(f"--node-name=stop-{round_number}", *verbose)),
        "dns": DNSProcess(kubeconfig, directory / "dns.log", dns_port=free_port(),
                          dns_address="127.0.0.1", advertise_address="192.0.2.53",
                          service_ip="10.96.0.10",
                          extra_args=("--upstream=127.0.0.1:9", *verbose)),
        "apiserver (second)": APIServerProcess([etcd_url], directory / "apiserver.log",
                                               extra_args=API_FLAGS),
    }
    stops: dict[str, tuple[float, int]] = {}
    try:
        await asyncio.gather(*(component.start() for component in components.values()))
        async with Client.from_kubeconfig(kubeconfig) as client:
            await client.resource("namespaces").create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            await client.resource("replicasets").create(
                replica_set(f"stop-{round_number}-0"), namespace)
            await until(lambda: all_running(client, namespace), f"{PODS} pods Running")
            await asyncio.sleep(2)  # probes, leases and status updates under way
            for name, component in components.items():
                assert component.pid is not None
                stops[name] = await wait_exit(component, component.pid, 30)
    finally:
        for component in components.values():
            await component.stop()
    return stops


async def measure(args: argparse.Namespace) -> list[Row]:
    rounds = 1 if args.quick else args.rounds
    baselines = [await asyncio.to_thread(baseline_stop) for _ in range(max(rounds, 5))]
    stops: dict[str, list[tuple[float, int]]] = {}
    async with private_api_server(API_FLAGS) as (tmp, etcd, _api, kubeconfig):
        for number in range(rounds):
            progress(f"round {number + 1} of {rounds}")
            for name, stop in (await one_round(tmp, etcd.client_url, kubeconfig,
                                               number)).items():
                stops.setdefault(name, []).append(stop)
    baseline = statistics.median(baselines)
    rows: list[Row] = [("baseline: a bare python process, SIGTERM to exit (median)",
                        f"{baseline * 1000:.0f} ms", "", "")]
    for name, runs in stops.items():
        seconds = [elapsed for elapsed, _code in runs]
        codes = sorted({code for _elapsed, code in runs})
        median, slowest = statistics.median(seconds), max(seconds)
        rows.append((f"{name}: SIGTERM to exit, median / slowest of {len(runs)}",
                     f"{median * 1000:.0f} / {slowest * 1000:.0f} ms "
                     f"({median / baseline:.1f}x baseline)", "< 2 s, exit 0",
                     verdict(slowest < TARGET_SECONDS and codes == [0])
                     + ("" if codes == [0] else f" (exit codes {codes})")))
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rounds", type=int, default=5,
                        help="how many times every component is started and stopped")


if __name__ == "__main__":
    run_benchmark(__doc__ or "", "component stop on SIGTERM", "component_stop.py", measure,
                  add_arguments=add_arguments)
