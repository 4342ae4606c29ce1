"""`minikube-py join`: this "machine" becomes a node of a cluster that runs elsewhere, the
way `kubeadm join` adds one. It needs nothing but the line `minikube-py token create
--print-join-command` printed on the control plane, and the network.

    minikube-py join <endpoint> --token T --discovery-token-ca-cert-hash sha256:H
      discover     read kube-public/cluster-info anonymously; its jws-kubeconfig-<id> must
                   be the token's signature, its CA must hash to H (bootstraptoken.py: a
                   wrong hash refuses before the token is sent anywhere; a token the API
                   server answers 401 to fails at once). Nothing is made before this.
      the machine  a network namespace of its own (mkj-<node>) on the bridge that holds
                   the endpoint's address, with an address and a pod /24 nobody uses, and
                   the route to its pods (what a real network's router would be told)
      start        containerd; the kubelet with --bootstrap-kubeconfig (the token: its
                   TLS bootstrap earns the node's client certificate); a supervisor that
                   restarts them (supervise-node). The proxy: where the cluster runs
                   kube-proxy as its DaemonSet (kube-system/kube-proxy is there, which
                   the token may read: `up`'s kubeadm layout), none, as `kubeadm join`
                   starts none (the DaemonSet's pod runs on the node); else (`up
                   --layout processes`) a proxy process, as the node
    minikube-py down (in that home)
                   stops the supervisor and the node's processes, clears containerd's
                   pods and mounts, removes the namespace and the route; --purge deletes
                   the home

Its home ($MINIKUBE_PY_HOME) holds all of the machine and nothing of the control plane:

    joined.json                  the node: name, namespace, address, pod CIDR, server,
                                 who runs its proxy (kubeProxy: DaemonSet or process)
    pki/ca.crt                   the cluster's CA, as discovery pinned it
    kubeconfigs/bootstrap-kubelet.conf, kubelet.conf    the token; the earned identity
    nodes/<node>/  logs/<node>/  run/<node>/            containerd's and the kubelet's
                                                        files, logs and pid files
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import ipaddress
import json
import re
import shutil
import socket
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from minikube_py.api.duration import parse_duration
from minikube_py.cluster import bootstraptoken
from minikube_py.cluster.components import KubeletProcess, ProxyProcess
from minikube_py.cluster.netns import (
    ClusterNetwork,
    NodeNetwork,
    NodeNetworkError,
    every_ipv4_address,
    host_socket,
)
from minikube_py.cluster.node import node_config, remove_kubelet_volumes
from minikube_py.cluster.runtime_setup import POD_NETWORKS as CLUSTER_CIDR
from minikube_py.cluster.runtime_setup import (
    Containerd,
    ContainerdError,
    free_pod_cidr,
    runtime_missing,
)
from minikube_py.cluster.supervisor import Supervisor, SupervisorProcess
from minikube_py.process import ComponentProcess, ComponentProcessError

JOINED = "joined.json"
NAMESPACE_PREFIX = "mkj-"
"""Not the control plane's "mk-": its `down` leaves another machine's namespace alone."""
JOINED_HOSTS = range(200, 251)
"""The host numbers a joining machine takes its address from: above `up`'s nodes (.11 on)."""
SERVICE_SUBNET = ipaddress.ip_network("10.96.0.0/12")
CLUSTER_DNS = str(SERVICE_SUBNET[10])  # kubeadm's GetDNSIP: the service subnet's 10th address
REGISTRY_PORT = 5000
"""Where the control plane's image registry answers, on the bridge's own address: the
machine that runs the control plane (the endpoint's host with `up --layout processes`;
by default the endpoint is its control-plane node's, behind the same bridge)."""
NODE_PORTS = {"kubelet": 10250, "kubelet-healthz": 10248, "proxy-healthz": 10256,
              "proxy-metrics": 10249}
KUBE_PROXY_DAEMONSET = "DaemonSet"
KUBE_PROXY_PROCESS = "process"
NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class JoinError(Exception):
    """The machine could not join: one line saying why and what to do."""


