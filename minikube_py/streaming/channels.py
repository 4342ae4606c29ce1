"""The channel protocols of `kubectl exec` and `kubectl attach` over WebSocket, and the
relay that carries them between two WebSocket connections.

Each binary message is one byte of channel and then the data (upstream's
k8s.io/apimachinery wsstream and client-go's remotecommand):

    0 stdin   1 stdout   2 stderr
    3 error   one JSON Status when the command ended: Success, or Failure with reason
              NonZeroExitCode and the exit code as the cause "ExitCode"
    4 resize  {"Width": W, "Height": H} for a TTY
    255       v5.channel.k8s.io only: CLOSE, then the channel that is closed (stdin at
              the client's end of input)

`v4.channel.k8s.io` is what containerd's streaming server and the official Python client
speak; kubectl 1.37 asks for `v5.channel.k8s.io` first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import aiohttp
from aiohttp import web

V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"
PROTOCOLS = (V5, V4)
"""The channel protocols we serve, the one we prefer first."""
STDIN, STDOUT, STDERR, ERROR, RESIZE = range(5)
CLOSE = 255


def offered_protocols(request: web.Request) -> list[str]:
    """The subprotocols a WebSocket request offers, in the client's order."""
    header = request.headers.get("Sec-WebSocket-Protocol", "")
    return [p.strip() for p in header.split(",") if p.strip()]


def is_websocket(request: web.Request) -> bool:
    return (request.headers.get("Upgrade", "").lower() == "websocket"
            and "upgrade" in request.headers.get("Connection", "").lower())


WebSocket = web.WebSocketResponse | aiohttp.ClientWebSocketResponse


async def relay(client: web.WebSocketResponse, upstream: aiohttp.ClientWebSocketResponse,
                keep: Callable[[bytes], bool] = lambda data: True) -> None:
    """Carry messages both ways until either side closes, then close the other.

    `keep` decides which of the client's messages go on (the rest are dropped)."""

    async def pump(source: WebSocket, target: WebSocket, check: Callable[[bytes], bool]
                   ) -> None:
        async for message in source:
            if message.type == aiohttp.WSMsgType.TEXT:
                # the Python client writes str stdin as a text message; upstream reads its
                # bytes like a binary one's
                data = message.data.encode()
            elif message.type == aiohttp.WSMsgType.BINARY:
                data = message.data
            else:
                return  # closed, or an error
            if check(data):
                await target.send_bytes(data)

    down = asyncio.create_task(pump(upstream, client, lambda data: True))
    up = asyncio.create_task(pump(client, upstream, keep))
    try:
        await asyncio.wait((down, up), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (down, up):
            task.cancel()
        for task in (down, up):
            with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError,
                                     ConnectionResetError):
                await task
        # Whichever side is still open learns that the stream ended.
        for side in (client, upstream):
            with contextlib.suppress(aiohttp.ClientError, ConnectionResetError):
                await side.close()
