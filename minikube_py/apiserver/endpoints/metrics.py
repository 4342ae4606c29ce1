"""Prometheus metrics of the API server, named as upstream's (served at /metrics)."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from minikube_py.api.resources import CONNECT_SUBRESOURCES
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo
from minikube_py.apiserver.storage.etcd import EtcdClient

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 5.0, 10.0, 60.0)


class PlainCounter:
    """A labelled counter kept in a plain dict, turned into Prometheus samples on scrape.

    prometheus_client's Counter and Histogram take a lock on every update, which cost
    about 5% of a GET's CPU; everything here runs on the event loop's thread, so the
    per-request metrics are plain additions instead.
    """

    def __init__(self, name: str, documentation: str, labelnames: list[str],
                 registry: CollectorRegistry) -> None:
        self.name, self.documentation, self.labelnames = name, documentation, labelnames
        self.values: dict[tuple[str, ...], float] = {}
        registry.register(self)

    def inc(self, labels: tuple[str, ...], amount: float = 1) -> None:
        self.values[labels] = self.values.get(labels, 0) + amount

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, value in self.values.items():
            family.add_metric(list(labels), value)
        yield family


class PlainHistogram:
    """A labelled histogram kept as plain bucket counts (see PlainCounter)."""

    def __init__(self, name: str, documentation: str, labelnames: list[str],
                 buckets: tuple[float, ...], registry: CollectorRegistry) -> None:
        self.name, self.documentation, self.labelnames = name, documentation, labelnames
        self.bounds = buckets
        # labels -> [count in bucket 0, ..., count above the last bound, sum of values]
        self.values: dict[tuple[str, ...], list[float]] = {}
        registry.register(self)

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        counts = self.values.get(labels)
        if counts is None:
            counts = self.values[labels] = [0] * (len(self.bounds) + 2)
        counts[bisect_left(self.bounds, value)] += 1  # the first bucket with value <= le
        counts[-1] += value

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        edges = [floatToGoString(bound) for bound in self.bounds] + ["+Inf"]
        for labels, counts in self.values.items():
            cumulative = list(accumulate(counts[:-1]))
            family.add_metric(list(labels), list(zip(edges, cumulative, strict=True)),
                              sum_value=counts[-1])
        yield family


def metric_verb(request: web.BaseRequest, info: RequestInfo) -> str:
    """The verb label of the request metrics, as upstream's CleanVerb reports it: the HTTP
    method, except LIST and WATCH for reads of collections, APPLY for server-side apply and
    CONNECT for streams and proxies."""
    if not info.is_resource_request:
        return request.method
    if info.verb in ("list", "watch"):
        return info.verb.upper()
    if info.subresource in CONNECT_SUBRESOURCES:
        return "CONNECT"
    if request.method == "PATCH" and request.headers.get("Content-Type", "").startswith(
            "application/apply-patch"):
        return "APPLY"
    return request.method


class APIServerMetrics:
    """One registry per server, so several servers in one test process do not collide."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = PlainCounter(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, group, resource, "
            "subresource and HTTP response code.",
            ["verb", "group", "resource", "subresource", "code"],
            self.registry,
        )
        self.request_duration = PlainHistogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, group, resource and "
            "subresource.",
            ["verb", "group", "resource", "subresource"],
            _LATENCY_BUCKETS,
            self.registry,
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
        levels_and_schemas = ["priority_level", "flow_schema"]
        self.flowcontrol_dispatched = Counter(
            "apiserver_flowcontrol_dispatched_requests_total",
            "Number of requests executed by API Priority and Fairness subsystem",
            levels_and_schemas, registry=self.registry)
        self.flowcontrol_rejected = Counter(
            "apiserver_flowcontrol_rejected_requests_total",
            "Number of requests rejected by API Priority and Fairness subsystem",
            [*levels_and_schemas, "reason"], registry=self.registry)
        self.flowcontrol_inqueue = Gauge(
            "apiserver_flowcontrol_current_inqueue_requests",
            "Number of requests currently pending in queues of the API Priority and Fairness "
            "subsystem", levels_and_schemas, registry=self.registry)
        self.flowcontrol_executing = Gauge(
            "apiserver_flowcontrol_current_executing_requests",
            "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution "
            "stage in the API Priority and Fairness subsystem",
            levels_and_schemas, registry=self.registry)
        self.flowcontrol_executing_seats = Gauge(
            "apiserver_flowcontrol_current_executing_seats",
            "Concurrency (number of seats) occupied by the currently executing (initial stage "
            "for a WATCH, any stage otherwise) requests in the API Priority and Fairness "
            "subsystem", levels_and_schemas, registry=self.registry)
        self.flowcontrol_wait_duration = Histogram(
            "apiserver_flowcontrol_request_wait_duration_seconds",
            "Length of time a request spent waiting in its queue",
            [*levels_and_schemas, "execute"],
            buckets=(0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30),
            registry=self.registry)
        self.flowcontrol_nominal_limit = Gauge(
            "apiserver_flowcontrol_nominal_limit_seats",
            "Nominal number of execution seats configured for each priority level",
            ["priority_level"], registry=self.registry)
        self.flowcontrol_current_limit = Gauge(
            "apiserver_flowcontrol_current_limit_seats",
            "current derived number of execution seats available to each priority level",
            ["priority_level"], registry=self.registry)
        self.watch_events = PlainCounter(
            "apiserver_watch_cache_events_received_total",
            "Counter of events received in watch cache broken by resource type.",
            ["resource"],
            self.registry,
        )
        self.consistent_reads = PlainCounter(
            "apiserver_watch_cache_consistent_read_total",
            "Counter for consistent reads from cache.",
            ["fallback", "resource", "success"],
            self.registry,
        )
        self.etcd_duration = PlainHistogram(
            "etcd_request_duration_seconds",
            "Etcd request latency in seconds for each operation and object type.",
            ["operation", "type"],
            _LATENCY_BUCKETS,
            self.registry,
        )

    def observe_request(self, labels: tuple[str, str, str, str], code: int, seconds: float
                        ) -> None:
        """Count one request and its latency."""
        self.requests.inc((*labels, str(code)))
        self.request_duration.observe(labels, seconds)


class InstrumentedEtcd:
    """An EtcdClient whose calls are timed into etcd_request_duration_seconds."""

    _TIMED = ("get", "range", "range_state", "create", "update", "delete", "current_revision",
              "compact")

    def __init__(self, client: EtcdClient, metrics: APIServerMetrics) -> None:
        self._client = client
        self._histogram = metrics.etcd_duration
        self._labels: dict[tuple[str, bytes], tuple[str, str]] = {}
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
                self._histogram.observe(self._label(operation, args),
                                        time.perf_counter() - start)

        return timed

    def _label(self, operation: str, args: tuple[Any, ...]) -> tuple[str, str]:
        """The labels (operation, resource), the resource read from the key."""
        key = args[0] if args and isinstance(args[0], bytes) else b""
        resource = key.split(b"/", 3)[2] if key.count(b"/") >= 2 else b""
        labels = self._labels.get((operation, resource))
        if labels is None:
            labels = self._labels[(operation, resource)] = (operation, resource.decode())
        return labels
