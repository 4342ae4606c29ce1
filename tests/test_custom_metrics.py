"""Custom and external metrics: the metrics server's adapter (minikube_py/metrics/custom.py)
scrapes the pods annotated prometheus.io/scrape, the API server aggregates
custom.metrics.k8s.io/v1beta2 and external.metrics.k8s.io/v1beta1 to it, the official
`kubernetes` client reads them, and the HPA controller scales on Pods, Object and
External metrics with upstream's calculation.

No kubelet runs pods here: a fake pod endpoint answers each test pod's /metrics with the
gauges and counters the test sets (a counter grows at the rate the test sets), and the
pods' status names that endpoint's address as their pod IP.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from minikube_py.api import Obj
from minikube_py.client.rest import Client
from minikube_py.controllers.manager import ControllerManager
from minikube_py.process import free_port
from tests.api_helpers import eventually, serving
from tests.test_hpa_controller import (
    NODE,
    MetricsCluster,
    kubectl,
    rfc3339_ago,
    running_hpa_controller,
    start_metrics_cluster,
)
from tests.test_mkctl_top import host_address

START = time.time() - 3600  # when every fake counter started counting
CUSTOM = "/apis/custom.metrics.k8s.io/v1beta2"
EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1"


@dataclass
class FakePods:
    """/metrics/<namespace>/<pod> of every test pod: gauges as set, counters growing at
    the set rate per second."""

    address: str
    gauges: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    counters: dict[tuple[str, str], list[tuple[str, float]]] = field(default_factory=dict)
    port: int = 0

    def __post_init__(self) -> None:
        self.port = free_port(self.address)

    def exposition(self, key: tuple[str, str]) -> str:
        now = time.time()
        lines = ["# TYPE queue_depth gauge", *self.gauges.get(key, [])]
        lines += [f"{series} {rate * (now - START):.6f}"
                  for series, rate in self.counters.get(key, [])]
        return "\n".join(lines) + "\n"

    def app(self) -> web.Application:
        app = web.Application()

        async def answer(request: web.Request) -> web.Response:
            key = (request.match_info["namespace"], request.match_info["pod"])
            return web.Response(text=self.exposition(key))

        app.router.add_get("/metrics/{namespace}/{pod}", answer)
        return app


@dataclass
class AdapterCluster:
    cluster: MetricsCluster
    pods: FakePods

    @property
    def client(self) -> Client:
        return self.cluster.client


@pytest.fixture(scope="module")
async def adapter_cluster(fast_tmp: Path) -> AsyncIterator[AdapterCluster]:
    pods = FakePods(host_address())
    async with start_metrics_cluster(fast_tmp) as cluster, serving(pods.app(), pods.address,
                                                                    pods.port):
        yield AdapterCluster(cluster, pods)


@pytest.fixture
def official(adapter_cluster: AdapterCluster) -> Iterator[k8s.ApiClient]:
    """The official client, configured from the cluster's kubeconfig."""
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(str(adapter_cluster.cluster.kubeconfig),
                                client_configuration=configuration)
    with k8s.ApiClient(configuration) as api:
        yield api


@pytest.fixture
async def hpa_controller(adapter_cluster: AdapterCluster) -> AsyncIterator[ControllerManager]:
    async with running_hpa_controller(adapter_cluster.cluster.kubeconfig) as manager:
        yield manager


