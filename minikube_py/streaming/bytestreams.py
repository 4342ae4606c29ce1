"""Byte streams and the HTTP upgrade: what SPDY and the raw stream proxies run over.

A `ByteStream` is anything that reads and writes bytes until it is closed:

    TcpStream        an asyncio connection (the kubelet's or containerd's upgraded socket)
    HijackedStream   an aiohttp request whose connection we took over after answering 101
    WebSocketStream  a WebSocket carrying bytes in binary messages, as kubectl tunnels SPDY
                     (`SPDY/3.1+portforward.k8s.io`, client-go's TunnelingConnection)

The HTTP upgrade by hand (upstream's apimachinery UpgradeAwareHandler does the same):

    client                               backend (kubelet, containerd's streaming server)
      GET /portForward/ns/pod HTTP/1.1 ->
      Connection: Upgrade
      Upgrade: SPDY/3.1
      X-Stream-Protocol-Version: portforward.k8s.io
                                       <- HTTP/1.1 101 Switching Protocols
                                          Connection: Upgrade, Upgrade: SPDY/3.1,
                                          X-Stream-Protocol-Version: portforward.k8s.io
      ... from here on, the socket carries SPDY frames both ways ...

`dial_upgrade` is the client half, `accept_upgrade` the server half, and `splice` joins two
byte streams until either ends: that is all a proxy of an upgraded connection does, and
`proxy_upgrade` does it once the backend has answered (the API server's pods/exec and
pods/portforward, the kubelet's /exec and /portForward, proxying SPDY as it is).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlencode, urlsplit

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

READ_SIZE = 64 * 1024
# What an answer's head may take, and how long a backend may take to give it.
MAX_HEAD = 64 * 1024
HEAD_TIMEOUT = 30.0


class ByteStream(Protocol):
    async def read(self) -> bytes:
        """The next bytes; b"" once the other end has closed."""
        ...

    async def write(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


async def _read_some(reader: asyncio.StreamReader) -> bytes:
    """Up to READ_SIZE bytes; b"" once the other end has closed, or the connection broke."""
    try:
        return await reader.read(READ_SIZE)
    except (ConnectionError, OSError):
        return b""


class TcpStream:
    """An asyncio connection as a ByteStream."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def read(self) -> bytes:
        return await _read_some(self.reader)

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()


class _Feed:
    """aiohttp's parser slot for an upgraded connection: every byte the client sends
    goes to a StreamReader, untouched."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.reader.feed_data(data)
        return False, b""

    def feed_eof(self) -> None:
        self.reader.feed_eof()


class HijackedStream:
    """An aiohttp request's connection after the 101 answer: ours to read and write."""

    def __init__(self, request: web.BaseRequest, response: web.StreamResponse) -> None:
        self.response = response
        self.reader = asyncio.StreamReader(limit=4 * READ_SIZE)
        transport = request.transport
        if transport is None:
            raise ConnectionResetError("the client went away")
        self.transport = transport
        # a full buffer pauses the socket, as any asyncio stream does
        self.reader.set_transport(transport)
        request.protocol.set_parser(_Feed(self.reader))  # type: ignore[arg-type]

    async def read(self) -> bytes:
        return await _read_some(self.reader)

    async def write(self, data: bytes) -> None:
        # after a 101 the response writer adds nothing: no chunks, no length
        await self.response.write(data)

    async def close(self) -> None:
        self.transport.close()


