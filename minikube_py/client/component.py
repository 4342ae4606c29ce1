"""What every component process around the API server shares: its flags, its API
client, its /healthz and /metrics endpoint, and how it runs and stops (SIGTERM,
leadership lost)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import uvloop
from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.kubeconfig import KubeconfigError
from minikube_py.client.leaderelection import LeadershipLost
from minikube_py.client.logs import add_verbosity_flag, setup_logging
from minikube_py.client.rest import Client

log = logging.getLogger(__name__)

# The informer caches hold every object as dicts; objects decoded from JSON form no
# reference cycles, so collect rarely: a full collection walks them all and stalls the
# loop (the API server's watch caches likewise). gc.set_threshold's three numbers.
GC_THRESHOLDS = (50_000, 20, 100)


def component_parser(prog: str, description: str, *, port: int,
                     port_help: str | None = None) -> argparse.ArgumentParser:
    """The flags every component takes: --kubeconfig, --bind-address, --port and -v."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--bind-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=port, help=port_help)
    add_verbosity_flag(parser)
    return parser


def component_client(name: str, args: argparse.Namespace, *, user_agent: str,
                     trace_context: bool = False) -> Client:
    """Log at -v, and the API client of --kubeconfig (`trace_context`: the objects come
    with their trace context); a kubeconfig that will not do exits with one line."""
    setup_logging(args.v)
    try:
        return Client.from_kubeconfig(args.kubeconfig, user_agent=user_agent,
                                      trace_context=trace_context)
    except KubeconfigError as error:
        sys.exit(f"{name}: {error}")


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


@contextlib.asynccontextmanager
async def serving_informers(name: str, args: argparse.Namespace,
                            informers: SharedInformerFactory) -> AsyncIterator[None]:
    """/healthz and /metrics on --bind-address:--port (a port taken exits with one line),
    then the informers started and synced; both stopped on the way out."""
    try:
        health = await serve_health(CollectorRegistry(), args.bind_address, args.port)
    except OSError as error:
        sys.exit(f"{name}: cannot listen on {args.bind_address}:{args.port}: {error}")
    try:
        informers.start()
        await informers.wait_for_cache_sync()
        yield
    finally:
        await informers.stop()
        await health.cleanup()


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

    gc.set_threshold(*GC_THRESHOLDS)
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
