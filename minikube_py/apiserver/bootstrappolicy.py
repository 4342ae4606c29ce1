"""The roles and bindings every cluster starts with (upstream
plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go), created by the API server at
start when RBAC authorizes, as upstream's rbac/bootstrap-roles post-start hook does.

    cluster-admin                 everything             <- group system:masters
    system:discovery              discovery, OpenAPI     <- system:authenticated
    system:basic-user             "what may I do?"       <- system:authenticated
    system:public-info-viewer     /healthz, /version...  <- everyone, anonymous included
    admin, edit, view             for RoleBindings in a namespace (bound to nobody)

A role that exists already is left as it is (upstream reconciles missing rules into roles
marked rbac.authorization.kubernetes.io/autoupdate; an edited role stays edited here).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
HEALTH = ["/healthz", "/livez", "/readyz", "/version", "/version/"]

# What `view` reads in a namespace (no Secrets: reading them is as good as using them).
_VIEWED: list[tuple[str, list[str]]] = [
    ("", ["configmaps", "endpoints", "persistentvolumeclaims",
          "persistentvolumeclaims/status", "pods", "pods/log", "pods/status",
          "replicationcontrollers", "replicationcontrollers/scale",
          "replicationcontrollers/status", "serviceaccounts", "services",
          "services/status", "bindings", "events", "limitranges", "resourcequotas",
          "resourcequotas/status", "namespaces", "namespaces/status"]),
    ("apps", ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
              "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
              "replicasets/status", "statefulsets", "statefulsets/scale",
              "statefulsets/status"]),
    ("batch", ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    ("policy", ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    ("discovery.k8s.io", ["endpointslices"]),
    ("events.k8s.io", ["events"]),
    ("coordination.k8s.io", ["leases"]),
]
# What `edit` writes: those (but namespaces, their status and bindings), Secrets, and
# the ways into a pod.
_EDITED: list[tuple[str, list[str]]] = [
    ("", ["configmaps", "endpoints", "persistentvolumeclaims", "pods", "pods/attach",
          "pods/exec", "pods/portforward", "pods/proxy", "pods/eviction",
          "pods/ephemeralcontainers", "replicationcontrollers",
          "replicationcontrollers/scale", "secrets", "serviceaccounts",
          "serviceaccounts/token", "services", "services/proxy"]),
    ("apps", ["daemonsets", "deployments", "deployments/rollback", "deployments/scale",
              "replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"]),
    ("batch", ["cronjobs", "jobs"]),
    ("policy", ["poddisruptionbudgets"]),
    ("discovery.k8s.io", ["endpointslices"]),
    ("coordination.k8s.io", ["leases"]),
]


def _rule(verbs: list[str], groups: list[str] | None = None,
          resources: list[str] | None = None, urls: list[str] | None = None) -> Obj:
    if urls is not None:
        return {"nonResourceURLs": urls, "verbs": verbs}
    return {"apiGroups": groups or [""], "resources": resources or [], "verbs": verbs}


def _view_rules() -> list[Obj]:
    return [_rule(READ, [group], resources) for group, resources in _VIEWED]


def _edit_rules() -> list[Obj]:
    return [*_view_rules(), _rule(READ, [""], ["secrets"]),
            *(_rule(WRITE, [group], resources) for group, resources in _EDITED)]


def _admin_rules() -> list[Obj]:
    return [*_edit_rules(),
            _rule([*READ, *WRITE], ["rbac.authorization.k8s.io"], ["rolebindings", "roles"]),
            _rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"])]


def _meta(name: str) -> Obj:
    return {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}}


def cluster_roles() -> list[Obj]:
    roles = {
        "cluster-admin": [_rule(["*"], ["*"], ["*"]), _rule(["*"], urls=["*"])],
        "system:discovery": [_rule(["get"], urls=[
            "/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *HEALTH])],
        "system:basic-user": [
            _rule(["create"], ["authorization.k8s.io"],
                  ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
            _rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"])],
        "system:public-info-viewer": [_rule(["get"], urls=HEALTH)],
        "view": _view_rules(),
        "edit": _edit_rules(),
        "admin": _admin_rules(),
    }
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": _meta(name), "rules": rules} for name, rules in roles.items()]


def cluster_role_bindings() -> list[Obj]:
    bound = {
        "cluster-admin": ["system:masters"],
        "system:discovery": ["system:authenticated"],
        "system:basic-user": ["system:authenticated"],
        "system:public-info-viewer": ["system:authenticated", "system:unauthenticated"],
    }
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": _meta(name),
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": name},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                           "name": group} for group in groups]}
            for name, groups in bound.items()]
