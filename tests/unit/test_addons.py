"""The dashboard add-on's objects (cluster/addons.py): `view` and its own role read the
kinds the page draws, and only read; its Service selects its Deployment's pod, which runs
as its ServiceAccount and lets in only the API server's proxy; its URL is upstream's https
one, and cluster.json's "addons" reads as the set of enabled ones. The e2e test (tests/e2e/
test_dashboard_cluster.py) asks a real cluster's RBAC the same questions."""

from __future__ import annotations

import base64

import yaml

from minikube_py.apiserver.auth.bootstrappolicy.policy import cluster_roles
from minikube_py.cluster.addons import (
    DASHBOARD_RULES,
    NAMESPACE,
    PROXY_PATH,
    SERVICE,
    VIEW_BINDING,
    Dashboard,
    addons_of,
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


def dashboard(front_proxy_ca: bytes = b"PEM") -> Dashboard:
    return Dashboard(image="localhost/minikube-py/dashboard:v1.37.0-abc",
                     server="https://172.18.0.1:6443", nodes=["node-2", "node-1"],
                     front_proxy_ca=front_proxy_ca)


def test_the_service_selects_the_deployment_s_pod_which_runs_as_its_account() -> None:
    made = dashboard_objects(dashboard())
    objects = {obj["kind"]: obj for obj in made}
    assert [obj["kind"] for obj in made] == [
        "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
        "ClusterRoleBinding", "ConfigMap", "Secret", "Service", "Deployment"]
    bindings = {obj["metadata"]["name"]: obj["roleRef"]["name"] for obj in made
                if obj["kind"] == "ClusterRoleBinding"}
    assert bindings == {SERVICE: SERVICE, VIEW_BINDING: "view"}
    assert objects["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": SERVICE, "namespace": NAMESPACE}]
    service, deployment = objects["Service"], objects["Deployment"]
    template = deployment["spec"]["template"]
    assert service["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": 8443}]
    assert service["spec"]["selector"].items() <= template["metadata"]["labels"].items()
    assert deployment["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert template["spec"]["serviceAccountName"] == SERVICE
    assert all(obj["metadata"].get("namespace", NAMESPACE) == NAMESPACE for obj in made)
    assert PROXY_PATH == ("/api/v1/namespaces/kubernetes-dashboard/services/"
                          "https:kubernetes-dashboard:/proxy/")


def test_the_pod_lets_in_only_the_api_server_s_proxy_and_reads_its_account_s_token() -> None:
    objects = {obj["kind"]: obj for obj in dashboard_objects(dashboard())}
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    command = pod["containers"][0]["command"]
    assert "--client-ca-file=/certs/front-proxy-ca.crt" in command
    assert "--allowed-names=front-proxy-client" in command
    assert base64.b64decode(objects["Secret"]["data"]["front-proxy-ca.crt"]) == b"PEM"
    kubeconfig = yaml.safe_load(objects["ConfigMap"]["data"]["kubeconfig.conf"])
    assert kubeconfig["users"][0]["user"] == {
        "tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://172.18.0.1:6443"
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert [term["matchFields"][0]["values"] for term in terms["nodeSelectorTerms"]] == [
        ["node-1"], ["node-2"]]
    # without authentication (`up --no-secure`): no CA, anyone who reaches it is served
    insecure = {obj["kind"]: obj for obj in dashboard_objects(dashboard(b""))}
    assert "Secret" not in insecure
    assert not any(flag.startswith("--client-ca-file") for flag in insecure[
        "Deployment"]["spec"]["template"]["spec"]["containers"][0]["command"])


def test_cluster_json_names_the_enabled_addons() -> None:
    assert addons_of({}) == set()
    assert addons_of({"addons": {"dashboard": True}}) == {"dashboard"}
    assert addons_of({"addons": {"dashboard": False}}) == set()
