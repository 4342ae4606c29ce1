"""NetworkPolicy enforced on a real 2-node cluster, as upstream's e2e tests check it
(test/e2e/network/netpol/network_policy.go, the [Feature:NetworkPolicy] cases): pods a, b
and c in namespaces x, y and z serve TCP and UDP on ports 80 and 81 (container ports
serve-80-tcp ...), every pod probes every pod from inside, and the whole matrix must be
the expected one (netpol_model.py). A case that fails prints the expected, observed and
comparison matrices, as upstream's does.

One cluster (the lane's shared one, tests/e2e/conftest.py; namespaces x, y and z are this
module's there) and one set of nine pods serve every case; each case removes its policies
and labels afterwards. Each check probes again until the matrix matches (the policy reaches
the nodes' tables a moment after its create) or 60 s have passed.

A pod probes from its own network namespace, entered with nsenter (the namespace of the
pod's server process): the node's rules see the same packets as from a process in the
container. Upstream's suite runs each probe with `kubectl exec`; here that would cost, per
source and round, a kubectl, an exec through the API server, the kubelet and runc, and a
Python in the container, and exec has tests of its own (test_into_the_pod.py).
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import LaneCluster
from tests.e2e.netpol_model import ALL_PODS, NAMESPACES, POD_NAMES, Peer, Reachability
from tests.test_cluster_cli import in_node, kubectl

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
NS_LABEL = "kubernetes.io/metadata.name"
CHECK_TIMEOUT = 60.0

SERVER = """
import os, socket, threading
NAME = os.environ["POD_NAME"].encode()
def tcp(port):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("", port))
    server.listen(64)
    while True:
        connection, _ = server.accept()
        with connection:
            connection.sendall(NAME)
def udp(port):
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("", port))
    while True:
        _, peer = server.recvfrom(64)
        server.sendto(NAME, peer)
for port in (80, 81):
    for serve in (tcp, udp):
        threading.Thread(target=serve, args=(port,), daemon=True).start()
threading.Event().wait()
"""
PROBE = """
import concurrent.futures, socket, sys
protocol, port, targets = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def probe(ip):
    kind = socket.SOCK_STREAM if protocol == "TCP" else socket.SOCK_DGRAM
    with socket.socket(socket.AF_INET, kind) as s:
        s.settimeout(1.0)
        try:
            if kind == socket.SOCK_STREAM:
                s.connect((ip, port))
            else:
                s.sendto(b"probe", (ip, port))
            return bool(s.recv(64))
        except OSError:
            return False
with concurrent.futures.ThreadPoolExecutor(len(targets)) as pool:
    print(" ".join("1" if ok else "0" for ok in pool.map(probe, targets)))
