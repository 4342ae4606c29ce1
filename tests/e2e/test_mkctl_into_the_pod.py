"""mkctl into the pod, next to kubectl, on a real one-node cluster: `exec` (output,
stdin, the exit code), `logs` (whole, tail, follow), `attach`, `port-forward` to a pod and
to a Service, and `wait` on pods the kubelet makes Ready. Where the output is fixed the
two tools must print the same and exit the same; where it is not (a log being written, a
port chosen at random) each is checked for what kubectl does."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_cluster_cli import kubectl, launcher
from tests.test_mkctl import Clis, Result, assert_same, mkctl_command

pytestmark = pytest.mark.slow

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
REPO = Path(__file__).resolve().parents[2]
FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)")


@pytest.fixture(scope="module")
def cluster(fast_tmp: Path) -> Iterator[Path]:
    home = fast_tmp / "mkctl-into-the-pod"
    launcher(home, "up")
    try:
        kubectl(home, "wait", "--for=condition=Ready", "node/node-1", "--timeout=60s")
        kubectl(home, "run", "shell", "--image=busybox:1.36", "--", "sleep", "3600")
        kubectl(home, "run", "printer", "--image=busybox:1.36", "--", "sh", "-c",
                "echo one; echo two; echo three >&2; sleep 3600")
        kubectl(home, "run", "ticker", "--image=busybox:1.36", "--", "sh", "-c",
                "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done")
        kubectl(home, "run", "web", "--image=nginx", "--port=80", "--labels=app=web")
        kubectl(home, "expose", "pod", "web", "--port=8080", "--target-port=80")
        yield home
    finally:
        launcher(home, "down", "--purge", check=False)


@pytest.fixture(scope="module")
def clis(cluster: Path, tmp_path_factory: pytest.TempPathFactory) -> Clis:
    clis = Clis(cluster / "kubeconfig", tmp_path_factory.mktemp("mkctl-pod-cache"))
    for pod in ("shell", "printer", "ticker", "web"):  # mkctl's wait, checked against kubectl
        expected, actual = clis.compare("wait", "--for=condition=Ready", f"pod/{pod}",
                                        "--timeout=90s", attempts=1)
        assert_same(expected, actual)
        assert actual.out == f"pod/{pod} condition met\n"
    return clis


def _both(clis: Clis, *args: str, input: str | None = None) -> tuple[Result, Result]:
    """kubectl's and mkctl's runs of the same command, with the same stdin."""
    results = []
    for command in ([KUBECTL], mkctl_command()):
        done = subprocess.run([*command, *clis.flags(), *args], input=input,
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
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


def _lines_for(command: list[str], seconds: float) -> list[str]:
    """What a command that goes on forever printed in its first seconds."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    time.sleep(seconds)
    process.terminate()
    out, _ = process.communicate(timeout=10)
    return out.splitlines()


def test_logs_f_and_attach_follow_what_the_container_writes(clis: Clis) -> None:
    followed = _lines_for([*mkctl_command(), *clis.flags(), "logs", "-f", "ticker",
                           "--tail=1"], 3)
    numbers = [int(line.split()[1]) for line in followed]
    assert len(numbers) >= 5 and numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    attached = _lines_for([*mkctl_command(), *clis.flags(), "attach", "ticker", "-q"], 3)
    assert len(attached) >= 5 and all(line.startswith("tick ") for line in attached)


def _forward(clis: Clis, tool: list[str], *args: str) -> tuple[subprocess.Popen[str], int,
                                                              list[str]]:
    """A port-forward started; its process, the local port and the lines it announced."""
    process = subprocess.Popen([*tool, *clis.flags(), "port-forward", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    assert process.stdout is not None
    first = process.stdout.readline()
    match = FORWARDING.match(first)
    assert match, (first, process.stderr.read() if process.poll() is not None else "")
    return process, int(match.group(1)), [first.rstrip("\n")]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_port_forward_to_a_pod_and_a_service_carries_http(clis: Clis) -> None:
    for target, remote in (("pod/web", "80"), ("svc/web", "8080")):
        port = _free_port()
        announced, codes = [], []
        for tool in ([KUBECTL], mkctl_command()):
            process, local, lines = _forward(clis, tool, target, f"{port}:{remote}")
            try:
                assert local == port
                for _ in range(3):  # several connections, one after the other
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10
                                                ) as answer:
                        assert b"Welcome to nginx" in answer.read()
                announced.append(lines)
            finally:
                process.send_signal(signal.SIGINT)  # Ctrl-C: forwarding stops, exit 0
                process.communicate(timeout=10)
                codes.append(process.returncode)
        assert announced[0] == announced[1] == [f"Forwarding from 127.0.0.1:{port} -> 80"]
        assert codes == [0, 0]
    process, local, _ = _forward(clis, mkctl_command(), "web", ":80")  # a free port
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{local}/", timeout=10) as answer:
            assert answer.status == 200
    finally:
        process.terminate()
        process.communicate(timeout=10)
