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
import asyncio
import ipaddress
import json
import logging
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.components import (
    ControllerManagerProcess,
    DNSProcess,
    HollowNodesProcess,
    KubeletProcess,
    ProxyProcess,
    SchedulerProcess,
)
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.image_command import add_image_command, push_catalog
from minikube_py.cluster.kubeconfig import write_kubeconfig
from minikube_py.cluster.node import (
    NODE_NAME,
    load_shipped_images,
    node_config,
    remove_kubelet_volumes,
)
from minikube_py.cluster.registry import RegistryProcess
from minikube_py.cluster.supervisor import Supervisor, SupervisorProcess
from minikube_py.images.debian import PackageError
from minikube_py.images.registry import ArchiveError, RegistryError
from minikube_py.kubelet.runtime_setup import (
    Containerd,
    ContainerdError,
    ImageLoadError,
    free_pod_cidr,
    runtime_missing,
)
from minikube_py.process import (
    LOOPBACK,
    ComponentProcess,
    ComponentProcessError,
    free_port,
    port_in_use,
)

DEFAULT_PORTS = {"etcd-client": 2379, "etcd-peer": 2380, "apiserver": 6443,
                 "controller-manager": 10257, "scheduler": 10259, "kubelet": 10250,
                 "registry": 5000, "proxy-healthz": 10256, "proxy-metrics": 10249,
                 "dns": 10053, "dns-metrics": 9153, "hollow-nodes": 10251}
# Started stage by stage (the components of a stage together); stopped in reverse order.
STAGES = (("registry", "etcd"), ("apiserver",),
          ("controller-manager", "scheduler", "containerd", "proxy", "dns"),
          ("kubelet", "hollow-nodes"))
COMPONENTS = tuple(name for stage in STAGES for name in stage)
OPTIONAL_COMPONENTS = ("hollow-nodes",)  # only in a cluster that asked for them
NODE_COMPONENTS = ("containerd", "kubelet", "proxy", "dns")
CLUSTER_CIDR = "10.244.0.0/16"
CLUSTER_DNS = "10.96.0.10"
LOAD_BALANCER_RANGE = "172.18.255.200-172.18.255.250"
LOAD_BALANCER_ROUTE = "172.18.255.192/26"
"""Routed as local addresses of this machine, so a LoadBalancer Service's address answers
here (the proxy's rules take it from there) and no packet to one ever leaves."""


def home() -> Path:
    return Path(os.environ.get("MINIKUBE_PY_HOME", Path.home() / ".minikube-py"))


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


def _cluster(state: Path, verbosity: int, simulated_nodes: int | None) -> dict[str, Any]:
    """This cluster's ports and its node's pod CIDR: chosen once (defaults, else free
    ones) and remembered in cluster.json, with the components' log verbosity (which the
    supervisor's restarts use too) and the number of hollow nodes (kept when not given)."""
    saved = state / "cluster.json"
    cluster: dict[str, Any] = json.loads(saved.read_text()) if saved.exists() else {}
    cluster["verbosity"] = verbosity
    if simulated_nodes is not None:
        cluster["simulatedNodes"] = simulated_nodes
    ports = cluster.setdefault("ports", {})
    for name, port in DEFAULT_PORTS.items():
        if name not in ports:
            ports[name] = port if not port_in_use(port) else free_port()
    if "podCIDR" not in cluster and runtime_missing() is None:
        cluster["podCIDR"] = free_pod_cidr(seed=1)
    saved.write_text(json.dumps(cluster, indent=2))
    return cluster


def _saved_cluster(state: Path) -> dict[str, Any]:
    """cluster.json as `up` left it (empty before the first `up`)."""
    saved = state / "cluster.json"
    return json.loads(saved.read_text()) if saved.exists() else {"ports": DEFAULT_PORTS}


