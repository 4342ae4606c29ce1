"""InterPodAffinity: place pods near, or away from, other pods (upstream plugins/interpodaffinity).

A pod affinity term names a set of pods (label selector + namespaces) and a topology key:
"run in the same `zone` as pods with app=cache". Required terms filter, preferred terms
score. The rules work both ways: an existing pod's required anti-affinity also keeps the
incoming pod off its domain ("symmetry"), and existing pods' preferences pull or push the
incoming pod when scoring.

Everything is counted per topology pair `(topologyKey, value of that label on a node)`:

    PreFilter   count, over the whole snapshot, the pairs holding
                  - existing pods whose required anti-affinity matches the incoming pod
                  - existing pods matching all of the incoming pod's required affinity terms
                  - existing pods matching one of its required anti-affinity terms
    Filter      look the node's pairs up in those counts
    PreScore    sum weights per pair: the incoming pod's preferred terms, and existing
                pods' preferred terms (and required affinity, at hardPodAffinityWeight)
    Score       add up the node's pairs;  NormalizeScore: min..max -> 0..100

The walks over every pod of every node are done per node and remembered while the node is
unchanged (NodeMemo), so the next replica of a workload only walks the nodes that changed;
PreScore's sums are kept too, and only the changed nodes' weights taken back and added
(NodeTotals).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minikube_py.api import Obj
from minikube_py.api.validation import invalid
from minikube_py.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from minikube_py.scheduler.framework.types import (
    AffinityTerm,
    NodeInfo,
    NodeMemo,
    NodeTotals,
    PodInfo,
    Snapshot,
    WeightedAffinityTerm,
)

if TYPE_CHECKING:
    from minikube_py.scheduler.framework.handle import Handle

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules")
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT, MAX_HARD_POD_AFFINITY_WEIGHT = 0, 100

TopologyPair = tuple[str, str]  # (topology key, the node's value for it)
TopologyCounts = dict[TopologyPair, int]
TopologyScore = dict[str, dict[str, int]]  # topology key -> value -> summed weight


def _add_counts(total: TopologyCounts, part: TopologyCounts) -> None:
    for pair, count in part.items():
        total[pair] = total.get(pair, 0) + count


def _update(counts: TopologyCounts, node_labels: Mapping[str, str], key: str, value: int
            ) -> None:
    """Add `value` to the node's pair for `key` (if it has the label); drop pairs at 0."""
    if key in node_labels:
        pair = (key, node_labels[key])
        total = counts.get(pair, 0) + value
        if total:
            counts[pair] = total
        else:
            counts.pop(pair, None)


def pod_matches_all_affinity_terms(terms: list[AffinityTerm], pod: Obj) -> bool:
    """podMatchesAllAffinityTerms: the terms are not empty and the pod is in all of them.

    The incoming pod's terms already hold their namespaceSelector's namespaces, so no
    namespace labels are needed.
    """
    return bool(terms) and all(term.matches(pod) for term in terms)


def _update_with_affinity_terms(counts: TopologyCounts, terms: list[AffinityTerm], pod: Obj,
                                node_labels: Mapping[str, str], value: int) -> None:
    """A pod that matches ALL affinity terms counts once for each term's pair."""
    if pod_matches_all_affinity_terms(terms, pod):
        for term in terms:
            _update(counts, node_labels, term.topology_key, value)


def _update_with_anti_affinity_terms(counts: TopologyCounts, terms: Iterable[AffinityTerm],
                                     pod: Obj, namespace_labels: dict[str, str] | None,
                                     node_labels: Mapping[str, str], value: int) -> None:
    """A pod counts once for the pair of each anti-affinity term it matches; a term's
    namespaceSelector is matched against `namespace_labels` (those of `pod`'s namespace)."""
    for term in terms:
        if term.matches(pod, namespace_labels):
            _update(counts, node_labels, term.topology_key, value)