"""


def pod_manifest(namespace: str, name: str) -> dict[str, Any]:
    """upstream's kubemanager pod: one container serving ports 80 and 81 over TCP and UDP,
    each a named container port."""
    ports = [{"name": f"serve-{port}-{proto.lower()}", "containerPort": port,
              "protocol": proto} for port in (80, 81) for proto in ("TCP", "UDP")]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"pod": name}},
            "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
                "name": "cont", "image": "python:3.11", "command": ["python3", "-c", SERVER],
                "env": [{"name": "POD_NAME", "value": f"{namespace}/{name}"}],
                "ports": ports,
                "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 1}}]}}


def apply(home: Path, obj: dict[str, Any]) -> None:
    subprocess.run([KUBECTL, f"--kubeconfig={home / 'kubeconfig'}", "apply", "-f", "-"],
                   input=json.dumps(obj), capture_output=True, text=True, timeout=60,
                   check=True)


class Cluster:
    """The cluster, its nine pods and their addresses."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.added: list[tuple[str, ...]] = []  # `kubectl label` arguments that undo a label
        self.namespaces: dict[str, Path] = {}  # pod -> its network namespace, once found
        pods = [pod for namespace in NAMESPACES for pod in json.loads(kubectl(
            home, "get", "pods", "-n", namespace, "-l", "pod", "-o", "json").stdout)["items"]]
        self.ips = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["status"]["podIP"]
                    for p in pods}
        self.nodes = {f"{p['metadata']['namespace']}/{p['metadata']['name']}":
                      p["spec"]["nodeName"] for p in pods}

    def probe_from(self, source: str, protocol: str, port: int,
                   targets: list[str] | None = None) -> subprocess.Popen[str]:
        """The pod's probes of `targets` (addresses; else every pod's), printing 1 or 0
        for each."""
        addresses = targets if targets is not None else [self.ips[pod] for pod in ALL_PODS]
        return subprocess.Popen(
            ["nsenter", f"--net={self.network_namespace(source)}", sys.executable, "-I",
             "-S", "-c", PROBE, protocol, str(port), *addresses],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def network_namespace(self, pod: str) -> Path:
        """The pod's network namespace: that of its server process (the one whose
        POD_NAME is the pod's), checked to hold the pod's address; looked up once."""
        if pod not in self.namespaces:
            self.namespaces[pod] = self._find_network_namespace(pod)
        return self.namespaces[pod]

    def _find_network_namespace(self, pod: str) -> Path:
        wanted = f"POD_NAME={pod}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if wanted not in (entry / "environ").read_bytes().split(b"\0"):
                    continue
                if f"-- {self.ips[pod]}\n" in (entry / "net" / "fib_trie").read_text():
                    return entry / "ns" / "net"
            except OSError:  # a process that ended meanwhile
                continue
        raise AssertionError(f"no process of pod {pod} with its address {self.ips[pod]}")

    def probe_all(self, reachability: Reachability, protocol: str, port: int) -> None:
        """Every pod probes every pod (each source's probes at once, all sources at once)."""
        reachability.observed.clear()
        running = {source: self.probe_from(source, protocol, port) for source in ALL_PODS}
        for source, process in running.items():
            out, err = process.communicate(timeout=60)
            results = out.split()
            if process.returncode != 0 or len(results) != len(ALL_PODS):
                raise AssertionError(f"probing from {source} failed: {err.strip()}")
            for target, result in zip(ALL_PODS, results, strict=True):
                reachability.observe(source, target, result == "1")

    def validate_or_fail(self, reachability: Reachability, port: int,
                         protocol: str = "TCP") -> None:
        """upstream's ValidateOrFail: probe until the matrix is the expected one; else
        fail printing the matrices."""
        deadline = time.monotonic() + CHECK_TIMEOUT
        while True:
            self.probe_all(reachability, protocol, port)
            wrong = reachability.wrong()
            if not wrong:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"{len(wrong)} wrong results in the reachability matrix "
                            f"({protocol}/{port}):\n{reachability.pretty()}", pytrace=False)
            time.sleep(0.5)

    def create_policy(self, namespace: str, policy: dict[str, Any]) -> None:
        apply(self.home, {**policy, "metadata": {**policy["metadata"], "namespace": namespace}})

    def label_pod(self, pod: str, labels: dict[str, str]) -> None:
        namespace, name = pod.split("/")
        kubectl(self.home, "label", "pod", "-n", namespace, name, "--overwrite",
                *(f"{k}={v}" for k, v in labels.items()))
        self.added.append(("pod", "-n", namespace, name,
                           *(f"{k}-" for k in labels if k != "pod")))

    def label_namespace(self, namespace: str, labels: dict[str, str]) -> None:
        kubectl(self.home, "label", "namespace", namespace, "--overwrite",
                *(f"{k}={v}" for k, v in labels.items()))
        self.added.append(("namespace", namespace, *(f"{k}-" for k in labels if k != NS_LABEL)))

    def undo(self) -> None:
        """Delete the case's policies and remove the labels it added to the shared pods
        and namespaces."""
        for namespace in NAMESPACES:
            kubectl(self.home, "delete", "networkpolicies", "--all", "-n", namespace,
                    "--wait=false")
        for labelled in self.added:
            kubectl(self.home, "label", *labelled)


@pytest.fixture(scope="module")
def cluster_home(lane_cluster: LaneCluster) -> Iterator[Path]:
    """The lane's cluster (two workers) with this module's namespaces x, y and z and
    their nine pods: a directory whose kubeconfig reaches it."""
    with lane_cluster.namespaces(__name__, *NAMESPACES) as home:
        for namespace in NAMESPACES:
            for name in POD_NAMES:
                apply(home, pod_manifest(namespace, name))
        for namespace in NAMESPACES:
            kubectl(home, "wait", "--for=condition=Ready", "pod", "--all", "-n", namespace,
                    "--timeout=180s")
        yield home


