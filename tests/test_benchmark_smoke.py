"""Smoke test of the API server benchmark: a --quick run finishes and prints every metric.

It checks that benchmarks/apiserver.py still works end to end (etcd, API server, every
phase), never how fast anything is: the figures depend on the machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARK = REPO / "benchmarks" / "apiserver.py"
RESULTS = REPO / "benchmarks" / "RESULTS.md"

QuickRun = tuple[subprocess.CompletedProcess[str], bytes | None, bytes | None]

# (text that starts a metric line, whether the line carries a target and its PASS/FAIL)
METRICS = [
    ("raw etcd create Txn/s", False),
    ("API creates/s", True),
    ("API GETs/s", True),
    ("LIST 300 pods (full, consistent: the watch cache once fresh)", True),
    ("LIST 300 pods (resourceVersion=0, watch cache)", False),
    ("LIST 300 pods (500-item pages)", False),
    ("watch latency, 10 watchers x 100 creates (paced 200/s)", True),
    ("watch latency, 10 watchers x 100 creates (unpaced", False),
    ("encode 300-pod list: orjson vs json", False),
    ("decode 300 pods one by one: orjson vs json", False),
    ("TLS + client certificates + Node,RBAC vs plain HTTP: API creates/s", True),
    ("TLS + client certificates + Node,RBAC vs plain HTTP: API GETs/s", True),
    ("tracing on vs off: API creates/s", True),
    ("API Priority and Fairness on vs off: API creates/s", True),
    ("API Priority and Fairness on vs off: API GETs/s", True),
]


@pytest.fixture(scope="module")
def quick_run() -> QuickRun:
    """One `--quick --no-append` run, with RESULTS.md as it was before and after."""
    before = RESULTS.read_bytes() if RESULTS.exists() else None
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick", "--no-append"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    after = RESULTS.read_bytes() if RESULTS.exists() else None
    return result, before, after


@pytest.mark.slow
def test_quick_run_exits_zero(quick_run: QuickRun) -> None:
    result, _, _ = quick_run
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"


@pytest.mark.slow
@pytest.mark.parametrize(("metric", "has_target"), METRICS)
def test_quick_run_prints_metric_line(quick_run: QuickRun, metric: str, has_target: bool
                                      ) -> None:
    result, _, _ = quick_run
    lines = [line for line in result.stdout.splitlines() if line.startswith(metric)]
    assert len(lines) == 1, f"no line for {metric!r} in:\n{result.stdout}\n{result.stderr}"
    line = lines[0]
    assert any(char.isdigit() for char in line[len(metric):]), line
    verdict = any(f" {word} " in f"{line} " for word in ("PASS", "FAIL"))
    assert verdict == has_target, line


@pytest.mark.slow
def test_quick_run_with_no_append_leaves_results_file_alone(quick_run: QuickRun) -> None:
    _, before, after = quick_run
    assert after == before


@pytest.mark.slow
def test_controllers_benchmark_quick_run_reports_every_phase() -> None:
    """benchmarks/controllers.py still runs end to end (figures are not judged here)."""
    output = run_quick("controllers.py", timeout=300)
    for metric in ("baseline: API creates of 50 pods",
                   "Deployment of 50 replicas: until 50 pods exist",
                   "scale 50 -> 150: until they exist",
                   "idle controller-manager holding 200 pods"):
        assert metric in output, f"no line for {metric!r} in:\n{output}"


@pytest.mark.slow
def test_component_stop_benchmark_quick_run_reports_every_component() -> None:
    """benchmarks/component_stop.py still runs end to end (figures are not judged here)."""
    output = run_quick("component_stop.py", timeout=300)
    for metric in ("baseline: a bare python process", "controller-manager: SIGTERM to exit",
                   "scheduler: SIGTERM to exit", "kubelet (hollow): SIGTERM to exit",
                   "dns: SIGTERM to exit", "apiserver (second): SIGTERM to exit"):
        assert metric in output, f"no line for {metric!r} in:\n{output}"


@pytest.mark.slow
def test_scheduler_benchmark_quick_run_reports_every_phase() -> None:
    """benchmarks/scheduler.py still runs end to end (figures are not judged here)."""
    output = run_quick("scheduler.py", timeout=600)
    for metric in ("end to end: 100 pods with requests, 50 nodes",
                   "end to end: 33 pods with PodTopologySpread + InterPodAffinity",
                   "end to end: 33 pods with PodTopologySpread alone",
                   "end to end: 33 pods with a preferred InterPodAffinity term alone",
                   "end to end: 33 pods with requests under mixed churn",
                   "algorithm alone, 50 nodes, requests only",
                   "algorithm alone, 50 nodes, spread + affinity",
                   "end to end: 50 pods with requests, 25 nodes",
                   "scheduler CPU per pod, 25 -> 50 nodes: end to end, SchedulingBasic",
                   "scheduler CPU per pod, 25 -> 50 nodes: end to end, mixed churn",
                   "scheduler CPU per pod, 25 -> 50 nodes: algorithm alone, spread + affinity"):
        assert metric in output, f"no line for {metric!r} in:\n{output}"

def run_quick(script: str, *args: str, timeout: float) -> str:
    """Run a benchmark with --quick --no-append; its stdout (the results file untouched)."""
    before = RESULTS.read_bytes() if RESULTS.exists() else None
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), "--quick", "--no-append", *args],
        capture_output=True, text=True, timeout=timeout, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (RESULTS.read_bytes() if RESULTS.exists() else None) == before
    return result.stdout


@pytest.mark.slow
def test_pod_startup_benchmark_quick_run_reports_every_phase() -> None:
    """benchmarks/pod_startup.py still runs end to end on a real containerd node."""
    output = run_quick("pod_startup.py", "--pods", "4", timeout=600)
    for metric in ("runtime floor: 4 pods at once over CRI (T_raw)",
                   "one pod on an idle node: create -> Running",
                   "4 pods at once: create -> Running p99",
                   "idle kubelet with 4 pods: RSS"):
        assert metric in output, f"no line for {metric!r} in:\n{output}"


@pytest.mark.slow
def test_hollow_nodes_benchmark_quick_run_reports_every_phase() -> None:
    """benchmarks/hollow_nodes.py still runs end to end (fewer nodes than the real run)."""
    output = run_quick("hollow_nodes.py", "--nodes", "10", "--pods", "20", timeout=600)
    for metric in ("10 hollow nodes in one process: all Ready",
                   "oldest Lease renewal seen over 5 s",
                   "time from one renewal of a Lease to its next",
                   "renewals missed (the next more than 20 s after the last)",
                   "20 pods on hollow nodes: create -> all Running"):
        assert metric in output, f"no line for {metric!r} in:\n{output}"


@pytest.mark.slow
def test_autoscaler_benchmark_quick_run_reports_every_target() -> None:
    """benchmarks/autoscaler.py still runs end to end (50 pods, a 2 s unneeded time)."""
    output = run_quick("autoscaler.py", timeout=600)
    for metric in ("50 pending pods (100m, 40 per 4-core node): create -> all Running",
                   "scale-up decisions (",
                   "emptied group (every pod gone) back to MIN (1 node of "):
        assert metric in output, f"no line for {metric!r} in:\n{output}"


@pytest.mark.slow
def test_dns_benchmark_quick_run_reports_every_phase() -> None:
    """benchmarks/dns.py still runs end to end (DNS server, echo floor, paced phase)."""
    output = run_quick("dns.py", timeout=300)
    for metric in ("UDP echo floor, answers/s",
                   "cached A queries/s, 1000 Services",
                   "latency at a paced 1,000 queries/s"):
        assert metric in output, f"no line for {metric!r} in:\n{output}"


@pytest.mark.slow
def test_cluster_up_benchmark_quick_run_reports_cold_and_warm() -> None:
    """benchmarks/cluster_up.py still runs end to end (one cold and one warm `up` of one
    node), in the processes layout: its cold `up` takes about 15 s less than the default's,
    which the benchmark itself times."""
    output = run_quick("cluster_up.py", "--layout", "processes", timeout=600)
    for metric in ("cold `up --nodes 1 --layout processes` (images built) -> all Ready",
                   "warm `up --nodes 1 --layout processes` -> all Ready, median of 1"):
        assert metric in output, f"no line for {metric!r} in:\n{output}"


@pytest.mark.slow
def test_streaming_benchmark_quick_run_reports_every_metric() -> None:
    """benchmarks/streaming.py still runs end to end (2 MB, one run)."""
    output = run_quick("streaming.py", timeout=600)
    for metric in ("direct TCP to the pod IP", "`kubectl port-forward` (SPDY in a WebSocket)",
                   "pods/portforward (WebSocket v4", "kubelet CPU per MB through kubectl",
                   "`kubectl exec POD -- true`"):
        assert metric in output, f"no line for {metric!r} in:\n{output}"


@pytest.mark.slow
def test_density_benchmark_quick_run_reports_every_slo() -> None:
    """benchmarks/density.py still runs end to end (2 x 10 pods on 5 hollow nodes)."""
    output = run_quick("density.py", timeout=600)
    for metric in ("pod startup (watch: ADDED -> Running", "mutating API calls p99, worst",
                   "LIST p99, worst", "... LIST pods of all namespaces (cluster-scoped)",
                   "CPU during the load", "CPU per pod Running",
                   "memory (RSS) after the load (MB), and its growth per 1,000 pods"):
        assert metric in output, f"no line for {metric!r} in:\n{output}"


@pytest.mark.slow
def test_overload_benchmark_quick_run_reports_every_target() -> None:
    """benchmarks/overload.py still runs end to end, APF on and off (a 4 s flood on 5
    hollow nodes): each of issue 34's targets has its row and a verdict."""
    output = run_quick("overload.py", timeout=900)
    for mode in ("APF on", "APF off"):
        for metric in ("flood offered", "leader-election leases lost", "nodes NotReady in",
                       "lease renewals (PUT leases", "scheduler binds (POST pods/binding)",
                       "flooder's answers", "API server RSS peak during the flood"):
            lines = [line for line in output.splitlines()
                     if line.startswith(f"| {mode}: {metric}")]
            assert len(lines) == 1, f"no line for {mode}: {metric!r} in:\n{output}"
            assert lines[0].rstrip().endswith(("| PASS |", "| FAIL |")), lines[0]


