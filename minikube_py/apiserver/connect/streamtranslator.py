"""The stream translator: kubectl's WebSocket `v5.channel.k8s.io` exec and attach, spoken
to the kubelet as SPDY (upstream: staging/src/k8s.io/apiserver/pkg/util/proxy/
streamtranslator.go, behind TranslateStreamCloseWebsocketRequests).

Why translate: v5 can close stdin alone (CLOSE, 255, then channel 0). The kubelet and the
runtime below it speak v4, whose WebSocket cannot, but whose SPDY streams can: a stream's
FIN ends the command's input while its output still flows back. `kubectl cp` into a pod
(`tar x` reads to the end of its input) and `kubectl exec -i POD -- cat` need that.

    client (WebSocket v5)                     kubelet (SPDY/3.1, v4.channel.k8s.io)
                                              open streams: error, stdin, stdout,
                                              stderr (not with a TTY), resize (with one)
      0 + bytes                         ->    stdin data
      255, 0 (CLOSE stdin)              ->    stdin FIN
      4 + {"Width":..,"Height":..}      ->    resize data
      1 + bytes                         <-    stdout data
      2 + bytes                         <-    stderr data
      3 + Status                        <-    the error stream, once it ends
      the WebSocket closes              <-    stdout, stderr and error have all ended

A client that goes away ends the SPDY session: the kubelet and the runtime see their
streams end, as when kubectl is interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib

import aiohttp
import orjson
from aiohttp import web

from minikube_py.streaming import channels, spdy
from minikube_py.streaming.bytestreams import UpgradeAnswer

REMOTECOMMAND_SPDY = (("Upgrade", "SPDY/3.1"),
                      ("X-Stream-Protocol-Version", channels.V4))
"""The upgrade the translator asks of the kubelet."""


def wants_stream_close(request: web.BaseRequest) -> bool:
    """A WebSocket exec or attach that offers v5 (upstream's
    IsWebSocketRequestWithStreamCloseProtocol)."""
    return (channels.is_websocket(request)
            and channels.V5 in channels.offered_protocols(request))


async def translate(request: web.Request, kubelet: UpgradeAnswer, *, stdin: bool,
                    stdout: bool, stderr: bool, tty: bool) -> web.WebSocketResponse:
    """Accept the client's v5 WebSocket and carry it over the kubelet's upgraded SPDY
    connection until the command ends or the client goes away."""
    assert kubelet.stream is not None
    client = web.WebSocketResponse(protocols=(channels.V5,), max_msg_size=0)
    await client.prepare(request)
    async with spdy.Connection(kubelet.stream, client=True) as session:
        try:
            streams = await _open_streams(session, stdin=stdin, stdout=stdout,
                                          stderr=stderr and not tty, tty=tty)
        except (ConnectionError, TimeoutError) as err:
            await _finish(client, _failure(f"error creating streams: {err}"))
            return client
        output = asyncio.create_task(_output(client, streams))
        upward = asyncio.create_task(_input(client, streams))
        try:
            await asyncio.wait((output, upward), return_when=asyncio.FIRST_COMPLETED)
            if output.done():
                await _finish(client, output.result())
        finally:
            for task in (output, upward):
                task.cancel()
            for task in (output, upward):
                with contextlib.suppress(asyncio.CancelledError, ConnectionError,
                                         aiohttp.ClientError, RuntimeError):
                    await task
    await client.close()
    return client


async def _open_streams(session: spdy.Connection, *, stdin: bool, stdout: bool,
                        stderr: bool, tty: bool) -> dict[str, spdy.Stream]:
    """The v4 streams, in upstream's order: the error stream first."""
    wanted = ["error", *(name for name, on in (("stdin", stdin), ("stdout", stdout),
                                               ("stderr", stderr), ("resize", tty)) if on)]
    streams = {}
    for name in wanted:
        streams[name] = await session.open_stream({"streamType": name})
    return streams


async def _input(client: web.WebSocketResponse, streams: dict[str, spdy.Stream]) -> None:
    """The client's messages to the streams they name, until the WebSocket ends."""
    async for message in client:
        if message.type == aiohttp.WSMsgType.TEXT:
            data = message.data.encode()
        elif message.type == aiohttp.WSMsgType.BINARY:
            data = message.data
        else:
            return
        if not data:
            continue
        channel, payload = data[0], data[1:]
        if channel == channels.STDIN and "stdin" in streams:
            await streams["stdin"].write(payload)
        elif channel == channels.RESIZE and "resize" in streams:
            await streams["resize"].write(payload)
        elif channel == channels.CLOSE and payload[:1] == bytes([channels.STDIN]) and (
                "stdin" in streams):
            await streams["stdin"].close()


async def _output(client: web.WebSocketResponse, streams: dict[str, spdy.Stream]) -> bytes:
    """stdout and stderr to the client as they come; the error stream's Status once all
    three ended."""

    async def copy(name: str, channel: int) -> None:
        while data := await streams[name].read():
            await client.send_bytes(bytes([channel]) + data)

    copies = [copy(name, channel) for name, channel in
              (("stdout", channels.STDOUT), ("stderr", channels.STDERR)) if name in streams]
    status, *_ = await asyncio.gather(streams["error"].read_all(), *copies)
    return status


async def _finish(client: web.WebSocketResponse, status: bytes) -> None:
    """The Status on the error channel (nothing for a v4 success without one)."""
    if status and not client.closed:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await client.send_bytes(bytes([channels.ERROR]) + status)


def _failure(message: str) -> bytes:
    return orjson.dumps({"metadata": {}, "status": "Failure", "message": message,
                         "reason": "InternalError", "code": 500})
