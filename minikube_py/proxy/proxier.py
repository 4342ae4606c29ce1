"""The service proxy: keep this node's iptables (or nftables) rules equal to the Services
and their endpoints.

    informers: Services, EndpointSlices, this Node
        | a change marks its Service dirty and asks for a sync
        v
    sync (on a change, at most every --iptables-min-sync-period; else every
          --iptables-sync-period; a full sync every hour and after a failure)
        1. the rules of the Services that changed (serviceports.py -> the mode's
           service_rules); the others' are kept from before
        2. assemble every chain the proxy wants
        3. one transaction with what differs from the last write. A full sync also
           repairs anything changed behind the proxy's back.
             iptables mode (iptables.py, rules.py): one `iptables-restore --noflush`;
               a full sync compares with what iptables-save shows instead, so it writes
               the chains that drifted, deletes stale ones and puts back missing jumps
             nftables mode (nftables.py, nftrules.py): one `nft -f -` on the table
               `ip kube-proxy`; a full sync deletes and rewrites the whole table
        4. UDP conntrack entries of endpoints that went are flushed
        5. the healthCheckNodePort servers learn their local endpoint counts
    a failed write changes nothing (it is atomic): logged with the offending line, and
    retried as a full sync after a backoff.

Everything but steps 1-3 is the same in both modes: which endpoints serve (serviceports.py),
traffic policies, conntrack, health checks, metrics. The mode is the rule writer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Gauge, Histogram

from minikube_py.api import Obj
from minikube_py.client.informer import EventHandler, SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.lifecycle import Component, wait_for_event
from minikube_py.proxy.commands import RestoreError
from minikube_py.proxy.conntrack import Conntrack
from minikube_py.proxy.healthcheck import ServiceHealthServers
from minikube_py.proxy.iptables import IPTablesWriter
from minikube_py.proxy.nftables import NFTablesWriter
from minikube_py.proxy.rules import ProxyConfig
from minikube_py.proxy.serviceports import SERVICE_NAME_LABEL, ServicePort, service_ports
from minikube_py.tracing import context as tracing_context
from minikube_py.tracing.tracer import DISABLED, Tracer

log = logging.getLogger(__name__)

BACKOFF_INITIAL, BACKOFF_MAX = 1.0, 30.0
FULL_SYNC_PERIOD = 3600.0
"""A full sync at least this often (upstream's proxyutil.FullSyncPeriod): it reads the
kernel's tables (iptables mode) or rewrites the whole table (nftables mode), so the
periodic syncs in between write only what changed since the last write."""


class RuleWriter(Protocol):
    """What a proxy mode supplies: one Service's rules, and how all of them are written."""

    mode: str

    def service_rules(self, ports: list[ServicePort]) -> Any:
        """Step 1: the rules of one Service's ports (a fragment only the writer reads)."""

    def chains(self, fragment: Any) -> list[str]:
        """The chains a fragment writes (for traces)."""

    async def write(self, fragments: list[Any], *, full: bool) -> str:
        """Steps 2-3: every Service's fragment, in the given order, written in one
        transaction; the input written ("" when nothing differed). Raises RestoreError
        having changed nothing."""

    def rule_counts(self) -> dict[str, int]:
        """Rules written, by table (for the rules gauge)."""

    async def cleanup(self) -> str:
        """Remove everything the mode wrote; what went, in words."""


MODES: dict[str, type[IPTablesWriter] | type[NFTablesWriter]] = {
    "iptables": IPTablesWriter, "nftables": NFTablesWriter}


class ProxyMetrics:
    """kube-proxy's sync metrics."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.sync_duration = Histogram(
            "kubeproxy_sync_proxy_rules_duration_seconds",
            "SyncProxyRules latency in seconds", registry=registry,
            buckets=(0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512,
                     1.024, 2.048, 4.096, 8.192, 16.384))
        self.rules = Gauge("kubeproxy_sync_proxy_rules_iptables_total",
                           "Total number of iptables rules owned by kube-proxy", ["table"],
                           registry=registry)
        self.last_sync = Gauge("kubeproxy_sync_proxy_rules_last_timestamp_seconds",
                               "The last time proxy rules were successfully synced",
                               registry=registry)


def _service_key(slice_or_service: Obj, *, is_slice: bool) -> str:
    meta = slice_or_service["metadata"]
    name = ((meta.get("labels") or {}).get(SERVICE_NAME_LABEL) if is_slice else meta["name"])
    return f"{meta.get('namespace', '')}/{name}" if name else ""


class Proxier(Component):
    """One node's proxy: run() syncs the rules once the informers have, then keeps them
    in sync (`async with Proxier(client, config):` does it in the background)."""

    def __init__(self, client: Client, config: ProxyConfig, *, netns: str | None = None,
                 mode: str = "iptables", sync_period: float = 30.0, min_sync_period: float = 0.1,
                 registry: CollectorRegistry | None = None, tracer: Tracer = DISABLED) -> None:
        self.config = config
        self.tracer = tracer
        self.writer: RuleWriter = MODES[mode](config, netns)
        self.other_modes: list[RuleWriter] = [
            writer(config, netns) for name, writer in MODES.items() if name != mode]
        self.conntrack = Conntrack(netns)
        self.sync_period, self.min_sync_period = sync_period, min_sync_period
        self.metrics = ProxyMetrics(registry or CollectorRegistry())
        self.health = ServiceHealthServers()
        self.informers = SharedInformerFactory(client)
        self.services = self.informers.informer("services")
        self.slices = self.informers.informer("endpointslices", "discovery.k8s.io")
        self.slices.add_indexers({"service": lambda s: [k] if (
            k := _service_key(s, is_slice=True)) else []})
        self.services.add_event_handler(EventHandler(
            on_add=lambda s: self._dirty(_service_key(s, is_slice=False)),
            on_update=lambda _, s: self._dirty(_service_key(s, is_slice=False)),
            on_delete=lambda s: self._dirty(_service_key(s, is_slice=False))))
        self.slices.add_event_handler(EventHandler(
            on_add=self._slice_changed,
            on_update=lambda old, s: (self._dirty(_service_key(old, is_slice=True)),
                                      self._slice_changed(s)),
            on_delete=lambda s: self._dirty(_service_key(s, is_slice=True))))
        self._dirty_keys: set[str] = set()
        self._causes: dict[str, dict[str, tracing_context.SpanContext]] = {}
        """Service key -> the traces (by id) of the EndpointSlices whose change dirtied it:
        a pod's trace reaches its slice, and so reaches the sync that made it reachable."""
        self._ports: dict[str, list[ServicePort]] = {}
        self._fragments: dict[str, Any] = {}
        self._wake = asyncio.Event()
        self._first_sync = asyncio.Event()
        self.last_sync_time = 0.0
        self.last_full_sync = 0.0
        self.last_sync_wall = 0.0
        """time.time() of the last successful sync (0: none yet), for /healthz."""
        self.syncs = 0

    def _dirty(self, key: str) -> None:
        if key:
            self._dirty_keys.add(key)
            self._wake.set()

    def _slice_changed(self, endpoint_slice: dict[str, Any]) -> None:
        key = _service_key(endpoint_slice, is_slice=True)
        if key and self.tracer.enabled and (
                context := tracing_context.of_object(endpoint_slice)):
            self._causes.setdefault(key, {})[context.trace_id] = context
        self._dirty(key)

    async def run(self) -> None:
        """Start the informers, wait for their caches, write the rules in full, then keep
        them in sync until cancelled. On the way out, stop watching and serving health
        checks; the rules stay, as kube-proxy's do."""
        self.informers.start()
        try:
            await self.informers.wait_for_cache_sync()
            await self.cleanup_other_modes()
            await self.sync(full=True)
            self._first_sync.set()
            await self.sync_loop()
        finally:
            await self.informers.stop()
            await self.health.stop()

    async def cleanup_other_modes(self) -> None:
        """Remove what a proxy in another mode left on this node (as upstream does when the
        mode changes), so two sets of rules never both rewrite the same packets. A mode
        whose tool is not installed left nothing."""
        for other in self.other_modes:
            try:
                log.debug("%s mode: %s", other.mode, await other.cleanup())
            except FileNotFoundError:
                log.debug("%s mode: its tool is not installed", other.mode)
            except (RestoreError, OSError) as error:
                log.warning("could not remove the %s mode's rules: %s", other.mode, error)

    async def wait_started(self) -> None:
        """The first full sync is written."""
        await self._first_sync.wait()

    async def sync_loop(self) -> None:
        """The sync loop (upstream's BoundedFrequencyRunner): a change syncs at most every
        min_sync_period, a quiet proxy syncs every sync_period, a full sync comes every
        FULL_SYNC_PERIOD, and a failure backs off and then syncs in full."""
        backoff = 0.0
        while True:
            if backoff:
                await asyncio.sleep(backoff)
            else:
                next_sync = self.last_sync_time + self.sync_period - time.monotonic()
                if next_sync > 0:
                    await wait_for_event(self._wake, next_sync)
            since = time.monotonic() - self.last_sync_time
            if since < self.min_sync_period:
                await asyncio.sleep(self.min_sync_period - since)
            self._wake.clear()
            full = backoff > 0 or time.monotonic() - self.last_full_sync >= FULL_SYNC_PERIOD
            try:
                await self.sync(full=full)
                backoff = 0.0
            except RestoreError as error:
                backoff = min(max(backoff * 2, BACKOFF_INITIAL), BACKOFF_MAX)
                log.error("syncing proxy rules failed (retrying in %.0f s; the previous "
                          "rules stay): %s", backoff, error)

    async def sync(self, *, full: bool) -> None:
        """syncProxyRules: steps 1-5 of the module's list."""
        started, started_ns = time.monotonic(), time.time_ns()
        dirty, self._dirty_keys = self._dirty_keys, set()
        causes, self._causes = self._causes, {}
        gone_endpoints: list[tuple[ServicePort, str]] = []
        served_again: list[ServicePort] = []
        for key in dirty:
            old_ports = self._ports.get(key) or []
            service = self.services.store.get(key)
            ports = (service_ports([service], self.slices.store.by_index("service", key))
                     if service is not None else [])
            gone_endpoints += _removed_udp_endpoints(old_ports, ports)
            served_again += _udp_ports_gaining_endpoints(old_ports, ports)
            if ports:
                self._ports[key] = ports
                self._fragments[key] = self.writer.service_rules(ports)
            else:
                self._ports.pop(key, None)
                self._fragments.pop(key, None)
        try:
            text = await self.writer.write(
                [self._fragments[key] for key in sorted(self._fragments)], full=full)
        except RestoreError:
            self._dirty_keys |= dirty
            for key, traces in causes.items():
                self._causes.setdefault(key, {}).update(traces)
            raise
        for port, endpoint_ip in gone_endpoints:
            for ip in port.cluster_ips:
                await self.conntrack.flush_udp(ip, endpoint_ip)
        for port in served_again:
            for ip in (*port.cluster_ips, *port.external_ips, *port.load_balancer_ips):
                await self.conntrack.flush_udp(ip)
            if port.node_port:
                await self.conntrack.flush_udp_port(port.node_port)
        await self.health.update(
            {port.health_check_node_port: (port.namespace, port.name,
                                           len(port.local_endpoints(self.config.node_name)))
             for ports in self._ports.values() for port in ports
             if port.external_local and port.health_check_node_port})
        now = time.monotonic()
        self.last_sync_time, self.last_sync_wall = now, time.time()
        if full:
            self.last_full_sync = now
        self.syncs += 1
        self.metrics.sync_duration.observe(now - started)
        self.metrics.last_sync.set_to_current_time()
        for table, count in self.writer.rule_counts().items():
            self.metrics.rules.labels(table).set(count)
        log.debug("synced proxy rules (%s, %d changed lines) in %.1f ms",
                  "full" if full else "partial", text.count("\n"), (now - started) * 1000)
        if self.tracer.enabled:
            self._trace_sync(dirty, causes, started_ns, full, text.count("\n"))

    def _trace_sync(self, services: set[str],
                    causes: dict[str, dict[str, tracing_context.SpanContext]],
                    started_ns: int, full: bool, lines: int) -> None:
        """A span of this sync in the trace of each changed Service that carries one, and
        in the trace of each EndpointSlice change that dirtied it (a pod's trace, when the
        pod's readiness changed the slice): the moment the new endpoints became reachable
        through this node's rules."""
        for key in services:
            service = self.services.store.get(key)
            parents = dict(causes.get(key) or {})
            if service is not None and (own := tracing_context.of_object(service)):
                parents.setdefault(own.trace_id, own)
            if not parents:
                continue
            namespace, _, name = key.partition("/")
            fragment = self._fragments.get(key)
            chains = self.writer.chains(fragment) if fragment is not None else []
            attributes = {
                "k8s.resource": "services", "k8s.namespace": namespace, "k8s.name": name,
                "node": self.config.node_name, "full": full, "changed_lines": lines,
                "chains": chains, "endpoints": sorted({
                    f"{endpoint.ip}:{endpoint.port}" for port in self._ports.get(key) or []
                    for endpoint in port.usable_endpoints()})}
            if service is not None and (uid := service["metadata"].get("uid")):
                attributes["k8s.uid"] = uid
            for parent in parents.values():
                span = self.tracer.start(f"{self.writer.mode} sync", parent=parent,
                                         attributes=attributes)
                span.start_ns = started_ns
                span.end()


def _udp_ports_gaining_endpoints(old: list[ServicePort], new: list[ServicePort]
                                 ) -> list[ServicePort]:
    """UDP ports that have endpoints now and had none before (or did not exist): the
    flows sent to them meanwhile hold conntrack entries without NAT, which would keep
    them from ever reaching the new endpoints."""
    served = {(p.port_name, p.protocol) for p in old if p.usable_endpoints()}
    return [port for port in new if port.protocol == "UDP" and port.usable_endpoints()
            and (port.port_name, port.protocol) not in served]


def _removed_udp_endpoints(old: list[ServicePort], new: list[ServicePort]
                           ) -> list[tuple[ServicePort, str]]:
    """UDP endpoints that served a port before and do not now."""
    still = {(p.port_name, p.protocol, e.ip) for p in new for e in p.usable_endpoints()}
    return [(port, endpoint.ip) for port in old if port.protocol == "UDP"
            for endpoint in port.usable_endpoints()
            if (port.port_name, port.protocol, endpoint.ip) not in still]
