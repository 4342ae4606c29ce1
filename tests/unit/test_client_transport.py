"""The client's HTTP/1.1 connection pool (client/transport.py), against a loopback server
written on raw sockets so each test can script exactly what goes over the wire: sized and
chunked bodies, keep-alive and `Connection: close`, a server that drops an idle connection
as the request arrives, one that dies half-way through an answer, one that never answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from minikube_py.client import transport
from minikube_py.client.errors import ClientError, ConnectionFailed, NotFound
from minikube_py.client.kubeconfig import ClientConfig
from minikube_py.client.rest import Client
from minikube_py.process import free_port

# What the server does with one request, given the request, the connection's number and the
# request's number on that connection: (bytes to answer or None to hang up, keep open?)
Answer = Callable[[bytes, int, int], tuple[bytes | None, bool]]


def sized(body: bytes, *, status: str = "200 OK", extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def chunked(*pieces: bytes) -> bytes:
    out = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    for piece in pieces:
        out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    return out + b"0\r\n\r\n"


class RawServer:
    """Reads requests (head and Content-Length body); `answer` decides each reply."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        number = self.connections
        index = 0
        try:
            while True:
                index += 1
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                reply, keep_open = self.answer(request, number, index)
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if not keep_open:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Answer], asyncio.Future]]:
    servers = []

    async def start(answer: Answer) -> tuple[RawServer, str]:
        raw = RawServer(answer)
        port = free_port()
        servers.append(await asyncio.start_server(raw.handle, "127.0.0.1", port))
        return raw, f"http://127.0.0.1:{port}"

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


async def test_sized_and_chunked_bodies_over_one_kept_alive_connection(serve) -> None:
    replies = [sized(b'{"a":1}'), chunked(b'{"b":', b'2}'), sized(b"", status="204 No Content")]
    raw, url = await serve(lambda request, number, index: (replies.pop(0), True))
    pool = transport.ConnectionPool(url, headers={"User-Agent": "test"})
    first = await pool.request("GET", "/api/v1/pods", params={"labelSelector": "app in (a,b)"})
    assert (first.status, first.body) == (200, b'{"a":1}')
    second = await pool.request("POST", "/x", body=b'{"k":"v"}',
                                headers={"Content-Type": "application/json"})
    assert (second.status, second.body) == (200, b'{"b":2}')
    third = await pool.request("DELETE", "/x")
    assert (third.status, third.body) == (204, b"")
    assert raw.connections == 1
    assert raw.requests[0].startswith(
        b"GET /api/v1/pods?labelSelector=app+in+%28a%2Cb%29 HTTP/1.1\r\n")
    assert b"User-Agent: test\r\n" in raw.requests[0]
    assert raw.requests[1].endswith(b'Content-Length: 9\r\n\r\n{"k":"v"}')
    await pool.close()


async def test_a_client_with_its_own_token_shares_the_connections_but_not_the_user(
        serve) -> None:
    raw, url = await serve(lambda request, number, index: (sized(b"{}"), True))
    shared = Client(ClientConfig(server=url, token="shared"))
    node = shared.with_token("node-3")
    await shared.request("GET", "/api/v1/pods")
    await node.request("PUT", "/apis/coordination.k8s.io/v1/leases", body={})
    await shared.request("GET", "/api/v1/pods")
    assert raw.connections == 1
    authorizations = [[line for line in request.split(b"\r\n")
                       if line.startswith(b"Authorization:")] for request in raw.requests]
    assert authorizations == [[b"Authorization: Bearer shared"],
                              [b"Authorization: Bearer node-3"],
                              [b"Authorization: Bearer shared"]]
    await node.close()  # leaves the shared connections open
    await shared.request("GET", "/api/v1/pods")
    assert raw.connections == 1
    await shared.close()


async def test_connection_close_is_honoured(serve) -> None:
    closing = sized(b"{}", extra="Connection: close\r\n")
    raw, url = await serve(lambda request, number, index: (closing, False))
    pool = transport.ConnectionPool(url)
    for _ in range(3):
        assert (await pool.request("GET", "/")).status == 200
    assert raw.connections == 3
    await pool.close()


