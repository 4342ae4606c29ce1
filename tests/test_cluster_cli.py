"""`minikube-py up / status / down` as a new user runs them: real processes, real kubectl."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minikube_py.cluster.node import node_config

pytestmark = pytest.mark.slow


def launcher(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikube_py.cluster", *args], capture_output=True, text=True,
        timeout=120, check=check, env={**os.environ, "MINIKUBE_PY_HOME": str(home)})


def pids(home: Path) -> list[int]:
    return [int(f.read_text()) for f in (home / "run").glob("*.pid")] if (
        home / "run").exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(
        f"/proc/{pid}/status").read_text().lower()


def kubectl(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = Path(sys.executable).with_name("kubectl")
    return subprocess.run([str(command), f"--kubeconfig={home / 'kubeconfig'}", *args],
                          capture_output=True, text=True, timeout=90, check=True)


def leftovers(home: Path) -> list[str]:
    """Processes, mounts, the bridge and the proxy's iptables rules of the cluster in
    `home`, if any survived."""
    marker = str(home)
    found = [line for line in Path("/proc/self/mountinfo").read_text().splitlines()
             if marker in line]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(f"process {entry.name}")
            except OSError:
                continue
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    nat = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True).stdout
    routes = subprocess.run(["ip", "route", "show", "table", "local"], capture_output=True,
                            text=True).stdout
    return (found + [line for line in links.splitlines() if bridge_of(home) in line]
            + [line for line in nat.splitlines() if "KUBE-" in line]
            + [line for line in routes.splitlines() if "172.18.255." in line])


def bridge_of(home: Path) -> str:
    return node_config(home, "10.244.1.0/24").bridge_name


def test_up_starts_every_component_and_down_purge_leaves_nothing(fast_tmp: Path) -> None:
    home = fast_tmp / "launcher-home"
    try:
        started = launcher(home, "up")
        assert f"export KUBECONFIG={home / 'kubeconfig'}" in started.stdout
        again = launcher(home, "up")  # idempotent: nothing is started twice
        assert again.returncode == 0
        running = pids(home)
        assert len(running) == 10 and all(alive(pid) for pid in running)  # with the supervisor
        kubectl(home, "wait", "--for=condition=Ready", "node/node-1", "--timeout=60s")
        status = launcher(home, "status")
        for component in ("registry", "etcd", "apiserver", "controller-manager", "scheduler",
                          "containerd", "kubelet", "proxy", "dns"):
            assert re.search(rf"^{component}: running \(pid \d+\), ready$", status.stdout,
                             re.M), status.stdout
        assert "nodes: 1\n  node-1: Ready, 0 pods" in status.stdout
        kubelet_log = launcher(home, "logs", "kubelet", "--node", "node-1")
        written = (home / "logs" / "kubelet.log").read_text()
        assert kubelet_log.stdout and written.startswith(kubelet_log.stdout)
        unknown = launcher(home, "logs", "kubelet-x", check=False)
        assert unknown.returncode == 1 and "no component named 'kubelet-x'" in unknown.stderr
        on_host = launcher(home, "logs", "apiserver", "--node", "node-1", check=False)
        assert on_host.returncode == 1 and "runs on the host" in on_host.stderr
        # a component that dies is started again by the supervisor
        assert "supervisor: running" in status.stdout
        crashed = int((home / "run" / "scheduler.pid").read_text())
        os.kill(crashed, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            again = launcher(home, "status", check=False).stdout
            restarted = re.search(r"^scheduler: running \(pid (\d+)\), ready$", again, re.M)
            if restarted and int(restarted.group(1)) != crashed:
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the scheduler was not restarted: {again}")
        assert "scheduler is running again" in (home / "logs" / "supervisor.log").read_text()
        assert "kube-system" in kubectl(home, "get", "namespaces").stdout
        # a new user's first pod: scheduled onto the node, started by its kubelet
        kubectl(home, "wait", "--for=condition=Ready", "node/node-1", "--timeout=60s")
        kubectl(home, "run", "web", "--image=localhost/echo:1.0", "--port=8080")
        kubectl(home, "wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
        pod_ip = kubectl(home, "get", "pod", "web", "-o", "jsonpath={.status.podIP}").stdout
        answer = subprocess.run(["busybox", "wget", "-q", "-O-", f"http://{pod_ip}:8080/"],
                                capture_output=True, text=True, timeout=10)
        assert "web" in answer.stdout
        # a tutorial's image name: pulled from the cluster's registry
        kubectl(home, "create", "deployment", "nginx", "--image=nginx:1.14.2")
        kubectl(home, "wait", "--for=condition=Available", "deployment/nginx",
                "--timeout=60s")
        nginx_ip = kubectl(home, "get", "pods", "-l", "app=nginx", "-o",
                           "jsonpath={.items[0].status.podIP}").stdout
        page = subprocess.run(["busybox", "wget", "-q", "-O-", f"http://{nginx_ip}/"],
                              capture_output=True, text=True, timeout=10)
        assert "Welcome to nginx!" in page.stdout
        # the Service by name, from a pod: cluster DNS at 10.96.0.10, then the proxy's rules
        kubectl(home, "expose", "deployment", "nginx", "--port=80")
        kubectl(home, "run", "client", "--image=busybox:1.36", "--restart=Never", "--",
                "wget", "-qO-", "http://nginx")
        kubectl(home, "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/client",
                "--timeout=60s")
        assert "Welcome to nginx!" in kubectl(home, "logs", "client").stdout
        assert "KUBE-SVC-" in subprocess.run(["iptables-save", "-t", "nat"],
                                             capture_output=True, text=True).stdout
        # a LoadBalancer Service gets an address that answers from this machine
        kubectl(home, "expose", "deployment", "nginx", "--type=LoadBalancer", "--name=lb",
                "--port=8000", "--target-port=80")
        kubectl(home, "wait", "--for=jsonpath={.status.loadBalancer.ingress[0].ip}",
                "service/lb", "--timeout=30s")
        address = kubectl(home, "get", "service", "lb", "-o",
                          "jsonpath={.status.loadBalancer.ingress[0].ip}").stdout
        assert address.startswith("172.18.255.")
        page = subprocess.run(["busybox", "wget", "-q", "-O-", f"http://{address}:8000/"],
                              capture_output=True, text=True, timeout=10)
        assert "Welcome to nginx!" in page.stdout
    finally:
        running = pids(home)
        launcher(home, "down", "--purge", check=False)
    assert not home.exists()
    assert not any(alive(pid) for pid in running)
    assert leftovers(home) == []
    stopped = launcher(home, "status", check=False)
    assert stopped.returncode == 1 and "controller-manager: stopped" in stopped.stdout
    nothing = launcher(home, "down")  # down on nothing: says so, exits 0
    assert "no cluster to stop" in nothing.stdout


def test_simulated_nodes_join_the_real_one_and_leave_with_down(fast_tmp: Path) -> None:
    home = fast_tmp / "launcher-hollow"
    try:
        launcher(home, "up", "--simulated-nodes", "3")
        for node in ("node-1", "hollow-node-0", "hollow-node-1", "hollow-node-2"):
            kubectl(home, "wait", "--for=condition=Ready", f"node/{node}", "--timeout=60s")
        status = launcher(home, "status")
        assert re.search(r"^hollow-nodes: running \(pid \d+\), ready$", status.stdout, re.M)
        assert "nodes: 4" in status.stdout
        again = launcher(home, "up")  # remembered: the same hollow nodes, nothing new
        assert again.returncode == 0
        assert "hollow-nodes: running" in launcher(home, "status").stdout
        refused = launcher(home, "up", "--simulated-nodes", "-1", check=False)
        assert refused.returncode == 1 and "--simulated-nodes must be 0 or more" in (
            refused.stderr)
    finally:
        running = pids(home)
        launcher(home, "down", "--purge", check=False)
    assert not any(alive(pid) for pid in running)
    assert leftovers(home) == []
