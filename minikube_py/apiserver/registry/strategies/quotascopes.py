"""A ResourceQuota's scopes and scopeSelector: known names, the resources each may count,
pairs that exclude each other, and the operators a selector expression may use.

Upstream's validateResourceQuotaScopes and validateScopeSelector
(pkg/apis/core/validation/validation.go) with the scope helpers of
pkg/apis/core/helper/helpers.go. Validation runs on the internal Go types, so a bad
value prints as their JSON: a scope list as `["BestEffort"]` (`null` when unset), a
selector with Go's field names (`{"MatchExpressions":[{"ScopeName":...}]}`).
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list
from minikube_py.api.validation import FieldError, GoValue, go_json, invalid, required
from minikube_py.apiserver.registry.strategies.resourcenames import is_standard_quota_resource

# IsStandardResourceQuotaScope: VolumeAttributesClass matches PersistentVolumeClaims, the
# others pods.
STANDARD_SCOPES = frozenset({"Terminating", "NotTerminating", "BestEffort", "NotBestEffort",
                             "PriorityClass", "CrossNamespacePodAffinity",
                             "VolumeAttributesClass"})
_POD_OBJECT_COUNT = frozenset({"pods"})
_POD_COMPUTE = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu",
                          "requests.memory"})
_PVC_RESOURCES = frozenset({"persistentvolumeclaims", "requests.storage"})
# A scope and its opposite: a quota naming both matches nothing.
CONFLICTING_SCOPES = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
# The scopes a selector may only test for presence.
EXISTS_ONLY_SCOPES = frozenset({"BestEffort", "NotBestEffort", "Terminating",
                                "NotTerminating", "CrossNamespacePodAffinity"})
EXISTS_ONLY = (
    "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, "
    "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
    "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"
)


def scope_valid_for_resource(scope: Any, resource: str) -> bool:
    """IsResourceQuotaScopeValidForResource: can a quota with this scope count this resource?
    BestEffort pods request nothing, so such a quota counts only pods."""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass",
                 "CrossNamespacePodAffinity"):
        return resource in _POD_OBJECT_COUNT or resource in _POD_COMPUTE
    if scope == "BestEffort":
        return resource in _POD_OBJECT_COUNT
    if scope == "VolumeAttributesClass":
        return resource in _PVC_RESOURCES
    return True


def validate_resource_quota_scopes(spec: Obj, path: str) -> list[FieldError]:
    """validateResourceQuotaScopes: known scopes, each fit for every standard hard resource,
    and no scope with its opposite."""
    scopes = as_list(spec.get("scopes"))
    if not scopes:
        return []
    hard = sorted(as_dict(spec.get("hard")))
    shown = go_json(scopes)
    errors: list[FieldError] = []
    for scope in scopes:
        if scope not in STANDARD_SCOPES:
            errors.append(invalid(path, shown, "unsupported scope"))
        for resource in hard:
            if is_standard_quota_resource(resource) and not scope_valid_for_resource(
                    scope, resource):
                errors.append(invalid(path, shown, "unsupported scope applied to resource"))
    errors += _conflicts(set(scopes), path, shown)
    return errors


def validate_scope_selector(spec: Obj, path: str) -> list[FieldError]:
    """validateScopedResourceSelectorRequirement: each expression names a known scope fit for
    the hard resources, with an operator its scope allows and values only for In/NotIn."""
    if spec.get("scopeSelector") is None:
        return []
    selector = as_dict(spec["scopeSelector"])
    expressions = as_list(selector.get("matchExpressions"))
    hard = sorted(as_dict(spec.get("hard")))
    errors: list[FieldError] = []
    seen: set[Any] = set()
    for expression in expressions:
        expression = as_dict(expression)
        scope = expression.get("scopeName", "")
        operator = expression.get("operator", "")
        values = as_list(expression.get("values"))
        if scope not in STANDARD_SCOPES:
            errors.append(invalid(f"{path}.scopeName", scope, "unsupported scope"))
        for resource in hard:
            if is_standard_quota_resource(resource) and not scope_valid_for_resource(
                    scope, resource):
                errors.append(invalid(path, _go_selector(selector),
                                      "unsupported scope applied to resource"))
        if scope in EXISTS_ONLY_SCOPES and operator != "Exists":
            errors.append(invalid(f"{path}.operator", operator, EXISTS_ONLY))
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(required(f"{path}.values", "must be at least one value when "
                                       "`operator` is 'In' or 'NotIn' for scope selector"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(invalid(f"{path}.values", go_json(values),
                                      "must be no value when `operator` is 'Exist' or "
                                      "'DoesNotExist' for scope selector"))
        else:
            errors.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
        seen.add(scope)
    # Upstream reports a selector's conflict with the value of spec.scopes.
    return errors + _conflicts(seen, path, go_json(spec.get("scopes")))


def _conflicts(scopes: set[Any], path: str, shown: GoValue) -> list[FieldError]:
    return [invalid(path, shown, "conflicting scopes")
            for pair in CONFLICTING_SCOPES if set(pair) <= scopes]


def _go_selector(selector: Obj) -> GoValue:
    """The internal ScopeSelector as JSON: Go's field names, in declaration order, and
    null for a list left unset."""
    expressions = selector.get("matchExpressions")
    return go_json({"MatchExpressions": None if expressions is None else [
        {"ScopeName": as_dict(e).get("scopeName", ""), "Operator": as_dict(e).get("operator", ""),
         "Values": as_dict(e).get("values")} for e in expressions]})
