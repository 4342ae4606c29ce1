"""Run the controller-manager or the scheduler as a child process (tests, benchmarks).

Both take a kubeconfig, talk only to the API server, and answer /healthz on a port of
their own; they differ only in the module that runs.
"""

from __future__ import annotations

import asyncio
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import ClassVar

from minikube_py.cluster.etcd import LOOPBACK, free_port
from minikube_py.cluster.process import ComponentProcess, ComponentProcessError


class ClientComponentProcessError(ComponentProcessError):
    """The component could not be started, or did not answer /healthz in time."""


class ClientComponentProcess(ComponentProcess):
    """`python -m <module> --kubeconfig F --port N ...`, stopped on exit."""

    module: ClassVar[str]
    error = ClientComponentProcessError
    environment = {"PYTHONUNBUFFERED": "1"}

    def __init__(self, kubeconfig: Path, log_path: Path, *, extra_args: tuple[str, ...] = (),
                 start_timeout: float = 30.0, stop_timeout: float = 10.0) -> None:
        super().__init__(log_path, start_timeout=start_timeout, stop_timeout=stop_timeout)
        self.kubeconfig = kubeconfig
        self.port = free_port()
        self.extra_args = extra_args

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, f"--kubeconfig={self.kubeconfig}",
                f"--bind-address={LOOPBACK}", f"--port={self.port}", *self.extra_args]

    async def wait_ready(self) -> None:
        await self.poll_until_ready(lambda: asyncio.to_thread(self.healthy), interval=0.1)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer:
                return answer.status == 200
        except (urllib.error.URLError, OSError):
            return False


class ControllerManagerProcess(ClientComponentProcess):
    component = "the controller-manager"
    module = "minikube_py.controllers"


class SchedulerProcess(ClientComponentProcess):
    component = "the scheduler"
    module = "minikube_py.scheduler"
