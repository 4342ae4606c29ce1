"""Node selectors and node affinity: does a node satisfy what a pod asks of it?

Upstream: k8s.io/component-helpers/scheduling/corev1/nodeaffinity. A NodeSelector is a
list of terms ORed together. A term ANDs its `matchExpressions` (on the node's labels,
operators In, NotIn, Exists, DoesNotExist, Gt, Lt) and its `matchFields` (on the
node's fields; only `metadata.name` exists, with In or NotIn and exactly one value).
An empty term matches nothing. A requirement that does not parse (a bad key or value,
the wrong number of values, an unknown operator) matches nothing: upstream's lazy
selector turns it into an error for its term only, and the other terms still count.
"""

from __future__ import annotations

from collections.abc import Mapping

from minikube_py.api import Obj
from minikube_py.api.meta import labels_of, name_of
from minikube_py.api.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    NOT_IN,
    SelectorError,
    new_requirement,
)

# NodeSelectorOperator -> labels.Selector operator (selection.Operator).
_LABEL_OPERATORS = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
    "Gt": GREATER_THAN,
    "Lt": LESS_THAN,
}


def node_selector_requirement_matches(req: Obj, labels: Mapping[str, str]) -> bool:
    """One `matchExpressions` entry against node labels (nodeSelectorRequirementsAsSelector).

    NotIn and DoesNotExist match a node without the label; Gt and Lt compare the label
    and the single value as int64 and never match a label that is not an integer.
    """
    operator = _LABEL_OPERATORS.get(req.get("operator", ""))
    if operator is None:
        return False
    try:
        requirement = new_requirement(req.get("key", ""), operator, req.get("values") or [])
    except SelectorError:
        return False
    return requirement.matches(labels)


def node_field_requirement_matches(req: Obj, fields: Mapping[str, str]) -> bool:
    """One `matchFields` entry (nodeSelectorRequirementsAsFieldSelector): In or NotIn,
    one value, compared with the field; a field the node does not have reads as "".
    """
    values = req.get("values") or []
    operator = req.get("operator")
    if operator not in ("In", "NotIn") or len(values) != 1:
        return False
    equal = fields.get(req.get("key", ""), "") == values[0]
    return equal if operator == "In" else not equal


def node_selector_term_matches(term: Obj, node: Obj) -> bool:
    """A NodeSelectorTerm: every matchExpressions and every matchFields entry holds."""
    expressions = term.get("matchExpressions") or []
    field_requirements = term.get("matchFields") or []
    if not expressions and not field_requirements:
        return False
    labels = labels_of(node)
    fields = {"metadata.name": name_of(node)}
    return all(node_selector_requirement_matches(req, labels) for req in expressions) and all(
        node_field_requirement_matches(req, fields) for req in field_requirements
    )


def node_selector_matches(node_selector: Obj | None, node: Obj) -> bool:
    """A NodeSelector (LazyErrorNodeSelector.Match): any of its terms matches.

    No terms at all matches no node.
    """
    terms = (node_selector or {}).get("nodeSelectorTerms") or []
    return any(node_selector_term_matches(term, node) for term in terms)


def _node_affinity(pod: Obj) -> Obj:
    spec = pod.get("spec") or {}
    return (spec.get("affinity") or {}).get("nodeAffinity") or {}


def pod_matches_node_selector_and_affinity(pod: Obj, node: Obj) -> bool:
    """GetRequiredNodeAffinity(pod).Match(node): the pod's `spec.nodeSelector` labels all
    equal the node's, and its requiredDuringSchedulingIgnoredDuringExecution (if set)
    selects the node. This is what NodeAffinity's Filter and the DaemonSet controller ask.
    """
    labels = labels_of(node)
    node_selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    if any(key not in labels or labels[key] != value for key, value in node_selector.items()):
        return False
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    return required is None or node_selector_matches(required, node)


def preferred_node_affinity_score(pod: Obj, node: Obj) -> int:
    """PreferredSchedulingTerms.Score: the sum of the weights of the preferred terms
    (preferredDuringSchedulingIgnoredDuringExecution) whose preference the node matches.

    Terms with weight 0 are skipped, as upstream does.
    """
    terms = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return sum(
        term.get("weight", 0)
        for term in terms
        if term.get("weight") and node_selector_term_matches(term.get("preference") or {}, node)
    )
