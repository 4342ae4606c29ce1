"""A cluster component (etcd, the API server, a kubelet ...) run as a child process:
start, wait until ready, stop.

Two ways to run one:
- tied to this process (tests, benchmarks): `async with component:`; if this process
  dies, the kernel stops the child too;
- as a daemon (the launcher): with a pid file, the child outlives the command that
  started it, and a later command adopts it through the pid file to wait for it or stop
  it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self

LOOPBACK = "127.0.0.1"
EXIT_POLL_SECONDS = 0.05


class ComponentProcessError(Exception):
    """A component could not be started, or did not become ready in time."""


LISTEN_PORTS = range(20000, 30000)
"""Where free_port looks: below the kernel's ephemeral range (32768-60999 by default),
which outgoing connections take their local ports from, and below the NodePort range."""
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port(host: str = LOOPBACK) -> int:
    """A port that is free right now on host, for TCP and for UDP, and that no other
    caller of free_port on the machine was given in the last RESERVED_SECONDS.

    It is chosen at random outside the kernel's ephemeral range: a port the kernel hands
    out (bind to 0) is one any outgoing connect() on the machine may take as its local
    port the moment it is free again, before the component binds it (seen in a suite
    making thousands of connections: "address already in use"). Two callers (a test
    worker's component and another's, each about to start) could still pick the same
    free port before either binds it, so each port handed out is reserved (_reserve).
    """
    ports = LISTEN_PORTS
    with contextlib.suppress(OSError, ValueError):
        ephemeral_low = int(EPHEMERAL_RANGE.read_text().split()[0])
        ports = range(ports.start, min(ports.stop, ephemeral_low))
    for port in random.sample(ports, min(len(ports), 100)):
        if (_bindable(host, port, socket.SOCK_STREAM) and _bindable(host, port, socket.SOCK_DGRAM)
                and _reserve(host, port)):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # no room below it
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


RESERVED_SECONDS = 120.0
"""How long a port free_port gave stays reserved: the time a component has to bind it."""
_reservations: list[tuple[float, socket.socket]] = []
_reservations_lock = threading.Lock()


def _reserve(host: str, port: int) -> bool:
    """Reserve host:port for this process, unless another process (or this one) has in
    the last RESERVED_SECONDS; whether it is now ours.

    The reservation is a Unix socket bound to an abstract name (one of the network
    namespace, like the port itself): the kernel refuses a second bind of the name, and
    frees it when the socket is closed, here after RESERVED_SECONDS or when the process
    ends, however it ends; nothing is left on disk."""
    holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        holder.bind(f"\0minikube-py-port-{host}:{port}")
    except OSError:
        holder.close()
        return False
    now = time.monotonic()
    with _reservations_lock:
        while _reservations and _reservations[0][0] < now - RESERVED_SECONDS:
            _reservations.pop(0)[1].close()
        _reservations.append((now, holder))
    return True


def _bindable(host: str, port: int, kind: socket.SocketKind, *, reuse: bool = False
              ) -> bool:
    """Whether a socket of `kind` can bind host:port now (with `reuse`, SO_REUSEADDR: a
    TCP port whose last connection is in TIME_WAIT counts as free)."""
    with socket.socket(socket.AF_INET, kind) as sock:
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    """Whether something listens on host:port (a socket in TIME_WAIT does not count)."""
    return not _bindable(host, port, socket.SOCK_STREAM, reuse=True)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists and has not exited (a zombie has)."""
    try:
        os.kill(pid, 0)
        status = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return False
    # the state is the field after the command name in parentheses: Z is a zombie
    return status.rpartition(")")[2].split()[0] != "Z"


