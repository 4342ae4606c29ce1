"""Benchmark: upstream's density SLO test (ClusterLoader2's density) on our control plane.

Run from the repository root as `.venv/bin/python benchmarks/density.py` (options:
--nodes N (100), --deployments N (30), --replicas N (100), --pods N (instead of
--deployments: as many Deployments of --replicas as make N pods), --qps PODS/s (100),
--list-interval S (2), --timeout S (300: how long after the last Deployment the pods may
take to run; the figures are then of those that did), --quick: a smoke run of 2 x 10
pods on 5 nodes, --no-append). It starts a private etcd, the API server, the
controller-manager, the scheduler and N hollow nodes (simulated kubelets: pods become
Running without containers), each its own user as in a real cluster (--token-auth-file:
system:kube-controller-manager, system:kube-scheduler, system:node:hollow-node-<i> each;
benchmarks/apiserver.py's identities), so that API Priority and Fairness sees each as
upstream's bootstrap FlowSchemas do; the benchmark's own client is an admin
(system:masters: exempt, so its watch and LISTs do not compete with the cluster). Then:

    1. creates the Deployments one after another, paced so that pods are asked for at
       --qps pods/s (a Deployment of 100 every second at 100 pods/s): ClusterLoader2
       paces the objects that own the pods, and its density test holds pod creation
       throughput to a rate;
    2. watches every pod: its startup latency is from the watch's first sight of it
       (ADDED) to the first event that shows it Running, as seen by a client;
    3. reads the API server's own apiserver_request_duration_seconds histograms before
       and after, and takes the 99th percentile of the difference per verb and resource,
       interpolated inside a bucket as Prometheus's histogram_quantile does (what
       ClusterLoader2's APIResponsivenessPrometheus measurement reports);
    4. the CPU each component used during the load, and its memory (RSS) before and after
       the load, per 1,000 pods.

The components only watch once they have listed, so, as a dashboard or a user's
`kubectl get pods` would, a client LISTs pods every --list-interval seconds during the
load, the namespace's and all namespaces' (cluster-scoped) in turn: the LIST figures are
theirs. The API server's histograms do not tell the two scopes apart, so the client's
own timings of each (request to decoded answer) are reported beside them.

Targets, upstream's SLOs: pod startup p99 <= 5 s; mutating API calls (POST, PUT, PATCH,
DELETE) p99 <= 1 s per verb and resource; LIST p99 <= 5 s for namespaced LISTs and 30 s
for cluster-scoped ones (the server's histogram, holding both, is held to 5 s).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import (  # noqa: E402
    BenchmarkError,
    cpu_seconds,
    percentile,
    private_api_server_with_identities,
    progress,
)
from benchmarks.hollow_nodes import (  # noqa: E402
    apf_counts,
    apf_rejections,
    counts_since,
    wait_nodes_ready,
)
from benchmarks.pod_startup import rss_megabytes  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.errors import TooManyRequests  # noqa: E402
from minikube_py.client.rest import Client  # noqa: E402
from minikube_py.cluster.components import (  # noqa: E402
    ControllerManagerProcess,
    HollowNodesProcess,
    SchedulerProcess,
)

NAMESPACE = "density"
MUTATING = ("POST", "PUT", "PATCH", "APPLY", "DELETE")
BUCKET = re.compile(r'^apiserver_request_duration_seconds_bucket\{([^}]*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="([^"]*)"')


def deployment(index: int, replicas: int) -> dict[str, Any]:
    name = f"density-{index}"
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name, "group": "density"}},
                                  "spec": {"containers": [{
                                      "name": "pause", "image": "registry.k8s.io/pause:3.10",
                                      "resources": {"requests": {"cpu": "1m",
                                                                 "memory": "10Mi"}}}]}}}}


def histograms(url: str) -> dict[tuple[str, str], dict[float, float]]:
    """(verb, resource) -> {upper bound: cumulative count}, from the API server's /metrics."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    found: dict[tuple[str, str], dict[float, float]] = {}
    for line in text.splitlines():
        match = BUCKET.match(line)
        if not match:
            continue
        labels = dict(LABEL.findall(match.group(1)))
        resource = labels.get("resource", "")
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        key = (labels.get("verb", ""), resource)
        bound = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
        found.setdefault(key, {})
        found[key][bound] = found[key].get(bound, 0.0) + float(match.group(2))
    return found


