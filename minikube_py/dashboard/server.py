"""The dashboard's HTTP side: the page, the cluster's changes as Server-Sent Events, and
the trace receiver's answers passed on.

    GET /                      index.html (then static/*.js, *.css: ES modules, no build)
    GET /api/watch             text/event-stream: `event: snapshot` (every object the page
                               draws), then one `data:` line per watch event (hub.py)
    GET /api/traces?resource=pods&namespace=default&name=web
    GET /api/traces/<trace id> the trace receiver's answer, as it gave it
    GET /api/traces?...&follow=true
                               the receiver's spans of the object as JSON lines, then each
                               new one as it comes (the page's "follow" mode), streamed
    GET /healthz

Served over HTTPS only (tls.py: with a client CA, only to the API server's proxy).
Every URL the page uses is relative, so the same page works at / and behind the API
server's service proxy (/api/v1/namespaces/kubernetes-dashboard/services/
https:kubernetes-dashboard:/proxy/).
Server-Sent Events rather than a WebSocket: a plain streamed GET, which the service
proxy passes on as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from pathlib import Path

import aiohttp
import orjson
from aiohttp import web

from minikube_py.client.errors import NotFound
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.dashboard.hub import ClusterHub
from minikube_py.dashboard.tls import allowed_names_middleware, serving_context
from minikube_py.lifecycle import Component

log = logging.getLogger(__name__)
STATIC = Path(__file__).with_name("static")
HEARTBEAT = 15.0  # s between SSE comments, so that a closed tab is noticed and dropped
TRACES_CONFIG_MAP = ("kube-public", "minikube-py-tracing")  # `up` publishes the receiver
TRACE_TIMEOUT = aiohttp.ClientTimeout(total=30)


class Dashboard(Component):
    """The dashboard: informers started, the page served over HTTPS on address:port until
    stopped. `tls`: its context (tls.serving_context; by default a self-signed certificate
    and no client certificate asked); `allowed_names`: the client certificate's CNs let
    in (any, when empty)."""

    def __init__(self, client: Client, address: str = "127.0.0.1", port: int = 9090,
                 traces_url: str = "", tls: ssl.SSLContext | None = None,
                 allowed_names: tuple[str, ...] = ()) -> None:
        self.client = client
        self.address = address
        self.port = port
        self.traces_url = traces_url.rstrip("/")
        self.tls = tls or serving_context(address)
        self.allowed_names = allowed_names
        self.informers = SharedInformerFactory(client)
        self.hub = ClusterHub(self.informers)
        self._serving = asyncio.Event()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[allowed_names_middleware(self.allowed_names)]
                              if self.allowed_names else [])
        app.router.add_get("/", self.index)
        app.router.add_get("/api/watch", self.watch)
        app.router.add_get("/api/traces", self.traces)
        app.router.add_get("/api/traces/{trace_id}", self.traces)
        app.router.add_get("/healthz", self.healthz)
        app.router.add_static("/static", STATIC)
        return app

    async def run(self) -> None:
        self.informers.start()
        runner = web.AppRunner(self.app(), access_log=None)
        try:
            await self.informers.wait_for_cache_sync()
            await runner.setup()
            # open event streams never end by themselves: do not wait for them at stop
            await web.TCPSite(runner, self.address, self.port, shutdown_timeout=1,
                              ssl_context=self.tls).start()
            self.port = runner.addresses[0][1]  # the port the OS chose, for port 0
            log.info("dashboard: serving on https://%s:%d/", self.address, self.port)
            self._serving.set()
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()
            await self.informers.stop()

    async def wait_started(self) -> None:
        await self._serving.wait()

    async def healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def index(self, _: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / "index.html")

    async def watch(self, request: web.Request) -> web.StreamResponse:
        """The snapshot, then every change, as Server-Sent Events until the tab goes."""
        snapshot, queue = self.hub.join()
        response = web.StreamResponse(headers={
            "Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        try:
            await response.prepare(request)
            await response.write(b"event: snapshot\ndata: " + orjson.dumps(snapshot) + b"\n\n")
            while True:
                try:
                    async with asyncio.timeout(HEARTBEAT):
                        message = await queue.get()
                except TimeoutError:
                    await response.write(b": heartbeat\n\n")
                    continue
                if message is None:  # the tab lagged behind and was dropped
                    break
                await response.write(b"data: " + orjson.dumps(message) + b"\n\n")
        except ConnectionResetError:  # a write to a tab that went (its leaving cancels us)
            return response
        finally:
            self.hub.leave(queue)
        return response

    async def traces(self, request: web.Request) -> web.StreamResponse:
        """The trace receiver's answer for one trace, or for every trace naming an object
        (with follow=true: streamed on until the tab stops reading)."""
        base = await self._receiver()
        if not base:
            return _error(503, "this cluster names no trace receiver "
                               f"({'/'.join(TRACES_CONFIG_MAP)} is not there); start the "
                               "dashboard with --traces-url")
        trace_id = request.match_info.get("trace_id")
        url = f"{base}/api/v1/traces/{trace_id}" if trace_id else f"{base}/api/v1/traces"
        params = {} if trace_id else {key: request.query.get(key, "")
                                      for key in ("resource", "namespace", "name")}
        if not trace_id and request.query.get("follow") == "true":
            return await self._follow(request, url, {**params, "follow": "true"}, base)
        try:
            async with aiohttp.ClientSession(timeout=TRACE_TIMEOUT) as session, \
                    session.get(url, params=params) as answer:
                return web.Response(body=await answer.read(), status=answer.status,
                                    content_type="application/json")
        except (aiohttp.ClientError, TimeoutError) as error:
            return _error(502, f"cannot reach the trace receiver at {base}: {error}")

    async def _follow(self, request: web.Request, url: str, params: dict[str, str],
                      base: str) -> web.StreamResponse:
        """The receiver's follow stream, passed on as it comes."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10)
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session, \
                    session.get(url, params=params) as answer:
                if answer.status != 200:
                    return web.Response(body=await answer.read(), status=answer.status,
                                        content_type="application/json")
                response = web.StreamResponse(headers={
                    "Content-Type": "application/x-ndjson", "Cache-Control": "no-cache"})
                await response.prepare(request)
                # the tab leaving cancels this handler (aiohttp), which ends the stream; a
                # write to a closed tab or the receiver stopping ends it here, and the page
                # says so
                with contextlib.suppress(ConnectionResetError, aiohttp.ClientError):
                    async for chunk in answer.content.iter_any():
                        await response.write(chunk)
                return response
        except aiohttp.ClientError as error:
            return _error(502, f"cannot reach the trace receiver at {base}: {error}")

    async def _receiver(self) -> str:
        """--traces-url, else the url `up` published in kube-public/minikube-py-tracing."""
        if self.traces_url:
            return self.traces_url
        namespace, name = TRACES_CONFIG_MAP
        with contextlib.suppress(NotFound):
            found = await self.client.resource("configmaps").get(name, namespace)
            return str((found.get("data") or {}).get("url", "")).rstrip("/")
        return ""


def _error(status: int, message: str) -> web.Response:
    return web.Response(body=orjson.dumps({"code": status, "message": message}),
                        status=status, content_type="application/json")
