"""The sweep of crashed runs' scratch dirs (tests/conftest.py remove_scratch_of_dead_runs):
a dir named by a pid that is gone is removed, with the processes that name it and the
mounts left inside it; a live run's is kept."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import (
    SCRATCH_PREFIX,
    mounts_under,
    processes_using,
    remove_scratch_of_dead_runs,
    stop_processes_using,
)


def dead_pid() -> int:
    """A pid no process has: pid_max itself (the kernel hands out pids below it), where a
    child that has just been reaped leaves a pid the kernel hands out again once it has
    gone round all the others."""
    return int(Path("/proc/sys/kernel/pid_max").read_text())


def test_a_dead_runs_fuzz_dir_is_removed_and_its_server_stopped_a_live_runs_kept(
        tmp_path: Path) -> None:
    dead = tmp_path / f"{SCRATCH_PREFIX}{dead_pid()}-abc" / "fuzz-1"
    live = tmp_path / f"{SCRATCH_PREFIX}{os.getpid()}-def" / "fuzz-2"
    for scratch in (dead, live):
        scratch.mkdir(parents=True)
        (scratch / "log").write_text("")
    # as the API fuzzer starts its API server: TMPDIR names the scratch dir
    server = subprocess.Popen(["sleep", "600"], env={**os.environ, "TMPDIR": str(dead)})
    try:
        remove_scratch_of_dead_runs(tmp_path)

        removed = not dead.parent.exists()
        try:
            stopped: int | str = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            stopped = f"still running; the processes naming the dir: {processes_using(dead)}"
        assert removed and stopped in (-signal.SIGTERM, -signal.SIGKILL), (removed, stopped)
        assert (live / "log").exists()
    finally:
        server.kill()
        server.wait()


def test_what_a_dead_runs_supervisor_starts_again_is_stopped_with_it(tmp_path: Path) -> None:
    dead = tmp_path / f"{SCRATCH_PREFIX}{dead_pid()}-abc"
    dead.mkdir()
    # as a crashed run's cluster supervisor: it outlives SIGTERM a while (here for good,
    # until SIGKILL) and starts its component again each time that one is stopped
    supervisor = subprocess.Popen(
        ["sh", "-c", "trap '' TERM; echo ignoring; "
         "while true; do (trap - TERM; exec sleep 600); done"],
        env={**os.environ, "MINIKUBE_PY_HOME": str(dead)}, stdout=subprocess.PIPE, text=True)
    try:
        assert supervisor.stdout is not None
        assert supervisor.stdout.readline() == "ignoring\n"  # SIGTERM is ignored from here
        stop_processes_using(dead, grace=2.0)

        assert supervisor.wait(timeout=30) == -9
        assert processes_using(dead) == []
    finally:
        supervisor.kill()
        supervisor.wait()
        assert supervisor.stdout is not None
        supervisor.stdout.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_dead_runs_dir_with_tmpfs_mounts_inside_is_unmounted_and_removed(
        tmp_path: Path) -> None:
    dead = tmp_path / f"{SCRATCH_PREFIX}{dead_pid()}-abc"
    # as a kubelet test leaves a memory-medium emptyDir: a tmpfs, with another one inside
    volume = dead / "kubelet" / "pods" / "uid" / "volumes" / "empty dir"
    nested = volume / "nested"
    volume.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(volume)], check=True)
    try:
        nested.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(nested)], check=True)
        (nested / "data").write_text("x")
        assert mounts_under(dead) == [nested, volume]

        remove_scratch_of_dead_runs(tmp_path)

        assert not dead.exists()
        assert mounts_under(tmp_path) == []
    finally:
        for point in mounts_under(tmp_path):
            subprocess.run(["umount", "-l", str(point)], check=False)