@pytest.fixture
def k8s(cluster_home: Path) -> Iterator[Cluster]:
    """The shared pods; afterwards, the case's policies and labels go again."""
    cluster = Cluster(cluster_home)
    yield cluster
    cluster.undo()


# --- policies, as upstream's GenNetworkPolicy* helpers make them ---------------------------

def policy(name: str, pod_selector: dict[str, Any] | None = None, *,
           ingress: list[dict[str, Any]] | None = None,
           egress: list[dict[str, Any]] | None = None,
           types: list[str] | None = None) -> dict[str, Any]:
    """A NetworkPolicy; `ingress`/`egress` None leaves that direction out, [] denies."""
    spec: dict[str, Any] = {"podSelector": pod_selector or {}}
    if ingress is not None:
        spec["ingress"] = ingress
    if egress is not None:
        spec["egress"] = egress
    spec["policyTypes"] = types or [kind for kind, rules in (("Ingress", ingress),
                                                             ("Egress", egress))
                                    if rules is not None]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name}, "spec": spec}


def labels(**match: str) -> dict[str, Any]:
    return {"matchLabels": match}


def ns_is(namespace: str) -> dict[str, Any]:
    return {"matchLabels": {NS_LABEL: namespace}}


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


def tcp(port: int | str, end_port: int | None = None, protocol: str = "TCP"
        ) -> dict[str, Any]:
    entry: dict[str, Any] = {"port": port, "protocol": protocol}
    if end_port is not None:
        entry["endPort"] = end_port
    return entry


def y_into_x_a(name: str, *ports: dict[str, Any]) -> dict[str, Any]:
    """Pod x/a admits namespace y (on `ports`, when given), as several cases write it."""
    rule: dict[str, Any] = {"from": [{"namespaceSelector": ns_is("y")}]}
    if ports:
        rule["ports"] = list(ports)
    return policy(name, labels(pod="a"), ingress=[rule])


# --- the matrices several cases expect -------------------------------------------------

def x_a_reached_only_from(*sources: str) -> Reachability:
    """Every pod reaches every pod, but x/a only from `sources` (none: x/a isolated)."""
    reachability = Reachability()
    reachability.expect_all_ingress("x/a", False)
    for source in sources:
        reachability.expect(source, "x/a", True)
    return reachability


def x_isolated(*, ingress: bool = True, egress: bool = False) -> Reachability:
    """Every pod reaches every pod, but with `ingress` none reaches the pods of namespace
    x, with `egress` they reach none."""
    reachability = Reachability()
    if ingress:
        reachability.expect_peer(Peer(), Peer("x"), False)
    if egress:
        reachability.expect_peer(Peer("x"), Peer(), False)
    return reachability


def x_a_reached_only_from_y() -> Reachability:
    """Every pod reaches every pod, but x/a only from namespace y."""
    reachability = Reachability()
    reachability.expect_peer(Peer("x"), Peer("x", "a"), False)
    reachability.expect_peer(Peer("z"), Peer("x", "a"), False)
    return reachability


# --- the cases of network_policy.go ----------------------------------------------------

def test_should_support_a_default_deny_ingress_policy(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("deny-ingress", ingress=[]))
    k8s.validate_or_fail(x_isolated(), 80)


def test_should_support_a_default_deny_all_policy(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("deny-all", ingress=[], egress=[]))
    k8s.validate_or_fail(x_isolated(egress=True), 80)


def test_should_enforce_policy_to_allow_traffic_from_pods_within_server_namespace_based_on_pod_selector(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("x-a-allows-x-b", labels(pod="a"),
                                  ingress=[{"from": [{"podSelector": labels(pod="b")}]}]))
    k8s.validate_or_fail(x_a_reached_only_from("x/b"), 80)


