"""ClusterRole aggregation (api/rbac.py) and the bootstrap roles built with it
(apiserver/bootstrappolicy), as upstream's clusterrole-aggregation controller and
bootstrap policy define them: pure logic over role objects."""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.rbac import aggregated_rules, same_rules
from minikube_py.apiserver.auth.bootstrappolicy import (
    bootstrap_cluster_role_bindings,
    bootstrap_cluster_roles,
)

PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
NODES = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}
HEALTH = {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}


def role(name: str, rules: list[Obj], labels: dict[str, str] | None = None,
         selects: list[dict[str, str]] | None = None) -> Obj:
    built: Obj = {"metadata": {"name": name, "labels": labels or {}}, "rules": rules}
    if selects is not None:
        built["aggregationRule"] = {"clusterRoleSelectors": [
            {"matchLabels": labels} for labels in selects]}
    return built


def test_an_aggregated_role_takes_the_rules_of_the_selected_roles_sorted_by_name() -> None:
    monitor = role("monitor", [], selects=[{"team": "ops"}])
    roles = [monitor, role("b-nodes", [NODES], {"team": "ops"}),
             role("a-pods", [PODS], {"team": "ops"}), role("other", [HEALTH], {"team": "dev"})]
    assert aggregated_rules(monitor, roles) == [PODS, NODES]


def test_equal_rules_are_taken_once_and_the_role_never_selects_itself() -> None:
    both = role("both", [PODS], {"x": "1"}, selects=[{"x": "1"}, {"y": "1"}])
    roles = [both, role("one", [PODS, NODES], {"x": "1"}),
             role("two", [{**NODES, "resourceNames": []}, HEALTH], {"y": "1"})]
    assert aggregated_rules(both, roles) == [PODS, NODES, HEALTH]


def test_rules_compare_with_missing_and_empty_fields_equal_and_order_significant() -> None:
    assert same_rules([PODS], [{**PODS, "resourceNames": []}])
    assert same_rules(None, [])
    assert not same_rules([PODS, NODES], [NODES, PODS])


def by_name(objects: list[Obj]) -> dict[str, Obj]:
    return {obj["metadata"]["name"]: obj for obj in objects}


def test_admin_edit_and_view_are_aggregated_and_already_hold_their_rules() -> None:
    roles = by_name(bootstrap_cluster_roles())
    view, edit, admin = roles["view"], roles["edit"], roles["admin"]
    assert view["aggregationRule"] == {"clusterRoleSelectors": [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}
    assert view["metadata"]["labels"] == {
        "rbac.authorization.k8s.io/aggregate-to-edit": "true",
        "kubernetes.io/bootstrapping": "rbac-defaults"}
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert view["rules"] == roles["system:aggregate-to-view"]["rules"]
    assert edit["rules"] == [*roles["system:aggregate-to-edit"]["rules"], *view["rules"]]
    assert admin["rules"] == [*edit["rules"], *roles["system:aggregate-to-admin"]["rules"]]
    # what the controller computes from them is what they hold: it has nothing to write
    for name in ("view", "edit", "admin"):
        assert same_rules(aggregated_rules(roles[name], roles.values()), roles[name]["rules"])


def test_every_bootstrap_object_is_labelled_and_marked_for_autoupdate() -> None:
    for obj in (*bootstrap_cluster_roles(), *bootstrap_cluster_role_bindings()):
        assert obj["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert obj["metadata"]["annotations"] == {
            "rbac.authorization.kubernetes.io/autoupdate": "true"}


def test_components_and_controllers_are_bound_as_upstream_binds_them() -> None:
    bindings = by_name(bootstrap_cluster_role_bindings())
    roles = by_name(bootstrap_cluster_roles())
    assert set(bindings) <= set(roles)
    subjects = {name: [(s["kind"], s.get("namespace", ""), s["name"])
                       for s in binding.get("subjects", [])]
                for name, binding in bindings.items()}
    assert subjects["system:kube-scheduler"] == [("User", "", "system:kube-scheduler")]
    assert subjects["system:volume-scheduler"] == [("User", "", "system:kube-scheduler")]
    assert subjects["system:node-proxier"] == [("User", "", "system:kube-proxy")]
    assert subjects["system:kube-dns"] == [("ServiceAccount", "kube-system", "kube-dns")]
    assert subjects["system:node"] == []
    assert subjects["system:controller:replicaset-controller"] == [
        ("ServiceAccount", "kube-system", "replicaset-controller")]
    assert subjects["system:controller:generic-garbage-collector"] == [
        ("ServiceAccount", "kube-system", "generic-garbage-collector")]
    assert roles["system:controller:clusterrole-aggregation-controller"]["rules"] == [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
         "verbs": ["escalate", "get", "list", "patch", "update", "watch"]}]


def certificates_rule(verbs: list[str], resources: list[str], names: list[str] | None = None
                      ) -> Obj:
    built: Obj = {"apiGroups": ["certificates.k8s.io"], "resources": resources, "verbs": verbs}
    if names:
        built["resourceNames"] = names
    return built


def test_the_csr_roles_are_upstreams_and_bound_to_nobody_but_their_controller() -> None:
    roles = by_name(bootstrap_cluster_roles())
    bindings = by_name(bootstrap_cluster_role_bindings())
    prefix = "system:certificates.k8s.io:"
    assert roles["system:node-bootstrapper"]["rules"] == [certificates_rule(
        ["create", "get", "list", "watch"], ["certificatesigningrequests"])]
    for client_kind in ("nodeclient", "selfnodeclient"):
        assert roles[f"{prefix}certificatesigningrequests:{client_kind}"]["rules"] == [
            certificates_rule(["create"], [f"certificatesigningrequests/{client_kind}"])]
    for signer in ("kube-apiserver-client", "kube-apiserver-client-kubelet",
                   "kubelet-serving", "legacy-unknown"):
        assert roles[f"{prefix}{signer}-approver"]["rules"] == [certificates_rule(
            ["approve"], ["signers"], [f"kubernetes.io/{signer}"])]
    assert not any(name.startswith(prefix) or name == "system:node-bootstrapper"
                   for name in bindings)
    controller = roles["system:controller:certificate-controller"]["rules"]
    assert controller[:4] == [
        certificates_rule(["delete", "get", "list", "watch"], ["certificatesigningrequests"]),
        certificates_rule(["update"], ["certificatesigningrequests/approval",
                                       "certificatesigningrequests/status"]),
        certificates_rule(["approve"], ["signers"],
                          ["kubernetes.io/kube-apiserver-client-kubelet"]),
        certificates_rule(["sign"], ["signers"], [
            "kubernetes.io/kube-apiserver-client", "kubernetes.io/kube-apiserver-client-kubelet",
            "kubernetes.io/kubelet-serving", "kubernetes.io/legacy-unknown"])]
    assert bindings["system:controller:certificate-controller"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "certificate-controller", "namespace": "kube-system"}]
