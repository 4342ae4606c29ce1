"""Run one container probe (httpGet, tcpSocket, exec, grpc) and say how it went.

Upstream `pkg/probe/{http,tcp,exec,grpc}` and `pkg/kubelet/prober/prober.go` runProbe: one
attempt, no thresholds (those live in probe_workers.py). A probe ends in one of:

- SUCCESS: httpGet answered 200..399, the TCP connection opened, the command exited 0,
  the gRPC health service answered SERVING;
- WARNING: success, but the kubelet stopped at a redirect to another host (upstream's
  probe.Warning; the worker counts it as a success and records a ProbeWarning event);
- FAILURE: anything else the container is responsible for, including timeouts and refused
  connections; the message is what the Unhealthy event shows;
- UNKNOWN: the probe could not be run at all (a port name the container does not declare,
  no handler, an exec the runtime rejected); upstream retries it and then throws it away.

The messages have upstream's (Go's) wording, e.g. 'Get "http://10.244.0.5:8080/healthz":
dial tcp 10.244.0.5:8080: connect: connection refused', so what students see in events
matches what a real cluster prints. The HTTP helpers are shared with lifecycle.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum

import aiohttp
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from yarl import URL

from minikube_py.api import Obj

ExecSync = Callable[[str, list[str], float], Awaitable[tuple[int, str]]]

KUBE_MINOR_VERSION = "1.37"
MAX_BODY_BYTES = 10 * 1024  # upstream reads at most 10 KiB of a probe's answer
MAX_OUTPUT_BYTES = 10 * 1024  # and keeps at most 10 KiB of an exec probe's output
MAX_REDIRECTS = 10
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
DEFAULT_TIMEOUT_SECONDS = 1


class ProbeResult(Enum):
    """Upstream probe.Result: the outcome of one probe attempt."""

    SUCCESS = "success"
    WARNING = "warning"
    FAILURE = "failure"
    UNKNOWN = "unknown"


class HTTPGetError(Exception):
    """The GET did not produce a response (connection, TLS, timeout, redirect loop); the
    message is shaped like Go's url.Error: 'Get "<url>": <cause>'."""


@dataclass
class HTTPRequest:
    """What upstream NewRequestForHTTPGetAction builds from an HTTPGetAction."""

    url: URL
    headers: list[tuple[str, str]]


async def run_probe(probe: Obj, pod: Obj, container: Obj, container_id: str, *,
                    pod_ip: str, exec_sync: ExecSync) -> tuple[ProbeResult, str]:
    """runProbe: one attempt of the probe's handler; (result, output or failure message)."""
    timeout = float(probe.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)
    if "exec" in probe:
        command = list((probe["exec"] or {}).get("command") or [])
        return await exec_probe(exec_sync, container_id, command, timeout)
    if "httpGet" in probe:
        try:
            request = http_request(probe["httpGet"], container, pod_ip, purpose="probe")
        except ValueError as error:
            return ProbeResult.UNKNOWN, str(error)
        return await http_probe(request, timeout)
    if "tcpSocket" in probe:
        action = probe["tcpSocket"]
        try:
            port = resolve_container_port(action.get("port"), container)
        except ValueError as error:
            return ProbeResult.UNKNOWN, str(error)
        return await tcp_probe(action.get("host") or pod_ip, port, timeout)
    if "grpc" in probe:
        action = probe["grpc"]
        return await grpc_probe(pod_ip, int(action.get("port", 0)), action.get("service") or "",
                                timeout)
    return ProbeResult.UNKNOWN, f"missing probe handler for {pod_name(pod)}:{container['name']}"


def pod_name(pod: Obj) -> str:
    """Upstream format.Pod: name_namespace(uid), the way the kubelet names a pod in messages."""
    meta = pod["metadata"]
    return f"{meta['name']}_{meta.get('namespace', '')}({meta.get('uid', '')})"


# -- ports and URLs -----------------------------------------------------------------------

def resolve_container_port(port: int | str | None, container: Obj) -> int:
    """ResolveContainerPort: a number, or the name of one of the container's ports (or a
    number written as a string); ValueError with Go's text when neither works."""
    if isinstance(port, str):
        named = next((p.get("containerPort") for p in container.get("ports") or []
                      if p.get("name") == port), None)
        if named is not None:
            number = int(named)
        else:
            try:
                number = int(port)
            except ValueError:
                raise ValueError(f'strconv.Atoi: parsing "{port}": invalid syntax') from None
    else:
        number = int(port or 0)
    if not 0 < number < 65536:
        raise ValueError(f"invalid port number: {number}")
    return number