def components(state: Path, cluster: dict[str, Any]) -> dict[str, ComponentProcess]:
    """Every component of the cluster in `state` as a daemon: its log is
    logs/<name>.log and its pid file run/<name>.pid. The node's components are left out
    where this machine cannot run containers."""
    ports = cluster["ports"]
    kubeconfig = state / "kubeconfig"
    verbose = (f"--v={cluster.get('verbosity', 2)}",)

    def files(name: str) -> dict[str, Path]:
        return {"log_path": state / "logs" / f"{name}.log",
                "pid_file": state / "run" / f"{name}.pid"}

    etcd = EtcdProcess(state / "etcd", client_port=ports["etcd-client"],
                       peer_port=ports["etcd-peer"], name="minikube-py", **files("etcd"))
    processes: dict[str, ComponentProcess] = {
        "registry": RegistryProcess(state / "registry", port=ports["registry"],
                                    **files("registry")),
        "etcd": etcd,
        "apiserver": APIServerProcess([etcd.client_url], port=ports["apiserver"],
                                      **files("apiserver")),
        "controller-manager": ControllerManagerProcess(
            kubeconfig, port=ports["controller-manager"], **files("controller-manager"),
            extra_args=("--leader-elect", f"--loadbalancer-ip-range={LOAD_BALANCER_RANGE}",
                        *verbose)),
        "scheduler": SchedulerProcess(kubeconfig, port=ports["scheduler"],
                                      extra_args=("--leader-elect", *verbose),
                                      **files("scheduler")),
    }
    if cluster.get("simulatedNodes"):
        processes["hollow-nodes"] = HollowNodesProcess(
            kubeconfig, count=cluster["simulatedNodes"], port=ports["hollow-nodes"],
            extra_args=verbose, **files("hollow-nodes"))
    if runtime_missing() is not None or "podCIDR" not in cluster:
        return processes
    node = node_config(state, cluster["podCIDR"], f"{LOOPBACK}:{ports['registry']}")
    processes["containerd"] = Containerd(node, **files("containerd"))
    processes["kubelet"] = KubeletProcess(
        kubeconfig, node_name=node.node_name, runtime_endpoint=node.endpoint,
        root_dir=node.base_dir / "kubelet", pod_cidr=node.pod_cidr, port=ports["kubelet"],
        extra_args=(f"--cluster-dns={CLUSTER_DNS}", *verbose), **files("kubelet"))
    processes["proxy"] = ProxyProcess(
        kubeconfig, node_name=NODE_NAME, cluster_cidr=CLUSTER_CIDR,
        port=ports["proxy-healthz"], metrics_port=ports["proxy-metrics"],
        extra_args=verbose, **files("proxy"))
    # cluster DNS publishes itself as the kube-dns Service's endpoint at the node's pod
    # gateway: pods reach it there, the proxy's rules send 10.96.0.10 to it
    processes["dns"] = DNSProcess(
        kubeconfig, dns_port=ports["dns"], port=ports["dns-metrics"],
        advertise_address=str(ipaddress.ip_network(cluster["podCIDR"])[1]),
        service_ip=CLUSTER_DNS, extra_args=verbose, **files("dns"))
    return processes


