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

from minikube_py.client.informer import EventHandler, SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.client.retry import on_error
from minikube_py.dns.publish import publish
from minikube_py.dns.records import ClusterRecords
from minikube_py.dns.server import DNSServer, DNSStats
from minikube_py.lifecycle import Component

log = logging.getLogger(__name__)


class ClusterDNS(Component):
    """Cluster DNS: run() syncs its informers, listens, publishes the kube-dns endpoint and
    answers until cancelled (`async with ClusterDNS(...) as dns:` in the background)."""

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
        self._serving = asyncio.Event()

    async def run(self) -> None:
        """Sync the informers, listen, publish the kube-dns endpoint, then answer until
        cancelled; stop listening and watching on the way out."""
        self.informers.start()
        listening = False
        try:
            await self.informers.wait_for_cache_sync()
            await self.server.start(self.bind_address, self.port)
            listening = True
            self.port = self.server.port
            log.info("serving DNS for %s on %s:%d (udp, tcp)", self.records.zone,
                     self.bind_address, self.port)
            if self.advertise_address:
                await on_error("publishing the kube-dns endpoint", lambda: publish(
                    self.client, self.service_ip, self.advertise_address, self.port,
                    self.metrics_port))
            self._serving.set()
            await asyncio.Event().wait()
        finally:
            if listening:
                await self.server.stop()
            await self.informers.stop()

    async def wait_started(self) -> None:
        """Listening, and the kube-dns endpoint published."""
        await self._serving.wait()
