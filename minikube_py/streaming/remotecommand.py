"""The client side of exec and attach over SPDY: what crictl speaks to the runtime's
streaming server (upstream: client-go tools/remotecommand, its SPDY executor and stream
protocol v4).

    GET <url from CRI Exec or Attach> HTTP/1.1      Upgrade: SPDY/3.1
                                                    X-Stream-Protocol-Version: v4.channel.k8s.io
    <- 101 Switching Protocols
    open streams, each named by its streamType header, in client-go's order:
      error     the server writes one JSON Status when the command has ended
      stdin     (if asked) our input; our FIN tells the command its input ended
      stdout    the command's output
      stderr    (not with a TTY: a terminal has one output)
      resize    (with a TTY) {"Width":W,"Height":H} each time the terminal changes size
    once stdout and stderr have ended, the error stream's Status says how the command
    ended: nothing or Success is 0, Failure with reason NonZeroExitCode carries the exit
    code as the cause "ExitCode" (errorDecoderV4).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from minikube_py.streaming import spdy
from minikube_py.streaming.bytestreams import dial_upgrade
from minikube_py.streaming.channels import V4

Writer = Callable[[bytes], Awaitable[None]]


class RemoteCommandError(Exception):
    """The session could not be set up, or the server reported a failure that is not an
    exit code; the message is client-go's."""


class CodeExitError(RemoteCommandError):
    """The command ran and exited with a non-zero code (client-go's exec.CodeExitError)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"command terminated with exit code {code}")
        self.code = code


@dataclass
class StreamOptions:
    """What to carry (client-go's StreamOptions): stdin and resizes are async iterators,
    None when not asked for; stdout and stderr are where the output goes."""

    stdout: Writer
    stderr: Writer | None
    stdin: AsyncIterator[bytes] | None = None
    tty: bool = False
    resizes: AsyncIterator[tuple[int, int]] | None = None


async def stream(url: str, options: StreamOptions) -> None:
    """Upgrade `url` to SPDY, run the command's streams until it ends; return on exit
    code 0, raise CodeExitError for another code, RemoteCommandError for a failure."""
    try:
        answer = await dial_upgrade(url, (), [("Upgrade", "SPDY/3.1"),
                                              ("X-Stream-Protocol-Version", V4)])
    except OSError as err:
        raise RemoteCommandError(f"error dialing backend: {err}") from None
    if answer.status != 101 or answer.stream is None:
        why = answer.body.decode(errors="replace").strip() or f"{answer.status} {answer.reason}"
        raise RemoteCommandError(f"unable to upgrade connection: {why}")
    if answer.headers.get("X-Stream-Protocol-Version", V4) != V4:
        await answer.stream.close()
        raise RemoteCommandError("the server chose a stream protocol other than "
                                 f"{V4}: {answer.headers['X-Stream-Protocol-Version']}")
    async with spdy.Connection(answer.stream, client=True) as session:
        streams = await _create_streams(session, options)
        await _run(streams, options)


async def _create_streams(session: spdy.Connection, options: StreamOptions
                          ) -> dict[str, spdy.Stream]:
    """streamProtocolV3.createStreams: error first, then stdin, stdout, stderr, resize."""
    wanted = {"error": True, "stdin": options.stdin is not None, "stdout": True,
              "stderr": options.stderr is not None and not options.tty,
              "resize": options.tty and options.resizes is not None}
    streams = {}
    try:
        for name, on in wanted.items():
            if on:
                streams[name] = await session.open_stream({"streamType": name})
    except (ConnectionError, TimeoutError) as err:
        raise RemoteCommandError(f"error creating streams: {err}") from None
    return streams


async def _run(streams: dict[str, spdy.Stream], options: StreamOptions) -> None:
    """Copy stdin and resizes up and the output down; once stdout and stderr have ended,
    decode the error stream."""

    async def copy_out(name: str, write: Writer) -> None:
        while data := await streams[name].read():
            await write(data)

    async def copy_in() -> None:
        assert options.stdin is not None
        async for data in options.stdin:
            await streams["stdin"].write(data)
        await streams["stdin"].close()

    async def send_sizes() -> None:
        assert options.resizes is not None
        async for width, height in options.resizes:
            await streams["resize"].write(
                json.dumps({"Width": width, "Height": height}, separators=(",", ":"))
                .encode() + b"\n")

    upward = [asyncio.create_task(job()) for name, job in (("stdin", copy_in),
                                                          ("resize", send_sizes))
              if name in streams]
    try:
        copies = [copy_out("stdout", options.stdout)]
        if "stderr" in streams and options.stderr is not None:
            copies.append(copy_out("stderr", options.stderr))
        status, *_ = await asyncio.gather(streams["error"].read_all(), *copies)
    finally:
        for task in upward:
            task.cancel()
        for task in upward:
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await task
    decode_status(status)


def decode_status(message: bytes) -> None:
    """errorDecoderV4: nothing or Success returns; NonZeroExitCode raises CodeExitError;
    any other Failure raises RemoteCommandError with the Status's message."""
    if not message:
        return
    try:
        status = json.loads(message)
    except ValueError as err:
        raise RemoteCommandError(f"error stream protocol error: {err} in "
                                 f"{message.decode(errors='replace')!r}") from None
    if status.get("status") == "Success":
        return
    if status.get("status") != "Failure":
        raise RemoteCommandError("error stream protocol error: unknown error")
    if status.get("reason") == "NonZeroExitCode":
        causes = (status.get("details") or {}).get("causes") or []
        for cause in causes:
            if cause.get("reason") != "ExitCode":
                continue
            try:
                code = int(cause.get("message", ""))
            except ValueError:
                raise RemoteCommandError("error stream protocol error: invalid exit code "
                                         f"value {cause.get('message')!r}") from None
            raise CodeExitError(code)
        raise RemoteCommandError("error stream protocol error: no ExitCode cause given")
    raise RemoteCommandError(status.get("message", ""))