async def test_a_connection_the_server_dropped_while_idle_is_replaced_for_any_verb(serve) -> None:
    """The server closes a kept-alive connection just as the next request arrives: nothing
    was answered, so even a write is sent again, on a new connection."""
    def answer(request: bytes, number: int, index: int) -> tuple[bytes | None, bool]:
        if number == 1 and index == 2:
            return None, False  # hang up without a word
        return sized(b'{"kind":"ConfigMap","metadata":{"name":"a"}}', status="201 Created"), True

    raw, url = await serve(answer)
    async with Client(ClientConfig(server=url)) as client:
        configmaps = client.resource("configmaps")
        await configmaps.create({"metadata": {"name": "a", "namespace": "default"}})
        created = await configmaps.create({"metadata": {"name": "a", "namespace": "default"}})
    assert created["metadata"]["name"] == "a"
    assert raw.connections == 2
    assert [request.split(b" ")[0] for request in raw.requests] == [b"POST"] * 3


async def test_a_write_cut_off_half_way_is_not_repeated(serve) -> None:
    def answer(request: bytes, number: int, index: int) -> tuple[bytes | None, bool]:
        return sized(b'{"kind":"ConfigMap"}')[:30], False  # part of the head, then EOF

    raw, url = await serve(answer)
    async with Client(ClientConfig(server=url), max_retries=2) as client:
        with pytest.raises(ConnectionFailed):
            await client.resource("configmaps").create(
                {"metadata": {"name": "a", "namespace": "default"}})
        assert len(raw.requests) == 1, "the server may have acted: not sent again"
        with pytest.raises(ConnectionFailed):
            await client.resource("configmaps").get("a", "default")
        assert len(raw.requests) == 1 + 3, "a read is retried (one try, two retries)"


async def test_a_server_that_never_answers_times_out_and_its_connection_is_dropped(
        serve) -> None:
    answers = iter([(b"", True), (sized(b"{}"), True)])  # first: say nothing at all
    raw, url = await serve(lambda request, number, index: next(answers))
    pool = transport.ConnectionPool(url)
    with pytest.raises(TimeoutError):
        await pool.request("GET", "/slow", timeout=0.3)
    assert (await pool.request("GET", "/")).status == 200
    assert raw.connections == 2, "the timed-out connection was not reused"
    await pool.close()


async def test_nobody_listening_is_a_connection_failure() -> None:
    async with Client(ClientConfig(server=f"http://127.0.0.1:{free_port()}"),
                      max_retries=1) as client:
        with pytest.raises(ConnectionFailed, match="cannot reach the API server"):
            await client.resource("configmaps").get("a", "default")


async def test_a_caller_catches_every_failure_of_a_call_as_one_client_error(serve) -> None:
    """An error Status, an unreachable server and the pool's own failures share the root."""
    not_found = sized(b'{"kind":"Status","code":404,"reason":"NotFound"}',
                      status="404 Not Found")
    raw, url = await serve(lambda request, number, index: (not_found, True))
    nobody = f"http://127.0.0.1:{free_port()}"
    for server in (url, nobody):
        async with Client(ClientConfig(server=server), max_retries=0) as client:
            with pytest.raises(ClientError):
                await client.resource("configmaps").get("a", "default")
    pool = transport.ConnectionPool(nobody)
    with pytest.raises(ClientError):
        await pool.request("GET", "/")
    await pool.close()


async def test_an_error_status_keeps_its_retry_after_and_reason(serve) -> None:
    body = (b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":404,'
            b'"reason":"NotFound","message":"configmaps \\"a\\" not found"}')
    not_found = sized(body, status="404 Not Found")
    raw, url = await serve(lambda request, number, index: (not_found, True))
    async with Client(ClientConfig(server=url)) as client:
        with pytest.raises(NotFound, match='configmaps "a" not found'):
            await client.resource("configmaps").get("a", "default")
