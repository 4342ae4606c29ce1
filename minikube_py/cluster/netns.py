"""Nodes as network namespaces: the network of a multi-node cluster on one machine.

kind makes each node a Docker container; here each node is a Linux network namespace,
built with pyroute2 (netlink, the same calls `ip` makes):

    host namespace
      bridge <prefix>br0   172.18.0.1/24      the control plane is reached here
      route 10.244.1.0/24 via 172.18.0.11     each node's pods, through that node
      route 10.244.2.0/24 via 172.18.0.12
        |
        +-- veth <prefix>v1 ==== eth0 172.18.0.11/24   namespace <prefix>node-1
        |                        default via 172.18.0.1, forwarding on
        |                        (its containerd's CNI bridge holds 10.244.1.0/24)
        +-- veth <prefix>v2 ==== eth0 172.18.0.12/24   namespace <prefix>node-2

A pod on node-1 reaching a pod on node-2 leaves node-1 by its default route, is routed by
the host to 172.18.0.12, and node-2 hands it to its CNI bridge. That is forwarded traffic:
the host's iptables FORWARD chain accepts what comes from the bridge, and the answers to it,
with rules of ours (commented `minikube-py <bridge>`), as Docker's accept docker0's and
kind's its network's, so that a FORWARD policy of DROP (Docker sets it when it turns
forwarding on) does not cut the nodes apart. Every name starts with the cluster's prefix,
so `remove_all(prefix)` finds what a crashed run left, the rules included.
"""

from __future__ import annotations

import errno
import hashlib
import ipaddress
import shlex
import shutil
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyroute2 import IPRoute, NetNS

NETNS_DIR = Path("/var/run/netns")
DEFAULT_PREFIX = "mk-"
DEFAULT_NODE_NETWORK = "172.18.0.0/24"
FIRST_NODE_HOST = 11  # node-1 is .11, node-2 .12, ...
FIRST_AUTOSCALED_HOST = 101  # the cluster autoscaler's nodes: .101, .102, ...


class NodeNetworkError(Exception):
    """The node network could not be built (a clash with what the machine has)."""


@dataclass(frozen=True)
class NodeNetwork:
    """One node's place in the network."""

    name: str  # the node's name, e.g. node-1
    index: int  # 1 for node-1 (0 for the control-plane node)
    namespace: str  # e.g. mk-node-1
    address: str  # e.g. 172.18.0.11
    pod_cidr: str  # e.g. 10.244.1.0/24
    host_veth: str  # e.g. mk-v1

    @property
    def path(self) -> Path:
        """The namespace's file, for `nsenter --net=`."""
        return NETNS_DIR / self.namespace


