"""Reconciliation: what a bootstrap role or binding that already exists must gain so that
it grants at least what this version's policy says (upstream
k8s.io/component-helpers/auth/rbac/reconciliation, run as the rbac/bootstrap-roles
post-start hook runs it: adding, never removing).

    an object whose annotation rbac.authorization.kubernetes.io/autoupdate is "false"
        -> protected: nothing is written, whatever it lacks
    a role (ClusterRole or Role)                       computeReconciledRole
        labels, annotations -> the expected keys it lacks; its own values win
        rules               -> the expected rules broken down into single items, one verb
                               on one group/resource/resourceName or one URL; the items
                               no existing rule covers are appended, one rule each
        aggregationRule     -> the expected selectors it lacks appended; removed when the
                               expected role is not aggregated
    a binding (ClusterRoleBinding or RoleBinding)      computeReconciledRoleBinding
        roleRef differs     -> recreate: the expected binding replaces it (a roleRef
                               cannot be changed in place)
        labels, annotations -> as for a role
        subjects            -> the expected subjects it lacks appended
    nothing to add -> nothing to write

What a user added (rules, subjects, labels) stays. This is how a cluster whose etcd
outlives an upgrade gets the rules the new version's components need.

admin, edit and view are written with their rules already aggregated (policy.py), where
upstream writes them empty, so the rules they lack are added as any role's are; the
clusterrole-aggregation controller keeps them as their selectors say from then on.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

from minikube_py.api import Obj
from minikube_py.apiserver.auth.authentication import UserInfo
from minikube_py.apiserver.auth.authorization import Attributes, Rule
from minikube_py.apiserver.auth.bootstrappolicy.rules import rule

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"

Operation = Literal["none", "update", "recreate"]

# A rule matches a request whoever asks: covering is checked with requests of nobody.
_NOBODY = UserInfo("")


@dataclass(frozen=True)
class Reconciled:
    """What reconciling one existing object comes to (upstream's
    ReconcileClusterRoleResult and ReconcileClusterRoleBindingResult)."""

    # "update": write `obj`; "recreate": delete the existing object, create `obj`
    operation: Operation
    # the existing object with what it lacked, or for "recreate" the expected one
    obj: Obj
    # what the write adds or changes, by field ({"addedRules": [...], ...}), for the log
    changes: dict[str, Any] = field(default_factory=dict)
    # autoupdate "false": nothing may be written, even when `changes` is not empty
    protected: bool = False


def reconcile_role(expected: Obj, existing: Obj) -> Reconciled:
    """computeReconciledRole, in union mode: the existing ClusterRole or Role with the
    labels, annotations, rules and aggregation selectors of `expected` it lacks."""
    reconciled = copy.deepcopy(existing)
    changes = _merge_metadata(expected, reconciled)
    missing = uncovered_rules(existing.get("rules") or [], expected.get("rules") or [])
    if missing:
        reconciled["rules"] = [*(existing.get("rules") or []), *missing]
        changes["addedRules"] = missing
    changes.update(_reconcile_aggregation(expected, reconciled))
    return _result("update", reconciled, changes, existing)


def reconcile_binding(expected: Obj, existing: Obj) -> Reconciled:
    """computeReconciledRoleBinding, in union mode: the existing ClusterRoleBinding or
    RoleBinding with the labels, annotations and subjects of `expected` it lacks; the
    expected binding in its place when their roleRefs differ."""
    if _role_ref(expected) != _role_ref(existing):
        changes = {"roleRef": expected.get("roleRef"), "previousRoleRef": existing.get("roleRef")}
        return _result("recreate", copy.deepcopy(expected), changes, existing)
    reconciled = copy.deepcopy(existing)
    changes = _merge_metadata(expected, reconciled)
    have = [_subject_key(subject) for subject in existing.get("subjects") or []]
    missing: list[Obj] = []
    for subject in expected.get("subjects") or []:
        if _subject_key(subject) not in have:
            have.append(_subject_key(subject))
            missing.append(subject)
    if missing:
        reconciled["subjects"] = [*(existing.get("subjects") or []), *missing]
        changes["addedSubjects"] = missing
    return _result("update", reconciled, changes, existing)


def _result(operation: Operation, obj: Obj, changes: dict[str, Any], existing: Obj
            ) -> Reconciled:
    protected = (existing["metadata"].get("annotations") or {}).get(AUTOUPDATE) == "false"
    return Reconciled(operation if changes else "none", obj, changes, protected)


def _merge_metadata(expected: Obj, reconciled: Obj) -> dict[str, Any]:
    """Give `reconciled` the expected labels and annotations it lacks (its own values win);
    what was added, by field."""
    changes: dict[str, Any] = {}
    metadata = reconciled["metadata"]
    for key, change in (("labels", "addedLabels"), ("annotations", "addedAnnotations")):
        have = metadata.get(key) or {}
        missing = {name: value for name, value in (expected["metadata"].get(key) or {}).items()
                   if name not in have}
        if missing:
            metadata[key] = {**have, **missing}
            changes[change] = missing
    return changes


def _reconcile_aggregation(expected: Obj, reconciled: Obj) -> dict[str, Any]:
    """Append the expected clusterRoleSelectors `reconciled` lacks (equal selectors, a
    missing list or map equal to an empty one, are the same); drop its aggregationRule
    when the expected role has none. What changed, by field."""
    wanted = expected.get("aggregationRule")
    have = reconciled.get("aggregationRule")
    if wanted is None:
        if have is None:
            return {}
        del reconciled["aggregationRule"]
        return {"removedAggregationRule": have}
    selectors = list((have or {}).get("clusterRoleSelectors") or [])
    present = [_present(selector) for selector in selectors]
    missing = [selector for selector in wanted.get("clusterRoleSelectors") or []
               if _present(selector) not in present]
    if not missing:
        return {}
    reconciled["aggregationRule"] = {**(have or {}),
                                     "clusterRoleSelectors": [*selectors, *missing]}
    return {"addedClusterRoleSelectors": missing}


def _present(selector: Obj) -> Obj:
    return {key: value for key, value in selector.items() if value}


def _role_ref(binding: Obj) -> tuple[str, str, str]:
    ref = binding.get("roleRef") or {}
    return ref.get("apiGroup", ""), ref.get("kind", ""), ref.get("name", "")


def _subject_key(subject: Obj) -> tuple[str, str, str, str]:
    return (subject.get("kind", ""), subject.get("apiGroup", ""), subject.get("name", ""),
            subject.get("namespace", ""))


# -- covering (upstream validation.Covers) ---------------------------------------------------

def uncovered_rules(owner: list[Obj], servant: list[Obj]) -> list[Obj]:
    """Covers: the single items of the `servant` rules that no `owner` rule allows, in
    order (none: the owner rules grant everything the servant rules grant)."""
    rules = [Rule.of(item) for item in owner if isinstance(item, dict)]
    return [item for servant_rule in servant for item in breakdown_rule(servant_rule)
            if not any(owning.allows(_request(item)) for owning in rules)]


def breakdown_rule(policy_rule: Obj) -> list[Obj]:
    """BreakdownRule: the rule as rules of one verb each, on one API group, resource and
    resource name (when the rule names any), or on one non-resource URL."""
    names = policy_rule.get("resourceNames") or [None]
    items = [rule([verb], [group], [resource], names=[name] if name else None)
             for group in policy_rule.get("apiGroups") or []
             for resource in policy_rule.get("resources") or []
             for verb in policy_rule.get("verbs") or []
             for name in names]
    return items + [rule([verb], urls=[url])
                    for url in policy_rule.get("nonResourceURLs") or []
                    for verb in policy_rule.get("verbs") or []]


def _request(item: Obj) -> Attributes:
    """The request a single item stands for: `pods/log` is the resource pods, subresource
    log; `*/scale` any resource's scale. A rule covers the item when it allows the
    request, with RBAC's wildcards: `*` verbs, groups and resources, `path/*` URLs."""
    verb = item["verbs"][0]
    if "nonResourceURLs" in item:
        return Attributes(_NOBODY, verb, False, path=item["nonResourceURLs"][0])
    resource, _, subresource = item["resources"][0].partition("/")
    return Attributes(_NOBODY, verb, True, api_group=item["apiGroups"][0], resource=resource,
                      subresource=subresource, name=(item.get("resourceNames") or [""])[0])