async def make_scraped_workload(cluster: AdapterCluster, namespace: str, replicas: int,
                                gauges: dict[int, list[str]] | None = None,
                                counters: dict[int, list[tuple[str, float]]] | None = None,
                                ready: int | None = None, scale: int | None = None) -> None:
    """Namespace, Deployment web of `scale` replicas (default: `replicas`; no controller
    runs it, its status says `replicas`) and `replicas` pods labelled app=web, Running on
    hpa-node and annotated for scraping; the first `ready` of them (all by default) Ready.
    Pod i exports gauges[i] and counters[i]."""
    client = cluster.client
    await client.resource("namespaces").create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    labels = {"app": "web"}
    container = {"name": "app", "image": "busybox:1.36"}
    deployments = client.resource("deployments", "apps")
    deployment = await deployments.create({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": replicas if scale is None else scale,
                 "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [container]}}}}, namespace)
    deployment["status"] = {"replicas": replicas}
    await deployments.update_status(deployment)
    pods = client.resource("pods")
    started = rfc3339_ago(3600)
    for i in range(replicas):
        name = f"web-{i}"
        cluster.pods.gauges[(namespace, name)] = (gauges or {}).get(i, [])
        cluster.pods.counters[(namespace, name)] = (counters or {}).get(i, [])
        pod = await pods.create({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels, "annotations": {
                "prometheus.io/scrape": "true", "prometheus.io/port": str(cluster.pods.port),
                "prometheus.io/path": f"/metrics/{namespace}/{name}"}},
            "spec": {"nodeName": NODE, "containers": [container]}}, namespace)
        is_ready = "True" if ready is None or i < ready else "False"
        pod["status"] = {"phase": "Running", "startTime": started,
                         "podIP": cluster.pods.address, "conditions": [
                             {"type": "Ready", "status": is_ready,
                              "lastTransitionTime": started}]}
        await pods.update_status(pod)


def get_json(api: k8s.ApiClient, path: str, **query: str) -> Obj:
    """A GET with the official client's own request path; ApiException on an error."""
    method, url, headers, body, _ = api.param_serialize(
        "GET", path, query_params=list(query.items()),
        header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
    answer = api.call_api(method, url, header_params=headers, body=body)
    answer.read()
    data = api.response_deserialize(answer, {"200": "object"}).data
    assert isinstance(data, dict)
    return data


async def served(api: k8s.ApiClient, path: str, **query: str) -> Obj | None:
    """The answer once the adapter has scraped what it needs (None while it is 404)."""
    try:
        return await asyncio.to_thread(get_json, api, path, **query)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


async def served_for_each(api: k8s.ApiClient, path: str, pods: int, **query: str
                          ) -> Obj | None:
    """A pods list once it has an item for each of `pods` pods (the adapter scrapes them
    one by one)."""
    found = await served(api, path, **query)
    return found if found is not None and len(found["items"]) == pods else None


async def served_value(api: k8s.ApiClient, path: str, value: str) -> Obj | None:
    """The object metric's answer once it sums every pod's series to `value` (a pod the
    adapter has not scraped yet is left out of the sum)."""
    found = await served(api, path)
    return found if found is not None and [item["value"] for item in found["items"]] == [
        value] else None


async def test_custom_metrics_api_serves_pod_gauges_and_counter_rates(
        adapter_cluster: AdapterCluster, official: k8s.ApiClient) -> None:
    """A gauge is served as it is, per pod; a counter http_requests_total as the rate
    http_requests; metricLabelSelector picks the series summed; labelSelector the pods."""
    namespace = f"cm-{uuid.uuid4().hex[:6]}"
    await make_scraped_workload(
        adapter_cluster, namespace, 2,
        gauges={0: ['queue_depth{queue="orders"} 3', 'queue_depth{queue="mail"} 4'],
                1: ['queue_depth{queue="orders"} 10']},
        counters={0: [('http_requests_total{code="200"}', 5.0)],
                  1: [('http_requests_total{code="200"}', 2.0)]})
    path = f"{CUSTOM}/namespaces/{namespace}/pods/*/queue_depth"
    listed = await eventually(lambda: served_for_each(official, path, 2, labelSelector="app=web"),
                              timeout=30, interval=0.5, what="queue_depth served for both pods")
    assert listed["kind"] == "MetricValueList"
    values = {item["describedObject"]["name"]: item["value"] for item in listed["items"]}
    assert values == {"web-0": "7", "web-1": "10"}
    assert listed["items"][0]["describedObject"] == {
        "kind": "Pod", "namespace": namespace, "name": "web-0", "apiVersion": "/v1"}
    orders = await asyncio.to_thread(get_json, official, path,
                                     metricLabelSelector="queue=orders")
    assert {i["describedObject"]["name"]: i["value"] for i in orders["items"]} == {
        "web-0": "3", "web-1": "10"}
    assert orders["items"][0]["metric"] == {"name": "queue_depth",
                                            "selector": {"matchLabels": {"queue": "orders"}}}
    one = await asyncio.to_thread(get_json, official,
                                  f"{CUSTOM}/namespaces/{namespace}/pods/web-1/queue_depth")
    assert [i["value"] for i in one["items"]] == ["10"]
    rates = await eventually(
        lambda: served_for_each(official, f"{CUSTOM}/namespaces/{namespace}/pods/*/http_requests",
                                2),
        timeout=30, interval=0.5, what="the http_requests rate served for both pods")
    by_pod = {i["describedObject"]["name"]: i for i in rates["items"]}
    assert float(by_pod["web-0"]["value"].rstrip("m")) / (
        1000 if by_pod["web-0"]["value"].endswith("m") else 1) == pytest.approx(5.0, rel=0.1)
    assert by_pod["web-1"]["windowSeconds"] >= 1
    resources = await asyncio.to_thread(get_json, official, CUSTOM)
    assert {"pods/queue_depth", "pods/http_requests"} <= {
        r["name"] for r in resources["resources"]}


async def test_object_and_namespace_metrics_sum_the_series_that_name_them(
        adapter_cluster: AdapterCluster, official: k8s.ApiClient) -> None:
    """An object's metric is the sum of the namespace's series labelled with its
    resource's singular name (service="web"); a namespace's the sum of all."""
    namespace = f"cm-{uuid.uuid4().hex[:6]}"
    await make_scraped_workload(
        adapter_cluster, namespace, 2,
        gauges={0: ['requests_in_flight{service="web"} 15',
                    'requests_in_flight{service="api"} 100'],
                1: ['requests_in_flight{service="web"} 25']})
    path = f"{CUSTOM}/namespaces/{namespace}/services/web/requests_in_flight"
    found = await eventually(lambda: served_value(official, path, "40"), timeout=30,
                             interval=0.5, what="the Service's metric served, both pods scraped")
    assert [(i["describedObject"]["kind"], i["describedObject"]["apiVersion"], i["value"])
            for i in found["items"]] == [("Service", "/v1", "40")]
    whole = await asyncio.to_thread(
        get_json, official, f"{CUSTOM}/namespaces/{namespace}/metrics/requests_in_flight")
    assert [(i["describedObject"]["kind"], i["value"]) for i in whole["items"]] == [
        ("Namespace", "140")]
    assert await served(official, f"{CUSTOM}/namespaces/{namespace}/deployments.apps/web/"
                                  "requests_in_flight") is None  # no deployment="web" series


async def test_external_metrics_api_lists_each_matching_series(
        adapter_cluster: AdapterCluster, official: k8s.ApiClient) -> None:
    """external.metrics.k8s.io: one item per series of the namespace, filtered by the
    labelSelector on the series' labels (the official client's CustomObjectsApi list)."""
    namespace = f"cm-{uuid.uuid4().hex[:6]}"
    await make_scraped_workload(
        adapter_cluster, namespace, 1,
        gauges={0: ['queue_messages{queue="orders"} 30', 'queue_messages{queue="mail"} 5']})
    custom_objects = k8s.CustomObjectsApi(official)

    async def listed() -> Any:
        try:
            return await asyncio.to_thread(
                custom_objects.list_namespaced_custom_object, "external.metrics.k8s.io",
                "v1beta1", namespace, "queue_messages", label_selector="queue=orders")
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    found = await eventually(listed, timeout=30, interval=0.5, what="queue_messages listed")
    assert found["kind"] == "ExternalMetricValueList"
    assert [(i["metricName"], i["metricLabels"], i["value"]) for i in found["items"]] == [
        ("queue_messages", {"queue": "orders"}, "30")]
    everything = await asyncio.to_thread(
        custom_objects.list_namespaced_custom_object, "external.metrics.k8s.io", "v1beta1",
        namespace, "queue_messages")
    assert sorted(i["value"] for i in everything["items"]) == ["30", "5"]


async def test_unknown_metrics_and_bad_selectors_get_upstream_status_errors(
        adapter_cluster: AdapterCluster, official: k8s.ApiClient) -> None:
    """404 NotFound with custom-metrics-apiserver's messages for a metric nobody has, 400
    BadRequest for a selector that does not parse."""
    namespace = f"cm-{uuid.uuid4().hex[:6]}"
    await make_scraped_workload(adapter_cluster, namespace, 1,
                                gauges={0: ['queue_depth{queue="orders"} 3']})
    await eventually(lambda: served(official, f"{CUSTOM}/namespaces/{namespace}/pods/*/"
                                              "queue_depth"),
                     timeout=30, interval=0.5, what="queue_depth served")
    cases = [
        (f"{CUSTOM}/namespaces/{namespace}/pods/*/no_such_metric", {}, 404, "NotFound",
         "the server could not find the metric no_such_metric for pods"),
        (f"{CUSTOM}/namespaces/{namespace}/pods/web-0/no_such_metric", {}, 404, "NotFound",
         "the server could not find the metric no_such_metric for pods web-0"),
        (f"{CUSTOM}/namespaces/{namespace}/deployments.apps/web/queue_depth", {}, 404,
         "NotFound",
         "the server could not find the metric queue_depth for deployments.apps web"),
        (f"{CUSTOM}/namespaces/{namespace}/widgets/web/queue_depth", {}, 404, "NotFound",
         "the server could not find the metric queue_depth for widgets web"),
        (f"{EXTERNAL}/namespaces/{namespace}/no_such_metric", {}, 404, "NotFound",
         "the server could not find the metric no_such_metric for provided labels"),
        (f"{CUSTOM}/namespaces/{namespace}/pods/*/queue_depth", {"labelSelector": "app in"},
         400, "BadRequest", "unable to parse requirement: found '' expected: '('"),
        (f"{CUSTOM}/namespaces/{namespace}/pods/*/queue_depth",
         {"metricLabelSelector": "queue in ("}, 400, "BadRequest", None),
        (f"{EXTERNAL}/namespaces/{namespace}/queue_depth", {"labelSelector": "a b"}, 400,
         "BadRequest", None),
    ]
    for path, query, code, reason, message in cases:
        with pytest.raises(ApiException) as caught:
            await asyncio.to_thread(get_json, official, path, **query)
        status = json.loads(caught.value.body)
        assert (caught.value.status, status["kind"], status["reason"]) == (
            code, "Status", reason), (path, status["message"])
        if message is not None:
            assert status["message"] == message


def hpa_with(metric: Obj, maximum: int = 10) -> Obj:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": "web"},
                     "minReplicas": 1, "maxReplicas": maximum, "metrics": [metric]}}


