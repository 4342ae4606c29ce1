"""The gateway controller's pure parts: Ingresses and Gateway API objects -> nginx ports and
statuses, and ports -> nginx.conf (gateway/ingress.py, gatewayapi.py, nginx.py).

When Debian's nginx binary is at hand (MINIKUBE_PY_NGINX, or the image build's cache),
the rendered configuration is also checked with `nginx -t`."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from minikube_py.gateway import gatewayapi, ingress, nginx
from minikube_py.gateway.nginx import Action, Backend, Candidate, Match, Port
from minikube_py.security import pki

NOW = "2026-11-29T06:00:00Z"
CLASS = {"metadata": {"name": "minikube-py", "generation": 1},
         "spec": {"controllerName": gatewayapi.CONTROLLER_NAME}}


def gateway(name: str, listeners: list[dict[str, Any]], namespace: str = "infra") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "generation": 1},
            "spec": {"gatewayClassName": "minikube-py", "listeners": listeners}}


def route(name: str, spec: dict[str, Any], namespace: str = "infra",
          created: str = "2026-11-29T05:00:00Z") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "generation": 2,
                         "creationTimestamp": created}, "spec": spec}


def service(namespace: str, name: str, ip: str, port: int = 8080) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterIP": ip, "ports": [{"port": port}]}}


HTTP = {"name": "http", "port": 80, "protocol": "HTTP"}
SERVICES = {("infra", "v1"): service("infra", "v1", "10.96.0.11"),
            ("infra", "v2"): service("infra", "v2", "10.96.0.12"),
            ("web", "web"): service("web", "web", "10.96.0.13")}


def world(gateways: list[dict[str, Any]], routes: list[dict[str, Any]],
          grants: list[dict[str, Any]] | None = None,
          namespaces: dict[str, dict[str, Any]] | None = None,
          secrets: dict[tuple[str, str], dict[str, Any]] | None = None) -> gatewayapi.World:
    keyed = {(obj["metadata"]["namespace"], obj["metadata"]["name"]): obj for obj in gateways}
    ports = {}
    for number, (key, obj) in enumerate(sorted(keyed.items())):
        for listener in obj["spec"]["listeners"]:
            ports[(*key, listener["port"])] = 10000 + number
    return gatewayapi.World(
        classes={"minikube-py": CLASS}, gateways=keyed,
        routes={(obj["metadata"]["namespace"], obj["metadata"]["name"]): obj for obj in routes},
        grants=grants or [], services=SERVICES, secrets=secrets or {}, namespaces=namespaces or {},
        addresses={key: "172.18.255.200" for key in keyed}, ports=ports, now=NOW)


def parent(plan: gatewayapi.Plan, namespace: str, name: str) -> dict[str, str]:
    """{condition type: reason} of the route's one parent."""
    (only,) = plan.route_parents[(namespace, name)]
    return {item["type"]: f"{item['status']}/{item['reason']}" for item in only["conditions"]}


def test_the_gateway_class_is_accepted_at_its_generation() -> None:
    plan = gatewayapi.compute(world([], []))
    conditions = {item["type"]: item for item in plan.class_status["minikube-py"]["conditions"]}
    assert conditions["Accepted"]["status"] == "True"
    assert conditions["Accepted"]["observedGeneration"] == 1
    assert conditions["SupportedVersion"]["status"] == "True"


def test_a_route_attaches_and_its_matches_are_ordered_by_precedence() -> None:
    matching = route("matching", {"parentRefs": [{"name": "same"}], "rules": [
        {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
         "backendRefs": [{"name": "v1", "port": 8080}]},
        {"matches": [{"path": {"type": "PathPrefix", "value": "/v2"}},
                     {"path": {"type": "Exact", "value": "/v2/x"}}],
         "backendRefs": [{"name": "v2", "port": 8080}]}]})
    plan = gatewayapi.compute(world([gateway("same", [HTTP])], [matching]))
    assert parent(plan, "infra", "matching") == {"Accepted": "True/Accepted",
                                                 "ResolvedRefs": "True/ResolvedRefs"}
    (port,) = plan.ports
    assert [(c.match.path_type, c.match.path) for c in port.candidates] == [
        ("Exact", "/v2/x"), ("PathPrefix", "/v2"), ("PathPrefix", "/")]
    assert port.candidates[0].action.backends == (Backend("10.96.0.12:8080"),)
    listener = plan.gateway_status[("infra", "same")]["listeners"][0]
    assert listener["attachedRoutes"] == 1
    assert plan.gateway_status[("infra", "same")]["addresses"] == [
        {"type": "IPAddress", "value": "172.18.255.200"}]


