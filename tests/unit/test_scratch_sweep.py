"""The sweep of crashed runs' scratch dirs (tests/conftest.py remove_scratch_of_dead_runs):
a dir named by a pid that is gone is removed, with the processes that name it; a live
run's is kept."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import SCRATCH_PREFIX, remove_scratch_of_dead_runs


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


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

        assert server.wait(timeout=30) != 0  # stopped by SIGTERM
        assert not dead.parent.exists()
        assert (live / "log").exists()
    finally:
        server.kill()
        server.wait()
