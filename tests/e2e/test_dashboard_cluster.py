"""The dashboard add-on on a real `up --nodes 2` cluster with make up's example
(examples/hello). On the fresh cluster, `minikube-py dashboard --url` deploys it (as
`minikube dashboard` enables its add-on) and prints upstream's URL; in Debian's chromium
through that local proxy both nodes and the example's pods are drawn, `kubectl scale`
changes the drawing, the Deployment's trace has the components' lanes in time order, and
the scheduler panel lists every node; the Service's trace and the Deployment's Events are
drawn too. Each view is saved as a PNG (labs/life_of_a_pod and labs/service_packet show
copies of them). Then, on the same cluster: the Service is there, the page answers
through the API server's service proxy with the kubeconfig's credentials, and to no one
who dials the dashboard's address directly (the TLS handshake fails without the API
server's proxy certificate); the dashboard's pod runs with the token of its own
ServiceAccount, bound to `view` (and nodes): it reads, never writes nor reads Secrets;
after `down` and `up` it serves again, `mkctl trace --web` links into it, and `addons
disable dashboard` removes it, which ends its token.

The dashboard finds the trace receiver as `mkctl trace` does (kube-public/
minikube-py-tracing, which `up` publishes).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from selenium.webdriver.remote.webdriver import WebDriver

from minikube_py.cluster.addons import DASHBOARD_USER, NAMESPACE, PROXY_PATH, SERVICE
from minikube_py.cluster.certs import ClusterCertificates
from tests.test_cluster_cli import kubectl, launcher
from tests.test_dashboard import (
    assert_no_errors,
    browser,  # noqa: F401 - the fixture
    direct_get,
    drawn,
    open_page,
    unchecked_tls,
    wait_for,
)

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hello"


@pytest.fixture(scope="module")
def home(fast_tmp: Path) -> Iterator[Path]:
    """A fresh `up --nodes 2` cluster running the example; `down --purge` at the end."""
    home = fast_tmp / "dashboard-home"
    try:
        launcher(home, "up", "--nodes", "2")
        kubectl(home, "apply", "-f", str(EXAMPLE))
        kubectl(home, "rollout", "status", "deployment/hello", "--timeout=120s")
        yield home
    finally:
        launcher(home, "down", "--purge", check=False)


def test_minikube_py_dashboard_deploys_it_and_draws_the_cluster_its_changes_and_a_path(
        home: Path, tmp_path: Path, browser: WebDriver,  # noqa: F811
        processes: Callable[..., subprocess.Popen[Any]]) -> None:
    assert "dashboard" not in launcher(home, "status", check=False).stdout
    proxy = processes([sys.executable, "-m", "minikube_py.cluster", "dashboard", "--url"],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                      env={**os.environ, "MINIKUBE_PY_HOME": str(home)})
    assert proxy.stdout is not None and proxy.stderr is not None
    url = proxy.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:") and url.endswith(PROXY_PATH), (
        url, proxy.stderr.read() if proxy.poll() is not None else "")
    shots: list[Path] = []

    def screenshot(name: str) -> None:
        shots.append(tmp_path / f"{name}.png")
        browser.save_screenshot(str(shots[-1]))
        print(f"screenshot: {shots[-1]}")

    try:
        open_page(browser, url)
        hello = 'rect.pod[data-name^="default/hello-"]'
        wait_for(browser, lambda d: len(drawn(d, f"{hello}.Running")) == 3,
                 "the example's 3 pods, Running")
        screenshot("cluster")
        assert {g.get_attribute("data-name") for g in drawn(browser, "g.node")} >= {
            "node-1", "node-2"}
        assert {r.get_attribute("data-node") for r in drawn(browser, hello)} <= {
            "node-1", "node-2"}

        kubectl(home, "scale", "deployment/hello", "--replicas=4")
        wait_for(browser, lambda d: len(drawn(d, hello)) == 4, "a 4th pod drawn")
        screenshot("scaled")

        browser.get(f"{url}#trace/deployments/default/hello")
        wait_for(browser, lambda d: len(drawn(d, "#swimlanes g.span")) > 10,
                 "the Deployment's trace")
        lanes = [g.get_attribute("data-service")
                 for g in drawn(browser, "#swimlanes g.lane")]
        screenshot("trace")
        print("lanes:", lanes)
        first = {name: next(i for i, lane in enumerate(lanes) if lane.startswith(name))
                 for name in ("kube-apiserver", "kube-controller-manager",
                              "kube-scheduler", "kubelet", "kube-proxy")}
        assert (first["kube-apiserver"] < first["kube-controller-manager"]
                < first["kube-scheduler"] < first["kubelet"]), lanes

        pod = drawn(browser, hello)[0].get_attribute("data-name").split("/")[1]
        browser.get(f"{url}#scheduler/default/{pod}")
        rows = wait_for(browser, lambda d: drawn(d, ".decision-table tr[data-node]"),
                        "the scheduler's decision")
        screenshot("scheduler")
        every_node = set(kubectl(home, "get", "nodes", "-o", "name").stdout.replace(
            "node/", "").split())  # control-plane too: its taint filters it out
        assert {r.get_attribute("data-node") for r in rows} == every_node

        # the Service's path (labs/service_packet): its EndpointSlice, then each proxy
        browser.get(f"{url}#trace/services/default/hello")
        wait_for(browser, lambda d: drawn(
            d, '#swimlanes g.span[data-name="create services"]')
            and drawn(d, '#swimlanes g.lane[data-service="kube-proxy"]'),
            "the Service's trace, to its proxies' syncs")
        screenshot("service-trace")

        browser.get(f"{url}#events/default/Deployment/hello")
        wait_for(browser, lambda d: drawn(d, '#events tr[data-object="Deployment/hello"]'),
                 "the Deployment's Events")
        screenshot("events")
        assert_no_errors(browser)
    finally:
        screenshot("last")


def serves_the_page(home: Path, within: float = 0) -> None:
    """The page, through the API server's service proxy, with the kubeconfig's
    credentials (kubectl's); `within` s for its pod to serve (after `up`)."""
    deadline = time.monotonic() + within
    while True:
        answer = kubectl(home, "get", "--raw", PROXY_PATH, check=False)
        if answer.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert "<title>minikube-py dashboard</title>" in answer.stdout, (
        answer.stdout[:500], answer.stderr)


def can_i(home: Path, *question: str) -> str:
    answer = kubectl(home, "auth", "can-i", *question, f"--as={DASHBOARD_USER}", check=False)
    return answer.stdout.strip()


def as_the_dashboard(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """kubectl with the dashboard pod's token (`config`, a kubeconfig of it)."""
    command = Path(sys.executable).with_name("kubectl")
    return subprocess.run([str(command), f"--kubeconfig={config}", *args],
                          capture_output=True, text=True, timeout=60)


def test_no_one_but_the_api_server_s_proxy_reaches_the_dashboard_s_address(home: Path) -> None:
    launcher(home, "addons", "enable", "dashboard")
    serves_the_page(home)
    address = kubectl(home, "get", "endpointslices", "-n", NAMESPACE, "-o",
                      "jsonpath={.items[0].endpoints[0].addresses[0]}:"
                      "{.items[0].ports[0].port}").stdout
    direct = f"https://{address}/healthz"
    refused = {"no certificate": direct_get(direct, unchecked_tls()),
               "plain HTTP": direct_get(f"http://{address}/healthz")}
    print(address, refused)
    assert all(str(answer).startswith("no answer: ") for answer in refused.values()), refused
    proxy = ClusterCertificates(home).front_proxy()
    assert direct_get(direct, unchecked_tls((proxy.cert_file, proxy.key_file))) == 200


def test_the_dashboard_addon_has_its_service_a_read_only_user_and_comes_back_after_down(
        home: Path, tmp_path: Path) -> None:
    enabled = launcher(home, "addons", "enable", "dashboard")  # enabled already: kept
    assert enabled.stdout.splitlines()[-1] == "dashboard: enabled", enabled.stdout
    listed = kubectl(home, "get", "svc", "-n", NAMESPACE, "-o", "name").stdout.split()
    assert listed == [f"service/{SERVICE}"]
    serves_the_page(home)

    # its pod runs as its own ServiceAccount, with the token mounted in it (no
    # certificate, no kubeconfig on the host), bound to `view` and to reading nodes: it
    # reads what the page draws, never writes nor reads Secrets
    assert not (home / "kubeconfigs" / "dashboard.conf").exists()
    pod = kubectl(home, "get", "pods", "-n", NAMESPACE, "-l", f"k8s-app={SERVICE}", "-o",
                  "jsonpath={.items[0].metadata.name}").stdout
    token = kubectl(home, "exec", "-n", NAMESPACE, pod, "--", "cat",
                    "/var/run/secrets/kubernetes.io/serviceaccount/token").stdout
    claims = token.split(".")[1]
    assert json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))[
        "sub"] == DASHBOARD_USER
    admin = yaml.safe_load((home / "kubeconfig").read_text())
    own = tmp_path / "dashboard-token.conf"
    own.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": admin["clusters"],
        "users": [{"name": "dashboard", "user": {"token": token}}],
        "contexts": [{"name": "dashboard", "context": {
            "cluster": admin["clusters"][0]["name"], "user": "dashboard"}}],
        "current-context": "dashboard"}))
    whoami = as_the_dashboard(own, "auth", "whoami", "-o",
                              "jsonpath={.status.userInfo.username}")
    assert whoami.stdout == DASHBOARD_USER, (whoami.stdout, whoami.stderr)
    assert as_the_dashboard(own, "auth", "can-i", "create", "pods").stdout.strip() == "no"
    assert as_the_dashboard(own, "auth", "can-i", "list", "nodes").stdout.strip() == "yes"
    assert kubectl(home, "get", "clusterrolebinding", f"{SERVICE}-view", "-o",
                   "jsonpath={.roleRef.name}").stdout == "view"
    for question in (("list", "pods"), ("watch", "nodes"), ("get", "services"),
                     ("list", "endpointslices.discovery.k8s.io"), ("watch", "events"),
                     ("get", "configmaps", "-n", "kube-public")):
        assert can_i(home, *question) == "yes", question
    for question in (("get", "secrets", "-n", NAMESPACE), ("list", "secrets"),
                     ("create", "pods"), ("delete", "pods"), ("create", "deployments.apps"),
                     ("update", "services", "-n", NAMESPACE), ("delete", "nodes")):
        assert can_i(home, *question) == "no", question

    # remembered: `up` after `down` applies it again, and its pod serves again
    launcher(home, "down")
    up = launcher(home, "up")
    assert "dashboard: applied" in up.stdout, up.stdout
    serves_the_page(home, within=180)
    web = subprocess.run([sys.executable, "-m", "minikube_py.mkctl",
                          f"--kubeconfig={home / 'kubeconfig'}", "trace", "deploy/hello",
                          "--web"], capture_output=True, text=True, timeout=60)
    assert web.returncode == 0, web.stderr
    assert web.stdout.split("\n")[0].split("#")[0].endswith(PROXY_PATH), web.stdout

    # disabled: its user's role, its Service and its namespace gone, and listed so
    disabled = launcher(home, "addons", "disable", "dashboard")
    assert disabled.stdout.splitlines()[-1] == "dashboard: disabled", disabled.stdout
    assert "dashboard:" not in launcher(home, "status", check=False).stdout
    assert kubectl(home, "get", "clusterrole", SERVICE, check=False).returncode == 1
    assert can_i(home, "list", "pods") == "no"
    ended = as_the_dashboard(own, "get", "pods")  # its account is gone, so is its token
    assert ended.returncode == 1 and "Unauthorized" in ended.stderr, ended.stderr
    assert kubectl(home, "get", "svc", SERVICE, "-n", NAMESPACE, check=False).returncode == 1
    assert kubectl(home, "get", "namespace", NAMESPACE, check=False).returncode == 1
    assert launcher(home, "addons", "list").stdout.split()[:2] == ["dashboard", "disabled"]
