"""`minikube-py token` and `minikube-py join`: a "machine" that shares nothing with the
control plane but the network (its own network namespace on the bridge, its own home) is
given the line `token create --print-join-command` prints, and becomes a node."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api_helpers import until
from tests.test_cluster_cli import alive, host_network, kubectl, launcher, mounts_and_processes

pytestmark = pytest.mark.slow

# the endpoint: the control-plane node's API server (172.18.0.10), or with --layout
# processes the host's (172.18.0.1)
JOIN_LINE = re.compile(r"minikube-py join (172\.18\.0\.10?:\d+) --token ([a-z0-9]{6}\.[a-z0-9]{16})"
                       r" --discovery-token-ca-cert-hash (sha256:[0-9a-f]{64})")
EXPIRED_WORDING = ('token id "{}" is invalid for this cluster or it has expired. Use '
                   '"minikube-py token create" on the control-plane node to create a new '
                   "valid token")


def join_args(line: str) -> list[str]:
    """The printed line, as the other machine runs it: `minikube-py join ...`."""
    words = line.split()
    assert words[:2] == ["minikube-py", "join"], line
    return words[1:]


def machine_leftovers(home: Path) -> list[str]:
    """What a joining machine may leave: processes or mounts naming its home, its network
    namespace, its veth on the bridge, a route to its pods."""
    namespaces, links, routes = host_network()
    return (mounts_and_processes(home) + [line for line in namespaces if line.startswith("mkj-")]
            + [line for line in links if ": mkj" in line]
            + [line for line in routes if re.search(r"via 172\.18\.0\.2\d\d ", line)])


@pytest.fixture(scope="module")
def control_plane(fast_tmp: Path) -> Iterator[Path]:
    """A secured cluster with one node of its own, in its own home."""
    home = fast_tmp / "control-plane-home"
    try:
        started = launcher(home, "up", "--nodes", "1", check=False)
        assert started.returncode == 0, started.stdout + started.stderr
        yield home
    finally:
        launcher(home, "down", "--purge", check=False)


@pytest.fixture
def machine(fast_tmp: Path) -> Iterator[Path]:
    """The other machine's home (not made: `join` makes it); whatever it runs is stopped
    and removed afterwards."""
    home = fast_tmp / "machine-home"
    try:
        yield home
    finally:
        if home.exists():
            launcher(home, "down", "--purge", check=False)


def printed_join_line(control_plane: Path, *flags: str) -> str:
    line = launcher(control_plane, "token", "create", "--print-join-command", *flags).stdout
    assert JOIN_LINE.fullmatch(line.strip()), line
    return line.strip()


def test_token_create_list_delete_as_kubeadm(control_plane: Path) -> None:
    token = launcher(control_plane, "token", "create", "--ttl", "1h",
                     "--description", "for the lab").stdout.strip()
    assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", token), token
    listed = launcher(control_plane, "token", "list").stdout.splitlines()
    assert re.fullmatch(r"TOKEN +TTL +EXPIRES +USAGES +DESCRIPTION +EXTRA GROUPS",
                        listed[0]), listed
    row = next(line for line in listed if line.startswith(token))
    assert re.fullmatch(
        rf"{re.escape(token)}   (59m|1h) +\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ   "
        r"authentication,signing   for the lab +"
        r"system:bootstrappers:kubeadm:default-node-token", row), row
    # the line's endpoint and hash are the cluster's: the admin kubeconfig's server and CA
    endpoint, _, ca_hash = JOIN_LINE.fullmatch(printed_join_line(control_plane)).groups()
    server = kubectl(control_plane, "config", "view", "-o",
                     "jsonpath={.clusters[0].cluster.server}").stdout
    assert server == f"https://{endpoint}"
    from minikube_py.cluster.bootstraptoken import ca_cert_hash
    assert ca_hash == ca_cert_hash((control_plane / "pki" / "ca.crt").read_bytes())
    deleted = launcher(control_plane, "token", "delete", token)
    assert deleted.stdout == f'bootstrap token "{token.split(".")[0]}" deleted\n'
    assert token not in launcher(control_plane, "token", "list").stdout
    missing = launcher(control_plane, "token", "delete", token, check=False)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1, missing.stderr
    assert f'failed to delete bootstrap token "{token.split(".")[0]}"' in missing.stderr


def test_wrong_hash_refuses_before_the_token_is_sent(control_plane: Path,
                                                     machine: Path) -> None:
    line = printed_join_line(control_plane)
    wrong = "sha256:" + "0" * 64
    # an unknown token too: were it sent before the CA is pinned, the answer would be 401
    unknown = "abcdef.0123456789abcdef"
    for token_flags in ([], ["--token", unknown]):
        args = [*join_args(line), "--discovery-token-ca-cert-hash", wrong, *token_flags]
        # the line's own hash is replaced (argparse keeps every hash: drop the good one)
        good = args.index("--discovery-token-ca-cert-hash")
        del args[good:good + 2]
        refused = launcher(machine, *args, check=False)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        error = refused.stderr.strip()
        assert error.count("\n") == 0 and "Traceback" not in refused.stderr, refused.stderr
        assert error.startswith("error: couldn't validate the identity of the API Server: "
                                "cluster CA found in cluster-info ConfigMap is invalid: "
                                "none of the public keys"), error
        assert error.endswith("are pinned"), error
        assert not machine.exists() and machine_leftovers(machine) == []


def test_wrong_token_gets_the_servers_401_in_one_line(control_plane: Path,
                                                      machine: Path) -> None:
    args = join_args(printed_join_line(control_plane))
    good = args[args.index("--token") + 1]
    # an id the cluster does not know; the cluster's id with a wrong secret
    for wrong in ("zzzzzz.0123456789abcdef", good[:7] + "0123456789abcdef"):
        args[args.index("--token") + 1] = wrong
        started = time.monotonic()
        refused = launcher(machine, *args, check=False)
        # soon: not kubeadm's five minutes of waiting for a signature that never comes
        assert time.monotonic() - started < 60
        assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
        error = refused.stderr.strip()
        assert error.count("\n") == 0, error
        assert "401 Unauthorized" in error and f'token id "{wrong[:6]}"' in error, error
        assert "minikube-py token create" in error, error
        assert not machine.exists() and machine_leftovers(machine) == []


def test_expired_token_fails_in_kubeadms_words(control_plane: Path, machine: Path) -> None:
    line = printed_join_line(control_plane, "--ttl", "1s")
    token = JOIN_LINE.fullmatch(line).group(2)
    token_id = token.split(".")[0]
    deadline = time.monotonic() + 60  # bounds a failure only
    while token in (listed := launcher(control_plane, "token", "list").stdout) and (
            "<invalid>" not in next(row for row in listed.splitlines() if token in row)):
        assert time.monotonic() < deadline, listed
        time.sleep(0.5)
    refused = launcher(machine, *join_args(line), check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    error = refused.stderr.strip()
    assert error.count("\n") == 0, error
    assert EXPIRED_WORDING.format(token_id).split(". Use")[0] in error, error
    assert 'Use "minikube-py token create" on the control-plane node' in error, error
    assert not machine.exists() and machine_leftovers(machine) == []


def wait_kube_proxy_pod_running(control_plane: Path, node: str) -> str:
    """The name of the kube-proxy DaemonSet's pod on `node`, once it is Running and Ready."""
    deadline = time.monotonic() + 180  # bounds a failure only
    while True:
        listed = kubectl(control_plane, "get", "pods", "-n", "kube-system", "-l",
                         "k8s-app=kube-proxy", "--field-selector", f"spec.nodeName={node}",
                         "-o", "jsonpath={range .items[*]}{.metadata.name} {.status.phase} "
                         "{.status.conditions[?(@.type=='Ready')].status}{'\\n'}{end}"
                         ).stdout.split()
        if listed[1:] == ["Running", "True"]:
            return listed[0]
        assert time.monotonic() < deadline, f"kube-proxy on {node}: {listed}"
        time.sleep(1)


