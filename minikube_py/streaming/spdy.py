"""SPDY/3.1, the multiplexing under kubectl's port-forward and under exec toward the
kubelet (upstream: moby/spdystream, used by apimachinery's httpstream/spdy).

After an HTTP upgrade (`Upgrade: SPDY/3.1`, see bytestreams.py) both ends exchange frames.
Every frame starts with 8 bytes:

    control frame   1 | version (15 bits, 3) | type (16)   flags (8) | length (24)   data
    data frame      0 | stream id (31 bits)                flags (8) | length (24)   data

    SYN_STREAM      open a stream: its id (odd from the client, even from the server),
                    an associated id, a priority, and a header block
    SYN_REPLY       accept a stream the other end opened, with a header block
    RST_STREAM      abort a stream, with a status (5 CANCEL, 1 PROTOCOL_ERROR...)
    SETTINGS        settings of the session (read and ignored here, as spdystream does)
    PING            a ping; the end that did not send it echoes it back
    GOAWAY          no new streams: the session is ending
    HEADERS         more headers on an open stream
    WINDOW_UPDATE   flow control: spdystream neither sends nor honours it, so neither do we
    data            bytes on a stream; flag FIN (1) means "no more from my side"

A header block is a count, then each name and value with a 4-byte length before it, all
compressed with zlib and the SPDY/3 dictionary below. One compression context carries over
from frame to frame in each direction, so frames must go out in the order they were
encoded: `Connection` encodes and writes under one lock.

Kubernetes names the role of a stream in its headers: `streamType` is error, stdin,
stdout, stderr or resize for exec; error or data, with `port` and `requestID`, for
port-forward.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from minikube_py.streaming.bytestreams import ByteStream

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS = 1, 2, 3, 4
PING, GOAWAY, HEADERS, WINDOW_UPDATE = 6, 7, 8, 9
FLAG_FIN, FLAG_UNIDIRECTIONAL = 0x01, 0x02
# RST_STREAM statuses
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, CANCEL = 1, 2, 3, 5
MAX_DATA = 0xFFFFFF  # a frame's length field holds 24 bits
WRITE_CHUNK = 32 * 1024
# How long open_stream waits for the other end's SYN_REPLY (client-go waits 30 s).
REPLY_TIMEOUT = 30.0
# Frames a slow reader of one stream may have waiting before the session stops reading
# (TCP then pushes back on the sender, as spdystream's bounded frame queues do).
STREAM_BACKLOG = 64

Headers = dict[str, str]
"""Lower-case names; a value that SPDY carries as several is kept NUL-separated."""


# The SPDY/3 header compression dictionary (draft 3, section 2.6.10.1): common header
# names and values, each after its 4-byte length, then a run of status lines, dates and
# media types. Both ends must use exactly these 1,423 bytes.
_DICTIONARY_NAMES = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
    "accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization",
    "cache-control", "connection", "content-base", "content-encoding", "content-language",
    "content-length", "content-location", "content-md5", "content-range", "content-type",
    "date", "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since",
    "if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
    "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range",
    "referer", "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade",
    "user-agent", "vary", "via", "warning", "www-authenticate", "method", "get", "status",
    "200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin")
_DICTIONARY_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417"
    "502504505203 Non-Authoritative Information204 No Content301 Moved Permanently"
    "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error"
    "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct "
    "Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,"
    "image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8"
    "charset=iso-8859-1,utf-,*,enq=0.")
DICTIONARY = (b"".join(struct.pack(">I", len(name)) + name.encode()
                      for name in _DICTIONARY_NAMES) + _DICTIONARY_TAIL.encode())


class ProtocolError(Exception):
    """The other end sent something that is not SPDY/3."""


# -- frames ------------------------------------------------------------------------------

@dataclass
class Data:
    stream_id: int
    data: bytes
    fin: bool = False


@dataclass
class SynStream:
    stream_id: int
    headers: Headers
    associated_id: int = 0
    priority: int = 0
    fin: bool = False
    unidirectional: bool = False


@dataclass
class SynReply:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    fin: bool = False


@dataclass
class RstStream:
    stream_id: int
    status: int


@dataclass
class Ping:
    ping_id: int


@dataclass
class GoAway:
    last_good_id: int
    status: int = 0


@dataclass
class HeadersFrame:
    stream_id: int
    headers: Headers
    fin: bool = False


@dataclass
class Ignored:
    """SETTINGS, WINDOW_UPDATE or a type this version does not know: read and dropped."""

    kind: int


Frame = Data | SynStream | SynReply | RstStream | Ping | GoAway | HeadersFrame | Ignored


class FrameCodec:
    """Frames to bytes and bytes to frames for one session, with its two zlib contexts."""

    def __init__(self) -> None:
        self._compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zdict=DICTIONARY)
        self._decompressor = zlib.decompressobj(zdict=DICTIONARY)
        self._buffer = bytearray()

    # -- writing --

    def encode(self, frame: Frame) -> bytes:
        match frame:
            case Data(stream_id, data, fin):
                return (struct.pack(">I", stream_id & 0x7FFFFFFF)
                        + _flags_length(FLAG_FIN if fin else 0, len(data)) + data)
            case SynStream():
                flags = ((FLAG_FIN if frame.fin else 0)
                         | (FLAG_UNIDIRECTIONAL if frame.unidirectional else 0))
                body = struct.pack(">IIBB", frame.stream_id, frame.associated_id,
                                   (frame.priority & 7) << 5, 0)
                return _control(SYN_STREAM, flags, body + self._header_block(frame.headers))
            case SynReply(stream_id, headers, fin):
                return _control(SYN_REPLY, FLAG_FIN if fin else 0,
                                struct.pack(">I", stream_id) + self._header_block(headers))
            case HeadersFrame(stream_id, headers, fin):
                return _control(HEADERS, FLAG_FIN if fin else 0,
                                struct.pack(">I", stream_id) + self._header_block(headers))
            case RstStream(stream_id, status):
                return _control(RST_STREAM, 0, struct.pack(">II", stream_id, status))
            case Ping(ping_id):
                return _control(PING, 0, struct.pack(">I", ping_id))
            case GoAway(last_good_id, status):
                return _control(GOAWAY, 0, struct.pack(">II", last_good_id, status))
        raise ValueError(f"cannot write {frame!r}")

    def _header_block(self, headers: Headers) -> bytes:
        block = bytearray(struct.pack(">I", len(headers)))
        for name, value in headers.items():
            for part in (name.lower().encode(), value.encode()):
                block += struct.pack(">I", len(part)) + part
        return (self._compressor.compress(bytes(block))
                + self._compressor.flush(zlib.Z_SYNC_FLUSH))

    # -- reading --

    def feed(self, data: bytes) -> list[Frame]:
        """The frames completed by `data` (the rest waits for more bytes)."""
        self._buffer += data
        frames = []
        while len(self._buffer) >= 8:
            length = int.from_bytes(self._buffer[5:8], "big")
            if len(self._buffer) < 8 + length:
                break
            head, body = bytes(self._buffer[:8]), bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            frames.append(self._decode(head, body))
        return frames

    def _decode(self, head: bytes, body: bytes) -> Frame:
        first, flags = struct.unpack(">I", head[:4])[0], head[4]
        if not first & 0x80000000:
            return Data(first, body, bool(flags & FLAG_FIN))
        version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise ProtocolError(f"unsupported SPDY version {version}")
        fin = bool(flags & FLAG_FIN)
        try:
            if kind == SYN_STREAM:
                stream_id, associated, priority = struct.unpack(">IIB", body[:9])
                return SynStream(stream_id & 0x7FFFFFFF, self._headers(body[10:]),
                                 associated & 0x7FFFFFFF, priority >> 5, fin,
                                 bool(flags & FLAG_UNIDIRECTIONAL))
            if kind in (SYN_REPLY, HEADERS):
                stream_id = struct.unpack(">I", body[:4])[0] & 0x7FFFFFFF
                headers = self._headers(body[4:])
                return (SynReply(stream_id, headers, fin) if kind == SYN_REPLY
                        else HeadersFrame(stream_id, headers, fin))
            if kind == RST_STREAM:
                stream_id, status = struct.unpack(">II", body[:8])
                return RstStream(stream_id & 0x7FFFFFFF, status)
            if kind == PING:
                return Ping(struct.unpack(">I", body[:4])[0])
            if kind == GOAWAY:
                last_good, status = struct.unpack(">II", body[:8])
                return GoAway(last_good & 0x7FFFFFFF, status)
        except (struct.error, zlib.error) as err:
            raise ProtocolError(f"bad control frame of type {kind}: {err}") from None
        return Ignored(kind)

    def _headers(self, block: bytes) -> Headers:
        raw = self._decompressor.decompress(block)
        (count,), offset = struct.unpack(">I", raw[:4]), 4
        headers: Headers = {}
        for _ in range(count):
            pair = []
            for _ in range(2):
                (size,) = struct.unpack(">I", raw[offset:offset + 4])
                pair.append(raw[offset + 4:offset + 4 + size].decode())
                offset += 4 + size
            headers[pair[0]] = pair[1]
        return headers


def _flags_length(flags: int, length: int) -> bytes:
    return struct.pack(">I", (flags << 24) | length)


def _control(kind: int, flags: int, body: bytes) -> bytes:
    return struct.pack(">HH", 0x8000 | VERSION, kind) + _flags_length(flags, len(body)) + body


# -- a session ---------------------------------------------------------------------------

class Stream:
    """One stream of a session: read what the other end sends until its FIN, write until
    `close()` (our FIN), or `reset()` both ways."""

    def __init__(self, connection: Connection, stream_id: int, headers: Headers) -> None:
        self.connection = connection
        self.id = stream_id
        self.headers = headers
        self.replied: asyncio.Future[Headers] = asyncio.get_running_loop().create_future()
        # a stream reset before anyone waited for its reply is not an error to report
        self.replied.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._inbound: asyncio.Queue[bytes | None] = asyncio.Queue(STREAM_BACKLOG)
        self._remote_done = False
        self.local_done = False

    async def read(self) -> bytes:
        """The next bytes; b"" after the other end's FIN, a reset or the session's end."""
        if self._remote_done and self._inbound.empty():
            return b""
        data = await self._inbound.get()
        if data is None:
            self._remote_done = True
            return b""
        return data

    async def read_all(self) -> bytes:
        parts = []
        while data := await self.read():
            parts.append(data)
        return b"".join(parts)

    async def write(self, data: bytes) -> None:
        for start in range(0, len(data), WRITE_CHUNK):
            await self.connection.send(Data(self.id, data[start:start + WRITE_CHUNK]))

    async def close(self) -> None:
        """Half-close: the other end reads the end of this stream (upstream's Close)."""
        if not self.local_done:
            self.local_done = True
            await self.connection.send(Data(self.id, b"", fin=True))

    async def reset(self) -> None:
        """Abort the stream both ways (upstream's Reset)."""
        self.local_done = True
        self._finish_inbound()
        await self.connection.send(RstStream(self.id, CANCEL))
        self.connection.streams.pop(self.id, None)

    async def reply(self, headers: Headers | None = None) -> None:
        """Accept a stream the other end opened."""
        await self.connection.send(SynReply(self.id, headers or {}))

    async def _deliver(self, data: bytes) -> None:
        if data and not self._remote_done:
            await self._inbound.put(data)

    def _finish_inbound(self) -> None:
        """No more bytes will come: wake the reader (never blocks)."""
        if not self.replied.done():
            self.replied.set_exception(ConnectionResetError(f"stream {self.id} was reset"))
        with contextlib.suppress(asyncio.QueueFull):
            self._inbound.put_nowait(None)
        if self._inbound.full():
            self._remote_done = True


class Connection:
    """A SPDY session over a byte stream. The client numbers its streams 1, 3, 5...; the
    server 2, 4, 6...; the same goes for pings.

        async with Connection(stream, client=True) as session:
            error = await session.open_stream({"streamType": "error"})
            ...

    `run()` (started by `async with`) reads frames until the connection ends; streams the
    other end opens wait in `incoming` for `accept()`.
    """

    def __init__(self, transport: ByteStream, *, client: bool) -> None:
        self.transport = transport
        self.client = client
        self.codec = FrameCodec()
        self.streams: dict[int, Stream] = {}
        self.incoming: asyncio.Queue[Stream | None] = asyncio.Queue()
        self._next_id = 1 if client else 2
        self._next_ping = 1 if client else 2
        self._pings: dict[int, asyncio.Future[None]] = {}
        self._write_lock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()
        self.going_away = False

    async def __aenter__(self) -> Connection:
        self._reader = asyncio.create_task(self.run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def send(self, frame: Frame) -> None:
        """Encode and write one frame; the lock keeps the wire in encoding order."""
        async with self._write_lock:
            if self.closed.is_set():
                raise ConnectionResetError("the SPDY session has ended")
            await self.transport.write(self.codec.encode(frame))

    async def open_stream(self, headers: Headers, fin: bool = False) -> Stream:
        """SYN_STREAM, then wait for the other end's SYN_REPLY."""
        async with self._write_lock:
            if self.closed.is_set() or self.going_away:
                raise ConnectionResetError("the SPDY session has ended")
            stream = Stream(self, self._next_id, headers)
            self._next_id += 2
            self.streams[stream.id] = stream
            stream.local_done = fin
            await self.transport.write(self.codec.encode(SynStream(stream.id, headers,
                                                                   fin=fin)))
        async with asyncio.timeout(REPLY_TIMEOUT):
            await asyncio.shield(stream.replied)
        return stream

    async def accept(self) -> Stream | None:
        """The next stream the other end opened (reply to it); None once the session
        ended."""
        return await self.incoming.get()

    async def ping(self) -> None:
        """Send a PING and wait for its echo."""
        ping_id = self._next_ping
        self._next_ping += 2
        echoed = self._pings[ping_id] = asyncio.get_running_loop().create_future()
        await self.send(Ping(ping_id))
        try:
            await echoed
        finally:
            self._pings.pop(ping_id, None)

    async def run(self) -> None:
        """Read frames and hand each to its stream until the connection ends."""
        try:
            while data := await self.transport.read():
                for frame in self.codec.feed(data):
                    if not await self._handle(frame):
                        return
        except ProtocolError:
            with contextlib.suppress(ConnectionError, OSError):
                await self.send(GoAway(0, 1))
        finally:
            self._end()

    async def _handle(self, frame: Frame) -> bool:
        """One frame; False when the other end went away."""
        match frame:
            case Data(stream_id, data, fin):
                stream = self.streams.get(stream_id)
                if stream is not None:
                    await stream._deliver(data)
                    if fin:
                        stream._finish_inbound()
            case SynStream(stream_id, headers, fin=fin):
                if stream_id % 2 == (1 if self.client else 0) or stream_id in self.streams:
                    await self.send(RstStream(stream_id, PROTOCOL_ERROR))
                    return True
                stream = Stream(self, stream_id, headers)
                stream.replied.set_result({})
                self.streams[stream_id] = stream
                if fin:
                    stream._finish_inbound()
                await self.incoming.put(stream)
            case SynReply(stream_id, headers, fin):
                stream = self.streams.get(stream_id)
                if stream is not None and not stream.replied.done():
                    stream.replied.set_result(headers)
                    if fin:
                        stream._finish_inbound()
            case HeadersFrame(stream_id, fin=True):
                stream = self.streams.get(stream_id)
                if stream is not None:
                    stream._finish_inbound()
            case RstStream(stream_id):
                stream = self.streams.pop(stream_id, None)
                if stream is not None:
                    stream.local_done = True
                    stream._finish_inbound()
            case Ping(ping_id):
                if ping_id % 2 == self._next_ping % 2:
                    echoed = self._pings.get(ping_id)
                    if echoed is not None and not echoed.done():
                        echoed.set_result(None)
                else:
                    await self.send(frame)
            case GoAway():
                self.going_away = True
                return False
        return True

    def _end(self) -> None:
        self.closed.set()
        for stream in list(self.streams.values()):
            stream._finish_inbound()
        for echoed in self._pings.values():
            if not echoed.done():
                echoed.set_exception(ConnectionResetError("the SPDY session has ended"))
        with contextlib.suppress(asyncio.QueueFull):
            self.incoming.put_nowait(None)

    async def close(self) -> None:
        """GOAWAY, then close the connection and stop reading."""
        if not self.closed.is_set():
            last = max((i for i in self.streams if i % 2 != self._next_id % 2), default=0)
            with contextlib.suppress(ConnectionError, OSError, RuntimeError):
                await self.send(GoAway(last))
        self.closed.set()
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            await self.transport.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._end()


def stream_type(headers: Mapping[str, str]) -> str:
    """The Kubernetes role of a stream (`streamType`)."""
    return headers.get("streamtype", "")