def quantile(q: float, buckets: dict[float, float]) -> float:
    """histogram_quantile: the bucket where rank q falls, interpolated linearly inside it
    (the highest finite bound when it falls in +Inf)."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]]
    if total <= 0:
        return 0.0
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (
                count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound


def difference(after: dict[tuple[str, str], dict[float, float]],
               before: dict[tuple[str, str], dict[float, float]]
               ) -> dict[tuple[str, str], dict[float, float]]:
    return {key: {bound: count - before.get(key, {}).get(bound, 0.0)
                  for bound, count in buckets.items()}
            for key, buckets in after.items()}


class PodWatch:
    """First sight and first Running sight of every pod of the namespace."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: dict[str, float] = {}
        self.running: dict[str, float] = {}
        self.listening = asyncio.Event()
        self.restarts = 0
        self.unobserved: set[str] = set()

    async def run(self) -> None:
        pods = self.client.resource("pods")
        while True:  # a watch that falls too far behind ends with an ERROR: list again
            try:
                listed = await pods.list(NAMESPACE)
            except TooManyRequests as error:  # API Priority and Fairness: ask again later
                await asyncio.sleep(error.retry_after or 1.0)
                continue
            for pod in listed["items"]:
                self.observe(pod, restarted=self.listening.is_set())
            self.listening.set()
            async for event_type, pod in pods.watch(
                    NAMESPACE, resource_version=listed["metadata"]["resourceVersion"]):
                if event_type == "ERROR":
                    self.restarts += 1
                    break
                if event_type in ("ADDED", "MODIFIED"):
                    self.observe(pod)

    def observe(self, pod: dict[str, Any], restarted: bool = False) -> None:
        name, now = pod["metadata"]["name"], time.perf_counter()
        if restarted and name not in self.seen:
            self.unobserved.add(name)  # created while the watch was down: no true latency
        self.seen.setdefault(name, now)
        if (pod.get("status") or {}).get("phase") == "Running":
            self.running.setdefault(name, now)

    def latencies(self) -> list[float]:
        return [self.running[name] - self.seen[name] for name in self.running
                if name not in self.unobserved]


class Lister:
    """A dashboard's client: LIST the namespace's pods, then all pods, in turn, each
    --list-interval seconds after the last answer; its own timing of each scope."""

    def __init__(self, client: Client, interval: float) -> None:
        self.client, self.interval = client, interval
        self.seconds: dict[str, list[float]] = {"namespace": [], "cluster": []}
        self.rejected = 0

    async def run(self) -> None:
        pods = self.client.resource("pods")
        while True:
            for scope, namespace in (("namespace", NAMESPACE), ("cluster", None)):
                started = time.perf_counter()
                try:
                    await pods.list(namespace)
                    self.seconds[scope].append(time.perf_counter() - started)
                except TooManyRequests:  # after the client's own retries
                    self.rejected += 1
                await asyncio.sleep(self.interval)


def timings(values: list[float]) -> str:
    if not values:
        return "none"
    return (f"p50 {percentile(values, 50):.2f} s, p99 {percentile(values, 99):.2f} s, "
            f"max {max(values):.2f} s ({len(values)} LISTs)")


