"""The HA control plane's endpoint: Debian's `haproxy` on this machine, balancing TCP to
the control-plane nodes' API servers (`up --ha`), as kubeadm's high-availability guide
and seed 001's example run it.

    kubectl, kubelets, controller-managers, schedulers
        |  https://<bridge address>:6443  (the kubeconfigs' server)
    haproxy  frontend kube-apiserver, mode tcp: TLS passes through, untouched
        |  backend: round robin over the servers that pass their check
        +--> control-plane   172.18.0.10:6443   check: GET /readyz over TLS, every second
        +--> control-plane2  172.18.0.9:6443    (2 failures: down; 2 passes: up again)
        +--> control-plane3  172.18.0.8:6443

A connection refused by a dead server is sent to another one (`option redispatch`,
`retries`), so a new request never sees a killed API server; a connection that was open
to it is cut, and the client connects again. A server whose /readyz fails (its etcd is
gone, it is shutting down) gets no new connections.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from pathlib import Path

from minikube_py.process import ComponentProcess, ComponentProcessError

HAPROXY_BINARY = "haproxy"
CHECK_INTERVAL_MS = 1000
"""How often each API server's /readyz is asked (kubeadm's guide: 2 s)."""
CONFIG = """\
global
    log stderr format raw local0 warning
    maxconn 4000

defaults
    mode tcp
    log global
    option tcplog
    option dontlog-normal
    option redispatch
    retries 3
    timeout connect 2s
    timeout check 2s
    timeout client 1h
    timeout server 1h
    timeout tunnel 1h

frontend kube-apiserver
    bind {bind}
    default_backend kube-apiserver

backend kube-apiserver
    balance roundrobin
    option httpchk
    http-check connect ssl
    http-check send meth GET uri /readyz
    http-check expect status 200
{servers}
"""


class HAProxyError(ComponentProcessError):
    """haproxy could not start."""


def haproxy_config(address: str, port: int, servers: Sequence[tuple[str, str, int]]) -> str:
    """haproxy.cfg: listen on address:port, balance over (name, address, port) servers."""
    lines = [f"    server {name} {host}:{server_port} check check-ssl verify none "
             f"inter {CHECK_INTERVAL_MS} fall 2 rise 2"
             for name, host, server_port in servers]
    return CONFIG.format(bind=f"{address}:{port}", servers="\n".join(lines))


class HAProxyProcess(ComponentProcess):
    """`haproxy -db -f haproxy.cfg`: the cluster endpoint at address:port."""

    component = "haproxy"
    error = HAProxyError

    def __init__(self, config_path: Path, *, address: str, port: int,
                 servers: Sequence[tuple[str, str, int]], log_path: Path,
                 pid_file: Path | None = None) -> None:
        super().__init__(log_path, start_timeout=10.0, stop_timeout=5.0, pid_file=pid_file,
                         address=address)
        self.config_path = config_path
        self.port = port
        self.servers = tuple(servers)

    @property
    def endpoint(self) -> str:
        return f"{self.address}:{self.port}"

    def command(self) -> list[str]:
        # -db: stay in the foreground (the supervisor watches it, as systemd would)
        return [HAPROXY_BINARY, "-db", "-f", str(self.config_path)]

    def ports(self) -> list[int]:
        return [self.port]

    def prepare(self) -> None:
        """haproxy is installed, the port is free; the configuration is written."""
        if shutil.which(HAPROXY_BINARY) is None:
            raise HAProxyError("haproxy is not installed: apt-get install haproxy")
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(haproxy_config(self.address, self.port, self.servers))
        super().prepare()

    async def serving(self) -> bool:
        """The frontend accepts connections."""
        if not self.running:
            return False
        try:
            _, writer = await asyncio.open_connection(self.address, self.port)
        except OSError:
            return False
        writer.close()
        return True
