"""The controller-manager: many controllers in one process, sharing informers.

    start /healthz and /metrics
    (with --leader-elect) wait to hold the Lease kube-system/kube-controller-manager
    build each enabled controller: it registers the informers and handlers it needs
    start the shared informers, wait until every cache has synced
    run every controller's workers, until stopped or leadership is lost

Losing leadership stops every controller at once; `python -m minikube_py.controllers`
then exits, as kube-controller-manager does, and its supervisor starts it again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime

from aiohttp import web
from prometheus_client import CollectorRegistry

from minikube_py.client.component import serve_health
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.leaderelection import LeaderElector
from minikube_py.client.rest import Client
from minikube_py.controllers.base import Controller, ControllerContext, ControllerOptions, utc_now
from minikube_py.controllers.clientbuilder import ServiceAccountClients, account_for
from minikube_py.lifecycle import Component
from minikube_py.tracing.setup import close_tracer
from minikube_py.tracing.tracer import DISABLED, Tracer

log = logging.getLogger(__name__)

LEASE_NAME = "kube-controller-manager"


def select_controllers(spec: Sequence[str], available: Sequence[type[Controller]]
                       ) -> list[type[Controller]]:
    """--controllers: `*` enables those on by default, `name` enables one (also one
    disabled by default), `-name` disables one."""
    names = {controller.name: controller for controller in available}
    for item in spec:
        bare = item.removeprefix("-")
        if item != "*" and bare not in names:
            raise ValueError(f"unknown controller {bare!r}; known: {', '.join(sorted(names))}")
    enabled = {name for name, controller in names.items()
               if controller.enabled_by_default} if "*" in spec else set()
    enabled |= {item for item in spec if item != "*" and not item.startswith("-")}
    enabled -= {item[1:] for item in spec if item.startswith("-")}
    return [controller for controller in available if controller.name in enabled]


class ControllerManager(Component):
    """Run a set of controllers against one API server, optionally as elected leader."""

    def __init__(self, client: Client, controllers: Sequence[type[Controller]], *,
                 options: ControllerOptions | None = None,
                 clock: Callable[[], datetime] = utc_now, tracer: Tracer = DISABLED,
                 leader_elect: bool = False, identity: str | None = None,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0,
                 retry_period: float = 2.0, bind_address: str = "127.0.0.1",
                 port: int | None = None, use_service_account_credentials: bool = False
                 ) -> None:
        """use_service_account_credentials: each controller writes as its own
        kube-system ServiceAccount (clientbuilder.py); the shared informers read with
        `client`."""
        self.client = client
        self.controller_classes = list(controllers)
        self.options = options or ControllerOptions()
        self.clock = clock
        self.tracer = tracer
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4()}"
        self.registry = CollectorRegistry()
        self.elector = LeaderElector(
            client, name=LEASE_NAME, identity=self.identity, lease_duration=lease_duration,
            renew_deadline=renew_deadline, retry_period=retry_period,
        ) if leader_elect else None
        self.bind_address = bind_address
        self.port = port
        self.use_service_account_credentials = use_service_account_credentials
        self.controllers: list[Controller] = []
        self.synced = asyncio.Event()  # set once the caches synced and controllers run
        self._runner: web.AppRunner | None = None

    async def run(self) -> None:
        """Serve health and metrics, then run the controllers (as leader, if electing)."""
        await self._serve_health()
        try:
            if self.elector is not None:
                await self.elector.run(self._run_controllers)
            else:
                await self._run_controllers()
        finally:
            if self._runner is not None:
                await self._runner.cleanup()
                self._runner = None
            await close_tracer(self.tracer)

    async def _run_controllers(self) -> None:
        informers = SharedInformerFactory(self.client)
        ctx = ControllerContext(client=self.client, informers=informers,
                                registry=self.registry, options=self.options,
                                clock=self.clock, tracer=self.tracer)
        accounts = (ServiceAccountClients(self.client) if self.use_service_account_credentials
                    else None)
        contexts = [ctx]
        self.controllers = []
        for cls in self.controller_classes:
            own = ctx
            if accounts is not None:
                # the metrics are shared; the client and its event recorders are not
                _ = (ctx.workqueue_metrics, ctx.sync_metric)
                own = dataclasses.replace(
                    ctx, client=await accounts.client_for(account_for(cls.name)),
                    _recorders={})
                contexts.append(own)
            self.controllers.append(cls(own))
        informers.start()
        try:
            await informers.wait_for_cache_sync()
            self.synced.set()
            log.info("caches synced; starting controllers: %s",
                     ", ".join(c.name for c in self.controllers))
            runs = [controller.run() for controller in self.controllers]
            idle = asyncio.Event()  # never set: with no controller enabled, idle until stopped
            await asyncio.gather(*runs, idle.wait())
        finally:
            self.synced.clear()
            await informers.stop()
            for each in contexts:
                await each.stop_recorders()
            if accounts is not None:
                await accounts.close()

    async def wait_started(self) -> None:
        """The caches synced and the controllers run (as leader, when electing)."""
        await self.synced.wait()

    # -- /healthz and /metrics -----------------------------------------------------------------

    async def _serve_health(self) -> None:
        if self.port is not None:
            self._runner = await serve_health(self.registry, self.bind_address, self.port)