def existing_anti_affinity_counts(node_info: NodeInfo, pod: Obj,
                                  namespace_labels: dict[str, str]) -> TopologyCounts:
    """One node's pairs holding a pod whose required anti-affinity matches `pod`."""
    counts: TopologyCounts = {}
    for existing in node_info.pods_with_required_anti_affinity:
        _update_with_anti_affinity_terms(counts, existing.required_anti_affinity_terms, pod,
                                         namespace_labels, node_info.labels, 1)
    return counts


def incoming_affinity_counts(node_info: NodeInfo, affinity_terms: list[AffinityTerm],
                             anti_affinity_terms: list[AffinityTerm]
                             ) -> tuple[TopologyCounts, TopologyCounts]:
    """One node's pairs holding pods that match all the affinity terms, and pods that
    match each anti-affinity term."""
    affinity: TopologyCounts = {}
    anti_affinity: TopologyCounts = {}
    node_labels = node_info.labels
    for existing in node_info.pods:
        _update_with_affinity_terms(affinity, affinity_terms, existing.pod, node_labels, 1)
        _update_with_anti_affinity_terms(anti_affinity, anti_affinity_terms, existing.pod,
                                         None, node_labels, 1)
    return affinity, anti_affinity


def merge_namespace_selector(term: AffinityTerm, namespace_labels: Mapping[str, Mapping[str, str]]
                             ) -> AffinityTerm:
    """mergeAffinityTermNamespacesIfNotEmpty: turn a term's namespaceSelector into names.

    For the incoming pod's own terms the scheduler lists the namespaces the selector
    matches once, adds them to `namespaces`, and drops the selector; an empty selector
    (all namespaces) stays as it is.
    """
    selector = term.namespace_selector
    if selector is None or selector.empty():
        return term
    matched = {name for name, labels in namespace_labels.items() if selector.matches(labels)}
    return dataclasses.replace(term, namespaces=term.namespaces | matched,
                               namespace_selector=None)


@dataclass(slots=True)
class PreFilterState:
    """The counts PreFilter computes and Filter reads (preFilterState)."""

    existing_anti_affinity_counts: TopologyCounts
    affinity_counts: TopologyCounts
    anti_affinity_counts: TopologyCounts
    pod: Obj
    affinity_terms: list[AffinityTerm]  # the incoming pod's, namespaces merged
    anti_affinity_terms: list[AffinityTerm]
    namespace_labels: dict[str, str] = field(default_factory=dict)  # of the pod's namespace

    def clone(self) -> PreFilterState:
        """Copy the counts (preemption changes them); the terms never change."""
        return dataclasses.replace(
            self, existing_anti_affinity_counts=dict(self.existing_anti_affinity_counts),
            affinity_counts=dict(self.affinity_counts),
            anti_affinity_counts=dict(self.anti_affinity_counts))

    def update_with_pod(self, pod_info: PodInfo, node: Obj, multiplier: int) -> None:
        """Count `pod_info` as added (+1) to, or removed (-1) from, `node`."""
        node_labels = (node.get("metadata") or {}).get("labels") or {}
        _update_with_anti_affinity_terms(
            self.existing_anti_affinity_counts, pod_info.required_anti_affinity_terms,
            self.pod, self.namespace_labels, node_labels, multiplier)
        _update_with_affinity_terms(self.affinity_counts, self.affinity_terms, pod_info.pod,
                                    node_labels, multiplier)
        _update_with_anti_affinity_terms(self.anti_affinity_counts, self.anti_affinity_terms,
                                         pod_info.pod, None, node_labels, multiplier)