def test_a_cross_namespace_backend_needs_a_reference_grant() -> None:
    spec = {"parentRefs": [{"name": "same"}],
            "rules": [{"backendRefs": [{"name": "web", "namespace": "web", "port": 8080}]}]}
    plan = gatewayapi.compute(world([gateway("same", [HTTP])], [route("r", spec)]))
    assert parent(plan, "infra", "r")["ResolvedRefs"] == "False/RefNotPermitted"
    assert plan.ports[0].candidates[0].action.backends == (Backend(None),)
    grant = {"metadata": {"name": "g", "namespace": "web"},
             "spec": {"from": [{"group": gatewayapi.GROUP, "kind": "HTTPRoute",
                                "namespace": "infra"}],
                      "to": [{"group": "", "kind": "Service"}]}}
    plan = gatewayapi.compute(world([gateway("same", [HTTP])], [route("r", spec)], [grant]))
    assert parent(plan, "infra", "r")["ResolvedRefs"] == "True/ResolvedRefs"
    assert plan.ports[0].candidates[0].action.backends == (Backend("10.96.0.13:8080"),)


def test_missing_and_unknown_backends_say_why() -> None:
    missing = route("missing", {"parentRefs": [{"name": "same"}],
                                "rules": [{"backendRefs": [{"name": "nope", "port": 8080}]}]})
    unknown = route("unknown", {"parentRefs": [{"name": "same"}], "rules": [{"backendRefs": [
        {"group": "unknownkind.example.com", "kind": "NonExistent", "name": "v1",
         "port": 8080}]}]})
    plan = gatewayapi.compute(world([gateway("same", [HTTP])], [missing, unknown]))
    assert parent(plan, "infra", "missing")["ResolvedRefs"] == "False/BackendNotFound"
    assert parent(plan, "infra", "unknown")["ResolvedRefs"] == "False/InvalidKind"


def test_a_headless_service_s_backends_are_its_ready_endpoints() -> None:
    headless = {"metadata": {"name": "headless", "namespace": "infra"},
                "spec": {"clusterIP": "None", "ports": [{"name": "first-port", "port": 8080,
                                                         "targetPort": 3000}]}}
    endpoint_slice = {"metadata": {"name": "headless-abc", "namespace": "infra"},
                      "ports": [{"name": "first-port", "port": 3000}],
                      "endpoints": [{"addresses": ["10.244.1.5"],
                                     "conditions": {"ready": True}},
                                    {"addresses": ["10.244.2.7"]},
                                    {"addresses": ["10.244.2.9"],
                                     "conditions": {"ready": False}}]}
    spec = {"parentRefs": [{"name": "same"}], "rules": [
        {"matches": [{"path": {"type": "Exact", "value": "/headless"}}],
         "backendRefs": [{"name": "headless", "port": 8080}]},
        {"backendRefs": [{"name": "empty", "port": 8080}]}]}
    state = world([gateway("same", [HTTP])], [route("r", spec)])
    state.services = {**SERVICES, ("infra", "headless"): headless,
                      ("infra", "empty"): {**headless, "metadata": {
                          "name": "empty", "namespace": "infra"}}}
    state.endpoint_slices = {("infra", "headless"): [endpoint_slice]}
    plan = gatewayapi.compute(state)
    assert parent(plan, "infra", "r")["ResolvedRefs"] == "True/ResolvedRefs"
    headless_candidate, empty_candidate = plan.ports[0].candidates
    assert headless_candidate.action.backends == (Backend("10.244.1.5:3000,10.244.2.7:3000"),)
    assert empty_candidate.action.backends == (Backend(None),)  # no endpoint: 500
    text = nginx.render(plan.ports)
    assert "upstream mpu_0 { server 10.244.1.5:3000; server 10.244.2.7:3000; }" in text


