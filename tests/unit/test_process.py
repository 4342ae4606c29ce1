"""ComponentProcess as the launcher uses it: a daemon with a pid file that a later command
adopts, waits for and stops; and the port check every component shares."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import minikube_py.process
from minikube_py.process import (
    LOOPBACK,
    ComponentProcess,
    ComponentProcessError,
    free_port,
    names_its_process,
    pid_alive,
    start_ticks,
    started_at,
)


class Sleeper(ComponentProcess):
    """`sleep 60`, ready at once; optionally claims a port."""

    component = "sleeper"

    def __init__(self, tmp: Path, port: int | None = None) -> None:
        super().__init__(tmp / "sleeper.log", start_timeout=5, stop_timeout=5,
                         pid_file=tmp / "run" / "sleeper.pid")
        self.port = port
        self.readiness_checks = 0

    def command(self) -> list[str]:
        return ["sleep", "60"]

    def ports(self) -> list[int]:
        return [self.port] if self.port is not None else []

    async def wait_ready(self) -> None:
        self.readiness_checks += 1


async def test_a_daemon_is_adopted_through_its_pid_file_and_stopped(tmp_path: Path) -> None:
    first = Sleeper(tmp_path)
    await first.start()
    pid = first.pid
    assert pid is not None and pid_alive(pid)
    assert (tmp_path / "run" / "sleeper.pid").read_text() == str(pid)

    # a later command: start() finds the running daemon, waits for it, starts nothing
    later = Sleeper(tmp_path)
    await later.start()
    assert later.readiness_checks == 1 and later.pid == pid
    assert Sleeper(tmp_path).adopt()

    await later.stop()
    assert not pid_alive(pid)
    assert not (tmp_path / "run" / "sleeper.pid").exists()
    assert not first.running


async def test_a_stale_pid_file_is_removed_and_a_new_daemon_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "run" / "sleeper.pid"
    pid_file.parent.mkdir()
    pid_file.write_text("999999999")  # no such process
    sleeper = Sleeper(tmp_path)
    assert not sleeper.adopt()
    assert not pid_file.exists()
    await sleeper.start()
    try:
        assert sleeper.pid is not None and sleeper.pid != 999999999
        assert pid_file.read_text() == str(sleeper.pid)
    finally:
        await sleeper.stop()


async def test_a_pid_file_whose_pid_was_reused_names_no_one_and_stop_signals_no_one(
        tmp_path: Path) -> None:
    """A daemon killed -9 leaves its pid file; once the kernel gives its pid to another
    process (started after the file was written), adopt() must not take that stranger for
    the daemon, and no stop may signal it."""
    pid_file = tmp_path / "run" / "sleeper.pid"
    pid_file.parent.mkdir()
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        started = started_at(stranger.pid)
        assert started is not None and abs(started - time.time()) < 5
        pid_file.write_text(str(stranger.pid))
        # the file is older than the process it names: written 10 s before it started
        os.utime(pid_file, (started - 10, started - 10))
        sleeper = Sleeper(tmp_path)
        assert not sleeper.adopt()
        assert not pid_file.exists()
        await Sleeper(tmp_path).stop()  # nothing adopted: nothing signalled
        assert stranger.poll() is None
        # the same file written after the process started names it
        pid_file.write_text(str(stranger.pid))
        assert Sleeper(tmp_path).adopt()
    finally:
        stranger.kill()
        stranger.wait()


async def test_a_daemon_is_adopted_after_the_wall_clock_was_stepped_and_a_stranger_is_not(
        tmp_path: Path) -> None:
    """A virtual machine resumed after a pause steps its wall clock forward: every process
    started before then seems, as /proc's boot time now tells, to have started after its
    pid file was written. The start ticks beside the pid file still name the daemon, so
    adopt() (status, down, the supervisor) takes it; a stranger with its pid does not
    match them."""
    first = Sleeper(tmp_path)
    await first.start()
    try:
        pid_file = tmp_path / "run" / "sleeper.pid"
        assert (tmp_path / "run" / "sleeper.start").read_text() == str(start_ticks(first.pid))
        started = started_at(first.pid)
        assert started is not None
        # as the mtime looks once the clock has jumped 30 s: written before it started
        os.utime(pid_file, (started - 30, started - 30))
        assert names_its_process(pid_file, first.pid)
        again = Sleeper(tmp_path)
        assert again.adopt() and again.pid == first.pid

        (tmp_path / "run" / "sleeper.start").write_text(str(start_ticks(first.pid) + 1))
        assert not names_its_process(pid_file, first.pid)  # the same pid, another start
    finally:
        await first.stop()
    assert not pid_file.exists() and not (tmp_path / "run" / "sleeper.start").exists()


async def test_a_taken_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind((LOOPBACK, 0))
        holder.listen()
        port = holder.getsockname()[1]
        sleeper = Sleeper(tmp_path, port=port)
        with pytest.raises(ComponentProcessError, match=f"port {port} is already in use"):
            await sleeper.start()
    assert not (tmp_path / "run" / "sleeper.pid").exists()
    assert sleeper.pid is None


def test_pid_alive_tells_a_zombie_from_a_running_process() -> None:
    assert pid_alive(os.getpid())
    child = os.fork()
    if child == 0:
        os._exit(0)
    try:
        # the child exits at once and stays a zombie until it is reaped
        deadline = time.monotonic() + 30  # a bound for failures only
        while pid_alive(child):
            assert time.monotonic() < deadline, "the child never exited"
            time.sleep(0.01)
    finally:
        os.waitpid(child, 0)


def test_free_port_is_outside_the_range_outgoing_connections_take_ports_from() -> None:
    """A port from the ephemeral range could be taken by any connect() on the machine
    before the component binds it; free_port's never is, and binds for TCP and UDP."""
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    for _ in range(50):
        port = free_port()
        assert not low <= port <= high, f"{port} is in the ephemeral range {low}-{high}"
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            with socket.socket(socket.AF_INET, kind) as sock:
                sock.bind((LOOPBACK, port))


def test_free_port_skips_a_port_taken_for_udp_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.bind((LOOPBACK, 0))
        taken = holder.getsockname()[1]
        monkeypatch.setattr(minikube_py.process, "LISTEN_PORTS", range(taken, taken + 2))
        monkeypatch.setattr(minikube_py.process, "EPHEMERAL_RANGE", Path("/nonexistent"))
        assert taken not in {free_port() for _ in range(20)}


def test_a_port_free_port_gave_is_not_given_to_another_process_until_released(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two test workers each starting a component may both find the same port free
    before either binds it: a port handed out is reserved across processes for
    RESERVED_SECONDS, and freed when the process that reserved it ends."""
    port = free_port()
    spare = next(candidate for candidate in range(port + 1, port + 100)
                 if minikube_py.process._bindable(LOOPBACK, candidate, socket.SOCK_STREAM)
                 and minikube_py.process._bindable(LOOPBACK, candidate, socket.SOCK_DGRAM))
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; from minikube_py.process import _reserve; "
         f"print(_reserve('{LOOPBACK}', {port}), _reserve('{LOOPBACK}', {spare})); "
         "sys.stdout.flush(); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        # ours is taken for the child; the next one it reserves
        assert child.stdout.readline().split() == ["False", "True"]
        monkeypatch.setattr(minikube_py.process, "LISTEN_PORTS", range(spare, spare + 1))
        monkeypatch.setattr(minikube_py.process, "EPHEMERAL_RANGE", Path("/nonexistent"))
        # the child's reservation holds: free_port falls back to a port the kernel picks
        assert free_port() != spare
    finally:
        child.communicate("")
    # the child's end released it
    assert free_port() == spare