@pytest.mark.slow
def test_storage_benchmark_quick_run_reports_the_pod_startup_slo() -> None:
    """benchmarks/storage.py still runs end to end (a StatefulSet of 5 with a claim
    each on 2 hollow nodes; it fails unless every claim is Bound and has its folder)."""
    output = run_quick("storage.py", timeout=600)
    lines = [line for line in output.splitlines()
             if "pod startup with storage (watch: ADDED -> Running" in line]
    assert len(lines) == 1, output
    assert " PASS |" in lines[0] or " FAIL |" in lines[0], lines[0]


@pytest.mark.slow
def test_mkctl_benchmark_quick_run_reports_every_comparison() -> None:
    """benchmarks/mkctl.py still runs end to end (5 pods, 1 run of each command)."""
    output = run_quick("mkctl.py", timeout=600)
    for metric in ("`get pods`, 5 pods, plain HTTP: mkctl vs kubectl",
                   "`get pods`, 5 pods, TLS + client certificate: mkctl vs kubectl",
                   "`get pods -o yaml`, 5 pods, TLS", "`describe pod` (a pod with 3 Events)",
                   "cold discovery cache",
                   "no bytecode cache", "`python -c pass`"):
        assert metric in output, f"no line for {metric!r} in:\n{output}"


@pytest.mark.slow
@pytest.mark.skipif(not any((parent / "shared/data/crds/prometheus-operator").is_dir()
                            for parent in REPO.parents),
                    reason="no shared/data/crds/prometheus-operator above the repository")