def up(args: argparse.Namespace) -> None:
    """Start the components that do not run yet, stage by stage, and wait until every
    one serves."""
    state = home()
    for sub in ("logs", "run"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    if args.simulated_nodes is not None and args.simulated_nodes < 0:
        fail(f"--simulated-nodes must be 0 or more, not {args.simulated_nodes}")
    cluster = _cluster(state, args.v, args.simulated_nodes)
    processes = components(state, cluster)
    try:
        asyncio.run(_start_all(state, processes))
        asyncio.run(supervisor_process(state).start())
    except ComponentProcessError as error:
        hint = (f"; stop the program that holds it, or remove {state / 'cluster.json'} "
                "to pick new ports") if "already in use" in str(error) else ""
        fail(f"{error}{hint}")
    except (ContainerdError, ImageLoadError) as error:
        fail(f"{error}; see {state / 'logs' / 'containerd.log'}")
    except (ArchiveError, RegistryError, PackageError, OSError) as error:
        fail(f"could not build or push the shipped images: {error}")
    if "containerd" not in processes:
        print(f"no node started: {runtime_missing()}")
    else:
        node = node_config(state, cluster["podCIDR"])
        print(f"node {node.node_name}: containerd {node.endpoint}, pods on {node.pod_cidr}")
        print(f"services: proxy on this machine's iptables, DNS at {CLUSTER_DNS}")
    api = processes["apiserver"]
    etcd = processes["etcd"]
    assert isinstance(api, APIServerProcess) and isinstance(etcd, EtcdProcess)
    print(f"minikube-py is up: API server {api.url}, etcd {etcd.client_url}")
    print(f"logs: {state / 'logs'}")
    print("To use it with kubectl:")
    print(f"export KUBECONFIG={state / 'kubeconfig'}")


async def _start_all(state: Path, processes: dict[str, ComponentProcess]) -> None:
    for stage in STAGES:
        await asyncio.gather(*(_start(state, name, processes[name])
                               for name in stage if name in processes))


async def _start(state: Path, name: str, process: ComponentProcess) -> None:
    """Start one component (or wait for it, when it already runs) and do what must follow
    its start."""
    await process.start()
    if name == "registry":
        assert isinstance(process, RegistryProcess)
        # every shipped image, under all its names
        await asyncio.to_thread(push_catalog, state / "images", process.host, rebuild=False)
    elif name == "apiserver":
        assert isinstance(process, APIServerProcess)
        write_kubeconfig(state / "kubeconfig", process.url)
    elif name == "containerd":
        assert isinstance(process, Containerd)
        await load_shipped_images(process.config, state)
    elif name == "proxy":
        routed = subprocess.run(
            ["ip", "route", "replace", "local", LOAD_BALANCER_ROUTE, "dev", "lo"],
            capture_output=True, text=True)
        if routed.returncode != 0:
            fail(f"cannot route the load-balancer addresses {LOAD_BALANCER_ROUTE} to this "
                 f"machine: {routed.stderr.strip()} (run as root)")


def down(args: argparse.Namespace) -> None:
    """Stop every component; --purge also deletes the cluster's data."""
    state = home()
    asyncio.run(_stop_all(state, components(state, _saved_cluster(state))))
    if args.purge and state.exists():
        shutil.rmtree(state)
        print(f"deleted {state}")


def supervisor_process(state: Path) -> SupervisorProcess:
    return SupervisorProcess(state / "logs" / "supervisor.log",
                             state / "run" / "supervisor.pid")


def supervise(args: argparse.Namespace) -> None:
    """`minikube-py supervise` (started by `up`): restart components that die."""
    logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(message)s",
                        level=logging.WARNING)
    state = home()
    supervisor = Supervisor(components(state, _saved_cluster(state)))
    try:
        asyncio.run(supervisor.run())
    except KeyboardInterrupt:
        pass


async def _stop_all(state: Path, processes: dict[str, ComponentProcess]) -> None:
    if not state.exists():
        print(f"no cluster to stop: {state} does not exist")
        return
    supervisor = supervisor_process(state)
    if supervisor.adopt():  # first, so that it restarts nothing being stopped
        pid = supervisor.pid
        await supervisor.stop()
        print(f"stopped the supervisor (pid {pid})")
    elif not any(process.adopt() for process in processes.values()):
        print(f"nothing was running from {state}; cleaning up what a crash may have left")
    for name in reversed(COMPONENTS):
        process = processes.get(name)
        if process is None:
            continue
        pid = process.pid if process.adopt() else None
        # containerd's stop() also clears what a crashed node left: pods, shims, mounts,
        # the bridge, CNI's rules
        if pid is not None or name == "containerd":
            await process.stop()
        if pid is not None:
            print(f"stopped {name} (pid {pid})")
        if isinstance(process, Containerd):
            remove_kubelet_volumes(process.config)
        if name == "proxy":
            if pid is not None or _proxy_chains_left():
                _cleanup_proxy_rules()
            subprocess.run(["ip", "route", "del", "local", LOAD_BALANCER_ROUTE, "dev", "lo"],
                           capture_output=True)


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
    """Each component: running or not, and whether it answers its readiness check; then
    the nodes with their Ready condition and pods. Exit 1 unless everything runs."""
    state = home()
    cluster = _saved_cluster(state)
    processes = components(state, cluster)
    node_reason = runtime_missing()
    checks = asyncio.run(_readiness(processes))
    running = True
    for name in COMPONENTS:
        if name in NODE_COMPONENTS and node_reason is not None:
            print(f"{name}: not started ({node_reason})")
            continue
        if name in OPTIONAL_COMPONENTS and name not in processes:
            continue
        pid, ready = checks.get(name, (None, False))
        print(f"{name}: " + (f"running (pid {pid}), {'ready' if ready else 'NOT READY'}"
                             if pid else "stopped"))
        running = running and pid is not None
    supervisor = supervisor_process(state)
    print("supervisor: " + (f"running (pid {supervisor.pid})" if supervisor.adopt()
                            else "stopped"))
    api = processes["apiserver"]
    if checks.get("apiserver", (None, False))[1] and isinstance(api, APIServerProcess):
        _print_nodes(api.url)
    if not running:
        raise SystemExit(1)


