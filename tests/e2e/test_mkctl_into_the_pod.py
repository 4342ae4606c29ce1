"""mkctl into the pod, next to kubectl, on a real cluster (the lane's shared one,
tests/e2e/conftest.py, in namespace mkctl-into-the-pod, its kubeconfig's): `exec` (output,
stdin, the exit code), `logs` (whole, tail, follow), `attach`, `port-forward` to a pod and
to a Service, and `wait` on pods the kubelet makes Ready. Where the output is fixed the
two tools must print the same and exit the same; where it is not (a log being written, a
port chosen at random) each is checked for what kubectl does."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from minikube_py.process import free_port
from tests.conftest import lines_until
from tests.e2e.conftest import LaneCluster
from tests.test_cluster_cli import kubectl
from tests.test_mkctl import Clis, Result, assert_same, mkctl_command

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)")
STOP_BOUND = 20  # seconds: how long a port-forward may take to end on a signal, under load
Start = Callable[..., "subprocess.Popen[str]"]


# A pod with an init container and two others, each printing known lines; it and
# `printer` carry the label lab=logs.
DUO = """\
apiVersion: v1
kind: Pod
metadata: {name: duo, labels: {lab: logs}}
spec:
  initContainers:
  - {name: setup, image: "busybox:1.36", command: [sh, -c, "echo set up"]}
  containers:
  - {name: left, image: "busybox:1.36", command: [sh, -c, "echo left 1; echo left 2; sleep 3600"]}
  - name: right
    image: "busybox:1.36"
    command: [sh, -c, "echo right 1; while true; do sleep 0.3; echo right tick; done"]