def test_should_enforce_policy_to_allow_ingress_traffic_for_a_target(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("deny-all", ingress=[]))
    k8s.create_policy("x", policy("allow-all-to-a", labels(pod="a"), ingress=[
        {"from": [{"podSelector": {}, "namespaceSelector": {}}]}]))
    reachability = Reachability()
    reachability.expect_all_ingress("x/a", True)
    reachability.expect_all_ingress("x/b", False)
    reachability.expect_all_ingress("x/c", False)
    k8s.validate_or_fail(reachability, 80)


def test_should_enforce_policy_to_allow_ingress_traffic_from_pods_in_all_namespaces(
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-from-another-ns", labels(pod="a"), ingress=[
        {"from": [{"namespaceSelector": {"matchLabels": {}}}]}]))
    k8s.validate_or_fail(Reachability(), 80)


def test_should_enforce_policy_to_allow_traffic_only_from_a_different_namespace_based_on_namespace_selector(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", y_into_x_a("allow-client-a-via-ns-selector"))
    k8s.validate_or_fail(x_a_reached_only_from_y(), 80)


def test_should_enforce_policy_based_on_pod_selector_with_match_expressions(
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("x-a-allows-x-b", labels(pod="a"), ingress=[
        {"from": [{"podSelector": expression("pod", "In", "b")}]}]))
    k8s.validate_or_fail(x_a_reached_only_from("x/b"), 80)


def test_should_enforce_policy_based_on_namespace_selector_with_match_expressions(
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-ns-y-match-selector", labels(pod="a"), ingress=[
        {"from": [{"namespaceSelector": expression(NS_LABEL, "In", "y")}]}]))
    k8s.validate_or_fail(x_a_reached_only_from_y(), 80)


def test_should_enforce_policy_based_on_pod_selector_or_namespace_selector(
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-ns-y-match-selector", labels(pod="a"), ingress=[
        {"from": [{"namespaceSelector": expression(NS_LABEL, "NotIn", "x")},
                  {"podSelector": labels(pod="b")}]}]))
    reachability = Reachability()
    reachability.expect("x/a", "x/a", False)
    reachability.expect("x/c", "x/a", False)
    k8s.validate_or_fail(reachability, 80)


def test_should_enforce_policy_based_on_pod_selector_and_namespace_selector(
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-ns-y-podselector-and-nsselector", labels(pod="a"),
                                  ingress=[{"from": [{
                                      "namespaceSelector": expression(NS_LABEL, "NotIn", "x"),
                                      "podSelector": labels(pod="b")}]}]))
    k8s.validate_or_fail(x_a_reached_only_from("y/b", "z/b"), 80)


def test_should_enforce_policy_based_on_multiple_pod_selectors_and_namespace_selectors(
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-ns-y-z-pod-b-c", labels(pod="a"), ingress=[{"from": [{
        "namespaceSelector": expression(NS_LABEL, "NotIn", "x"),
        "podSelector": expression("pod", "In", "b", "c")}]}]))
    reachability = Reachability()
    reachability.expect_peer(Peer("x"), Peer("x", "a"), False)
    reachability.expect("y/a", "x/a", False)
    reachability.expect("z/a", "x/a", False)
    k8s.validate_or_fail(reachability, 80)


def test_should_enforce_policy_based_on_any_pod_selectors(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-ns-x-pod-b-c", labels(pod="a"), ingress=[
        {"from": [{"podSelector": labels(pod="b")}, {"podSelector": labels(pod="c")}]}]))
    k8s.validate_or_fail(x_a_reached_only_from("x/b", "x/c"), 80)


def test_should_enforce_policy_to_allow_traffic_only_from_a_pod_in_a_different_namespace_based_on_pod_selector_and_namespace_selector(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-ns-y-pod-a-via-namespace-pod-selector", labels(pod="a"),
                                  ingress=[{"from": [{"namespaceSelector": ns_is("y"),
                                                      "podSelector": labels(pod="a")}]}]))
    k8s.validate_or_fail(x_a_reached_only_from("y/a"), 80)


def test_should_enforce_policy_based_on_ports(k8s: Cluster) -> None:
    k8s.create_policy("x", y_into_x_a("allow-client-a-via-ns-selector", tcp(81)))
    k8s.validate_or_fail(x_a_reached_only_from_y(), 81)


