"""The dashboard (`python -m minikube_py.dashboard`) in a real browser: Debian's chromium,
driven by selenium through Debian's chromium-driver, reaching the page through the API
server's service proxy as users do; and no one else reaching it.

The API server of this module runs as the shared one does, on the shared etcd, and shows
its proxies' https backends a front-proxy certificate (--proxy-client-cert-file), as a
secured cluster's does; the dashboard serves HTTPS and lets in only that certificate. It
watches that API server; the objects each test makes (nodes,
pods, Services, Events) are named after the test's own namespace, so tests running beside
it on the same server do not disturb what it checks. A trace receiver process holds spans
the test sends it in OTLP/HTTP JSON, as the components do.

Every test fails on a JavaScript error in the browser's console, and saves PNGs of what it
saw under its tmp_path; their paths are printed, so a failing test shows where they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service as ChromeService
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.wait import WebDriverWait

from minikube_py.client.errors import AlreadyExists, NotFound
from minikube_py.client.kubeconfig import ClientConfig
from minikube_py.client.rest import Client
from minikube_py.cluster.addons import NAMESPACE, PROXY_PATH, SERVICE, remove_dashboard
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.certs import FRONT_PROXY_CLIENT, FrontProxy
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig
from minikube_py.controllers.namespace import NamespaceController
from minikube_py.process import free_port
from minikube_py.scheduler.config import default_configuration
from minikube_py.scheduler.framework.interface import CycleState
from minikube_py.scheduler.framework.types import PodInfo
from minikube_py.scheduler.plugins.registry import IN_TREE_PLUGINS
from minikube_py.scheduler.scheduler import Scheduler
from minikube_py.security import pki
from minikube_py.tracing import otlp
from minikube_py.tracing.tracer import Span, Tracer
from tests.test_trace_receiver import start as start_receiver
from tests.test_trace_receiver import stop as stop_receiver

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT = 30  # s: bounds a failure only; every wait is for a condition


# -- the API, as plain JSON over HTTP ---------------------------------------------------------

def call(base: str, method: str, path: str, body: Any = None,
         content_type: str = "application/json") -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{base}{path}", data=data, method=method,
                                     headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as error:
        raise AssertionError(f"{method} {path}: {error.code} {error.read().decode()}") from None


def node(name: str, *, ready: bool = True, taints: list[dict[str, str]] | None = None
         ) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "reason": "KubeletReady" if ready else "KubeletDown"}]}}


def pod(name: str, node_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox:1.36"}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels":
                                                            {"app": "web"}}, "spec": spec}


def set_pod_phase(base: str, namespace: str, name: str, phase: str, ip: str = "") -> None:
    status: dict[str, Any] = {"phase": phase}
    if ip:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    call(base, "PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}/status",
         {"status": status}, "application/merge-patch+json")


# -- the processes and the browser ------------------------------------------------------------

@pytest.fixture(scope="module")
def front_proxy(tmp_path_factory: pytest.TempPathFactory) -> FrontProxy:
    """kubeadm's front-proxy CA and the API server's proxy certificate, as `up` makes them
    (cluster/certs.py)."""
    directory = tmp_path_factory.mktemp("front-proxy")
    ca = pki.new_ca("front-proxy-ca")
    ca.write(directory, "front-proxy-ca")
    cert, key = pki.issue(ca, FRONT_PROXY_CLIENT, client=True).write(
        directory, "front-proxy-client")
    return FrontProxy(directory / "front-proxy-ca.crt", cert, key)


@pytest.fixture(scope="module")
async def apiserver(etcd: EtcdProcess, fast_tmp: Path, front_proxy: FrontProxy
                    ) -> AsyncIterator[APIServerProcess]:
    """An API server shaped as the shared one, on the shared etcd, that shows https
    backends of its proxies the front-proxy certificate."""
    async with APIServerProcess(
            [etcd.client_url], fast_tmp / "apiserver-dashboard.log",
            extra_args=("--disable-admission-plugins=ServiceAccount",
                        f"--proxy-client-cert-file={front_proxy.cert_file}",
                        f"--proxy-client-key-file={front_proxy.key_file}")) as process:
        yield process


@pytest.fixture(scope="module")
def kubeconfig(apiserver: APIServerProcess, fast_tmp: Path) -> Path:
    return write_kubeconfig(fast_tmp / "kubeconfig-dashboard", apiserver.url)


@pytest.fixture(scope="module")
def trace_receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    process = start_receiver(tmp_path_factory.mktemp("spans"), port)
    yield f"http://127.0.0.1:{port}"
    stop_receiver(process)


def host_address() -> str:
    """This machine's address on its way out: the service proxy refuses loopback
    endpoints, as upstream's validation does (no packet is sent to find it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("10.255.255.255", 1))
        return str(probe.getsockname()[0])


