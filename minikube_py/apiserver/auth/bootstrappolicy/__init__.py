"""The roles and bindings every cluster starts with (upstream
plugin/pkg/auth/authorizer/rbac/bootstrappolicy), written by the API server at start when
RBAC authorizes, as upstream's rbac/bootstrap-roles post-start hook writes them.

    policy.py             the roles of users and components: cluster-admin, admin, edit,
                          view, system:kube-scheduler, system:node-proxier, ...
    controller_policy.py  system:controller:<name>, one per controller
    namespace_policy.py   the Roles of controllers that work in one namespace
                          (bootstrap-signer, token-cleaner)
    rules.py              how a rule, a role and a binding are written
    reconcile.py          what an existing role or binding lacks of its bootstrap version
    ensure.py             the post-start hook: create what is missing, reconcile the rest

A role or binding that exists already is reconciled, as upstream does: it gains the
rules, subjects, labels and annotations of this version's policy that it lacks, and keeps
whatever was added to it, so a cluster whose etcd outlives an upgrade gets the new rules.
One annotated rbac.authorization.kubernetes.io/autoupdate: "false" is left as it is.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.apiserver.auth.bootstrappolicy.controller_policy import (
    controller_role_bindings,
    controller_roles,
)
from minikube_py.apiserver.auth.bootstrappolicy.namespace_policy import (
    namespace_role_bindings,
    namespace_roles,
)
from minikube_py.apiserver.auth.bootstrappolicy.policy import cluster_role_bindings, cluster_roles


def bootstrap_cluster_roles() -> list[Obj]:
    """Every ClusterRole the API server writes at start."""
    return [*cluster_roles(), *controller_roles()]


def bootstrap_cluster_role_bindings() -> list[Obj]:
    """Every ClusterRoleBinding the API server writes at start."""
    return [*cluster_role_bindings(), *controller_role_bindings()]


def bootstrap_roles() -> list[Obj]:
    """Every Role the API server writes at start, each in its namespace."""
    return namespace_roles()


def bootstrap_role_bindings() -> list[Obj]:
    """Every RoleBinding the API server writes at start, each in its namespace."""
    return namespace_role_bindings()
