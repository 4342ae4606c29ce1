"""The dashboard add-on's objects (cluster/addons.py): `view` and its own role read the
kinds the page draws, and only read; its Service's slice names the dashboard's address, its
URL is upstream's https one, and cluster.json's
"addons" reads as the set of enabled ones. The e2e test (tests/e2e/
test_dashboard_cluster.py) asks a real cluster's RBAC the same questions."""

from __future__ import annotations

from minikube_py.apiserver.auth.bootstrappolicy.policy import cluster_roles
from minikube_py.cluster.addons import (
    DASHBOARD_RULES,
    NAMESPACE,
    PROXY_PATH,
    SERVICE,
    VIEW_BINDING,
    addons_of,
    dashboard_kubeconfig,
    dashboard_objects,
)
from minikube_py.dashboard.hub import KINDS

READ = {"get", "list", "watch"}


def granted(rules: list[dict[str, list[str]]]) -> set[tuple[str, str]]:
    return {(group, resource) for rule in rules for group in rule.get("apiGroups", [])
            for resource in rule.get("resources", [])}


def test_view_and_the_dashboard_role_read_what_the_page_draws_and_only_read() -> None:
    view = next(role for role in cluster_roles() if role["metadata"]["name"] == "view")
    drawn = {(group or "", plural) for plural, group, _ in KINDS.values()}
    assert drawn <= granted(view["rules"]) | granted(DASHBOARD_RULES)
    assert granted(DASHBOARD_RULES) == drawn - granted(view["rules"]) == {("", "nodes")}
    assert all(set(rule["verbs"]) <= READ for rule in [*view["rules"], *DASHBOARD_RULES])
    assert ("", "secrets") not in granted(view["rules"])


def test_the_service_s_slice_names_the_dashboard_and_the_binding_its_account() -> None:
    made = dashboard_objects("172.18.0.1", 9090)
    objects = {plural: obj for _, plural, obj in made}
    assert list(objects) == ["namespaces", "serviceaccounts", "clusterroles",
                             "clusterrolebindings", "services", "endpointslices"]
    bindings = {obj["metadata"]["name"]: obj["roleRef"]["name"] for _, plural, obj in made
                if plural == "clusterrolebindings"}
    assert bindings == {SERVICE: SERVICE, VIEW_BINDING: "view"}
    endpoint_slice = objects["endpointslices"]
    assert endpoint_slice["metadata"]["labels"]["kubernetes.io/service-name"] == SERVICE
    assert endpoint_slice["endpoints"][0]["addresses"] == ["172.18.0.1"]
    assert endpoint_slice["ports"] == [{"name": "", "port": 9090, "protocol": "TCP"}]
    assert objects["services"]["spec"]["ports"] == [
        {"port": 443, "protocol": "TCP", "targetPort": 9090}]
    assert objects["clusterrolebindings"]["subjects"] == [
        {"kind": "ServiceAccount", "name": SERVICE, "namespace": NAMESPACE}]
    assert PROXY_PATH == ("/api/v1/namespaces/kubernetes-dashboard/services/"
                          "https:kubernetes-dashboard:/proxy/")


def test_cluster_json_names_the_enabled_addons() -> None:
    assert addons_of({}) == set()
    assert addons_of({"addons": {"dashboard": True}}) == {"dashboard"}
    assert addons_of({"addons": {"dashboard": False}}) == set()


def test_the_dashboard_s_kubeconfig_holds_a_token_as_its_only_credential() -> None:
    document = dashboard_kubeconfig("https://172.18.0.1:6443", b"PEM", "a.b.c")
    assert document["users"] == [{"name": SERVICE, "user": {"token": "a.b.c"}}]
    assert document["clusters"][0]["cluster"] == {
        "server": "https://172.18.0.1:6443", "certificate-authority-data": "UEVN"}
    assert document["contexts"][0]["context"]["namespace"] == NAMESPACE