def test_a_request_mirror_sends_a_copy_to_its_backend() -> None:
    spec = {"parentRefs": [{"name": "same"}], "rules": [{
        "filters": [{"type": "RequestMirror", "requestMirror": {
            "backendRef": {"name": "v2", "port": 8080}}}],
        "backendRefs": [{"name": "v1", "port": 8080}]}]}
    plan = gatewayapi.compute(world([gateway("same", [HTTP])], [route("r", spec)]))
    assert parent(plan, "infra", "r") == {"Accepted": "True/Accepted",
                                          "ResolvedRefs": "True/ResolvedRefs"}
    (candidate,) = plan.ports[0].candidates
    assert candidate.action.mirrors == ("10.96.0.12:8080",)
    text = nginx.render(plan.ports)
    assert "mirror /_mpr/a0_mirror0;" in text
    assert "location = /_mpr/a0_mirror0 {" in text
    checked = nginx_check(text)
    if checked is not None:
        assert checked.returncode == 0, checked.stderr


def test_a_request_is_routed_only_by_its_most_specific_listener() -> None:
    listeners = [{**HTTP, "name": "any"}, {**HTTP, "name": "wild", "hostname": "*.example.com"},
                 {**HTTP, "name": "abc", "hostname": "abc.example.com"}]
    routes = [route(name, {"parentRefs": [{"name": "iso", "sectionName": name}], "rules": [
        {"matches": [{"path": {"type": "PathPrefix", "value": f"/{name}"}}],
         "backendRefs": [{"name": "v1", "port": 8080}]}]}) for name in ("any", "wild", "abc")]
    plan = gatewayapi.compute(world([gateway("iso", listeners)], routes))
    (port,) = plan.ports
    assert sorted(port.listeners) == ["", "*.example.com", "abc.example.com"]
    assert nginx.most_specific(port.listeners, "x.example.com") == "*.example.com"
    assert nginx.most_specific(port.listeners, "other.org") == ""
    assert nginx.most_specific(["*.example.com"], "other.org") is None
    text = nginx.render(plan.ports)
    servers = text.split("  server {")[2:]
    paths = {server.split("server_name ")[1].split(";")[0]: server for server in servers}
    # each server's map (in the http block) picks only its listener's path
    assert set(paths) == {"abc.example.com", "*.example.com", "_"}
    maps = {line.split()[2]: line for line in text.splitlines() if "$mpr_s" in line
            and line.strip().startswith("map")}
    assert len(maps) == 3 and all(line.count(" a") == 1 for line in maps.values())


def test_listeners_allow_routes_by_namespace_and_hostname() -> None:
    same_only = gateway("same", [HTTP])
    selector = gateway("selector", [{**HTTP, "allowedRoutes": {"namespaces": {
        "from": "Selector", "selector": {"matchLabels": {"team": "web"}}}}}])
    named = gateway("named", [{**HTTP, "hostname": "*.example.com"}])
    routes = [route("from-web", {"parentRefs": [{"name": "same", "namespace": "infra"}]},
                    namespace="web"),
              route("selected", {"parentRefs": [{"name": "selector", "namespace": "infra"}]},
                    namespace="web"),
              route("elsewhere", {"parentRefs": [{"name": "named"}],
                                  "hostnames": ["other.org"]}),
              route("no-section", {"parentRefs": [{"name": "same", "sectionName": "x"}]})]
    plan = gatewayapi.compute(world([same_only, selector, named], routes,
                                    namespaces={"web": {"metadata": {
                                        "name": "web", "labels": {"team": "web"}}}}))
    assert parent(plan, "web", "from-web")["Accepted"] == "False/NotAllowedByListeners"
    assert parent(plan, "web", "selected")["Accepted"] == "True/Accepted"
    assert parent(plan, "infra", "elsewhere")["Accepted"] == "False/NoMatchingListenerHostname"
    assert parent(plan, "infra", "no-section")["Accepted"] == "False/NoMatchingParent"