def join_host_port(host: str, port: int) -> str:
    """net.JoinHostPort: IPv6 addresses go in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def http_request(action: Obj, container: Obj, pod_ip: str, *, purpose: str) -> HTTPRequest:
    """NewRequestForHTTPGetAction: URL from scheme/host/port/path (host defaults to the pod
    IP), the action's headers, plus User-Agent kube-<purpose>/<version> and Accept */*
    unless the action sets them (an empty Accept removes it)."""
    scheme = (action.get("scheme") or "HTTP").lower()
    host = action.get("host") or pod_ip
    port = resolve_container_port(action.get("port"), container)
    path = action.get("path") or ""
    if path and not path.startswith("/"):
        path = "/" + path
    url = URL(f"{scheme}://{join_host_port(host, port)}{path}")
    headers = [(h["name"], h.get("value", "")) for h in action.get("httpHeaders") or []]
    names = {name.lower() for name, _ in headers}
    if "user-agent" not in names:
        headers.append(("User-Agent", f"kube-{purpose}/{KUBE_MINOR_VERSION}"))
    if "accept" not in names:
        headers.append(("Accept", "*/*"))
    headers = [(name, value) for name, value in headers
               if not (name.lower() == "accept" and value == "")]
    return HTTPRequest(url, headers)


# -- httpGet ------------------------------------------------------------------------------

async def http_get(request: HTTPRequest, timeout: float | None) -> tuple[int, bytes]:
    """The kubelet's probe HTTP client: no keep-alive, no proxy, no compression, TLS
    without verification, redirects followed only to the same host (a redirect elsewhere
    is answered with the 3xx itself), at most 10 KiB of body. HTTPGetError otherwise."""
    connector = aiohttp.TCPConnector(ssl=False, force_close=True)
    limits = aiohttp.ClientTimeout(total=None)
    url = request.url
    redirects = 0
    try:
        async with asyncio.timeout(timeout), \
                aiohttp.ClientSession(connector=connector, timeout=limits) as session:
            while True:
                async with session.get(url, headers=request.headers, allow_redirects=False,
                                       skip_auto_headers=("Accept", "Accept-Encoding")) as response:
                    location = response.headers.get("Location")
                    target = url.join(URL(location)) if location else None
                    if (response.status in REDIRECT_CODES and target is not None
                            and target.host == request.url.host):
                        url = target
                        if redirects == MAX_REDIRECTS:
                            raise HTTPGetError(
                                f"Get {json.dumps(str(url))}: stopped after 10 redirects")
                        redirects += 1
                        continue
                    return response.status, await _read_at_most(response, MAX_BODY_BYTES)
    except TimeoutError:
        raise HTTPGetError(f"Get {json.dumps(str(url))}: context deadline exceeded "
                           "(Client.Timeout exceeded while awaiting headers)") from None
    except aiohttp.ClientError as error:
        cause = _connection_error_text(url, error)
        raise HTTPGetError(f"Get {json.dumps(str(url))}: {cause}") from error


async def _read_at_most(response: aiohttp.ClientResponse, limit: int) -> bytes:
    body = b""
    while len(body) < limit:
        chunk = await response.content.read(limit - len(body))
        if not chunk:
            break
        body += chunk
    return body


def _connection_error_text(url: URL, error: aiohttp.ClientError) -> str:
    """Go's wording for why a connection failed (net.OpError and friends)."""
    address = join_host_port(url.host or "", url.port or 0)
    if isinstance(error, aiohttp.ClientConnectorDNSError):
        return f"dial tcp: lookup {url.host}: no such host"
    if isinstance(error, aiohttp.ClientSSLError):
        reason = getattr(error.os_error, "reason", None) or "handshake failure"
        return "tls: " + reason.lower().replace("_", " ")  # e.g. "tls: wrong version number"
    if isinstance(error, aiohttp.ClientConnectorError):
        return f"dial tcp {address}: connect: {_errno_text(error.os_error)}"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "EOF"
    if isinstance(error, aiohttp.ClientOSError):
        return f"read tcp {address}: {_errno_text(error)}"
    return str(error)


def _errno_text(error: OSError) -> str:
    """The syscall error the way Go prints it: 'connection refused', 'no route to host'."""
    text = os.strerror(error.errno) if error.errno else str(error)
    return text[:1].lower() + text[1:]


