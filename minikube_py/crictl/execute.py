"""`crictl exec` (upstream cmd/crictl/exec.go): run a command in a running container.

    -s (sync)   ExecSync: the runtime runs the command and answers with its output and
                exit code in one message (what the kubelet's exec probes use)
    otherwise   Exec: the runtime answers with a URL on its streaming server; crictl
                upgrades it to SPDY and carries stdin (-i), stdout, stderr and, with a TTY
                (-t, needs -i and a terminal), the terminal's size, until the command
                exits (minikube_py/streaming/remotecommand.py, client-go's remotecommand)

With a TTY the terminal is raw, and ctrl-p ctrl-q detaches (ends our input). The command's
exit code becomes crictl's (upstream's crictl exits 1 with the same message; kubectl exec
passes the code on, and so do we).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import stat
import sys
import termios
import tty
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from minikube_py.cri import CRIError, RuntimeService
from minikube_py.crictl.crictl_config import rpc_error
from minikube_py.crictl.errors import CrictlError
from minikube_py.gen.cri import api_pb2
from minikube_py.streaming.remotecommand import (
    CodeExitError,
    RemoteCommandError,
    StreamOptions,
    stream,
)

TRANSPORT_SPDY = "spdy"
KUBELET_URL_HOST = "127.0.0.1:10250"
"""Where a URL without a host points (upstream's kubeletURLHost)."""
DETACH_KEYS = b"\x10\x11"
"""ctrl-p, ctrl-q: upstream's detachSequence."""
NO_DEADLINE = 365 * 24 * 3600.0
"""The gRPC deadline of an ExecSync without --timeout: upstream sets none."""
READ_SIZE = 32 * 1024


def add_parsers(commands: Any) -> None:
    command = commands.add_parser("exec", help="Run a command in a running container")
    command.add_argument("-s", "--sync", action="store_true",
                         help="Run the command synchronously")
    command.add_argument("--timeout", type=int, default=0, help="Timeout in seconds")
    command.add_argument("-t", "--tty", action="store_true", help="Allocate a pseudo-TTY")
    command.add_argument("-i", "--interactive", action="store_true", help="Keep STDIN open")
    command.add_argument("-r", "--transport", default=TRANSPORT_SPDY,
                         help="Transport protocol to use: spdy (websocket is not "
                              "implemented here)")
    command.add_argument("id", metavar="CONTAINER-ID")
    command.add_argument("cmd", nargs=argparse.REMAINDER, metavar="COMMAND [ARG...]")
    command.set_defaults(run=run_exec)


async def run_exec(runtime: RuntimeService, args: argparse.Namespace) -> None:
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise CrictlError("no command given: crictl exec [-i] [-t] CONTAINER-ID COMMAND "
                          "[ARG...]")
    if args.sync:
        await exec_sync(runtime, args.id, cmd, args.timeout)
        return
    if args.transport != TRANSPORT_SPDY:
        raise CrictlError(f'transport "{args.transport}" is not implemented here: use '
                          f"{TRANSPORT_SPDY} (the default)")
    if args.tty and not args.interactive:
        raise CrictlError("tty=true must be specified with interactive=true")
    if args.tty and not os.isatty(sys.stdin.fileno()):
        raise CrictlError("input is not a terminal: -t needs one (leave -t out to pipe "
                          "input)")
    await exec_stream(runtime, args.id, cmd, stdin=args.interactive, tty=args.tty)


async def exec_sync(runtime: RuntimeService, container_id: str, cmd: list[str],
                    timeout: int) -> None:
    """ExecSync: print stdout, then stderr, each followed by a newline (Println)."""
    try:
        answer = await runtime.exec_sync(
            api_pb2.ExecSyncRequest(container_id=container_id, cmd=cmd, timeout=timeout),
            timeout=timeout + 10.0 if timeout else NO_DEADLINE)
    except CRIError as err:
        raise CrictlError(f"execing command in container {container_id} synchronously: "
                          f"{rpc_error(err)}") from None
    if answer.exit_code != 0:
        raise CrictlError(
            f"execing command in container {container_id} synchronously: command "
            f"'{' '.join(cmd)}' exited with {answer.exit_code}: "
            f"{answer.stderr.decode(errors='replace')}".rstrip(), code=answer.exit_code)
    sys.stdout.buffer.write(answer.stdout + b"\n" + answer.stderr + b"\n")
    sys.stdout.flush()


async def exec_stream(runtime: RuntimeService, container_id: str, cmd: list[str], *,
                      stdin: bool, tty: bool) -> None:
    """Exec: ask for the streaming URL, then speak remotecommand to it."""
    try:
        answer = await runtime.exec(api_pb2.ExecRequest(
            container_id=container_id, cmd=cmd, tty=tty, stdin=stdin, stdout=True,
            stderr=not tty))
    except CRIError as err:
        raise CrictlError(f"execing command in container {container_id}: "
                          f"{rpc_error(err)}") from None
    options = StreamOptions(stdout=_writer(sys.stdout.buffer),
                            stderr=_writer(sys.stderr.buffer), tty=tty)
    if stdin:
        options.stdin = read_input(sys.stdin.fileno())
        if tty:
            options.stdin = escape_proxy(options.stdin, DETACH_KEYS)
            options.resizes = terminal_sizes()
    try:
        with raw_terminal(sys.stdin.fileno()) if tty else contextlib.nullcontext():
            await stream(exec_url(answer.url), options)
    except CodeExitError as err:
        raise CrictlError(f"execing command in container {container_id}: {err}",
                          code=err.code) from None
    except RemoteCommandError as err:
        raise CrictlError(f"execing command in container {container_id}: {err}") from None


def exec_url(url: str) -> str:
    """The runtime's URL, with the kubelet's host and http when it names none."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme or "http", parts.netloc or KUBELET_URL_HOST, parts.path,
                       parts.query, parts.fragment))


def _writer(out: Any) -> Any:
    async def write(data: bytes) -> None:
        out.write(data)
        out.flush()
    return write


async def read_input(fd: int) -> AsyncIterator[bytes]:
    """Our stdin, chunk by chunk, until its end: watched by the event loop when it is a
    terminal or a pipe, read straight when it is a file (or /dev/null)."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        while data := os.read(fd, READ_SIZE):
            yield data
        return
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue()

    def readable() -> None:
        try:
            data = os.read(fd, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
        chunks.put_nowait(data)

    try:
        loop.add_reader(fd, readable)
    except PermissionError:  # a device epoll cannot watch, such as /dev/null
        while data := os.read(fd, READ_SIZE):
            yield data
        return
    try:
        while data := await chunks.get():
            yield data
    finally:
        loop.remove_reader(fd)


async def escape_proxy(source: AsyncIterator[bytes], keys: bytes) -> AsyncIterator[bytes]:
    """moby's EscapeProxy: pass input on until the detach keys arrive, then end it. A
    chunk ending in the start of the keys is held until the next one says more."""
    held = b""
    async for data in source:
        data = held + data
        at = data.find(keys)
        if at >= 0:
            if at:
                yield data[:at]
            return
        keep = next((n for n in range(len(keys) - 1, 0, -1) if data.endswith(keys[:n])), 0)
        held = data[len(data) - keep:] if keep else b""
        if len(data) > keep:
            yield data[:len(data) - keep]
    if held:
        yield held


async def terminal_sizes() -> AsyncIterator[tuple[int, int]]:
    """MonitorSize: the terminal's size now, and again after each SIGWINCH that changed
    it."""
    loop = asyncio.get_running_loop()
    changed = asyncio.Event()
    loop.add_signal_handler(signal.SIGWINCH, changed.set)
    last = None
    try:
        while True:
            size = _terminal_size()
            if size != last:
                last = size
                yield size
            await changed.wait()
            changed.clear()
    finally:
        loop.remove_signal_handler(signal.SIGWINCH)


def _terminal_size() -> tuple[int, int]:
    for fd in (sys.stdout.fileno(), sys.stdin.fileno()):
        with contextlib.suppress(OSError):
            size = os.get_terminal_size(fd)
            return size.columns, size.lines
    return 80, 24


@contextlib.contextmanager
def raw_terminal(fd: int) -> Iterator[None]:
    """The terminal raw while the session lasts (term.TTY.Safe), restored after."""
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
