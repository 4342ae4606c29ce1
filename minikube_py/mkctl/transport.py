"""One HTTP/1.1 connection to the API server for the whole command, as client-go's REST
client would use it (bearer token or client certificate, the cluster CA, impersonation).

Why a blocking socket and not the project's asyncio client (minikube_py/client/): a
command sends one to three requests in a row and then exits, so it has nothing to overlap,
and start-up time is most of its cost. Importing aiohttp takes about 250 ms here, asyncio
with the project's client about 60 ms, and http.client (which pulls in the email package)
about 40 ms; a socket, `ssl` (only for https) and the ~100 lines below cost a few
milliseconds. `ssl` is imported only for https servers, and the system's CA bundle is
never loaded when the kubeconfig names a CA (loading it alone costs 50 ms), as client-go
trusts only that CA then.

Requests are GETs, and for the commands that change objects POST, PUT, PATCH and
DELETE with a JSON body; a response is read whole, or, for a watch, one JSON event at a
time as the chunks arrive. A failure is reported as Go would
word it, so kubectl's messages can be built from it (errors.ConnectionFailed).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote_plus, urlsplit

from minikube_py.mkctl.errors import ConnectionFailed, StatusError
from minikube_py.mkctl.kubeconfig import RestConfig

USER_AGENT = "mkctl/v1.37.0 (linux/amd64) minikube-py"
MAX_RETRIES = 10  # client-go retries a response with Retry-After this many times
_MAX_HEADER_LINES = 200


class Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers  # lower-case names
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


class RESTClient:
    """Requests to one API server over a single kept-alive connection."""

    def __init__(self, config: RestConfig) -> None:
        self.config = config
        host = config.host if "://" in config.host else f"http://{config.host}"
        parts = urlsplit(host)
        self.scheme = parts.scheme.lower()
        self.hostname = parts.hostname or "localhost"
        self.port = parts.port or (443 if self.scheme == "https" else 80)
        self.netloc = parts.netloc.rsplit("@", 1)[-1]  # url.URL.Host, as errors show it
        self.base_path = parts.path.rstrip("/")
        self.base_url = f"{self.scheme}://{self.netloc}{self.base_path}"
        self._socket: socket.socket | None = None
        self._reader: Any = None
        self._headers = self._fixed_headers()

    @property
    def fixed_headers(self) -> str:
        """The header lines every request carries (host, agent, credentials, impersonation)."""
        return self._headers

    def _fixed_headers(self) -> str:
        config = self.config
        headers = {"Host": self.netloc, "User-Agent": USER_AGENT}
        if config.bearer_token:
            headers["Authorization"] = f"Bearer {config.bearer_token}"
        elif config.username or config.password:
            from base64 import b64encode

            basic = b64encode(f"{config.username}:{config.password}".encode()).decode()
            headers["Authorization"] = f"Basic {basic}"
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        if config.impersonate:
            lines += f"Impersonate-User: {config.impersonate}\r\n"
            lines += "".join(f"Impersonate-Group: {group}\r\n"
                             for group in config.impersonate_groups)
            if config.impersonate_uid:
                lines += f"Impersonate-Uid: {config.impersonate_uid}\r\n"
        return lines

    # -- the connection --

    def interrupt(self) -> None:
        """Ends a read of the kept connection that blocks, from another thread: the read
        meets the end of the stream (a watch stopped by a signal; see get.py)."""
        sock = self._socket
        if sock is not None:
            try:  # the TCP connection under TLS too, which the read is waiting on
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = self._reader = None

    def _connect(self, url: str, op: str = "Get") -> None:
        sock = self.dial(url, op)
        self._socket = sock
        self._reader = sock.makefile("rb")

    def dial(self, url: str, op: str = "Get") -> socket.socket:
        """A new connection to the server (TLS for https), failures worded as Go's; the
        kept connection uses one, and a stream that upgrades (exec, port-forward) opens
        one of its own."""
        timeout = self.config.timeout or None
        try:
            # (an ASCII name as bytes: a str would make Python import the idna codec)
            name = self.hostname.encode() if self.hostname.isascii() else self.hostname
            addresses = socket.getaddrinfo(name, self.port, type=socket.SOCK_STREAM)
        except socket.gaierror:
            raise ConnectionFailed(op, url, self.netloc, f"dial tcp: lookup {self.hostname} "
                                   f"on {_nameserver()}: no such host") from None
        family, kind, proto, _, address = addresses[0]
        dialed = f"{address[0]}:{address[1]}" if family == socket.AF_INET else (
            f"[{address[0]}]:{address[1]}")
        sock = socket.socket(family, kind, proto)
        sock.settimeout(timeout)
        try:
            sock.connect(address)
        except ConnectionRefusedError:
            sock.close()
            raise ConnectionFailed(op, url, self.netloc,
                                   f"dial tcp {dialed}: connect: connection refused") from None
        except TimeoutError:
            sock.close()
            raise ConnectionFailed(op, url, self.netloc,
                                   f"dial tcp {dialed}: i/o timeout") from None
        except OSError as error:
            sock.close()
            raise ConnectionFailed(op, url, self.netloc,
                                   f"dial tcp {dialed}: connect: "
                                   f"{(error.strerror or str(error)).lower()}") from None
        if self.scheme == "https":
            sock = self._wrap_tls(sock, url, address, op)
        return sock

    def _wrap_tls(self, sock: socket.socket, url: str, address: Any, op: str
                  ) -> socket.socket:
        import ssl

        from minikube_py.mkctl.tls import (
            TLSConfigError,
            context_for,
            describe_tls_error,
            peer_names,
        )

        name = self.config.server_name or self.hostname
        try:
            return context_for(self.config).wrap_socket(sock, server_hostname=name)
        except TLSConfigError as error:
            sock.close()
            raise ConnectionFailed(op, url, self.netloc, str(error)) from None
        except (ssl.SSLError, ssl.CertificateError) as error:
            sock.close()

            def names() -> list[tuple[str, str]]:
                return peer_names(self.config, socket.create_connection(address[:2], 10))

            raise ConnectionFailed(op, url, self.netloc,
                                   describe_tls_error(error, name, names)) from None
        except OSError as error:
            sock.close()
            raise ConnectionFailed(op, url, self.netloc, str(error)) from None

    # -- requests --

    def get(self, path: str, params: dict[str, str] | None = None, *, accept: str = "",
            stream: bool = False) -> Response:
        """GET path?params (see request)."""
        return self.request("GET", path, params, accept=accept, stream=stream)

    def request(self, method: str, path: str, params: dict[str, str] | None = None, *,
                body: Any = None, content_type: str = "application/json", accept: str = "",
                stream: bool = False, headers: dict[str, str] | None = None) -> Response:
        """One request, `body` sent as JSON (with `headers` besides the fixed ones); a
        reused connection the server closed is reopened once, and a 429 or 5xx with
        Retry-After is retried as client-go does."""
        params = dict(params or {})
        if self.config.timeout and "timeout" not in params and not stream:
            from minikube_py.api.gofmt import format_duration

            params["timeout"] = format_duration(self.config.timeout)
        target = self.base_path + _target(path, params)
        url = self.base_url + _target(path, params)
        payload = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
        head = f"{method} {target} HTTP/1.1\r\n{self._headers}" \
               f"Accept: {accept or 'application/json, */*'}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n"
        message = (head + "\r\n").encode("latin-1") + payload
        op = method.title()  # Go's url.Error names the method so: "Get", "Patch"
        for attempt in range(MAX_RETRIES + 1):
            response = self._exchange(message, url, stream, op)
            retry_after = response.headers.get("retry-after", "")
            if (response.status == 429 or response.status >= 500) and retry_after.isdigit() \
                    and attempt < MAX_RETRIES:
                time.sleep(max(1, int(retry_after)))
                continue
            return response
        return response

    def _exchange(self, head: bytes, url: str, stream: bool, op: str, previous: str = ""
                  ) -> Response:
        """One request on the kept connection (opened if need be). A request that finds a
        kept connection closed is sent again on a new one; a GET whose new connection is
        closed or reset is sent once more, as client-go retries."""
        reused = self._socket is not None
        if not reused:
            self._connect(url, op)
        try:
            assert self._socket is not None
            self._socket.sendall(head)
            return self._read_response(stream)
        except (OSError, ValueError) as error:
            self.close()
            cause = _describe_read_error(error)
            if reused and isinstance(error, _Closed):
                return self._exchange(head, url, stream, op)  # the server dropped it idle
            if isinstance(error, _Closed | ConnectionResetError) and not previous \
                    and op == "Get":  # a change the server may have made is not sent twice
                return self._exchange(head, url, stream, op, previous=cause)
            retried = bool(previous) and previous != cause
            failure = ConnectionFailed(op, url, self.netloc, cause + (
                f" - error from a previous attempt: {previous}" if retried else ""))
            failure.retried = retried
            raise failure from None

    def _read_response(self, stream: bool) -> Response:
        status_line = self._reader.readline()
        if not status_line:
            raise _Closed("EOF")
        parts = status_line.decode("latin-1").split(None, 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
            raise ValueError(f"malformed HTTP response {status_line[:40]!r}")
        headers: dict[str, str] = {}
        for _ in range(_MAX_HEADER_LINES):
            line = self._reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        response = Response(int(parts[1]), headers, b"")
        if stream and response.status == 200:
            return response  # the caller reads the body with events()
        response.body = b"".join(self._body_chunks(headers, response.status))
        if headers.get("connection", "").lower() == "close":
            self.close()
        return response

    def _body_chunks(self, headers: dict[str, str], status: int) -> Iterator[bytes]:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            while True:
                size = int(self._reader.readline().split(b";", 1)[0], 16)
                if size == 0:
                    while self._reader.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return
                yield self._reader.read(size)
                self._reader.readline()
        elif "content-length" in headers:
            yield self._reader.read(int(headers["content-length"]))
        elif status not in (204, 304) and status >= 200:
            yield self._reader.read()
            headers["connection"] = "close"

    def chunks(self, response: Response) -> Iterator[bytes]:
        """The body of a streamed answer (`stream=True`) as it arrives."""
        try:
            yield from self._body_chunks(response.headers, response.status)
        finally:
            self.close()

    def get_json(self, path: str, params: dict[str, str] | None = None, *,
                 accept: str = "", headers: dict[str, str] | None = None) -> Any:
        """GET and decode; a failure answer raises StatusError, as client-go's Result."""
        return self.request_json("GET", path, params, accept=accept, headers=headers)

    def request_json(self, method: str, path: str, params: dict[str, str] | None = None, *,
                     body: Any = None, content_type: str = "application/json",
                     accept: str = "", headers: dict[str, str] | None = None) -> Any:
        """A request, its answer decoded; a failure answer raises StatusError."""
        response = self.request(method, path, params, body=body, content_type=content_type,
                                accept=accept, headers=headers)
        if response.status < 200 or response.status > 206:
            raise status_error(response)
        return response.json()

    def watch(self, path: str, params: dict[str, str], *, accept: str = ""
              ) -> Iterator[dict[str, Any]]:
        """The events of a watch (`{"type": ..., "object": ...}`), until the server ends
        the stream."""
        response = self.get(path, {**params, "watch": "true"}, accept=accept, stream=True)
        if response.status != 200:
            raise status_error(response)
        decoder = json.JSONDecoder()
        buffer = ""
        try:
            for chunk in self._body_chunks(response.headers, response.status):
                buffer += chunk.decode("utf-8")
                while True:
                    buffer = buffer.lstrip()
                    if not buffer:
                        break
                    try:
                        event, end = decoder.raw_decode(buffer)
                    except json.JSONDecodeError:
                        break  # the rest of this event is in the next chunk
                    buffer = buffer[end:]
                    yield event
        except (OSError, ValueError):
            return
        finally:
            self.close()