@pytest.mark.parametrize(("listener", "route_hosts", "served"), [
    (None, [], [""]),
    ("very.specific.com", [], ["very.specific.com"]),
    ("*.wildcard.io", ["foo.wildcard.io", "other.org"], ["foo.wildcard.io"]),
    ("very.specific.com", ["*.specific.com"], ["very.specific.com"]),
    ("*.anotherwildcard.io", ["*.anotherwildcard.io"], ["*.anotherwildcard.io"]),
    ("*.wildcard.io", ["wildcard.io"], []),
])
def test_hostname_intersection(listener: str | None, route_hosts: list[str],
                               served: list[str]) -> None:
    assert gatewayapi.intersect(listener, route_hosts) == served


def test_an_unsupported_protocol_makes_the_listener_not_accepted() -> None:
    plan = gatewayapi.compute(world([gateway("tcp", [
        HTTP, {"name": "tcp", "port": 9000, "protocol": "TCP"}])], []))
    status = plan.gateway_status[("infra", "tcp")]
    tcp = {item["type"]: item["reason"] for item in status["listeners"][1]["conditions"]}
    assert tcp["Accepted"] == "UnsupportedProtocol"
    assert {item["type"]: item["reason"] for item in status["conditions"]}[
        "Accepted"] == "ListenersNotValid"


def tls_secret(cert: bytes, key: bytes) -> dict[str, Any]:
    return {"data": {"tls.crt": base64.b64encode(cert).decode(),
                     "tls.key": base64.b64encode(key).decode()}}


def https(name: str, secret: str, hostname: str | None = None) -> dict[str, Any]:
    listener = {"name": name, "port": 443, "protocol": "HTTPS",
                "tls": {"certificateRefs": [{"group": "", "kind": "Secret", "name": secret}]}}
    return {**listener, "hostname": hostname} if hostname else listener


def test_an_https_listener_serves_its_secret_and_a_bad_one_still_counts_routes() -> None:
    ca = pki.new_ca("gateway-unit-ca")
    pair = pki.issue(ca, "example.org", dns_names=("example.org",), server=True)
    secrets = {("infra", "good"): tls_secret(pair.cert_pem, pair.key_pem),
               ("infra", "malformed"): tls_secret(b"Hello world\n", b"Hello world\n")}
    routes = [route("on-good", {"parentRefs": [{"name": "good"}], "rules": [
                  {"backendRefs": [{"name": "v1", "port": 8080}]}]}),
              route("on-bad", {"parentRefs": [{"name": "bad"}], "rules": [
                  {"backendRefs": [{"name": "v1", "port": 8080}]}]})]
    plan = gatewayapi.compute(world(
        [gateway("good", [https("https", "good"), https("named", "good", "a.org")]),
         gateway("bad", [https("https", "malformed")]), gateway("none", [https("h", "nope")])],
        routes, secrets=secrets))
    (port,) = [port for port in plan.ports if port.port == plan.gateway_ports[
        ("infra", "good")][443]]
    assert [c.hostname for c in port.certificates] == ["", "a.org"]
    assert plan.files["gateway_infra_good.crt"] == pair.cert_pem
    for name, reason in (("bad", "InvalidCertificateRef"), ("none", "InvalidCertificateRef")):
        (listener,) = plan.gateway_status[("infra", name)]["listeners"]
        conditions = {item["type"]: f"{item['status']}/{item['reason']}"
                      for item in listener["conditions"]}
        assert conditions["ResolvedRefs"] == f"False/{reason}"
        assert conditions["Programmed"] == "False/Invalid"
    (bad,) = plan.gateway_status[("infra", "bad")]["listeners"]
    assert bad["attachedRoutes"] == 1  # attachment does not depend on the listener's refs
    assert ("infra", "bad") not in plan.gateway_ports  # but nothing is served for it


