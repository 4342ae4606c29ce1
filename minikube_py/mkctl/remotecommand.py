"""The client side of pods/exec and pods/attach (client-go's remotecommand over WebSocket).

    connect  GET .../pods/NAME/exec?command=ls&container=c&stdin=true&stdout=true&stderr=true
             offering v5.channel.k8s.io, then v4.channel.k8s.io
    then, until the server closes, on one thread:
      stdin (with -i)      -> channel 0; at its end, on v5, CLOSE 0 so the command sees it
      channel 1, 2         -> our stdout, stderr
      channel 3            the command's end: a Status, Success or NonZeroExitCode with
                           the code as the cause "ExitCode"
      with a TTY           the terminal raw, and its size on channel 4 first

The command's exit code becomes ours: kubectl prints "command terminated with exit code
N" and exits with N.
"""

from __future__ import annotations

import json
import os
import selectors
import sys
from typing import Any

from minikube_py.mkctl.command import Invocation
from minikube_py.mkctl.errors import Exit, MkctlError
from minikube_py.mkctl.pods import write_bytes
from minikube_py.mkctl.websocket import WebSocket, connect

V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"
STDIN, STDOUT, STDERR, ERROR, RESIZE = range(5)
CLOSE = 255


def stream(inv: Invocation, path: str, query: list[tuple[str, str]], *, stdin: bool,
           tty: bool) -> None:
    """Run the session; returns when the command ended with 0, else raises Exit (or the
    error the server reported)."""
    socket = connect(inv.client, path, query, [V5, V4])
    saved = _raw_terminal() if tty else None
    try:
        if tty:
            _send_size(socket)
        status = _pump(inv, socket, stdin)
    finally:
        if saved is not None:
            import termios

            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)
        socket.close()
    finish(inv, status)


def _pump(inv: Invocation, socket: WebSocket, stdin: bool) -> dict[str, Any] | None:
    """Carry the streams until the server closes; the Status of channel 3, if it sent one."""
    selector = selectors.DefaultSelector()
    selector.register(socket.sock, selectors.EVENT_READ, "socket")
    stdin_fd = sys.stdin.fileno() if stdin else -1
    if stdin:
        selector.register(stdin_fd, selectors.EVENT_READ, "stdin")
    status = None
    try:
        while not socket.closed:
            ready = ["socket"] if socket.pending() else [
                key.data for key, _ in selector.select()]
            if "stdin" in ready:
                data = os.read(stdin_fd, 65536)
                if data:
                    socket.send(bytes([STDIN]) + data)
                else:
                    selector.unregister(stdin_fd)
                    if socket.protocol == V5:
                        socket.send(bytes([CLOSE, STDIN]))
            if "socket" in ready:
                message = socket.receive()
                if not message:
                    continue
                channel, data = message[0], message[1:]
                if channel == STDOUT:
                    write_bytes(inv.out, data)
                elif channel == STDERR:
                    write_bytes(inv.err, data)
                elif channel == ERROR and data:
                    status = json.loads(data)
    finally:
        selector.close()
    return status


def finish(inv: Invocation, status: dict[str, Any] | None) -> None:
    """errorDecoderV4: Success or nothing is 0; NonZeroExitCode leaves with that code."""
    if not status or status.get("status") == "Success":
        return
    if status.get("reason") == "NonZeroExitCode":
        for cause in (status.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode":
                code = int(cause.get("message", "1"))
                inv.out.flush()
                inv.err.write(f"command terminated with exit code {code}\n")
                raise Exit(code)
        raise MkctlError("error executing remote command: "
                         f"command terminated with non-zero exit code: {status.get('message')}")
    raise MkctlError(f"error executing remote command: {status.get('message', '')}")


def use_tty(inv: Invocation, stdin: bool, tty: bool, quiet: bool) -> bool:
    """SetupTTY: a TTY only with stdin, and only when stdin is a terminal."""
    if not (stdin and tty):
        return False
    if not os.isatty(sys.stdin.fileno()):
        if not quiet:
            inv.err.write("Unable to use a TTY - input is not a terminal or the right kind "
                          "of file\n")
        return False
    return True


def _raw_terminal() -> list[Any]:
    import termios
    import tty

    saved = termios.tcgetattr(sys.stdin.fileno())
    tty.setraw(sys.stdin.fileno())
    return saved


def _send_size(socket: WebSocket) -> None:
    size = os.get_terminal_size(sys.stdin.fileno())
    socket.send(bytes([RESIZE]) + json.dumps(
        {"Width": size.columns, "Height": size.lines}).encode())
