"""The proxy's HTTP endpoints: its own /healthz, and one server per healthCheckNodePort.

A LoadBalancer Service with externalTrafficPolicy Local only works on nodes that have one
of its endpoints, so the cloud's load balancer asks each node at the Service's
healthCheckNodePort. As upstream's service health server, the proxy answers
200 with {"service": {"namespace", "name"}, "localEndpoints": N, "serviceProxyHealthy": true}
when N > 0, and 503 with the same body when the node has none.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from aiohttp import web

LocalCounts = dict[int, tuple[str, str, int]]
"""healthCheckNodePort -> (namespace, name, local endpoints)."""


def _timestamp(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).isoformat(timespec="microseconds").replace(
        "+00:00", "Z")


async def serve_healthz(address: str, port: int, last_sync: Callable[[], float],
                        sync_period: float, metrics: Callable[[], bytes]) -> web.AppRunner:
    """kube-proxy's /healthz (200 while the last sync is at most two sync periods old,
    else 503) and /metrics, on address:port."""

    async def healthz(request: web.Request) -> web.Response:
        now = time.time()
        updated = last_sync()
        healthy = updated > 0 and now - updated <= 2 * sync_period
        body = {"lastUpdated": _timestamp(updated) if updated else "",
                "currentTime": _timestamp(now), "nodeEligible": True}
        return web.json_response(body, status=200 if healthy else 503)

    async def metrics_page(request: web.Request) -> web.Response:
        return web.Response(body=metrics(), content_type="text/plain", charset="utf-8")

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/livez", healthz)
    app.router.add_get("/metrics", metrics_page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, address, port).start()
    return runner


class ServiceHealthServers:
    """One HTTP server per healthCheckNodePort, started and stopped as Services come and
    go; each answers from the latest local endpoint count."""

    def __init__(self, address: str = "0.0.0.0") -> None:
        self.address = address
        self.counts: LocalCounts = {}
        self._runners: dict[int, web.AppRunner] = {}

    async def update(self, counts: LocalCounts) -> None:
        self.counts = counts
        for port in set(self._runners) - set(counts):
            await self._runners.pop(port).cleanup()
        for port in set(counts) - set(self._runners):
            self._runners[port] = await self._serve(port)

    async def _serve(self, port: int) -> web.AppRunner:
        async def health(request: web.Request) -> web.Response:
            namespace, name, local = self.counts.get(port, ("", "", 0))
            body = {"service": {"namespace": namespace, "name": name},
                    "localEndpoints": local, "serviceProxyHealthy": True}
            return web.json_response(body, status=200 if local > 0 else 503,
                                     headers={"X-Content-Type-Options": "nosniff"})

        app = web.Application()
        app.router.add_get("/{tail:.*}", health)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, self.address, port).start()
        return runner

    async def stop(self) -> None:
        await self.update({})
