"""The roles and bindings every cluster starts with (upstream
plugin/pkg/auth/authorizer/rbac/bootstrappolicy), created by the API server at start when
RBAC authorizes, as upstream's rbac/bootstrap-roles post-start hook does.

    policy.py             the roles of users and components: cluster-admin, admin, edit,
                          view, system:kube-scheduler, system:node-proxier, ...
    controller_policy.py  system:controller:<name>, one per controller
    namespace_policy.py   the Roles of controllers that work in one namespace
                          (bootstrap-signer, token-cleaner)
    rules.py              how a rule, a role and a binding are written

A role that exists already is left as it is (upstream reconciles missing rules into roles
marked rbac.authorization.kubernetes.io/autoupdate; an edited role stays edited here).
"""

from __future__ import annotations

from minikube_py.apiserver.bootstrappolicy.controller_policy import (
    controller_role_bindings,
    controller_roles,
)
from minikube_py.apiserver.bootstrappolicy.namespace_policy import (
    namespace_role_bindings,
    namespace_roles,
)
from minikube_py.apiserver.bootstrappolicy.policy import cluster_role_bindings, cluster_roles
from minikube_py.apiserver.bootstrappolicy.rules import Obj


def bootstrap_cluster_roles() -> list[Obj]:
    """Every ClusterRole the API server creates at start."""
    return [*cluster_roles(), *controller_roles()]


def bootstrap_cluster_role_bindings() -> list[Obj]:
    """Every ClusterRoleBinding the API server creates at start."""
    return [*cluster_role_bindings(), *controller_role_bindings()]


def bootstrap_roles() -> list[Obj]:
    """Every Role the API server creates at start, each in its namespace."""
    return namespace_roles()


def bootstrap_role_bindings() -> list[Obj]:
    """Every RoleBinding the API server creates at start, each in its namespace."""
    return namespace_role_bindings()
