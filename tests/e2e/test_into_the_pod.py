"""Into the pod, as a student reaches in: `kubectl exec` (exit codes, stdin, a TTY),
`kubectl attach`, the official Python client's `stream()` and `portforward()` and kr8s's
port-forward, on a real cluster (API server -> kubelet -> containerd's streaming
server): the lane's shared one (tests/e2e/conftest.py), in namespace into-the-pod."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kr8s.asyncio.objects import Pod, Service
from kubernetes import client, config
from kubernetes.stream import portforward, stream

from minikube_py.process import free_port
from tests.api_helpers import kr8s_on
from tests.conftest import lines_until
from tests.e2e.conftest import LaneCluster
from tests.test_cluster_cli import kubectl, network_prefix

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
BUSY_OVER_IDLE = 20  # a busy loop's CPU over a sleeping shell's (at least 1m), at least
NAMESPACE = "into-the-pod"


@pytest.fixture(scope="module")
def cluster(lane_cluster: LaneCluster) -> Iterator[Path]:
    """The lane's cluster (its metrics server at a 2 s resolution), seen from NAMESPACE:
    a directory whose kubeconfig works there."""
    with lane_cluster.namespaces(__name__, NAMESPACE) as home:
        kubectl(home, "run", "shell", "--image=busybox:1.36", "--", "sleep", "3600")
        kubectl(home, "run", "ticker", "--image=busybox:1.36", "--", "sh", "-c",
                "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done")
        kubectl(home, "run", "web", "--image=nginx")
        for pod in ("shell", "ticker", "web"):
            kubectl(home, "wait", "--for=condition=Ready", f"pod/{pod}", "--timeout=60s")
        yield home


def run(home: Path, *args: str, stdin: str | None = None,
        timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, f"--kubeconfig={home / 'kubeconfig'}", *args],
                          input=stdin, capture_output=True, text=True, timeout=timeout)


def node_of(home: Path, pod: str) -> str:
    """The node the pod runs on (the cluster has two workers)."""
    return kubectl(home, "get", "pod", pod, "-o", "jsonpath={.spec.nodeName}").stdout


def api(home: Path) -> client.CoreV1Api:
    """The official client on the cluster's kubeconfig. It writes the kubeconfig's inline
    certificates to temporary files, removed only when its process exits cleanly: they go
    into the cluster's folder, not /tmp."""
    configuration = client.Configuration()
    config.load_kube_config(str(home / "kubeconfig"), client_configuration=configuration,
                            temp_file_path=str(home / "client-files"))
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


