"""Benchmark: a StatefulSet's claims provisioned and bound, its pods Running (the pod
startup SLO, storage included).

Run from the repository root as `.venv/bin/python benchmarks/storage.py` (options:
--replicas N (200), --nodes N (10), --quick: a smoke run of 5 replicas on 2 nodes,
--no-append). It starts a private etcd, the API server, the controller-manager (the
StatefulSet and PersistentVolume controllers), the scheduler (VolumeBinding), the
local-path provisioner and N hollow nodes (simulated kubelets: a pod becomes Running
without containers, so the kubelet's mount is not in the figure), creates the default
StorageClass `standard` (WaitForFirstConsumer), then one StatefulSet of N replicas
(podManagementPolicy Parallel) with a volumeClaimTemplate. Every pod waits for its claim:
the scheduler picks a node and selects it on the claim, the PV controller hands the claim
to the provisioner, the provisioner makes the volume, the PV controller binds it, the
scheduler binds the pod.

Measured per pod, from the watch's first sight of it (ADDED) to the first event that
shows it Running. Target, upstream's pod startup SLO: p99 <= 5 s. A second watch, of the
claims and pods, splits each pod's time into its steps (medians and p99s): to the claim's
selected node (the scheduler), to the PV controller's provisioner annotation, to the
claim Bound (the provisioner's PV, the PV controller's binding), to the pod's node (the
scheduler's PreBind and Binding), to Running (the hollow kubelet).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import (  # noqa: E402
    BenchmarkError,
    percentile,  # noqa: E402
    progress,
)
from benchmarks.density import PodWatch  # noqa: E402
from benchmarks.etcd_raw import scratch_directory  # noqa: E402
from benchmarks.hollow_nodes import wait_nodes_ready  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402
from minikube_py.cluster.apiserver import APIServerProcess  # noqa: E402
from minikube_py.cluster.components import (  # noqa: E402
    ControllerManagerProcess,
    HollowNodesProcess,
    ProvisionerProcess,
    SchedulerProcess,
)
from minikube_py.cluster.etcd import EtcdProcess  # noqa: E402
from minikube_py.cluster.kubeconfig import write_kubeconfig  # noqa: E402
from minikube_py.cluster.storage import ensure_default_storage_class  # noqa: E402

NAMESPACE = "density"  # PodWatch's
TIMEOUT = 600.0
STEPS = ("selected node", "provisioner annotation", "claim Bound", "pod bound", "Running")


class StepWatch:
    """First sight of each step of every pod of the namespace and of its claim."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: dict[str, dict[str, float]] = {}
        """pod name -> step -> first sight (`added`: the pod's first)."""
        self.listening = asyncio.Event()

    def saw(self, pod: str, step: str) -> None:
        self.seen.setdefault(pod, {}).setdefault(step, time.perf_counter())

    async def run(self) -> None:
        """Watch claims and pods (from now: the StatefulSet is created after)."""
        async with asyncio.TaskGroup() as group:
            ready = [asyncio.Event(), asyncio.Event()]
            group.create_task(self._watch("persistentvolumeclaims", self.claim, ready[0]))
            group.create_task(self._watch("pods", self.pod, ready[1]))
            await asyncio.gather(*(event.wait() for event in ready))
            self.listening.set()

    async def _watch(self, plural: str, observe: Callable[[dict[str, Any]], None],
                     ready: asyncio.Event) -> None:
        api = self.client.resource(plural)
        listed = await api.list(NAMESPACE)
        ready.set()
        async for event_type, obj in api.watch(
                NAMESPACE, resource_version=listed["metadata"]["resourceVersion"]):
            if event_type in ("ADDED", "MODIFIED"):
                observe(obj)

    def claim(self, claim: dict[str, Any]) -> None:
        """data-db-N is the claim of the pod db-N."""
        pod = claim["metadata"]["name"].removeprefix("data-")
        annotations = claim["metadata"].get("annotations") or {}
        if "volume.kubernetes.io/selected-node" in annotations:
            self.saw(pod, "selected node")
        if "volume.kubernetes.io/storage-provisioner" in annotations:
            self.saw(pod, "provisioner annotation")
        if (claim.get("status") or {}).get("phase") == "Bound":
            self.saw(pod, "claim Bound")

    def pod(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        self.saw(name, "added")
        if pod["spec"].get("nodeName"):
            self.saw(name, "pod bound")
        if (pod.get("status") or {}).get("phase") == "Running":
            self.saw(name, "Running")

    def steps(self) -> str:
        """Each step's time from the one before, median / p99 over the pods that went
        through every step, in order."""
        spans: dict[str, list[float]] = {step: [] for step in STEPS}
        for times in self.seen.values():
            if not all(step in times for step in ("added", *STEPS)):
                continue
            before = times["added"]
            for step in STEPS:
                spans[step].append(max(0.0, times[step] - before))
                before = max(before, times[step])
        return "; ".join(f"{step} {percentile(values, 50):.2f} / "
                         f"{percentile(values, 99):.2f}"
                         for step, values in spans.items() if values)


def stateful_set(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"replicas": replicas, "serviceName": "db",
                     "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [{
                                      "name": "db", "image": "registry.k8s.io/pause:3.10",
                                      "volumeMounts": [{"name": "data",
                                                        "mountPath": "/data"}],
                                      "resources": {"requests": {"cpu": "1m",
                                                                 "memory": "10Mi"}}}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}]}}