@dataclass(slots=True)
class PreScoreState:
    """Summed weights per topology key and value (preScoreState.topologyScore)."""

    topology_score: TopologyScore

    def clone(self) -> PreScoreState:
        return self


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """PreFilter/Filter: enforce required pod (anti-)affinity, the incoming pod's and the
    existing pods'; PreScore/Score: prefer nodes by preferred (anti-)affinity weights."""

    name = NAME

    def __init__(self, args: Obj | None = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        weight = self.args.get("hardPodAffinityWeight")
        self.hard_pod_affinity_weight = (DEFAULT_HARD_POD_AFFINITY_WEIGHT if weight is None
                                         else weight)
        self.ignore_preferred_terms_of_existing_pods = bool(
            self.args.get("ignorePreferredTermsOfExistingPods", False))
        validate_args(self.hard_pod_affinity_weight)
        # Per-node results, reused while a node is unchanged (see NodeMemo).
        self.existing_anti_affinity_memo: NodeMemo[TopologyCounts] = NodeMemo()
        self.incoming_affinity_memo: NodeMemo[tuple[TopologyCounts, TopologyCounts]] = NodeMemo()
        # Per topology pair, the weights summed over the nodes (see NodeTotals).
        self.score_totals: NodeTotals[tuple[str, str]] = NodeTotals()

    def events_to_register(self) -> list[ClusterEvent]:
        """An assigned pod added (may satisfy affinity), relabelled or deleted (may lift
        anti-affinity), the pod's own labels changed, or a node added or relabelled."""
        return [ClusterEvent("Pod", "Add"), ClusterEvent("Pod", "UpdatePodLabel"),
                ClusterEvent("Pod", "Delete"), ClusterEvent("Node", "Add"),
                ClusterEvent("Node", "UpdateNodeLabel")]

    def _snapshot(self) -> Snapshot:
        if self.handle is None:
            raise RuntimeError(f"{NAME} needs the framework handle (its snapshot)")
        return self.handle.snapshot()

    # --- PreFilter / Filter ---------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        """PreFilter: count the topology pairs the three required rules care about."""
        snapshot = self._snapshot()
        namespace_labels = dict(snapshot.namespace_labels.get(pod.namespace) or {})
        affinity_terms = [merge_namespace_selector(term, snapshot.namespace_labels)
                          for term in pod.required_affinity_terms]
        anti_affinity_terms = [merge_namespace_selector(term, snapshot.namespace_labels)
                               for term in pod.required_anti_affinity_terms]

        pod_labels = frozenset((pod.pod["metadata"].get("labels") or {}).items())
        existing_counts = self.existing_anti_affinity_memo.per_node(
            (pod.namespace, pod_labels, frozenset(namespace_labels.items())),
            lambda info: existing_anti_affinity_counts(info, pod.pod, namespace_labels))
        existing_anti_affinity: TopologyCounts = {}
        for node_info in snapshot.have_pods_with_required_anti_affinity:
            _add_counts(existing_anti_affinity, existing_counts(node_info))

        if not existing_anti_affinity and not affinity_terms and not anti_affinity_terms:
            return None, Status.skip()

        affinity_counts: TopologyCounts = {}
        anti_affinity_counts: TopologyCounts = {}
        if affinity_terms or anti_affinity_terms:
            incoming_counts = self.incoming_affinity_memo.per_node(
                (tuple(affinity_terms), tuple(anti_affinity_terms)),
                lambda info: incoming_affinity_counts(info, affinity_terms, anti_affinity_terms))
            for node_info in nodes:
                affinity, anti_affinity = incoming_counts(node_info)
                _add_counts(affinity_counts, affinity)
                _add_counts(anti_affinity_counts, anti_affinity)

        state.write(PRE_FILTER_STATE_KEY, PreFilterState(
            existing_anti_affinity, affinity_counts, anti_affinity_counts, pod.pod,
            affinity_terms, anti_affinity_terms, namespace_labels))
        return None, SUCCESS

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo,
                node_info: NodeInfo) -> Status:
        """AddPod: count `to_add` as if it ran on the node (preemption's nominated pods)."""
        return self._update_with_pod(state, to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo,
                   node_info: NodeInfo) -> Status:
        """RemovePod: stop counting `to_remove` (a preemption victim)."""
        return self._update_with_pod(state, to_remove, node_info, -1)

    def _update_with_pod(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo,
                         multiplier: int) -> Status:
        pre_filter_state = state.get(PRE_FILTER_STATE_KEY)
        if pre_filter_state is None:
            return Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: '
                                "not found")
        pre_filter_state.update_with_pod(pod_info, node_info.node, multiplier)
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        """Filter: the incoming pod's affinity, its anti-affinity, then existing pods'
        anti-affinity (only a failed affinity cannot be helped by preemption)."""
        pre_filter_state: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if pre_filter_state is None:
            return Status.error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: '
                                "not found")
        node_labels = node_info.labels
        if not satisfy_pod_affinity(pre_filter_state, node_labels):
            return Status.unschedulable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, unresolvable=True)
        if not satisfy_pod_anti_affinity(pre_filter_state, node_labels):
            return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        if not satisfy_existing_pods_anti_affinity(pre_filter_state, node_labels):
            return Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return SUCCESS

    # --- PreScore / Score -------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        """PreScore: sum the weights of every matching term per topology pair."""
        has_constraints = bool(pod.preferred_affinity_terms or pod.preferred_anti_affinity_terms)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()

        snapshot = self._snapshot()
        namespace_labels = dict(snapshot.namespace_labels.get(pod.namespace) or {})
        inputs = _ScoreInputs(
            incoming=pod.pod, namespace_labels=namespace_labels,
            affinity_terms=_merged_weighted(pod.preferred_affinity_terms, snapshot),
            anti_affinity_terms=_merged_weighted(pod.preferred_anti_affinity_terms, snapshot),
            hard_pod_affinity_weight=self.hard_pod_affinity_weight,
            all_pods=has_constraints)
        # Without preferred terms of its own, only pods with affinity can score the pod.
        all_nodes = snapshot.node_info_list if has_constraints else snapshot.have_pods_with_affinity
        sums = self.score_totals.sums(
            (pod.namespace, frozenset((pod.pod["metadata"].get("labels") or {}).items()),
             frozenset(namespace_labels.items()), tuple(inputs.affinity_terms),
             tuple(inputs.anti_affinity_terms), has_constraints),
            inputs.node_score, all_nodes, snapshot)
        if not sums:  # no term matched on a node that has its topology label
            return Status.skip()
        topology_score: TopologyScore = {}
        for (key, value), weight in sums.items():
            topology_score.setdefault(key, {})[value] = weight
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(topology_score))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo
              ) -> tuple[int, Status]:
        """Score: the sum of the node's topology pairs' weights (negative for anti-affinity)."""
        pre_score_state: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if pre_score_state is None:
            return 0, Status.error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: '
                                   "not found")
        node_labels = node_info.labels
        total = 0
        for key, by_value in pre_score_state.topology_score.items():
            if key in node_labels:
                total += by_value.get(node_labels[key], 0)
        return total, SUCCESS

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                    ) -> tuple[list[int], Status]:
        """Score for many nodes, reading the topology pairs' weights once."""
        pre_score_state: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if pre_score_state is None:
            return super().score_nodes(state, pod, nodes)
        pairs = list(pre_score_state.topology_score.items())
        if len(pairs) == 1:  # one topology key (a node without it adds nothing)
            [(key, by_value)] = pairs
            weight_of = by_value.get
            return [weight_of(info.labels.get(key), 0) for info in nodes], SUCCESS
        scores = []
        for info in nodes:
            node_labels = info.labels
            total = 0
            for key, by_value in pairs:
                value = node_labels.get(key)
                if value is not None:
                    total += by_value.get(value, 0)
            scores.append(total)
        return scores, SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: dict[str, int]
                        ) -> Status | None:
        """NormalizeScore: map the lowest sum to 0 and the highest to 100."""
        pre_score_state: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if pre_score_state is None:
            return Status.error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: '
                                "not found")
        if not pre_score_state.topology_score or not scores:
            return None
        lowest, highest = min(scores.values()), max(scores.values())
        spread = highest - lowest
        # (sums are per topology pair: few values, each mapped once)
        mapped = {value: int(MAX_NODE_SCORE * ((value - lowest) / spread)) if spread > 0 else 0
                  for value in set(scores.values())}
        normalized = [mapped[value] for value in scores.values()]
        scores.update(zip(list(scores), normalized, strict=True))
        return None