async def scaled_to(cluster: AdapterCluster, namespace: str, replicas: int) -> Obj | None:
    """The HPA once the Deployment has `replicas` and the HPA's status says so."""
    deployment = await cluster.client.resource("deployments", "apps").get("web", namespace)
    current = await cluster.client.resource("horizontalpodautoscalers", "autoscaling").get(
        "web", namespace)
    status = current.get("status") or {}
    if deployment["spec"]["replicas"] == replicas and status.get("desiredReplicas") == replicas:
        return current
    return None


async def test_hpa_scales_on_a_pods_metric_average_value(
        adapter_cluster: AdapterCluster, hpa_controller: ControllerManager) -> None:
    """Two pods at queue_depth 15 against an averageValue of 10: ceil(2 * 1.5) = 3, and
    the status reports the average as the current value."""
    namespace = f"cm-{uuid.uuid4().hex[:6]}"
    await make_scraped_workload(adapter_cluster, namespace, 2,
                                gauges={0: ["queue_depth 15"], 1: ["queue_depth 15"]})
    await adapter_cluster.client.resource("horizontalpodautoscalers", "autoscaling").create(
        hpa_with({"type": "Pods", "pods": {"metric": {"name": "queue_depth"}, "target": {
            "type": "AverageValue", "averageValue": "10"}}}), namespace)
    current = await eventually(lambda: scaled_to(adapter_cluster, namespace, 3), timeout=60,
                               interval=0.5, what="the Deployment scaled to 3")
    assert current["status"]["currentMetrics"] == [{"type": "Pods", "pods": {
        "metric": {"name": "queue_depth"}, "current": {"averageValue": "15"}}}]
    active = next(c for c in current["status"]["conditions"] if c["type"] == "ScalingActive")
    assert (active["status"], active["reason"]) == ("True", "ValidMetricFound")
    assert active["message"].endswith("from pods metric queue_depth")
    out = await asyncio.to_thread(kubectl(adapter_cluster.cluster), "get", "hpa", "-n",
                                  namespace)
    assert "15/10" in out.splitlines()[1].split()


