"""RBAC strategies: Role, ClusterRole, RoleBinding, ClusterRoleBinding (upstream rbac validation).

Rules need verbs and, for resources, API groups and resources; only cluster roles may
name non-resource URLs. A binding points at a role (which it can never change) and
lists subjects: users, groups and service accounts. Names only have to be usable as a
URL path segment.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list, items_of, set_default_if_zero
from minikube_py.api.selectors import SelectorError, label_selector_from_dict
from minikube_py.api.validation import (
    FieldError,
    invalid,
    not_supported,
    required,
    validate_dns1123_subdomain,
    validate_label_selector,
)
from minikube_py.apiserver.registry.strategies.base import NoGenerationStrategy
from minikube_py.apiserver.registry.strategies.fields import (
    child,
    format_errors,
    index,
    path_segment_name,
)

RBAC_GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ["ServiceAccount", "User", "Group"]


class _RBACStrategy(NoGenerationStrategy):
    name_validator = staticmethod(path_segment_name)


class RoleStrategy(_RBACStrategy):
    """Roles: rules within one namespace."""

    def validate(self, obj: Obj) -> list[FieldError]:
        return _validate_rules(obj, namespaced=True)


class ClusterRoleStrategy(_RBACStrategy):
    """ClusterRoles: cluster-wide rules, possibly aggregated from other cluster roles."""

    def validate(self, obj: Obj) -> list[FieldError]:
        errors = _validate_rules(obj, namespaced=False)
        aggregation = obj.get("aggregationRule")
        if aggregation is None:
            return errors
        selectors_path = "aggregationRule.clusterRoleSelectors"
        selectors = as_list(as_dict(aggregation).get("clusterRoleSelectors"))
        if not selectors:
            errors.append(
                required(
                    selectors_path,
                    "at least one clusterRoleSelector required if aggregationRule is non-nil",
                )
            )
        for i, selector in enumerate(selectors):
            selector_path = index(selectors_path, i)
            errors += validate_label_selector(as_dict(selector), selector_path)
            try:
                label_selector_from_dict(as_dict(selector))
            except SelectorError:
                errors.append(invalid(selector_path, selector, "invalid label selector."))
        return errors


def _validate_rules(role: Obj, namespaced: bool) -> list[FieldError]:
    """ValidatePolicyRule for each rule."""
    errors: list[FieldError] = []
    for i, rule in items_of(role, "rules"):
        path = index("rules", i)
        if not as_list(rule.get("verbs")):
            errors.append(required(child(path, "verbs"), "verbs must contain at least one value"))
        urls = as_list(rule.get("nonResourceURLs"))
        if urls:
            if namespaced:
                errors.append(
                    invalid(
                        child(path, "nonResourceURLs"),
                        urls,
                        "namespaced rules cannot apply to non-resource URLs",
                    )
                )
            if any(as_list(rule.get(f)) for f in ("apiGroups", "resources", "resourceNames")):
                errors.append(
                    invalid(
                        child(path, "nonResourceURLs"),
                        urls,
                        "rules cannot apply to both regular resources and non-resource URLs",
                    )
                )
            continue
        if not as_list(rule.get("apiGroups")):
            errors.append(
                required(
                    child(path, "apiGroups"), "resource rules must supply at least one api group"
                )
            )
        if not as_list(rule.get("resources")):
            errors.append(
                required(
                    child(path, "resources"), "resource rules must supply at least one resource"
                )
            )
    return errors


class RoleBindingStrategy(_RBACStrategy):
    """RoleBindings: grant a Role or ClusterRole within one namespace."""

    namespaced_binding = True

    def default(self, obj: Obj) -> None:
        """SetDefaults_RoleBinding and SetDefaults_Subject: the API groups users leave out."""
        role_ref = obj.get("roleRef")
        if isinstance(role_ref, dict):
            set_default_if_zero(role_ref, "apiGroup", RBAC_GROUP)
        for _, subject in items_of(obj, "subjects"):
            if not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
                subject["apiGroup"] = RBAC_GROUP

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateRoleBinding / ValidateClusterRoleBinding."""
        role_ref = as_dict(obj.get("roleRef"))
        errors: list[FieldError] = []
        if role_ref.get("apiGroup") != RBAC_GROUP:
            errors.append(
                not_supported("roleRef.apiGroup", role_ref.get("apiGroup", ""), [RBAC_GROUP])
            )
        kinds = ["Role", "ClusterRole"] if self.namespaced_binding else ["ClusterRole"]
        if role_ref.get("kind") not in kinds:
            errors.append(not_supported("roleRef.kind", role_ref.get("kind", ""), kinds))
        name = role_ref.get("name")
        if not name:
            errors.append(required("roleRef.name"))
        else:
            errors += format_errors(path_segment_name, name, "roleRef.name")
        for i, subject in items_of(obj, "subjects"):
            errors += _validate_subject(subject, self.namespaced_binding, index("subjects", i))
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errors = self.validate(new)
        if as_dict(new.get("roleRef")) != as_dict(old.get("roleRef")):
            errors.append(invalid("roleRef", new.get("roleRef"), "cannot change roleRef"))
        return errors


class ClusterRoleBindingStrategy(RoleBindingStrategy):
    """ClusterRoleBindings: grant a ClusterRole everywhere."""

    namespaced_binding = False


def _validate_subject(subject: Obj, namespaced: bool, path: str) -> list[FieldError]:
    """ValidateRoleBindingSubject."""
    errors: list[FieldError] = []
    name, kind, api_group = subject.get("name"), subject.get("kind"), subject.get("apiGroup", "")
    if not name:
        errors.append(required(child(path, "name")))
    if kind == "ServiceAccount":
        if name:
            errors += format_errors(validate_dns1123_subdomain, name, child(path, "name"))
        if api_group:
            errors.append(not_supported(child(path, "apiGroup"), api_group, [""]))
        if not namespaced and not subject.get("namespace"):
            errors.append(required(child(path, "namespace")))
    elif kind in ("User", "Group"):
        if api_group != RBAC_GROUP:
            errors.append(not_supported(child(path, "apiGroup"), api_group, [RBAC_GROUP]))
    else:
        errors.append(not_supported(child(path, "kind"), _shown(kind), SUBJECT_KINDS))
    return errors


def _shown(value: Any) -> Any:
    return "" if value is None else value