def test_should_enforce_multiple_stacked_policies_with_overlapping_pod_selectors(
        k8s: Cluster) -> None:
    k8s.create_policy("x", y_into_x_a("allow-client-a-via-ns-selector", tcp(81)))
    allow = x_a_reached_only_from_y()
    k8s.validate_or_fail(allow, 81)
    k8s.validate_or_fail(x_a_reached_only_from(), 80)
    k8s.create_policy("x", y_into_x_a("allow-client-a-via-ns-selector-80", tcp(80)))
    k8s.validate_or_fail(allow, 80)


def test_should_support_allow_all_policy(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-all", ingress=[{}]))
    k8s.validate_or_fail(Reachability(), 80)
    k8s.validate_or_fail(Reachability(), 81)


def test_should_allow_ingress_access_on_one_named_port(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-all", ingress=[{"ports": [{"port": "serve-81-tcp"}]}]))
    k8s.validate_or_fail(Reachability(), 81)
    k8s.validate_or_fail(x_isolated(), 80)


def test_should_allow_ingress_access_from_namespace_on_one_named_port(k8s: Cluster) -> None:
    k8s.create_policy("x", y_into_x_a("allow-client-a-via-ns-selector-80", tcp("serve-80-tcp")))
    k8s.validate_or_fail(x_a_reached_only_from_y(), 80)
    k8s.validate_or_fail(x_a_reached_only_from(), 81)


def test_should_allow_egress_access_on_one_named_port(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-egress", egress=[{"ports": [{"port": "serve-80-tcp"}]}]))
    k8s.validate_or_fail(Reachability(), 80)
    k8s.validate_or_fail(x_isolated(ingress=False, egress=True), 81)


def test_should_enforce_updated_policy(k8s: Cluster) -> None:
    mutating = policy("allow-all-mutate-to-deny-all", ingress=[{}])
    k8s.create_policy("x", mutating)
    k8s.validate_or_fail(Reachability(), 81)
    mutating["spec"]["ingress"] = []
    k8s.create_policy("x", mutating)
    k8s.validate_or_fail(x_isolated(), 81)


def test_should_allow_ingress_access_from_updated_namespace(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-client-a-via-ns-selector", labels(pod="a"), ingress=[
        {"from": [{"namespaceSelector": labels(ns2="updated")}]}]))
    k8s.validate_or_fail(x_a_reached_only_from(), 80)
    k8s.label_namespace("y", {"ns2": "updated"})
    with_label = Reachability()
    with_label.expect_all_ingress("x/a", False)
    with_label.expect_peer(Peer("y"), Peer(), True)
    k8s.validate_or_fail(with_label, 80)


def test_should_allow_ingress_access_from_updated_pod(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-client-a-via-pod-selector", labels(pod="a"), ingress=[
        {"from": [{"podSelector": labels(pod="b", pod2="updated")}]}]))
    k8s.validate_or_fail(x_a_reached_only_from(), 80)
    k8s.label_pod("x/b", {"pod": "b", "pod2": "updated"})
    k8s.validate_or_fail(x_a_reached_only_from("x/b"), 80)


def test_should_deny_ingress_from_pods_on_other_namespaces(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("deny-empty-policy", ingress=[
        {"from": [{"podSelector": {"matchLabels": {}}}]}]))
    reachability = Reachability()
    reachability.expect_peer(Peer("y"), Peer("x"), False)
    reachability.expect_peer(Peer("z"), Peer("x"), False)
    k8s.validate_or_fail(reachability, 80)


def test_should_deny_ingress_access_to_updated_pod(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("deny-ingress-via-label-selector", labels(target="isolated"),
                                  ingress=[]))
    k8s.validate_or_fail(Reachability(), 80)
    k8s.label_pod("x/a", {"target": "isolated"})
    k8s.validate_or_fail(x_a_reached_only_from(), 80)


def test_should_deny_egress_from_pods_based_on_pod_selector(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("deny-egress-pod-a", labels(pod="a"), egress=[]))
    reachability = Reachability()
    reachability.expect_all_egress("x/a", False)
    k8s.validate_or_fail(reachability, 80)


