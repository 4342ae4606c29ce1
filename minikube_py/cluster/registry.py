"""The cluster's image registry: Debian's `docker-registry` (the CNCF distribution registry).

Every node's containerd pulls docker.io, registry.k8s.io and localhost images from it
(cluster/runtime_setup.py writes the hosts.toml files), and `minikube-py image build` and
`image load` push to it, so `kubectl create deployment web --image=nginx` is a real pull.
Its storage is a folder under the cluster's state; it listens on plain HTTP.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from minikube_py.images.registry import registry_answers
from minikube_py.process import LOOPBACK, ComponentProcess, ComponentProcessError

REGISTRY_BINARY = "docker-registry"
CONFIG = """\
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {storage}
  delete:
    enabled: true
http:
  addr: {address}
"""


class RegistryProcessError(ComponentProcessError):
    """The registry could not start."""


class RegistryProcess(ComponentProcess):
    """`async with RegistryProcess(state_dir, port=5000):` a registry on address:port."""

    component = "registry"
    error = RegistryProcessError

    def __init__(self, state_dir: Path, *, port: int, address: str = LOOPBACK,
                 log_path: Path | None = None, pid_file: Path | None = None) -> None:
        self.state_dir = Path(state_dir)
        super().__init__(log_path or self.state_dir / "registry.log", start_timeout=15.0,
                         stop_timeout=10.0, pid_file=pid_file, address=address)
        self.port = port

    @property
    def host(self) -> str:
        """host:port, as image names and hosts.toml spell it."""
        return f"{self.address}:{self.port}"

    def command(self) -> list[str]:
        return [REGISTRY_BINARY, "serve", str(self.state_dir / "config.yml")]

    def ports(self) -> list[int]:
        return [self.port]

    def prepare(self) -> None:
        """The binary is installed, the port is free, the config and storage exist."""
        if shutil.which(REGISTRY_BINARY) is None:
            raise RegistryProcessError("docker-registry is not installed: apt-get install "
                                       "docker-registry")
        storage = self.state_dir / "storage"
        storage.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "config.yml").write_text(
            CONFIG.format(storage=storage, address=self.host))
        super().prepare()

    async def serving(self) -> bool:
        """GET /v2/ answers 200."""
        return await asyncio.to_thread(registry_answers, self.host)
