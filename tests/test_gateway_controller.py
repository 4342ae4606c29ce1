"""The gateway controller process (`python -m minikube_py.gateway`) against a real API
server of its own, driven with the real kubectl: the IngressClass it makes, the data plane
it asks for (Secret, Deployment, LoadBalancer Services in kube-system), the nginx.conf it
writes, and the statuses of Ingresses and of Gateway API objects once the standard CRDs
are applied. No nodes run here: the test plays the service-lb controller's part by giving
the Services their address (tests/e2e/test_ingress_gateway.py runs the whole path)."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from minikube_py.cluster.components import GatewayProcess
from tests.conftest import module_own_apiserver
from tests.unit.test_gateway_config import nginx_check

etcd, apiserver, kubeconfig = module_own_apiserver("gateway")

# ../shared/data/crds/gateway-api from the checkout: /work/main's parent, or a worktree's
# ancestor (the standard channel's CRDs, as a user applies them)
CRDS = next((parent / "shared/data/crds/gateway-api" for parent in Path(__file__).resolve().parents
             if (parent / "shared/data/crds/gateway-api").is_dir()), None)
CONFORMANCE = Path(__file__).parent / "e2e" / "gateway_conformance"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
async def controller(kubeconfig: Path, fast_tmp: Path) -> AsyncIterator[GatewayProcess]:
    async with GatewayProcess(kubeconfig, fast_tmp / "gateway-controller.log",
                              extra_args=("--v=4",)) as process:
        yield process


def until(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.3)


def get(kubectl: Kubectl, *what: str) -> Any:
    done = kubectl("get", *what, "-o", "json", check=False)
    return json.loads(done.stdout) if done.returncode == 0 else None


def nginx_conf(kubectl: Kubectl) -> str:
    secret = get(kubectl, "secret", "-n", "kube-system", "minikube-py-gateway") or {}
    return base64.b64decode((secret.get("data") or {}).get("nginx.conf", "")).decode()


def give_address(kubectl: Kubectl, service: str, address: str) -> None:
    """What the service-lb controller does for a LoadBalancer Service."""
    kubectl("patch", "service", "-n", "kube-system", service, "--subresource=status",
            "--type=merge", "-p", json.dumps(
                {"status": {"loadBalancer": {"ingress": [{"ip": address}]}}}))


def test_the_controller_makes_the_default_ingress_class(controller: GatewayProcess,
                                                         kubectl: Kubectl) -> None:
    ingress_class = until(lambda: get(kubectl, "ingressclass", "minikube-py"),
                          "IngressClass minikube-py")
    assert ingress_class["spec"]["controller"] == "minikube-py.io/ingress-controller"
    assert ingress_class["metadata"]["annotations"][
        "ingressclass.kubernetes.io/is-default-class"] == "true"
    assert get(kubectl, "deployment", "-n", "kube-system", "minikube-py-gateway") is None


def test_an_ingress_gets_nginx_config_a_data_plane_and_its_address(
        controller: GatewayProcess, kubectl: Kubectl, namespace: str) -> None:
    until(lambda: get(kubectl, "ingressclass", "minikube-py"), "IngressClass minikube-py")
    kubectl("create", "service", "clusterip", "web", "--tcp=80:8080", "-n", namespace)
    cluster_ip = get(kubectl, "service", "web", "-n", namespace)["spec"]["clusterIP"]
    kubectl("create", "ingress", "web", "-n", namespace, "--rule=web.example/*=web:80",
            "--rule=web.example/exact=web:80")
    assert get(kubectl, "ingress", "web", "-n", namespace)["spec"][
        "ingressClassName"] == "minikube-py"
    conf = until(lambda: (text := nginx_conf(kubectl)) and f"{cluster_ip}:80" in text and text,
                 "the Ingress in nginx.conf")
    assert "server_name web.example;" in conf
    checked = nginx_check(conf)
    if checked is not None:
        assert checked.returncode == 0, checked.stderr
    deployment = until(lambda: get(kubectl, "deployment", "-n", "kube-system",
                                   "minikube-py-gateway"), "the data plane's Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "docker.io/library/nginx:latest"
    service = until(lambda: get(kubectl, "service", "-n", "kube-system",
                                "minikube-py-ingress"), "the ingress Service")
    assert service["spec"]["type"] == "LoadBalancer"
    assert [(port["port"], port["targetPort"]) for port in service["spec"]["ports"]] == [
        (80, 80), (443, 443)]
    give_address(kubectl, "minikube-py-ingress", "172.18.255.210")
    until(lambda: ((get(kubectl, "ingress", "web", "-n", namespace).get("status") or {})
                   .get("loadBalancer") or {}).get("ingress") == [{"ip": "172.18.255.210"}],
          "the Ingress's status.loadBalancer")


def conformance_manifest(name: str) -> str:
    return (CONFORMANCE / name).read_text().replace("{GATEWAY_CLASS_NAME}", "minikube-py")


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {item["type"]: f"{item['status']}/{item['reason']}"
            for item in (obj.get("status") or {}).get("conditions") or []}


def route_conditions(kubectl: Kubectl, namespace: str, name: str) -> dict[str, str]:
    route = get(kubectl, "httproute", "-n", namespace, name) or {}
    parents = (route.get("status") or {}).get("parents") or []
    return {item["type"]: f"{item['status']}/{item['reason']}"
            for parent in parents for item in parent["conditions"]}


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds/gateway-api")
def test_gateway_api_objects_get_their_status_once_the_crds_are_applied(
        controller: GatewayProcess, kubectl: Kubectl) -> None:
    assert CRDS is not None
    for crd in sorted(CRDS.glob("gateway.networking.k8s.io_*.yaml")):
        kubectl("apply", "--server-side", "-f", str(crd), timeout=120)
    gateway_class = until(lambda: (obj := get(kubectl, "gatewayclass", "minikube-py"))
                          and conditions(obj).get("Accepted") == "True/Accepted" and obj,
                          "GatewayClass minikube-py Accepted")
    assert gateway_class["spec"]["controllerName"] == "minikube-py.io/gateway-controller"
    base = "\n---\n".join(
        document for document in (CONFORMANCE / "base.yaml").read_text().split("\n---\n")
        if "kind: Deployment" not in document).replace("{GATEWAY_CLASS_NAME}", "minikube-py")
    kubectl("apply", "-f", "-", input=base)
    for name in ("httproute-simple-same-namespace.yaml",
                 "httproute-invalid-cross-namespace-backend-ref.yaml",
                 "httproute-invalid-cross-namespace-parent-ref.yaml"):
        kubectl("apply", "-f", "-", input=conformance_manifest(name))
    infra = "gateway-conformance-infra"
    until(lambda: route_conditions(kubectl, infra, "gateway-conformance-infra-test") == {
        "Accepted": "True/Accepted", "ResolvedRefs": "True/ResolvedRefs"},
          "the simple route Accepted")
    until(lambda: route_conditions(kubectl, infra, "invalid-cross-namespace-backend-ref") == {
        "Accepted": "True/Accepted", "ResolvedRefs": "False/RefNotPermitted"},
          "RefNotPermitted")
    until(lambda: route_conditions(kubectl, "gateway-conformance-web-backend",
                                   "invalid-cross-namespace-parent-ref").get("Accepted")
          == "False/NotAllowedByListeners", "NotAllowedByListeners")
    service = until(lambda: get(kubectl, "service", "-n", "kube-system",
                                "gateway-gateway-conformance-infra-same-namespace"),
                    "the Gateway's Service")
    (port,) = service["spec"]["ports"]
    assert port["port"] == 80 and port["targetPort"] >= 10000
    gateway = get(kubectl, "gateway", "-n", infra, "same-namespace")
    assert conditions(gateway)["Programmed"] == "False/AddressNotAssigned"
    give_address(kubectl, "gateway-gateway-conformance-infra-same-namespace",
                 "172.18.255.211")
    gateway = until(lambda: (obj := get(kubectl, "gateway", "-n", infra, "same-namespace"))
                    and conditions(obj).get("Programmed") == "True/Programmed" and obj,
                    "the Gateway Programmed")
    assert gateway["status"]["addresses"] == [{"type": "IPAddress", "value": "172.18.255.211"}]
    (listener,) = gateway["status"]["listeners"]
    assert listener["attachedRoutes"] == 2
    assert conditions({"status": listener}) == {
        "Accepted": "True/Accepted", "ResolvedRefs": "True/ResolvedRefs",
        "Conflicted": "False/NoConflicts", "Programmed": "True/Programmed"}
    conf = nginx_conf(kubectl)
    assert f"listen {port['targetPort']}" in conf
    checked = nginx_check(conf)
    if checked is not None:
        assert checked.returncode == 0, checked.stderr