def wait_service_rules(namespace: Path, service_port: str) -> None:
    """The nat table of the node's network namespace has the proxy's chain for the
    Service port (kube-proxy's comment: `namespace/name:port`)."""
    deadline = time.monotonic() + 60  # bounds a failure only
    while True:
        rules = subprocess.run(["nsenter", f"--net={namespace}", "iptables-save", "-t", "nat"],
                               capture_output=True, text=True, timeout=30).stdout
        if "KUBE-SERVICES" in rules and service_port in rules:
            return
        assert time.monotonic() < deadline, rules[-2000:]
        time.sleep(1)


ECHO_POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: web-joined, labels: {{run: web-joined}}}}
spec:
  nodeName: {node}
  containers:
  - name: web
    image: localhost/echo:1.0
    ports: [{{containerPort: 8080}}]
    readinessProbe: {{httpGet: {{path: /, port: 8080}}, periodSeconds: 1}}
"""


def test_a_machine_given_only_the_join_line_becomes_a_node_and_down_removes_it(
        control_plane: Path, machine: Path) -> None:
    line = printed_join_line(control_plane)
    joined = launcher(machine, *join_args(line), "--node-name", "machine-2")
    assert "This node has joined the cluster as machine-2" in joined.stdout, joined.stdout
    # the machine holds none of the control plane's secrets: its own identity only
    assert not (machine / "pki" / "ca.key").exists() and not (machine / "etcd").exists()
    assert sorted(p.name for p in (machine / "pki").iterdir()) == ["ca.crt"]
    try:
        kubectl(control_plane, "wait", "--for=condition=Ready", "node/machine-2",
                "--timeout=120s")
        address = kubectl(control_plane, "get", "node", "machine-2", "-o",
                          "jsonpath={.status.addresses[0].address}").stdout
        assert re.fullmatch(r"172\.18\.0\.2\d\d", address), address
        # its kubelet authenticated as the node, with the certificate it earned
        csrs = kubectl(control_plane, "get", "csr", "-o",
                       "jsonpath={range .items[*]}{.spec.username} {.spec.signerName}"
                       "{'\\n'}{end}").stdout
        assert re.search(r"^system:bootstrap:[a-z0-9]{6} kubernetes.io/kube-apiserver-client-"
                         r"kubelet$", csrs, re.M), csrs
        subprocess.run([str(Path(sys.executable).with_name("kubectl")),
                        f"--kubeconfig={control_plane / 'kubeconfig'}", "apply", "-f", "-"],
                       input=ECHO_POD.format(node="machine-2"), capture_output=True,
                       text=True, timeout=60, check=True)
        kubectl(control_plane, "wait", "--for=condition=Ready", "pod/web-joined",
                "--timeout=120s")
        pod_ip = kubectl(control_plane, "get", "pod", "web-joined", "-o",
                         "jsonpath={.status.podIP}").stdout
        page = subprocess.run(["busybox", "wget", "-q", "-O-", f"http://{pod_ip}:8080/"],
                              capture_output=True, text=True, timeout=30)
        assert page.returncode == 0 and "web-joined" in page.stdout, page
        # its containers run under the machine's own containerd, in its namespace; as
        # `kubeadm join`, it started containerd and the kubelet, and no proxy
        pid_files = sorted(p.name for p in (machine / "run").rglob("*.pid"))
        assert pid_files == ["containerd.pid", "kubelet.pid", "supervisor.pid"], pid_files
        running = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in
                   (p.read_text().strip() for p in (machine / "run").rglob("*.pid"))]
        assert all(str(machine).encode() in cmd or b"supervise-node" in cmd
                   for cmd in running), running
        assert "kube-proxy: the cluster's DaemonSet runs it" in joined.stdout, joined.stdout
        # the kube-proxy DaemonSet's pod runs there (its image pulled from the registry
        # the machine uses) and programs the machine's iptables
        proxy_pod = wait_kube_proxy_pod_running(control_plane, "machine-2")
        assert kubectl(control_plane, "get", "pod", "-n", "kube-system", proxy_pod, "-o",
                       "jsonpath={.spec.nodeName}").stdout == "machine-2"
        wait_service_rules(Path("/var/run/netns/mkj-machine-2"), "default/kubernetes:https")
        # supervised there: a killed kubelet is started again
        kubelet_pid = machine / "run" / "machine-2" / "kubelet.pid"
        killed = int(kubelet_pid.read_text())
        os.kill(killed, signal.SIGKILL)

        def restarted() -> bool:
            # the supervisor removes a dead process's pid file before it starts it again
            try:
                pid = int(kubelet_pid.read_text() or 0)
            except FileNotFoundError:
                return False
            return pid != killed and alive(pid)

        until(restarted, "the supervisor to restart the kubelet", 60, interval=0.5)
        kubectl(control_plane, "wait", "--for=condition=Ready", "node/machine-2",
                "--timeout=120s")
        again = launcher(machine, *join_args(line), check=False)
        assert again.returncode == 1 and "is node machine-2 of" in again.stderr
    finally:
        down = launcher(machine, "down", "--purge")
    assert "stopped machine-2/kubelet" in down.stdout, down.stdout
    assert "removed the network namespace mkj-machine-2" in down.stdout, down.stdout
    assert not machine.exists() and machine_leftovers(machine) == []
    # the control plane is untouched: its own node still runs
    kubectl(control_plane, "delete", "pod", "web-joined", "--wait=false")
    kubectl(control_plane, "delete", "node", "machine-2")
    assert "node-1" in kubectl(control_plane, "get", "nodes", "-o", "name").stdout
