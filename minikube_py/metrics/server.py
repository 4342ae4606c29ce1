"""The metrics server: scrapes every node's kubelet, serves `metrics.k8s.io/v1beta1`.

    every --metric-resolution:  GET http://<node InternalIP>:<kubelet port>/metrics/resource
                                (https, with the server's own client certificate, or in
                                a pod its ServiceAccount token, when the API server is
                                reached over https: kubelets then check who asks)
                                for each node; keep its last two readings
    GET /apis/metrics.k8s.io/v1beta1/nodes[/{name}]              NodeMetrics
    GET /apis/metrics.k8s.io/v1beta1/[namespaces/{ns}/]pods[/{name}]   PodMetrics
    GET /openapi/v2, /openapi/v3[/apis/metrics.k8s.io/v1beta1]   its schemas, which the
                                API server merges into its own once the APIService is
                                Available (`kubectl explain nodemetrics`)
    /apis/custom.metrics.k8s.io/v1beta2/..., /apis/external.metrics.k8s.io/v1beta1/...
                                pods' own metrics, scraped from the pods annotated
                                prometheus.io/scrape (custom.py, the adapter)

The API server reaches it through the APIService v1beta1.metrics.k8s.io (and
v1beta2.custom.metrics.k8s.io, v1beta1.external.metrics.k8s.io), which names the
Service kube-system/metrics-server; this process publishes itself as that Service's
endpoint at --advertise-address (publish.py), as upstream's runs as a pod behind it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from datetime import UTC, datetime
from functools import cache

import aiohttp
import orjson
from aiohttp import web

from minikube_py.api import Obj
from minikube_py.api.meta import rfc3339
from minikube_py.api.resources import Resource
from minikube_py.api.schema import openapi_v2_definitions, openapi_v3_document
from minikube_py.api.selectors import LabelSelector, parse_label_selector
from minikube_py.client.errors import ClientError
from minikube_py.client.rest import Client
from minikube_py.client.retry import on_error
from minikube_py.lifecycle import Component
from minikube_py.metrics.custom import CustomMetricsAdapter
from minikube_py.metrics.publish import publish
from minikube_py.metrics.scrape import (
    NodeScrape,
    Point,
    cpu_quantity,
    memory_quantity,
    parse_resource_metrics,
    usage,
)

log = logging.getLogger(__name__)

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
PREFIX = f"/apis/{GROUP}/{VERSION}"
KUBELET_PORT = 10250


SERVED = (Resource(GROUP, VERSION, "NodeMetrics", "nodes", False, verbs=("get", "list")),
          Resource(GROUP, VERSION, "PodMetrics", "pods", True, verbs=("get", "list")))


@cache
def openapi_v3() -> bytes:
    return orjson.dumps(openapi_v3_document(GROUP, VERSION, SERVED))


@cache
def openapi_v2() -> bytes:
    return orjson.dumps({"swagger": "2.0",
                         "info": {"title": "metrics-server", "version": VERSION},
                         "paths": {}, "definitions": openapi_v2_definitions([(GROUP, VERSION)])})


def resource_list() -> Obj:
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{VERSION}",
            "resources": [
                {"name": "nodes", "singularName": "", "namespaced": False,
                 "kind": "NodeMetrics", "verbs": ["get", "list"]},
                {"name": "pods", "singularName": "", "namespaced": True,
                 "kind": "PodMetrics", "verbs": ["get", "list"]}]}


def _kubelet_url(node: Obj, scheme: str = "http") -> str | None:
    status = node.get("status") or {}
    address = next((a["address"] for a in status.get("addresses") or []
                    if a.get("type") == "InternalIP"), None)
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    return f"{scheme}://{address}:{port or KUBELET_PORT}" if address else None


class MetricsServer(Component):
    """`async with MetricsServer(client, address, port):` scrape and serve."""

    def __init__(self, client: Client, address: str, port: int, *, resolution: float = 5.0,
                 advertise_address: str = "") -> None:
        super().__init__()
        self.client = client
        self.address, self.port = address, port
        self.resolution = resolution
        self.advertise_address = advertise_address
        self.scrapes: dict[str, tuple[NodeScrape | None, NodeScrape]] = {}  # node -> (old, new)
        self.nodes: dict[str, Obj] = {}
        self.pod_labels: dict[tuple[str, str], dict[str, str]] = {}
        self.custom = CustomMetricsAdapter()
        self._ready = asyncio.Event()

    async def wait_started(self) -> None:
        await self._ready.wait()

    async def run(self) -> None:
        runner = web.AppRunner(self.build_app(), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.address, self.port).start()
            if self.advertise_address:
                await on_error("publishing the metrics-server Service", lambda: publish(
                    self.client, self.advertise_address, self.port))
            self._ready.set()
            tls = self.client.config.tls_context()
            async with aiohttp.ClientSession(
                    timeout=aiohttp.ClientTimeout(total=max(self.resolution, 5)),
                    connector=aiohttp.TCPConnector(ssl=tls or False)) as session:
                while True:
                    try:
                        await self.scrape_all(session)
                    except ClientError as error:
                        # the last scrapes are served meanwhile, as upstream's does
                        log.warning("Failed to list the nodes and pods to scrape: %s", error)
                    await asyncio.sleep(self.resolution)
        finally:
            await runner.cleanup()

    async def scrape_all(self, session: aiohttp.ClientSession) -> None:
        nodes = (await self.client.resource("nodes").list())["items"]
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        pods = (await self.client.resource("pods").list())["items"]
        self.pod_labels = {(p["metadata"]["namespace"], p["metadata"]["name"]):
                           p["metadata"].get("labels") or {} for p in pods}
        await asyncio.gather(*(self.scrape(session, node) for node in nodes),
                             self.custom.scrape_pods(session, pods, time.time()))
        for gone in set(self.scrapes) - set(self.nodes):
            del self.scrapes[gone]

    async def scrape(self, session: aiohttp.ClientSession, node: Obj) -> None:
        scheme = "https" if self.client.config.server.startswith("https://") else "http"
        name, url = node["metadata"]["name"], _kubelet_url(node, scheme)
        if url is None:
            return
        # in a pod, the ServiceAccount's token (read at each scrape: it is renewed), which
        # the kubelet checks with a TokenReview, as upstream's metrics-server sends it
        token = self.client.config.token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            async with session.get(f"{url}/metrics/resource", headers=headers) as answer:
                if answer.status != 200:
                    raise aiohttp.ClientError(f"status {answer.status}")
                text = await answer.text()
        except (aiohttp.ClientError, TimeoutError, OSError) as err:
            log.info("scraping node %s: %s", name, err)  # a hollow node has no kubelet
            return
        latest = parse_resource_metrics(text, time.time())
        old = self.scrapes.get(name)
        self.scrapes[name] = (old[1] if old else None, latest)

    # -- serving --------------------------------------------------------------------------

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._ok)
        app.router.add_get("/readyz", self._ok)
        app.router.add_get(f"/apis/{GROUP}", self._group)
        app.router.add_get(PREFIX, self._resources)
        app.router.add_get(f"{PREFIX}/nodes", self._node_list)
        app.router.add_get(f"{PREFIX}/nodes/{{name}}", self._node)
        app.router.add_get(f"{PREFIX}/pods", self._pod_list)
        app.router.add_get(f"{PREFIX}/namespaces/{{namespace}}/pods", self._pod_list)
        app.router.add_get(f"{PREFIX}/namespaces/{{namespace}}/pods/{{name}}", self._pod)
        app.router.add_get("/openapi/v2", self._openapi_v2)
        app.router.add_get("/openapi/v3", self._openapi_v3_index)
        app.router.add_get(f"/openapi/v3{PREFIX}", self._openapi_v3)
        self.custom.add_routes(app)
        return app

    async def _openapi_v2(self, request: web.Request) -> web.Response:
        return web.Response(body=openapi_v2(), content_type="application/json")

    async def _openapi_v3_index(self, request: web.Request) -> web.Response:
        digest = hashlib.sha512(openapi_v3()).hexdigest()[:32].upper()
        path = PREFIX.lstrip("/")
        return _json({"paths": {path: {
            "serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}}})

    async def _openapi_v3(self, request: web.Request) -> web.Response:
        return web.Response(body=openapi_v3(), content_type="application/json")

    async def _ok(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _group(self, request: web.Request) -> web.Response:
        version = {"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}
        return _json({"kind": "APIGroup", "apiVersion": "v1", "name": GROUP,
                      "versions": [version], "preferredVersion": version})

    async def _resources(self, request: web.Request) -> web.Response:
        return _json(resource_list())

    def node_metrics(self) -> list[Obj]:
        items = []
        for name, (old, new) in sorted(self.scrapes.items()):
            used = usage(old.node if old else None, new.node)
            if used is None:
                continue
            node = self.nodes.get(name, {"metadata": {}})
            items.append({"metadata": {"name": name, "creationTimestamp": _now(),
                                       "labels": node["metadata"].get("labels") or {}},
                          "timestamp": rfc3339(datetime.fromtimestamp(new.node.at, UTC)),
                          "window": _window(old.node.at if old else 0, new.node.at),
                          "usage": {"cpu": cpu_quantity(used[0]),
                                    "memory": memory_quantity(used[1])}})
        return items

    def pod_metrics(self, namespace: str = "", selector: LabelSelector | None = None
                    ) -> list[Obj]:
        """PodMetrics of the pods whose every container has a usage (metrics-server's
        rule), with the pod's labels; `selector` filters on them."""
        items = []
        for old, new in self.scrapes.values():
            by_pod: dict[tuple[str, str], list[tuple[str, Point]]] = {}
            for (ns, pod, container), point in sorted(new.containers.items()):
                by_pod.setdefault((ns, pod), []).append((container, point))
            for (ns, pod), points in sorted(by_pod.items()):
                labels = self.pod_labels.get((ns, pod)) or {}
                if (namespace and ns != namespace) or (
                        selector is not None and not selector.matches(labels)):
                    continue
                containers, windows = [], []
                for container, point in points:
                    before = old.containers.get((ns, pod, container)) if old else None
                    used = usage(before, point, self.resolution)
                    if used is None:
                        break
                    containers.append({"name": container, "usage": {
                        "cpu": cpu_quantity(used[0]), "memory": memory_quantity(used[1])}})
                    start = point.start if before is None or point.start > before.at else (
                        before.at)
                    windows.append((start, point.at))
                else:
                    start, end = min(windows)
                    items.append({"metadata": {"name": pod, "namespace": ns,
                                               "creationTimestamp": _now(), "labels": labels},
                                  "timestamp": rfc3339(datetime.fromtimestamp(end, UTC)),
                                  "window": _window(start, end), "containers": containers})
        return items

    async def _node_list(self, request: web.Request) -> web.Response:
        try:
            selector = parse_label_selector(request.query.get("labelSelector", ""))
        except ValueError as err:
            return _bad_request(str(err))
        items = [n for n in self.node_metrics() if selector.matches(n["metadata"]["labels"])]
        return _json({"kind": "NodeMetricsList", "apiVersion": f"{GROUP}/{VERSION}",
                      "metadata": {}, "items": items})

    async def _node(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        found = next((n for n in self.node_metrics() if n["metadata"]["name"] == name), None)
        if found is None:
            return _not_found("nodes", name)
        return _json({"kind": "NodeMetrics", "apiVersion": f"{GROUP}/{VERSION}", **found})

    async def _pod_list(self, request: web.Request) -> web.Response:
        try:
            selector = parse_label_selector(request.query.get("labelSelector", ""))
        except ValueError as err:
            return _bad_request(str(err))
        items = self.pod_metrics(request.match_info.get("namespace", ""), selector)
        return _json({"kind": "PodMetricsList", "apiVersion": f"{GROUP}/{VERSION}",
                      "metadata": {}, "items": items})

    async def _pod(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        found = next((p for p in self.pod_metrics(namespace) if p["metadata"]["name"] == name),
                     None)
        if found is None:
            return _not_found("pods", name)
        return _json({"kind": "PodMetrics", "apiVersion": f"{GROUP}/{VERSION}", **found})


def _now() -> str:
    return rfc3339(datetime.now(UTC))


def _window(start: float, end: float) -> str:
    return f"{max(end - start, 0):.3f}s"


def _json(body: Obj, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body) + b"\n", status=status,
                        content_type="application/json")


def _not_found(resource: str, name: str) -> web.Response:
    return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": f'{resource}.{GROUP} "{name}" not found', "reason": "NotFound",
                  "details": {"name": name, "group": GROUP, "kind": resource}, "code": 404},
                 404)


def _bad_request(message: str) -> web.Response:
    return _json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": "BadRequest", "code": 400}, 400)
