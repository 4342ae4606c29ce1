"""Into the pod, as a student reaches in: `kubectl exec` (exit codes, stdin, a TTY),
`kubectl attach`, and the official Python client's `stream()` and `portforward()`, on a
real one-node cluster (API server -> kubelet -> containerd's streaming server)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.stream import portforward, stream

from tests.test_cluster_cli import kubectl, launcher

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).with_name("kubectl"))


@pytest.fixture(scope="module")
def cluster(fast_tmp: Path) -> Iterator[Path]:
    home = fast_tmp / "into-the-pod"
    launcher(home, "up", "--extra-config=metrics.metric-resolution=2s")
    try:
        kubectl(home, "wait", "--for=condition=Ready", "node/node-1", "--timeout=60s")
        kubectl(home, "run", "shell", "--image=busybox:1.36", "--", "sleep", "3600")
        kubectl(home, "run", "ticker", "--image=busybox:1.36", "--", "sh", "-c",
                "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done")
        kubectl(home, "run", "web", "--image=nginx")
        for pod in ("shell", "ticker", "web"):
            kubectl(home, "wait", "--for=condition=Ready", f"pod/{pod}", "--timeout=60s")
        yield home
    finally:
        launcher(home, "down", "--purge", check=False)


def run(home: Path, *args: str, stdin: str | None = None,
        timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, f"--kubeconfig={home / 'kubeconfig'}", *args],
                          input=stdin, capture_output=True, text=True, timeout=timeout)


def api(home: Path) -> client.CoreV1Api:
    configuration = client.Configuration()
    config.load_kube_config(str(home / "kubeconfig"), client_configuration=configuration)
    return client.CoreV1Api(client.ApiClient(configuration))


def test_kubectl_exec_keeps_stdout_stderr_and_the_exit_code(cluster: Path) -> None:
    done = run(cluster, "exec", "shell", "--", "sh", "-c",
               "echo to-out; echo to-err >&2; exit 3")
    assert done.returncode == 3, done
    assert done.stdout == "to-out\n"
    assert "to-err\n" in done.stderr
    assert "command terminated with exit code 3" in done.stderr
    assert run(cluster, "exec", "shell", "--", "true").returncode == 0


def test_kubectl_exec_reads_stdin(cluster: Path) -> None:
    done = run(cluster, "exec", "-i", "shell", "--", "head", "-n", "1",
               stdin="first line\nsecond line\n")
    assert (done.returncode, done.stdout) == (0, "first line\n"), done


def test_kubectl_exec_it_gets_a_terminal(cluster: Path) -> None:
    # `script` gives kubectl a terminal of its own, as a student's shell has
    command = f"{KUBECTL} --kubeconfig={cluster / 'kubeconfig'} exec -it shell -- " \
              "sh -c 'tty; exit 5'"
    done = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True,
                          text=True, timeout=30)
    assert "/dev/pts/" in done.stdout, done
    assert done.returncode == 5


def test_kubectl_attach_shows_the_containers_output(cluster: Path) -> None:
    try:
        subprocess.run([KUBECTL, f"--kubeconfig={cluster / 'kubeconfig'}", "attach",
                        "ticker"], capture_output=True, text=True, timeout=3)
    except subprocess.TimeoutExpired as attached:  # attach runs until stopped
        output = attached.stdout.decode() if isinstance(attached.stdout, bytes) else ""
    else:
        raise AssertionError("kubectl attach ended by itself")
    assert "tick " in output, output


def test_the_python_clients_stream_gets_output_and_exit_code(cluster: Path) -> None:
    core = api(cluster)
    answer = stream(core.connect_get_namespaced_pod_exec, "shell", "default",
                    command=["sh", "-c", "echo out; echo err >&2; exit 7"],
                    stdin=False, stdout=True, stderr=True, tty=False,
                    _preload_content=False)
    answer.run_forever(timeout=20)
    assert (answer.read_stdout(), answer.read_stderr(), answer.returncode) == (
        "out\n", "err\n", 7)
    # with stdin: a shell reading commands from the client
    session = stream(core.connect_get_namespaced_pod_exec, "shell", "default",
                     command=["sh"], stdin=True, stdout=True, stderr=True, tty=False,
                     _preload_content=False)
    session.write_stdin("echo from-stdin; exit 4\n")
    session.run_forever(timeout=20)
    assert session.read_stdout() == "from-stdin\n"
    assert session.returncode == 4


def fetch_through_port_forward(core: client.CoreV1Api) -> bytes:
    """GET / from the web pod's port 80 through the API server's pods/portforward."""
    forward = portforward(core.connect_get_namespaced_pod_portforward, "web", "default",
                          ports="80")
    try:
        connection = forward.socket(80)
        connection.setblocking(True)
        connection.settimeout(20)
        connection.sendall(b"GET / HTTP/1.1\r\nHost: web\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
        connection.close()
        assert forward.error(80) is None
        return answer
    finally:
        forward.close()


def test_the_python_clients_port_forward_reaches_the_pod(cluster: Path) -> None:
    core = api(cluster)
    answer = fetch_through_port_forward(core)
    assert answer.startswith(b"HTTP/1.1 200 OK") and b"Welcome to nginx!" in answer
    # several at once, each its own forwarding session
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: fetch_through_port_forward(core), range(8)))
    assert all(b"Welcome to nginx!" in a for a in answers)


def test_port_forward_to_a_closed_port_reports_an_error_and_does_not_hang(
        cluster: Path) -> None:
    forward = portforward(api(cluster).connect_get_namespaced_pod_portforward, "web",
                          "default", ports="81")
    try:
        connection = forward.socket(81)
        connection.setblocking(True)
        connection.settimeout(20)
        try:
            connection.sendall(b"hello")
            received = connection.recv(100)
        except (BrokenPipeError, ConnectionResetError):
            received = b""  # closed even before the write
        assert received == b"", received  # closed, not hanging (a timeout would raise)
        assert "81" in (forward.error(81) or ""), forward.error(81)
    finally:
        forward.close()


def test_proxy_reaches_a_pod_a_service_and_a_node(cluster: Path) -> None:
    kubectl(cluster, "expose", "pod", "web", "--port=8000", "--target-port=80",
            "--labels=test=proxy")
    kubectl(cluster, "wait", "--for=jsonpath={.endpoints[0].conditions.ready}=true",
            "endpointslice", "-l", "kubernetes.io/service-name=web", "--timeout=30s")
    for path in ("/api/v1/namespaces/default/pods/web:80/proxy/",
                 "/api/v1/namespaces/default/services/web:8000/proxy/",
                 "/api/v1/namespaces/default/services/http:web:8000/proxy/index.html"):
        assert "Welcome to nginx!" in kubectl(cluster, "get", "--raw", path).stdout, path
    assert kubectl(cluster, "get", "--raw", "/api/v1/nodes/node-1/proxy/healthz"
                   ).stdout == "ok"
    pods = json.loads(kubectl(cluster, "get", "--raw", "/api/v1/nodes/node-1/proxy/pods"
                              ).stdout)
    assert "web" in {p["metadata"]["name"] for p in pods["items"]}
    # the target's own answer comes back, a 404 included
    missing = run(cluster, "get", "--raw", "/api/v1/namespaces/default/pods/web:80/proxy/nope")
    assert missing.returncode == 1 and "NotFound" in missing.stderr
    # a Service with no ready endpoint: 503
    kubectl(cluster, "create", "service", "clusterip", "empty", "--tcp=80:80")
    empty = run(cluster, "get", "--raw", "/api/v1/namespaces/default/services/empty/proxy/")
    assert empty.returncode == 1
    assert "ServiceUnavailable" in empty.stderr or "no endpoints available" in empty.stderr, (
        empty.stderr)


def test_kubectl_top_shows_a_busy_pod_busy_and_an_idle_one_idle(cluster: Path) -> None:
    kubectl(cluster, "run", "busy", "--image=busybox:1.36", "--", "sh", "-c",
            "while :; do :; done")
    kubectl(cluster, "wait", "--for=condition=Ready", "pod/busy", "--timeout=60s")
    status = json.loads(kubectl(cluster, "get", "apiservice", "v1beta1.metrics.k8s.io",
                                "-o", "json").stdout)["status"]
    available = next(c for c in status["conditions"] if c["type"] == "Available")
    assert (available["status"], available["reason"]) == ("True", "Passed"), available
    deadline = time.monotonic() + 60
    while True:
        top = run(cluster, "top", "pods", "--no-headers")
        cpu = {line.split()[0]: int(line.split()[1].removesuffix("m"))
               for line in top.stdout.splitlines() if line.strip()}
        if cpu.get("busy", 0) >= 300 and "shell" in cpu:
            break
        assert time.monotonic() < deadline, (top.stdout, top.stderr)
        time.sleep(1)
    assert cpu["shell"] <= 50, cpu  # sleeping
    nodes = kubectl(cluster, "top", "nodes", "--no-headers").stdout.split()
    assert nodes[0] == "node-1" and int(nodes[1].removesuffix("m")) >= 300, nodes
    containers = kubectl(cluster, "top", "pod", "busy", "--containers", "--no-headers").stdout
    assert containers.split()[:2] == ["busy", "busy"], containers


def test_exec_where_nothing_runs_is_a_clear_error(cluster: Path) -> None:
    pending = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unscheduled"},
               "spec": {"schedulerName": "nobody", "containers": [
                   {"name": "c", "image": "busybox:1.36"}]}}
    run(cluster, "create", "-f", "-", stdin=json.dumps(pending))
    done = run(cluster, "exec", "unscheduled", "--", "true")
    assert done.returncode == 1
    assert "pod unscheduled does not have a host assigned" in done.stderr, done.stderr
    # scheduled, but its image does not exist: the container never runs
    kubectl(cluster, "run", "no-image", "--image=localhost/no-such-image:1")
    done = run(cluster, "exec", "no-image", "--", "true")
    assert done.returncode == 1
    assert 'container not found ("no-image")' in done.stderr, done.stderr
    unknown = run(cluster, "exec", "shell", "-c", "nope", "--", "true")
    assert unknown.returncode == 1 and "container nope is not valid" in unknown.stderr