async def test_hpa_scales_on_an_object_metric_value_over_its_ready_pods(
        adapter_cluster: AdapterCluster, hpa_controller: ControllerManager,
        official: k8s.ApiClient) -> None:
    """The Service web's requests_in_flight (sum 40) against a value of 20: ratio 2 times
    the one Ready pod of two (the unready one does not count) = 2."""
    namespace = f"cm-{uuid.uuid4().hex[:6]}"
    await make_scraped_workload(
        adapter_cluster, namespace, 2, ready=1, scale=1,
        gauges={0: ['requests_in_flight{service="web"} 30'],
                1: ['requests_in_flight{service="web"} 10']})
    await eventually(lambda: served_value(
        official, f"{CUSTOM}/namespaces/{namespace}/services/web/requests_in_flight", "40"),
        timeout=30, interval=0.5, what="both pods scraped")
    await adapter_cluster.client.resource("horizontalpodautoscalers", "autoscaling").create(
        hpa_with({"type": "Object", "object": {
            "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
            "metric": {"name": "requests_in_flight"},
            "target": {"type": "Value", "value": "20"}}}), namespace)
    current = await eventually(lambda: scaled_to(adapter_cluster, namespace, 2), timeout=60,
                               interval=0.5, what="the Deployment scaled to 2")
    assert current["status"]["currentMetrics"][0]["object"]["current"] == {"value": "40"}