"""


@pytest.fixture(scope="module")
def cluster(lane_cluster: LaneCluster, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Path]:
    """The lane's cluster, seen from namespace mkctl-into-the-pod: a directory whose
    kubeconfig works there, for kubectl and mkctl alike."""
    with lane_cluster.namespaces(__name__, "mkctl-into-the-pod") as home:
        kubectl(home, "run", "shell", "--image=busybox:1.36", "--", "sleep", "3600")
        kubectl(home, "run", "printer", "--image=busybox:1.36", "--", "sh", "-c",
                "echo one; echo two; echo three >&2; sleep 3600")
        kubectl(home, "run", "ticker", "--image=busybox:1.36", "--", "sh", "-c",
                "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done")
        kubectl(home, "run", "web", "--image=nginx", "--port=80", "--labels=app=web")
        kubectl(home, "label", "pod", "printer", "lab=logs")
        duo = tmp_path_factory.mktemp("mkctl-pod-manifests") / "duo.yaml"
        duo.write_text(DUO)
        kubectl(home, "apply", "-f", str(duo))
        kubectl(home, "expose", "pod", "web", "--port=8080", "--target-port=80")
        yield home


@pytest.fixture(scope="module")
def clis(cluster: Path, tmp_path_factory: pytest.TempPathFactory) -> Clis:
    clis = Clis(cluster / "kubeconfig", tmp_path_factory.mktemp("mkctl-pod-cache"))
    # mkctl's wait, checked against kubectl
    for pod in ("shell", "printer", "ticker", "web", "duo"):
        expected, actual = clis.compare("wait", "--for=condition=Ready", f"pod/{pod}",
                                        "--timeout=90s")
        assert_same(expected, actual)
        assert actual.out == f"pod/{pod} condition met\n"
    return clis


def _both(clis: Clis, *args: str, input: str | None = None) -> tuple[Result, Result]:
    """kubectl's and mkctl's runs of the same command, with the same stdin."""
    results = []
    for command in ([KUBECTL], mkctl_command()):
        done = subprocess.run([*command, *clis.flags(), *args], input=input,
                              capture_output=True, text=True, timeout=60,
                              env=ENV)
        results.append(Result(done.stdout, done.stderr.replace("kubectl", "mkctl"),
                              done.returncode))
    return results[0], results[1]


def test_exec_prints_both_streams_and_leaves_with_the_commands_exit_code(clis: Clis) -> None:
    expected, actual = _both(clis, "exec", "shell", "--", "sh", "-c",
                             "echo to-out; echo to-err >&2; exit 3")
    assert_same(expected, actual)
    assert actual == Result("to-out\n", "to-err\ncommand terminated with exit code 3\n", 3)
    assert_same(*_both(clis, "exec", "shell", "--", "true"))
    assert_same(*_both(clis, "exec", "shell", "-c", "nope", "--", "true"))
    assert_same(*_both(clis, "exec", "svc/web", "--", "nginx", "-v"))


def test_exec_i_passes_stdin_and_closes_it(clis: Clis) -> None:
    expected, actual = _both(clis, "exec", "-i", "shell", "--", "sh", "-c",
                             "cat; echo the-end", input="one\ntwo\n")
    assert_same(expected, actual)
    assert actual == Result("one\ntwo\nthe-end\n", "", 0)
    payload = "".join(f"line {n}\n" for n in range(20000))  # more than one message
    expected, actual = _both(clis, "exec", "-i", "shell", "--", "wc", "-l", input=payload)
    assert_same(expected, actual)
    assert actual.out.strip() == "20000"


def test_logs_whole_and_tail_as_kubectl(clis: Clis) -> None:
    for args in (["logs", "printer"], ["logs", "printer", "--tail=1"],
                 ["logs", "pod/printer", "--timestamps"], ["logs", "printer", "-c", "x"],
                 ["logs", "svc/web", "--tail=0"], ["logs", "printer", "--limit-bytes=5"]):
        assert_same(*_both(clis, *args))
    printed = _both(clis, "logs", "printer")[1].out  # stdout and stderr, as they were written
    assert sorted(printed.splitlines()) == ["one", "three", "two"]


def _fixed(out: str) -> list[str]:
    """The lines of a log snapshot that do not depend on when it was taken (the right
    container's ticks go on), sorted."""
    return sorted(line for line in out.splitlines() if not line.endswith("right tick"))


def test_logs_of_several_containers_and_pods_as_kubectl(clis: Clis) -> None:
    """-l, --all-containers, --prefix and --all-pods. kubectl keeps its requests in a map
    and so prints several logs in a random order: the lines are compared as sets, and
    mkctl's own order (init containers, then the others, pod by pod) checked."""
    for args in (["logs", "duo", "--all-containers", "--prefix"],
                 ["logs", "-l", "lab=logs", "--prefix"],
                 ["logs", "-l", "lab=logs", "--all-containers", "--tail=1"],
                 ["logs", "duo", "--all-pods"], ["logs", "-l", "lab=logs", "-c", "left"]):
        expected, actual = _both(clis, *args)
        assert _fixed(actual.out) == _fixed(expected.out), args
        assert sorted(actual.err.splitlines()) == sorted(expected.err.splitlines()), args
        assert actual.code == expected.code, args
    everything = _both(clis, "logs", "duo", "--all-containers", "--prefix")[1].out
    assert everything.splitlines()[:4] == [
        "[pod/duo/setup] set up", "[pod/duo/left] left 1", "[pod/duo/left] left 2",
        "[pod/duo/right] right 1"]
    selected = _both(clis, "logs", "-l", "lab=logs")[1]  # duo, then printer
    assert selected.out.splitlines()[:2] == ["left 1", "left 2"]
    assert sorted(selected.out.splitlines()[2:]) == ["one", "three", "two"]
    assert selected.err == 'Defaulted container "left" out of: left, right, setup (init)\n'



def test_logs_f_follows_every_container_of_every_selected_pod_at_once(
        clis: Clis, processes: Start) -> None:
    expected = {"[pod/duo/setup] set up", "[pod/duo/left] left 2", "[pod/printer/printer] one"}

    def enough(lines: list[str]) -> bool:
        return expected <= set(lines) and lines.count("[pod/duo/right] right tick") >= 5

    for tool in ([KUBECTL], mkctl_command()):
        followed = lines_until(processes, [*tool, *clis.flags(), "logs", "-f", "-l",
                                           "lab=logs", "--all-containers", "--prefix"],
                               enough, env=ENV)
        assert enough(followed), (tool, followed)
    too_many = _both(clis, "logs", "-f", "-l", "lab=logs", "--all-containers",
                     "--max-log-requests=3")
    assert_same(*too_many)
    assert too_many[1].err.startswith("error: you are attempting to follow 4 log streams")


def test_logs_f_and_attach_follow_what_the_container_writes(clis: Clis,
                                                            processes: Start) -> None:
    followed = lines_until(processes, [*mkctl_command(), *clis.flags(), "logs", "-f",
                                       "ticker", "--tail=1"], lambda lines: len(lines) >= 5,
                           env=ENV)
    numbers = [int(line.split()[1]) for line in followed]
    assert len(numbers) >= 5 and numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    attached = lines_until(processes, [*mkctl_command(), *clis.flags(), "attach", "ticker",
                                       "-q"], lambda lines: len(lines) >= 5, env=ENV)
    assert len(attached) >= 5 and all(line.startswith("tick ") for line in attached)


def _forward(start: Start, clis: Clis, tool: list[str], *args: str
             ) -> tuple[subprocess.Popen[str], int, list[str]]:
    """A port-forward started; its process, the local port and the lines it announced.
    It runs as a shell's background job does, with SIGINT ignored: Ctrl-C must stop it
    all the same, as it stops kubectl, which installs its own handler."""
    process = start(["sh", "-c", 'trap "" INT; exec "$@"', "sh", *tool, *clis.flags(),
                     "port-forward", *args],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    env=ENV)
    assert process.stdout is not None
    first = process.stdout.readline()
    match = FORWARDING.match(first)
    assert match, (first, process.stderr.read() if process.poll() is not None else "")
    return process, int(match.group(1)), [first.rstrip("\n")]


def _tool_name(tool: list[str]) -> str:
    return "kubectl" if tool == [KUBECTL] else "mkctl"


def _stopped(process: subprocess.Popen[str], signum: signal.Signals, tool: list[str],
             case: str) -> int:
    """The exit code of a port-forward sent `signum`; it must end within STOP_BOUND. One
    that does not is killed, and the failure names the tool, the case and the signal, with
    the end of what it wrote to stderr."""
    process.send_signal(signum)
    try:
        process.wait(timeout=STOP_BOUND)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
        raise AssertionError(
            f"{_tool_name(tool)} port-forward ({case}) still ran {STOP_BOUND} s after "
            f"{signum.name}; its stderr ended: {_written_so_far(process.stderr)[-2000:]!r}"
        ) from None
    return process.returncode


def _written_so_far(stream: IO[str] | None) -> str:
    """What a pipe holds now, without waiting for its end (a child may keep it open)."""
    if stream is None:
        return ""
    os.set_blocking(stream.fileno(), False)
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(stream.fileno(), 65536):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def test_port_forward_to_a_pod_and_a_service_carries_http(clis: Clis,
                                                          processes: Start) -> None:
    for target, remote in (("pod/web", "80"), ("svc/web", "8080")):
        port = free_port()
        announced, codes = [], []
        for tool in ([KUBECTL], mkctl_command()):
            process, local, lines = _forward(processes, clis, tool, target, f"{port}:{remote}")
            assert local == port
            for _ in range(3):  # several connections, one after the other
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10
                                            ) as answer:
                    assert b"Welcome to nginx" in answer.read()
            announced.append(lines)
            # Ctrl-C: forwarding stops, exit 0
            codes.append(_stopped(process, signal.SIGINT, tool,
                                  f"{target}, idle after 3 connections"))
        assert announced[0] == announced[1] == [f"Forwarding from 127.0.0.1:{port} -> 80"]
        assert codes == [0, 0]
    process, local, _ = _forward(processes, clis, mkctl_command(), "web", ":80")  # a free port
    with urllib.request.urlopen(f"http://127.0.0.1:{local}/", timeout=10) as answer:
        assert answer.status == 200


