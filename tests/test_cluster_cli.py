"""`minikube-py up / status / down` as a new user runs them: real processes, real kubectl."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def launcher(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikube_py.cluster", *args], capture_output=True, text=True,
        timeout=120, check=check, env={**os.environ, "MINIKUBE_PY_HOME": str(home)})


def pids(home: Path) -> list[int]:
    return [int(f.read_text()) for f in (home / "run").glob("*.pid")] if (
        home / "run").exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(
        f"/proc/{pid}/status").read_text().lower()


def test_up_starts_every_component_and_down_purge_leaves_nothing(fast_tmp: Path) -> None:
    home = fast_tmp / "launcher-home"
    try:
        started = launcher(home, "up")
        assert f"export KUBECONFIG={home / 'kubeconfig'}" in started.stdout
        again = launcher(home, "up")  # idempotent: nothing is started twice
        assert again.returncode == 0
        running = pids(home)
        assert len(running) == 4 and all(alive(pid) for pid in running)
        status = launcher(home, "status")
        for component in ("etcd", "apiserver", "controller-manager", "scheduler"):
            assert f"{component}: running" in status.stdout
        kubectl = Path(sys.executable).with_name("kubectl")
        namespaces = subprocess.run(
            [str(kubectl), f"--kubeconfig={home / 'kubeconfig'}", "get", "namespaces"],
            capture_output=True, text=True, timeout=60, check=True)
        assert "kube-system" in namespaces.stdout
    finally:
        running = pids(home)
        launcher(home, "down", "--purge", check=False)
    assert not home.exists()
    assert not any(alive(pid) for pid in running)
    stopped = launcher(home, "status", check=False)
    assert stopped.returncode == 1 and "controller-manager: stopped" in stopped.stdout