def test_a_gateway_with_a_parameters_ref_is_not_accepted() -> None:
    invalid = gateway("invalid", [HTTP])
    invalid["spec"]["infrastructure"] = {"parametersRef": {
        "group": "invalid.io", "kind": "InvalidParameters", "name": "invalid"}}
    plan = gatewayapi.compute(world([invalid], [route("r", {"parentRefs": [
        {"name": "invalid"}]})]))
    status = plan.gateway_status[("infra", "invalid")]
    conditions = {item["type"]: f"{item['status']}/{item['reason']}"
                  for item in status["conditions"]}
    assert conditions == {"Accepted": "False/InvalidParameters", "Programmed": "False/Invalid"}
    assert "addresses" not in status and ("infra", "invalid") not in plan.gateway_ports
    assert parent(plan, "infra", "r")["Accepted"].startswith("False/")


def gateway_conditions(plan: gatewayapi.Plan, name: str) -> dict[str, str]:
    return {item["type"]: f"{item['status']}/{item['reason']}"
            for item in plan.gateway_status[("infra", name)]["conditions"]}


def listener_conditions(plan: gatewayapi.Plan, name: str) -> list[dict[str, str]]:
    return [{item["type"]: f"{item['status']}/{item['reason']}" for item in listener[
        "conditions"]} for listener in plan.gateway_status[("infra", name)]["listeners"]]


def test_crds_of_an_unsupported_bundle_version_are_said_on_the_gateway_class() -> None:
    state = world([], [])
    state.crd_versions = {"gateways.gateway.networking.k8s.io": "v1.6.1",
                          "httproutes.gateway.networking.k8s.io": "v1.6.1"}
    conditions = {item["type"]: item for item in gatewayapi.compute(state).class_status[
        "minikube-py"]["conditions"]}
    assert conditions["SupportedVersion"]["reason"] == "SupportedVersion"
    state.crd_versions["httproutes.gateway.networking.k8s.io"] = "v1.5.0"
    state.crd_versions["grpcroutes.gateway.networking.k8s.io"] = ""
    conditions = {item["type"]: item for item in gatewayapi.compute(state).class_status[
        "minikube-py"]["conditions"]}
    assert (conditions["SupportedVersion"]["status"], conditions["SupportedVersion"][
        "reason"]) == ("False", "UnsupportedVersion")
    assert "httproutes.gateway.networking.k8s.io (v1.5.0)" in conditions[
        "SupportedVersion"]["message"]
    assert "grpcroutes" in conditions["SupportedVersion"]["message"]
    assert conditions["Accepted"]["status"] == "True"  # served on a best-effort basis


def with_addresses(name: str, *addresses: dict[str, str]) -> dict[str, Any]:
    obj = gateway(name, [HTTP])
    obj["spec"]["addresses"] = list(addresses)
    return obj


def test_a_gateway_s_addresses_are_asked_for_or_said_to_be_unusable_or_unsupported() -> None:
    gateways = [with_addresses("hostname", {"type": "Hostname", "value": "gw.example"}),
                with_addresses("two", {"value": "172.18.255.201"},
                               {"value": "172.18.255.202"}),
                with_addresses("v6", {"type": "IPAddress", "value": "fd00::1"}),
                with_addresses("taken", {"value": "172.18.255.203"}),
                with_addresses("usable", {"type": "IPAddress", "value": "172.18.255.200"}),
                with_addresses("refused", {"value": "10.1.2.3"}),
                with_addresses("waiting", {"value": "172.18.255.204"}),
                with_addresses("exhausted")]
    state = world(gateways, [])
    state.taken_addresses = {"172.18.255.203": "Service default/web",
                             "172.18.255.200": "Gateway infra/usable"}
    state.addresses = {("infra", "usable"): "172.18.255.200",
                       ("infra", "waiting"): "172.18.255.250"}
    state.load_balancer_problems = {
        ("infra", "refused"): "requested loadBalancerIP 10.1.2.3 is outside the range",
        ("infra", "exhausted"): "no free address left"}
    plan = gatewayapi.compute(state)
    assert gateway_conditions(plan, "hostname") == {
        "Accepted": "False/UnsupportedAddress", "Programmed": "False/Invalid"}
    for name in ("two", "v6", "taken", "refused"):
        assert gateway_conditions(plan, name) == {
            "Accepted": "True/Accepted", "Programmed": "False/AddressNotUsable"}, name
        assert "addresses" not in plan.gateway_status[("infra", name)]
    assert "in use by Service default/web" in plan.gateway_status[("infra", "taken")][
        "conditions"][1]["message"]
    assert gateway_conditions(plan, "usable") == {
        "Accepted": "True/Accepted", "Programmed": "True/Programmed"}
    assert plan.gateway_status[("infra", "usable")]["addresses"] == [
        {"type": "IPAddress", "value": "172.18.255.200"}]
    assert plan.gateway_addresses[("infra", "usable")] == "172.18.255.200"
    assert gateway_conditions(plan, "waiting")["Programmed"] == "False/AddressNotAssigned"
    assert gateway_conditions(plan, "exhausted")["Programmed"] == "False/NoResources"
    for name in ("hostname", "two", "v6", "taken"):  # no Service: no address not asked for
        assert ("infra", name) not in plan.gateway_ports


