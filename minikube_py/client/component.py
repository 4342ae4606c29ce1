"""What every component process around the API server shares: its /healthz and
/metrics endpoint, and how it runs and stops (SIGTERM, leadership lost)."""

from __future__ import annotations

import asyncio
import gc
import signal
import sys
from collections.abc import Awaitable, Callable

import uvloop
from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from minikube_py.client.leaderelection import LeadershipLost


async def serve_health(registry: CollectorRegistry, address: str, port: int
                       ) -> web.AppRunner:
    """/healthz ("ok") and /metrics (Prometheus text) on address:port; cleanup() stops it."""

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, address, port).start()
    return runner


def run_component(name: str, main: Callable[[], Awaitable[None]]) -> None:
    """Run a component's main coroutine until it ends, SIGTERM arrives (a clean stop:
    leases are handed over), or its leadership is lost (exit 1, as upstream's do)."""

    async def run() -> None:
        main_task = asyncio.current_task()
        assert main_task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
        await main()

    # The informer caches hold every object as dicts; objects decoded from JSON form no
    # reference cycles, so collect rarely: a full collection walks them all and stalls
    # the loop (the API server does the same, see apiserver/__main__.py).
    gc.set_threshold(50_000, 20, 100)
    try:
        uvloop.run(run())
    except LeadershipLost as lost:
        sys.exit(f"{name}: leaderelection lost: {lost}")
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