@contextlib.contextmanager
def running_dashboard(kubeconfig: Path, log: Path, address: str, *flags: str
                      ) -> Iterator[int]:
    """`python -m minikube_py.dashboard` on the shared API server, on a port it picks
    (read from its log); stopped at the end, pass or fail."""
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "minikube_py.dashboard", f"--kubeconfig={kubeconfig}",
             f"--bind-address={address}", "--port=0", "-v", "2", *flags], stderr=sink)
    try:
        deadline = time.monotonic() + 60
        while "serving on https://" not in log.read_text():
            assert process.poll() is None, f"the dashboard stopped:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"the dashboard did not start:\n{log.read_text()}"
            time.sleep(0.05)
        line = next(line for line in log.read_text().splitlines() if "serving on" in line)
        yield int(line.rsplit(":", 1)[1].strip("/"))
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module")
def dashboard(kubeconfig: Path, trace_receiver: str, front_proxy: FrontProxy,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """The dashboard the browser tests use, letting in only the API server's proxy; its
    address and port."""
    address = host_address()
    log = tmp_path_factory.mktemp("dashboard") / "dashboard.log"
    with running_dashboard(kubeconfig, log, address, f"--traces-url={trace_receiver}",
                           f"--client-ca-file={front_proxy.ca_file}",
                           f"--allowed-names={FRONT_PROXY_CLIENT}") as port:
        yield address, port


@pytest.fixture
def proxied_url(apiserver: APIServerProcess, dashboard: tuple[str, int], namespace: str
                ) -> str:
    """The page through the API server's service proxy: a Service with no selector whose
    EndpointSlice names the dashboard's address, as a Deployment's pod would be named."""
    base = apiserver.url
    address, port = dashboard
    call(base, "POST", f"/api/v1/namespaces/{namespace}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "dashboard"},
        "spec": {"ports": [{"port": 443, "targetPort": port}]}})
    call(base, "POST", f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices", {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "dashboard-1",
                     "labels": {"kubernetes.io/service-name": "dashboard"}},
        "addressType": "IPv4", "endpoints": [{"addresses": [address],
                                              "conditions": {"ready": True}}],
        "ports": [{"name": "", "port": port, "protocol": "TCP"}]})
    return f"{base}/api/v1/namespaces/{namespace}/services/https:dashboard:/proxy/"


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # its temporary files in a folder of its own: it leaves one in TMPDIR even after quit()
    with tempfile.TemporaryDirectory(prefix="chromium-") as tmp:
        driver = webdriver.Chrome(options=options, service=ChromeService(
            CHROMEDRIVER, env={**os.environ, "TMPDIR": tmp}))
        try:
            yield driver
        finally:
            driver.quit()


@pytest.fixture
def page(browser: WebDriver, proxied_url: str, tmp_path: Path
         ) -> Iterator[Callable[[str], Path]]:
    """The page loaded (its first snapshot drawn); `screenshot(name)` saves a PNG. At the
    end a last PNG is saved, every path printed, and any console error fails the test."""
    shots: list[Path] = []

    def screenshot(name: str) -> Path:
        path = tmp_path / f"{name}.png"
        browser.save_screenshot(str(path))
        shots.append(path)
        print(f"screenshot: {path}")
        return path

    open_page(browser, proxied_url)
    wait_for(browser, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute(
        "data-snapshot") == "loaded", "the first snapshot")
    yield screenshot
    screenshot("last")
    assert_no_errors(browser)


def open_page(browser: WebDriver, url: str) -> None:
    """Open `url` with a console holding only its page's messages. The page an earlier
    test left open goes first: its server may be gone (a local proxy that test stopped),
    and its retries would log errors while the next page loads."""
    browser.get("about:blank")
    browser.get_log("browser")
    browser.get(url)


def assert_no_errors(browser: WebDriver) -> None:
    """No error in the browser's console. Requests the browser dropped because the
    machine's addresses changed (net::ERR_NETWORK_CHANGED: another test made or removed a
    node's network namespace) are not the page's errors; the page retries them."""
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"
              and not (entry.get("source") == "network"
                       and "ERR_NETWORK_CHANGED" in entry["message"])]
    assert not errors, f"JavaScript errors in the console: {errors}"


def wait_for(driver: WebDriver, condition: Callable[[WebDriver], Any], what: str) -> Any:
    return WebDriverWait(driver, WAIT, poll_frequency=0.05).until(
        condition, message=f"timed out waiting for {what}")


def drawn(driver: WebDriver, selector: str) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, selector)


# -- the cluster, live ------------------------------------------------------------------------

