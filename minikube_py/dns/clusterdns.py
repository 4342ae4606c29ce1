"""ClusterDNS: the DNS component. Informers keep the records current; the server answers.

    Services, EndpointSlices --informers--> ClusterRecords (records.py)
                                                  ^
    pods' queries (UDP/TCP 53) --> DNSServer -----+  (server.py), other names forwarded
    kube-dns Service + its EndpointSlice <-- publish (publish.py), once at start
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

from minikube_py.client.informer import EventHandler, SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.dns.publish import publish
from minikube_py.dns.records import ClusterRecords
from minikube_py.dns.server import DNSServer, DNSStats

Obj = dict[str, Any]
log = logging.getLogger(__name__)


class ClusterDNS:
    """`async with ClusterDNS(...) as dns:` listens and syncs its informers; `run()` serves
    until `stop()`."""

    def __init__(self, client: Client, *, zone: str = "cluster.local",
                 bind_address: str = "0.0.0.0", port: int = 53,
                 upstreams: Sequence[tuple[str, int]] = (), advertise_address: str = "",
                 service_ip: str = "10.96.0.10", metrics_port: int = 9153,
                 stats: DNSStats | None = None) -> None:
        self.client = client
        self.records = ClusterRecords(zone)
        self.server = DNSServer(self.records, upstreams, stats=stats)
        self.bind_address, self.port = bind_address, port
        self.advertise_address, self.service_ip = advertise_address, service_ip
        self.metrics_port = metrics_port
        self.informers = SharedInformerFactory(client)
        records = self.records
        self.informers.informer("services").add_event_handler(EventHandler(
            on_add=records.set_service, on_update=lambda _, new: records.set_service(new),
            on_delete=records.delete_service))
        self.informers.informer("endpointslices", "discovery.k8s.io").add_event_handler(
            EventHandler(on_add=records.set_slice,
                         on_update=lambda _, new: records.set_slice(new),
                         on_delete=records.delete_slice))
        self._stopped = asyncio.Event()
        self._started = False

    async def __aenter__(self) -> Self:
        """Start: sync the informers, listen, publish the kube-dns endpoint."""
        self.informers.start()
        self._started = True
        try:
            await self.informers.wait_for_cache_sync()
            await self.server.start(self.bind_address, self.port)
            self.port = self.server.port
            log.info("serving DNS for %s on %s:%d (udp, tcp)", self.records.zone,
                     self.bind_address, self.port)
            if self.advertise_address:
                await publish(self.client, self.service_ip, self.advertise_address,
                              self.port, self.metrics_port)
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.stop()

    async def run(self) -> None:
        """Serve until stop()."""
        await self._stopped.wait()

    async def stop(self) -> None:
        """Stop listening and watching; idempotent."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        if getattr(self.server, "port", None) is not None:
            await self.server.stop()
        if self._started:
            await self.informers.stop()
