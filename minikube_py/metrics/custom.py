"""The custom and external metrics adapter: pods' own metrics, served as
`custom.metrics.k8s.io/v1beta2` and `external.metrics.k8s.io/v1beta1` (the role of
upstream's example adapters, such as prometheus-adapter with its default rules).

    every --metric-resolution, for each Running pod annotated prometheus.io/scrape: "true"
      GET http://<podIP>:<prometheus.io/port><prometheus.io/path, default /metrics>
      keep its last two readings (Prometheus text format)
    a series is a sample name and its labels; what is served of it:
      a gauge                         its last value
      a counter (name ending _total)  its rate per second between the last two readings,
                                      named without _total (http_requests_total ->
                                      http_requests), as prometheus-adapter's default rule
    custom.metrics.k8s.io/v1beta2 (MetricValueList), ?metricLabelSelector= on series labels:
      /namespaces/{ns}/pods/{name|*}/{metric}    per pod (?labelSelector= on pod labels):
                                                 the sum of the pod's matching series
      /namespaces/{ns}/{resource}/{name}/{metric}  an object (resource as the client names
                                                 it: services, deployments.apps): the sum of
                                                 the namespace's series labelled <singular
                                                 resource>=<name> (service="web")
      /namespaces/{ns}/metrics/{metric}          the namespace: the sum of all its series
    external.metrics.k8s.io/v1beta1 (ExternalMetricValueList):
      /namespaces/{ns}/{metric}?labelSelector=   each matching series of the namespace's pods

A metric nobody has is a 404 NotFound and a bad selector a 400 BadRequest, with the
messages of upstream's custom-metrics-apiserver library.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

import aiohttp
import orjson
from aiohttp import web

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339
from minikube_py.api.quantity import canonical_quantity
from minikube_py.api.resources import RESOURCES, Resource
from minikube_py.api.selectors import LabelSelector, SelectorError, parse_label_selector
from minikube_py.metrics.scrape import LABEL, SAMPLE

log = logging.getLogger(__name__)

CUSTOM_GROUP, CUSTOM_VERSION = "custom.metrics.k8s.io", "v1beta2"
EXTERNAL_GROUP, EXTERNAL_VERSION = "external.metrics.k8s.io", "v1beta1"
CUSTOM_PREFIX = f"/apis/{CUSTOM_GROUP}/{CUSTOM_VERSION}"
EXTERNAL_PREFIX = f"/apis/{EXTERNAL_GROUP}/{EXTERNAL_VERSION}"
SCRAPE = "prometheus.io/scrape"
PORT = "prometheus.io/port"
PATH = "prometheus.io/path"

SeriesKey = tuple[str, tuple[tuple[str, str], ...]]  # (sample name, sorted labels)


@dataclass
class Reading:
    """One scrape of one pod: every sample's value, and when it was taken."""

    at: float
    samples: dict[SeriesKey, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Series:
    """One served series: its metric name, labels, value, time and window (seconds)."""

    metric: str
    labels: dict[str, str]
    value: float
    at: float
    window: int | None = None


def parse_exposition(text: str, now: float) -> Reading:
    """A pod's Prometheus text as one reading (comments, NaN and infinities left out)."""
    reading = Reading(now)
    for line in text.splitlines():
        line = line.strip()
        match = SAMPLE.match(line)
        if not match or line.startswith("#"):
            continue
        name, labels_text, value_text, _ = match.groups()
        try:
            value = float(value_text)
        except ValueError:
            continue
        if math.isfinite(value):
            labels = tuple(sorted(LABEL.findall(labels_text or "")))
            reading.samples[(name, labels)] = value
    return reading


def served_series(old: Reading | None, new: Reading) -> list[Series]:
    """The series a pod's last two readings serve: gauges as they are, counters as rates."""
    found = []
    for (name, labels), value in new.samples.items():
        if not name.endswith("_total"):
            found.append(Series(name, dict(labels), value, new.at))
            continue
        before = old.samples.get((name, labels)) if old else None
        if old is None or before is None or value < before or new.at <= old.at:
            continue  # no rate yet, or the counter was reset
        rate = (value - before) / (new.at - old.at)
        found.append(Series(name.removesuffix("_total"), dict(labels), rate, new.at,
                            max(1, round(new.at - old.at))))
    return found


def quantity(value: float) -> str:
    """A value as a quantity of milli-units (resource.NewMilliQuantity's String)."""
    return canonical_quantity(f"{round(value * 1000)}m")


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    return web.Response(body=orjson.dumps(body) + b"\n", status=code,
                        content_type="application/json")


def _json(body: Obj) -> web.Response:
    return web.Response(body=orjson.dumps(body) + b"\n", content_type="application/json")


def metric_not_found(group_resource: str, metric: str, name: str = "") -> web.Response:
    """NewMetricNotFoundError / NewMetricNotFoundForError."""
    target = f"{group_resource} {name}" if name else group_resource
    return _status(404, "NotFound", f"the server could not find the metric {metric} for "
                                    f"{target}")


def resource_for(name: str) -> Resource | None:
    """A namespaced resource by its GroupResource string ("services", "deployments.apps");
    a plural alone finds the core group's first, then any group's."""
    plural, _, group = name.partition(".")
    namespaced = [r for r in RESOURCES if r.plural == plural and r.namespaced]
    if group:
        return next((r for r in namespaced if r.group == group), None)
    return next((r for r in namespaced if not r.group), None) or next(iter(namespaced), None)


def _selector(request: web.Request, parameter: str) -> LabelSelector:
    return parse_label_selector(request.query.get(parameter, ""))


class CustomMetricsAdapter:
    """Scrapes annotated pods and serves their series as custom and external metrics."""

    def __init__(self) -> None:
        self.readings: dict[tuple[str, str], tuple[Reading | None, Reading]] = {}
        self.pods: dict[tuple[str, str], Obj] = {}

    # -- scraping -------------------------------------------------------------------------

    async def scrape_pods(self, session: aiohttp.ClientSession, pods: list[Obj],
                          now: float) -> None:
        """One round: every annotated Running pod with an IP; the gone ones forgotten."""
        targets = {}
        for pod in pods:
            meta, status = pod["metadata"], pod.get("status") or {}
            annotations = meta.get("annotations") or {}
            if annotations.get(SCRAPE) != "true" or status.get("phase") != "Running" or (
                    not status.get("podIP")):
                continue
            key = (meta["namespace"], meta["name"])
            targets[key] = pod
        self.pods = targets
        for key in set(self.readings) - set(targets):
            del self.readings[key]
        await asyncio.gather(*(self.scrape(session, key, pod, now)
                               for key, pod in targets.items()))

    async def scrape(self, session: aiohttp.ClientSession, key: tuple[str, str], pod: Obj,
                     now: float) -> None:
        annotations = pod["metadata"].get("annotations") or {}
        port = annotations.get(PORT) or next(
            (str(p["containerPort"]) for c in (pod.get("spec") or {}).get("containers") or ()
             for p in c.get("ports") or () if p.get("containerPort")), "80")
        path = annotations.get(PATH) or "/metrics"
        url = f"http://{pod['status']['podIP']}:{port}/{path.lstrip('/')}"
        try:
            async with session.get(url, ssl=False) as answer:
                if answer.status != 200:
                    raise aiohttp.ClientError(f"status {answer.status}")
                text = await answer.text()
        except (aiohttp.ClientError, TimeoutError, OSError) as err:
            log.info("scraping pod %s/%s at %s: %s", *key, url, err)
            return
        latest = parse_exposition(text, now)
        old = self.readings.get(key)
        self.readings[key] = (old[1] if old else None, latest)

    def series(self, namespace: str) -> dict[str, list[Series]]:
        """Each pod's served series in the namespace, by pod name."""
        return {pod: served_series(old, new)
                for (ns, pod), (old, new) in sorted(self.readings.items()) if ns == namespace}

    def metric_names(self) -> list[str]:
        return sorted({s.metric for old, new in self.readings.values()
                       for s in served_series(old, new)})

    # -- serving --------------------------------------------------------------------------

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get(f"/apis/{CUSTOM_GROUP}", self._custom_group)
        app.router.add_get(CUSTOM_PREFIX, self._custom_resources)
        app.router.add_get(f"{CUSTOM_PREFIX}/namespaces/{{namespace}}/metrics/{{metric}}",
                           self._namespace_metric)
        app.router.add_get(f"{CUSTOM_PREFIX}/namespaces/{{namespace}}/pods/{{name}}/{{metric}}",
                           self._pod_metric)
        app.router.add_get(
            f"{CUSTOM_PREFIX}/namespaces/{{namespace}}/{{resource}}/{{name}}/{{metric}}",
            self._object_metric)
        app.router.add_get(f"/apis/{EXTERNAL_GROUP}", self._external_group)
        app.router.add_get(EXTERNAL_PREFIX, self._external_resources)
        app.router.add_get(f"{EXTERNAL_PREFIX}/namespaces/{{namespace}}/{{metric}}",
                           self._external_metric)

    @staticmethod
    def _group(group: str, version: str) -> web.Response:
        entry = {"groupVersion": f"{group}/{version}", "version": version}
        return _json({"kind": "APIGroup", "apiVersion": "v1", "name": group,
                      "versions": [entry], "preferredVersion": entry})

    async def _custom_group(self, request: web.Request) -> web.Response:
        return self._group(CUSTOM_GROUP, CUSTOM_VERSION)

    async def _external_group(self, request: web.Request) -> web.Response:
        return self._group(EXTERNAL_GROUP, EXTERNAL_VERSION)

    async def _custom_resources(self, request: web.Request) -> web.Response:
        """The metrics on offer, as resource "pods/<metric>" and "namespaces/<metric>"."""
        resources = [{"name": f"{plural}/{metric}", "singularName": "", "namespaced": plural
                      != "namespaces", "kind": "MetricValueList", "verbs": ["get"]}
                     for metric in self.metric_names() for plural in ("pods", "namespaces")]
        return _json({"kind": "APIResourceList", "apiVersion": "v1",
                      "groupVersion": f"{CUSTOM_GROUP}/{CUSTOM_VERSION}",
                      "resources": resources})

    async def _external_resources(self, request: web.Request) -> web.Response:
        resources = [{"name": metric, "singularName": "", "namespaced": True,
                      "kind": "ExternalMetricValueList", "verbs": ["get"]}
                     for metric in self.metric_names()]
        return _json({"kind": "APIResourceList", "apiVersion": "v1",
                      "groupVersion": f"{EXTERNAL_GROUP}/{EXTERNAL_VERSION}",
                      "resources": resources})

    @staticmethod
    def _value(kind: str, namespace: str, name: str, api_version: str, metric: str,
               metric_selector: LabelSelector, found: list[Series]) -> Obj:
        """One MetricValue: the sum of the series found for the object."""
        value: Obj = {
            "describedObject": {"kind": kind, "namespace": namespace, "name": name,
                                "apiVersion": api_version},
            "metric": {"name": metric},
            "timestamp": rfc3339(datetime.fromtimestamp(max(s.at for s in found), UTC)),
            "value": quantity(sum(s.value for s in found))}
        if not metric_selector.empty():
            value["metric"]["selector"] = _selector_object(metric_selector)
        windows = [s.window for s in found if s.window is not None]
        if windows:
            value["windowSeconds"] = max(windows)
        return value

    @staticmethod
    def _value_list(items: list[Obj]) -> web.Response:
        return _json({"kind": "MetricValueList",
                      "apiVersion": f"{CUSTOM_GROUP}/{CUSTOM_VERSION}",
                      "metadata": {}, "items": items})

    async def _pod_metric(self, request: web.Request) -> web.Response:
        """GetForObjects / GetForObject of pods: each pod's sum of its matching series."""
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        metric = request.match_info["metric"]
        try:
            selector = _selector(request, "labelSelector")
            metric_selector = _selector(request, "metricLabelSelector")
        except SelectorError as err:
            return _status(400, "BadRequest", str(err))
        items = []
        for pod, served in self.series(namespace).items():
            if name != "*" and pod != name:
                continue
            labels = (self.pods.get((namespace, pod), {}).get("metadata") or {}).get(
                "labels") or {}
            if name == "*" and not selector.matches(labels):
                continue
            found = [s for s in served
                     if s.metric == metric and metric_selector.matches(s.labels)]
            if found:
                items.append(self._value("Pod", namespace, pod, "/v1", metric,
                                         metric_selector, found))
        if not items:
            return metric_not_found("pods", metric, "" if name == "*" else name)
        return self._value_list(items)

    async def _object_metric(self, request: web.Request) -> web.Response:
        """GetForObject of any other namespaced object: the namespace's series labelled
        with the object's singular resource name."""
        namespace, plural = request.match_info["namespace"], request.match_info["resource"]
        name, metric = request.match_info["name"], request.match_info["metric"]
        try:
            metric_selector = _selector(request, "metricLabelSelector")
        except SelectorError as err:
            return _status(400, "BadRequest", str(err))
        resource = resource_for(plural)
        if resource is None:
            return metric_not_found(plural, metric, name)
        group_resource = f"{resource.plural}.{resource.group}" if resource.group else (
            resource.plural)
        label = resource.singular_name
        found = [s for served in self.series(namespace).values() for s in served
                 if s.metric == metric and s.labels.get(label) == name
                 and metric_selector.matches(s.labels)]
        if not found:
            return metric_not_found(group_resource, metric, name)
        api_version = resource.group_version if resource.group else f"/{resource.version}"
        return self._value_list([self._value(resource.kind, namespace, name, api_version,
                                             metric, metric_selector, found)])

    async def _namespace_metric(self, request: web.Request) -> web.Response:
        """GetForObject of a namespace (root-scoped): the sum of all its series."""
        namespace, metric = request.match_info["namespace"], request.match_info["metric"]
        try:
            metric_selector = _selector(request, "metricLabelSelector")
        except SelectorError as err:
            return _status(400, "BadRequest", str(err))
        found = [s for served in self.series(namespace).values() for s in served
                 if s.metric == metric and metric_selector.matches(s.labels)]
        if not found:
            return metric_not_found("namespaces", metric, namespace)
        return self._value_list([self._value("Namespace", "", namespace, "/v1", metric,
                                             metric_selector, found)])

    async def _external_metric(self, request: web.Request) -> web.Response:
        """The external metrics API's List: every matching series, one item each."""
        namespace, metric = request.match_info["namespace"], request.match_info["metric"]
        try:
            selector = _selector(request, "labelSelector")
        except SelectorError as err:
            return _status(400, "BadRequest", str(err))
        items = []
        for served in self.series(namespace).values():
            for s in served:
                if s.metric == metric and selector.matches(s.labels):
                    item: Obj = {"metricName": metric, "metricLabels": s.labels,
                                 "timestamp": rfc3339(datetime.fromtimestamp(s.at, UTC)),
                                 "value": quantity(s.value)}
                    if s.window is not None:
                        item["window"] = s.window
                    items.append(item)
        if not items:
            return _status(404, "NotFound", f"the server could not find the metric {metric} "
                                            "for provided labels")
        return _json({"kind": "ExternalMetricValueList",
                      "apiVersion": f"{EXTERNAL_GROUP}/{EXTERNAL_VERSION}",
                      "metadata": {}, "items": items})


def _selector_object(selector: LabelSelector) -> Obj:
    """The metric selector of a MetricValue as metav1.ParseToLabelSelector makes it:
    equalities in matchLabels, the rest in matchExpressions (!= as NotIn)."""
    labels: dict[str, str] = {}
    expressions: list[Obj] = []
    operators = {"in": "In", "notin": "NotIn", "!=": "NotIn", "exists": "Exists",
                 "!": "DoesNotExist"}
    for requirement in selector.requirements:
        if requirement.operator in ("=", "=="):
            labels[requirement.key] = requirement.values[0]
        elif requirement.operator in operators:
            expression: Obj = {"key": requirement.key,
                               "operator": operators[requirement.operator]}
            if requirement.values:
                expression["values"] = sorted(requirement.values)
            expressions.append(expression)
    found: Obj = {}
    if labels:
        found["matchLabels"] = labels
    if expressions:
        found["matchExpressions"] = expressions
    return found