@pytest.fixture
def nodes(apiserver: APIServerProcess, namespace: str) -> Iterator[list[str]]:
    """Two nodes named after the test's namespace: one ready and tainted, one not ready."""
    names = [f"{namespace}-a", f"{namespace}-b"]
    call(apiserver.url, "POST", "/api/v1/nodes", node(
        names[0], taints=[{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]))
    call(apiserver.url, "POST", "/api/v1/nodes", node(names[1], ready=False))
    yield names
    for name in names:
        try:
            call(apiserver.url, "DELETE", f"/api/v1/nodes/{name}")
        except AssertionError:
            pass


def test_the_page_preloads_every_module_so_the_browser_fetches_them_at_once() -> None:
    """First paint: index.html names each ES module (modulepreload), so that the browser
    fetches them all while it parses the page, not an import at a time."""
    static = Path(__file__).resolve().parents[1] / "minikube_py" / "dashboard" / "static"
    page = (static / "index.html").read_text()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="static/([\w.]+)">', page))
    assert preloaded == {module.name for module in static.glob("*.js")}


def test_cluster_view_draws_nodes_their_pods_the_pending_lane_and_services(
        apiserver: APIServerProcess, namespace: str, nodes: list[str],
        page: Callable[[str], Path], browser: WebDriver) -> None:
    base = apiserver.url
    for name, where in (("web-1", nodes[0]), ("web-2", nodes[0]), ("web-3", "")):
        call(base, "POST", f"/api/v1/namespaces/{namespace}/pods", pod(name, where))
    set_pod_phase(base, namespace, "web-1", "Running", "10.244.1.5")
    call(base, "POST", f"/api/v1/namespaces/{namespace}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    call(base, "POST", f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices", {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-1", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4", "endpoints": [
            {"addresses": ["10.244.1.5"], "conditions": {"ready": True},
             "targetRef": {"kind": "Pod", "name": "web-1", "namespace": namespace}}],
        "ports": [{"name": "", "port": 80, "protocol": "TCP"}]})

    pods = f'rect.pod[data-name^="{namespace}/"]'
    wait_for(browser, lambda d: len(drawn(d, pods)) == 3
             and drawn(d, f'rect.pod[data-name="{namespace}/web-1"].Running'), "3 pods drawn")
    page("cluster")
    placed = {rect.get_attribute("data-name"): rect.get_attribute("data-node")
              for rect in drawn(browser, pods)}
    assert placed == {f"{namespace}/web-1": nodes[0], f"{namespace}/web-2": nodes[0],
                      f"{namespace}/web-3": ""}

    tainted, not_ready = (browser.find_element(By.CSS_SELECTOR, f'g.node[data-name="{n}"]')
                          for n in nodes)
    assert "dedicated=web:NoSchedule" in tainted.find_element(
        By.CSS_SELECTOR, "text.taints").text
    assert tainted.find_element(By.CSS_SELECTOR, "text.allocatable").text == (
        "cpu 4 · memory 8Gi · pods 110")
    assert "Ready=True" in tainted.find_element(By.CSS_SELECTOR, "text.conditions").text
    assert "not-ready" in not_ready.get_attribute("class")
    assert "Ready=False" in not_ready.find_element(By.CSS_SELECTOR, "text.conditions").text

    # each pod inside its node's box; the pending one in the pending lane
    box = tainted.find_element(By.CSS_SELECTOR, "rect.box").rect
    web_1 = browser.find_element(By.CSS_SELECTOR, f'rect.pod[data-name="{namespace}/web-1"]')
    inside = web_1.rect
    assert box["x"] <= inside["x"] and inside["x"] + inside["width"] <= box["x"] + box["width"]
    assert box["y"] <= inside["y"] and inside["y"] + inside["height"] <= box["y"] + box["height"]
    lane = browser.find_element(By.CSS_SELECTOR, "#pending-lane rect.box").rect
    pending = browser.find_element(By.CSS_SELECTOR,
                                   f'rect.pod[data-name="{namespace}/web-3"]').rect
    assert lane["y"] <= pending["y"] <= lane["y"] + lane["height"]
    assert "Pending" in browser.find_element(
        By.CSS_SELECTOR, f'rect.pod[data-name="{namespace}/web-3"]').get_attribute("class")

    service = wait_for(browser, lambda d: d.find_elements(
        By.CSS_SELECTOR, f'g.service[data-name="{namespace}/web"] circle.endpoint.ready'),
        "the Service's endpoint")
    assert [c.get_attribute("data-address") for c in service] == ["10.244.1.5"]

    # the mouse over a pod shows its name, phase and IP; a click tells more
    ActionChains(browser).move_to_element(web_1).perform()
    tip = browser.find_element(By.ID, "pod-tip")
    wait_for(browser, lambda _: tip.is_displayed(), "the pod's tip")
    assert tip.text == f"{namespace}/web-1 Running 10.244.1.5"
    web_1.click()
    assert browser.find_element(By.ID, "selection-title").text == f"pod {namespace}/web-1"
    assert "10.244.1.5" in browser.find_element(By.ID, "selection-details").text


def test_cluster_view_follows_each_watch_event_with_its_animation(
        apiserver: APIServerProcess, namespace: str, nodes: list[str],
        page: Callable[[str], Path], browser: WebDriver) -> None:
    base = apiserver.url
    selector = f'rect.pod[data-name="{namespace}/web-1"]'
    call(base, "POST", f"/api/v1/namespaces/{namespace}/pods", pod("web-1"))
    added = wait_for(browser, lambda d: drawn(d, selector), "the new pod")[0]
    assert added.get_attribute("data-last-event") == "ADDED"
    assert added.get_attribute("data-node") == ""

    call(base, "POST", f"/api/v1/namespaces/{namespace}/pods/web-1/binding", {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": nodes[0]}})
    set_pod_phase(base, namespace, "web-1", "Running", "10.244.1.9")
    wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, selector).get_attribute(
        "data-node") == nodes[0] and d.find_element(By.CSS_SELECTOR, selector).get_attribute(
        "data-phase") == "Running", "the pod to move to its node and run")
    assert browser.find_element(By.CSS_SELECTOR, selector).get_attribute(
        "data-last-event") == "MODIFIED"
    page("cluster-modified")

    call(base, "DELETE", f"/api/v1/namespaces/{namespace}/pods/web-1",
         {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
    wait_for(browser, lambda d: not drawn(d, selector) or drawn(
        d, f'{selector}[data-gone="true"]'), "the deleted pod to go")
    wait_for(browser, lambda d: not drawn(d, selector), "the deleted pod's animation to end")


# -- a request's path and the scheduler's decision -------------------------------------------

MS = 1_000_000


def otlp_span(trace_id: str, span_id: str, parent: str, name: str, start_ms: float,
              end_ms: float, attributes: dict[str, Any], events: list[tuple[str, dict]]
              ) -> dict[str, Any]:
    origin = time.time_ns() - 60_000 * MS

    def encoded(values: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int)
                 else {"stringValue": str(v)}} for k, v in values.items()]

    span = {"traceId": trace_id, "spanId": span_id, "name": name, "kind": 1,
            "startTimeUnixNano": str(origin + int(start_ms * MS)),
            "endTimeUnixNano": str(origin + int(end_ms * MS)),
            "attributes": encoded(attributes), "status": {"code": 0},
            "events": [{"timeUnixNano": str(origin + int(start_ms * MS)), "name": event,
                        "attributes": encoded(values)} for event, values in events]}
    if parent:
        span["parentSpanId"] = parent
    return span


def post_spans(receiver: str, by_service: dict[str, list[dict[str, Any]]]) -> None:
    """Spans to the receiver as each component exports them: under its service.name."""
    call(receiver, "POST", "/v1/traces", {"resourceSpans": [
        {"resource": {"attributes": [{"key": "service.name",
                                      "value": {"stringValue": service}}]},
         "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}]}
        for service, spans in by_service.items()]})


def send_trace(receiver: str, namespace: str, nodes: list[str]) -> str:
    """A pod's path as the components would export it: kubectl's create, the API server's
    etcd write, the scheduler's cycle (a Filter per node, a Score), the binding, the
    kubelet's sync (every kubelet is service `kubelet`; its spans name their node).
    Returns the trace id."""
    trace_id = namespace.encode().hex().ljust(32, "0")[:32]
    pod_of = {"k8s.resource": "pods", "k8s.namespace": namespace, "k8s.name": "web-1"}
    by_service: dict[str, list[dict[str, Any]]] = {
        "kubectl": [otlp_span(trace_id, "a1" * 8, "", "create pods", 0, 40, pod_of, [])],
        "kube-apiserver": [
            otlp_span(trace_id, "b1" * 8, "a1" * 8, "POST pods", 5, 35, pod_of, []),
            otlp_span(trace_id, "b2" * 8, "b1" * 8, "etcd Txn", 10, 30, {}, [])],
        "kube-scheduler": [otlp_span(
            trace_id, "c1" * 8, "b1" * 8, "schedule", 50, 100,
            {**pod_of, "node": nodes[1], "queue.wait_ms": 3.5, "attempts": 1},
            [("Filter", {"node": nodes[0], "result": "node(s) had untolerated taint "
                                                      "{dedicated: web}",
                         "plugin": "TaintToleration"}),
             ("Filter", {"node": nodes[1], "result": "fits"}),
             ("Score", {"node": nodes[1], "score": 187})])],
        "kubelet": [otlp_span(trace_id, "d1" * 8, "c1" * 8, "SyncPod", 120, 220,
                              {**pod_of, "node": nodes[1]}, [])],
    }
    post_spans(receiver, by_service)
    return trace_id


def test_trace_view_draws_a_lane_per_component_spans_to_scale_and_causality_arrows(
        trace_receiver: str, namespace: str, nodes: list[str],
        page: Callable[[str], Path], browser: WebDriver) -> None:
    trace_id = send_trace(trace_receiver, namespace, nodes)
    # the other kubelet's sync (a lane of its own), and a CRI call under the first one's
    # SyncPod, which names no node (its SyncPod's lane)
    post_spans(trace_receiver, {"kubelet": [
        otlp_span(trace_id, "d2" * 8, "c1" * 8, "SyncPod", 150, 200, {"node": nodes[0]}, []),
        otlp_span(trace_id, "d3" * 8, "d1" * 8, "RunPodSandbox", 130, 180, {}, [])]})
    browser.find_element(By.CSS_SELECTOR, 'nav button[data-view="trace"]').click()
    form = browser.find_element(By.ID, "trace-form")
    form.find_element(By.NAME, "namespace").clear()
    form.find_element(By.NAME, "namespace").send_keys(namespace)
    form.find_element(By.NAME, "name").send_keys("web-1")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    spans = wait_for(browser, lambda d: len(drawn(d, "#swimlanes g.span")) == 7
                     and drawn(d, "#swimlanes g.span"), "the trace's 7 spans")
    page("trace")

    lanes = [g.get_attribute("data-lane") for g in drawn(browser, "#swimlanes g.lane")]
    assert lanes == ["kubectl", "kube-apiserver", "kube-scheduler", f"kubelet {nodes[1]}",
                     f"kubelet {nodes[0]}"]
    assert [g.get_attribute("data-service") for g in drawn(browser, "#swimlanes g.lane")][
        -2:] == ["kubelet", "kubelet"]
    lane_of = {s.get_attribute("data-span-id"): s.get_attribute("data-lane") for s in spans}
    assert lane_of["d3" * 8] == lane_of["d1" * 8] == f"kubelet {nodes[1]}"
    width = {s.get_attribute("data-span-id"): s.find_element(By.TAG_NAME, "rect").rect[
        "width"] for s in spans}
    # to time scale: SyncPod took 100 ms, the schedule cycle 50, etcd's Txn 20
    assert width["d1" * 8] == pytest.approx(2 * width["c1" * 8], rel=0.02)
    assert width["c1" * 8] == pytest.approx(2.5 * width["b2" * 8], rel=0.02)
    left = {s.get_attribute("data-span-id"): s.find_element(By.TAG_NAME, "rect").rect["x"]
            for s in spans}
    assert left["a1" * 8] < left["b1" * 8] < left["c1" * 8] < left["d1" * 8]
    # an arrow where the work passes to another component, none within one
    arrows = {(a.get_attribute("data-from"), a.get_attribute("data-to"))
              for a in drawn(browser, "#swimlanes path.arrow")}
    assert arrows == {("a1" * 8, "b1" * 8), ("b1" * 8, "c1" * 8), ("c1" * 8, "d1" * 8),
                      ("c1" * 8, "d2" * 8)}

    next(s for s in spans if s.get_attribute("data-name") == "schedule").click()
    assert browser.find_element(By.ID, "span-title").text.startswith(
        "kube-scheduler: schedule (50")
    attributes = browser.find_element(By.ID, "span-attributes").text
    assert f'k8s.namespace "{namespace}"' in attributes
    assert f'node "{nodes[1]}"' in attributes
    page("trace-span")


def test_trace_view_follows_an_object_and_draws_each_span_as_it_comes(
        trace_receiver: str, namespace: str, nodes: list[str],
        page: Callable[[str], Path], browser: WebDriver) -> None:
    browser.find_element(By.CSS_SELECTOR, 'nav button[data-view="trace"]').click()
    form = browser.find_element(By.ID, "trace-form")
    form.find_element(By.NAME, "namespace").clear()
    form.find_element(By.NAME, "namespace").send_keys(namespace)
    form.find_element(By.NAME, "name").send_keys("web-1")
    form.find_element(By.NAME, "follow").click()
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(browser, lambda d: "waiting for spans" in d.find_element(
        By.ID, "trace-message").text, "the follow stream to open")

    trace_id = send_trace(trace_receiver, namespace, nodes)
    wait_for(browser, lambda d: len(drawn(d, "#swimlanes g.span")) == 5, "the first 5 spans")
    assert browser.find_element(By.ID, "swimlanes").get_attribute("data-trace-id") == trace_id
    post_spans(trace_receiver, {"kube-proxy": [otlp_span(
        trace_id, "e1" * 8, "d1" * 8, "iptables sync", 230, 240, {"node": nodes[1]}, [])]})
    wait_for(browser, lambda d: len(drawn(d, "#swimlanes g.span")) == 6, "the 6th span")
    assert [g.get_attribute("data-lane") for g in drawn(browser, "#swimlanes g.lane")][
        -1] == f"kube-proxy {nodes[1]}"
    assert browser.find_element(By.ID, "trace-message").text == (
        "following pods/web-1")
    page("trace-follow")


def test_scheduler_panel_lists_every_node_with_its_filter_result_and_score(
        trace_receiver: str, namespace: str, nodes: list[str],
        page: Callable[[str], Path], browser: WebDriver) -> None:
    send_trace(trace_receiver, namespace, nodes)
    browser.find_element(By.CSS_SELECTOR, 'nav button[data-view="scheduler"]').click()
    form = browser.find_element(By.ID, "scheduler-form")
    form.find_element(By.NAME, "namespace").clear()
    form.find_element(By.NAME, "namespace").send_keys(namespace)
    form.find_element(By.NAME, "name").send_keys("web-1")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    rows = wait_for(browser, lambda d: drawn(d, ".decision-table tr[data-node]"),
                    "the decision table")
    page("scheduler")
    table = {row.get_attribute("data-node"): [td.text for td in row.find_elements(
        By.TAG_NAME, "td")] for row in rows}
    assert table == {
        nodes[1]: [nodes[1], "fits", "187"],
        nodes[0]: [nodes[0], "TaintToleration: node(s) had untolerated taint "
                             "{dedicated: web}", ""],
    }
    chosen = browser.find_element(By.CSS_SELECTOR, ".decision-table tr.chosen")
    assert chosen.get_attribute("data-node") == nodes[1]
    assert browser.find_element(By.CSS_SELECTOR, ".decision h2").text == (
        f"attempt 1: bound to {nodes[1]}")


class Exported:
    """The spans a tracer ended, kept to be sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []

    def export(self, span: Span) -> None:
        self.spans.append(span)


def schedule_traced(receiver: str, namespace: str) -> tuple[dict[str, str], Span]:
    """The scheduler's algorithm (scheduler/scheduler.py, in this process and never
    started: it talks to no server) places pod web-1 among four nodes named after the
    namespace, in a recording "schedule" span as the scheduler process makes it; the span
    goes to the receiver in OTLP JSON as the scheduler's exporter sends it. (the nodes by
    role, the span)"""
    names = {role: f"{namespace}-{role}" for role in ("tainted", "small", "busy", "roomy")}
    scheduler = Scheduler(Client(ClientConfig(server="http://127.0.0.1:1")),
                          default_configuration(), IN_TREE_PLUGINS)
    for role, cpu in (("tainted", "8"), ("small", "1"), ("busy", "4"), ("roomy", "8")):
        obj = node(names[role], taints=[{"key": "dedicated", "value": "gpu",
                                         "effect": "NoSchedule"}] if role == "tainted" else [])
        obj["metadata"]["labels"] = {"kubernetes.io/hostname": names[role]}
        obj["status"]["allocatable"]["cpu"] = cpu
        scheduler.cache.add_node(obj)

    def requesting(name: str, cpu: str, node_name: str = "") -> PodInfo:
        obj = pod(name, node_name)
        obj["metadata"].update(namespace=namespace, uid=f"{namespace}-{name}")
        obj["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
        return PodInfo.of(obj)

    scheduler.cache.add_pod(requesting("running", "2", names["busy"]).pod)
    fwk = scheduler.profiles["default-scheduler"]
    fwk.set_snapshot(scheduler.cache.update_snapshot())
    exported = Exported()
    with Tracer("kube-scheduler", exported).span("schedule", **{
            "k8s.resource": "pods", "k8s.namespace": namespace, "k8s.name": "web-1",
            "queue.wait_ms": 1.5, "attempts": 1}) as span:
        span.set("node", asyncio.run(scheduler.schedule_pod(
            fwk, CycleState(), requesting("web-1", "2"))))
    call(receiver, "POST", "/v1/traces", otlp.encode("kube-scheduler", exported.spans))
    return names, span


def test_scheduler_panel_has_a_column_per_score_plugin_and_names_the_rejecting_plugin(
        trace_receiver: str, namespace: str, page: Callable[[str], Path],
        browser: WebDriver) -> None:
    names, span = schedule_traced(trace_receiver, namespace)
    recorded = {attributes["node"]: attributes for _, name, attributes in span.events
                if name == "Score"}
    plugins = [key for key in recorded[names["roomy"]] if key not in ("node", "score")]
    assert {"TaintToleration", "NodeResourcesFit", "NodeResourcesBalancedAllocation"
            } <= set(plugins)
    browser.find_element(By.CSS_SELECTOR, 'nav button[data-view="scheduler"]').click()
    form = browser.find_element(By.ID, "scheduler-form")
    form.find_element(By.NAME, "namespace").clear()
    form.find_element(By.NAME, "namespace").send_keys(namespace)
    form.find_element(By.NAME, "name").clear()
    form.find_element(By.NAME, "name").send_keys("web-1")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    rows = wait_for(browser, lambda d: len(drawn(d, ".decision-table tr[data-node]")) == 4
                    and drawn(d, ".decision-table tr[data-node]"), "the decision table")
    page("scheduler-plugins")
    header = [th.text for th in drawn(browser, ".decision-table th")]
    assert header == ["node", "filter", *plugins, "score (total)"]
    assert [th.get_attribute("title") for th in drawn(browser, ".decision-table th")][
        2:-1] == [f"{plugin}: normalized score (0-100) x its weight" for plugin in plugins]
    table = {row.get_attribute("data-node"): [td.text for td in row.find_elements(
        By.TAG_NAME, "td")] for row in rows}
    blank = [""] * len(plugins)
    assert table == {
        **{names[role]: [names[role], "fits", *(str(recorded[names[role]][plugin])
                                                for plugin in plugins),
                         str(recorded[names[role]]["score"])] for role in ("busy", "roomy")},
        names["tainted"]: [names["tainted"],
                           "TaintToleration: node(s) had untolerated taint(s)", *blank, ""],
        names["small"]: [names["small"], "NodeResourcesFit: Insufficient cpu", *blank, ""],
    }
    # the roomier node wins on NodeResourcesFit's LeastAllocated, and is drawn chosen
    assert recorded[names["roomy"]]["NodeResourcesFit"] > recorded[names["busy"]][
        "NodeResourcesFit"]
    chosen = browser.find_element(By.CSS_SELECTOR, ".decision-table tr.chosen")
    assert chosen.get_attribute("data-node") == span.attributes["node"] == names["roomy"]


def test_links_open_an_objects_path_one_trace_a_scheduling_and_an_objects_events(
        apiserver: APIServerProcess, trace_receiver: str, namespace: str, nodes: list[str],
        proxied_url: str, page: Callable[[str], Path], browser: WebDriver) -> None:
    trace_id = send_trace(trace_receiver, namespace, nodes)
    call(apiserver.url, "POST", f"/api/v1/namespaces/{namespace}/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "web-1.scheduled"},
        "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": namespace},
        "reason": "Scheduled", "message": f"assigned to {nodes[1]}", "type": "Normal",
        "source": {"component": "default-scheduler"}, "count": 1,
        "lastTimestamp": "2026-01-01T00:00:00Z"})
    active = 'section.view.active'

    browser.get(f"{proxied_url}#scheduler/{namespace}/web-1")
    wait_for(browser, lambda d: drawn(d, ".decision-table tr.chosen"), "the decision table")
    assert browser.find_element(By.CSS_SELECTOR, active).get_attribute("id") == "view-scheduler"

    browser.get(f"{proxied_url}#trace/{trace_id}")
    wait_for(browser, lambda d: d.find_element(By.ID, "swimlanes").get_attribute(
        "data-trace-id") == trace_id and len(drawn(d, "#swimlanes g.span")) == 5, "the trace")
    assert browser.find_element(By.CSS_SELECTOR, active).get_attribute("id") == "view-trace"

    browser.get(f"{proxied_url}#events/{namespace}/Pod/web-1")
    (row,) = wait_for(browser, lambda d: drawn(d, "#events tbody tr"), "the pod's Event")
    assert row.get_attribute("data-object") == "Pod/web-1"
    assert browser.find_element(By.CSS_SELECTOR, active).get_attribute("id") == "view-events"
    browser.execute_script("document.getElementById('swimlanes').replaceChildren()")
    row.click()  # an Event leads to its object's path
    wait_for(browser, lambda d: len(drawn(d, "#swimlanes g.span")) == 5, "the pod's path")
    form = browser.find_element(By.ID, "trace-form")
    assert [form.find_element(By.NAME, n).get_attribute("value")
            for n in ("resource", "namespace", "name")] == ["pods", namespace, "web-1"]
    page("linked-trace")


# -- events -----------------------------------------------------------------------------------

def test_events_list_is_live_and_filters_by_object(
        apiserver: APIServerProcess, namespace: str, page: Callable[[str], Path],
        browser: WebDriver) -> None:
    for name, kind, reason in (("a", "Pod", "Scheduled"), ("b", "Pod", "Pulled"),
                               ("c", "Deployment", "ScalingReplicaSet")):
        target = "web-1" if kind == "Pod" and name == "a" else "web-2" if kind == "Pod" \
            else "web"
        call(apiserver.url, "POST", f"/api/v1/namespaces/{namespace}/events", {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"event-{name}", "namespace": namespace},
            "involvedObject": {"kind": kind, "name": target, "namespace": namespace},
            "reason": reason, "message": f"{reason} {target}", "type": "Normal",
            "source": {"component": "test"}, "count": 1,
            "lastTimestamp": f"2026-01-01T00:00:0{'abc'.index(name)}Z"})
    browser.find_element(By.CSS_SELECTOR, 'nav button[data-view="events"]').click()
    form = browser.find_element(By.ID, "events-form")
    form.find_element(By.NAME, "namespace").send_keys(namespace)
    wait_for(browser, lambda d: len(drawn(d, "#events tbody tr")) == 3, "3 events")
    assert [r.get_attribute("data-object") for r in drawn(browser, "#events tbody tr")] == [
        "Deployment/web", "Pod/web-2", "Pod/web-1"]
    form.find_element(By.NAME, "object").send_keys("pod/web-1")
    wait_for(browser, lambda d: len(drawn(d, "#events tbody tr")) == 1, "one event")
    (row,) = drawn(browser, "#events tbody tr")
    assert row.get_attribute("data-object") == "Pod/web-1"
    assert "Scheduled" in row.text
    page("events")


# -- who gets in ------------------------------------------------------------------------------

def unchecked_tls(cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    """A client's TLS that does not check the dashboard's self-signed certificate, and
    shows `cert` (certificate, key) when given."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if cert is not None:
        context.load_cert_chain(*cert)
    return context


