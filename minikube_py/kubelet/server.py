"""The kubelet's HTTP API (upstream pkg/kubelet/server/server.go).

    GET /healthz                                       "ok"
    GET /pods                                          the pods bound to this node (a v1 PodList)
    GET /containerLogs/{namespace}/{pod}/{container}   a container's log, text/plain, streamed
        ?follow&tailLines&sinceSeconds&sinceTime&timestamps&previous&limitBytes&stream
    GET /stats/summary                                 the Summary API: node and pod usage

`kubectl logs` reaches /containerLogs through the API server's pods/log subresource
(apiserver/podlogs.py). What is served comes from a `KubeletProvider`: the kubelet.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import orjson
from aiohttp import web

from minikube_py.api.podlogoptions import PodLogOptions
from minikube_py.kubelet.logs import log_options, read_container_log

Obj = dict[str, Any]
log = logging.getLogger(__name__)
# How long stop() lets open requests finish (follows are cancelled before).
SHUTDOWN_TIMEOUT = 5.0


class ContainerNotFound(LookupError):
    """No log to serve for this container; the message says why, as upstream's
    GetKubeletContainerLogs errors do (answered 400): `previous terminated container "c"
    in pod "p" not found`, `container "c" in pod "p" is waiting to start: ContainerCreating`.
    """


class KubeletProvider(Protocol):
    """What the server asks of the kubelet (upstream's server.HostInterface, in part)."""

    def running_pods(self) -> list[Obj]:
        """The pods bound to this node, as the kubelet last saw them (GetPods)."""
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


class KubeletServer:
    """The kubelet's HTTP endpoints: `await start()`, serve, `await stop()`."""

    def __init__(self, provider: KubeletProvider, address: str, port: int) -> None:
        self.provider = provider
        self.address = address
        self.port = port  # the bound port once started (port 0 picks a free one)
        self._runner: web.AppRunner | None = None
        self._streams: set[asyncio.Task[Any]] = set()

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/pods", self._pods)
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._container_logs)
        app.router.add_get("/stats/summary", self._stats_summary)
        return app

    async def start(self) -> None:
        self._runner = web.AppRunner(self.build_app(), access_log=None,
                                     handler_cancellation=True,
                                     shutdown_timeout=SHUTDOWN_TIMEOUT)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.address, self.port, reuse_address=True)
        await site.start()
        server = site._server
        if self.port == 0 and server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening; end the log streams still open (a follow would never end)."""
        for task in self._streams:
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- endpoints ------------------------------------------------------------------------

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _pods(self, request: web.Request) -> web.Response:
        """/pods: the pods bound to this node, as a v1 PodList."""
        body = {"kind": "PodList", "apiVersion": "v1", "metadata": {},
                "items": self.provider.running_pods()}
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def _stats_summary(self, request: web.Request) -> web.Response:
        body = await self.provider.stats_summary()
        return web.Response(body=orjson.dumps(body), content_type="application/json")

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


def _container_names(pod: Obj) -> set[str]:
    spec = pod.get("spec") or {}
    return {c.get("name") for kind in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(kind) or []}


def _error(status: int, message: str) -> web.Response:
    """Upstream's kubelet answers errors as one line of plain text."""
    return web.Response(status=status, text=message)
