"""ClusterRole aggregation: the rules of a ClusterRole with an aggregationRule are those of
the ClusterRoles its selectors pick (upstream pkg/controller/clusterroleaggregation).

    for each of its clusterRoleSelectors, in order:
        the ClusterRoles the selector matches, sorted by name, the role itself left out
            each of their rules, unless an equal rule is already taken

Shared by the API server, which writes the bootstrap roles `admin`, `edit` and `view`
already aggregated, and by the clusterrole-aggregation controller, which keeps them so:
both compute the rules the same way, so the controller finds nothing to change in a
fresh cluster.
"""

from __future__ import annotations

from collections.abc import Iterable

from minikube_py.api import Obj
from minikube_py.api.selectors import label_selector_from_dict

AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
AGGREGATE_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
AGGREGATE_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"


def aggregated_rules(role: Obj, cluster_roles: Iterable[Obj]) -> list[Obj]:
    """The rules `role` aggregates from `cluster_roles` (raises SelectorError for a
    selector that cannot be parsed)."""
    candidates = sorted(cluster_roles, key=lambda r: r["metadata"]["name"])
    name = role["metadata"]["name"]
    rules: list[Obj] = []
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
        selects = label_selector_from_dict(selector)
        for other in candidates:
            if other["metadata"]["name"] == name or not selects.matches(
                    other["metadata"].get("labels")):
                continue
            for rule in other.get("rules") or []:
                if not any(same_rule(rule, taken) for taken in rules):
                    rules.append(rule)
    return rules


def same_rules(a: list[Obj] | None, b: list[Obj] | None) -> bool:
    """Equal rule lists, in the same order (equality.Semantic.DeepEqual: a missing list
    equals an empty one)."""
    a, b = a or [], b or []
    return len(a) == len(b) and all(same_rule(x, y) for x, y in zip(a, b, strict=True))


def same_rule(a: Obj, b: Obj) -> bool:
    """Equal PolicyRules, a missing field equal to an empty one."""
    return _present(a) == _present(b)


def _present(rule: Obj) -> Obj:
    return {key: value for key, value in rule.items() if value}