def direct_get(url: str, tls: ssl.SSLContext | None = None) -> int | str:
    """The status of a GET straight to the dashboard's address, or why none came."""
    try:
        with urllib.request.urlopen(url, timeout=10, context=tls) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except (OSError, http.client.HTTPException) as error:  # URLError, ssl.SSLError too
        return f"no answer: {error!r}"


def test_only_the_api_server_s_proxy_gets_in_and_anyone_else_fails_the_tls_handshake(
        dashboard: tuple[str, int], proxied_url: str, front_proxy: FrontProxy,
        tmp_path: Path) -> None:
    address, port = dashboard
    direct = f"https://{address}:{port}/healthz"
    refused = {
        "no certificate": direct_get(direct, unchecked_tls()),
        "plain HTTP": direct_get(f"http://{address}:{port}/healthz"),
        "another CA's certificate with the proxy's name": direct_get(direct, unchecked_tls(
            pki.issue(pki.new_ca("another-ca"), FRONT_PROXY_CLIENT, client=True).write(
                tmp_path, "forged"))),
    }
    print(refused)  # the server ends the handshake; no HTTP is spoken
    assert all(str(answer).startswith("no answer: ") for answer in refused.values()), refused

    # the front-proxy CA's certificate, but not the proxy's: the handshake passes, no page
    front_proxy_ca = pki.KeyPair.read(front_proxy.ca_file.parent, "front-proxy-ca")
    someone = pki.issue(front_proxy_ca, "someone-else", client=True).write(tmp_path, "someone")
    assert direct_get(direct, unchecked_tls(someone)) == 403
    # the API server's proxy certificate; and so the page through its service proxy
    assert direct_get(direct, unchecked_tls((front_proxy.cert_file, front_proxy.key_file))
                      ) == 200
    assert status_of(f"{proxied_url}healthz") == 200