class WebSocketStream:
    """A WebSocket as a byte stream: each write one binary message (client-go's
    TunnelingConnection reads and writes the tunnelled SPDY this way)."""

    def __init__(self, ws: web.WebSocketResponse | aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws

    async def read(self) -> bytes:
        while True:
            message = await self.ws.receive()
            if message.type == aiohttp.WSMsgType.BINARY:
                if message.data:
                    return bytes(message.data)
                continue
            return b""  # closed, closing, an error, or a text message: the end

    async def write(self, data: bytes) -> None:
        await self.ws.send_bytes(data)

    async def close(self) -> None:
        with contextlib.suppress(aiohttp.ClientError, ConnectionError):
            await self.ws.close()


@dataclass
class UpgradeAnswer:
    """The backend's answer to an upgrade request. With status 101, `stream` is the
    upgraded connection; otherwise `body` says why not and the connection is closed."""

    status: int
    reason: str
    headers: CIMultiDict[str]
    stream: TcpStream | None = None
    body: bytes = b""
    content_type: str = field(default="text/plain")


async def dial_upgrade(url: str, query: Iterable[tuple[str, str]],
                       headers: Mapping[str, str] | Iterable[tuple[str, str]],
                       connect_timeout: float = 10.0,
                       ssl_context: ssl.SSLContext | None = None) -> UpgradeAnswer:
    """Open a connection to `url`, ask to upgrade it with `headers` (Upgrade,
    X-Stream-Protocol-Version...), and read the answer's head.

    OSError (or a TimeoutError) when the backend cannot be reached or does not answer."""
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    host, port = parts.hostname or "localhost", parts.port or (443 if secure else 80)
    target = parts.path + ("?" + urlencode(list(query)) if query else "")
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    lines = [f"GET {target} HTTP/1.1", f"Host: {parts.netloc}", "Connection: Upgrade",
             *(f"{name}: {value}" for name, value in pairs), "", ""]
    async with asyncio.timeout(connect_timeout):
        reader, writer = await asyncio.open_connection(
            host, port, limit=MAX_HEAD,
            ssl=(ssl_context or ssl.create_default_context()) if secure else None)
    stream = TcpStream(reader, writer)
    try:
        writer.write("\r\n".join(lines).encode("latin-1"))
        await writer.drain()
        async with asyncio.timeout(HEAD_TIMEOUT):
            head = await reader.readuntil(b"\r\n\r\n")
        status, reason, answer_headers = _parse_head(head)
        if status == 101:
            return UpgradeAnswer(status, reason, answer_headers, stream=stream)
        async with asyncio.timeout(HEAD_TIMEOUT):
            body = await _read_body(reader, answer_headers)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as err:
        await stream.close()
        raise OSError(f"bad answer to the upgrade request: {err}") from None
    except BaseException:
        await stream.close()
        raise
    await stream.close()
    content_type = answer_headers.get("Content-Type", "text/plain").split(";")[0].strip()
    return UpgradeAnswer(status, reason, answer_headers, body=body,
                         content_type=content_type or "text/plain")


def _parse_head(head: bytes) -> tuple[int, str, CIMultiDict[str]]:
    status_line, *header_lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
    version, _, rest = status_line.partition(" ")
    if not version.startswith("HTTP/"):
        raise ValueError(f"not an HTTP answer: {status_line!r}")
    code, _, reason = rest.partition(" ")
    headers: CIMultiDict[str] = CIMultiDict()
    for line in header_lines:
        name, colon, value = line.partition(":")
        if colon:
            headers.add(name.strip(), value.strip())
    return int(code), reason, headers


async def _read_body(reader: asyncio.StreamReader, headers: CIMultiDict[str]) -> bytes:
    """The body of a refusal: by its length, its chunks, or up to the close."""
    if "Content-Length" in headers:
        return await reader.readexactly(int(headers["Content-Length"]))
    if headers.get("Transfer-Encoding", "").lower() == "chunked":
        body = bytearray()
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        return bytes(body)
    return await reader.read(MAX_HEAD)


async def accept_upgrade(request: web.BaseRequest, headers: Mapping[str, str]
                         ) -> HijackedStream:
    """Answer the client 101 with `headers` and take its connection over."""
    response = web.StreamResponse(status=101, headers={
        "Connection": "Upgrade", **headers})
    response.force_close()
    await response.prepare(request)
    return HijackedStream(request, response)


async def proxy_upgrade(request: web.BaseRequest, answer: UpgradeAnswer
                        ) -> web.StreamResponse:
    """The backend's answer passed on: its refusal as it gave it, or its 101 to the client
    and then the two connections spliced until either ends (the UpgradeAwareHandler).
    The backend's connection is closed either way."""
    if answer.stream is None:
        return refusal(answer)
    try:
        client = await accept_upgrade(request, upgrade_headers(answer.headers))
        await splice(client, answer.stream)
        return client.response
    finally:
        await answer.stream.close()


def refusal(answer: UpgradeAnswer) -> web.Response:
    """The backend's refusal of an upgrade, passed on as it gave it."""
    return web.Response(status=answer.status, body=answer.body,
                        content_type=answer.content_type)


def is_spdy(request: web.BaseRequest) -> bool:
    """A request to upgrade to SPDY/3.1 (kubectl's port-forward fallback, older execs)."""
    return (request.headers.get("Upgrade", "").lower().startswith("spdy/")
            and "upgrade" in request.headers.get("Connection", "").lower())


def offer_headers(request: web.BaseRequest) -> list[tuple[str, str]]:
    """What a proxy passes on of the client's upgrade request: the protocol asked for and
    each X-Stream-Protocol-Version offered (one header line each)."""
    return [("Upgrade", request.headers.get("Upgrade", "")),
            *(("X-Stream-Protocol-Version", version.strip())
              for value in request.headers.getall("X-Stream-Protocol-Version", [])
              for version in value.split(",") if version.strip())]


def upgrade_headers(headers: CIMultiDict[str]) -> dict[str, str]:
    """What a proxy passes on from the backend's 101: the protocol and its version."""
    passed = {"Upgrade": headers.get("Upgrade", "")}
    versions = headers.getall("X-Stream-Protocol-Version", [])
    if versions:
        passed["X-Stream-Protocol-Version"] = versions[0]
    return {name: value for name, value in passed.items() if value}


async def splice(one: ByteStream, other: ByteStream) -> None:
    """Carry bytes both ways until either end closes, then close both.

    An upgraded connection has no half-close worth keeping: SPDY and WebSocket end a
    session by closing the connection."""

    async def pump(source: ByteStream, target: ByteStream) -> None:
        while data := await source.read():
            await target.write(data)

    tasks = [asyncio.create_task(pump(one, other)), asyncio.create_task(pump(other, one))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError,
                                     aiohttp.ClientError, RuntimeError):
                await task
        for side in (one, other):
            with contextlib.suppress(ConnectionError, OSError, RuntimeError):
                await side.close()
