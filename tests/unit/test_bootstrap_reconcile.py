"""Reconciling the bootstrap policy into existing roles and bindings
(apiserver/auth/bootstrappolicy/reconcile.py), as upstream's computeReconciledRole,
computeReconciledRoleBinding and validation.Covers decide: pure logic over objects."""

from __future__ import annotations

import copy
from typing import Any

from minikube_py.api import Obj
from minikube_py.apiserver.auth.bootstrappolicy import bootstrap_cluster_roles
from minikube_py.apiserver.auth.bootstrappolicy.reconcile import (
    breakdown_rule,
    reconcile_binding,
    reconcile_role,
    uncovered_rules,
)
from minikube_py.apiserver.auth.bootstrappolicy.rules import (
    cluster_role,
    cluster_role_binding,
    role,
    role_binding,
    rule,
    service_account,
    users,
)

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
PODS_READ = rule(["get", "list", "watch"], [""], ["pods"])


def stored(obj: Obj, **metadata: Any) -> Obj:
    """`obj` as the API server returns it, with server-set metadata and `metadata` over
    its own."""
    existing = copy.deepcopy(obj)
    existing["metadata"].update({"uid": "1234", "resourceVersion": "42",
                                 "creationTimestamp": "2024-01-01T00:00:00Z", **metadata})
    return existing


def test_an_existing_role_equal_to_the_expected_one_needs_no_write() -> None:
    for expected in bootstrap_cluster_roles():
        result = reconcile_role(expected, stored(expected))
        assert result.operation == "none", expected["metadata"]["name"]
        assert result.changes == {}


def test_a_rule_the_existing_rules_already_cover_is_not_added_again() -> None:
    expected = cluster_role("reader", [rule(["get"], [""], ["pods"])])
    split = [rule(["get", "list"], [""], ["pods", "services"])]
    assert reconcile_role(expected, stored(cluster_role("reader", split))).operation == "none"


def test_a_wildcard_existing_rule_covers_a_narrower_expected_rule() -> None:
    expected = cluster_role("scaler", [
        rule(["get", "update"], ["apps"], ["deployments/scale", "deployments"],
             names=["web"]),
        rule(["get"], urls=["/healthz", "/apis/apps/v1"])])
    for wide in ([rule(["*"], ["*"], ["*"]), rule(["get"], urls=["/*"])],
                 [rule(["get", "update"], ["apps"], ["*/scale", "deployments"]),
                  rule(["*"], urls=["/healthz", "/apis/*"])]):
        result = reconcile_role(expected, stored(cluster_role("scaler", wide)))
        assert result.operation == "none", wide


def test_a_narrower_existing_rule_does_not_cover_a_wider_expected_one() -> None:
    # named objects do not cover every object, nor one subresource every resource's
    expected = cluster_role("wide", [rule(["update"], ["apps"], ["*/scale", "deployments"])])
    narrow = cluster_role("wide", [
        rule(["update"], ["apps"], ["deployments"], names=["web"]),
        rule(["update"], ["apps"], ["deployments/scale"])])
    assert reconcile_role(expected, stored(narrow)).changes["addedRules"] == [
        rule(["update"], ["apps"], ["*/scale"]), rule(["update"], ["apps"], ["deployments"])]


def test_a_missing_verb_is_added_as_a_rule_of_its_own() -> None:
    expected = cluster_role("reader", [PODS_READ])
    existing = stored(cluster_role("reader", [rule(["get", "list"], [""], ["pods"])]))
    result = reconcile_role(expected, existing)
    assert result.operation == "update" and not result.protected
    assert result.changes == {"addedRules": [rule(["watch"], [""], ["pods"])]}
    assert result.obj["rules"] == [rule(["get", "list"], [""], ["pods"]),
                                   rule(["watch"], [""], ["pods"])]
    assert result.obj["metadata"]["resourceVersion"] == "42"  # the update is guarded
    assert existing["rules"] == [rule(["get", "list"], [""], ["pods"])]  # not touched


def test_rules_a_user_added_are_kept() -> None:
    custom = rule(["create"], ["example.com"], ["widgets"])
    expected = cluster_role("reader", [PODS_READ, rule(["get"], [""], ["nodes"])])
    existing = stored(cluster_role("reader", [custom, PODS_READ]))
    result = reconcile_role(expected, existing)
    assert result.obj["rules"] == [custom, PODS_READ, rule(["get"], [""], ["nodes"])]


def test_a_role_marked_autoupdate_false_is_protected() -> None:
    expected = cluster_role("reader", [PODS_READ], labels={"team": "ops"})
    existing = stored(cluster_role("reader", []))
    existing["metadata"]["annotations"] = {AUTOUPDATE: "false"}
    result = reconcile_role(expected, existing)
    assert result.protected
    assert result.changes["addedRules"] == breakdown_rule(PODS_READ)  # what it lacks
    assert "team" not in existing["metadata"]["labels"]