# -- `minikube-py dashboard`: the local proxy -------------------------------------------------

@pytest.fixture
def deployed(apiserver: APIServerProcess, dashboard: tuple[str, int],
             kubeconfig: Path, tmp_path: Path) -> Iterator[Path]:
    """The dashboard behind kubernetes-dashboard/kubernetes-dashboard, as a cluster runs
    it; a MINIKUBE_PY_HOME whose kubeconfig (only) names the shared API server."""
    base = apiserver.url
    address, port = dashboard
    with contextlib.suppress(AssertionError):  # made by an earlier test
        call(base, "POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    call(base, "POST", f"/api/v1/namespaces/{NAMESPACE}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": SERVICE},
        "spec": {"ports": [{"port": 443, "targetPort": port}]}})
    try:
        call(base, "POST", f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices", {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "dashboard-1",
                         "labels": {"kubernetes.io/service-name": SERVICE}},
            "addressType": "IPv4", "endpoints": [{"addresses": [address]}],
            "ports": [{"name": "", "port": port, "protocol": "TCP"}]})
        home = tmp_path / "home"
        home.mkdir()
        (home / "kubeconfig").write_text(kubeconfig.read_text())
        yield home
    finally:
        for path in (f"/api/v1/namespaces/{NAMESPACE}/services/{SERVICE}",
                     f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices/"
                     "dashboard-1"):
            try:
                call(base, "DELETE", path)
            except AssertionError:
                pass


