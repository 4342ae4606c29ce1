"""Run a real single-member etcd server as a child process (for `up`, tests and benchmarks)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from minikube_py.apiserver.storage.etcd import EtcdClient, EtcdError, EtcdTLS
from minikube_py.process import LOOPBACK, ComponentProcess, ComponentProcessError, free_port

ETCD_BINARY = "etcd"


class EtcdProcessError(ComponentProcessError):
    """etcd could not be started, or did not become ready in time."""


@dataclass(frozen=True)
class EtcdServingTLS:
    """etcd over TLS, as kubeadm runs it: its serving and peer certificates, the CA that
    signed them and every client's (--client-cert-auth: a client without a certificate
    of that CA is refused), and the client certificate its own readiness checks use."""

    ca_file: Path
    cert_file: Path
    key_file: Path
    peer_cert_file: Path
    peer_key_file: Path
    client: EtcdTLS

    def flags(self) -> list[str]:
        return [f"--cert-file={self.cert_file}", f"--key-file={self.key_file}",
                f"--trusted-ca-file={self.ca_file}", "--client-cert-auth=true",
                f"--peer-cert-file={self.peer_cert_file}",
                f"--peer-key-file={self.peer_key_file}",
                f"--peer-trusted-ca-file={self.ca_file}", "--peer-client-cert-auth=true"]


class EtcdProcess(ComponentProcess):
    """A single-member etcd cluster on loopback ports, with its own data directory.

    `async with EtcdProcess(data_dir) as etcd:` starts etcd and waits until it answers
    requests; leaving the block stops it. stop() and start() may be called in between
    to simulate an outage: etcd comes back on the same ports with the same data, so its
    revision carries on where it stopped. etcd's log goes to `log_path` (default: a
    file next to the data directory, `<data_dir>.log`).
    """

    component = "etcd"
    error = EtcdProcessError

    def __init__(
        self,
        data_dir: Path,
        *,
        client_port: int | None = None,
        peer_port: int | None = None,
        name: str = "minikube-py",
        log_path: Path | None = None,
        pid_file: Path | None = None,
        extra_args: tuple[str, ...] = (),
        start_timeout: float = 20.0,
        stop_timeout: float = 10.0,
        tls: EtcdServingTLS | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.tls = tls
        super().__init__(
            log_path or self.data_dir.with_name(self.data_dir.name + ".log"),
            start_timeout=start_timeout,
            stop_timeout=stop_timeout,
            pid_file=pid_file,
        )
        self.client_port = client_port or free_port()
        self.peer_port = peer_port or free_port()
        self.name = name
        self.extra_args = extra_args

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"

    @property
    def client_url(self) -> str:
        """The URL clients connect to, e.g. https://127.0.0.1:2379."""
        return f"{self.scheme}://{LOOPBACK}:{self.client_port}"

    @property
    def peer_url(self) -> str:
        """The URL raft peers would use (a single member still needs one)."""
        return f"{self.scheme}://{LOOPBACK}:{self.peer_port}"

    def client(self, *, request_timeout: float = 5.0) -> EtcdClient:
        """A new EtcdClient for this server (the caller closes it)."""
        return EtcdClient([self.client_url], request_timeout=request_timeout,
                          tls=self.tls.client if self.tls is not None else None)

    def command(self) -> list[str]:
        """The etcd command line: one member named self.name, listening on loopback only."""
        return [
            ETCD_BINARY,
            f"--name={self.name}",
            f"--data-dir={self.data_dir}",
            f"--listen-client-urls={self.client_url}",
            f"--advertise-client-urls={self.client_url}",
            f"--listen-peer-urls={self.peer_url}",
            f"--initial-advertise-peer-urls={self.peer_url}",
            f"--initial-cluster={self.name}={self.peer_url}",
            "--initial-cluster-state=new",
            "--pre-vote=true",  # as the kubeadm layout's (kubeadm/controlplane.py etcd_flags)
            "--logger=zap",
            "--log-level=warn",
            "--log-outputs=stderr",
            *(self.tls.flags() if self.tls is not None else ()),
            *self.extra_args,
        ]

    def ports(self) -> list[int]:
        return [self.client_port, self.peer_port]

    def prepare(self) -> None:
        """etcd is installed, its ports are free, and its data directory exists."""
        if shutil.which(ETCD_BINARY) is None:
            raise EtcdProcessError("etcd is not on PATH: install it (apt-get install etcd-server)")
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        super().prepare()

    async def serving(self) -> bool:
        """etcd serves a read."""
        async with self.client(request_timeout=1.0) as client:
            return await _answers(client)

    async def wait_ready(self) -> None:
        """Poll etcd with a cheap read until it answers."""
        async with self.client(request_timeout=1.0) as client:
            await self.poll_until_ready(lambda: _answers(client), interval=0.05)


async def _answers(client: EtcdClient) -> bool:
    """Whether etcd serves a read (the current revision)."""
    try:
        await client.current_revision()
    except EtcdError:
        return False
    return True