def start_ticks(pid: int) -> int | None:
    """When the process with this pid started, in clock ticks since boot (its stat's
    starttime): with the pid, its identity for good, whatever the wall clock does. None if
    it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def started_at(pid: int) -> float | None:
    """When the process with this pid started (seconds since the epoch, to within a
    second: the boot time /proc gives is whole seconds, and it moves when the wall clock
    is stepped), or None if it is gone."""
    ticks = start_ticks(pid)
    try:
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return None if ticks is None else boot + ticks / os.sysconf("SC_CLK_TCK")


def start_file(pid_file: Path) -> Path:
    """Beside run/NAME.pid, run/NAME.start: the start ticks of the process it names."""
    return pid_file.with_suffix(".start")


def write_pid_file(pid_file: Path, pid: int) -> None:
    """The pid (the file's whole content, as any pid file), and its start ticks beside it
    (start_file), read at once: together they name this process and no other."""
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    ticks = start_ticks(pid)
    if ticks is None:
        start_file(pid_file).unlink(missing_ok=True)
    else:
        start_file(pid_file).write_text(str(ticks))
    pid_file.write_text(str(pid))


def remove_pid_file(pid_file: Path) -> None:
    pid_file.unlink(missing_ok=True)
    start_file(pid_file).unlink(missing_ok=True)


def names_its_process(pid_file: Path, pid: int) -> bool:
    """Whether `pid`, read from `pid_file`, is still the process the file was written for.
    Pids are reused (32,768 of them by default, cycled in minutes by a busy machine), so a
    file its process outlived may name a stranger, which a stop must not signal. With the
    start ticks beside it (write_pid_file): the same pid started at the same tick. Without
    (a file written otherwise): alive, and started before the file was written, as the
    wall clock tells, which a clock stepped forward (a virtual machine resumed) makes
    wrong for every process started before the step."""
    if not pid_alive(pid):
        return False
    try:
        recorded: int | None = int(start_file(pid_file).read_text())
    except (OSError, ValueError):
        recorded = None
    if recorded is not None:
        return start_ticks(pid) == recorded
    started = started_at(pid)
    try:
        written = pid_file.stat().st_mtime
    except OSError:
        return False
    return started is not None and started <= written + 2.0  # btime's rounding, and more


class ComponentProcess(ABC):
    """A cluster component run as a child process, its output appended to a log.

    `async with component:` starts it and waits until it is ready; leaving the block stops
    it. stop() and start() may also be called in between. A subclass fills in the hooks:
    command() says what to run, ports() what it will listen on, prepare() checks and
    creates what a start needs, and serving() tells whether the component answers (start()
    polls it until it does).

    With a pid_file, the child is a daemon: it is not stopped when this process ends, and
    start() and stop() in another process find it through the file.
    """

    # The component as error messages name it, e.g. "etcd".
    component: ClassVar[str]
    # What start-up failures raise: each component has its own error type.
    error: ClassVar[type[ComponentProcessError]] = ComponentProcessError
    # Variables added to our own environment for the child.
    environment: ClassVar[dict[str, str]] = {"PYTHONUNBUFFERED": "1"}

    def __init__(self, log_path: Path, *, start_timeout: float, stop_timeout: float,
                 pid_file: Path | None = None, netns: Path | None = None,
                 address: str = LOOPBACK) -> None:
        """`netns`: the network namespace (its /var/run/netns file) to run in, as a node's
        components do; `address`: where its ports() are, for the check before a start."""
        self.log_path = Path(log_path)
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.pid_file = pid_file
        self.netns = netns
        self.address = address
        self._pid: int | None = None
        self._child: subprocess.Popen[bytes] | None = None  # when we started it
        self._log_offset = 0

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs, else None."""
        return self._pid if self.running else None

    @property
    def running(self) -> bool:
        """Whether the child process is alive."""
        if self._pid is None:
            return False
        if self._child is not None:
            return self._child.poll() is None
        return pid_alive(self._pid)

    @property
    def returncode(self) -> int | None:
        """The child's exit status once it exited (None for an adopted daemon)."""
        return self._child.returncode if self._child is not None else None

    @abstractmethod
    def command(self) -> list[str]:
        """The component's command line."""

    def ports(self) -> list[int]:
        """The ports the component will listen on at self.address: start() refuses to run
        it when one is taken (otherwise the readiness check could be answered by another
        program). Default: none."""
        return []

    def prepare(self) -> None:
        """Before each start: make sure the component can start (here: its ports are free
        and its log folder exists). Must not start anything. (Ports in a node's network
        namespace are not checked: nothing else runs there.)"""
        if self.netns is None:
            for port in self.ports():
                if port_in_use(port, self.address):
                    raise self.error(f"port {port} is already in use on {self.address}")
        elif not self.netns.exists():
            raise self.error(f"the network namespace {self.netns} does not exist")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)

    async def serving(self) -> bool:
        """Whether the component answers right now (its readiness check, asked once).
        Default: its process runs."""
        return self.running

    async def wait_ready(self) -> None:
        """Return once the component serves; raise self.error if it does not in time."""
        await self.poll_until_ready(self.serving, interval=0.1)

    def adopt(self) -> bool:
        """Whether the daemon the pid file names still runs; if so, this object now
        stands for it (stop() stops it)."""
        if self.running:
            return True
        if self.pid_file is None:
            return False
        try:
            pid = int(self.pid_file.read_text())
        except (OSError, ValueError):
            return False
        if not names_its_process(self.pid_file, pid):  # gone, or its pid reused since
            remove_pid_file(self.pid_file)
            return False
        self._pid, self._child = pid, None
        return True

    async def start(self) -> None:
        """Start the component (or adopt the running daemon) and wait until it is ready;
        a no-op if this object already runs it."""
        if self.running:
            return
        if self.adopt():
            await self.wait_ready()
            return
        self.prepare()
        command = self.command()
        if self.netns is not None:
            # nsenter, not `ip netns exec`: that one also remounts /sys, which hides the
            # cgroup mounts runc needs. nsenter execs the command: the pid stays the same.
            command = ["nsenter", f"--net={self.netns}", *command]
        if self.pid_file is None:
            # setpriv --pdeathsig: if this Python process dies without calling stop(), the
            # kernel sends the child SIGTERM, so a crashed test run leaves nothing behind.
            setpriv = shutil.which("setpriv")
            if setpriv is not None:
                command = [setpriv, "--pdeathsig", "TERM", *command]
        with self.log_path.open("ab") as log:
            self._log_offset = log.tell()
            # A session of its own: Ctrl-C in a terminal reaches us, and we stop the child.
            self._child = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, env={**os.environ, **self.environment})
        self._pid = self._child.pid
        if self.pid_file is not None:
            write_pid_file(self.pid_file, self._pid)
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
            if not self.running:
                raise self.error(
                    f"{self.component} exited with code {self.returncode} during start-up: "
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
        """Stop the child (or the adopted daemon): SIGTERM, then SIGKILL after
        stop_timeout; a no-op if not running."""
        if self.running:
            await self._signal_and_wait(signal.SIGTERM, self.stop_timeout)
            if self.running:
                await self._signal_and_wait(signal.SIGKILL, self.stop_timeout)
        self._forget()

    async def kill(self) -> None:
        """SIGKILL, as a crash would: the child gets no chance to clean up."""
        if self.running:
            await self._signal_and_wait(signal.SIGKILL, self.stop_timeout)
        self._forget()

    async def _signal_and_wait(self, signum: int, timeout: float) -> None:
        assert self._pid is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._pid, signum)
        deadline = time.monotonic() + timeout
        while self.running and time.monotonic() < deadline:
            await asyncio.sleep(EXIT_POLL_SECONDS)

    def _forget(self) -> None:
        if self.pid_file is not None and self._pid is not None:
            remove_pid_file(self.pid_file)
        self._pid, self._child = None, None

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
