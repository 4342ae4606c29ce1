"""What every component process around the API server shares: its /healthz and
/metrics endpoint, and how it runs and stops (SIGTERM, leadership lost)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable

import uvloop
from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from minikube_py.client.leaderelection import LeadershipLost

log = logging.getLogger(__name__)


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


def run_component(name: str, main: Callable[[], Awaitable[None]], *,
                  event_loop: str = "uvloop") -> None:
    """Run a component's main coroutine until it ends, SIGTERM or SIGINT arrives (a clean
    stop: main is cancelled and releases what it holds, leases are handed over), or its
    leadership is lost (exit 1, as upstream's do).

    A component that gives up (`sys.exit("why")`, leadership lost) says why in one klog
    E line, as upstream's klog.Fatal does, and exits with 1."""

    async def run() -> None:
        main_task = asyncio.current_task()
        assert main_task is not None
        for signum in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(signum, main_task.cancel)
        try:
            await main()
        except LeadershipLost as lost:
            # klog.FlushAndExit, as upstream's OnStoppedLeading: at once, without waiting
            # for the tasks still stopping (asyncio.run would wait for every one of them).
            log.error("%s: leaderelection lost: %s", name, lost)
            logging.shutdown()
            os._exit(1)

    # The informer caches hold every object as dicts; objects decoded from JSON form no
    # reference cycles, so collect rarely: a full collection walks them all and stalls
    # the loop (the API server's watch caches likewise).
    gc.set_threshold(50_000, 20, 100)
    try:
        if event_loop == "uvloop":
            uvloop.run(run())
        else:
            asyncio.run(run())
    except SystemExit as exiting:
        if isinstance(exiting.code, str):
            log.error("%s", exiting.code)
            sys.exit(1)
        raise
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