def add_join_command(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                     home: Callable[[], Path], down: argparse.ArgumentParser) -> None:
    """Add `join` and `supervise-node`; `down` in a joined machine's home stops its node
    (and does what it did before anywhere else)."""
    join = commands.add_parser("join", help="make this machine (a network namespace and "
                                            "this home) a node of a running cluster")
    join.add_argument("endpoint", metavar="ENDPOINT",
                      help="the API server, host:port (from `minikube-py token create "
                           "--print-join-command`)")
    join.add_argument("--token", required=True,
                      help="the bootstrap token, for discovery and the TLS bootstrap")
    join.add_argument("--discovery-token-ca-cert-hash", action="append", required=True,
                      metavar="sha256:HEX", dest="ca_cert_hashes",
                      help="the cluster CA's public key hash to pin (repeatable)")
    join.add_argument("--node-name", default=None,
                      help="the node's name (default: this machine's host name)")
    join.add_argument("--discovery-timeout", default="5m0s",
                      help="how long to wait for a signed cluster-info (default 5m0s)")
    join.add_argument("--registry", default=None, metavar="HOST:PORT",
                      help=f"the cluster's image registry (default: port {REGISTRY_PORT} "
                           "of the machine whose bridge holds the endpoint)")
    join.add_argument("-v", "--v", dest="v", type=int, default=2,
                      help="the node components' log verbosity")
    join.set_defaults(run=partial(join_command, home=home))
    commands.add_parser("supervise-node", help="restart the joined node's components that "
                        "die (`join` starts it)").set_defaults(
        run=partial(supervise_node, home=home))
    down.set_defaults(run=partial(down_or_leave, home=home, down=down.get_default("run")))


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(1)


# -- the machine ---------------------------------------------------------------------------

def read_machine(state: Path) -> dict[str, Any] | None:
    """joined.json: the node this home joined (None: it joined none)."""
    try:
        return json.loads((state / JOINED).read_text())
    except (OSError, ValueError):
        return None


def node_network(machine: dict[str, Any]) -> tuple[ClusterNetwork, NodeNetwork]:
    """The bridge the machine is on, and its place there."""
    network = ClusterNetwork(machine["bridge"].removesuffix("br0"), machine["nodeNetwork"])
    return network, NodeNetwork(name=machine["node"], index=0,
                                namespace=machine["namespace"], address=machine["address"],
                                pod_cidr=machine["podCIDR"], host_veth=machine["hostVeth"])


def node_components(state: Path, machine: dict[str, Any]) -> dict[str, ComponentProcess]:
    """The machine's containerd, kubelet and (unless the cluster's kube-proxy DaemonSet
    runs it) proxy, in start order, as daemons in its namespace (logs/<node>/*.log,
    run/<node>/*.pid)."""
    node = machine["node"]
    _, place = node_network(machine)
    config = node_config(state, node, place.pod_cidr, machine["registry"], netns=place.path)
    in_node = {"address": place.address, "netns": place.path}
    verbosity = f"--v={machine.get('verbosity', 2)}"
    kubeconfig = state / "kubeconfigs" / "kubelet.conf"

    def files(name: str) -> dict[str, Path]:
        return {"log_path": state / "logs" / node / f"{name}.log",
                "pid_file": state / "run" / node / f"{name}.pid"}

    components: dict[str, ComponentProcess] = {
        "containerd": Containerd(config, **files("containerd")),
        "kubelet": KubeletProcess(
            kubeconfig, node_name=node, runtime_endpoint=config.endpoint,
            root_dir=config.base_dir / "kubelet", pod_cidr=place.pod_cidr,
            node_ip=place.address, port=NODE_PORTS["kubelet"],
            healthz_port=NODE_PORTS["kubelet-healthz"],
            bootstrap_kubeconfig=state / "kubeconfigs" / "bootstrap-kubelet.conf",
            extra_args=(f"--cluster-dns={CLUSTER_DNS}",
                        f"--client-ca-file={state / 'pki' / 'ca.crt'}",
                        "--anonymous-auth=false", "--authentication-token-webhook",
                        "--authorization-mode=Webhook", "--rotate-server-certificates",
                        verbosity),
            start_timeout=120.0, **in_node, **files("kubelet")),
    }
    if machine.get("kubeProxy") != KUBE_PROXY_DAEMONSET:
        # a cluster without the DaemonSet: the proxy runs as its node (cluster/join.py
        # lets the nodes' group watch what kube-proxy watches)
        components["proxy"] = ProxyProcess(
            kubeconfig, node_name=node, cluster_cidr=str(CLUSTER_CIDR),
            port=NODE_PORTS["proxy-healthz"], metrics_port=NODE_PORTS["proxy-metrics"],
            extra_args=(verbosity,), **in_node, **files("proxy"))
    return components