async def measure(args: argparse.Namespace) -> list[Row]:
    if args.quick:
        args.nodes, args.deployments, args.replicas, args.pods = 5, 2, 10, None
    if args.pods:
        args.deployments = -(-args.pods // args.replicas)
    total = args.deployments * args.replicas
    async with private_api_server_with_identities(("--log-requests=false",), args.nodes) as (
            tmp, etcd, api, identities):
        configs = identities.kubeconfigs
        async with (ControllerManagerProcess(configs["controller-manager"],
                                             tmp / "cm.log") as manager,
                    SchedulerProcess(configs["scheduler"], tmp / "scheduler.log") as scheduler,
                    HollowNodesProcess(configs["nodes"], tmp / "hollow.log", count=args.nodes,
                                       token_file=identities.node_token_file,
                                       start_timeout=120) as hollow,
                    Client.from_kubeconfig(configs["admin"]) as client):
            progress(f"{args.nodes} hollow nodes registering")
            await wait_nodes_ready(client, args.nodes, 300)
            await client.resource("namespaces").create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
            watch = PodWatch(client)
            watcher = asyncio.create_task(watch.run())
            await watch.listening.wait()
            pids = {name: pid for name, pid in (
                ("etcd", etcd.pid), ("apiserver", api.pid), ("controller-manager", manager.pid),
                ("scheduler", scheduler.pid), ("hollow nodes", hollow.pid)) if pid}
            cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            rss_before = {name: rss_megabytes(pid) for name, pid in pids.items()}
            metrics_before = histograms(api.url)
            rejected_before = apf_rejections(api.url)
            served_before = apf_counts(api.url, "dispatched")
            started = time.perf_counter()
            lister = Lister(client, args.list_interval)
            listing = asyncio.create_task(lister.run())
            deployments = client.resource("deployments", "apps")
            progress(f"{args.deployments} Deployments of {args.replicas}, "
                     f"paced at {args.qps} pods/s")
            for index in range(args.deployments):
                await deployments.create(deployment(index, args.replicas), NAMESPACE)
                due = started + (index + 1) * args.replicas / args.qps
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
            created, reported = time.perf_counter(), time.perf_counter()
            while len(watch.running) < total:
                if watcher.done():
                    raise BenchmarkError(f"the pod watch ended: {watcher.exception()!r}")
                if time.perf_counter() - created > args.timeout:
                    break  # the figures of the pods that ran still say where it stalls
                if time.perf_counter() - reported >= 30:
                    reported = time.perf_counter()
                    progress(f"{len(watch.seen)} pods seen, {len(watch.running)} Running")
                await asyncio.sleep(0.5)
            wall = time.perf_counter() - started
            metrics_after = histograms(api.url)
            rejected = counts_since(apf_rejections(api.url), rejected_before)
            served = counts_since(apf_counts(api.url, "dispatched"), served_before)
            cpu = {name: cpu_seconds(pids[name]) - before for name, before in cpu_before.items()}
            rss_after = {name: rss_megabytes(pid) for name, pid in pids.items()}
            watcher.cancel()
            listing.cancel()
    latencies = watch.latencies()
    delta = difference(metrics_after, metrics_before)
    mutating = {key: quantile(0.99, b) for key, b in delta.items()
                if key[0] in MUTATING and max(b.values()) > 0}
    lists = {key: quantile(0.99, b) for key, b in delta.items()
             if key[0] == "LIST" and max(b.values()) > 0}
    worst_mutating = max(mutating.items(), key=lambda item: item[1])
    worst_list = max(lists.items(), key=lambda item: item[1])
    p99 = percentile(latencies, 99)
    running = len(watch.running)
    if not running:
        raise BenchmarkError(f"no pod Running {args.timeout:.0f} s after the last Deployment")
    rows: list[Row] = [
        (f"{total} pods ({args.deployments} x {args.replicas}) on {args.nodes} hollow nodes, "
         f"paced {args.qps} pods/s: all Running", f"{wall:.1f} s", "-", "-")
        if running >= total else
        (f"{total} pods ({args.deployments} x {args.replicas}) on {args.nodes} hollow nodes, "
         f"paced {args.qps} pods/s: Running {args.timeout:.0f} s after the last Deployment",
         f"{running} of {total} ({wall:.1f} s); the figures below are of those",
         "all", "FAIL"),
        (f"pod startup (watch: ADDED -> Running; {watch.restarts} watch restarts, "
         f"{len(watch.unobserved)} pods not seen from creation), p50 / p90 / p99",
         f"{percentile(latencies, 50):.2f} / {percentile(latencies, 90):.2f} / "
         f"{p99:.2f} s", "p99 <= 5 s", verdict(p99 <= 5)),
        (f"mutating API calls p99, worst ({worst_mutating[0][0]} {worst_mutating[0][1]})",
         f"{worst_mutating[1] * 1000:.0f} ms", "<= 1 s", verdict(worst_mutating[1] <= 1)),
        ("... every mutating verb and resource", ", ".join(
            f"{verb} {resource} {value * 1000:.0f} ms"
            for (verb, resource), value in sorted(mutating.items())), "", ""),
        (f"LIST p99, worst ({worst_list[0][1]})", f"{worst_list[1] * 1000:.0f} ms",
         "<= 5 s", verdict(worst_list[1] <= 5)),
        ("... LIST pods of the namespace, as the client timed it",
         timings(lister.seconds["namespace"]), "p99 <= 5 s",
         verdict(percentile(lister.seconds["namespace"] or [0.0], 99) <= 5)),
        ("... LIST pods of all namespaces (cluster-scoped), as the client timed it",
         timings(lister.seconds["cluster"]), "p99 <= 30 s",
         verdict(percentile(lister.seconds["cluster"] or [0.0], 99) <= 30)),
        ("429s from API Priority and Fairness during the load, by priority level",
         f"{rejected} ({lister.rejected} of the client's LISTs failed with 429 after its "
         "retries)", "", ""),
        ("requests served during the load, by priority level", served, "", ""),
        ("CPU during the load (% of one core)", ", ".join(
            f"{name} {100 * seconds / wall:.0f}%" for name, seconds in cpu.items()), "", ""),
        ("CPU per pod Running", ", ".join(
            f"{name} {1000 * seconds / running:.1f} ms" for name, seconds in cpu.items()),
         "", ""),
        ("memory (RSS) after the load (MB), and its growth per 1,000 pods", ", ".join(
            f"{name} {rss_after[name]:.0f} (+{1000 * (rss_after[name] - before) / total:.1f})"
            for name, before in rss_before.items()), "", ""),
    ]
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--deployments", type=int, default=30)
    parser.add_argument("--replicas", type=int, default=100)
    parser.add_argument("--pods", type=int, default=None,
                        help="pods in all (instead of --deployments)")
    parser.add_argument("--qps", type=float, default=100.0, help="pods asked for per second")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds after the last Deployment to wait for every pod")
    parser.add_argument("--list-interval", type=float, default=2.0,
                        help="seconds between the client's LISTs of pods")


if __name__ == "__main__":
    run_benchmark(__doc__ or "", "density (ClusterLoader2's SLOs)", "density.py", measure,
                  add_arguments=add_arguments)
