"""The dashboard add-on's objects (cluster/addons.py): its role reads exactly the kinds the
page draws, its Service's slice names the dashboard's address, and cluster.json's
"addons" reads as the set of enabled ones. The e2e test (tests/e2e/
test_dashboard_cluster.py) asks a real cluster's RBAC the same questions."""

from __future__ import annotations

from minikube_py.cluster.addons import (
    DASHBOARD_RULES,
    NAMESPACE,
    PROXY_PATH,
    SERVICE,
    addons_of,
    dashboard_objects,
)
from minikube_py.dashboard.hub import KINDS


def test_the_role_reads_what_the_page_draws_and_nothing_else() -> None:
    granted = {(group, resource) for rule in DASHBOARD_RULES for group in rule["apiGroups"]
               for resource in rule["resources"]}
    drawn = {(group or "", plural) for plural, group, _ in KINDS.values()}
    assert granted == drawn
    assert all(rule["verbs"] == ["get", "list", "watch"] for rule in DASHBOARD_RULES)


def test_the_service_s_slice_names_the_dashboard_and_the_binding_its_account() -> None:
    objects = {plural: obj for _, plural, obj in dashboard_objects("172.18.0.1", 9090)}
    assert list(objects) == ["namespaces", "serviceaccounts", "clusterroles",
                             "clusterrolebindings", "services", "endpointslices"]
    endpoint_slice = objects["endpointslices"]
    assert endpoint_slice["metadata"]["labels"]["kubernetes.io/service-name"] == SERVICE
    assert endpoint_slice["endpoints"][0]["addresses"] == ["172.18.0.1"]
    assert endpoint_slice["ports"] == [{"name": "", "port": 9090, "protocol": "TCP"}]
    assert objects["services"]["spec"]["ports"][0]["targetPort"] == 9090
    assert objects["clusterrolebindings"]["subjects"] == [
        {"kind": "ServiceAccount", "name": SERVICE, "namespace": NAMESPACE}]
    assert PROXY_PATH == ("/api/v1/namespaces/kubernetes-dashboard/services/"
                          "http:kubernetes-dashboard:/proxy/")


def test_cluster_json_names_the_enabled_addons() -> None:
    assert addons_of({}) == set()
    assert addons_of({"addons": {"dashboard": True}}) == {"dashboard"}
    assert addons_of({"addons": {"dashboard": False}}) == set()
