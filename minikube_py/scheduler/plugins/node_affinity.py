"""NodeAffinity (upstream plugins/nodeaffinity): a pod's nodeSelector and node affinity,
plus the affinity a profile adds to every pod (NodeAffinityArgs.addedAffinity)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minikube_py.api import Obj
from minikube_py.api.scheduling.nodeaffinity import (
    node_selector_matches,
    pod_matches_node_selector_and_affinity,
    preferred_node_affinity_score,
)
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
from minikube_py.api.validation import invalid, not_supported
from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PluginArgsError,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    Status,
    default_normalize_score,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from minikube_py.scheduler.framework.handle import Handle

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

# NodeSelectorOperator -> label selector operator, to validate addedAffinity as upstream parses it.
_LABEL_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST,
                    "Gt": GREATER_THAN, "Lt": LESS_THAN}


def _node_affinity(pod: Obj) -> Obj:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """PreFilter: narrow the nodes to those required terms name (matchFields metadata.name).
    Filter: drop nodes that fail nodeSelector, required node affinity or the added affinity.
    Score: sum the weights of the preferred terms (the pod's and the added ones) a node meets."""

    name = "NodeAffinity"
    node_local = True  # answers depend on the pod's spec and the node alone

    def __init__(self, args: Obj | None = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        added = self.args.get("addedAffinity") or {}
        errors = _validate_added_affinity(added)
        if errors:
            raise PluginArgsError(errors)
        self.added_node_selector: Obj | None = added.get(REQUIRED)
        # A pod that carries only the added preferences, so the shared helper scores them.
        preferred = added.get(PREFERRED) or []
        self._added_preferences: Obj | None = (
            {"spec": {"affinity": {"nodeAffinity": {PREFERRED: preferred}}}} if preferred else None)

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        """Skip pods with nothing to check; when every required term pins metadata.name,
        only those nodes are worth filtering (none at all: the terms conflict)."""
        required = _node_affinity(pod.pod).get(REQUIRED)
        no_selector = (pod.pod.get("spec") or {}).get("nodeSelector") is None
        if required is None and self.added_node_selector is None and no_selector:
            return None, Status.skip()
        terms = (required or {}).get("nodeSelectorTerms") or []
        if not terms:
            return None, SUCCESS
        node_names: set[str] = set()
        for term in terms:
            term_names: set[str] | None = None
            for requirement in term.get("matchFields") or []:
                if (requirement.get("key") == "metadata.name"
                        and requirement.get("operator") == "In"):
                    values = set(requirement.get("values") or [])
                    term_names = values if term_names is None else term_names & values
            if term_names is None:
                return None, SUCCESS  # this term may match any node, and terms are ORed
            node_names |= term_names
        if not node_names:
            return None, Status.unschedulable(ERR_REASON_CONFLICT, unresolvable=True)
        return PreFilterResult(node_names), SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        """Labels change only when someone relabels the node: both rejections are
        UnschedulableAndUnresolvable."""
        node = node_info.node
        if self.added_node_selector is not None and not node_selector_matches(
                self.added_node_selector, node):
            return Status.unschedulable(ERR_REASON_ENFORCED, unresolvable=True)
        if not pod_matches_node_selector_and_affinity(pod.pod, node):
            return Status.unschedulable(ERR_REASON_POD, unresolvable=True)
        return SUCCESS

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        """Skip pods without preferred terms when the profile adds none either."""
        if _node_affinity(pod.pod).get(PREFERRED) is None and self._added_preferences is None:
            return Status.skip()
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        """The sum of the weights of the preferred terms this node matches."""
        total = preferred_node_affinity_score(pod.pod, node_info.node)
        if self._added_preferences is not None:
            total += preferred_node_affinity_score(self._added_preferences, node_info.node)
        return total, SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: dict[str, int]
                        ) -> Status | None:
        """The best node gets 100, the others in proportion."""
        default_normalize_score(scores)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        """A new node, or a node whose labels changed."""
        return [ClusterEvent("Node", "Add"), ClusterEvent("Node", "UpdateNodeLabel")]


def _validate_added_affinity(added: Obj) -> list[str]:
    """ValidateNodeAffinityArgs: addedAffinity must parse as upstream's NodeSelector and
    PreferredSchedulingTerms do (the paths are upstream's, quirks included)."""
    errors: list[str] = []
    required = added.get(REQUIRED)
    if required is not None:
        path = f"addedAffinity.{REQUIRED}.nodeSelectorTerms"
        for i, term in enumerate(required.get("nodeSelectorTerms") or []):
            errors += _validate_term(term, f"{path}[{i}]")
    for i, preferred in enumerate(added.get(PREFERRED) or []):
        if preferred.get("weight"):
            # Upstream parses a preferred term's preference at the term's own path.
            errors += _validate_term(preferred.get("preference") or {},
                                     f"addedAffinity.{PREFERRED}[{i}]")
    return errors


def _validate_term(term: Obj, path: str) -> list[str]:
    errors: list[str] = []
    for j, expression in enumerate(term.get("matchExpressions") or []):
        at = f"{path}.matchExpressions[{j}]"
        operator = expression.get("operator", "")
        if operator not in _LABEL_OPERATORS:
            errors.append(str(not_supported(f"{at}.operator", operator, list(_LABEL_OPERATORS))))
            continue
        try:
            new_requirement(expression.get("key", ""), _LABEL_OPERATORS[operator],
                            expression.get("values") or [])
        except SelectorError as error:
            message = str(error)
            errors.append(f"{at}: {message}" if message.startswith("[") else f"{at}.{message}")
    for j, requirement in enumerate(term.get("matchFields") or []):
        at = f"{path}.matchFields[{j}]"
        operator = requirement.get("operator", "")
        values = requirement.get("values") or []
        if operator not in ("In", "NotIn"):
            errors.append(str(not_supported(f"{at}.operator", operator, ["In", "NotIn"])))
        elif len(values) != 1:
            errors.append(str(invalid(f"{at}.values", values, "must have one element")))
    return errors