async def bound_claims(client: Client) -> int:
    claims = (await client.resource("persistentvolumeclaims").list(NAMESPACE))["items"]
    return sum((claim.get("status") or {}).get("phase") == "Bound" for claim in claims)


async def measure(args: argparse.Namespace) -> list[Row]:
    if args.quick:
        args.nodes, args.replicas = 2, 5
    with scratch_directory() as scratch:
        tmp = Path(scratch)
        async with (EtcdProcess(tmp / "etcd") as etcd,
                    APIServerProcess([etcd.client_url], tmp / "apiserver.log",
                                     extra_args=("--log-requests=false",)) as api):
            kubeconfig = write_kubeconfig(tmp / "kubeconfig", api.url)
            async with (ControllerManagerProcess(kubeconfig, tmp / "cm.log"),
                        SchedulerProcess(kubeconfig, tmp / "scheduler.log"),
                        ProvisionerProcess(kubeconfig, tmp / "provisioner.log",
                                           nodes_dir=tmp / "nodes"),
                        HollowNodesProcess(kubeconfig, tmp / "hollow.log", count=args.nodes,
                                           start_timeout=120),
                        Client.from_kubeconfig(kubeconfig) as client):
                progress(f"{args.nodes} hollow nodes registering")
                await wait_nodes_ready(client, args.nodes, 300)
                await ensure_default_storage_class(kubeconfig)
                await client.resource("namespaces").create(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
                watch = PodWatch(client)
                watcher = asyncio.create_task(watch.run())
                steps = StepWatch(client)
                stepper = asyncio.create_task(steps.run())
                await watch.listening.wait()
                await steps.listening.wait()
                started = time.perf_counter()
                progress(f"a StatefulSet of {args.replicas}, a claim each")
                await client.resource("statefulsets", "apps").create(
                    stateful_set(args.replicas), NAMESPACE)
                while len(watch.running) < args.replicas:
                    if watcher.done():
                        raise BenchmarkError(f"the pod watch ended: {watcher.exception()!r}")
                    if time.perf_counter() - started > TIMEOUT:
                        raise BenchmarkError(
                            f"only {len(watch.running)} of {args.replicas} pods Running "
                            f"after {TIMEOUT:.0f} s")
                    await asyncio.sleep(0.5)
                wall = time.perf_counter() - started
                bound = await bound_claims(client)
                volumes = len(list((tmp / "nodes").glob("*/local-path-provisioner/*")))
                watcher.cancel()
                stepper.cancel()
    if bound != args.replicas or volumes != args.replicas:
        raise BenchmarkError(f"{bound} claims Bound and {volumes} volume folders for "
                             f"{args.replicas} pods")
    latencies = watch.latencies()
    p99 = percentile(latencies, 99)
    return [
        (f"{args.replicas} pods of a StatefulSet on {args.nodes} hollow nodes, each with "
         "a claim provisioned and bound: all Running", f"{wall:.1f} s", "-", "-"),
        (f"pod startup with storage (watch: ADDED -> Running; {watch.restarts} watch "
         f"restarts), p50 / p90 / p99",
         f"{percentile(latencies, 50):.2f} / {percentile(latencies, 90):.2f} / "
         f"{p99:.2f} s", "p99 <= 5 s", verdict(p99 <= 5)),
        ("... each step from the one before (claim and pod watch), median / p99, s",
         steps.steps(), "-", "-"),
    ]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--replicas", type=int, default=200)


if __name__ == "__main__":
    run_benchmark(__doc__ or "", "storage (a StatefulSet's claims)", "storage.py", measure,
                  add_arguments=add_arguments)
