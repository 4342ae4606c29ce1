"""The gateway controller process (`python -m minikube_py.gateway`) against a real API
server of its own, driven with the real kubectl: the IngressClass it makes, the data plane
it asks for (Secret, Deployment, LoadBalancer Services in kube-system), the nginx.conf it
writes, and the statuses of Ingresses and of Gateway API objects once the standard CRDs
are applied. No nodes run here: the test plays the service-lb controller's part by giving
the Services their address (tests/e2e/test_ingress_gateway.py runs the whole path)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from minikube_py.cluster.components import GatewayProcess
from minikube_py.gateway.controller import PORTS_ANNOTATION, gateway_service_name
from minikube_py.security import pki
from tests.conftest import module_own_apiserver
from tests.e2e.helpers import until
from tests.unit.test_gateway_config import nginx_check

etcd, apiserver, kubeconfig = module_own_apiserver("gateway")

# ../shared/data/crds/gateway-api from the checkout: /work/main's parent, or a worktree's
# ancestor (the standard channel's CRDs, as a user applies them)
CRDS = next((parent / "shared/data/crds/gateway-api" for parent in Path(__file__).resolve().parents
             if (parent / "shared/data/crds/gateway-api").is_dir()), None)
CONFORMANCE = Path(__file__).parent / "e2e" / "gateway_conformance"
DATA_PLANE_PORTS = "10000-10019"  # few, so that a Gateway can ask for more than there are
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
async def controller(kubeconfig: Path, fast_tmp: Path) -> AsyncIterator[GatewayProcess]:
    async with GatewayProcess(kubeconfig, fast_tmp / "gateway-controller.log",
                              extra_args=("--v=4", f"--data-plane-ports={DATA_PLANE_PORTS}")
                              ) as process:
        yield process


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


def apply_crds(kubectl: Kubectl) -> None:
    """The standard channel's CRDs, as a user applies them (again: no change)."""
    assert CRDS is not None
    for crd in sorted(CRDS.glob("gateway.networking.k8s.io_*.yaml")):
        kubectl("apply", "--server-side", "-f", str(crd), timeout=120)


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
    apply_crds(kubectl)
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


def gateway_manifest(namespace: str, name: str, listeners: list[dict[str, Any]],
                     **spec: Any) -> str:
    return json.dumps({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                       "metadata": {"name": name, "namespace": namespace},
                       "spec": {"gatewayClassName": "minikube-py", "listeners": listeners,
                                **spec}})


def gateway_conditions(kubectl: Kubectl, namespace: str, name: str) -> dict[str, str]:
    return conditions(get(kubectl, "gateway", "-n", namespace, name) or {})