def test_should_deny_egress_from_all_pods_in_a_namespace(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("deny-egress-ns-x", egress=[]))
    k8s.validate_or_fail(x_isolated(ingress=False, egress=True), 80)


def test_should_work_with_ingress_egress_specified_together(k8s: Cluster) -> None:
    k8s.create_policy("x", policy(
        "allow-client-a-via-pod-selector", labels(pod="a"),
        ingress=[{"from": [{"podSelector": labels(pod="b")}]}],
        egress=[{"ports": [{"port": 80}]}], types=["Egress", "Ingress"]))
    k8s.validate_or_fail(x_a_reached_only_from("x/b"), 80)
    port81 = Reachability()
    port81.expect_all_ingress("x/a", False)
    port81.expect_all_egress("x/a", False)
    port81.expect("x/b", "x/a", True)
    k8s.validate_or_fail(port81, 81)


def test_should_support_denying_of_egress_traffic_on_the_client_side_even_if_the_server_explicitly_allows_this_traffic(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-to-ns-y-pod-a", labels(pod="a"), egress=[
        {"to": [{"namespaceSelector": ns_is("y"), "podSelector": labels(pod="a")}]}]))
    from_x_a = [{"from": [{"namespaceSelector": ns_is("x"), "podSelector": labels(pod="a")}]}]
    k8s.create_policy("y", policy("allow-from-xa-on-ya-match-selector", labels(pod="a"),
                                  ingress=from_x_a))
    k8s.create_policy("y", policy("allow-from-xa-on-yb-match-selector", labels(pod="b"),
                                  ingress=from_x_a))
    reachability = Reachability()
    reachability.expect_peer(Peer("x", "a"), Peer(), False)
    reachability.expect_peer(Peer(), Peer("y", "a"), False)
    reachability.expect_peer(Peer("x", "a"), Peer("y", "a"), True)
    reachability.expect_peer(Peer(), Peer("y", "b"), False)
    k8s.validate_or_fail(reachability, 80)


def test_should_enforce_egress_policy_allowing_traffic_to_a_server_in_a_different_namespace_based_on_pod_selector_and_namespace_selector(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-to-ns-y-pod-a", labels(pod="a"), egress=[
        {"to": [{"namespaceSelector": ns_is("y"), "podSelector": labels(pod="a")}]}]))
    reachability = Reachability()
    reachability.expect_all_egress("x/a", False)
    reachability.expect("x/a", "y/a", True)
    k8s.validate_or_fail(reachability, 80)


def test_should_enforce_ingress_policy_allowing_any_port_traffic_to_a_server_on_a_specific_protocol(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-ingress-by-proto", labels(pod="a"), ingress=[
        {"ports": [{"protocol": "TCP"}]}]))
    k8s.validate_or_fail(Reachability(), 80, "TCP")
    udp = Reachability()
    udp.expect_peer(Peer(), Peer("x", "a"), False)
    k8s.validate_or_fail(udp, 80, "UDP")


