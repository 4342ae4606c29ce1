"""What several cluster test modules do with kubectl: apply a manifest, read an object as
JSON, and wait for a condition. The cluster is the one a module's fixture started; its
home holds the kubeconfig."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import api_helpers
from tests.test_cluster_cli import kubectl

KUBECTL = str(Path(sys.executable).with_name("kubectl"))


def apply(home: Path, manifest: str) -> None:
    """`kubectl apply -f -` of `manifest` (a YAML string)."""
    subprocess.run([KUBECTL, f"--kubeconfig={home / 'kubeconfig'}", "apply", "-f", "-"],
                   input=manifest, capture_output=True, text=True, timeout=60, check=True)


def read_log_from(log: Path, offset: int) -> str:
    """What a log file gained after `offset` (its size before the step a test checks)."""
    with log.open("rb") as file:
        file.seek(offset)
        return file.read().decode(errors="replace")


def get(home: Path, *what: str) -> Any:
    """`kubectl get <what> -o json`, decoded."""
    return json.loads(kubectl(home, "get", *what, "-o", "json").stdout)


def until(condition: Callable[[], Any], what: str | Callable[[], str],
          timeout: float = 120) -> Any:
    """api_helpers.until at a cluster's pace: kubectl every half second, two minutes."""
    return api_helpers.until(condition, what, timeout, interval=0.5)