def load_balancer_failed(kubectl: Kubectl, service: str, message: str) -> None:
    """What the service-lb controller says on a Service it cannot give an address (beside
    its SyncLoadBalancerFailed Event): the condition minikube-py.io/LoadBalancerReady
    False."""
    kubectl("patch", "service", "-n", "kube-system", service, "--subresource=status",
            "--type=merge", "-p", json.dumps({"status": {"conditions": [{
                "type": "minikube-py.io/LoadBalancerReady", "status": "False",
                "reason": "SyncLoadBalancerFailed",
                "message": f"Error syncing load balancer: failed to ensure load balancer: "
                           f"{message}",
                "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}]}}))


HTTP_LISTENER = {"name": "http", "port": 80, "protocol": "HTTP"}


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds/gateway-api")
def test_crds_of_a_bundle_version_it_does_not_know_are_said_on_the_gateway_class(
        controller: GatewayProcess, kubectl: Kubectl) -> None:
    apply_crds(kubectl)

    def supported_version() -> str | None:
        return conditions(get(kubectl, "gatewayclass", "minikube-py") or {}).get(
            "SupportedVersion")

    until(lambda: supported_version() == "True/SupportedVersion", "SupportedVersion True")
    crd = "httproutes.gateway.networking.k8s.io"
    kubectl("annotate", "crd", crd, "--overwrite",
            "gateway.networking.k8s.io/bundle-version=v1.7.0")
    try:
        until(lambda: supported_version() == "False/UnsupportedVersion",
              "SupportedVersion False/UnsupportedVersion")
        gateway_class = get(kubectl, "gatewayclass", "minikube-py")
        (version,) = [item for item in gateway_class["status"]["conditions"]
                      if item["type"] == "SupportedVersion"]
        assert f"{crd} (v1.7.0)" in version["message"]
        assert conditions(gateway_class)["Accepted"] == "True/Accepted"
    finally:
        kubectl("annotate", "crd", crd, "--overwrite",
                "gateway.networking.k8s.io/bundle-version=v1.6.1")
    until(lambda: supported_version() == "True/SupportedVersion", "SupportedVersion True again")


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds/gateway-api")
def test_a_gateway_s_addresses_are_asked_of_the_load_balancer_or_said_to_be_unusable(
        controller: GatewayProcess, kubectl: Kubectl, namespace: str) -> None:
    """GatewayStaticAddresses' steps: an unsupported address type, an address that cannot
    be had, then one that can; and a Gateway the load balancer has no address for."""
    apply_crds(kubectl)
    kubectl("apply", "-f", "-", input=gateway_manifest(
        namespace, "static", [HTTP_LISTENER],
        addresses=[{"type": "Hostname", "value": "gateway.example"},
                   {"value": "172.18.255.231"}, {"value": "172.18.255.232"}]))
    until(lambda: gateway_conditions(kubectl, namespace, "static").get("Accepted")
          == "False/UnsupportedAddress", "Accepted False/UnsupportedAddress")
    service = gateway_service_name(namespace, "static")
    assert get(kubectl, "service", "-n", "kube-system", service) is None
    kubectl("patch", "gateway", "-n", namespace, "static", "--type=merge", "-p", json.dumps(
        {"spec": {"addresses": [{"value": "172.18.255.231"}, {"value": "172.18.255.232"}]}}))
    until(lambda: gateway_conditions(kubectl, namespace, "static") == {
        "Accepted": "True/Accepted", "Programmed": "False/AddressNotUsable"},
          "Programmed False/AddressNotUsable (two addresses)")
    kubectl("patch", "gateway", "-n", namespace, "static", "--type=merge", "-p", json.dumps(
        {"spec": {"addresses": [{"type": "IPAddress", "value": "10.99.0.1"}]}}))
    until(lambda: (get(kubectl, "service", "-n", "kube-system", service) or {}).get(
        "spec", {}).get("loadBalancerIP") == "10.99.0.1", "the Service asking for 10.99.0.1")
    assert gateway_conditions(kubectl, namespace, "static")[
        "Programmed"] == "False/AddressNotAssigned"
    load_balancer_failed(kubectl, service, "requested loadBalancerIP 10.99.0.1 is outside "
                         "--loadbalancer-ip-range (172.18.255.200-172.18.255.250)")
    until(lambda: gateway_conditions(kubectl, namespace, "static").get("Programmed")
          == "False/AddressNotUsable", "Programmed False/AddressNotUsable (refused)")
    kubectl("patch", "gateway", "-n", namespace, "static", "--type=merge", "-p", json.dumps(
        {"spec": {"addresses": [{"type": "IPAddress", "value": "172.18.255.232"}]}}))
    until(lambda: (get(kubectl, "service", "-n", "kube-system", service) or {}).get(
        "spec", {}).get("loadBalancerIP") == "172.18.255.232",
          "the Service asking for 172.18.255.232")
    give_address(kubectl, service, "172.18.255.232")
    gateway = until(lambda: (obj := get(kubectl, "gateway", "-n", namespace, "static"))
                    and conditions(obj).get("Programmed") == "True/Programmed" and obj,
                    "Programmed True")
    assert gateway["status"]["addresses"] == [{"type": "IPAddress", "value": "172.18.255.232"}]

    kubectl("apply", "-f", "-", input=gateway_manifest(namespace, "starved", [HTTP_LISTENER]))
    starved = gateway_service_name(namespace, "starved")
    until(lambda: get(kubectl, "service", "-n", "kube-system", starved), "its Service")
    load_balancer_failed(kubectl, starved, "no free address left in --loadbalancer-ip-range "
                         "(172.18.255.200-172.18.255.250)")
    until(lambda: gateway_conditions(kubectl, namespace, "starved").get("Programmed")
          == "False/NoResources", "Programmed False/NoResources")
    kubectl("delete", "gateway", "-n", namespace, "static", "starved")


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds/gateway-api")
def test_two_gateway_services_claiming_one_nginx_port_are_given_two(
        controller: GatewayProcess, kubectl: Kubectl, namespace: str) -> None:
    """A sync that has not seen a new Gateway's Service yet gives its nginx port to the
    next Gateway too, and both Services say so: one keeps the port (the older Service's,
    by creationTimestamp, then name), the other Gateway is given a free one, and its
    Service is set to it."""
    apply_crds(kubectl)

    def service(name: str) -> dict[str, Any]:
        return get(kubectl, "service", "-n", "kube-system",
                   gateway_service_name(namespace, name)) or {"metadata": {}, "spec": {}}

    def nginx_ports(name: str) -> dict[str, int]:
        annotations = service(name)["metadata"].get("annotations") or {}
        return json.loads(annotations.get(PORTS_ANNOTATION, "{}"))

    kubectl("apply", "-f", "-", input=gateway_manifest(namespace, "first", [HTTP_LISTENER]))
    claimed = until(lambda: nginx_ports("first"), "the first Gateway's Service")["80"]
    kubectl("apply", "-f", "-", input=gateway_manifest(namespace, "second", [HTTP_LISTENER]))
    until(lambda: nginx_ports("second"), "the second Gateway's Service")
    kubectl("patch", "service", "-n", "kube-system", gateway_service_name(namespace, "second"),
            "--type=merge", "-p", json.dumps({
                "metadata": {"annotations": {PORTS_ANNOTATION: json.dumps({"80": claimed})}},
                "spec": {"ports": [{"name": "port-80", "port": 80, "targetPort": claimed}]}}))

    def ports() -> dict[str, int | None]:
        return {name: nginx_ports(name).get("80") for name in ("first", "second")}
    given = until(lambda: (found := ports()) and None not in found.values()
                  and len(set(found.values())) == 2 and found,
                  lambda: f"a port of its own for each Gateway (now {ports()})")
    assert claimed in given.values()
    for name, port in given.items():
        assert [item["targetPort"] for item in service(name)["spec"]["ports"]] == [port]
    conf = until(lambda: (text := nginx_conf(kubectl)) and {int(port) for port in re.findall(
        r"listen (\d+)", text)} >= set(given.values()) and text, "nginx listening on both")
    assert len(re.findall(rf"listen {claimed}\b", conf)) == 1, conf
    kubectl("delete", "gateway", "-n", namespace, "first", "second")


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds/gateway-api")
def test_listener_conditions_port_unavailable_and_overlapping_tls_config(
        controller: GatewayProcess, kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    apply_crds(kubectl)
    ca = pki.new_ca("gateway-controller-test-ca")
    pair = pki.issue(ca, "example.com", dns_names=("example.com", "*.example.com"),
                     server=True)
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    kubectl("create", "secret", "tls", "tls", "-n", namespace,
            f"--cert={tmp_path / 'tls.crt'}", f"--key={tmp_path / 'tls.key'}")
    tls = {"certificateRefs": [{"name": "tls"}]}
    kubectl("apply", "-f", "-", input=gateway_manifest(namespace, "overlap", [
        {"name": "a", "port": 443, "protocol": "HTTPS", "hostname": "foo.example.com",
         "tls": tls},
        {"name": "b", "port": 443, "protocol": "HTTPS", "hostname": "foo.example.org",
         "tls": tls},
        {"name": "c", "port": 443, "protocol": "HTTPS", "hostname": "*.example.com",
         "tls": tls}]))

    def listeners(name: str) -> dict[str, dict[str, str]]:
        gateway = get(kubectl, "gateway", "-n", namespace, name) or {}
        return {item["name"]: conditions({"status": item})
                for item in (gateway.get("status") or {}).get("listeners") or []}

    found = until(lambda: (seen := listeners("overlap")) and len(seen) == 3 and seen,
                  "the listeners' status")
    assert found["a"]["OverlappingTLSConfig"] == "True/OverlappingHostnames"
    assert found["c"]["OverlappingTLSConfig"] == "True/OverlappingHostnames"
    assert "OverlappingTLSConfig" not in found["b"]
    assert {item["Accepted"] for item in found.values()} == {"True/Accepted"}

    many = [{"name": f"port-{port}", "port": port, "protocol": "HTTP"}
            for port in range(8000, 8030)]  # more than --data-plane-ports holds
    kubectl("apply", "-f", "-", input=gateway_manifest(namespace, "many", many))
    found = until(lambda: (seen := listeners("many")) and len(seen) == 30 and seen,
                  "the listeners' status")
    accepted = {item["Accepted"] for item in found.values()}
    assert accepted == {"True/Accepted", "False/PortUnavailable"}, accepted
    assert conditions(get(kubectl, "gateway", "-n", namespace, "many"))[
        "Accepted"] == "True/ListenersNotValid"
    kubectl("delete", "gateway", "-n", namespace, "many", "overlap")


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds/gateway-api")
def test_route_rules_it_cannot_serve_are_dropped_or_make_the_route_not_accepted(
        controller: GatewayProcess, kubectl: Kubectl, namespace: str) -> None:
    apply_crds(kubectl)
    kubectl("create", "service", "clusterip", "web", "--tcp=80:8080", "-n", namespace)
    kubectl("apply", "-f", "-", input=gateway_manifest(namespace, "routes", [HTTP_LISTENER]))
    backend = [{"name": "web", "port": 80}]
    extension = {"type": "ExtensionRef",
                 "extensionRef": {"group": "example.com", "kind": "Filter", "name": "f"}}

    def route(name: str, rules: list[dict[str, Any]]) -> str:
        return json.dumps({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                           "metadata": {"name": name, "namespace": namespace},
                           "spec": {"parentRefs": [{"name": "routes"}], "rules": rules}})

    kubectl("apply", "-f", "-", input=route("partly", [
        {"matches": [{"path": {"type": "PathPrefix", "value": "/ok"}}], "backendRefs": backend},
        {"matches": [{"path": {"type": "PathPrefix", "value": "/extension"}}],
         "filters": [extension], "backendRefs": backend}]))
    kubectl("apply", "-f", "-", input=route("incompatible", [{"filters": [
        {"type": "RequestRedirect", "requestRedirect": {"hostname": "elsewhere.example"}},
        {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "web",
                                                                    "port": 80}}}]}]))
    until(lambda: route_conditions(kubectl, namespace, "partly") == {
        "Accepted": "True/Accepted", "ResolvedRefs": "True/ResolvedRefs",
        "PartiallyInvalid": "True/UnsupportedValue"}, "PartiallyInvalid")
    parents = get(kubectl, "httproute", "-n", namespace, "partly")["status"]["parents"]
    (partially,) = [item for item in parents[0]["conditions"]
                    if item["type"] == "PartiallyInvalid"]
    assert partially["message"].startswith("Dropped Rule") and "rules[1]" in partially[
        "message"]
    until(lambda: route_conditions(kubectl, namespace, "incompatible").get("Accepted")
          == "False/IncompatibleFilters", "Accepted False/IncompatibleFilters")
    conf = nginx_conf(kubectl)
    assert "/extension" not in conf and "elsewhere.example" not in conf
    kubectl("delete", "gateway", "-n", namespace, "routes")