def test_crd_benchmark_quick_run_reports_both_targets() -> None:
    """benchmarks/crd.py still runs end to end: it checks that the CEL rules refuse an
    invalid custom resource before it measures (figures are not judged here)."""
    output = run_quick("crd.py", timeout=600)
    for metric in ("custom resource creates/s (50-field schema, 5 CEL rules) vs ConfigMaps",
                   "server-side apply of the 10 prometheus-operator CRDs"):
        lines = [line for line in output.splitlines() if metric in line]
        assert len(lines) == 1, f"no line for {metric!r} in:\n{output}"
        assert " PASS |" in lines[0] or " FAIL |" in lines[0], lines[0]


@pytest.mark.slow
def test_consistent_list_benchmark_quick_run_compares_etcd_and_the_cache() -> None:
    output = run_quick("consistent_list.py", timeout=300)
    for count in ("100", "300"):
        for what in ("full LIST, gate off (etcd)", "full LIST, gate on (watch cache)",
                     "first page, limit=500, gate off (etcd)",
                     "first page, limit=500, gate on (watch cache)",
                     "every page, limit=500 (as kubectl get), gate on (watch cache)",
                     "the freshness check alone"):
            assert f"| {count} pods, {what}" in output, output


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("nft"),
                    reason="network namespaces need root, and the enforcer nft")