def test_expected_labels_and_annotations_are_added_and_existing_values_win() -> None:
    expected = cluster_role("reader", [PODS_READ], labels={"tier": "core", "team": "ops"})
    existing = stored(cluster_role("reader", [PODS_READ]))
    existing["metadata"]["labels"] = {"team": "dev", "owner": "alice"}
    existing["metadata"]["annotations"] = {AUTOUPDATE: "true", "note": "mine"}
    result = reconcile_role(expected, existing)
    assert result.obj["metadata"]["labels"] == {
        "team": "dev", "owner": "alice", "tier": "core",
        "kubernetes.io/bootstrapping": "rbac-defaults"}
    assert result.obj["metadata"]["annotations"] == {AUTOUPDATE: "true", "note": "mine"}
    assert result.changes == {"addedLabels": {
        "tier": "core", "kubernetes.io/bootstrapping": "rbac-defaults"}}


def test_a_role_without_the_autoupdate_annotation_gets_it_back() -> None:
    expected = role("system:controller:token-cleaner", "kube-system", [PODS_READ])
    existing = stored(expected)
    del existing["metadata"]["annotations"]
    result = reconcile_role(expected, existing)
    assert result.operation == "update"
    assert result.obj["metadata"]["annotations"] == {AUTOUPDATE: "true"}


def test_missing_aggregation_selectors_are_added_and_equal_ones_kept() -> None:
    expected = cluster_role("monitor", [], aggregate_from=["example.com/a", "example.com/b"])
    existing = stored(cluster_role("monitor", [], aggregate_from=["example.com/a"]))
    existing["aggregationRule"]["clusterRoleSelectors"][0]["matchExpressions"] = []
    result = reconcile_role(expected, existing)
    assert result.obj["aggregationRule"]["clusterRoleSelectors"] == [
        {"matchLabels": {"example.com/a": "true"}, "matchExpressions": []},
        {"matchLabels": {"example.com/b": "true"}}]
    assert result.changes == {"addedClusterRoleSelectors": [
        {"matchLabels": {"example.com/b": "true"}}]}


def test_an_aggregation_rule_the_expected_role_lacks_is_removed() -> None:
    expected = cluster_role("reader", [PODS_READ])
    existing = stored(cluster_role("reader", [PODS_READ], aggregate_from=["example.com/a"]))
    result = reconcile_role(expected, existing)
    assert result.operation == "update" and "aggregationRule" not in result.obj


def test_breakdown_makes_one_rule_per_verb_group_resource_and_name() -> None:
    assert breakdown_rule(rule(["get", "update"], [""], ["configmaps"],
                               names=["a", "b"])) == [
        rule(["get"], [""], ["configmaps"], names=["a"]),
        rule(["get"], [""], ["configmaps"], names=["b"]),
        rule(["update"], [""], ["configmaps"], names=["a"]),
        rule(["update"], [""], ["configmaps"], names=["b"])]
    assert breakdown_rule(rule(["get", "post"], urls=["/healthz"])) == [
        rule(["get"], urls=["/healthz"]), rule(["post"], urls=["/healthz"])]


def test_resource_rules_never_cover_paths_nor_path_rules_resources() -> None:
    everything = [rule(["*"], ["*"], ["*"])]
    assert uncovered_rules(everything, [rule(["get"], urls=["/healthz"])]) == [
        rule(["get"], urls=["/healthz"])]
    assert uncovered_rules([rule(["*"], urls=["*"])], [PODS_READ]) == breakdown_rule(
        PODS_READ)


def test_missing_subjects_are_added_and_extra_ones_kept() -> None:
    expected = cluster_role_binding("system:kube-scheduler", users("system:kube-scheduler"))
    existing = stored(cluster_role_binding("system:kube-scheduler", users("my-scheduler")))
    result = reconcile_binding(expected, existing)
    assert result.operation == "update"
    assert result.obj["subjects"] == users("my-scheduler", "system:kube-scheduler")
    assert result.changes == {"addedSubjects": users("system:kube-scheduler")}
    assert reconcile_binding(expected, stored(expected)).operation == "none"


def test_a_service_account_subject_matches_by_kind_name_and_namespace() -> None:
    expected = role_binding("system:controller:token-cleaner", "kube-system",
                            service_account("kube-system", "token-cleaner"))
    moved = stored(role_binding("system:controller:token-cleaner", "kube-system",
                                service_account("default", "token-cleaner")))
    assert reconcile_binding(expected, moved).changes == {
        "addedSubjects": service_account("kube-system", "token-cleaner")}


def test_a_binding_whose_role_ref_changed_is_recreated_as_expected() -> None:
    expected = cluster_role_binding("system:kube-dns", service_account("kube-system",
                                                                       "kube-dns"))
    existing = stored(expected)
    existing["roleRef"]["name"] = "view"
    existing["subjects"] = users("alice")
    result = reconcile_binding(expected, existing)
    assert result.operation == "recreate" and not result.protected
    assert result.obj == expected  # the expected binding, with neither uid nor version
    assert result.changes["previousRoleRef"]["name"] == "view"


def test_a_binding_marked_autoupdate_false_is_protected() -> None:
    expected = cluster_role_binding("system:kube-scheduler", users("system:kube-scheduler"))
    existing = stored(cluster_role_binding("system:kube-scheduler", users("my-scheduler")),
                      annotations={AUTOUPDATE: "false"})
    result = reconcile_binding(expected, existing)
    assert result.protected and result.operation == "update"
    existing["roleRef"]["name"] = "view"
    assert reconcile_binding(expected, existing).protected
