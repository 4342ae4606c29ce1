"""The dashboard on a real `up --nodes 2` cluster with make up's example (examples/hello),
in Debian's chromium through `minikube-py dashboard`'s local proxy: both nodes and the
example's pods are drawn, `kubectl scale` changes the drawing, the Deployment's trace has
the components' lanes in time order, and the scheduler panel lists every node.

`up` does not start the dashboard yet: the test runs it on the bridge address with the
admin kubeconfig, behind kube-system/dashboard, as tests/test_dashboard.py does on a bare
API server. It finds the trace receiver as `mkctl trace` does (kube-public/
minikube-py-tracing, which `up` publishes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.test_cluster_cli import kubectl, launcher
from tests.test_dashboard import (
    assert_no_errors,
    browser,  # noqa: F401 - the fixture
    drawn,
    running_dashboard,
    wait_for,
)

pytestmark = pytest.mark.slow

BRIDGE = "172.18.0.1"  # the control plane's address on the nodes' bridge
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hello"


def apply(home: Path, obj: dict[str, Any]) -> None:
    command = Path(sys.executable).with_name("kubectl")
    subprocess.run([str(command), f"--kubeconfig={home / 'kubeconfig'}", "apply", "-f", "-"],
                   input=json.dumps(obj), capture_output=True, text=True, check=True,
                   timeout=60)


def test_the_dashboard_draws_a_real_cluster_its_changes_and_a_deployments_path(
        fast_tmp: Path, tmp_path: Path, browser: WebDriver,  # noqa: F811
        processes: Callable[..., subprocess.Popen[Any]]) -> None:
    home = fast_tmp / "dashboard-home"
    launcher(home, "up", "--nodes", "2")
    try:
        kubectl(home, "apply", "-f", str(EXAMPLE))
        kubectl(home, "rollout", "status", "deployment/hello", "--timeout=120s")
        with running_dashboard(home / "kubeconfig", tmp_path / "dashboard.log",
                               BRIDGE) as port:
            apply(home, {"apiVersion": "v1", "kind": "Service",
                         "metadata": {"name": "dashboard", "namespace": "kube-system"},
                         "spec": {"ports": [{"port": 80, "targetPort": port}]}})
            apply(home, {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                         "metadata": {"name": "dashboard-1", "namespace": "kube-system",
                                      "labels": {"kubernetes.io/service-name": "dashboard"}},
                         "addressType": "IPv4", "endpoints": [{"addresses": [BRIDGE]}],
                         "ports": [{"name": "", "port": port, "protocol": "TCP"}]})
            proxy = processes([sys.executable, "-m", "minikube_py.cluster", "dashboard",
                               "--url"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "MINIKUBE_PY_HOME": str(home)})
            assert proxy.stdout is not None
            url = proxy.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), url
            shots: list[Path] = []

            def screenshot(name: str) -> None:
                shots.append(tmp_path / f"{name}.png")
                browser.save_screenshot(str(shots[-1]))
                print(f"screenshot: {shots[-1]}")

            try:
                browser.get_log("browser")
                browser.get(url)
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
                assert {r.get_attribute("data-node") for r in rows} == {"node-1", "node-2"}
                assert_no_errors(browser)
            finally:
                screenshot("last")
    finally:
        launcher(home, "down", "--purge", check=False)
