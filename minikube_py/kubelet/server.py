"""The kubelet's HTTP API (upstream pkg/kubelet/server/server.go).

    GET /healthz                                       "ok"
    GET /pods                                          the pods bound to this node (a v1 PodList)
    GET /containerLogs/{namespace}/{pod}/{container}   a container's log, text/plain, streamed
        ?follow&tailLines&sinceSeconds&sinceTime&timestamps&previous&limitBytes&stream
    GET /runningpods/                                  the pods the runtime runs (a PodList)
    GET /stats/summary                                 the Summary API: node and pod usage
    GET /metrics/resource                              the same usage as Prometheus text, as
                                                       metrics-server scrapes it
    GET /metrics/cadvisor                              per-container series, cAdvisor's names
    GET /metrics                                       the kubelet's own (metrics.py)
    GET /configz                                       the kubelet's configuration
    GET|POST /exec/{namespace}/{pod}/{container}       a command in the container, over a
        ?command=sh&command=-c&...&stdin=1&stdout=1&stderr=1&tty=1   WebSocket (v5/v4
    GET|POST /attach/{namespace}/{pod}/{container}     channel protocols); the container's
        ?stdin=1&stdout=1&stderr=1&tty=1                own stdio
    GET|POST /portForward/{namespace}/{pod}?port=80    the pod's ports, over a WebSocket:
                                                       per port a data and an error channel
                                                       (or over SPDY/3.1: a stream pair
                                                       per connection, the port named in
                                                       its headers)

exec, attach and portForward also take the pod's uid after its name
(/exec/{namespace}/{pod}/{uid}/{container}): then only that pod answers. A static pod is
found under its mirror pod's name and namespace, and its mirror pod's uid stands for its
own (upstream's TranslatePodUID), so `kubectl logs`, `exec` and `attach` on a mirror pod
reach the static pod's containers.

`kubectl logs` reaches /containerLogs through the API server's pods/log subresource
(apiserver/connect/podlogs.py), `kubectl exec` and `attach` reach /exec and /attach through
pods/exec and pods/attach (apiserver/connect/podconnect.py). For those two the kubelet asks the
runtime over CRI for a URL on its streaming server and relays the streams there
(upstream's kubelet does the same when it does not redirect the client): a WebSocket
message by message, a SPDY upgrade byte by byte. What is served comes from a
`KubeletProvider`: the kubelet.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import orjson
from aiohttp import web

from minikube_py.api import Obj
from minikube_py.api.podlogoptions import PodLogOptions
from minikube_py.cri_logs import log_options, read_container_log
from minikube_py.kubelet.auth import KubeletAuth
from minikube_py.kubelet.metrics import (
    KubeletMetrics,
    RuntimeCounts,
    cadvisor_metrics,
    resource_metrics,
)
from minikube_py.streaming import bytestreams, channels
from minikube_py.tracing.context import without_trace_context

log = logging.getLogger(__name__)
# How long stop() lets open requests finish (follows are cancelled before).
SHUTDOWN_TIMEOUT = 5.0


class ContainerNotFound(LookupError):
    """No log to serve for this container; the message says why, as upstream's
    GetKubeletContainerLogs errors do (answered 400): `previous terminated container "c"
    in pod "p" not found`, `container "c" in pod "p" is waiting to start: ContainerCreating`.
    """


class StreamUnavailable(Exception):
    """No exec or attach into this container: it does not run, or the runtime refused.
    Answered 500 with the message, as upstream's kubelet does: `container not found
    ("c")`."""


class KubeletProvider(Protocol):
    """What the server asks of the kubelet (upstream's server.HostInterface, in part)."""

    node_name: str

    def running_pods(self) -> list[Obj]:
        """The pods bound to this node, as the kubelet last saw them (GetPods)."""
        ...

    def find_pod(self, namespace: str, name: str, uid: str = "") -> Obj | None:
        """GetPodByName; with a uid, only the pod of that uid (a mirror pod's uid naming
        its static pod)."""
        ...

    def find_container_log(self, namespace: str, pod: str, container: str, previous: bool
                           ) -> tuple[Path, Callable[[], bool]] | None:
        """The log file of the container's current (or, with previous, last terminated)
        instance and a check whether that instance still runs. Raises ContainerNotFound
        (or any LookupError) when there is no such log; None means the container is unknown.
        """
        ...

    async def stats_summary(self) -> Obj:
        """The /stats/summary document, built from CRI stats."""
        ...

    async def runtime_pods(self) -> list[Obj]:
        """The pods the runtime holds, with their running containers (GetRunningPods)."""
        ...

    async def runtime_counts(self) -> RuntimeCounts:
        """Ready sandboxes and containers by state, from the runtime."""
        ...

    def machine(self) -> tuple[int, int]:
        """The node's CPUs and memory in bytes."""
        ...

    def configz(self) -> Obj:
        """The kubelet's configuration, as /configz shows it."""
        ...

    def running_container_id(self, namespace: str, pod: str, container: str) -> str:
        """The runtime's id of the container; StreamUnavailable when it does not run."""
        ...

    async def pod_sandbox_id(self, namespace: str, pod: str) -> str:
        """The runtime's id of the pod's ready sandbox; StreamUnavailable without one."""
        ...

    async def port_forward_url(self, sandbox_id: str, ports: list[int]) -> str:
        """CRI PortForward: the URL on the runtime's streaming server."""
        ...

    async def stream_url(self, kind: str, container_id: str, options: StreamOptions) -> str:
        """CRI Exec (kind "exec") or Attach: the URL on the runtime's streaming server.
        StreamUnavailable when the runtime refuses."""
        ...


@dataclass(frozen=True)
class StreamOptions:
    """What an exec or attach asks for (upstream remotecommand's Options)."""

    command: tuple[str, ...]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool

    @classmethod
    def from_query(cls, query: Mapping[str, str], command: list[str]) -> StreamOptions:
        """The kubelet's query: flags are "1" when set. A TTY merges stderr into stdout."""
        def flag(name: str) -> bool:
            return query.get(name, "") in ("1", "true")

        tty = flag("tty")
        options = cls(tuple(command), flag("stdin"), flag("stdout"),
                      flag("stderr") and not tty, tty)
        if not (options.stdin or options.stdout or options.stderr):
            raise ValueError("you must specify at least 1 of stdin, stdout, stderr")
        return options


class KubeletServer:
    """The kubelet's HTTP endpoints: `await start()`, serve, `await stop()`."""

    def __init__(self, provider: KubeletProvider, address: str, port: int, *,
                 auth: KubeletAuth | None = None, ssl_context: ssl.SSLContext | None = None,
                 healthz_port: int | None = None) -> None:
        self.provider = provider
        self.address = address
        self.port = port  # the bound port once started (port 0 picks a free one)
        self.auth = auth  # who may ask (auth.py); None: anyone
        self.ssl_context = ssl_context  # HTTPS (--tls-cert-file); None: plain HTTP
        # --healthz-port: /healthz alone, plain HTTP and open to all, as upstream's 10248
        self.healthz_port = healthz_port
        self._healthz_runner: web.AppRunner | None = None
        self._runner: web.AppRunner | None = None
        self._streams: set[asyncio.Task[Any]] = set()
        self._metrics: KubeletMetrics | None = None

    def build_app(self) -> web.Application:
        app = web.Application(middlewares=[self.auth.middleware] if self.auth else [])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/pods", self._pods)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._container_logs)
        app.router.add_get("/stats/summary", self._stats_summary)
        app.router.add_get("/metrics/resource", self._metrics_resource)
        app.router.add_get("/metrics/cadvisor", self._metrics_cadvisor)
        app.router.add_get("/metrics", self._kubelet_metrics)
        app.router.add_get("/runningpods/", self._runtime_pods)
        app.router.add_get("/configz", self._configz)
        for kind in ("exec", "attach"):
            for path in (f"/{kind}/{{namespace}}/{{pod}}/{{container}}",
                         f"/{kind}/{{namespace}}/{{pod}}/{{uid}}/{{container}}"):
                app.router.add_route("GET", path, self._stream)
                app.router.add_route("POST", path, self._stream)
        for method in ("GET", "POST"):
            for path in ("/portForward/{namespace}/{pod}", "/portForward/{namespace}/{pod}/{uid}"):
                app.router.add_route(method, path, self._port_forward)
        return app

    async def start(self) -> None:
        """The API and, with healthz_port, the health check."""
        await self.start_api()
        await self.start_healthz()

    async def start_api(self) -> None:
        self._runner = web.AppRunner(self.build_app(), access_log=None,
                                     handler_cancellation=True,
                                     shutdown_timeout=SHUTDOWN_TIMEOUT)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.address, self.port, reuse_address=True,
                           ssl_context=self.ssl_context)
        await site.start()
        server = site._server
        if self.port == 0 and server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]

    async def start_healthz(self) -> None:
        """--healthz-port alone: plain HTTP, up before the API (which may wait for its
        serving certificate)."""
        if self.healthz_port and self._healthz_runner is None:
            health = web.Application()
            health.router.add_get("/healthz", self._healthz)
            self._healthz_runner = web.AppRunner(health, access_log=None)
            await self._healthz_runner.setup()
            await web.TCPSite(self._healthz_runner, self.address, self.healthz_port,
                              reuse_address=True).start()

    async def stop(self) -> None:
        """Stop listening; end the log streams still open (a follow would never end)."""
        for task in self._streams:
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._healthz_runner is not None:
            await self._healthz_runner.cleanup()
            self._healthz_runner = None

    # -- endpoints ------------------------------------------------------------------------

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _pods(self, request: web.Request) -> web.Response:
        """/pods: the pods bound to this node, as a v1 PodList (without the trace context
        the API server gave the kubelet: no client sees it)."""
        body = {"kind": "PodList", "apiVersion": "v1", "metadata": {},
                "items": [without_trace_context(pod) for pod in self.provider.running_pods()]}
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def _stats_summary(self, request: web.Request) -> web.Response:
        body = await self.provider.stats_summary()
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def _metrics_resource(self, request: web.Request) -> web.Response:
        """The resource metrics endpoint: CPU seconds and working-set bytes of the node,
        its pods and their containers (upstream's stable metric names)."""
        try:
            summary = await self.provider.stats_summary()
        except Exception as err:  # noqa: BLE001 - a failed scrape is reported, not raised
            log.warning("resource metrics: %s", err)
            return web.Response(text=resource_metrics(None), content_type="text/plain")
        return web.Response(text=resource_metrics(summary), content_type="text/plain")

    async def _metrics_cadvisor(self, request: web.Request) -> web.Response:
        summary = await self.provider.stats_summary()
        cpus, memory = self.provider.machine()
        return web.Response(text=cadvisor_metrics(summary, cpus, memory),
                            content_type="text/plain")

    async def _kubelet_metrics(self, request: web.Request) -> web.Response:
        if self._metrics is None:
            self._metrics = KubeletMetrics(self.provider.node_name)
        text = self._metrics.render(len(self.provider.running_pods()),
                                    await self.provider.runtime_counts())
        return web.Response(text=text, content_type="text/plain")

    async def _runtime_pods(self, request: web.Request) -> web.Response:
        """/runningpods/: what the runtime runs, which may differ from /pods while a pod is
        being started or torn down."""
        body = {"kind": "PodList", "apiVersion": "v1", "metadata": {},
                "items": await self.provider.runtime_pods()}
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def _configz(self, request: web.Request) -> web.Response:
        return web.Response(body=orjson.dumps(self.provider.configz()),
                            content_type="application/json")

    async def _container_logs(self, request: web.Request) -> web.StreamResponse:
        """getContainerLogs: check the request, find the log file, stream it as text."""
        namespace = request.match_info["namespace"]
        name = request.match_info["pod"]
        container = request.match_info["container"]
        query = dict(request.query)
        if "tail" in query:  # the older spelling of tailLines; "all" means no tail
            tail = query.pop("tail")
            if tail != "all":
                query["tailLines"] = tail
        try:
            options = PodLogOptions.from_query(query)
        except ValueError as err:
            return _error(400, str(err))
        problems = options.validate()
        if problems:
            return _error(400, "; ".join(str(problem) for problem in problems))
        pod = next((p for p in self.provider.running_pods()
                    if p["metadata"].get("namespace") == namespace
                    and p["metadata"].get("name") == name), None)
        if pod is None:
            return _error(404, f'pod "{name}" does not exist')
        if container not in _container_names(pod):
            return _error(404, f'container "{container}" not found in pod "{name}"')
        try:
            found = self.provider.find_container_log(namespace, name, container,
                                                     options.previous)
        except LookupError as err:
            return _error(400, str(err.args[0]) if err.args else str(err))
        if found is None:
            return _error(404, f'container "{container}" not found in pod "{name}"')
        path, is_running = found
        if not path.is_file():
            return _error(400, f'failed to open log file "{path}": no such file')
        lines = read_container_log(path, log_options(options, datetime.now(UTC)),
                                   is_running=is_running)
        response = web.StreamResponse(
            headers={"Content-Type": "text/plain; charset=utf-8"})
        response.enable_chunked_encoding()
        task = asyncio.current_task()
        assert task is not None
        self._streams.add(task)
        try:
            await response.prepare(request)
            async for line in lines:
                await response.write(line)
            await response.write_eof()
        except OSError as error:
            # the client went away (ConnectionResetError), or the log file did
            log.debug("log stream of %s/%s/%s ended: %s", namespace, name, container, error)
        finally:
            self._streams.discard(task)
            await lines.aclose()
        return response


    async def _stream(self, request: web.Request) -> web.StreamResponse:
        """getExec / getAttach: the runtime's streaming URL for the container, then the
        client's WebSocket relayed to it until either end closes."""
        kind = request.path.split("/")[1]
        namespace = request.match_info["namespace"]
        name = request.match_info["pod"]
        container = request.match_info["container"]
        try:
            options = StreamOptions.from_query(
                request.query, request.query.getall("command", []) if kind == "exec" else [])
        except ValueError as err:
            return _error(400, str(err))
        if self.provider.find_pod(namespace, name, request.match_info.get("uid", "")) is None:
            return _error(404, "pod does not exist")
        try:
            container_id = self.provider.running_container_id(namespace, name, container)
        except StreamUnavailable as err:
            return _error(500, str(err))
        if not (channels.is_websocket(request) or bytestreams.is_spdy(request)):
            return _error(400, "Upgrade request required")
        try:
            url = await self.provider.stream_url(kind, container_id, options)
        except StreamUnavailable as err:
            return _error(500, str(err))
        if bytestreams.is_spdy(request):
            return await self._proxy_upgrade(request, url)
        return await self._relay(request, url, [], port_forward=False)

    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        """getPortForward: the pod's sandbox, CRI PortForward, then the client's WebSocket
        relayed to the runtime (the ports go along in the query, as the runtime reads
        them there)."""
        namespace = request.match_info["namespace"]
        name = request.match_info["pod"]
        try:
            ports = _ports(request.query.getall("port", []))
        except ValueError as err:
            # without any port, a SPDY client names them per stream: that is told below
            if request.query.getall("port", []):
                return _error(400, str(err))
            ports = []
        if self.provider.find_pod(namespace, name, request.match_info.get("uid", "")) is None:
            return _error(404, "pod does not exist")

        try:
            sandbox_id = await self.provider.pod_sandbox_id(namespace, name)
        except StreamUnavailable as err:
            return _error(500, str(err))
        spdy = bytestreams.is_spdy(request)
        if not (channels.is_websocket(request) or spdy):
            return _error(400, "Upgrade request required")
        if not ports and not spdy:
            return _error(400, 'query parameter "port" is required')
        try:
            url = await self.provider.port_forward_url(sandbox_id, ports)
        except StreamUnavailable as err:
            return _error(500, str(err))
        if spdy:
            # SPDY names the port on each stream pair: the runtime reads it there
            return await self._proxy_upgrade(request, url)
        return await self._relay(request, url, [("port", str(port)) for port in ports],
                                 port_forward=True)

    async def _proxy_upgrade(self, request: web.Request, url: str) -> web.StreamResponse:
        """A SPDY upgrade, proxied to the runtime's streaming server at `url` as raw bytes
        (upstream's kubelet proxies with the UpgradeAwareHandler): the runtime's 101 goes
        back to the client, then the two connections are spliced until either ends."""
        try:
            answer = await bytestreams.dial_upgrade(url, [], bytestreams.offer_headers(request))
        except OSError as err:
            return _error(500, f"cannot reach the runtime's streaming server: {err}")
        task = asyncio.current_task()
        assert task is not None
        self._streams.add(task)
        try:
            return await bytestreams.proxy_upgrade(request, answer)
        finally:
            self._streams.discard(task)

    async def _relay(self, request: web.Request, url: str, query: list[tuple[str, str]], *,
                     port_forward: bool) -> web.StreamResponse:
        """The client's WebSocket, relayed to the runtime's streaming server at `url`.

        Exec and attach: the runtime gets v4 (all containerd speaks), the client v5 or v4.
        Port-forward: the runtime gets what the client offered, and the client what the
        runtime chose; upstream's port-forward takes no subprotocol at all as binary
        channels too (kr8s offers none), so none is no reason to refuse.
        """
        offered = channels.offered_protocols(request)
        if not port_forward and not any(p in channels.PROTOCOLS for p in offered):
            return _error(400, "none of the offered subprotocols is supported: want one of "
                          + ", ".join(channels.PROTOCOLS))
        session = aiohttp.ClientSession()
        try:
            try:
                runtime = await session.ws_connect(
                    url, params=query, protocols=offered if port_forward else (channels.V4,),
                    max_msg_size=0)
            except aiohttp.ClientError as err:
                return _error(500, f"cannot reach the runtime's streaming server: {err}")
            chosen = ((runtime.protocol,) if runtime.protocol else ()) if port_forward else (
                channels.PROTOCOLS)
            client = web.WebSocketResponse(protocols=chosen, max_msg_size=0)
            await client.prepare(request)
            task = asyncio.current_task()
            assert task is not None
            self._streams.add(task)
            try:
                # containerd speaks v4, which cannot close stdin alone: a v5 CLOSE is
                # dropped here (the command sees the end of its input only when the
                # session ends)
                await channels.relay(client, runtime,
                                     keep=lambda data: data[:1] != bytes([channels.CLOSE]))
            finally:
                self._streams.discard(task)
            return client
        finally:
            await session.close()


def _ports(values: list[str]) -> list[int]:
    """The `port` query parameters, as upstream's portforward.NewV4Options checks them."""
    if not values:
        raise ValueError('query parameter "port" is required')
    ports = []
    for value in values:
        try:
            port = int(value)
        except ValueError:
            raise ValueError(f'unable to parse "{value}" as a port') from None
        if not 0 < port < 65536:
            raise ValueError(f'port "{value}" must be > 0 and < 65536')
        ports.append(port)
    return ports


def _container_names(pod: Obj) -> set[str]:
    spec = pod.get("spec") or {}
    return {c.get("name") for kind in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(kind) or []}


def _error(status: int, message: str) -> web.Response:
    """Upstream's kubelet answers errors as one line of plain text."""
    return web.Response(status=status, text=message)