def status_of(url: str, method: str = "GET", host: str = "") -> int:
    request = urllib.request.Request(url, method=method,
                                     headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def test_minikube_py_dashboard_prints_a_url_that_opens_the_live_view_through_a_local_proxy(
        deployed: Path, browser: WebDriver, processes: Callable[..., subprocess.Popen[Any]],
        tmp_path: Path) -> None:
    process = processes([sys.executable, "-m", "minikube_py.cluster", "dashboard", "--url"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        env={**os.environ, "MINIKUBE_PY_HOME": str(deployed)})
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), (url, process.stderr.read() if
                                                  process.poll() is not None else "")
    assert url.endswith("/api/v1/namespaces/kubernetes-dashboard/services/"
                        "https:kubernetes-dashboard:/proxy/")

    open_page(browser, url)
    wait_for(browser, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute(
        "data-snapshot") == "loaded", "the first snapshot through the local proxy")
    browser.save_screenshot(str(tmp_path / "through-local-proxy.png"))
    print(f"screenshot: {tmp_path / 'through-local-proxy.png'}")
    assert_no_errors(browser)

    # the proxy passes on GETs of the dashboard's path, asked by this machine, only
    origin = url.split("/api/")[0]
    assert status_of(f"{url}healthz") == 200
    assert status_of(f"{origin}/api/v1/namespaces/kube-system/secrets") == 403
    assert status_of(f"{url}healthz", method="POST") == 403
    assert status_of(f"{url}healthz", host="attacker.example:80") == 403


async def test_disabling_the_dashboard_waits_until_its_namespace_is_gone_so_it_can_come_back(
        kubeconfig: Path, api_client: Client, run_controllers: Callable[..., Any]) -> None:
    """`addons disable dashboard` returns once the namespace controller has emptied and
    removed kubernetes-dashboard: an `addons enable` right after can make its objects
    again (in a namespace still terminating, the API server refuses them)."""
    await run_controllers(NamespaceController)
    namespaces = api_client.resource("namespaces")
    with contextlib.suppress(AlreadyExists):  # made by an earlier test
        await namespaces.create({"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": NAMESPACE}})
    await api_client.resource("serviceaccounts").create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE}},
        NAMESPACE)
    await remove_dashboard(kubeconfig)
    with pytest.raises(NotFound):
        await namespaces.get(NAMESPACE)


