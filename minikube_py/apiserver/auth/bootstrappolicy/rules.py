"""How the bootstrap policy writes rules, roles and bindings (upstream
pkg/apis/rbac/v1/helpers.go's PolicyRuleBuilder and ClusterRoleBindingBuilder, and
policy.go's addDefaultMetadata).

Every bootstrap object carries the label `kubernetes.io/bootstrapping: rbac-defaults` and
the annotation `rbac.authorization.kubernetes.io/autoupdate: "true"`. A rule's lists are
sorted, as upstream's builder sorts them, so `kubectl get clusterrole -o yaml` prints the
verbs in the same order as a real cluster.
"""

from __future__ import annotations

from minikube_py.api import Obj

RBAC_GROUP = "rbac.authorization.k8s.io"
API_VERSION = f"{RBAC_GROUP}/v1"

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
READ_WRITE = [*READ, *WRITE]
READ_UPDATE = [*READ, "patch", "update"]

LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def rule(verbs: list[str], groups: list[str] | None = None,
         resources: list[str] | None = None, *, names: list[str] | None = None,
         urls: list[str] | None = None) -> Obj:
    """One PolicyRule: verbs on resources of API groups (the core group when none is
    named), optionally only the objects `names`; or verbs on non-resource `urls`."""
    if urls is not None:
        return {"nonResourceURLs": sorted(urls), "verbs": sorted(verbs)}
    built: Obj = {"apiGroups": sorted(groups or [""]), "resources": sorted(resources or []),
                  "verbs": sorted(verbs)}
    if names:
        built["resourceNames"] = sorted(names)
    return built


def events_rule() -> Obj:
    """Recording Events, in the core group and events.k8s.io (upstream eventsRule)."""
    return rule(["create", "patch", "update"], ["", "events.k8s.io"], ["events"])


def metadata(name: str, labels: dict[str, str] | None = None) -> Obj:
    """A bootstrap object's metadata: its own labels plus upstream's default label and
    annotation."""
    return {"name": name, "labels": {**(labels or {}), **LABELS},
            "annotations": dict(ANNOTATIONS)}


def cluster_role(name: str, rules: list[Obj], *, labels: dict[str, str] | None = None,
                 aggregate_from: list[str] | None = None) -> Obj:
    """A ClusterRole; with `aggregate_from`, an aggregated one whose rules come from the
    ClusterRoles labelled with any of those labels set to "true"."""
    role: Obj = {"apiVersion": API_VERSION, "kind": "ClusterRole",
                 "metadata": metadata(name, labels), "rules": rules}
    if aggregate_from:
        role["aggregationRule"] = {"clusterRoleSelectors": [
            {"matchLabels": {label: "true"}} for label in aggregate_from]}
    return role


def cluster_role_binding(role: str, subjects: list[Obj]) -> Obj:
    """A ClusterRoleBinding of `role`, named after it; with no subjects it binds nobody."""
    binding: Obj = {"apiVersion": API_VERSION, "kind": "ClusterRoleBinding",
                    "metadata": metadata(role),
                    "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role}}
    if subjects:
        binding["subjects"] = subjects
    return binding


def role(name: str, namespace: str, rules: list[Obj]) -> Obj:
    """A Role in one namespace (upstream bootstraps these only into kube-* namespaces)."""
    return {"apiVersion": API_VERSION, "kind": "Role",
            "metadata": {**metadata(name), "namespace": namespace}, "rules": rules}


def role_binding(role: str, namespace: str, subjects: list[Obj]) -> Obj:
    """A RoleBinding of the Role `role` in its namespace, named after it."""
    return {"apiVersion": API_VERSION, "kind": "RoleBinding",
            "metadata": {**metadata(role), "namespace": namespace},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role},
            "subjects": subjects}


def users(*names: str) -> list[Obj]:
    return [{"apiGroup": RBAC_GROUP, "kind": "User", "name": name} for name in names]


def groups(*names: str) -> list[Obj]:
    return [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": name} for name in names]


def service_account(namespace: str, name: str) -> list[Obj]:
    return [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]