def test_should_enforce_multiple_ingress_policies_with_ingress_allow_all_policy_taking_precedence(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-ingress-port-80", ingress=[{"ports": [{"port": 80}]}]))
    k8s.validate_or_fail(x_isolated(), 81)
    k8s.create_policy("x", policy("allow-ingress", ingress=[{}]))
    k8s.validate_or_fail(Reachability(), 81)


def test_should_enforce_multiple_egress_policies_with_egress_allow_all_policy_taking_precedence(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-egress-port-80", egress=[{"ports": [{"port": 80}]}]))
    k8s.validate_or_fail(x_isolated(ingress=False, egress=True), 81)
    k8s.create_policy("x", policy("allow-egress", egress=[{}]))
    k8s.validate_or_fail(Reachability(), 81)


def test_should_stop_enforcing_policies_after_they_are_deleted(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("deny-all", ingress=[], egress=[]))
    k8s.validate_or_fail(x_isolated(egress=True), 80)
    kubectl(k8s.home, "delete", "networkpolicies", "--all", "-n", "x")
    k8s.validate_or_fail(Reachability(), 80)


def large_cidr_for(ip: str) -> str:
    """upstream's makeLargeCIDRForIP: the /4 that holds the address."""
    return str(ipaddress.ip_network(f"{ip}/4", strict=False))


def test_should_allow_egress_access_to_server_in_cidr_block(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-client-a-via-cidr-egress-rule", labels(pod="a"),
                                  egress=[{"to": [{"ipBlock": {"cidr": f"{k8s.ips['y/b']}/32"}}]}]))
    reachability = Reachability()
    reachability.expect_all_egress("x/a", False)
    reachability.expect("x/a", "y/b", True)
    k8s.validate_or_fail(reachability, 80)


def test_should_enforce_except_clause_while_egress_access_to_server_in_cidr_block(
        k8s: Cluster) -> None:
    pod_b = k8s.ips["x/b"]
    k8s.create_policy("x", policy("allow-client-a-via-cidr-egress-rule", labels(pod="a"),
                                  egress=[{"to": [{"ipBlock": {
                                      "cidr": large_cidr_for(pod_b),
                                      "except": [f"{pod_b}/32"]}}]}]))
    reachability = Reachability()
    reachability.expect("x/a", "x/b", False)
    k8s.validate_or_fail(reachability, 80)


def test_should_ensure_an_ip_overlapping_both_ip_block_cidr_and_ip_block_except_is_allowed(
        k8s: Cluster) -> None:
    pod_b = k8s.ips["x/b"]
    allow_cidr = policy("allow-client-a-via-cidr-egress-rule", labels(pod="a"), egress=[
        {"to": [{"ipBlock": {"cidr": large_cidr_for(pod_b), "except": [f"{pod_b}/32"]}}]}])
    k8s.create_policy("x", allow_cidr)
    reachability = Reachability()
    reachability.expect("x/a", "x/b", False)
    k8s.validate_or_fail(reachability, 80)
    k8s.create_policy("x", policy("allow-client-a-via-cidr-egress-rule", labels(pod="a"),
                                  egress=[{"to": [{"ipBlock": {"cidr": f"{pod_b}/32"}}]}]))
    allow = Reachability()
    allow.expect_all_egress("x/a", False)
    allow.expect("x/a", "x/b", True)
    k8s.validate_or_fail(allow, 80)


def test_should_enforce_policies_to_check_ingress_and_egress_policies_can_be_controlled_independently_based_on_pod_selector(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-egress-for-target", labels(pod="a"), egress=[{}]))
    k8s.validate_or_fail(Reachability(), 80)
    k8s.create_policy("x", policy("deny-ingress-via-label-selector", labels(pod="a"),
                                  ingress=[]))
    k8s.validate_or_fail(x_a_reached_only_from(), 80)


def test_should_not_mistakenly_treat_protocol_sctp_as_protocol_tcp(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("deny-ingress", ingress=[]))
    k8s.create_policy("x", policy("allow-only-sctp-ingress-on-port-81", labels(pod="a"),
                                  ingress=[{"ports": [tcp(81, protocol="SCTP")]}]))
    k8s.validate_or_fail(x_isolated(), 81)


def test_should_properly_isolate_pods_that_are_selected_by_a_policy_allowing_sctp(
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-only-sctp-ingress-on-port-80", labels(pod="a"),
                                  ingress=[{"ports": [tcp(80, protocol="SCTP")]}]))
    k8s.validate_or_fail(x_a_reached_only_from(), 81)


def test_should_not_allow_access_by_tcp_when_a_policy_specifies_only_udp(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-only-udp-ingress-on-port-81", labels(pod="a"),
                                  ingress=[{"ports": [tcp(81, protocol="UDP")]}]))
    k8s.validate_or_fail(x_a_reached_only_from(), 81)


def test_should_enforce_policy_based_on_namespace_selector_with_match_expressions_using_default_ns_label(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-ns-y-match-selector-for-immutable-ns-label",
                                  labels(pod="a"), egress=[{"to": [{
                                      "namespaceSelector": expression(NS_LABEL, "NotIn", "y")}]}]))
    reachability = Reachability()
    reachability.expect_peer(Peer("x", "a"), Peer("y"), False)
    k8s.validate_or_fail(reachability, 80)