def test_minikube_py_dashboard_says_in_one_line_when_the_cluster_has_no_dashboard(
        kubeconfig: Path, tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text(kubeconfig.read_text())
    result = subprocess.run([sys.executable, "-m", "minikube_py.cluster", "dashboard", "--url"],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "MINIKUBE_PY_HOME": str(tmp_path)})
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "error: the dashboard is not deployed in this cluster (no Service "
        "kubernetes-dashboard/kubernetes-dashboard), and this home holds only a kubeconfig, "
        "no minikube-py cluster to deploy it in: run `python -m minikube_py.dashboard` "
        "behind such a Service")
    assert result.stdout == ""


# -- `mkctl trace --web`: a trace's link into the dashboard -----------------------------------

def mkctl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minikube_py.mkctl",
                           f"--kubeconfig={kubeconfig}", *args],
                          capture_output=True, text=True, timeout=60)


def test_mkctl_trace_web_prints_each_traces_link_which_opens_it_as_swimlanes(
        apiserver: APIServerProcess, deployed: Path, trace_receiver: str, namespace: str,
        browser: WebDriver, tmp_path: Path) -> None:
    trace_id = send_trace(trace_receiver, namespace, [f"{namespace}-a", f"{namespace}-b"])
    result = mkctl(deployed / "kubeconfig", "trace", "pod/web-1", "-n", namespace,
                   f"--traces-url={trace_receiver}", "--web")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{apiserver.url}{PROXY_PATH}#trace/{trace_id}\n"

    open_page(browser, result.stdout.strip())
    wait_for(browser, lambda d: d.find_element(By.ID, "swimlanes").get_attribute(
        "data-trace-id") == trace_id and len(drawn(d, "#swimlanes g.span")) == 5,
        "the linked trace drawn")
    assert browser.find_element(By.CSS_SELECTOR, "section.view.active").get_attribute(
        "id") == "view-trace"
    browser.save_screenshot(str(tmp_path / "mkctl-trace-web.png"))
    print(f"screenshot: {tmp_path / 'mkctl-trace-web.png'}")
    assert_no_errors(browser)