def _open_connection(process: subprocess.Popen[str], port: int) -> socket.socket:
    """A connection through the port-forward, its stream to the pod open: one request
    answered, and nginx keeps the connection alive for the next."""
    assert process.stdout is not None
    connection = socket.create_connection(("127.0.0.1", port), timeout=30)
    line = process.stdout.readline()  # after the [::1] listener's announcement, if any
    while line.startswith("Forwarding from "):
        line = process.stdout.readline()
    assert line == f"Handling connection for {port}\n"
    connection.sendall(b"GET / HTTP/1.1\r\nHost: web\r\n\r\n")
    answered = b""
    while b"</html>" not in answered:
        chunk = connection.recv(65536)
        assert chunk, answered
        answered += chunk
    assert answered.startswith(b"HTTP/1.1 200 OK"), answered
    return connection


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM],
                         ids=lambda signum: signum.name)
def test_port_forward_stops_at_once_on_a_signal_idle_or_with_a_connection_open(
        clis: Clis, processes: Start, signum: signal.Signals) -> None:
    """Ctrl-C ends kubectl's port-forward with exit code 0, SIGTERM ends it as the signal
    ends a process; either way mkctl's stops as soon, closing its listener and the
    connections it carried."""
    for tool in ([KUBECTL], mkctl_command()):
        for open_connection in (False, True):
            process, port, _ = _forward(processes, clis, tool, "pod/web", ":80")
            connection = _open_connection(process, port) if open_connection else None
            case = "with a connection open" if open_connection else "idle"
            code = _stopped(process, signum, tool, case)
            assert code == (0 if signum == signal.SIGINT else -signum), (
                _tool_name(tool), case, signum.name, code)
            if connection is not None:
                with connection:
                    assert connection.recv(1) == b"", tool  # closed, not left hanging
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=10).close()
