"""What every controller is made of: informer handlers that queue keys, and workers that
call `sync(key)` (the shape of upstream's ReplicaSet controller).

    informer event --> handler --> queue.add("ns/name") --> worker --> await sync(key)
                                                                     \\-> failed: retry with
                                                                          backoff (workqueue)

A controller is level-based: `sync` reads the *current* state from the informers'
stores, compares it with what the object asks for, acts, and writes status. It keeps no
memory between calls except expectations (see expectations.py), so it can crash, restart
and carry on from whatever it finds.
"""

from __future__ import annotations

import logging
import time
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import ClassVar

from prometheus_client import CollectorRegistry, Counter

from minikube_py.api import Obj
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import EventHandler, SharedInformer, SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.client.store import object_key
from minikube_py.client.workqueue import (
    ExpectedSyncError as ExpectedSyncError,  # the controllers import it from here
)
from minikube_py.client.workqueue import (
    RateLimitingQueue,
    WorkqueueMetrics,
    log_sync_error,
    run_workers,
)
from minikube_py.lifecycle import Component
from minikube_py.security.pki import KeyPair
from minikube_py.tracing import context as tracing_context
from minikube_py.tracing.tracer import DISABLED, Tracer

log = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class ControllerOptions:
    """Settings of the controller-manager that individual controllers read."""

    node_monitor_grace_period: float = 40.0
    node_monitor_period: float = 5.0
    terminated_pod_gc_threshold: int = 12500
    loadbalancer_ip_range: str = "172.18.255.200-172.18.255.250"
    loadbalancer_class: str | None = None
    resource_quota_sync_period: float = 300.0  # --resource-quota-sync-period (5m)
    root_ca: str = ""  # the PEM of --root-ca-file, which kube-root-ca.crt publishes
    # --cluster-signing-cert-file/-key-file: the CA csrsigning signs with (None: it does not)
    cluster_signing_ca: KeyPair | None = None
    cluster_signing_duration: float = 365 * 24 * 3600.0  # --cluster-signing-duration (8760h)
    # --horizontal-pod-autoscaler-*: how often HPAs are synced, the downscale
    # stabilization window, the usage ratio tolerance, and how CPU samples of starting pods
    # are trusted (upstream's defaults: 15s, 5m, 0.1, 5m, 30s)
    horizontal_pod_autoscaler_sync_period: float = 15.0
    horizontal_pod_autoscaler_downscale_stabilization: float = 300.0
    horizontal_pod_autoscaler_tolerance: float = 0.1
    horizontal_pod_autoscaler_cpu_initialization_period: float = 300.0
    horizontal_pod_autoscaler_initial_readiness_delay: float = 30.0


@dataclass
class ControllerContext:
    """What the controller-manager gives each controller (upstream's ControllerContext)."""

    client: Client
    informers: SharedInformerFactory
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    options: ControllerOptions = field(default_factory=ControllerOptions)
    clock: Callable[[], datetime] = utc_now  # tests of time (CronJob) pass a fake clock
    tracer: Tracer = DISABLED  # --tracing-endpoint: spans of syncs (docs/tracing.md)
    _workqueue_metrics: WorkqueueMetrics | None = None
    _sync_metric: Counter | None = None
    _recorders: dict[str, EventRecorder] = field(default_factory=dict)

    def recorder_for(self, component: str) -> EventRecorder:
        """The event recorder of one controller: Events show it in `source.component`."""
        if component not in self._recorders:
            self._recorders[component] = EventRecorder(self.client, component)
        return self._recorders[component]

    async def stop_recorders(self) -> None:
        for recorder in self._recorders.values():
            await recorder.stop()

    @property
    def workqueue_metrics(self) -> WorkqueueMetrics:
        if self._workqueue_metrics is None:
            self._workqueue_metrics = WorkqueueMetrics(self.registry)
        return self._workqueue_metrics

    @property
    def sync_metric(self) -> Counter:
        if self._sync_metric is None:
            self._sync_metric = Counter(
                "controller_syncs", "Syncs run per controller, by result",
                ["controller", "result"], registry=self.registry)
        return self._sync_metric