def test_mkctl_trace_web_says_in_one_line_when_the_cluster_has_no_dashboard(
        kubeconfig: Path) -> None:
    unreachable = f"http://127.0.0.1:{free_port()}"  # the dashboard is looked for first
    result = mkctl(kubeconfig, "trace", "pod/web-1", "--web", f"--traces-url={unreachable}")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "error: the dashboard is not deployed in this cluster (no Service "
        "kubernetes-dashboard/kubernetes-dashboard); `minikube-py dashboard` deploys it in a "
        "minikube-py cluster\n")
    result = mkctl(kubeconfig, "trace", "pod/web-1", "--web", "--follow")
    assert (result.returncode, result.stderr) == (1, "error: --web cannot be used with "
                                                     "--follow\n")


# -- the trace receiver away ------------------------------------------------------------------

def get_status(url: str) -> tuple[int, dict[str, Any]]:
    """GET over https, the dashboard's self-signed certificate unchecked."""
    try:
        with urllib.request.urlopen(url, timeout=30, context=unchecked_tls()) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_traces_say_why_when_no_receiver_is_named_or_it_cannot_be_reached(
        kubeconfig: Path, tmp_path: Path) -> None:
    query = "api/traces?resource=pods&namespace=default&name=web-1"
    with running_dashboard(kubeconfig, tmp_path / "unnamed.log", "127.0.0.1") as port:
        assert get_status(f"https://127.0.0.1:{port}/{query}") == (503, {
            "code": 503, "message": "this cluster names no trace receiver "
                                    "(kube-public/minikube-py-tracing is not there); start "
                                    "the dashboard with --traces-url"})
    gone = f"http://127.0.0.1:{free_port()}"
    with running_dashboard(kubeconfig, tmp_path / "gone.log", "127.0.0.1",
                           f"--traces-url={gone}") as port:
        for path in (query, f"{query}&follow=true", "api/traces/" + "ab" * 16):
            status, body = get_status(f"https://127.0.0.1:{port}/{path}")
            assert status == 502, (path, body)
            assert body["message"].startswith(f"cannot reach the trace receiver at {gone}: ")
