"""A small HTTP/1.1 connection pool for the client's one-shot calls (get, create, bind...).

Every component sends most of its requests through `Client.request`: the scheduler a
Binding and an Event per pod, the kubelet a status per pod change, controllers their
writes. A request through aiohttp's client costs about 230 us of CPU on a 2-core machine;
the same request written and read here, on asyncio streams, about 70 us. Watches, which
stream for minutes, stay on aiohttp (`Client.stream`).

What it does, and no more:
- keeps idle keep-alive connections per pool and reuses them; opens more when all are busy;
- writes one request with a Content-Length body; reads one response whose body has a
  Content-Length or is chunked; honours `Connection: close`;
- TLS from the kubeconfig's SSL context;
- a deadline for the whole exchange; a connection that failed, timed out or was
  cancelled half-way is closed, never reused.

Errors tell the caller whether the server may have acted on the request:
`NotSent` (the connection could not be opened, or a reused connection turned out to be
closed before the request was written) is safe to repeat for any verb; `Interrupted`
(anything later) only for reads.
"""

from __future__ import annotations

import asyncio
import copy
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

from minikube_py.client.errors import ClientError

# A connection idle longer than this is closed rather than reused: the server may be
# about to drop it (aiohttp's server closes idle connections after 75 s).
IDLE_SECONDS = 30.0
MAX_HEADER_LINES = 100


class TransportError(ClientError):
    """The exchange failed below HTTP: connecting, writing or reading."""


class NotSent(TransportError):
    """The request never reached the server: repeating it is safe for any verb."""


class Interrupted(TransportError):
    """The request may have reached the server: repeat it only if it is a read."""


@dataclass
class Response:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = time.monotonic()

    def usable(self) -> bool:
        return (not self.reader.at_eof() and not self.writer.is_closing()
                and time.monotonic() - self.idle_since < IDLE_SECONDS)

    def close(self) -> None:
        self.writer.close()


class ConnectionPool:
    """Keep-alive HTTP/1.1 connections to one server (http:// or https://)."""

    def __init__(self, server: str, *, ssl_context: ssl.SSLContext | None = None,
                 headers: dict[str, str] | None = None, connect_timeout: float = 10.0) -> None:
        parts = urlsplit(server)
        self.host = parts.hostname or "localhost"
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base_path = parts.path.rstrip("/")
        self.ssl = ssl_context
        self.connect_timeout = connect_timeout
        host_header = parts.netloc.rsplit("@", 1)[-1]
        self._fixed = {"Host": host_header, **(headers or {})}
        self._fixed_headers = ""
        self.set_header("Host", host_header)
        self._idle: list[_Connection] = []

    def set_header(self, name: str, value: str) -> None:
        """A header every later request carries (a renewed bearer token)."""
        self._fixed[name] = value
        self._fixed_headers = "".join(f"{key}: {text}\r\n" for key, text in self._fixed.items())

    def with_headers(self, headers: dict[str, str]) -> ConnectionPool:
        """A pool over the same connections whose requests carry other fixed headers
        (another user's bearer token): HTTP sends credentials with each request, not with
        the connection, so many users can share keep-alive connections. The two pools
        share their idle connections; closing either closes them."""
        other = copy.copy(self)
        other._fixed = {**self._fixed}
        for name, value in headers.items():
            other.set_header(name, value)
        return other

    def drop_idle(self) -> None:
        """Close the idle connections: the next request opens a fresh one."""
        idle = list(self._idle)
        self._idle.clear()  # in place: pools made by with_headers share the list
        for connection in idle:
            connection.close()

    async def close(self) -> None:
        self.drop_idle()

    async def request(self, method: str, path: str, *, params: dict[str, str] | None = None,
                      body: bytes | None = None, headers: dict[str, str] | None = None,
                      timeout: float = 60.0) -> Response:
        """Send one request and read its response, within `timeout` seconds in all."""
        target = self.base_path + path
        if params:
            target += "?" + urlencode(params)
        head = [f"{method} {target} HTTP/1.1\r\n", self._fixed_headers]
        head += [f"{name}: {value}\r\n" for name, value in (headers or {}).items()]
        head.append(f"Content-Length: {len(body or b'')}\r\n\r\n")
        data = "".join(head).encode("latin-1") + (body or b"")
        async with asyncio.timeout(timeout):
            connection, reused = await self._connection()
            try:
                connection.writer.write(data)
                response = await _read_response(connection.reader)
            except BaseException as failure:
                connection.close()
                if isinstance(failure, asyncio.IncompleteReadError) and reused and (
                        not failure.partial):
                    # The server had closed this idle connection: nothing was read, and
                    # HTTP servers only close a keep-alive connection between requests.
                    raise NotSent(f"{method} {path}: the connection was closed") from failure
                if isinstance(failure, OSError | asyncio.IncompleteReadError | ValueError):
                    raise Interrupted(f"{method} {path}: {failure!r}") from failure
                raise
        if response.headers.get("connection", "").lower() == "close":
            connection.close()
        else:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        return response

    async def _connection(self) -> tuple[_Connection, bool]:
        """An idle connection (reused=True), or a new one."""
        while self._idle:
            connection = self._idle.pop()
            if connection.usable():
                return connection, True
            connection.close()
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(
                    self.host, self.port, ssl=self.ssl,
                    server_hostname=self.host if self.ssl else None)
        except (OSError, TimeoutError) as failure:
            raise NotSent(f"cannot connect to {self.host}:{self.port}: {failure!r}"
                          ) from failure
        return _Connection(reader, writer), False


async def _read_response(reader: asyncio.StreamReader) -> Response:
    """One HTTP/1.1 response: status line, headers, and a sized or chunked body."""
    status_line = await reader.readuntil(b"\r\n")
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise ValueError(f"not an HTTP/1.1 response: {status_line[:80]!r}")
    status = int(parts[1])
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADER_LINES):
        line = await reader.readuntil(b"\r\n")
        if line == b"\r\n":
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    else:
        raise ValueError("too many response headers")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                break
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(chunks)
    elif "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif status in (204, 304) or 100 <= status < 200:
        body = b""
    else:  # delimited by the end of the connection
        body = await reader.read()
        headers["connection"] = "close"
    return Response(status, headers, body)