class Controller(Component):
    """A control loop. Subclasses set `name`, wire informers in `__init__`, write `sync`."""

    name: ClassVar[str] = ""
    workers: ClassVar[int] = 5
    # The `source.component` of this controller's Events, as upstream names it (what
    # `kubectl describe` shows under "From"); default: "<name>-controller".
    event_source: ClassVar[str] = ""
    # Whether `--controllers=*` runs it; upstream's ControllersDisabledByDefault
    # (bootstrapsigner, tokencleaner) run only when named.
    enabled_by_default: ClassVar[bool] = True

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.client = ctx.client
        self.recorder = ctx.recorder_for(self.event_source or f"{self.name}-controller")
        self.queue = RateLimitingQueue(self.name, metrics=ctx.workqueue_metrics)
        # the informer of the kind this controller syncs: its objects' traces continue
        self.traced: SharedInformer | None = None
        # key -> the trace of the object of another kind whose change queued it last
        self._causes: dict[str, tracing_context.SpanContext] = {}

    # -- wiring helpers ----------------------------------------------------------------------

    def informer(self, plural: str, group: str | None = None) -> SharedInformer:
        """The process-wide shared informer for a resource."""
        return self.ctx.informers.informer(plural, group)

    def watch_own_kind(self, informer: SharedInformer) -> None:
        """Queue the object's own key on every add, update and delete."""
        self.traced = informer
        informer.add_event_handler(EventHandler(
            on_add=self.enqueue, on_update=lambda _old, new: self.enqueue(new),
            on_delete=self.enqueue))

    def enqueue(self, obj: Obj) -> None:
        self.queue.add(object_key(obj))

    def enqueue_caused_by(self, key: str, cause: Obj) -> None:
        """Queue `key` because `cause`, an object of another kind, changed (a pod of a
        Service): the sync continues the cause's trace, when it carries one, rather than
        the synced object's own, so the pod's trace shows what its change led to."""
        if self.ctx.tracer.enabled and (context := tracing_context.of_object(cause)):
            self._causes[key] = context
        self.queue.add(key)

    def enqueue_after(self, obj: Obj, delay: float) -> None:
        self.queue.add_after(object_key(obj), delay)

    def now(self) -> datetime:
        return self.ctx.clock()

    # -- the loop ----------------------------------------------------------------------------

    @abstractmethod
    async def sync(self, key: str) -> None:
        """Reconcile one object: make the world match what it asks for. Idempotent."""

    async def run(self, workers: int | None = None) -> None:
        """Run workers until cancelled (the informers must have synced first)."""
        await run_workers(self.queue, workers or self.workers, self._counted_sync,
                          self._handle_error)

    async def _counted_sync(self, key: str) -> None:
        """sync(key), counted in controller_syncs by its result, its time logged."""
        started = time.monotonic()
        try:
            await self._traced_sync(key)
        except Exception:
            self._synced(key, "error", started)
            raise
        self._synced(key, "success", started)

    def _synced(self, key: str, result: str, started: float) -> None:
        self.ctx.sync_metric.labels(self.name, result).inc()
        log.debug("%s: synced %s in %.1f ms", self.name, key,
                  (time.monotonic() - started) * 1000)

    async def _traced_sync(self, key: str) -> None:
        """sync(key), as a span of the object's trace when it carries one (or of the trace
        of what queued it, enqueue_caused_by): the writes the sync makes (a ReplicaSet's
        pods) carry the trace on (tracing/context.py)."""
        tracer = self.ctx.tracer
        traced = self.traced_object(key) if tracer.enabled else None
        plural, obj = traced if traced is not None else ("", None)
        parent = self._causes.pop(key, None) if self._causes else None
        if parent is None and obj is not None:
            parent = tracing_context.of_object(obj)
        if parent is None or traced is None:
            await self.sync(key)
            return
        namespace, _, name = key.rpartition("/")
        attributes = {"k8s.resource": plural,
                      "k8s.namespace": namespace, "k8s.name": name, "controller": self.name}
        if obj is not None and (uid := obj["metadata"].get("uid")):
            attributes["k8s.uid"] = uid
        with tracer.span(f"{self.name} sync", parent=parent, **attributes):
            await self.sync(key)

    def traced_object(self, key: str) -> tuple[str, Obj | None] | None:
        """The resource (plural) of the key and its object in the cache, whose trace a sync
        of the key continues; None: the sync is not traced. By default the object of
        `traced`, the kind the controller syncs."""
        if self.traced is None:
            return None
        return self.traced.resource.resource.plural, self.traced.store.get(key)

    def _handle_error(self, key: str, error: Exception) -> None:
        """Say why the key failed (workqueue.log_sync_error); it is retried with backoff."""
        log_sync_error(log, self.name, self.queue, key, error)
