"""Run the controller-manager, the scheduler or a kubelet as a child process (tests,
benchmarks, the launcher).

Each takes a kubeconfig, talks only to the API server, and answers /healthz on a port of
its own; they differ in the module that runs and its flags.
"""

from __future__ import annotations

import asyncio
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import ClassVar

from minikube_py.cluster.etcd import LOOPBACK, free_port
from minikube_py.process import ComponentProcess, ComponentProcessError


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


class KubeletProcess(ClientComponentProcess):
    """`python -m minikube_py.kubelet` for one node; /healthz is on the kubelet's port."""

    component = "the kubelet"
    module = "minikube_py.kubelet"

    def __init__(self, kubeconfig: Path, log_path: Path, *, node_name: str,
                 runtime_endpoint: str, root_dir: Path, pod_cidr: str,
                 node_ip: str = LOOPBACK, extra_args: tuple[str, ...] = (),
                 start_timeout: float = 30.0, stop_timeout: float = 10.0) -> None:
        super().__init__(kubeconfig, log_path, extra_args=extra_args,
                         start_timeout=start_timeout, stop_timeout=stop_timeout)
        self.node_name = node_name
        self.runtime_endpoint = runtime_endpoint
        self.root_dir = root_dir
        self.pod_cidr = pod_cidr
        self.node_ip = node_ip

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, f"--kubeconfig={self.kubeconfig}",
                f"--node-name={self.node_name}",
                f"--container-runtime-endpoint={self.runtime_endpoint}",
                f"--root-dir={self.root_dir}", f"--pod-cidr={self.pod_cidr}",
                f"--node-ip={self.node_ip}", f"--address={LOOPBACK}", f"--port={self.port}",
                *self.extra_args]