class ClusterNetwork:
    """The host bridge and one namespace per node, all named `<prefix>...`."""

    def __init__(self, prefix: str = DEFAULT_PREFIX, node_network: str = DEFAULT_NODE_NETWORK,
                 ) -> None:
        self.prefix = prefix
        self.network = ipaddress.ip_network(node_network)
        self.bridge = f"{prefix}br0"
        if len(self.bridge) > 15 or len(f"{prefix}v99") > 15:
            raise NodeNetworkError(f"prefix {prefix!r} is too long for interface names")

    @property
    def bridge_mac(self) -> str:
        """A locally administered MAC address of the bridge, the same for a prefix."""
        digest = hashlib.sha256(self.bridge.encode()).digest()
        return ":".join(f"{byte:02x}" for byte in (0x02, 0x6d, 0x6b, *digest[:3]))

    @property
    def gateway(self) -> str:
        """The host's address on the bridge: where nodes reach the control plane."""
        return str(self.network[1])

    def node(self, index: int, pod_cidr: str) -> NodeNetwork:
        return NodeNetwork(name=f"node-{index}", index=index,
                           namespace=f"{self.prefix}node-{index}",
                           address=str(self.network[FIRST_NODE_HOST - 1 + index]),
                           pod_cidr=pod_cidr, host_veth=f"{self.prefix}v{index}")

    def autoscaled_node(self, group: str, index: int, pod_cidr: str) -> NodeNetwork:
        """A node the cluster autoscaler added to its group (`up --autoscale-nodes`):
        <group>-<index>, at .101 upward, its veth <prefix>a<index>."""
        name = f"{group}-{index}"
        return NodeNetwork(name=name, index=index, namespace=f"{self.prefix}{name}",
                           address=str(self.network[FIRST_AUTOSCALED_HOST - 1 + index]),
                           pod_cidr=pod_cidr, host_veth=f"{self.prefix}a{index}")

    def control_plane(self, pod_cidr: str, name: str = "control-plane",
                      number: int = 1) -> NodeNetwork:
        """A control-plane node (`up --layout kubeadm`): the first at the address before
        node-1's (.10), the others (`up --ha`: control-plane2, control-plane3) each at
        the one before (.9, .8)."""
        return NodeNetwork(name=name, index=0, namespace=f"{self.prefix}{name}",
                           address=str(self.network[FIRST_NODE_HOST - number]),
                           pod_cidr=pod_cidr,
                           host_veth=f"{self.prefix}v0" if number == 1
                           else f"{self.prefix}c{number}")

    # -- building -------------------------------------------------------------------------

    def create_bridge(self) -> None:
        """The host bridge with the gateway address (kept if it is there already), and
        forwarding on, so the host routes between nodes."""
        with host_socket() as host:
            if not host.link_lookup(ifname=self.bridge):
                self._refuse_overlap(host)
                # A fixed address: a bridge otherwise takes its ports' lowest one, which
                # changes when a node goes, and the other nodes' ARP caches go stale.
                host.link("add", ifname=self.bridge, kind="bridge", address=self.bridge_mac)
            index = host.link_lookup(ifname=self.bridge)[0]
            have = {a.get_attr("IFA_ADDRESS") for a in host.get_addr(index=index)}
            if self.gateway not in have:
                host.addr("add", index=index, address=self.gateway,
                          prefixlen=self.network.prefixlen)
            host.link("set", index=index, state="up")
        Path("/proc/sys/net/ipv4/ip_forward").write_text("1\n")
        self.accept_forwarded()

    @property
    def forward_comment(self) -> str:
        """The comment on our FORWARD rules, which finds them again."""
        return f"minikube-py {self.bridge}"

    def forward_rules(self) -> list[list[str]]:
        """What the host forwards from the bridge (node to node, node to the world), and
        the answers to it, accepted: the rules of Docker's own bridge, for ours."""
        mark = ["-m", "comment", "--comment", self.forward_comment, "-j", "ACCEPT"]
        return [["-i", self.bridge, *mark],
                ["-o", self.bridge, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED",
                 *mark]]

    def accept_forwarded(self) -> None:
        """Our FORWARD rules at the chain's head, each once (kept when it is there)."""
        for rule in reversed(self.forward_rules()):
            if _iptables("-C", "FORWARD", *rule, check=False).returncode != 0:
                _iptables("-I", "FORWARD", *rule)

    def remove_forward_rules(self) -> int:
        """Every FORWARD rule with our comment (also those a crashed run left). Returns
        how many it removed."""
        listed = _iptables("-S", "FORWARD").stdout.splitlines()
        ours = [shlex.split(line)[1:] for line in listed
                if line.startswith("-A FORWARD ") and self.forward_comment in line]
        for rule in ours:
            _iptables("-D", *rule)
        return len(ours)

    def _refuse_overlap(self, host: IPRoute) -> None:
        """A route of the machine's that covers or lies in our node network is a clash."""
        for route in host.get_routes(family=2):
            destination = route.get_attr("RTA_DST")
            if destination is None:
                continue
            network = ipaddress.ip_network(f"{destination}/{route['dst_len']}", strict=False)
            if network.prefixlen and network.overlaps(self.network):
                raise NodeNetworkError(
                    f"the node network {self.network} overlaps the route to {network} on "
                    "this machine: choose another range")

    def create_node(self, node: NodeNetwork) -> None:
        """The node's namespace, its veth to the bridge, its address and routes, and the
        host's route to its pods."""
        if node.path.exists():
            raise NodeNetworkError(f"network namespace {node.namespace} exists already: "
                                   "run `minikube-py down` first")
        named_namespaces().create(node.namespace)
        try:
            with host_socket() as host:
                bridge = host.link_lookup(ifname=self.bridge)[0]
                host.link("add", ifname=node.host_veth, kind="veth",
                          peer={"ifname": "eth0", "net_ns_fd": node.namespace})
                veth = host.link_lookup(ifname=node.host_veth)[0]
                host.link("set", index=veth, master=bridge, state="up")
            with namespace_socket(node.namespace) as inside:
                for name in ("lo", "eth0"):
                    inside.link("set", index=inside.link_lookup(ifname=name)[0], state="up")
                inside.addr("add", index=inside.link_lookup(ifname="eth0")[0],
                            address=node.address, prefixlen=self.network.prefixlen)
                inside.route("add", dst="default", gateway=self.gateway)
            subprocess.run(["nsenter", f"--net={node.path}", "sysctl", "-q", "-w",
                            "net.ipv4.ip_forward=1"], check=True, capture_output=True)
            with host_socket() as host:
                host.route("replace", dst=node.pod_cidr, gateway=node.address)
        except BaseException:
            self.remove_node(node)
            raise

    def ensure_node(self, node: NodeNetwork) -> bool:
        """The node's network as create_node() builds it: kept when its namespace and veth
        are there (a running cluster), else built afresh. Returns whether it was built."""
        if node.path.exists():
            with host_socket() as host:
                if host.link_lookup(ifname=node.host_veth):
                    host.route("replace", dst=node.pod_cidr, gateway=node.address)
                    return False
            self.remove_node(node)  # what a crash left half built
        self.create_node(node)
        return True

    def route_via(self, node: NodeNetwork, destination: str) -> None:
        """Route `destination` (the Service range, the load balancers' addresses) from the
        host through this node, whose proxy's rules take the packets from there."""
        with host_socket() as host:
            host.route("replace", dst=destination, gateway=node.address)

    def routed_elsewhere(self, destination: str) -> bool:
        """Whether the host routes `destination` through a gateway outside this network
        (a node of another cluster)."""
        wanted = ipaddress.ip_network(destination)
        with host_socket() as host:
            for route in host.get_routes(family=2):
                gateway = route.get_attr("RTA_GATEWAY")
                if (route.get_attr("RTA_DST") == str(wanted.network_address)
                        and route["dst_len"] == wanted.prefixlen and gateway
                        and ipaddress.ip_address(gateway) not in self.network):
                    return True
        return False

    # -- removing -------------------------------------------------------------------------

    def remove_node(self, node: NodeNetwork) -> None:
        """The host's route to the node's pods, and the namespace (its veth goes with it).
        What is not there is not an error."""
        with host_socket() as host:
            _gone_or_done(host.route, "del", dst=node.pod_cidr, gateway=node.address)
            for index in host.link_lookup(ifname=node.host_veth):
                _gone_or_done(host.link, "del", index=index)
        if node.path.exists():
            named_namespaces().remove(node.namespace)

    def remove_all(self) -> list[str]:
        """Everything of this prefix: every node namespace, veth, pod route, the bridge
        (also after a crash, knowing nothing but the prefix). Returns what it removed."""
        removed = []
        for name in sorted(named_namespaces().listnetns()):
            if name.startswith(self.prefix):
                named_namespaces().remove(name)
                removed.append(f"network namespace {name}")
        # A removed namespace takes its veths with it, a moment later: a link or route
        # that is gone by the time we delete it is not an error.
        with host_socket() as host:
            for route in host.get_routes(family=2):
                gateway = route.get_attr("RTA_GATEWAY")
                if gateway and ipaddress.ip_address(gateway) in self.network and route[
                        "dst_len"]:
                    if _gone_or_done(host.route, "del", gateway=gateway,
                                     dst=f"{route.get_attr('RTA_DST')}/{route['dst_len']}"):
                        removed.append(f"route to {route.get_attr('RTA_DST')}")
            for link in host.get_links():
                name = link.get_attr("IFLA_IFNAME")
                if name.startswith(self.prefix) and name != self.bridge:
                    if _gone_or_done(host.link, "del", index=link["index"]):
                        removed.append(f"link {name}")
            for index in host.link_lookup(ifname=self.bridge):
                if _gone_or_done(host.link, "del", index=index):
                    removed.append(f"bridge {self.bridge}")
        if shutil.which("iptables") is not None and self.remove_forward_rules():
            removed.append(f"FORWARD rules of {self.bridge}")
        return removed


