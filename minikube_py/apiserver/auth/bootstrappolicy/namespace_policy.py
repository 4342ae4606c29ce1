"""The Roles and RoleBindings of the bootstrap policy, each in a kube-* namespace
(upstream plugin/pkg/auth/authorizer/rbac/bootstrappolicy/namespace_policy.go).

    kube-system  Role system:controller:bootstrap-signer   read Secrets
                 Role system:controller:token-cleaner      read and delete Secrets
    kube-public  Role system:controller:bootstrap-signer   read ConfigMaps, update
                                                           cluster-info
    each bound to the ServiceAccount kube-system/<name> in the same namespace

These controllers touch only those namespaces, so their roles are namespaced: a
ClusterRole would let the token cleaner delete any Secret anywhere. Only the roles of
what this project runs are here.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.apiserver.auth.bootstrappolicy.controller_policy import ROLE_PREFIX
from minikube_py.apiserver.auth.bootstrappolicy.rules import (
    READ,
    events_rule,
    role,
    role_binding,
    rule,
    service_account,
)


def _namespace_rules() -> list[tuple[str, str, list[Obj]]]:
    """(namespace, ServiceAccount name, rules) in namespace_policy.go's order."""
    return [
        ("kube-system", "bootstrap-signer", [rule(READ, [""], ["secrets"])]),
        ("kube-system", "token-cleaner", [rule([*READ, "delete"], [""], ["secrets"]),
                                          events_rule()]),
        ("kube-public", "bootstrap-signer", [
            rule(READ, [""], ["configmaps"]),
            rule(["update"], [""], ["configmaps"], names=["cluster-info"]),
            events_rule()]),
    ]


def namespace_roles() -> list[Obj]:
    """system:controller:<name> in each namespace its controller works in."""
    return [role(ROLE_PREFIX + account, namespace, rules)
            for namespace, account, rules in _namespace_rules()]


def namespace_role_bindings() -> list[Obj]:
    """Each of those Roles bound to the ServiceAccount kube-system/<name>."""
    return [role_binding(ROLE_PREFIX + account, namespace,
                         service_account("kube-system", account))
            for namespace, account, _rules in _namespace_rules()]