async def test_hpa_scales_on_external_metric_value_and_average_value(
        adapter_cluster: AdapterCluster, hpa_controller: ControllerManager) -> None:
    """queue_messages{queue="orders"} sums to 30 (two series): against an averageValue of
    10 per pod that is ceil(30 / 10) = 3 replicas, the current average 30 / 1."""
    namespace = f"cm-{uuid.uuid4().hex[:6]}"
    await make_scraped_workload(
        adapter_cluster, namespace, 1,
        gauges={0: ['queue_messages{queue="orders",shard="a"} 20',
                    'queue_messages{queue="orders",shard="b"} 10',
                    'queue_messages{queue="mail"} 500']})
    selector = {"matchLabels": {"queue": "orders"}}
    await adapter_cluster.client.resource("horizontalpodautoscalers", "autoscaling").create(
        hpa_with({"type": "External", "external": {
            "metric": {"name": "queue_messages", "selector": selector},
            "target": {"type": "AverageValue", "averageValue": "10"}}}), namespace)
    current = await eventually(lambda: scaled_to(adapter_cluster, namespace, 3), timeout=60,
                               interval=0.5, what="the Deployment scaled to 3")
    assert current["status"]["currentMetrics"] == [{"type": "External", "external": {
        "metric": {"name": "queue_messages", "selector": selector},
        "current": {"averageValue": "30"}}}]
    active = next(c for c in current["status"]["conditions"] if c["type"] == "ScalingActive")
    assert active["message"].endswith(
        "from external metric queue_messages(&LabelSelector{MatchLabels:map[string]string{"
        "queue: orders,},MatchExpressions:[]LabelSelectorRequirement{},})")
    out = await asyncio.to_thread(kubectl(adapter_cluster.cluster), "get", "hpa", "-n",
                                  namespace)
    assert "30/10 (avg)" in out


async def test_missing_custom_and_external_metrics_set_scaling_active_false(
        adapter_cluster: AdapterCluster, hpa_controller: ControllerManager) -> None:
    """A Pods metric nobody exports: ScalingActive False, FailedGetPodsMetric, with the
    adapter's 404 message inside upstream's wording; an External one likewise; the
    Deployment keeps its replicas."""
    namespace, other = f"cm-{uuid.uuid4().hex[:6]}", f"cm-{uuid.uuid4().hex[:6]}"
    for each in (namespace, other):
        await make_scraped_workload(adapter_cluster, each, 1, gauges={0: ["queue_depth 1"]})
    hpas = adapter_cluster.client.resource("horizontalpodautoscalers", "autoscaling")
    await hpas.create(hpa_with({"type": "Pods", "pods": {
        "metric": {"name": "absent_metric"},
        "target": {"type": "AverageValue", "averageValue": "10"}}}), namespace)
    await hpas.create(hpa_with({"type": "External", "external": {
        "metric": {"name": "absent_external"},
        "target": {"type": "Value", "value": "10"}}}), other)

    async def inactive(where: str) -> Obj | None:
        current = await hpas.get("web", where)
        conditions = (current.get("status") or {}).get("conditions") or []
        active = next((c for c in conditions if c["type"] == "ScalingActive"), None)
        return active if active is not None and active["status"] == "False" else None

    active = await eventually(lambda: inactive(namespace), timeout=60, interval=0.5,
                              what="ScalingActive False for the Pods metric")
    assert active["reason"] == "FailedGetPodsMetric"
    assert active["message"] == (
        "the HPA was unable to compute the replica count: unable to get metric "
        "absent_metric: unable to fetch metrics from custom metrics API: the server could "
        "not find the metric absent_metric for pods")
    active = await eventually(lambda: inactive(other), timeout=60, interval=0.5,
                              what="ScalingActive False for the External metric")
    assert active["reason"] == "FailedGetExternalMetric"
    assert active["message"] == (
        f"the HPA was unable to compute the replica count: unable to get external metric "
        f"{other}/absent_external/nil: unable to fetch metrics from external metrics "
        "API: the server could not find the metric absent_external for provided labels")
    for each in (namespace, other):
        deployment = await adapter_cluster.client.resource("deployments", "apps").get(
            "web", each)
        assert deployment["spec"]["replicas"] == 1
