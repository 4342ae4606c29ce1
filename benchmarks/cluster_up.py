"""Benchmark: how long `minikube-py up --nodes 2` takes until every node is Ready.

Run from the repository root as root: `.venv/bin/python benchmarks/cluster_up.py`
(options: --nodes N (2), --runs N (3), --layout kubeadm|processes (kubeadm, `up`'s
default), --quick: a smoke run of one node and one warm run, --no-append). It uses a
scratch MINIKUBE_PY_HOME, so it leaves a cluster of yours alone, but it builds the node
network (mk-br0, mk-node-N): do not run it beside another cluster of this machine.

A cold `up` (a new home: the images are built) is timed once; then each warm run is
`down` (the data kept) and `up` again, timed from the command's start until the API
server lists N nodes Ready (with --layout kubeadm, `up` itself waits until every
kube-system pod runs too: the static pods, kube-proxy, DNS). Target: a warm
`up --nodes 2` in at most 15 s.

--compose times docker-compose.yml instead, on the Docker engine that runs (start dockerd
first; see README.md, "With Docker", for the base image): the image is built first, not
timed; a cold `docker-compose up -d` (new volumes: a new CA, an empty etcd), then each
warm run is `docker-compose down` (the volumes kept) and `up -d` again, timed until every
node (the control-plane node and both workers) is Ready with a heartbeat from after the
command's start (etcd keeps the last run's Ready). The project is mkpy-compose-bench,
ended with `down -v`; where Docker cannot make privileged containers,
compose/unprivileged-nodes.yml is added, as the test does.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.apiserver import BenchmarkError, progress  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.client.kubeconfig import KubeconfigError, load_kubeconfig  # noqa: E402
from minikube_py.cluster.compose import host_cas_in_build_context  # noqa: E402

TARGET_SECONDS = 15.0


def launcher(home: Path, *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "minikube_py.cluster", *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MINIKUBE_PY_HOME": str(home)})
    if done.returncode != 0:
        raise BenchmarkError(f"minikube-py {' '.join(args)} failed: {done.stderr.strip()}")


def ready_nodes(home: Path, kubeconfig: Path | None = None, since: str = "") -> int:
    """How many nodes are Ready, asked as the admin (the kubeconfig `up` writes, or
    `kubeconfig`); with `since` (RFC 3339), only those whose Ready heartbeat is not older."""
    try:
        config = load_kubeconfig(kubeconfig or home / "kubeconfig")
        with urllib.request.urlopen(f"{config.server}/api/v1/nodes", timeout=2,
                                    context=config.tls_context()) as answer:
            nodes: list[dict[str, Any]] = json.loads(answer.read())["items"]
    except (OSError, KubeconfigError, ValueError):
        return 0
    return sum(any(c["type"] == "Ready" and c["status"] == "True"
                   and c.get("lastHeartbeatTime", "") >= since
                   for c in n.get("status", {}).get("conditions", [])) for n in nodes)


def timed_up(home: Path, nodes: int, layout: str) -> float:
    """Seconds from `up` to N nodes Ready (N + 1 with the control-plane node)."""
    started = time.perf_counter()
    launcher(home, "up", "--nodes", str(nodes), "--layout", layout)
    nodes += layout == "kubeadm"
    while ready_nodes(home) < nodes:
        if time.perf_counter() - started > 120:
            raise BenchmarkError(f"{nodes} nodes were not Ready within 120 s")
        time.sleep(0.05)
    return time.perf_counter() - started


COMPOSE_PROJECT = "mkpy-compose-bench"
COMPOSE_KUBECONFIG = REPO / "compose" / "kubeconfig" / "admin.conf"
COMPOSE_NODES = 3
"""The control-plane node and the two workers."""


def privileged_possible() -> bool:
    """Whether this host's capability bounding set has every capability its kernel knows
    (which Docker gives a privileged container)."""
    status = Path("/proc/self/status").read_text()
    bounding = int(next(line.split()[1] for line in status.splitlines()
                        if line.startswith("CapBnd:")), 16)
    every = (1 << (int(Path("/proc/sys/kernel/cap_last_cap").read_text()) + 1)) - 1
    return bounding & every == every


def compose(*args: str, timeout: float = 900, project: str = COMPOSE_PROJECT) -> None:
    files = ["docker-compose.yml"] + ([] if privileged_possible()
                                      else ["compose/unprivileged-nodes.yml"])
    done = subprocess.run(["docker-compose", "-p", project,
                           *(flag for file in files for flag in ("-f", file)), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)
    if done.returncode != 0:
        raise BenchmarkError(f"docker-compose {' '.join(args)} failed: "
                             f"{done.stderr.strip()[-500:]}")


def timed_compose_up(project: str = COMPOSE_PROJECT) -> float:
    """Seconds from `docker-compose up -d` to every node Ready (the control-plane node and
    both workers), heartbeats since then (tests/test_compose_up.py times its cold and
    warm `up` with this too)."""
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    started = time.perf_counter()
    compose("up", "-d", project=project)
    while ready_nodes(REPO, COMPOSE_KUBECONFIG, since) < COMPOSE_NODES:
        if time.perf_counter() - started > 300:
            raise BenchmarkError(f"{COMPOSE_NODES} nodes were not Ready within 300 s")
        time.sleep(0.1)
    return time.perf_counter() - started


def measure_compose(runs: int) -> list[Row]:
    """A cold and `runs` warm `docker-compose up -d`, the image built first."""
    if subprocess.run(["docker", "version"], capture_output=True).returncode != 0:
        raise BenchmarkError("no Docker engine answers: start dockerd first")
    with host_cas_in_build_context():
        compose("build", timeout=1800)
    COMPOSE_KUBECONFIG.unlink(missing_ok=True)
    try:
        cold = timed_compose_up()
        progress(f"cold docker-compose up: {cold:.1f} s")
        warm = []
        for run in range(runs):
            compose("down")
            warm.append(timed_compose_up())
            progress(f"warm docker-compose up {run + 1}: {warm[-1]:.1f} s")
    finally:
        compose("down", "-v")
        COMPOSE_KUBECONFIG.unlink(missing_ok=True)
    return [
        ("cold `docker-compose up -d` (new volumes) -> 3 nodes Ready", f"{cold:.1f} s",
         "(none)", "-"),
        (f"warm `docker-compose up -d` -> 3 nodes Ready, median of {runs}",
         f"{statistics.median(warm):.1f} s ({', '.join(f'{w:.1f}' for w in warm)})",
         "(none)", "-"),
    ]


async def measure(args: Any) -> list[Row]:
    if args.compose:
        return measure_compose(1 if args.quick else args.runs)
    if os.geteuid() != 0:
        raise BenchmarkError("run it as root: the nodes are network namespaces")
    runs = 1 if args.quick else args.runs
    nodes = 1 if args.quick else args.nodes
    with tempfile.TemporaryDirectory(prefix="mkpy-bench-up-") as scratch:
        home = Path(scratch) / "home"
        try:
            cold = timed_up(home, nodes, args.layout)
            progress(f"cold up: {cold:.1f} s")
            warm = []
            for run in range(runs):
                launcher(home, "down")
                warm.append(timed_up(home, nodes, args.layout))
                progress(f"warm up {run + 1}: {warm[-1]:.1f} s")
        finally:
            launcher(home, "down", "--purge")
    median = statistics.median(warm)
    command = f"`up --nodes {nodes} --layout {args.layout}`"
    return [
        (f"cold {command} (images built) -> all Ready", f"{cold:.1f} s", "(none)", "-"),
        (f"warm {command} -> all Ready, median of {runs}",
         f"{median:.1f} s ({', '.join(f'{w:.1f}' for w in warm)})",
         f"<= {TARGET_SECONDS:.0f} s", verdict(median <= TARGET_SECONDS)),
    ]


def add_arguments(parser: Any) -> None:
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--layout", choices=("kubeadm", "processes"), default="kubeadm",
                        help="the cluster's layout (default: kubeadm, as `up` builds it)")
    parser.add_argument("--compose", action="store_true",
                        help="time docker-compose.yml's stack instead (a Docker engine runs)")


if __name__ == "__main__":
    run_benchmark(__doc__ or "", "cluster up", "cluster_up.py", measure,
                  add_arguments=add_arguments)
