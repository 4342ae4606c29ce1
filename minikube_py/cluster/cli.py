"""`minikube-py up | down | status`: a local cluster on this machine.

The cluster is etcd, the API server, the controller-manager, the scheduler and one node
(containerd and a kubelet, see node.py; it needs root). State lives in ~/.minikube-py
(or $MINIKUBE_PY_HOME):

    etcd/            etcd's data directory
    logs/*.log       one log per component
    run/*.pid        the running components
    nodes/node-1/    the node's containerd and kubelet
    images/          the shipped images, loaded into the node and pushed to the registry
    registry/        the image registry's storage (docker.io, registry.k8s.io, localhost)
    cluster.json     the ports in use and the node's pod CIDR
    kubeconfig       what kubectl and the Python client use
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from minikube_py.cluster.etcd import LOOPBACK, free_port, port_in_use
from minikube_py.cluster.image_command import add_image_command, push_catalog
from minikube_py.cluster.kubeconfig import write_kubeconfig
from minikube_py.cluster.node import (
    kubelet_command,
    node_config,
    start_containerd,
    stop_node_runtime,
)
from minikube_py.cluster.registry import REGISTRY_BINARY, RegistryProcess
from minikube_py.images.debian import PackageError
from minikube_py.images.registry import ArchiveError, RegistryError, registry_answers
from minikube_py.kubelet.runtime_setup import (
    ContainerdError,
    ImageLoadError,
    free_pod_cidr,
    runtime_missing,
)

DEFAULT_PORTS = {"etcd-client": 2379, "etcd-peer": 2380, "apiserver": 6443,
                 "controller-manager": 10257, "scheduler": 10259, "kubelet": 10250,
                 "registry": 5000, "proxy-healthz": 10256, "proxy-metrics": 10249,
                 "dns": 10053, "dns-metrics": 9153}
# Started in this order, stopped in the reverse order.
COMPONENTS = ("registry", "etcd", "apiserver", "controller-manager", "scheduler", "containerd",
              "kubelet", "proxy", "dns")
CLUSTER_CIDR = "10.244.0.0/16"
CLUSTER_DNS = "10.96.0.10"
LOAD_BALANCER_RANGE = "172.18.255.200-172.18.255.250"
LOAD_BALANCER_ROUTE = "172.18.255.192/26"
"""Routed as local addresses of this machine, so a LoadBalancer Service's address answers
here (the proxy's rules take it from there) and no packet to one ever leaves."""
# The components that reach the cluster through the API server (python -m <module>).
CLIENT_COMPONENTS = {"controller-manager": "minikube_py.controllers",
                     "scheduler": "minikube_py.scheduler"}


def home() -> Path:
    return Path(os.environ.get("MINIKUBE_PY_HOME", Path.home() / ".minikube-py"))


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


def _pid_alive(pid_file: Path) -> int | None:
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _start(name: str, command: list[str], state: Path) -> None:
    log = (state / "logs" / f"{name}.log").open("ab")
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                               start_new_session=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    (state / "run" / f"{name}.pid").write_text(str(process.pid))


def _wait(check: object, what: str, log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    fail(f"{what} did not become ready in {timeout:.0f}s; see {log}")


def _cluster(state: Path) -> dict[str, Any]:
    """This cluster's ports and its node's pod CIDR: chosen once (defaults, else free
    ones) and remembered in cluster.json."""
    saved = state / "cluster.json"
    cluster: dict[str, Any] = json.loads(saved.read_text()) if saved.exists() else {}
    ports = cluster.setdefault("ports", {})
    for name, port in DEFAULT_PORTS.items():
        if name not in ports:
            ports[name] = port if not port_in_use(port) else free_port()
    if "podCIDR" not in cluster and runtime_missing() is None:
        cluster["podCIDR"] = free_pod_cidr(seed=1)
    saved.write_text(json.dumps(cluster, indent=2))
    return cluster


def up(args: argparse.Namespace) -> None:
    """Start etcd, the API server, the controller-manager, the scheduler and the node
    (those not running yet)."""
    state = home()
    for sub in ("logs", "run"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    if shutil.which("etcd") is None:
        fail("etcd is not installed: run `make up` (it installs etcd-server) or "
             "`apt-get install etcd-server etcd-client`")
    cluster = _cluster(state)
    ports = cluster["ports"]
    etcd_url = f"http://{LOOPBACK}:{ports['etcd-client']}"
    api_url = f"http://{LOOPBACK}:{ports['apiserver']}"
    _up_registry(state, ports["registry"])

    if _pid_alive(state / "run" / "etcd.pid") is None:
        if port_in_use(ports["etcd-client"]):
            fail(f"port {ports['etcd-client']} is taken by another program; stop it or remove "
                 f"{state / 'cluster.json'} to pick new ports")
        peer = f"http://{LOOPBACK}:{ports['etcd-peer']}"
        _start("etcd", [
            "etcd", "--name=minikube-py", f"--data-dir={state / 'etcd'}",
            f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=minikube-py={peer}", "--logger=zap", "--log-level=warn",
            "--log-outputs=stderr",
        ], state)
        _wait(lambda: _http_ok(f"{etcd_url}/health"), "etcd", state / "logs" / "etcd.log")

    if _pid_alive(state / "run" / "apiserver.pid") is None:
        if port_in_use(ports["apiserver"]):
            fail(f"port {ports['apiserver']} is taken by another program; stop it or remove "
                 f"{state / 'cluster.json'} to pick new ports")
        _start("apiserver", [
            sys.executable, "-m", "minikube_py.apiserver", f"--etcd-servers={etcd_url}",
            f"--bind-address={LOOPBACK}", f"--port={ports['apiserver']}",
        ], state)
    _wait(lambda: _http_ok(f"{api_url}/readyz"), "the API server",
          state / "logs" / "apiserver.log")

    config = write_kubeconfig(state / "kubeconfig", api_url)
    for name, module in CLIENT_COMPONENTS.items():
        if _pid_alive(state / "run" / f"{name}.pid") is None:
            if port_in_use(ports[name]):
                fail(f"port {ports[name]} is taken by another program; stop it or "
                     f"remove {state / 'cluster.json'} to pick new ports")
            extra = ([f"--loadbalancer-ip-range={LOAD_BALANCER_RANGE}"]
                     if name == "controller-manager" else [])
            _start(name, [
                sys.executable, "-m", module, f"--kubeconfig={config}", "--leader-elect",
                f"--bind-address={LOOPBACK}", f"--port={ports[name]}", f"--v={args.v}",
                *extra], state)
    for name in CLIENT_COMPONENTS:
        _wait(lambda name=name: _http_ok(f"http://{LOOPBACK}:{ports[name]}/healthz"),
              f"the {name}", state / "logs" / f"{name}.log")
    _up_node(state, cluster, config, args.v)
    _up_services(state, cluster, config, args.v)
    print(f"minikube-py is up: API server {api_url}, etcd {etcd_url}")
    print(f"logs: {state / 'logs'}")
    print("To use it with kubectl:")
    print(f"export KUBECONFIG={config}")


def _up_registry(state: Path, port: int) -> None:
    """The image registry, with every shipped image pushed under all its names."""
    if shutil.which(REGISTRY_BINARY) is None:
        fail("docker-registry is not installed: run `make up` (it installs it) or "
             "`apt-get install docker-registry`")
    registry = f"{LOOPBACK}:{port}"
    if _pid_alive(state / "run" / "registry.pid") is None:
        if port_in_use(port):
            fail(f"port {port} is taken by another program; stop it or remove "
                 f"{state / 'cluster.json'} to pick new ports")
        process = RegistryProcess(state / "registry", port=port)
        process.prepare()
        _start("registry", process.command(), state)
        _wait(lambda: registry_answers(registry), "the image registry",
              state / "logs" / "registry.log")
    try:
        push_catalog(state / "images", registry, rebuild=False)
    except (ArchiveError, RegistryError, PackageError, OSError) as error:
        fail(f"could not build or push the shipped images: {error}")


def _up_node(state: Path, cluster: dict[str, Any], kubeconfig: Path, verbosity: int) -> None:
    """The node: containerd (with the shipped images loaded), then its kubelet."""
    reason = runtime_missing()
    if reason is not None:
        print(f"no node started: {reason}")
        return
    port = cluster["ports"]["kubelet"]
    registry = f"{LOOPBACK}:{cluster['ports']['registry']}"
    node = node_config(state, cluster["podCIDR"], registry)
    if _pid_alive(state / "run" / "containerd.pid") is None:
        try:
            node = start_containerd(state, cluster["podCIDR"], registry,
                                    lambda name, command: _start(name, command, state))
        except (ContainerdError, ImageLoadError) as error:
            fail(f"{error}; see {state / 'logs' / 'containerd.log'}")
    if _pid_alive(state / "run" / "kubelet.pid") is None:
        if port_in_use(port):
            fail(f"port {port} is taken by another program; stop it or remove "
                 f"{state / 'cluster.json'} to pick new ports")
        _start("kubelet", [*kubelet_command(node, state / "kubeconfig", port, CLUSTER_DNS),
                           f"--v={verbosity}"], state)
    _wait(lambda: _http_ok(f"http://{LOOPBACK}:{port}/healthz"), "the kubelet",
          state / "logs" / "kubelet.log")
    print(f"node {node.node_name}: containerd {node.endpoint}, pods on {node.pod_cidr}")


def _up_services(state: Path, cluster: dict[str, Any], kubeconfig: Path, verbosity: int
                 ) -> None:
    """The proxy (this machine's iptables, as the node's kube-proxy) and cluster DNS,
    which publishes itself as the kube-dns Service's endpoint at the node's pod gateway."""
    if runtime_missing() is not None:
        return
    ports = cluster["ports"]
    if _pid_alive(state / "run" / "proxy.pid") is None:
        for name in ("proxy-healthz", "proxy-metrics"):
            if port_in_use(ports[name]):
                fail(f"port {ports[name]} is taken by another program; stop it or remove "
                     f"{state / 'cluster.json'} to pick new ports")
        _start("proxy", [
            sys.executable, "-m", "minikube_py.proxy", f"--kubeconfig={kubeconfig}",
            "--hostname-override=node-1", f"--cluster-cidr={CLUSTER_CIDR}",
            f"--healthz-bind-address={LOOPBACK}:{ports['proxy-healthz']}",
            f"--metrics-bind-address={LOOPBACK}:{ports['proxy-metrics']}",
            f"--v={verbosity}"], state)
    if _pid_alive(state / "run" / "dns.pid") is None:
        for name in ("dns", "dns-metrics"):
            if port_in_use(ports[name]):
                fail(f"port {ports[name]} is taken by another program; stop it or remove "
                     f"{state / 'cluster.json'} to pick new ports")
        gateway = str(ipaddress.ip_network(cluster["podCIDR"])[1])
        _start("dns", [
            sys.executable, "-m", "minikube_py.dns", f"--kubeconfig={kubeconfig}",
            "--bind-address=0.0.0.0", f"--port={ports['dns']}",
            f"--advertise-address={gateway}", f"--service-ip={CLUSTER_DNS}",
            f"--metrics-bind-address={LOOPBACK}:{ports['dns-metrics']}",
            f"--v={verbosity}"], state)
    _wait(lambda: _http_ok(f"http://{LOOPBACK}:{ports['proxy-healthz']}/healthz"),
          "the proxy", state / "logs" / "proxy.log")
    routed = subprocess.run(["ip", "route", "replace", "local", LOAD_BALANCER_ROUTE, "dev", "lo"],
                            capture_output=True, text=True)
    if routed.returncode != 0:
        fail(f"cannot route the load-balancer addresses {LOAD_BALANCER_ROUTE} to this machine: "
             f"{routed.stderr.strip()} (run as root)")
    _wait(lambda: _http_ok(f"http://{LOOPBACK}:{ports['dns-metrics']}/healthz"),
          "cluster DNS", state / "logs" / "dns.log")
    print(f"services: proxy on this machine's iptables, DNS at {CLUSTER_DNS}")


def down(args: argparse.Namespace) -> None:
    """Stop every component; --purge also deletes the cluster's data."""
    state = home()
    for name in reversed(COMPONENTS):
        pid_file = state / "run" / f"{name}.pid"
        pid = _pid_alive(pid_file)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and _pid_alive(pid_file) is not None:
                time.sleep(0.1)
            if _pid_alive(pid_file) is not None:
                os.kill(pid, signal.SIGKILL)
            print(f"stopped {name} (pid {pid})")
        pid_file.unlink(missing_ok=True)
        if name == "containerd":
            _down_node_runtime(state)
        if name == "proxy" and (pid is not None or _proxy_chains_left()):
            _cleanup_proxy_rules()
        if name == "proxy":
            subprocess.run(["ip", "route", "del", "local", LOAD_BALANCER_ROUTE, "dev", "lo"],
                           capture_output=True)
    if args.purge and state.exists():
        shutil.rmtree(state)
        print(f"deleted {state}")


def _down_node_runtime(state: Path) -> None:
    """Remove the node's pods, containerd's leftovers, its bridge and mounts (also after a
    crash, when containerd is no longer running)."""
    saved = state / "cluster.json"
    cluster = json.loads(saved.read_text()) if saved.exists() else {}
    if "podCIDR" in cluster and runtime_missing() is None:
        stop_node_runtime(state, cluster["podCIDR"])


def _proxy_chains_left() -> bool:
    saved = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True)
    return ":KUBE-SERVICES" in saved.stdout


def _cleanup_proxy_rules() -> None:
    """kube-proxy --cleanup: the proxy's chains and jumps leave this machine's tables."""
    done = subprocess.run([sys.executable, "-m", "minikube_py.proxy", "--cleanup"],
                          capture_output=True, text=True)
    print(done.stdout.strip() if done.returncode == 0
          else f"proxy cleanup failed: {done.stderr.strip()}")


def status(args: argparse.Namespace) -> None:
    state = home()
    running = True
    node_reason = runtime_missing()
    for name in COMPONENTS:
        if name in ("containerd", "kubelet", "proxy", "dns") and node_reason is not None:
            print(f"{name}: not started ({node_reason})")
            continue
        pid = _pid_alive(state / "run" / f"{name}.pid")
        print(f"{name}: " + (f"running (pid {pid})" if pid else "stopped"))
        running = running and pid is not None
    if not running:
        raise SystemExit(1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="minikube-py",
                                     description="A local minikube-py cluster.")
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("up", help="start the cluster")
    start.add_argument("-v", "--v", dest="v", type=int, default=2,
                       help="the components' log verbosity (klog's -v; default 2: each "
                            "decision is logged)")
    start.set_defaults(run=up)
    stop = commands.add_parser("down", help="stop the cluster")
    stop.add_argument("--purge", action="store_true", help="also delete the cluster's data")
    stop.set_defaults(run=down)
    commands.add_parser("status", help="show what runs").set_defaults(run=status)
    add_image_command(commands, home)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
