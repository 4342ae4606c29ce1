"""The trace receiver: an OTLP/HTTP endpoint that keeps spans for `mkctl trace`.

    POST /v1/traces                   OTLP/HTTP JSON from every component (exporter.py)
                                      -> store.py (bounded, on disk)
    GET  /api/v1/traces/<trace id>    {"traceId", "spans": [...]}: one trace, oldest first
    GET  /api/v1/traces?resource=pods&namespace=default&name=web-1
                                      {"traces": [{"traceId", "spans"}...]}: every trace
                                      whose spans name the object
         ...&follow=true              the same as JSON lines, then each new span of those
                                      traces as it arrives, until the client hangs up
    GET  /healthz

Only the JSON encoding of OTLP is accepted (protobuf gets 415): our components send JSON;
point another OTLP sender at a collector in front of it if it speaks protobuf only.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import orjson
from aiohttp import web

from minikube_py.tracestore.store import SpanStore, object_key
from minikube_py.tracing import otlp

log = logging.getLogger(__name__)
MAX_BODY = 32 * 1024 * 1024


class TraceReceiver:
    def __init__(self, store: SpanStore, address: str = "127.0.0.1", port: int = 4318
                 ) -> None:
        self.store = store
        self.address = address
        self.port = port
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post("/v1/traces", self.receive)
        app.router.add_get("/api/v1/traces/{trace_id}", self.one_trace)
        app.router.add_get("/api/v1/traces", self.object_traces)
        app.router.add_get("/healthz", self.healthz)
        return app

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        # followers' streams never end by themselves: do not wait for them at stop
        await web.TCPSite(self._runner, self.address, self.port, shutdown_timeout=1).start()
        self.port = self._runner.addresses[0][1]  # the port the OS chose, for port 0

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def run(self) -> None:
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    async def healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def receive(self, request: web.Request) -> web.Response:
        """ExportTraceServiceRequest in, ExportTraceServiceResponse out."""
        if request.content_type != "application/json":
            return _error(415, f"unsupported content type {request.content_type!r}: this "
                               "receiver takes OTLP/HTTP JSON (application/json)")
        try:
            records = otlp.decode(orjson.loads(await request.read()))
        except (orjson.JSONDecodeError, ValueError) as error:
            return _error(400, f"not an OTLP/HTTP JSON trace request: {error}")
        self.store.add(records)
        return web.json_response({}, dumps=lambda o: orjson.dumps(o).decode())

    async def one_trace(self, request: web.Request) -> web.Response:
        trace_id = request.match_info["trace_id"].lower()
        spans = self.store.trace(trace_id)
        if not spans:
            return _error(404, f"trace {trace_id} not found")
        return _json({"traceId": trace_id, "spans": spans})

    async def object_traces(self, request: web.Request) -> web.StreamResponse:
        resource = request.query.get("resource", "")
        name = request.query.get("name", "")
        namespace = request.query.get("namespace", "")
        if not resource or not name:
            return _error(400, "resource and name are required "
                               "(?resource=pods&namespace=default&name=web-1)")
        traces = self.store.traces_of(resource, namespace, name)
        found = [{"traceId": t, "spans": self.store.trace(t)} for t in traces]
        if request.query.get("follow") not in ("true", "1"):
            return _json({"traces": found})
        return await self._follow(request, found, object_key(resource, namespace, name))

    async def _follow(self, request: web.Request, found: list[dict], key: str
                      ) -> web.StreamResponse:
        """What there is, then each new span, one JSON object per line."""
        queue = self.store.follow({t["traceId"] for t in found}, key)
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await response.prepare(request)
        try:
            for trace in found:
                for span in trace["spans"]:
                    await response.write(orjson.dumps(span) + b"\n")
            while True:
                span = await queue.get()
                await response.write(orjson.dumps(span) + b"\n")
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.store.unfollow(queue)
        return response


def _json(body: object, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status,
                        content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return _json({"code": status, "message": message}, status)


def load_store(directory: Path, max_spans: int) -> SpanStore:
    store = SpanStore(directory, max_spans=max_spans)
    store.load()
    log.info("trace receiver: %d spans kept in %s", store.count, directory)
    return store
