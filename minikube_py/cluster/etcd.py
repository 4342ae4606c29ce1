"""Run a real single-member etcd server as a child process (for `up`, tests and benchmarks)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import socket
import time
from pathlib import Path
from types import TracebackType

from minikube_py.apiserver.storage.etcd import EtcdClient, EtcdError

ETCD_BINARY = "etcd"
LOOPBACK = "127.0.0.1"


class EtcdProcessError(Exception):
    """etcd could not be started, or did not become ready in time."""


def free_port(host: str = LOOPBACK) -> int:
    """Ask the kernel for a TCP port that is free right now on host.

    Another process may still take it before etcd binds it; the window is short, and
    EtcdProcess.start() reports a clear error if it happens.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    """Whether something listens on host:port (a socket in TIME_WAIT does not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
        return False


class EtcdProcess:
    """A single-member etcd cluster on loopback ports, with its own data directory.

    `async with EtcdProcess(data_dir) as etcd:` starts etcd and waits until it answers
    requests; leaving the block stops it. stop() and start() may be called in between
    to simulate an outage: etcd comes back on the same ports with the same data, so its
    revision carries on where it stopped. etcd's log goes to `log_path` (default: a
    file next to the data directory, `<data_dir>.log`).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        client_port: int | None = None,
        peer_port: int | None = None,
        name: str = "minikube-py",
        log_path: Path | None = None,
        extra_args: tuple[str, ...] = (),
        start_timeout: float = 20.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.client_port = client_port or free_port()
        self.peer_port = peer_port or free_port()
        self.name = name
        self.log_path = log_path or self.data_dir.with_name(self.data_dir.name + ".log")
        self.extra_args = extra_args
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._process: asyncio.subprocess.Process | None = None
        self._log_offset = 0

    @property
    def client_url(self) -> str:
        """The URL clients connect to, e.g. http://127.0.0.1:40123."""
        return f"http://{LOOPBACK}:{self.client_port}"

    @property
    def peer_url(self) -> str:
        """The URL raft peers would use (a single member still needs one)."""
        return f"http://{LOOPBACK}:{self.peer_port}"

    @property
    def pid(self) -> int | None:
        """The etcd process id while it runs, else None."""
        return self._process.pid if self.running and self._process else None

    @property
    def running(self) -> bool:
        """Whether the etcd process is alive."""
        return self._process is not None and self._process.returncode is None

    def client(self, *, request_timeout: float = 5.0) -> EtcdClient:
        """A new EtcdClient for this server (the caller closes it)."""
        return EtcdClient([self.client_url], request_timeout=request_timeout)

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
            "--logger=zap",
            "--log-level=warn",
            "--log-outputs=stderr",
            *self.extra_args,
        ]

    async def start(self) -> None:
        """Start etcd and wait until it serves requests; a no-op if it already runs."""
        if self.running:
            return
        if shutil.which(ETCD_BINARY) is None:
            raise EtcdProcessError("etcd is not on PATH: install it (apt-get install etcd-server)")
        # Otherwise the readiness check below could be answered by another etcd.
        for port in (self.client_port, self.peer_port):
            if port_in_use(port):
                raise EtcdProcessError(f"port {port} is already in use on {LOOPBACK}")
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        command = self.command()
        # setpriv --pdeathsig: if this Python process dies without calling stop(), the
        # kernel sends etcd SIGTERM, so a crashed test run leaves no etcd behind.
        setpriv = shutil.which("setpriv")
        if setpriv is not None:
            command = [setpriv, "--pdeathsig", "TERM", *command]
        with self.log_path.open("ab") as log:
            self._log_offset = log.tell()
            # A session of its own: Ctrl-C in a terminal reaches us, and we stop etcd.
            self._process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        try:
            await self._wait_ready()
        except BaseException:
            await self.stop()
            raise

    async def _wait_ready(self) -> None:
        """Poll etcd with a cheap read until it answers, the process dies, or time is up."""
        deadline = time.monotonic() + self.start_timeout
        async with self.client(request_timeout=1.0) as client:
            while True:
                if self._process is None or self._process.returncode is not None:
                    code = self._process.returncode if self._process else None
                    raise EtcdProcessError(
                        f"etcd exited with code {code} during start-up: {self._log_excerpt()}"
                    )
                try:
                    await client.current_revision()
                    return
                except EtcdError:
                    if time.monotonic() > deadline:
                        raise EtcdProcessError(
                            f"etcd did not answer on {self.client_url} within "
                            f"{self.start_timeout:.0f}s: {self._log_excerpt()}"
                        ) from None
                    await asyncio.sleep(0.05)

    def _log_excerpt(self, lines: int = 4) -> str:
        """The first and last lines etcd logged since start(), for error messages."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                logged = log.read().decode(errors="replace").splitlines()
        except OSError:
            return f"no log at {self.log_path}"
        if len(logged) > 2 * lines:
            logged = [*logged[:lines], "...", *logged[-lines:]]
        return f"etcd's log ({self.log_path}):\n" + "\n".join(logged)

    async def stop(self) -> None:
        """Stop etcd: SIGTERM, then SIGKILL after stop_timeout; a no-op if not running."""
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), self.stop_timeout)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

    async def __aenter__(self) -> EtcdProcess:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
