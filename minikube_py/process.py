"""A cluster component (etcd, the API server) run as a child process: start, wait, stop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self


class ComponentProcessError(Exception):
    """A component could not be started, or did not become ready in time."""


class ComponentProcess(ABC):
    """A cluster component run as a child process of this one, its output appended to a log.

    `async with component:` starts it and waits until it is ready; leaving the block stops
    it. stop() and start() may also be called in between. A subclass fills in the hooks:
    command() says what to run, prepare() checks and creates what a start needs, and
    wait_ready() tells when the component serves (usually through poll_until_ready()).
    """

    # The component as error messages name it, e.g. "etcd".
    component: ClassVar[str]
    # What start-up failures raise: each component has its own error type.
    error: ClassVar[type[ComponentProcessError]] = ComponentProcessError
    # Variables added to our own environment for the child.
    environment: ClassVar[dict[str, str]] = {}

    def __init__(self, log_path: Path, *, start_timeout: float, stop_timeout: float) -> None:
        self.log_path = Path(log_path)
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._process: asyncio.subprocess.Process | None = None
        self._log_offset = 0

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs, else None."""
        return self._process.pid if self.running and self._process else None

    @property
    def running(self) -> bool:
        """Whether the child process is alive."""
        return self._process is not None and self._process.returncode is None

    @abstractmethod
    def command(self) -> list[str]:
        """The component's command line."""

    def prepare(self) -> None:
        """Before each start: make sure the component can start (here: its log folder)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)

    @abstractmethod
    async def wait_ready(self) -> None:
        """Return once the component serves; raise self.error if it does not in time."""

    async def start(self) -> None:
        """Start the component and wait until it is ready; a no-op if it already runs."""
        if self.running:
            return
        self.prepare()
        command = self.command()
        # setpriv --pdeathsig: if this Python process dies without calling stop(), the
        # kernel sends the child SIGTERM, so a crashed test run leaves nothing behind.
        setpriv = shutil.which("setpriv")
        if setpriv is not None:
            command = [setpriv, "--pdeathsig", "TERM", *command]
        with self.log_path.open("ab") as log:
            self._log_offset = log.tell()
            # A session of its own: Ctrl-C in a terminal reaches us, and we stop the child.
            self._process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                env={**os.environ, **self.environment},
            )
        try:
            await self.wait_ready()
        except BaseException:
            await self.stop()
            raise

    async def poll_until_ready(
        self, is_ready: Callable[[], Awaitable[bool]], interval: float
    ) -> None:
        """Ask is_ready() every interval seconds until it says yes.

        Raises self.error if the child exits first or start_timeout passes; the message
        quotes the child's log.
        """
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self._process is None or self._process.returncode is not None:
                code = self._process.returncode if self._process else None
                raise self.error(
                    f"{self.component} exited with code {code} during start-up: "
                    f"{self.log_excerpt()}"
                )
            if await is_ready():
                return
            if time.monotonic() > deadline:
                raise self.error(
                    f"{self.component} was not ready within {self.start_timeout:.0f}s: "
                    f"{self.log_excerpt()}"
                )
            await asyncio.sleep(interval)

    def log_excerpt(self, lines: int = 4) -> str:
        """The first and last lines the child logged since start(), for error messages."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                logged = log.read().decode(errors="replace").splitlines()
        except OSError:
            return f"no log at {self.log_path}"
        if len(logged) > 2 * lines:
            logged = [*logged[:lines], "...", *logged[-lines:]]
        return f"{self.component}'s log ({self.log_path}):\n" + "\n".join(logged)

    async def stop(self) -> None:
        """Stop the child: SIGTERM, then SIGKILL after stop_timeout; a no-op if not running."""
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

    async def kill(self) -> None:
        """SIGKILL, as a crash would: the child gets no chance to clean up."""
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
