"""RBAC's rule matching and binding resolution (apiserver/auth/authorization.py), as upstream's
rbac authorizer decides: pure logic over role and binding objects."""

from __future__ import annotations

from typing import Any

from minikube_py.apiserver.auth.authentication import ANONYMOUS, UserInfo
from minikube_py.apiserver.auth.authorization import Attributes, RBACAuthorizer, Rule, forbidden

ALICE = UserInfo("alice", groups=("dev", "system:authenticated"))


def can(rule: dict[str, Any], verb: str, resource: str = "", subresource: str = "",
        name: str = "", group: str = "", path: str = "") -> bool:
    attributes = (Attributes(ALICE, verb, False, path=path) if path else
                  Attributes(ALICE, verb, True, group, resource, subresource, "ns", name))
    return Rule.of(rule).allows(attributes)


def test_a_rule_matches_verbs_groups_and_resources_or_their_wildcards() -> None:
    pods = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}
    assert can(pods, "get", "pods") and can(pods, "list", "pods")
    assert not can(pods, "delete", "pods")
    assert not can(pods, "get", "pods", group="apps")
    assert not can(pods, "get", "pods", "log")  # a subresource is named on its own
    everything = {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}
    assert can(everything, "deletecollection", "deployments", group="apps")
    assert can(everything, "create", "pods", "exec")


def test_subresources_are_named_with_their_resource_or_for_every_resource() -> None:
    logs = {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}
    assert can(logs, "get", "pods", "log") and not can(logs, "get", "pods")
    scale = {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["update"]}
    assert can(scale, "update", "deployments", "scale", group="apps")
    assert not can(scale, "update", "deployments", group="apps")


def test_resource_names_limit_a_rule_to_those_objects() -> None:
    one = {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"],
           "verbs": ["get", "update"]}
    assert can(one, "get", "configmaps", name="settings")
    assert not can(one, "get", "configmaps", name="other")
    assert not can(one, "get", "configmaps")  # a list names no object


def test_paths_match_exactly_or_by_a_trailing_star() -> None:
    health = {"nonResourceURLs": ["/healthz", "/apis/*"], "verbs": ["get"]}
    assert can(health, "get", path="/healthz") and can(health, "get", path="/apis/apps/v1")
    assert not can(health, "get", path="/healthz/etcd")
    assert not can(health, "post", path="/healthz")
    assert not can({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, "get",
                   path="/healthz")  # resource rules never grant paths


def role(kind: str, name: str, rules: list[dict[str, Any]], namespace: str = "") -> dict:
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace}, "rules": rules}


def binding(kind: str, name: str, role_kind: str, role_name: str,
            subjects: list[dict[str, str]], namespace: str = "") -> dict:
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"kind": role_kind, "name": role_name}, "subjects": subjects}


def authorizer(objects: dict[str, list[dict[str, Any]]]) -> RBACAuthorizer:
    return RBACAuthorizer(lambda plural: objects.get(plural, []), lambda: (1,))


READ_PODS = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]


def test_bindings_grant_to_users_groups_and_service_accounts_in_their_scope() -> None:
    rbac = authorizer({
        "clusterroles": [role("ClusterRole", "pod-reader", READ_PODS)],
        "roles": [role("Role", "local-reader", READ_PODS, "team")],
        "clusterrolebindings": [binding("ClusterRoleBinding", "devs", "ClusterRole",
                                        "pod-reader", [{"kind": "Group", "name": "dev"}])],
        "rolebindings": [
            binding("RoleBinding", "sa", "Role", "local-reader",
                    [{"kind": "ServiceAccount", "name": "robot"}], "team"),
            binding("RoleBinding", "missing", "Role", "no-such-role",
                    [{"kind": "User", "name": "bob"}], "team")],
    })

    def allowed(user: UserInfo, namespace: str) -> bool:
        return rbac.authorize(Attributes(user, "list", True, "", "pods", "", namespace)
                              ).allowed

    assert allowed(ALICE, "anywhere")  # her group, cluster wide
    robot = UserInfo("system:serviceaccount:team:robot")
    assert allowed(robot, "team") and not allowed(robot, "other")
    assert not allowed(UserInfo("bob"), "team")  # a binding to a missing role grants nothing
    assert not allowed(ANONYMOUS, "team")


def test_the_index_is_rebuilt_when_the_objects_change() -> None:
    objects: dict[str, list[dict[str, Any]]] = {
        "clusterroles": [role("ClusterRole", "pod-reader", READ_PODS)]}
    version = [1]
    rbac = RBACAuthorizer(lambda plural: objects.get(plural, []), lambda: tuple(version))
    asking = Attributes(ALICE, "get", True, "", "pods", "", "ns", "p")
    assert not rbac.authorize(asking).allowed
    objects["clusterrolebindings"] = [binding("ClusterRoleBinding", "a", "ClusterRole",
                                              "pod-reader", [{"kind": "User",
                                                              "name": "alice"}])]
    assert not rbac.authorize(asking).allowed  # nothing changed as far as it knows
    version[0] = 2
    assert rbac.authorize(asking).allowed


def test_forbidden_messages_are_upstreams() -> None:
    named = Attributes(ALICE, "create", True, "", "pods", "exec", "ns", "web")
    assert forbidden(named).message == (
        'pods "web" is forbidden: User "alice" cannot create resource "pods/exec" in API '
        'group "" in the namespace "ns"')
    cluster = Attributes(ALICE, "list", True, "apps", "deployments")
    assert forbidden(cluster).message == (
        'deployments.apps is forbidden: User "alice" cannot list resource "deployments" in '
        'API group "apps" at the cluster scope')
    assert forbidden(Attributes(ANONYMOUS, "get", False, path="/metrics")).message == (
        'forbidden: User "system:anonymous" cannot get path "/metrics"')