class NodeSupervisorProcess(SupervisorProcess):
    """`python -m minikube_py.cluster supervise-node`, as a daemon."""

    def command(self) -> list[str]:
        return [sys.executable, "-m", "minikube_py.cluster", "supervise-node"]


def supervisor(state: Path) -> NodeSupervisorProcess:
    return NodeSupervisorProcess(state / "logs" / "supervisor.log",
                                 state / "run" / "supervisor.pid")


def supervise_node(args: argparse.Namespace, home: Callable[[], Path]) -> None:
    """`minikube-py supervise-node` (started by `join`): restart the node's components."""
    state = home()
    machine = read_machine(state)
    if machine is None:
        fail(f"{state} holds no joined node")
    assert machine is not None
    try:
        asyncio.run(Supervisor(node_components(state, machine)).run())
    except KeyboardInterrupt:
        pass


# -- where the machine sits on the network -------------------------------------------------

def endpoint_address(endpoint: str) -> tuple[str, str]:
    """host:port (or https://host:port) -> the server URL and the host's IPv4 address."""
    server = endpoint if "://" in endpoint else f"https://{endpoint}"
    host = urlsplit(server).hostname
    if not host:
        raise JoinError(f"the endpoint {endpoint!r} names no host: give host:port")
    try:
        return server, socket.gethostbyname(host)
    except OSError as error:
        raise JoinError(f"cannot resolve the endpoint's host {host!r}: {error}") from None


def bridge_of(address: str) -> tuple[str, ipaddress.IPv4Network]:
    """The bridge of this machine whose network holds `address` (the network the
    control plane is reached on), and that network."""
    wanted = ipaddress.ip_address(address)
    with host_socket() as host:
        names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in host.get_links()}
        for entry in host.get_addr(family=socket.AF_INET):
            interface = ipaddress.ip_interface(
                f"{entry.get_attr('IFA_ADDRESS')}/{entry['prefixlen']}")
            name = names.get(entry["index"], "")
            if wanted in interface.network and interface.network.prefixlen < 31 and (
                    name.endswith("br0")):
                return name, ipaddress.IPv4Network(interface.network)
    raise JoinError(f"no node network bridge on this machine holds {address}: the endpoint "
                    "must be the address `minikube-py up` serves on (its bridge's, e.g. "
                    "172.18.0.1:6443)")


def free_address(network: ipaddress.IPv4Network) -> str:
    """A host address of JOINED_HOSTS in `network` that no namespace uses."""
    used = every_ipv4_address()
    for number in JOINED_HOSTS:
        if number < network.num_addresses - 1:
            candidate = str(network[number])
            if candidate not in used:
                return candidate
    raise JoinError(f"every address .{JOINED_HOSTS.start}-.{JOINED_HOSTS.stop - 1} of "
                    f"{network} is taken: `minikube-py down` a joined machine first")


# -- join ----------------------------------------------------------------------------------

