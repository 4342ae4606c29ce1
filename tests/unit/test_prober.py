"""One probe attempt against real servers on 127.0.0.1: results and upstream's messages."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator

import grpc
import pytest
from aiohttp import web
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from minikube_py.api import Obj
from minikube_py.kubelet.prober import ProbeResult, go_duration, resolve_container_port, run_probe

POD = {"metadata": {"name": "web", "namespace": "default", "uid": "u-1"}}
BIG_BODY = "x" * 20_000
RELEASE = web.AppKey("release", asyncio.Event)


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _handle(request: web.Request) -> web.StreamResponse:
    port = request.url.port
    match request.path:
        case "/ok":
            return web.Response(text="fine")
        case "/fail":
            return web.Response(status=500, text="secret stack trace")
        case "/redirect-here":
            raise web.HTTPFound("/ok")
        case "/redirect-away":
            raise web.HTTPFound(f"http://localhost:{port}/ok", text="moved")
        case "/loop":
            raise web.HTTPFound("/loop")
        case "/slow":
            await request.app[RELEASE].wait()
            return web.Response(text="late")
        case "/headers":
            return web.json_response({"headers": dict(request.headers),
                                      "query": request.query_string})
        case "/big":
            return web.Response(text=BIG_BODY)
    return web.Response(status=404)


@pytest.fixture
async def http_port() -> AsyncIterator[int]:
    """A real aiohttp server on 127.0.0.1 with one route per behaviour under test."""
    app = web.Application()
    app[RELEASE] = asyncio.Event()
    app.router.add_route("GET", "/{tail:.*}", _handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield runner.addresses[0][1]
    finally:
        app[RELEASE].set()
        await runner.cleanup()


@pytest.fixture
async def tcp_port() -> AsyncIterator[int]:
    """A TCP server that accepts and closes every connection."""
    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def no_exec(container_id: str, command: list[str], timeout: float) -> tuple[int, str]:
    raise AssertionError("this probe must not exec")


async def probe(spec: Obj, container: Obj | None = None) -> tuple[ProbeResult, str]:
    return await run_probe(spec, POD, container or {"name": "app"}, "c-1",
                           pod_ip="127.0.0.1", exec_sync=no_exec)


# -- httpGet --------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "result", "message"), [
    ("/ok", ProbeResult.SUCCESS, "fine"),
    ("/fail", ProbeResult.FAILURE, "HTTP probe failed with statuscode: 500"),
    ("/redirect-here", ProbeResult.SUCCESS, "fine"),
    ("/redirect-away", ProbeResult.WARNING, "Probe terminated redirects, Response body: moved"),
])
async def test_http_probe_judges_the_status_code(http_port: int, path: str,
                                                 result: ProbeResult, message: str) -> None:
    assert await probe({"httpGet": {"path": path, "port": http_port}}) == (result, message)


async def test_http_probe_stops_after_ten_redirects_to_the_same_host(http_port: int) -> None:
    result, message = await probe({"httpGet": {"path": "/loop", "port": http_port}})
    assert result is ProbeResult.FAILURE
    assert message == f'Get "http://127.0.0.1:{http_port}/loop": stopped after 10 redirects'


async def test_http_probe_refused_connection_reads_like_go() -> None:
    port = free_port()
    result, message = await probe({"httpGet": {"path": "/healthz", "port": port}})
    assert result is ProbeResult.FAILURE
    assert message == (f'Get "http://127.0.0.1:{port}/healthz": '
                       f"dial tcp 127.0.0.1:{port}: connect: connection refused")


async def test_http_probe_times_out_after_timeout_seconds(http_port: int) -> None:
    loop = asyncio.get_running_loop()
    began = loop.time()
    result, message = await probe({"httpGet": {"path": "/slow", "port": http_port},
                                   "timeoutSeconds": 0.3})
    assert loop.time() - began < 1
    assert result is ProbeResult.FAILURE
    assert message == (f'Get "http://127.0.0.1:{http_port}/slow": context deadline exceeded '
                       "(Client.Timeout exceeded while awaiting headers)")


async def test_http_probe_sends_kube_probe_user_agent_and_custom_headers(http_port: int) -> None:
    result, body = await probe({"httpGet": {
        "path": "/headers?verbose=1", "port": http_port,
        "httpHeaders": [{"name": "X-Probe", "value": "yes"}]}})
    answer = json.loads(body)
    assert result is ProbeResult.SUCCESS
    assert answer["headers"]["User-Agent"] == "kube-probe/1.37"
    assert answer["headers"]["Accept"] == "*/*"
    assert answer["headers"]["X-Probe"] == "yes"
    assert "Accept-Encoding" not in answer["headers"]
    assert answer["query"] == "verbose=1"


async def test_http_probe_headers_override_user_agent_and_host(http_port: int) -> None:
    _, body = await probe({"httpGet": {"path": "/headers", "port": http_port, "httpHeaders": [
        {"name": "User-Agent", "value": "mine"}, {"name": "Host", "value": "example.test"},
        {"name": "Accept", "value": ""}]}})
    headers = json.loads(body)["headers"]
    assert headers["User-Agent"] == "mine"
    assert headers["Host"] == "example.test"
    assert "Accept" not in headers


async def test_http_probe_finds_a_named_container_port(http_port: int) -> None:
    container = {"name": "app", "ports": [{"name": "http", "containerPort": http_port}]}
    assert await probe({"httpGet": {"path": "/ok", "port": "http"}}, container) == \
        (ProbeResult.SUCCESS, "fine")


async def test_http_probe_reads_at_most_10_kib_of_the_body(http_port: int) -> None:
    result, body = await probe({"httpGet": {"path": "/big", "port": http_port}})
    assert result is ProbeResult.SUCCESS
    assert body == BIG_BODY[:10 * 1024]


async def test_https_probe_to_a_plain_http_server_fails(http_port: int) -> None:
    result, message = await probe({"httpGet": {"path": "/ok", "port": http_port,
                                               "scheme": "HTTPS"}})
    assert result is ProbeResult.FAILURE
    assert message == f'Get "https://127.0.0.1:{http_port}/ok": tls: wrong version number'


@pytest.mark.parametrize(("port", "error"), [
    ("metrics", 'strconv.Atoi: parsing "metrics": invalid syntax'),
    ("8080", None),
    (8080, None),
    (0, "invalid port number: 0"),
    (70000, "invalid port number: 70000"),
])
def test_resolve_container_port(port: int | str, error: str | None) -> None:
    container = {"name": "app", "ports": [{"name": "http", "containerPort": 80}]}
    if error is None:
        assert resolve_container_port(port, container) == 8080
    else:
        with pytest.raises(ValueError, match=error):
            resolve_container_port(port, container)


async def test_probe_with_an_unknown_port_name_cannot_run() -> None:
    assert await probe({"httpGet": {"path": "/", "port": "metrics"}}) == \
        (ProbeResult.UNKNOWN, 'strconv.Atoi: parsing "metrics": invalid syntax')


async def test_probe_without_a_handler_cannot_run() -> None:
    assert await probe({"periodSeconds": 1}) == \
        (ProbeResult.UNKNOWN, "missing probe handler for web_default(u-1):app")


# -- tcpSocket ------------------------------------------------------------------------------

async def test_tcp_probe_succeeds_when_the_port_accepts(tcp_port: int) -> None:
    assert await probe({"tcpSocket": {"port": tcp_port}}) == (ProbeResult.SUCCESS, "")


async def test_tcp_probe_finds_a_named_port(tcp_port: int) -> None:
    container = {"name": "app", "ports": [{"name": "db", "containerPort": tcp_port}]}
    assert await probe({"tcpSocket": {"port": "db"}}, container) == (ProbeResult.SUCCESS, "")


async def test_tcp_probe_refused_connection_reads_like_go() -> None:
    port = free_port()
    assert await probe({"tcpSocket": {"port": port}}) == (
        ProbeResult.FAILURE, f"dial tcp 127.0.0.1:{port}: connect: connection refused")


# -- exec -----------------------------------------------------------------------------------

def fake_exec(exit_code: int, output: str, *, hang: bool = False):
    calls: list[tuple[str, list[str], float]] = []

    async def exec_sync(container_id: str, command: list[str],
                        timeout: float) -> tuple[int, str]:
        calls.append((container_id, command, timeout))
        if hang:
            raise TimeoutError
        return exit_code, output
    return exec_sync, calls


@pytest.mark.parametrize(("exit_code", "output", "result"), [
    (0, "ok\n", ProbeResult.SUCCESS),
    (1, "cat: /tmp/healthy: No such file or directory\n", ProbeResult.FAILURE),
])
async def test_exec_probe_judges_the_exit_code(exit_code: int, output: str,
                                               result: ProbeResult) -> None:
    exec_sync, calls = fake_exec(exit_code, output)
    spec = {"exec": {"command": ["cat", "/tmp/healthy"]}, "timeoutSeconds": 5}
    assert await run_probe(spec, POD, {"name": "app"}, "c-1", pod_ip="",
                           exec_sync=exec_sync) == (result, output)
    assert calls == [("c-1", ["cat", "/tmp/healthy"], 5.0)]


async def test_exec_probe_timeout_fails_with_upstream_message() -> None:
    exec_sync, calls = fake_exec(0, "", hang=True)
    spec = {"exec": {"command": ["sh", "-c", "sleep 10"]}}
    assert await run_probe(spec, POD, {"name": "app"}, "c-1", pod_ip="",
                           exec_sync=exec_sync) == \
        (ProbeResult.FAILURE, 'command "sh -c sleep 10" timed out')
    assert calls[0][2] == 1.0  # timeoutSeconds defaults to 1


async def test_exec_probe_output_is_cut_at_10_kib() -> None:
    exec_sync, _ = fake_exec(0, "y" * 20_000)
    _, output = await run_probe({"exec": {"command": ["yes"]}}, POD, {"name": "app"}, "c-1",
                                pod_ip="", exec_sync=exec_sync)
    assert len(output) == 10 * 1024


# -- grpc -----------------------------------------------------------------------------------

@pytest.fixture
async def grpc_health_server() -> AsyncIterator[tuple[int, health.aio.HealthServicer]]:
    """A real grpc.aio server with the standard health service."""
    server = grpc.aio.server()
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield port, servicer
    finally:
        await server.stop(None)


async def test_grpc_probe_reports_the_serving_status(
        grpc_health_server: tuple[int, health.aio.HealthServicer]) -> None:
    port, servicer = grpc_health_server
    await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    await servicer.set("db", health_pb2.HealthCheckResponse.NOT_SERVING)
    assert await probe({"grpc": {"port": port}}) == (ProbeResult.SUCCESS, "service healthy")
    assert await probe({"grpc": {"port": port, "service": "db"}}) == \
        (ProbeResult.FAILURE, 'service unhealthy (responded with "NOT_SERVING")')
    result, message = await probe({"grpc": {"port": port, "service": "cache"}})
    assert result is ProbeResult.FAILURE
    assert message.startswith("error: health rpc probe failed: rpc error: code = NotFound desc =")


async def test_grpc_probe_of_a_server_without_health_service_fails() -> None:
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        result, message = await probe({"grpc": {"port": port}})
    finally:
        await server.stop(None)
    assert result is ProbeResult.FAILURE
    assert message.startswith("error: this server does not implement the grpc health "
                              "protocol (grpc.health.v1.Health)")


async def test_grpc_probe_that_cannot_connect_times_out() -> None:
    port = free_port()
    assert await probe({"grpc": {"port": port}, "timeoutSeconds": 0.3}) == (
        ProbeResult.FAILURE, f'timeout: failed to connect service "127.0.0.1:{port}" within '
                             "300ms: context deadline exceeded")


@pytest.mark.parametrize(("seconds", "text"), [(1, "1s"), (1.5, "1.5s"), (0.25, "250ms")])
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