def test_kubectl_exec_i_closes_stdin_and_the_command_sees_the_end(cluster: Path) -> None:
    # v5's CLOSE, translated by the API server to a SPDY half-close toward the kubelet:
    # `cat` ends because its input did, not because the session did
    done = run(cluster, "exec", "-i", "shell", "--", "sh", "-c", "cat; echo the-end",
               stdin="one\ntwo\n")
    assert (done.returncode, done.stdout) == (0, "one\ntwo\nthe-end\n"), done
    # the same over SPDY all the way (kubectl's fallback when WebSockets are off)
    done = subprocess.run(
        [KUBECTL, f"--kubeconfig={cluster / 'kubeconfig'}", "exec", "-i", "shell", "--",
         "sh", "-c", "wc -l; exit 6"], input="a\nb\nc\n", capture_output=True, text=True,
        timeout=30, env={**os.environ, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"})
    assert (done.returncode, done.stdout.strip()) == (6, "3"), done


def test_kubectl_cp_copies_a_tree_into_the_pod_and_back(cluster: Path,
                                                         tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "hello.txt").write_text("hello from the host\n")
    payload = os.urandom(2_000_000)
    (tree / "sub" / "random.bin").write_bytes(payload)
    assert run(cluster, "cp", str(tree), "shell:/tmp/tree").returncode == 0
    inside = kubectl(cluster, "exec", "shell", "--", "sh", "-c",
                     "cat /tmp/tree/hello.txt; wc -c < /tmp/tree/sub/random.bin").stdout
    assert inside.split("\n")[:2] == ["hello from the host", "2000000"], inside
    back = tmp_path / "back"
    done = run(cluster, "cp", "shell:/tmp/tree", str(back))
    assert done.returncode == 0, done
    assert (back / "sub" / "random.bin").read_bytes() == payload
    assert (back / "hello.txt").read_text() == "hello from the host\n"


def test_kubectl_run_it_rm_attaches_then_deletes_the_pod(cluster: Path) -> None:
    done = run(cluster, "run", "once", "-i", "--rm", "--restart=Never",
               "--image=busybox:1.36", "--", "sh", "-c", "read line; echo got $line; exit 4",
               stdin="a-line\n", timeout=90)
    assert done.returncode == 4 and "got a-line" in done.stdout, done
    assert 'pod "once" deleted' in done.stdout + done.stderr
    assert run(cluster, "get", "pod", "once").returncode == 1


def test_a_dropped_exec_client_ends_the_session_in_the_container(cluster: Path) -> None:
    session = subprocess.Popen(
        [KUBECTL, f"--kubeconfig={cluster / 'kubeconfig'}", "exec", "-i", "shell", "--",
         "sh", "-c", "cat; : dropped-session"], stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while "dropped-session" not in kubectl(cluster, "exec", "shell", "--", "ps").stdout:
            assert time.monotonic() < deadline, "the exec never started"
            time.sleep(0.3)
    finally:
        session.kill()  # no goodbye: the connection just ends
        session.wait()
    deadline = time.monotonic() + 60
    while "dropped-session" in kubectl(cluster, "exec", "shell", "--", "ps").stdout:
        assert time.monotonic() < deadline, "the command outlived its session"
        time.sleep(0.3)
    # and no session is left open at the runtime's streaming server (no exec meanwhile)
    deadline = time.monotonic() + 30
    while connections := runtime_stream_connections(node_of(cluster, "shell")):
        assert time.monotonic() < deadline, connections
        time.sleep(0.3)


def runtime_stream_connections(node: str) -> list[str]:
    """Sessions open at the node's containerd streaming server (it listens on loopback;
    its pulls from the registry are other connections)."""
    listing = subprocess.run(["ip", "netns", "exec", f"{network_prefix()}{node}", "ss", "-tnpH",
                              "state", "established"], capture_output=True, text=True,
                             check=True).stdout
    return [line for line in listing.splitlines()
            if '"containerd"' in line and line.split()[2].startswith("127.0.0.1:")]


def test_kubectl_exec_it_gets_a_terminal(cluster: Path) -> None:
    # `script` gives kubectl a terminal of its own, as a student's shell has
    command = f"{KUBECTL} --kubeconfig={cluster / 'kubeconfig'} exec -it shell -- " \
              "sh -c 'tty; exit 5'"
    done = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True,
                          text=True, timeout=30)
    assert "/dev/pts/" in done.stdout, done
    assert done.returncode == 5


def test_kubectl_attach_shows_the_containers_output(
        cluster: Path, processes: Callable[..., subprocess.Popen[str]]) -> None:
    """attach runs until stopped: its output is read until the ticker's lines come."""
    attached = lines_until(processes, [KUBECTL, f"--kubeconfig={cluster / 'kubeconfig'}",
                                       "attach", "ticker"],
                           lambda lines: sum(line.startswith("tick ") for line in lines) >= 2)
    assert sum(line.startswith("tick ") for line in attached) >= 2, attached


def test_the_python_clients_stream_gets_output_and_exit_code(cluster: Path) -> None:
    core = api(cluster)
    answer = stream(core.connect_get_namespaced_pod_exec, "shell", NAMESPACE,
                    command=["sh", "-c", "echo out; echo err >&2; exit 7"],
                    stdin=False, stdout=True, stderr=True, tty=False,
                    _preload_content=False)
    answer.run_forever(timeout=20)
    assert (answer.read_stdout(), answer.read_stderr(), answer.returncode) == (
        "out\n", "err\n", 7)
    # with stdin: a shell reading commands from the client
    session = stream(core.connect_get_namespaced_pod_exec, "shell", NAMESPACE,
                     command=["sh"], stdin=True, stdout=True, stderr=True, tty=False,
                     _preload_content=False)
    session.write_stdin("echo from-stdin; exit 4\n")
    session.run_forever(timeout=20)
    assert session.read_stdout() == "from-stdin\n"
    assert session.returncode == 4


def test_the_python_clients_v5_close_of_stdin_ends_cat(cluster: Path) -> None:
    session = stream(api(cluster).connect_post_namespaced_pod_exec, "shell", NAMESPACE,
                     command=["sh", "-c", "cat"], stdin=True, stdout=True, stderr=True,
                     tty=False, _preload_content=False)
    assert session.subprotocol == "v5.channel.k8s.io"
    session.write_stdin("test-close\n")
    assert session.readline_stdout(timeout=10) == "test-close"
    session.close_channel(0)  # 255, 0: the end of stdin, the session stays open
    session.run_forever(timeout=15)
    assert not session.is_open()
    assert session.returncode == 0


def fetch_through_port_forward(core: client.CoreV1Api) -> bytes:
    """GET / from the web pod's port 80 through the API server's pods/portforward."""
    forward = portforward(core.connect_get_namespaced_pod_portforward, "web", NAMESPACE,
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
                          NAMESPACE, ports="81")
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


@contextlib.contextmanager
def forwarded(home: Path, target: str, ports: str, websockets: bool = True
              ) -> Iterator[int]:
    """`kubectl port-forward TARGET :PORT` running; yields the local port it chose."""
    process = subprocess.Popen(
        [KUBECTL, f"--kubeconfig={home / 'kubeconfig'}", "port-forward", target, ports],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "KUBECTL_PORT_FORWARD_WEBSOCKETS": str(websockets).lower()})
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # Forwarding from 127.0.0.1:PORT -> N
        assert line.startswith("Forwarding from 127.0.0.1:"), (
            line, process.stderr.read() if process.stderr else "")
        yield int(line.split(":")[1].split()[0])
    finally:
        process.terminate()
        process.wait(10)


def http_get(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as connection:
        connection.sendall(b"GET / HTTP/1.1\r\nHost: web\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("websockets", [True, False], ids=["spdy-in-websocket", "spdy"])
def test_kubectl_port_forward_to_a_pod_and_a_service_with_20_connections_at_once(
        cluster: Path, websockets: bool) -> None:
    if run(cluster, "get", "service", "web-pf").returncode != 0:
        kubectl(cluster, "expose", "pod", "web", "--name=web-pf", "--port=8080",
                "--target-port=80")
    for target, ports in (("pod/web", ":80"), ("svc/web-pf", ":8080")):
        with forwarded(cluster, target, ports, websockets) as port:
            with ThreadPoolExecutor(20) as pool:
                answers = list(pool.map(lambda _: http_get(port), range(20)))
            assert all(a.startswith(b"HTTP/1.1 200 OK") and b"Welcome to nginx!" in a
                       for a in answers), (target, [a[:40] for a in answers])


async def kr8s_fetch(home: Path, kind: str, name: str, port: int, times: int) -> list[bytes]:
    """GET / `times` at once through kr8s's port-forward of the pod or Service: kr8s
    offers no WebSocket subprotocol, sends `ports` in the query and reads each channel's
    first message as its port; it finds a Service's pod itself, as kubectl does."""
    async with kr8s_on(home / "kubeconfig") as api:
        target = await (Pod if kind == "pod" else Service).get(name, namespace=NAMESPACE,
                                                               api=api)
        # kr8s's own "auto" draws a port at random from 10000-60000 and binds it later, so
        # on a busy machine another process could take it first (it did, in a clean-clone
        # run)
        async with target.portforward(port, local_port=free_port()) as local:
            return await asyncio.gather(*(asyncio.to_thread(http_get, local)
                                          for _ in range(times)))


def test_kr8s_port_forward_reaches_a_pod_and_a_service(cluster: Path) -> None:
    """A client that is neither kubectl nor the official one: its WebSocket without a
    subprotocol is served (upstream takes none as binary channels), for a pod and for a
    Service, which has no portforward subresource of its own."""
    if run(cluster, "get", "service", "web-pf").returncode != 0:
        kubectl(cluster, "expose", "pod", "web", "--name=web-pf", "--port=8080",
                "--target-port=80")
    for kind, name, port in (("pod", "web", 80), ("service", "web-pf", 80)):
        # its own event loop: asyncio.run ends whatever kr8s leaves running
        answers = asyncio.run(kr8s_fetch(cluster, kind, name, port, 5))
        assert all(a.startswith(b"HTTP/1.1 200 OK") and b"Welcome to nginx!" in a
                   for a in answers), (kind, [a[:40] for a in answers])
    missing = run(cluster, "get", "--raw",
                  f"/api/v1/namespaces/{NAMESPACE}/services/web-pf/portforward")
    assert missing.returncode != 0 and "NotFound" in missing.stderr, missing.stderr


def test_kubectl_port_forward_to_a_closed_port_reports_the_error(cluster: Path) -> None:
    process = subprocess.Popen(
        [KUBECTL, f"--kubeconfig={cluster / 'kubeconfig'}", "port-forward", "pod/web",
         ":81"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().split(":")[1].split()[0])
        with socket.create_connection(("127.0.0.1", port), timeout=20) as connection:
            connection.sendall(b"GET / HTTP/1.1\r\n\r\n")
            # closed, not hanging: an orderly close, or a reset when kubectl closes its
            # end with our request still unread (which of the two is a matter of timing)
            try:
                assert connection.recv(100) == b""
            except ConnectionResetError:
                pass
        # kubectl tells what went wrong, from the error stream, then gives up
        _, stderr = process.communicate(timeout=20)
        assert "error forwarding port 81" in stderr and "connection refused" in stderr, stderr
    finally:
        process.kill()
        process.wait()


def test_proxy_reaches_a_pod_a_service_and_a_node(cluster: Path) -> None:
    kubectl(cluster, "expose", "pod", "web", "--port=8000", "--target-port=80",
            "--labels=test=proxy")
    kubectl(cluster, "wait", "--for=jsonpath={.endpoints[0].conditions.ready}=true",
            "endpointslice", "-l", "kubernetes.io/service-name=web", "--timeout=30s")
    for path in (f"/api/v1/namespaces/{NAMESPACE}/pods/web:80/proxy/",
                 f"/api/v1/namespaces/{NAMESPACE}/services/web:8000/proxy/",
                 f"/api/v1/namespaces/{NAMESPACE}/services/http:web:8000/proxy/index.html"):
        assert "Welcome to nginx!" in kubectl(cluster, "get", "--raw", path).stdout, path
    node = node_of(cluster, "web")  # the node proxy of the node that runs web
    assert kubectl(cluster, "get", "--raw", f"/api/v1/nodes/{node}/proxy/healthz"
                   ).stdout == "ok"
    pods = json.loads(kubectl(cluster, "get", "--raw", f"/api/v1/nodes/{node}/proxy/pods"
                              ).stdout)
    assert "web" in {p["metadata"]["name"] for p in pods["items"]}
    running = json.loads(kubectl(cluster, "get", "--raw",
                                 f"/api/v1/nodes/{node}/proxy/runningpods/").stdout)
    assert "web" in {p["metadata"]["name"] for p in running["items"]}
    configz = json.loads(kubectl(cluster, "get", "--raw",
                                 f"/api/v1/nodes/{node}/proxy/configz").stdout)
    assert configz["kubeletconfig"]["clusterDNS"] == ["10.96.0.10"]
    assert f'kubelet_node_name{{node="{node}"}} 1' in kubectl(
        cluster, "get", "--raw", f"/api/v1/nodes/{node}/proxy/metrics").stdout
    # the target's own answer comes back, a 404 included
    missing = run(cluster, "get", "--raw",
                  f"/api/v1/namespaces/{NAMESPACE}/pods/web:80/proxy/nope")
    assert missing.returncode == 1 and "NotFound" in missing.stderr
    # a Service with no ready endpoint: 503
    kubectl(cluster, "create", "service", "clusterip", "empty", "--tcp=80:80")
    empty = run(cluster, "get", "--raw",
                f"/api/v1/namespaces/{NAMESPACE}/services/empty/proxy/")
    assert empty.returncode == 1
    assert "ServiceUnavailable" in empty.stderr or "no endpoints available" in empty.stderr, (
        empty.stderr)


def test_kubectl_top_shows_a_busy_pod_busy_and_an_idle_one_idle(cluster: Path) -> None:
    # the metrics-server pod's readiness probe first looks at 20 s, as upstream's manifest
    # says: until then its APIService has no endpoint, as on a cluster kubeadm just made
    kubectl(cluster, "wait", "--for=condition=Available", "apiservice/v1beta1.metrics.k8s.io",
            "--timeout=120s")
    status = json.loads(kubectl(cluster, "get", "apiservice", "v1beta1.metrics.k8s.io",
                                "-o", "json").stdout)["status"]
    available = next(c for c in status["conditions"] if c["type"] == "Available")
    assert (available["status"], available["reason"]) == ("True", "Passed"), available
    # The busy loop takes a core while it runs: it starts once the metrics can be read,
    # and ends with the test (its shell leaves the loop on SIGTERM)
    kubectl(cluster, "run", "busy", "--image=busybox:1.36", "--", "sh", "-c",
            "trap 'exit 0' TERM; while :; do :; done")
    try:
        busy_pod_in_top(cluster)
    finally:
        kubectl(cluster, "delete", "pod", "busy", "--wait=false")


def busy_pod_in_top(cluster: Path) -> None:
    kubectl(cluster, "wait", "--for=condition=Ready", "pod/busy", "--timeout=60s")
    # How much CPU the busy loop gets depends on what else the machine runs: it is
    # busy next to the sleeping shell, by a factor no load on a shared machine takes away
    deadline = time.monotonic() + 120
    while True:
        top = run(cluster, "top", "pods", "--no-headers")
        cpu = {line.split()[0]: int(line.split()[1].removesuffix("m"))
               for line in top.stdout.splitlines() if line.strip()}
        if "shell" in cpu and cpu.get("busy", 0) >= BUSY_OVER_IDLE * max(cpu["shell"], 1):
            break
        assert time.monotonic() < deadline, (top.stdout, top.stderr)
        time.sleep(1)
    assert cpu["shell"] <= 50, cpu  # sleeping
    nodes = {line.split()[0]: line.split()[1:] for line in kubectl(
        cluster, "top", "nodes", "--no-headers").stdout.splitlines()}
    assert int(nodes[node_of(cluster, "busy")][0].removesuffix("m")) >= cpu["busy"] // 2, (
        nodes, cpu)  # the node's usage holds its busy pod's
    containers = kubectl(cluster, "top", "pod", "busy", "--containers", "--no-headers").stdout
    assert containers.split()[:2] == ["busy", "busy"], containers
    # the aggregated group's schemas join the API server's OpenAPI: kubectl explain reads them
    index = json.loads(kubectl(cluster, "get", "--raw", "/openapi/v3").stdout)
    assert "apis/metrics.k8s.io/v1beta1" in index["paths"]
    explained = kubectl(cluster, "explain", "podmetrics.containers").stdout
    assert "KIND:       PodMetrics" in explained and "usage" in explained, explained


def in_terminal(args: list[str], replies: list[tuple[bytes, bytes]], timeout: float = 60
                ) -> tuple[int, bytes]:
    """Run `args` on a terminal of its own; after each expected output, type the reply."""
    primary, secondary = pty.openpty()
    process = subprocess.Popen(args, stdin=secondary, stdout=secondary, stderr=secondary,
                               start_new_session=True)
    os.close(secondary)
    output, deadline = b"", time.monotonic() + timeout
    pending = list(replies)
    try:
        while True:
            ready, _, _ = select.select([primary], [], [], max(0, deadline - time.monotonic()))
            assert ready, f"no output in time; so far: {output!r}"
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the terminal closed: the program ended
                break
            if not chunk:
                break
            output += chunk
            if pending and pending[0][0] in output:
                os.write(primary, pending.pop(0)[1])
        return process.wait(10), output
    finally:
        os.close(primary)
        if process.poll() is None:
            process.kill()
            process.wait()


def ephemeral_state(home: Path, pod: str, container: str) -> dict[str, Any]:
    statuses = json.loads(kubectl(home, "get", "pod", pod, "-o", "json").stdout)[
        "status"].get("ephemeralContainerStatuses") or []
    return next((s["state"] for s in statuses if s["name"] == container), {})


def test_kubectl_debug_it_runs_an_ephemeral_container_beside_its_target(
        cluster: Path) -> None:
    # a shell in a new container of the running pod, in the process namespace of "web"
    code, output = in_terminal(
        [KUBECTL, f"--kubeconfig={cluster / 'kubeconfig'}", "debug", "-it", "web",
         "--image=busybox:1.36", "--target=web", "--container=debugger"],
        [(b"try pressing enter", b"\n"), (b"/ # ", b"ps; exit\n")])
    assert code == 0, output
    assert b"nginx: master process" in output, output
    deadline = time.monotonic() + 60
    while "terminated" not in (state := ephemeral_state(cluster, "web", "debugger")):
        assert time.monotonic() < deadline, state
        time.sleep(0.5)
    assert state["terminated"]["exitCode"] == 0
    # never restarted; and its output stays readable as any container's
    spec = json.loads(kubectl(cluster, "get", "pod", "web", "-o", "json").stdout)["spec"]
    assert [c["name"] for c in spec["ephemeralContainers"]] == ["debugger"]
    assert "nginx: master process" in kubectl(cluster, "logs", "web", "-c", "debugger").stdout


def test_kubectl_debug_without_attaching_runs_the_command_once(cluster: Path) -> None:
    kubectl(cluster, "debug", "web", "--image=busybox:1.36", "--target=web",
            "--container=snapshot", "--", "sh", "-c", "ps; exit 3")
    deadline = time.monotonic() + 120
    while "terminated" not in (state := ephemeral_state(cluster, "web", "snapshot")):
        assert time.monotonic() < deadline, state
        time.sleep(0.5)
    assert state["terminated"]["exitCode"] == 3
    # never restarted: the kubelet starts a later ephemeral container in a sync of the
    # pod that comes after this one ended, and that sync leaves this one as it was
    kubectl(cluster, "debug", "web", "--image=busybox:1.36", "--target=web",
            "--container=later", "--", "true")
    while "terminated" not in (later := ephemeral_state(cluster, "web", "later")):
        assert time.monotonic() < deadline, later
        time.sleep(0.5)
    assert ephemeral_state(cluster, "web", "snapshot") == state
    assert "nginx: master process" in kubectl(cluster, "logs", "web", "-c", "snapshot").stdout
    # bad input: the target must be one of the pod's containers
    done = run(cluster, "debug", "web", "--image=busybox:1.36", "--target=nope",
               "--container=lost", "--", "true")
    assert done.returncode == 1
    assert done.stderr.startswith('The Pod "web" is invalid: spec.ephemeralContainers[')
    assert '].targetContainerName: Not found: "nope"' in done.stderr, done.stderr


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