def join_command(args: argparse.Namespace, home: Callable[[], Path]) -> None:
    """Check what joining needs, discover the cluster, then build and start the node;
    every failure is one line, and leaves nothing behind."""
    state = home()
    node = (args.node_name or socket.gethostname()).lower()
    if NODE_NAME.fullmatch(node) is None or len(node) > 63:
        fail(f"the node name {node!r} is not a valid DNS label (lower case letters, digits, "
             "'-' and '.'): give one with --node-name")
    if (reason := runtime_missing()) is not None:
        fail(f"this machine cannot run a node: {reason}")
    if (state / "cluster.json").exists():
        fail(f"{state} holds a cluster of its own: join from another home "
             "(MINIKUBE_PY_HOME=<folder> minikube-py join ...)")
    if (machine := read_machine(state)) is not None:
        fail(f"this machine ({state}) is node {machine['node']} of {machine['server']} "
             "already: `minikube-py down --purge` first")
    timeout = parse_duration(args.discovery_timeout)
    if timeout is None or timeout <= 0:
        fail(f"--discovery-timeout: invalid duration {args.discovery_timeout!r}")
    assert timeout is not None
    try:
        server, address = endpoint_address(args.endpoint)
        bridge, network = bridge_of(address)
    except (JoinError, OSError) as error:
        fail(str(error))
    print(f"[preflight] discovering the cluster at {server} (kube-public/cluster-info)",
          flush=True)
    try:
        found = asyncio.run(bootstraptoken.discover(server, args.token, args.ca_cert_hashes,
                                                    timeout=timeout, retry_interval=1.0))
        # the signature may outlive the token a moment (until the cleaner removes it)
        asyncio.run(bootstraptoken.check_token(found.server, args.token, found.ca_pem))
        daemonset = asyncio.run(bootstraptoken.kube_proxy_config_map(
            found.server, args.token, found.ca_pem)) is not None
    except bootstraptoken.DiscoveryError as error:
        fail(str(error))
    print(f"[discovery] cluster-info is signed with the token and its CA is pinned: "
          f"trusting {found.server}", flush=True)
    print("[preflight] kube-proxy: " + (
        "the cluster's DaemonSet runs it on this node" if daemonset else
        "the cluster has no kube-proxy DaemonSet: this node runs a proxy process"),
        flush=True)
    created = not state.exists()
    try:
        machine = _make_machine(state, args, node, found, bridge, network,
                                KUBE_PROXY_DAEMONSET if daemonset else KUBE_PROXY_PROCESS)
        asyncio.run(_start_node(state, machine))
    except (JoinError, NodeNetworkError, ComponentProcessError, ContainerdError,
            OSError, RuntimeError, TimeoutError) as error:
        _undo(state, created)
        fail(f"{node} did not join: {error} (everything the attempt started is stopped "
             "and removed)")
    print(f"\nThis node has joined the cluster as {node}:\n"
          f"* Certificate signing request was sent to apiserver and a response was "
          "received.\n"
          f"* The Kubelet was informed of the new secure connection details.\n\n"
          f"Run 'kubectl get nodes' on the control-plane to see this node join the "
          f"cluster. Its kubelet asks for a serving certificate (for logs and exec): "
          f"approve it there with `kubectl certificate approve`.\n"
          f"{node}: {machine['address']} (network namespace {machine['namespace']}), pods "
          f"on {machine['podCIDR']}; logs: {state / 'logs' / node}")