async def http_probe(request: HTTPRequest, timeout: float) -> tuple[ProbeResult, str]:
    """DoHTTPProbe: 200..399 succeeds (with the body as output), a redirect the kubelet
    did not follow is a warning, anything else fails without echoing the body."""
    try:
        status, body = await http_get(request, timeout)
    except HTTPGetError as error:
        return ProbeResult.FAILURE, str(error)
    text = body.decode(errors="replace")
    if 200 <= status < 400:
        if status >= 300:
            return ProbeResult.WARNING, f"Probe terminated redirects, Response body: {text}"
        return ProbeResult.SUCCESS, text
    return ProbeResult.FAILURE, f"HTTP probe failed with statuscode: {status}"


# -- tcpSocket ----------------------------------------------------------------------------

async def tcp_probe(host: str, port: int, timeout: float) -> tuple[ProbeResult, str]:
    """DoTCPProbe: succeed when a TCP connection opens within the timeout, then close it."""
    address = join_host_port(host, port)
    try:
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        return ProbeResult.FAILURE, f"dial tcp {address}: i/o timeout"
    except socket.gaierror:
        return ProbeResult.FAILURE, f"dial tcp: lookup {host}: no such host"
    except OSError as error:
        return ProbeResult.FAILURE, f"dial tcp {address}: connect: {_errno_text(error)}"
    writer.close()
    await writer.wait_closed()
    return ProbeResult.SUCCESS, ""


# -- exec ---------------------------------------------------------------------------------

async def exec_probe(exec_sync: ExecSync, container_id: str, command: list[str],
                     timeout: float) -> tuple[ProbeResult, str]:
    """The exec prober over CRI ExecSync: exit 0 succeeds, any other exit code fails,
    both with the combined output (at most 10 KiB); a timeout fails."""
    try:
        exit_code, output = await exec_sync(container_id, command, timeout)
    except TimeoutError:
        return ProbeResult.FAILURE, f"command {json.dumps(' '.join(command))} timed out"
    except Exception as error:  # the runtime could not run it: not the container's fault
        return ProbeResult.UNKNOWN, str(error)
    output = output.encode()[:MAX_OUTPUT_BYTES].decode(errors="ignore")
    return (ProbeResult.SUCCESS if exit_code == 0 else ProbeResult.FAILURE), output


# -- grpc ---------------------------------------------------------------------------------

async def grpc_probe(host: str, port: int, service: str,
                     timeout: float) -> tuple[ProbeResult, str]:
    """The gRPC prober: grpc.health.v1.Health/Check over plaintext; SERVING succeeds."""
    target = join_host_port(host, port)
    within = go_duration(timeout)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    options = [("grpc.primary_user_agent", f"kube-probe/{KUBE_MINOR_VERSION}")]
    async with grpc.aio.insecure_channel(target, options=options) as channel:
        try:
            async with asyncio.timeout(timeout):
                await channel.channel_ready()
        except TimeoutError:
            return ProbeResult.FAILURE, (f"timeout: failed to connect service {json.dumps(target)}"
                                         f" within {within}: context deadline exceeded")
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            answer = await stub.Check(health_pb2.HealthCheckRequest(service=service),
                                      timeout=max(0.001, deadline - loop.time()))
        except grpc.aio.AioRpcError as error:
            code, details = error.code(), error.details() or ""
            if code == grpc.StatusCode.UNIMPLEMENTED:
                return ProbeResult.FAILURE, ("error: this server does not implement the grpc "
                                             f"health protocol (grpc.health.v1.Health): {details}")
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                return ProbeResult.FAILURE, f"timeout: health rpc did not complete within {within}"
            go_code = "".join(word.capitalize() for word in code.name.split("_"))
            return ProbeResult.FAILURE, (f"error: health rpc probe failed: rpc error: "
                                         f"code = {go_code} desc = {details}")
    if answer.status != health_pb2.HealthCheckResponse.SERVING:
        name = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
        return ProbeResult.FAILURE, f"service unhealthy (responded with {json.dumps(name)})"
    return ProbeResult.SUCCESS, "service healthy"


def go_duration(seconds: float) -> str:
    """A duration as Go's time.Duration prints it: 1s, 1.5s, 250ms."""
    if seconds >= 1 or seconds == 0:
        return f"{seconds:g}s"
    return f"{seconds * 1000:g}ms"