def test_netpol_benchmark_quick_run_reports_every_target() -> None:
    """benchmarks/netpol.py still runs end to end (20 policies, 1 trial): a real API
    server, the enforcer and a node namespace with a client and a server pod."""
    output = run_quick("netpol.py", timeout=600)
    for metric in ("create -> enforced, 20 policies over 200 pods",
                   "delete -> revoked (connections open again)",
                   "new-connection latency the enforcement adds",
                   "full re-sync (compile every policy",
                   "allowed connections failed during policy churn"):
        lines = [line for line in output.splitlines() if metric in line]
        assert len(lines) == 1, f"no line for {metric!r} in:\n{output}"
        assert " PASS |" in lines[0] or " FAIL |" in lines[0], lines[0]


def netpol_namespaces(base: str) -> list[str]:
    """The network namespaces named after the netpol benchmark's BASE."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            check=True).stdout
    return [line.split()[0] for line in listed.splitlines()
            if line.startswith(f"{base}-")]


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_netpol_benchmark_deletes_every_namespace_it_made_when_setup_fails_midway() -> None:
    from benchmarks import netpol

    # a stale namespace of the name the third pod needs: its `ip netns add` fails after
    # the node, client and server namespaces are made
    subprocess.run(["ip", "netns", "add", f"{netpol.BASE}-plain"], check=True)
    try:
        with pytest.raises(subprocess.CalledProcessError), netpol.node_network():
            pass

        assert netpol_namespaces(netpol.BASE) == []
    finally:
        for name in netpol_namespaces(netpol.BASE):
            subprocess.run(["ip", "netns", "del", name], check=False)


@pytest.mark.slow
def test_dashboard_benchmark_quick_run_reports_every_target() -> None:
    """benchmarks/dashboard.py still runs end to end (5 hollow nodes, 50 pods, the page
    in Debian's chromium, a stream of pod changes, three tabs on one watch)."""
    output = run_quick("dashboard.py", timeout=600)
    for metric in ("first paint of the cluster view, 50 pods on 5 hollow nodes",
                   "dashboard CPU, idle with a tab open",
                   "dashboard RSS with 50 pods",
                   "frame interval, page changing with the pods, 2 s",
                   "long tasks (>= 50 ms), page changing",
                   "a change sent -> drawn, 12 sampled of 60 at 30/s",
                   "API server WATCH requests on pods, 3 tabs open | 1 | 1 | PASS"):
        assert metric in output, f"no line for {metric!r} in:\n{output}"