def test_a_listener_without_a_free_data_plane_port_is_port_unavailable() -> None:
    state = world([gateway("full", [HTTP, {"name": "more", "port": 8080, "protocol": "HTTP"}])],
                  [])
    del state.ports[("infra", "full", 8080)]
    plan = gatewayapi.compute(state)
    http, more = listener_conditions(plan, "full")
    assert http["Accepted"] == "True/Accepted"
    assert more["Accepted"] == "False/PortUnavailable"
    assert more["Programmed"] == "False/Invalid"
    assert gateway_conditions(plan, "full")["Accepted"] == "True/ListenersNotValid"


def test_https_listeners_whose_hostnames_overlap_say_so() -> None:
    ca = pki.new_ca("gateway-unit-ca")
    pair = pki.issue(ca, "example.com", dns_names=("example.com",), server=True)
    secrets = {("infra", "tls"): tls_secret(pair.cert_pem, pair.key_pem)}
    plan = gatewayapi.compute(world([gateway("tls", [
        https("a", "tls", "foo.example.com"), https("b", "tls", "foo.example.org"),
        https("c", "tls", "*.example.com"), HTTP])], [], secrets=secrets))
    a, b, c, plain = listener_conditions(plan, "tls")
    assert a["OverlappingTLSConfig"] == c["OverlappingTLSConfig"] == (
        "True/OverlappingHostnames")
    assert "OverlappingTLSConfig" not in b and "OverlappingTLSConfig" not in plain
    assert a["Programmed"] == "True/Programmed"  # it only warns


def test_rules_a_route_cannot_serve_are_dropped_and_only_such_rules_are_not_accepted() -> None:
    extension = {"type": "ExtensionRef", "extensionRef": {"group": "x.io", "kind": "F",
                                                          "name": "f"}}
    redirect = {"type": "RequestRedirect", "requestRedirect": {"hostname": "x.example"}}
    mirror = {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "v2",
                                                                          "port": 8080}}}
    partly = route("partly", {"parentRefs": [{"name": "same"}], "rules": [
        {"matches": [{"path": {"type": "PathPrefix", "value": "/ok"}}],
         "backendRefs": [{"name": "v1", "port": 8080}]},
        {"matches": [{"path": {"type": "PathPrefix", "value": "/ext"}}],
         "filters": [extension], "backendRefs": [{"name": "v1", "port": 8080}]}]})
    unsupported = route("unsupported", {"parentRefs": [{"name": "same"}], "rules": [
        {"filters": [extension], "backendRefs": [{"name": "v1", "port": 8080}]}]})
    incompatible = route("incompatible", {"parentRefs": [{"name": "same"}], "rules": [
        {"filters": [redirect, mirror]}]})
    plan = gatewayapi.compute(world([gateway("same", [HTTP])],
                                    [partly, unsupported, incompatible]))
    assert parent(plan, "infra", "partly") == {
        "Accepted": "True/Accepted", "ResolvedRefs": "True/ResolvedRefs",
        "PartiallyInvalid": "True/UnsupportedValue"}
    (only,) = plan.route_parents[("infra", "partly")]
    message = next(item["message"] for item in only["conditions"]
                   if item["type"] == "PartiallyInvalid")
    assert message.startswith("Dropped Rule") and "rules[1]" in message
    assert parent(plan, "infra", "unsupported")["Accepted"] == "False/UnsupportedValue"
    assert parent(plan, "infra", "incompatible")["Accepted"] == "False/IncompatibleFilters"
    assert "PartiallyInvalid" not in parent(plan, "infra", "unsupported")
    (port,) = plan.ports
    assert [candidate.match.path for candidate in port.candidates] == ["/ok"]
    assert plan.gateway_status[("infra", "same")]["listeners"][0]["attachedRoutes"] == 1