async def _readiness(processes: dict[str, ComponentProcess]) -> dict[str, tuple[int | None,
                                                                               bool]]:
    """name -> (pid, answers its readiness check), for the components that run."""
    async def check(process: ComponentProcess) -> tuple[int | None, bool]:
        if not process.adopt():
            return None, False
        try:
            return process.pid, await asyncio.wait_for(process.serving(), 5)
        except (TimeoutError, OSError, ComponentProcessError):
            return process.pid, False
    names = list(processes)
    answers = await asyncio.gather(*(check(processes[name]) for name in names))
    return dict(zip(names, answers, strict=True))


def _print_nodes(api_url: str) -> None:
    """The nodes, Ready or not, with how many pods each runs (as kubectl would count)."""
    try:
        nodes = _get_json(f"{api_url}/api/v1/nodes")["items"]
        pods = _get_json(f"{api_url}/api/v1/pods")["items"]
    except (OSError, ValueError, KeyError) as error:
        print(f"nodes: cannot list them: {error}")
        return
    per_node: dict[str, int] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName") or ""
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            per_node[node] = per_node.get(node, 0) + 1
    print(f"nodes: {len(nodes)}")
    for node in nodes:
        name = node["metadata"]["name"]
        ready = next((c.get("status") for c in (node.get("status") or {}).get("conditions")
                      or () if c.get("type") == "Ready"), "Unknown")
        state = "Ready" if ready == "True" else "NotReady"
        print(f"  {name}: {state}, {per_node.get(name, 0)} pods")
    if per_node.get(""):
        print(f"  (not scheduled yet: {per_node['']} pods)")


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())


def logs(args: argparse.Namespace) -> None:
    """`minikube-py logs COMPONENT [-f] [--node N]`: a component's log file."""
    state = home()
    if args.component not in COMPONENTS:
        fail(f"no component named {args.component!r}; components: {', '.join(COMPONENTS)}")
    if args.component in NODE_COMPONENTS and args.node not in (None, NODE_NAME):
        fail(f"no node named {args.node!r}; nodes: {NODE_NAME}")
    if args.component not in NODE_COMPONENTS and args.node is not None:
        fail(f"{args.component} runs on the host, not on a node: leave out --node")
    path = state / "logs" / f"{args.component}.log"
    if not path.exists():
        fail(f"no log of {args.component} in {path.parent}: has `minikube-py up` run?")
    with path.open("rb") as log:
        while chunk := log.read(1 << 16):
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        if not args.follow:
            return
        try:
            while True:  # as tail -f: wait for more
                chunk = log.read(1 << 16)
                if chunk:
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.flush()
                else:
                    time.sleep(0.2)
        except KeyboardInterrupt:
            pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="minikube-py",
                                     description="A local minikube-py cluster.")
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("up", help="start the cluster")
    start.add_argument("-v", "--v", dest="v", type=int, default=2,
                       help="the components' log verbosity (klog's -v; default 2: each "
                            "decision is logged)")
    start.add_argument("--simulated-nodes", type=int, default=None, metavar="M",
                       help="also run M hollow nodes (a simulated runtime, no containers) "
                            "for scheduling at scale; remembered for later `up`s (to change "
                            "it, `down` first)")
    start.set_defaults(run=up)
    stop = commands.add_parser("down", help="stop the cluster")
    stop.add_argument("--purge", action="store_true", help="also delete the cluster's data")
    stop.set_defaults(run=down)
    commands.add_parser("status", help="show what runs, what is ready, the nodes"
                        ).set_defaults(run=status)
    show = commands.add_parser("logs", help="print a component's log")
    show.add_argument("component", help=f"one of: {', '.join(COMPONENTS)}")
    show.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    show.add_argument("--node", help="the node, for containerd, kubelet and proxy")
    show.set_defaults(run=logs)
    commands.add_parser("supervise", help="restart components that die (`up` starts it)"
                        ).set_defaults(run=supervise)
    add_image_command(commands, home)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