def _make_machine(state: Path, args: argparse.Namespace, node: str,
                  found: bootstraptoken.DiscoveredCluster, bridge: str,
                  network: ipaddress.IPv4Network, kube_proxy: str) -> dict[str, Any]:
    """The machine's files and network namespace: joined.json first, so that `down`
    finds whatever follows. `kube_proxy`: who runs the node's proxy."""
    for sub in ("logs", "run", "pki", "kubeconfigs"):
        (state / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
    place = ClusterNetwork(bridge.removesuffix("br0"), str(network))
    machine = {
        "node": node, "server": found.server, "bridge": bridge, "nodeNetwork": str(network),
        "namespace": NAMESPACE_PREFIX + node,
        "hostVeth": "mkj" + hashlib.sha256(f"{state.resolve()}:{node}".encode()
                                           ).hexdigest()[:8],
        "address": free_address(network), "podCIDR": free_pod_cidr(),
        "registry": args.registry or f"{place.gateway}:{REGISTRY_PORT}",
        "verbosity": args.v, "kubeProxy": kube_proxy}
    (state / JOINED).write_text(json.dumps(machine, indent=2))
    ca_file = state / "pki" / "ca.crt"
    ca_file.write_bytes(found.ca_pem)
    bootstraptoken.write_bootstrap_kubeconfig(
        state / "kubeconfigs" / "bootstrap-kubelet.conf", found.server, found.ca_pem,
        args.token)
    _, own = node_network(machine)
    place.create_node(own)
    print(f"[network] {node} at {own.address} in namespace {own.namespace} on {bridge}, "
          f"pods on {own.pod_cidr}", flush=True)
    return machine


async def _start_node(state: Path, machine: dict[str, Any]) -> None:
    """containerd, then the kubelet (its TLS bootstrap comes first), then the proxy (if
    the node runs one) with the identity the kubelet earned, then the supervisor."""
    for name, process in node_components(state, machine).items():
        await process.start()
        print(f"[kubelet-start] {machine['node']}/{name}: ready (pid {process.pid})",
              flush=True)
    await supervisor(state).start()


def _undo(state: Path, created: bool) -> None:
    """Stop and remove what a failed join started: the home, if it made it, else the
    record of the node (its logs stay, to read why)."""
    leave(state)
    if created:
        shutil.rmtree(state, ignore_errors=True)
    else:
        (state / JOINED).unlink(missing_ok=True)


# -- down ----------------------------------------------------------------------------------

def down_or_leave(args: argparse.Namespace, home: Callable[[], Path],
                  down: Callable[[argparse.Namespace], None]) -> None:
    """`down`: in a joined machine's home, stop its node (leave); anywhere else, `down`."""
    state = home()
    if read_machine(state) is None:
        down(args)
        return
    node = leave(state)
    print(f"the Node {node} stays in the cluster's API (as after `kubeadm reset`): "
          f"`kubectl delete node {node}` on the control plane removes it")
    if args.purge:
        shutil.rmtree(state)
        print(f"deleted {state}")


def leave(state: Path) -> str:
    """Stop the node's processes (_stop_node), then remove the namespace and the route to
    its pods (netlink calls, outside the event loop). Returns the node's name."""
    machine = read_machine(state)
    if machine is None:
        return ""
    asyncio.run(_stop_node(state, machine))
    network, place = node_network(machine)
    if place.path.exists() or _link_exists(place.host_veth):
        network.remove_node(place)
        print(f"removed the network namespace {place.namespace}")
    return str(machine["node"])


async def _stop_node(state: Path, machine: dict[str, Any]) -> None:
    """Stop the supervisor, then the proxy process if there is one (and remove its
    NetworkPolicy table: the node goes away), the kubelet and containerd (which clears
    its pods, the kube-proxy DaemonSet's among them, and mounts)."""
    watcher = supervisor(state)
    if watcher.adopt():
        pid = watcher.pid
        await watcher.stop()
        print(f"stopped the supervisor (pid {pid})")
    processes = node_components(state, machine)
    for name in reversed(list(processes)):
        process = processes[name]
        pid = process.pid if process.adopt() else None
        if pid is not None or isinstance(process, Containerd):
            await process.stop()
        if pid is not None:
            print(f"stopped {machine['node']}/{name} (pid {pid})")
        if isinstance(process, ProxyProcess):
            await _proxy_cleanup(process.netns)
        if isinstance(process, Containerd):
            remove_kubelet_volumes(process.config)


async def _proxy_cleanup(netns: Path | None) -> None:
    """`kube-proxy --cleanup`, as kubeadm reset runs it: the proxy's rules and its
    NetworkPolicy table go with the node (a failure is the proxy's to report)."""
    command = [sys.executable, "-m", "minikube_py.proxy", "--cleanup"]
    if netns is not None:
        command.append(f"--netns={netns}")
    cleanup = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.DEVNULL)
    await cleanup.wait()


def _link_exists(name: str) -> bool:
    with host_socket() as host:
        return bool(host.link_lookup(ifname=name))