class _Closed(OSError):
    """The server closed the connection before answering."""


def _target(path: str, params: dict[str, str] | None) -> str:
    if not params:
        return path
    query = "&".join(f"{quote_plus(key, safe='')}={quote_plus(value, safe='')}"
                     for key, value in sorted(params.items()))
    return f"{path}?{query}"


def _nameserver() -> str:
    """The DNS server Go's resolver asks first (its errors name it)."""
    try:
        with open("/etc/resolv.conf") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) >= 2 and fields[0] == "nameserver":
                    server = fields[1]
                    return f"[{server}]:53" if ":" in server else f"{server}:53"
    except OSError:
        pass
    return "127.0.0.1:53"


def _describe_read_error(error: Exception) -> str:
    """Go's words for a failure after the connection was made."""
    if isinstance(error, TimeoutError | socket.timeout):
        return "net/http: request canceled (Client.Timeout exceeded while awaiting headers)"
    if isinstance(error, ConnectionResetError):
        return "read: connection reset by peer"
    if isinstance(error, _Closed):
        return "EOF"
    return str(error)


_GENERIC_MESSAGES = {
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    409: ("Conflict", "the server reported a conflict"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: ("TooManyRequests", "the server has received too many requests and has asked us to "
                             "try again later"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted, but "
                     "may still be processing the request"),
}


def status_error(response: Response) -> StatusError:
    """The error of a failure answer: its Status, or for a body that is not one, the
    generic error client-go makes from the code (NewGenericServerResponse)."""
    try:
        status = json.loads(response.body)
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status" and status.get("status"):
        return StatusError(status)
    text = response.body.decode("utf-8", "replace").strip()
    code = response.status
    reason, message = _GENERIC_MESSAGES.get(code, (
        "Unknown", f"the server responded with the status code {code} but did not return "
                   "more information"))
    if code in (403, 406, 415):
        reason = {403: "Forbidden", 406: "NotAcceptable", 415: "UnsupportedMediaType"}[code]
        message = text
    elif code >= 500 and code not in _GENERIC_MESSAGES:
        reason = "InternalError"
        message = f"an error on the server ({json.dumps(text)}) has prevented the request " \
                  "from succeeding"
    return StatusError({"kind": "Status", "status": "Failure", "reason": reason,
                        "message": message, "code": code})


def timeout_param(config: RestConfig) -> str:
    """The `timeout` discovery asks the server for: the request timeout, else 32 s."""
    from minikube_py.api.gofmt import format_duration

    return format_duration(config.timeout) if config.timeout else "32s"


def klog_error(location: str, message: str, error: ConnectionFailed) -> str:
    """A klog error line as kubectl's libraries print them when discovery fails:
    `E1125 09:36:00.722142    9867 memcache.go:381] "..." err="Get \\"...\\": ..."`."""
    return klog_line("E", location, f'"{message}" err={json.dumps(str(error))}')


def klog_line(severity: str, location: str, text: str) -> str:
    """A line in klog's header format: `W1125 09:36:00.722142    9867 prune.go:71] text`."""
    now = time.time()
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now))
    micros = int((now % 1) * 1_000_000)
    return f"{severity}{stamp}.{micros:06d} {os.getpid():>7} {location}] {text}"
