"""Nodes as network namespaces (cluster/netns.py): two nodes reach each other, the host,
and each other's pod ranges through the host; removing them leaves nothing, also when only
the prefix of a crashed run is known."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from minikube_py.cluster.netns import ClusterNetwork, NodeNetwork, NodeNetworkError
from minikube_py.process import names_its_process

# A range and prefix of this test's own, apart from a running cluster's (mk-, 172.18.0.0/24).
NODE_NETWORK = "172.31.251.0/24"


def prefix() -> str:
    return f"mkn{os.getpid() % 100000}-"


def in_node(node: NodeNetwork, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["nsenter", f"--net={node.path}", *command], capture_output=True,
                          text=True, timeout=10)


def pings(node: NodeNetwork, address: str) -> bool:
    return in_node(node, "busybox", "ping", "-c", "1", "-W", "2", address).returncode == 0


def forward_rules(network: ClusterNetwork) -> list[str]:
    """The host's FORWARD rules that name this test's bridge."""
    listed = subprocess.run(["iptables", "-w", "-S", "FORWARD"], capture_output=True,
                            text=True, check=True).stdout
    return [line for line in listed.splitlines() if f" {network.bridge} " in line]


def leftovers(network: ClusterNetwork) -> list[str]:
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    spaces = [p.name for p in Path("/var/run/netns").glob(f"{network.prefix}*")]
    return (spaces + [line for line in links.splitlines() if network.prefix in line]
            + [line for line in routes.splitlines() if "172.31.251." in line]
            + forward_rules(network))


RUNS = Path(tempfile.gettempdir()) / "minikube-py-node-network-runs"
"""A file per run, named by its prefix, holding its whole pid (the prefix has the last 5
digits) and written as it starts: a pid is reused, and a prefix whose pid names a process
started after its file is a dead run's."""


def alive(prefix: str) -> bool:
    """Whether the run of `prefix` (a name's mkn<digits>-) still runs."""
    run = RUNS / prefix
    try:
        return names_its_process(run, int(run.read_text()))
    except (OSError, ValueError):  # no file: a run from before the files, or dying
        return Path(f"/proc/{prefix[3:-1]}").exists()


def prefixes_of_dead_runs() -> set[str]:
    """The prefixes of this test's crashed runs (mkn<pid>-, the pid gone or another
    process's now), from what they left: namespaces, or only links (a run killed between
    its bridge and its nodes left the bridge and its route, which every later run's range
    then overlaps)."""
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    names = [*(path.name for path in Path("/var/run/netns").glob("mkn*")),
             *re.findall(r"^\d+: (mkn\S+?)[:@]", links, re.MULTILINE)]
    prefixes = {match.group(0) for name in names if (match := re.match(r"mkn\d+-", name))}
    return {prefix for prefix in prefixes if not alive(prefix)}


@pytest.fixture
def network() -> Iterator[ClusterNetwork]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    for stale in prefixes_of_dead_runs():
        ClusterNetwork(stale, NODE_NETWORK).remove_all()
        (RUNS / stale).unlink(missing_ok=True)
    RUNS.mkdir(exist_ok=True)
    (RUNS / prefix()).write_text(str(os.getpid()))
    built = ClusterNetwork(prefix(), NODE_NETWORK)
    try:
        yield built
    finally:
        built.remove_all()
        (RUNS / prefix()).unlink(missing_ok=True)


def test_two_nodes_reach_each_other_the_host_and_each_others_pods(
        network: ClusterNetwork) -> None:
    network.create_bridge()
    one, two = network.node(1, "10.251.1.0/24"), network.node(2, "10.251.2.0/24")
    network.create_node(one)
    network.create_node(two)
    assert (one.address, two.address) == ("172.31.251.11", "172.31.251.12")
    assert pings(one, network.gateway) and pings(one, two.address)
    # what a node's CNI bridge would hold: the first address of its pod range
    in_node(two, "ip", "link", "add", "cni0", "type", "bridge")
    in_node(two, "ip", "addr", "add", "10.251.2.1/24", "dev", "cni0")
    in_node(two, "ip", "link", "set", "cni0", "up")
    assert pings(one, "10.251.2.1")  # node-1 -> host -> node-2's pod range
    network.remove_node(one)
    assert not one.path.exists() and pings(two, network.gateway)
    network.remove_all()
    assert leftovers(network) == []


def test_remove_all_knows_only_the_prefix(network: ClusterNetwork) -> None:
    network.create_bridge()
    network.create_node(network.node(1, "10.251.1.0/24"))
    after_a_crash = ClusterNetwork(network.prefix, NODE_NETWORK)
    removed = after_a_crash.remove_all()
    assert f"network namespace {network.prefix}node-1" in removed
    assert f"bridge {network.bridge}" in removed
    assert f"FORWARD rules of {network.bridge}" in removed
    assert leftovers(network) == []
    assert after_a_crash.remove_all() == []  # twice in a row: nothing left to remove


def test_a_node_network_over_a_machine_route_is_refused(network: ClusterNetwork) -> None:
    subprocess.run(["ip", "route", "add", "172.31.251.128/25", "dev", "lo"], check=True)
    try:
        with pytest.raises(NodeNetworkError, match="overlaps the route to 172.31.251.128/25"):
            network.create_bridge()
    finally:
        subprocess.run(["ip", "route", "del", "172.31.251.128/25", "dev", "lo"], check=False)
    assert leftovers(network) == []


def test_a_node_that_exists_is_refused(network: ClusterNetwork) -> None:
    network.create_bridge()
    node = network.node(1, "10.251.1.0/24")
    network.create_node(node)
    with pytest.raises(NodeNetworkError, match="exists already"):
        network.create_node(node)
    assert pings(node, network.gateway)  # the refusal changed nothing


def test_forwarded_node_traffic_is_accepted_ahead_of_a_drop(network: ClusterNetwork) -> None:
    """A FORWARD chain that ends by dropping (Docker's DROP policy, here a last rule for
    this test's bridge alone, so that no one else's traffic is touched): the bridge's
    accept rules, once each however often the bridge is made, let the nodes reach each
    other's pods; without them the host drops that traffic."""
    drop = ["FORWARD", "-i", network.bridge, "-j", "DROP"]
    network.create_bridge()
    network.create_bridge()
    assert [rule.split(" -m comment")[0] for rule in forward_rules(network)] == [
        f"-A FORWARD -i {network.bridge}",
        f"-A FORWARD -o {network.bridge} -m conntrack --ctstate RELATED,ESTABLISHED"]
    one, two = network.node(1, "10.251.1.0/24"), network.node(2, "10.251.2.0/24")
    network.create_node(one)
    network.create_node(two)
    in_node(two, "ip", "link", "add", "cni0", "type", "bridge")
    in_node(two, "ip", "addr", "add", "10.251.2.1/24", "dev", "cni0")
    in_node(two, "ip", "link", "set", "cni0", "up")
    subprocess.run(["iptables", "-w", "-A", *drop], check=True)
    try:
        assert pings(one, "10.251.2.1")  # node-1 -> host (forwarded) -> node-2's pods
        assert network.remove_forward_rules() == 2
        assert not pings(one, "10.251.2.1")  # the drop now takes it
    finally:
        subprocess.run(["iptables", "-w", "-D", *drop], check=False)
