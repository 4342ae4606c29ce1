"""Run the API server as a child process (for `up`, tests and benchmarks)."""

from __future__ import annotations

import asyncio
import ssl
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from minikube_py.process import LOOPBACK, ComponentProcess, ComponentProcessError, free_port


class APIServerProcessError(ComponentProcessError):
    """The API server could not be started, or did not become ready in time."""


@dataclass(frozen=True)
class ServingTLS:
    """The files of a TLS API server: its certificate and key, the CA clients' certificates
    are checked against (which also signed the serving certificate)."""

    cert_file: Path
    key_file: Path
    ca_file: Path

    def flags(self) -> list[str]:
        return [f"--tls-cert-file={self.cert_file}", f"--tls-private-key-file={self.key_file}",
                f"--client-ca-file={self.ca_file}"]


class APIServerProcess(ComponentProcess):
    """`python -m minikube_py.apiserver` on a port of one address, stopped on exit.

    `async with APIServerProcess([etcd_url], log_path) as api:` starts it and waits until
    /readyz answers ok; `api.url` is where clients connect.
    """

    component = "the API server"
    error = APIServerProcessError

    def __init__(
        self,
        etcd_servers: list[str],
        log_path: Path,
        *,
        port: int | None = None,
        pid_file: Path | None = None,
        extra_args: tuple[str, ...] = (),
        start_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        address: str = LOOPBACK,
        tls: ServingTLS | None = None,
    ) -> None:
        """`address`: where it listens (loopback, or the node network's gateway when the
        cluster's nodes run in network namespaces and must reach it)."""
        super().__init__(log_path, start_timeout=start_timeout, stop_timeout=stop_timeout,
                         pid_file=pid_file, address=address)
        self.etcd_servers = etcd_servers
        self.port = port or free_port()
        self.extra_args = extra_args
        self.tls = tls
        # /readyz is public (system:public-info-viewer): checking the server is enough
        self._probe_context = (ssl.create_default_context(cafile=tls.ca_file)
                               if tls is not None else None)

    @property
    def url(self) -> str:
        """The URL clients connect to, e.g. http://127.0.0.1:40125 (https with TLS)."""
        return f"{'https' if self.tls else 'http'}://{self.address}:{self.port}"

    def command(self) -> list[str]:
        """The API server's command line: etcd's URLs, listening on one address."""
        return [
            sys.executable, "-m", "minikube_py.apiserver",
            f"--etcd-servers={','.join(self.etcd_servers)}",
            f"--bind-address={self.address}",
            f"--port={self.port}",
            *(self.tls.flags() if self.tls is not None else []),
            *self.extra_args,
        ]

    def ports(self) -> list[int]:
        return [self.port]

    async def serving(self) -> bool:
        """/readyz answers ok."""
        return await asyncio.to_thread(self.ready)

    def ready(self) -> bool:
        """Whether /readyz answers 200 right now."""
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=2,
                                        context=self._probe_context) as answer:
                return answer.status == 200
        except (urllib.error.URLError, OSError):
            return False