def test_ingress_rules_paths_default_backend_and_tls() -> None:
    classes = {"minikube-py": ingress.ingress_class_object()}
    secret = {"data": {"tls.crt": base64.b64encode(b"CERT").decode(),
                       "tls.key": base64.b64encode(b"KEY").decode()}}
    obj = {"metadata": {"name": "web", "namespace": "infra",
                        "creationTimestamp": "2026-11-29T05:00:00Z"},
           "spec": {"defaultBackend": {"service": {"name": "v2", "port": {"number": 8080}}},
                    "tls": [{"hosts": ["a.example"], "secretName": "tls"}],
                    "rules": [{"host": "a.example", "http": {"paths": [
                        {"path": "/", "pathType": "Prefix",
                         "backend": {"service": {"name": "v1", "port": {"number": 8080}}}},
                        {"path": "/exact", "pathType": "Exact",
                         "backend": {"service": {"name": "v2", "port": {"number": 8080}}}}]}}]}}
    other = {**obj, "metadata": {**obj["metadata"], "name": "other"},
             "spec": {"ingressClassName": "someone-else"}}
    plan = ingress.compute_ingress({("infra", "web"): obj, ("infra", "other"): other}, classes,
                                   SERVICES, {("infra", "tls"): secret})
    assert plan.ingresses == [("infra", "web")]
    http, https = plan.ports
    assert [(c.hostname, c.match.path_type, c.match.path) for c in http.candidates] == [
        ("a.example", "Exact", "/exact"), ("a.example", "PathPrefix", "/"),
        ("", "PathPrefix", "/")]
    assert https.certificates[0].hostname == "a.example"
    assert plan.files["ingress_infra_tls.crt"] == b"CERT"


def test_nginx_config_orders_hosts_and_keeps_dollars_literal() -> None:
    ports = [Port(10000, candidates=[
        Candidate("", Match("PathPrefix", "/"), Action((Backend("10.96.0.11:8080"),))),
        Candidate("a.example.com", Match("Exact", "/x", headers=(("Exact", "Version", "2"),)),
                  Action((Backend("10.96.0.12:8080", 3), Backend("10.96.0.11:8080", 1)))),
        Candidate("*.example.com", Match("PathPrefix", "/"),
                  Action((Backend(None),), request_headers=nginx.HeaderFilter(
                      set=(("X-Price", "$5"),))))])]
    text = nginx.render(ports)
    lines = [line.strip() for line in text.splitlines()]
    servers = [line for line in lines if line.startswith("server_name ")]
    assert servers == ["server_name a.example.com;", "server_name *.example.com;",
                       "server_name _;"]
    assert 'proxy_set_header X-Price "${mpr_dollar}5";' in text
    assert "upstream mpu_0 { server 10.96.0.12:8080; }" in lines
    assert "split_clients \"$request_id\" $mpr_split_a0 { 75.0% mpu_0; * mpu_1; }" in lines
    assert "mpr_invalid_backend" in text
    checked = nginx_check(text)
    if checked is not None:
        assert checked.returncode == 0, checked.stderr


def nginx_binary() -> Path | None:
    given = os.environ.get("MINIKUBE_PY_NGINX")
    if given:
        return Path(given)
    found = shutil.which("nginx")
    return Path(found) if found else None


def nginx_check(text: str) -> subprocess.CompletedProcess[str] | None:
    """`nginx -t` of the text, when an nginx binary is at hand."""
    binary = nginx_binary()
    if binary is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        conf = Path(folder) / "nginx.conf"
        conf.write_text(text.replace("user www-data;", "user root;"))
        return subprocess.run([str(binary), "-t", "-c", str(conf), "-p", folder],
                              capture_output=True, text=True, timeout=30)