def satisfy_pod_affinity(state: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    """The node has every affinity term's topology label, and each of its pairs holds a
    matching pod -- or no pod matches anywhere and the pod matches its own terms: the
    first pod of a group with affinity to itself may land (on a node with the labels)."""
    pods_exist = True
    for term in state.affinity_terms:
        if term.topology_key not in node_labels:
            return False
        if state.affinity_counts.get((term.topology_key, node_labels[term.topology_key]),
                                     0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    return not state.affinity_counts and pod_matches_all_affinity_terms(state.affinity_terms,
                                                                         state.pod)


def satisfy_pod_anti_affinity(state: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    """No pod the incoming pod's anti-affinity matches is in the node's domains."""
    if state.anti_affinity_counts:
        for term in state.anti_affinity_terms:
            key = term.topology_key
            if key in node_labels and state.anti_affinity_counts.get((key, node_labels[key]),
                                                                     0) > 0:
                return False
    return True


def satisfy_existing_pods_anti_affinity(state: PreFilterState, node_labels: Mapping[str, str]
                                        ) -> bool:
    """No existing pod whose anti-affinity matches the incoming pod shares a domain."""
    counts = state.existing_anti_affinity_counts
    if counts:
        for pair in node_labels.items():
            if counts.get(pair, 0) > 0:
                return False
    return True


def _merged_weighted(terms: list[WeightedAffinityTerm], snapshot: Snapshot
                     ) -> list[WeightedAffinityTerm]:
    return [WeightedAffinityTerm(merge_namespace_selector(t.term, snapshot.namespace_labels),
                                 t.weight) for t in terms]


@dataclass(slots=True)
class _ScoreInputs:
    """What one node adds to the topology score (processExistingPod, for all its pods)."""

    incoming: Obj
    namespace_labels: dict[str, str]  # of the incoming pod's namespace
    affinity_terms: list[WeightedAffinityTerm]  # the incoming pod's, namespaces merged
    anti_affinity_terms: list[WeightedAffinityTerm]
    hard_pod_affinity_weight: int
    all_pods: bool  # True: every pod counts; False: only pods with affinity can

    def node_score(self, node_info: NodeInfo) -> dict[tuple[str, str], int]:
        """The node's pods' weights by topology pair (a pair is there once a term matched)."""
        node_labels = node_info.labels
        score: dict[tuple[str, str], int] = {}
        if not node_labels:
            return score

        def add(term: AffinityTerm, weight: int, pod: Obj,
                namespace_labels: dict[str, str] | None) -> None:
            if term.matches(pod, namespace_labels) and term.topology_key in node_labels:
                pair = (term.topology_key, node_labels[term.topology_key])
                score[pair] = score.get(pair, 0) + weight

        for existing in node_info.pods if self.all_pods else node_info.pods_with_affinity:
            # The incoming pod's preferences toward the existing pod.
            for weighted in self.affinity_terms:
                add(weighted.term, weighted.weight, existing.pod, None)
            for weighted in self.anti_affinity_terms:
                add(weighted.term, -weighted.weight, existing.pod, None)
            # The existing pod's rules toward the incoming pod ("symmetry").
            if self.hard_pod_affinity_weight > 0:
                for term in existing.required_affinity_terms:
                    add(term, self.hard_pod_affinity_weight, self.incoming,
                        self.namespace_labels)
            for weighted in existing.preferred_affinity_terms:
                add(weighted.term, weighted.weight, self.incoming, self.namespace_labels)
            for weighted in existing.preferred_anti_affinity_terms:
                add(weighted.term, -weighted.weight, self.incoming, self.namespace_labels)
        return score


def validate_args(hard_pod_affinity_weight: object) -> None:
    """ValidateInterPodAffinityArgs: hardPodAffinityWeight within [0, 100]."""
    if not isinstance(hard_pod_affinity_weight, int) or not (
            MIN_HARD_POD_AFFINITY_WEIGHT <= hard_pod_affinity_weight
            <= MAX_HARD_POD_AFFINITY_WEIGHT):
        detail = (f"not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}, "
                  f"{MAX_HARD_POD_AFFINITY_WEIGHT}]")
        raise ValueError(str(invalid("hardPodAffinityWeight", hard_pod_affinity_weight, detail)))
