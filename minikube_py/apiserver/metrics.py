"""Prometheus metrics of the API server, named as upstream's (served at /metrics)."""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from minikube_py.apiserver.storage.etcd import EtcdClient

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 5.0, 10.0, 60.0)


class APIServerMetrics:
    """One registry per server, so several servers in one test process do not collide."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, group, resource, "
            "subresource and HTTP response code.",
            ["verb", "group", "resource", "subresource", "code"],
            registry=self.registry,
        )
        self.request_duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, group, resource and "
            "subresource.",
            ["verb", "group", "resource", "subresource"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.inflight = Gauge(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per "
            "request kind in last second.",
            ["request_kind"],
            registry=self.registry,
        )
        self.rejected = Counter(
            "apiserver_dropped_requests_total",
            "Number of requests dropped with 'Try again later' response.",
            ["request_kind"],
            registry=self.registry,
        )
        self.watchers = Gauge(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests (watches, log streams).",
            ["verb", "group", "resource"],
            registry=self.registry,
        )
        self.watch_events = Counter(
            "apiserver_watch_cache_events_received_total",
            "Counter of events received in watch cache broken by resource type.",
            ["resource"],
            registry=self.registry,
        )
        self._request_children: dict[tuple[tuple[str, str, str, str], int], Any] = {}
        self.etcd_duration = Histogram(
            "etcd_request_duration_seconds",
            "Etcd request latency in seconds for each operation and object type.",
            ["operation", "type"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )


    def observe_request(self, labels: tuple[str, str, str, str], code: int, seconds: float
                        ) -> None:
        """Count one request and its latency (label children are cached: lookups are slow)."""
        key = (labels, code)
        children = self._request_children.get(key)
        if children is None:
            children = (self.requests.labels(*labels, str(code)),
                        self.request_duration.labels(*labels))
            self._request_children[key] = children
        children[0].inc()
        children[1].observe(seconds)


class InstrumentedEtcd:
    """An EtcdClient whose calls are timed into etcd_request_duration_seconds."""

    _TIMED = ("get", "range", "create", "update", "delete", "current_revision", "compact")

    def __init__(self, client: EtcdClient, metrics: APIServerMetrics) -> None:
        self._client = client
        self._histogram = metrics.etcd_duration
        self._children: dict[tuple[str, bytes], Any] = {}
        for name in self._TIMED:
            setattr(self, name, self.record_duration(name, getattr(client, name)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def record_duration(self, operation: str, call: Any) -> Any:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await call(*args, **kwargs)
            finally:
                self._child(operation, args).observe(time.perf_counter() - start)

        return timed

    def _child(self, operation: str, args: tuple[Any, ...]) -> Any:
        """The histogram for (operation, resource), the resource read from the key."""
        key = args[0] if args and isinstance(args[0], bytes) else b""
        resource = key.split(b"/", 3)[2] if key.count(b"/") >= 2 else b""
        child = self._children.get((operation, resource))
        if child is None:
            child = self._histogram.labels(operation, resource.decode())
            self._children[(operation, resource)] = child
        return child