# pyroute2 is imported where a command changes the network: its import costs 0.25-0.4
# CPU-s, which `status`, `logs` or `ssh` (which only read a node's address) need not pay.

def host_socket() -> IPRoute:
    """A netlink socket in the host's network namespace (use with `with`)."""
    from pyroute2 import IPRoute

    return IPRoute()


def namespace_socket(namespace: str) -> NetNS:
    """A netlink socket in the named network namespace (use with `with`)."""
    from pyroute2 import NetNS

    return NetNS(namespace)


def named_namespaces() -> ModuleType:
    """pyroute2's module of named network namespaces (create, remove, listnetns)."""
    from pyroute2 import netns

    return netns


def every_ipv4_address() -> set[str]:
    """Every IPv4 address of every named network namespace on this machine (one that goes
    away while it is read counts as having none)."""
    from pyroute2.netlink.exceptions import NetlinkError

    used = set()
    for name in named_namespaces().listnetns():
        try:
            with namespace_socket(name) as inside:
                used |= {entry.get_attr("IFA_ADDRESS")
                         for entry in inside.get_addr(family=socket.AF_INET)}
        except (OSError, NetlinkError):
            continue
    return used


def _iptables(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """One iptables call on the host's filter table (waiting for its lock); a failure
    (when `check`) is a NodeNetworkError with iptables' own line."""
    if shutil.which("iptables") is None:
        raise NodeNetworkError("iptables is not installed: apt-get install iptables")
    done = subprocess.run(["iptables", "-w", "-t", "filter", *args], capture_output=True,
                          text=True)
    if check and done.returncode != 0:
        raise NodeNetworkError(f"iptables {' '.join(args)}: {done.stderr.strip()}")
    return done


def _gone_or_done(call: Callable[..., object], *args: Any, **kwargs: Any) -> bool:
    """Run a netlink delete; False when the thing was gone already (ENODEV, ESRCH)."""
    from pyroute2.netlink.exceptions import NetlinkError

    try:
        call(*args, **kwargs)
    except NetlinkError as error:
        if error.code in (errno.ENODEV, errno.ESRCH, errno.ENOENT):
            return False
        raise
    return True
