"""The client end of a WebSocket (RFC 6455) on a blocking socket, for the streams of
`mkctl exec`, `attach` and `port-forward` (client-go's wsstream and portforward/websocket).

    GET /api/v1/namespaces/ns/pods/web/exec?command=ls&stdout=true HTTP/1.1
    Connection: Upgrade  Upgrade: websocket  Sec-WebSocket-Protocol: v5.channel.k8s.io, ...
      <- 101 Switching Protocols, the protocol the server chose
      <- an answer other than 101: "unable to upgrade connection: " and its Status' message
    then binary messages both ways: a frame is a header (FIN and opcode, length, and for
    the client's frames a mask) and the payload.

The API server answers in binary messages whose first byte is the channel (channels.py of
the streaming package); a ping is answered with a pong, a close ends the stream.
Reading and writing stay on one thread: a command waits on the socket with `select`,
and `pending()` says whether a whole message is already buffered (or held by TLS), which
`select` cannot see.
"""

from __future__ import annotations

import base64
import os
import socket
import struct
from typing import NamedTuple

from minikube_py.mkctl.errors import MkctlError
from minikube_py.mkctl.transport import Response, RESTClient, status_error

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_MAX_HEAD = 65536


class Frame(NamedTuple):
    fin: bool
    opcode: int
    payload: bytes


def encode_frame(opcode: int, payload: bytes, mask: bytes | None = None) -> bytes:
    """One final frame; a client masks every frame it sends with four random bytes."""
    mask = os.urandom(4) if mask is None else mask
    length = len(payload)
    head = bytes([0x80 | opcode])
    if length < 126:
        head += bytes([0x80 | length])
    elif length < 1 << 16:
        head += bytes([0x80 | 126]) + struct.pack("!H", length)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", length)
    return head + mask + _masked(payload, mask)


def decode_frame(buffer: bytes | bytearray) -> tuple[Frame, int] | None:
    """The first frame of `buffer` and the bytes it takes, or None while it is incomplete."""
    if len(buffer) < 2:
        return None
    fin, opcode = bool(buffer[0] & 0x80), buffer[0] & 0x0F
    masked, length = bool(buffer[1] & 0x80), buffer[1] & 0x7F
    offset = 2
    if length == 126:
        if len(buffer) < 4:
            return None
        length, offset = struct.unpack("!H", buffer[2:4])[0], 4
    elif length == 127:
        if len(buffer) < 10:
            return None
        length, offset = struct.unpack("!Q", buffer[2:10])[0], 10
    mask = b""
    if masked:
        mask, offset = bytes(buffer[offset:offset + 4]), offset + 4
    if len(buffer) < offset + length:
        return None
    payload = bytes(buffer[offset:offset + length])
    return Frame(fin, opcode, _masked(payload, mask) if masked else payload), offset + length


def _masked(payload: bytes, mask: bytes) -> bytes:
    """XOR with the mask repeated (applying it twice gives the payload back)."""
    if not payload:
        return payload
    key = int.from_bytes((mask * (len(payload) // 4 + 1))[:len(payload)], "big")
    return (int.from_bytes(payload, "big") ^ key).to_bytes(len(payload), "big")


class WebSocket:
    """One upgraded connection: `send` a binary message, `receive` the next one."""

    def __init__(self, sock: socket.socket, protocol: str, buffered: bytes) -> None:
        self.sock = sock
        self.protocol = protocol  # the subprotocol the server chose
        self._buffer = bytearray(buffered)
        self._fragments: list[bytes] = []
        self.closed = False

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, payload: bytes, opcode: int = BINARY) -> None:
        self.sock.sendall(encode_frame(opcode, payload))

    def pending(self) -> bool:
        """Whether bytes are waiting that `select` on the socket would not report."""
        held = getattr(self.sock, "pending", None)
        return bool(self._buffer) or bool(held and held())

    def receive(self) -> bytes | None:
        """The next data message (waiting for it), or None once the server closed."""
        while not self.closed:
            decoded = decode_frame(self._buffer)
            if decoded is None:
                try:
                    chunk = self.sock.recv(65536)
                except (ConnectionResetError, BrokenPipeError):
                    chunk = b""
                if not chunk:
                    self.closed = True
                    return None
                self._buffer += chunk
                continue
            frame, used = decoded
            del self._buffer[:used]
            if frame.opcode == PING:
                self.send(frame.payload, PONG)
            elif frame.opcode == CLOSE:
                self.closed = True
                try:
                    self.send(frame.payload[:2], CLOSE)
                except OSError:
                    pass
                return None
            elif frame.opcode in (TEXT, BINARY, CONTINUATION):
                self._fragments.append(frame.payload)
                if frame.fin:
                    message = b"".join(self._fragments)
                    self._fragments = []
                    return message
        return None

    def close(self) -> None:
        if not self.closed:
            try:
                self.send(struct.pack("!H", 1000), CLOSE)
            except OSError:
                pass
        self.closed = True
        self.sock.close()


def connect(client: RESTClient, path: str, query: list[tuple[str, str]],
            protocols: list[str]) -> WebSocket:
    """Open a WebSocket to `path?query` offering `protocols`; an answer other than 101
    raises MkctlError."""
    from urllib.parse import quote

    target = path + ("?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}"
                                    for k, v in query) if query else "")
    url = client.base_url + target
    sock = client.dial(url)
    key = base64.b64encode(os.urandom(16)).decode()
    head = (f"GET {client.base_path}{target} HTTP/1.1\r\n{client.fixed_headers}"
            "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Protocol: {', '.join(protocols)}\r\n\r\n")
    try:
        sock.sendall(head.encode("latin-1"))
        status, headers, rest = _read_head(sock)
    except OSError:
        sock.close()
        raise
    if status != 101:
        body = _read_body(sock, headers, rest)
        sock.close()
        raise _upgrade_error(Response(status, headers, body))
    return WebSocket(sock, headers.get("sec-websocket-protocol", ""), rest)


def _read_head(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The status and headers of the answer, and the bytes read past them."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk or len(data) > _MAX_HEAD:
            raise ConnectionResetError("the server closed the connection before answering")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, rest


def _read_body(sock: socket.socket, headers: dict[str, str], rest: bytes) -> bytes:
    """The body of a refused upgrade: by its length, else until the server closes."""
    length = int(headers.get("content-length", "-1") or -1)
    body = rest
    while length < 0 or len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = _unchunked(body)
    return body if length < 0 else body[:length]


def _unchunked(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2:]
    return out


def _upgrade_error(response: Response) -> MkctlError:
    """A refused upgrade as kubectl reports it: "unable to upgrade connection: " and the
    message of the Status the server sent, else its text."""
    error = status_error(response)
    message = str(error)
    if error.reason in ("InternalError", "Unknown") and response.body:
        message = response.body.decode("utf-8", "replace").strip()
    return MkctlError(f"unable to upgrade connection: {message}")
