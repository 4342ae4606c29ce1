"""Run the API server as a child process (for `up`, tests and benchmarks)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from minikube_py.cluster.etcd import LOOPBACK, free_port


class APIServerProcessError(Exception):
    """The API server could not be started, or did not become ready in time."""


class APIServerProcess:
    """`python -m minikube_py.apiserver` on a loopback port, stopped on exit.

    `async with APIServerProcess([etcd_url], log_path) as api:` starts it and waits until
    /readyz answers ok; `api.url` is where clients connect.
    """

    def __init__(
        self,
        etcd_servers: list[str],
        log_path: Path,
        *,
        port: int | None = None,
        extra_args: tuple[str, ...] = (),
        start_timeout: float = 30.0,
    ) -> None:
        self.etcd_servers = etcd_servers
        self.log_path = Path(log_path)
        self.port = port or free_port()
        self.extra_args = extra_args
        self.start_timeout = start_timeout
        self._process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "minikube_py.apiserver",
            f"--etcd-servers={','.join(self.etcd_servers)}",
            f"--bind-address={LOOPBACK}",
            f"--port={self.port}",
            *self.extra_args,
        ]

    async def start(self) -> None:
        if self.running:
            return
        command = self.command()
        setpriv = shutil.which("setpriv")
        if setpriv is not None:
            command = [setpriv, "--pdeathsig", "TERM", *command]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            await self._wait_ready()
        except BaseException:
            await self.stop()
            raise

    async def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self._process is None or self._process.returncode is not None:
                raise APIServerProcessError(
                    f"the API server exited during start-up; see {self.log_path}")
            if await asyncio.to_thread(self.ready):
                return
            if time.monotonic() > deadline:
                raise APIServerProcessError(
                    f"the API server was not ready within {self.start_timeout:.0f}s; "
                    f"see {self.log_path}")
            await asyncio.sleep(0.1)

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=2) as answer:
                return answer.status == 200
        except (urllib.error.URLError, OSError):
            return False

    async def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), 10)
        if process.returncode is None:
            process.kill()
            await process.wait()

    async def __aenter__(self) -> APIServerProcess:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