def test_should_enforce_policy_to_allow_traffic_based_on_namespace_selector_with_match_labels_using_default_ns_label(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-client-a-via-ns-selector-for-immutable-ns-label",
                                  labels(pod="a"),
                                  ingress=[{"from": [{"namespaceSelector": ns_is("y")}]}]))
    k8s.validate_or_fail(x_a_reached_only_from_y(), 80)


# --- UDP: the "NetworkPolicy between server and client using UDP" context ---------------

def test_udp_should_support_a_default_deny_ingress_policy(k8s: Cluster) -> None:
    k8s.create_policy("x", policy("deny-all", ingress=[]))
    k8s.validate_or_fail(x_isolated(), 80, "UDP")


def test_udp_should_enforce_policy_based_on_ports(k8s: Cluster) -> None:
    k8s.create_policy("x", y_into_x_a("allow-ingress-on-port-81-ns-x", tcp(81, protocol="UDP")))
    k8s.validate_or_fail(x_a_reached_only_from_y(), 81, "UDP")


def test_udp_should_enforce_policy_to_allow_traffic_only_from_a_pod_in_a_different_namespace_based_on_pod_selector_and_namespace_selector(  # noqa: E501
        k8s: Cluster) -> None:
    k8s.create_policy("x", policy("allow-ns-y-pod-a-via-namespace-pod-selector", labels(pod="a"),
                                  ingress=[{"from": [{"namespaceSelector": ns_is("y"),
                                                      "podSelector": labels(pod="a")}]}]))
    k8s.validate_or_fail(x_a_reached_only_from("y/a"), 80, "UDP")


# --- beyond network_policy.go: endPort, Services, the node's own traffic ---------------

def test_should_enforce_policy_based_on_a_port_range_with_end_port(k8s: Cluster) -> None:
    """[Feature:NetworkPolicyEndPort]: ports 81-90 open, port 80 not."""
    k8s.create_policy("x", y_into_x_a("allow-81-to-90", tcp(81, end_port=90)))
    k8s.validate_or_fail(x_a_reached_only_from_y(), 81)
    k8s.validate_or_fail(x_a_reached_only_from(), 80)


def test_service_traffic_is_judged_by_the_endpoint_pod_after_dnat(k8s: Cluster) -> None:
    """A ClusterIP whose one endpoint is x/a: a policy allowing only y into x/a lets y/b
    through the Service and keeps x/b out, though neither names the pod's address."""
    apply(k8s.home, {"apiVersion": "v1", "kind": "Service",
                     "metadata": {"name": "to-a", "namespace": "x"},
                     "spec": {"selector": {"pod": "a"}, "ports": [{"port": 8080,
                                                                  "targetPort": 80}]}})
    try:
        cluster_ip = json.loads(kubectl(k8s.home, "get", "service", "-n", "x", "to-a", "-o",
                                        "json").stdout)["spec"]["clusterIP"]
        k8s.create_policy("x", policy("allow-y-to-a", labels(pod="a"), ingress=[
            {"from": [{"namespaceSelector": ns_is("y")}]}]))

        def through_service(source: str) -> bool:
            process = k8s.probe_from(source, "TCP", 8080, [cluster_ip])
            out, _ = process.communicate(timeout=60)
            return out.strip() == "1"

        deadline = time.monotonic() + CHECK_TIMEOUT
        while not (through_service("y/b") and not through_service("x/b")):
            assert time.monotonic() < deadline, (
                "y/b should reach x/a through its Service and x/b should not")
            time.sleep(0.5)
    finally:
        kubectl(k8s.home, "delete", "service", "-n", "x", "to-a", "--wait=false")


def test_the_node_reaches_its_isolated_pods(k8s: Cluster) -> None:
    """Traffic from a pod's own node (the kubelet's probes) is never judged: with every
    pod of x denied all ingress, each node still connects to its pods of x."""
    k8s.create_policy("x", policy("deny-all", ingress=[]))
    k8s.validate_or_fail(x_isolated(), 80)
    for pod in ("x/a", "x/b", "x/c"):
        answer = in_node(k8s.nodes[pod], sys.executable, "-c",
                         "import socket, sys; s = socket.create_connection((sys.argv[1], 80),"
                         " timeout=5); print(s.recv(64).decode())", k8s.ips[pod])
        assert answer.strip() == pod
