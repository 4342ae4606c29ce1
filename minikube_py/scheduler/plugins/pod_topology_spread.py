"""PodTopologySpread: spread matching pods evenly across topology domains (upstream
plugins/podtopologyspread).

A constraint `{maxSkew: 1, topologyKey: zone, labelSelector: app=web}` asks that, counting
pods with app=web per zone, the placed pod leaves no zone more than `maxSkew` above the
emptiest one. `whenUnsatisfiable: DoNotSchedule` constraints filter; `ScheduleAnyway` ones
only score. A pod without constraints gets the plugin's default constraints (with
`defaultingType: System`: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway),
selecting the pods of the Services, ReplicaSet or StatefulSet the pod belongs to.

Only nodes that have every constraint's topology key, and pass the node inclusion
policies (nodeAffinityPolicy Honor: the pod's nodeSelector/affinity; nodeTaintsPolicy
Honor: its tolerations), hold domains that count. Counting walks every pod of every
node, so each node's count is remembered while the node is unchanged (NodeMemo), and
when every node's domain counts, PreFilter's and PreScore's sums per domain are kept
from one cycle to the next and brought up to date from the nodes that changed. Filter, when
it turns nodes down by their domain alone, reads the domains of the nodes it is handed
from the topology key's NodeLabelColumn, kept the same way (filter_nodes_split).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import compress
from operator import not_
from sys import intern
from typing import TYPE_CHECKING, Any

from minikube_py.api import Obj
from minikube_py.api.scheduling.nodeaffinity import pod_matches_node_selector_and_affinity
from minikube_py.api.scheduling.taints import find_untolerated_taint
from minikube_py.api.selectors import (
    EQUALS,
    LabelSelector,
    Requirement,
    SelectorError,
    label_selector_from_dict,
)
from minikube_py.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_qualified_name,
)
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
from minikube_py.scheduler.framework.node_to_status import NodeToStatus
from minikube_py.scheduler.framework.types import (
    NodeInfo,
    NodeLabelColumn,
    NodeMemo,
    PodInfo,
    Snapshot,
)

if TYPE_CHECKING:
    from minikube_py.client.store import Indexer
    from minikube_py.scheduler.framework.handle import Handle

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
SYSTEM_DEFAULTING, LIST_DEFAULTING = "System", "List"

SYSTEM_DEFAULT_CONSTRAINTS: list[Obj] = [
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
]

_MAX_INT32 = 2**31 - 1
MAX_COLUMNS = 8  # topology keys whose NodeLabelColumn is kept
_DO_NOT_SCHEDULE_TAINT_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class SpreadConstraint:
    """A TopologySpreadConstraint with its selector parsed and its defaults filled in."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def matches_node_inclusion_policies(self, pod: Obj, node: Obj, affinity_match: bool
                                        ) -> bool:
        """Does the node's domain count? `affinity_match` is the pod's node affinity result."""
        if self.node_affinity_policy == HONOR and not affinity_match:
            return False
        if self.node_taints_policy == HONOR:
            taints = (node.get("spec") or {}).get("taints")
            tolerations = (pod.get("spec") or {}).get("tolerations")
            if find_untolerated_taint(taints, tolerations, _DO_NOT_SCHEDULE_TAINT_EFFECTS):
                return False
        return True


def _labels(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def node_labels_match_spread_constraints(node_labels: Mapping[str, str],
                                         constraints: list[SpreadConstraint]) -> bool:
    """nodeLabelsMatchSpreadConstraints: the node has ALL the constraints' topology keys."""
    for constraint in constraints:
        if constraint.topology_key not in node_labels:
            return False
    return True


def _asks_for_nodes(pod: Obj) -> bool:
    """Has the pod a nodeSelector or a required node affinity? Without, every node matches
    it, and nodeAffinityPolicy Honor need not look at the node at all."""
    spec = pod.get("spec") or {}
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    return bool(spec.get("nodeSelector")) or (
        node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") is not None)


def _admit_all(node: Obj) -> bool:
    return True


def _affinity_checker(pod: Obj, constraints: list[SpreadConstraint]) -> Callable[[Obj], bool]:
    """node -> does the pod's node selector/affinity admit it (asked only when needed)."""
    if any(c.node_affinity_policy == HONOR for c in constraints) and _asks_for_nodes(pod):
        return lambda node: pod_matches_node_selector_and_affinity(pod, node)
    return _admit_all


def count_pods_match_selector(pod_infos: list[PodInfo], selector: LabelSelector,
                              namespace: str) -> int:
    """Pods of `namespace` the selector matches, leaving out terminating pods."""
    if selector.nothing:
        return 0
    count = 0
    for pod_info in pod_infos:
        meta = pod_info.pod.get("metadata") or {}
        if meta.get("namespace", "") != namespace or meta.get("deletionTimestamp"):
            continue
        if selector.matches(meta.get("labels")):
            count += 1
    return count


def _count_matching(selector: LabelSelector, namespace: str) -> Callable[[NodeInfo], int]:
    """node_info -> count_pods_match_selector over its pods."""
    return lambda info: count_pods_match_selector(info.pods, selector, namespace)


def _merge_label_set(match_labels: dict[str, str], selector: LabelSelector) -> LabelSelector:
    """mergeLabelSetWithSelector: AND key=value requirements into the selector (a selector
    that matches nothing stays so)."""
    if selector.nothing:
        return selector
    requirements = [Requirement(key, EQUALS, (value,)) for key, value in match_labels.items()]
    requirements.extend(selector.requirements)
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


def filter_topology_spread_constraints(constraints: list[Obj], pod_labels: Mapping[str, str],
                                       action: str) -> list[SpreadConstraint]:
    """The constraints with `whenUnsatisfiable == action`, parsed. matchLabelKeys adds the
    pod's own values for those keys to the selector (so each rollout spreads by itself).

    Raises SelectorError for a labelSelector that does not parse.
    """
    result = []
    for constraint in constraints:
        if constraint.get("whenUnsatisfiable") != action:
            continue
        selector = label_selector_from_dict(constraint.get("labelSelector"))
        match_labels = {key: pod_labels[key] for key in constraint.get("matchLabelKeys") or []
                        if key in pod_labels}
        if match_labels:
            selector = _merge_label_set(match_labels, selector)
        min_domains = constraint.get("minDomains")
        topology_key = constraint.get("topologyKey", "")
        if isinstance(topology_key, str):
            topology_key = intern(topology_key)  # as NodeInfo's label keys are
        result.append(SpreadConstraint(
            max_skew=int(constraint.get("maxSkew", 0)),
            topology_key=topology_key,
            selector=selector,
            min_domains=1 if min_domains is None else int(min_domains),
            node_affinity_policy=constraint.get("nodeAffinityPolicy") or HONOR,
            node_taints_policy=constraint.get("nodeTaintsPolicy") or IGNORE))
    return result


class CriticalPaths:
    """The two domains with the fewest matching pods; `paths[0]` always holds the minimum.

    The second entry is not guaranteed to be the true second minimum, which is enough for
    preemption: it only ever adds or removes pods on one node at a time.
    """

    __slots__ = ("paths",)

    def __init__(self) -> None:
        self.paths: list[tuple[str, int]] = [("", _MAX_INT32), ("", _MAX_INT32)]

    def update(self, value: str, count: int) -> None:
        paths = self.paths
        if value in (paths[0][0], paths[1][0]):
            index = 0 if value == paths[0][0] else 1
            paths[index] = (value, count)
            if paths[0][1] > paths[1][1]:
                paths[0], paths[1] = paths[1], paths[0]
        elif count < paths[0][1]:
            paths[1] = paths[0]
            paths[0] = (value, count)
        elif count < paths[1][1]:
            paths[1] = (value, count)

    def clone(self) -> CriticalPaths:
        twin = CriticalPaths()
        twin.paths = list(self.paths)
        return twin


@dataclass(slots=True)
class PreFilterState:
    """Matching pods per domain for each DoNotSchedule constraint (preFilterState)."""

    constraints: list[SpreadConstraint]
    critical_paths: list[CriticalPaths]
    tp_value_to_match_num: list[dict[str, int]]  # per constraint: domain -> matching pods
    self_match_num: list[int]  # per constraint: 1 if the incoming pod matches its selector
    # every node has every constraint's topology key (known when PreFilter's sums were
    # kept over the whole snapshot; False: not known)
    every_node_labelled: bool = False

    def min_match_num(self, index: int) -> int:
        """The global minimum for the skew; 0 while there are fewer domains than minDomains."""
        if len(self.tp_value_to_match_num[index]) < self.constraints[index].min_domains:
            return 0
        return self.critical_paths[index].paths[0][1]

    def clone(self) -> PreFilterState:
        return PreFilterState(self.constraints, [p.clone() for p in self.critical_paths],
                              [dict(counts) for counts in self.tp_value_to_match_num],
                              self.self_match_num, self.every_node_labelled)


@dataclass(slots=True)
class PreScoreState:
    """What Score needs for the ScheduleAnyway constraints (preScoreState)."""

    constraints: list[SpreadConstraint]
    ignored_nodes: set[str]  # filtered nodes missing a topology key: scored 0
    topology_value_to_pod_counts: list[dict[str, int]]  # hostname constraints: counted in Score
    topology_normalizing_weight: list[float]
    counters: list[Callable[[NodeInfo], int]]  # matching pods on one node, per constraint

    def clone(self) -> PreScoreState:
        return self


def domains_over_limit(pre_filter_state: PreFilterState | None
                       ) -> tuple[str, set[str]] | None:
    """When a node's Filter verdict is its domain's alone (one constraint, every node with
    its topology key, and a domain holding no matching pod within the limit, which maxSkew
    >= 1 sees to): the key, and the domains whose count is over the largest the constraint
    allows (maxSkew + the minimum - the pod itself). None otherwise."""
    if (pre_filter_state is None or len(pre_filter_state.constraints) != 1
            or not pre_filter_state.every_node_labelled):
        return None
    constraint = pre_filter_state.constraints[0]
    most = (constraint.max_skew + pre_filter_state.min_match_num(0)
            - pre_filter_state.self_match_num[0])
    if most < 0:
        return None
    return constraint.topology_key, {value for value, count
                                     in pre_filter_state.tp_value_to_match_num[0].items()
                                     if count > most}


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    """PreFilter/Filter: reject nodes where a DoNotSchedule constraint's skew would exceed
    maxSkew; PreScore/Score: prefer domains with fewer matching pods (ScheduleAnyway)."""

    name = NAME

    def __init__(self, args: Obj | None = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.defaulting_type: str = self.args.get("defaultingType") or SYSTEM_DEFAULTING
        self.default_constraints: list[Obj] = list(self.args.get("defaultConstraints") or [])
        validate_args(self.defaulting_type, self.default_constraints)
        self.system_defaulted = self.defaulting_type == SYSTEM_DEFAULTING
        if self.system_defaulted:
            self.default_constraints = SYSTEM_DEFAULT_CONSTRAINTS
        # Listers for the default selector; without an informer factory (unit tests with a
        # bare handle) pods never get default constraints.
        self._stores: dict[str, Indexer] | None = None
        informers = getattr(handle, "informers", None)
        if self.default_constraints and informers is not None:
            self._stores = {
                "services": informers.informer("services").store,
                "replicasets": informers.informer("replicasets", "apps").store,
                "statefulsets": informers.informer("statefulsets", "apps").store,
            }
        # Matching pods per node, reused while a node is unchanged (see NodeMemo).
        self.counts: NodeMemo[int] = NodeMemo()
        # Topology key -> its value on each node of the snapshot, for Filter (most
        # recently used last).
        self.columns: dict[str, NodeLabelColumn] = {}

    def events_to_register(self) -> list[ClusterEvent]:
        """An assigned pod added, relabelled or deleted; the pod's own labels or
        tolerations changed; a node added, deleted, relabelled or retainted."""
        return [ClusterEvent("Pod", "Add"), ClusterEvent("Pod", "UpdatePodLabel"),
                ClusterEvent("Pod", "Delete"), ClusterEvent("Pod", "UpdatePodToleration"),
                ClusterEvent("Node", "Add"), ClusterEvent("Node", "Delete"),
                ClusterEvent("Node", "UpdateNodeLabel"), ClusterEvent("Node", "UpdateNodeTaint")]

    def _snapshot(self) -> Snapshot:
        if self.handle is None:
            raise RuntimeError(f"{NAME} needs the framework handle (its snapshot)")
        return self.handle.snapshot()

    def _matching_pods(self, selector: LabelSelector, namespace: str, nodes: list[NodeInfo]
                       ) -> list[int]:
        """For each node: how many pods of `namespace` on it `selector` matches (remembered)."""
        return self.counts.for_nodes((namespace, selector),
                                     _count_matching(selector, namespace), nodes)

    def _counter(self, selector: LabelSelector, namespace: str) -> Callable[[NodeInfo], int]:
        """node_info -> how many pods of `namespace` on it `selector` matches (remembered)."""
        return self.counts.per_node((namespace, selector), _count_matching(selector, namespace))

    # --- constraints --------------------------------------------------------------------

    def get_constraints(self, pod: Obj, action: str) -> list[SpreadConstraint]:
        """The pod's own constraints with `action`, or else the default ones."""
        spec_constraints = (pod.get("spec") or {}).get("topologySpreadConstraints") or []
        if spec_constraints:
            return filter_topology_spread_constraints(spec_constraints, _labels(pod), action)
        return self.build_default_constraints(pod, action)

    def build_default_constraints(self, pod: Obj, action: str) -> list[SpreadConstraint]:
        """buildDefaultConstraints: the default constraints, all with the default selector."""
        constraints = filter_topology_spread_constraints(self.default_constraints,
                                                         _labels(pod), action)
        if not constraints:
            return []
        selector = self.default_selector(pod)
        if selector.empty():
            return []
        return [dataclasses.replace(c, selector=selector) for c in constraints]

    def default_selector(self, pod: Obj) -> LabelSelector:
        """helper.DefaultSelector: the selectors of the Services that select the pod,
        ANDed with that of its controlling ReplicaSet or StatefulSet.

        ReplicationControllers, which upstream also reads, do not exist in minikube-py.
        """
        if self._stores is None:
            return LabelSelector.everything()
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        pod_labels = _labels(pod)
        label_set: dict[str, str] = {}
        for service in self._stores["services"].list(namespace):
            service_selector = (service.get("spec") or {}).get("selector")
            if service_selector is None:
                continue  # a Service without a selector selects nothing
            if all(pod_labels.get(key) == value for key, value in service_selector.items()):
                label_set.update(service_selector)
        requirements = [Requirement(key, EQUALS, (value,)) for key, value in label_set.items()]
        owner = _controller_of(pod)
        if owner is not None and owner.get("apiVersion") == "apps/v1":
            store = {"ReplicaSet": "replicasets", "StatefulSet": "statefulsets"}.get(
                owner.get("kind", ""))
            controller = (self._stores[store].get_by_name(namespace, owner.get("name", ""))
                          if store else None)
            if controller is not None:
                try:
                    other = label_selector_from_dict((controller.get("spec") or {}).get("selector"))
                except SelectorError:
                    other = LabelSelector.match_nothing()
                if not other.nothing:
                    requirements.extend(other.requirements)
        return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))

    # --- PreFilter / Filter -----------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        """PreFilter: count matching pods per domain, for each DoNotSchedule constraint."""
        try:
            constraints = self.get_constraints(pod.pod, DO_NOT_SCHEDULE)
        except SelectorError as err:
            return None, Status.error("get constraints from pod: obtaining pod's hard "
                                      f"topology spread constraints: {err}")
        if not constraints:
            return None, Status.skip()

        counts: list[dict[str, int]] = [{} for _ in constraints]
        admits = _affinity_checker(pod.pod, constraints)
        # Every node's domain counts when the pod admits every node and taints are ignored.
        every_node_counts = admits is _admit_all and all(
            c.node_taints_policy != HONOR for c in constraints)
        every_node_labelled = False
        if every_node_counts and len(constraints) == 1:
            # The common case, in one loop: one constraint, every node's domain counts.
            selector = constraints[0].selector
            key = constraints[0].topology_key
            counts[0] = self.counts.sums_by_label(
                (pod.namespace, selector), _count_matching(selector, pod.namespace), nodes,
                key, self.handle.snapshot() if self.handle is not None else None)
            every_node_labelled = self.counts.labelled_nodes(
                (pod.namespace, selector), key) == len(nodes)
            keyed = []  # nothing left for the general loop below
        else:
            keyed = [(constraint, by_value,
                      self._matching_pods(constraint.selector, pod.namespace, nodes))
                     for constraint, by_value in zip(constraints, counts, strict=True)]
        for index, node_info in enumerate(nodes if keyed else ()):
            node = node_info.node
            node_labels = node_info.labels
            if not node_labels_match_spread_constraints(node_labels, constraints):
                continue
            affinity_match = every_node_counts or admits(node)
            for constraint, by_value, matching in keyed:
                if not every_node_counts and not constraint.matches_node_inclusion_policies(
                        pod.pod, node, affinity_match):
                    continue
                value = node_labels[constraint.topology_key]
                by_value[value] = by_value.get(value, 0) + matching[index]

        critical_paths = []
        for by_value in counts:
            paths = CriticalPaths()
            for value, num in by_value.items():
                paths.update(value, num)
            critical_paths.append(paths)
        pod_labels = _labels(pod.pod)
        self_match_num = [1 if c.selector.matches(pod_labels) else 0 for c in constraints]
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(constraints, critical_paths, counts,
                                                         self_match_num, every_node_labelled))
        return None, SUCCESS

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo,
                node_info: NodeInfo) -> Status:
        """AddPod: count `to_add` as running on the node (preemption's nominated pods)."""
        return self._update_with_pod(state, to_add, pod, node_info, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo,
                   node_info: NodeInfo) -> Status:
        """RemovePod: stop counting `to_remove` (a preemption victim)."""
        return self._update_with_pod(state, to_remove, pod, node_info, -1)

    def _update_with_pod(self, state: CycleState, updated: PodInfo, preemptor: PodInfo,
                         node_info: NodeInfo, delta: int) -> Status:
        pre_filter_state: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if pre_filter_state is None:
            return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        node_labels = node_info.labels
        if updated.namespace != preemptor.namespace or not node_labels_match_spread_constraints(
                node_labels, pre_filter_state.constraints):
            return SUCCESS
        affinity_match = _affinity_checker(preemptor.pod, pre_filter_state.constraints)(
            node_info.node)
        updated_labels = _labels(updated.pod)
        for index, constraint in enumerate(pre_filter_state.constraints):
            if not constraint.selector.matches(updated_labels):
                continue
            if not constraint.matches_node_inclusion_policies(preemptor.pod, node_info.node,
                                                              affinity_match):
                continue
            value = node_labels[constraint.topology_key]
            by_value = pre_filter_state.tp_value_to_match_num[index]
            by_value[value] = by_value.get(value, 0) + delta
            pre_filter_state.critical_paths[index].update(value, by_value[value])
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        """Filter: matching pods in the node's domain + the pod itself - the global minimum
        must not exceed maxSkew, for every DoNotSchedule constraint."""
        pre_filter_state: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if pre_filter_state is None:
            return Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        node_labels = node_info.labels
        for index, constraint in enumerate(pre_filter_state.constraints):
            value = node_labels.get(constraint.topology_key)
            if value is None:
                return Status.unschedulable(ERR_REASON_NODE_LABEL_NOT_MATCH, unresolvable=True)
            match_num = pre_filter_state.tp_value_to_match_num[index].get(value, 0)
            skew = (match_num + pre_filter_state.self_match_num[index]
                    - pre_filter_state.min_match_num(index))
            if skew > constraint.max_skew:
                return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return SUCCESS

    def filter_nodes_split(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                           ) -> tuple[list[NodeInfo], Mapping[str, Status]]:
        """filter_nodes and the nodes that fit. When the nodes are turned down by their
        domain alone (filter_nodes' first case) and are consecutive nodes of the cache's
        snapshot, as the scheduler hands them out in turn, their domains and names are
        read from the topology key's NodeLabelColumn at C speed: no NodeInfo is looked
        into, though 9 of every 10 are turned down when one domain of ten fits, and
        those nodes come back as one run of names with one Status (NodeToStatus)."""
        pre_filter_state: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        by_domain = domains_over_limit(pre_filter_state) if nodes else None
        run = self._run_of(by_domain[0], nodes) if by_domain and by_domain[1] else None
        if run is None:  # (also when no domain is over the limit, or there are none)
            return super().filter_nodes_split(state, pod, nodes)
        over = by_domain[1]
        column, first, count = run
        over_limit = list(map(over.__contains__, column.read(column.values, first, count)))
        too_skewed = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        # the nodes turned down, one run sharing one status: no dict entry per node
        return (list(compress(nodes, map(not_, over_limit))),
                NodeToStatus.of_run(
                    list(compress(column.read(column.names, first, count), over_limit)),
                    too_skewed))

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                     ) -> dict[str, Status]:
        """Filter for many nodes: the largest count each constraint allows in a domain is
        worked out once (maxSkew + minimum - the pod itself)."""
        pre_filter_state: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if pre_filter_state is None:
            return super().filter_nodes(state, pod, nodes)
        too_skewed = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        by_domain = domains_over_limit(pre_filter_state)
        if by_domain is not None:
            # The nodes turned down are those of the domains over the limit: their names
            # are picked in one pass and the dict made at once (when one domain of ten
            # fits, that is 9 of every 10 nodes).
            key, over = by_domain
            if not over:
                return {}
            return dict.fromkeys([info.name for info in nodes if info.labels.get(key) in over],
                                 too_skewed)
        limits = [(constraint.topology_key, by_value,
                   constraint.max_skew + pre_filter_state.min_match_num(index)
                   - pre_filter_state.self_match_num[index])
                  for index, (constraint, by_value) in enumerate(zip(
                      pre_filter_state.constraints, pre_filter_state.tp_value_to_match_num,
                      strict=True))]
        # Every node turned down for one reason shares one status (nothing changes them).
        label_missing = Status.unschedulable(ERR_REASON_NODE_LABEL_NOT_MATCH, unresolvable=True)
        rejected = {}
        if len(limits) == 1:
            # One constraint: a node's verdict is its domain's, worked out once per domain.
            key, by_value, most = limits[0]
            verdicts: dict[str | None, Status | None] = {
                value: too_skewed if count > most else None for value, count in by_value.items()}
            verdicts[None] = label_missing  # (a node without the label has no value)
            elsewhere = too_skewed if 0 > most else None  # a domain with no count: 0 pods
            verdict_of = verdicts.get
            for info in nodes:
                verdict = verdict_of(info.labels.get(key), elsewhere)
                if verdict is not None:
                    rejected[info.name] = verdict
            return rejected
        for info in nodes:
            node_labels = info.labels
            for key, by_value, most in limits:
                value = node_labels.get(key)
                if value is None:
                    rejected[info.name] = label_missing
                    break
                if by_value.get(value, 0) > most:
                    rejected[info.name] = too_skewed
                    break
        return rejected

    def _run_of(self, key: str, nodes: list[NodeInfo]
                ) -> tuple[NodeLabelColumn, int, int] | None:
        """When `nodes` are consecutive nodes of the cache's snapshot (as the scheduler
        hands them out in turn, unless a plugin before turned some down): the topology
        key's column of that snapshot, and where in it the nodes are."""
        snapshot = self.handle.snapshot() if self.handle is not None else None
        if snapshot is None or snapshot.changes is None:
            return None
        column = self.columns.pop(key, None) or NodeLabelColumn(key)
        self.columns[key] = column  # most recently used last
        while len(self.columns) > MAX_COLUMNS:
            del self.columns[next(iter(self.columns))]
        column.bring_up_to_date(snapshot)
        run = column.run_of(nodes, snapshot)
        return None if run is None else (column, *run)

    # --- PreScore / Score -------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        """PreScore: count matching pods per domain for each ScheduleAnyway constraint,
        over all nodes, for the domains of the filtered nodes."""
        all_nodes = self._snapshot().node_info_list
        if not all_nodes:
            return Status.skip()
        try:
            constraints = self.get_constraints(pod.pod, SCHEDULE_ANYWAY)
        except SelectorError as err:
            return Status.error("calculating preScoreState: obtaining pod's soft topology "
                                f"spread constraints: {err}")
        if not constraints:
            return Status.skip()
        # Only the system defaults let nodes without a zone label still spread by hostname.
        require_all_topologies = bool(
            (pod.pod.get("spec") or {}).get("topologySpreadConstraints")
        ) or not self.system_defaulted

        ignored_nodes: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        if not require_all_topologies:
            # No node is ignored: each constraint's domains are its key's values on the
            # nodes, "" for a node without it (one pass per constraint, at C speed).
            for index, constraint in enumerate(constraints):
                if constraint.topology_key != LABEL_HOSTNAME:  # per node: counted in Score
                    key = constraint.topology_key
                    counts[index] = dict.fromkeys(
                        [info.labels.get(key, "") for info in nodes], 0)
        for node_info in nodes if require_all_topologies else ():
            node_labels = node_info.labels
            if not node_labels_match_spread_constraints(node_labels, constraints):
                ignored_nodes.add(node_info.name)
                continue
            for index, constraint in enumerate(constraints):
                if constraint.topology_key != LABEL_HOSTNAME:  # per node: counted in Score
                    counts[index].setdefault(node_labels.get(constraint.topology_key, ""), 0)
        weights = []
        for index, constraint in enumerate(constraints):
            size = len(counts[index])
            if constraint.topology_key == LABEL_HOSTNAME:
                size = len(nodes) - len(ignored_nodes)
            weights.append(topology_normalizing_weight(size))

        counters = [self._counter(c.selector, pod.namespace) for c in constraints]
        admits = _affinity_checker(pod.pod, constraints)
        every_node_counts = admits is _admit_all and all(
            c.node_taints_policy != HONOR for c in constraints)
        if every_node_counts and (len(constraints) == 1 or not require_all_topologies):
            # The common case (the system defaults' among them): every node's domain counts,
            # so each constraint's sums per domain are the cache's sums over every node,
            # brought up to date from the nodes changed since the last pod (sums_by_label).
            # A node without the key counts in the domain "" unless all keys are required.
            snapshot = self._snapshot()
            for constraint, by_value in zip(constraints, counts, strict=True):
                if not by_value:  # hostname (counted in Score), or no candidate domain
                    continue
                sums = self.counts.sums_by_label(
                    (pod.namespace, constraint.selector),
                    _count_matching(constraint.selector, pod.namespace), all_nodes,
                    constraint.topology_key, snapshot,
                    missing=None if require_all_topologies else "")
                for value in by_value:
                    by_value[value] = sums.get(value, 0)
            all_nodes = []  # nothing left for the general loop below
        for node_info in all_nodes:
            node = node_info.node
            node_labels = node_info.labels
            if require_all_topologies and not node_labels_match_spread_constraints(
                    node_labels, constraints):
                continue
            affinity_match = admits(node)
            for index, constraint in enumerate(constraints):
                if not constraint.matches_node_inclusion_policies(pod.pod, node, affinity_match):
                    continue
                value = node_labels.get(constraint.topology_key, "")
                if value not in counts[index]:  # no candidate node in this domain
                    continue
                counts[index][value] += counters[index](node_info)

        state.write(PRE_SCORE_STATE_KEY, PreScoreState(constraints, ignored_nodes, counts,
                                                       weights, counters))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo
              ) -> tuple[int, Status]:
        """Score: the weighted matching-pod count of the node's domains (lower is better;
        NormalizeScore reverses it)."""
        pre_score_state: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if pre_score_state is None:
            return 0, Status.error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: '
                                   "not found")
        if node_info.name in pre_score_state.ignored_nodes:
            return 0, SUCCESS
        node_labels = node_info.labels
        total = 0.0
        for index, constraint in enumerate(pre_score_state.constraints):
            value = node_labels.get(constraint.topology_key)
            if value is None:
                continue
            if constraint.topology_key == LABEL_HOSTNAME:
                count = pre_score_state.counters[index](node_info)
            else:
                count = pre_score_state.topology_value_to_pod_counts[index].get(value, 0)
            total += score_for_count(count, constraint.max_skew,
                                     pre_score_state.topology_normalizing_weight[index])
        return math.floor(total + 0.5), SUCCESS  # Go's math.Round (the total is >= 0)

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                    ) -> tuple[list[int], Status]:
        """Score for many nodes, a constraint at a time: the hostname constraints' per-node
        counts in one pass over the nodes (for_nodes), the others' from the domain sums."""
        pre_score_state: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if pre_score_state is None:
            return super().score_nodes(state, pod, nodes)
        totals = [0.0] * len(nodes)
        for constraint, by_value, weight in zip(
                pre_score_state.constraints, pre_score_state.topology_value_to_pod_counts,
                pre_score_state.topology_normalizing_weight, strict=True):
            key, soften = constraint.topology_key, constraint.max_skew - 1
            if key == LABEL_HOSTNAME:
                counts = self._matching_pods(constraint.selector, pod.namespace, nodes)
            else:
                counts = [by_value.get(value, 0) if (value := info.labels.get(key)) is not None
                          else 0 for info in nodes]
            for index, info in enumerate(nodes):
                if key in info.labels:  # (score_for_count, inlined)
                    totals[index] += counts[index] * weight + soften
        ignored = pre_score_state.ignored_nodes
        return [0 if ignored and info.name in ignored else math.floor(total + 0.5)
                for info, total in zip(nodes, totals, strict=True)], SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: dict[str, int]
                        ) -> Status | None:
        """NormalizeScore: fewest matching pods -> 100; ignored nodes -> 0."""
        pre_score_state: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if pre_score_state is None:
            return Status.error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: '
                                "not found")
        ignored = pre_score_state.ignored_nodes
        counted = [value for name, value in scores.items() if name not in ignored]
        lowest = min(counted, default=0)
        highest = max(counted, default=0)
        for name, value in scores.items():
            if name in ignored:
                scores[name] = 0
            elif highest == 0:
                scores[name] = MAX_NODE_SCORE
            else:
                scores[name] = MAX_NODE_SCORE * (highest + lowest - value) // highest
        return None


def topology_normalizing_weight(size: int) -> float:
    """log(size + 2): counts in a topology with many domains weigh more, so a few pods in
    a small topology are not watered down by a big one."""
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    """count * weight, plus maxSkew - 1 to soften differences a larger maxSkew tolerates."""
    return count * weight + (max_skew - 1)


def _controller_of(pod: Obj) -> Obj | None:
    """metav1.GetControllerOf: the owner reference with `controller: true`."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def validate_args(defaulting_type: str, default_constraints: list[Any]) -> None:
    """ValidatePodTopologySpreadArgs: defaultingType System|List (System only without
    defaultConstraints); each default constraint well formed, without a selector, and
    no two with the same topologyKey and whenUnsatisfiable."""
    errors: list[FieldError] = []
    if defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errors.append(not_supported("defaultingType", defaulting_type,
                                    [SYSTEM_DEFAULTING, LIST_DEFAULTING]))
    elif defaulting_type == SYSTEM_DEFAULTING and default_constraints:
        errors.append(invalid("defaultingType", defaulting_type,
                              "when .defaultConstraints are not empty"))
    seen: set[tuple[str, str]] = set()
    for index, constraint in enumerate(default_constraints):
        path = f"defaultConstraints[{index}]"
        max_skew = constraint.get("maxSkew", 0)
        if max_skew <= 0:
            errors.append(invalid(f"{path}.maxSkew", max_skew, "not in valid range (0, inf)"))
        topology_key = constraint.get("topologyKey", "")
        if not topology_key:
            errors.append(required(f"{path}.topologyKey", "can not be empty"))
        else:
            errors.extend(invalid(f"{path}.topologyKey", topology_key, message)
                          for message in validate_qualified_name(topology_key))
        action = constraint.get("whenUnsatisfiable", "")
        if not action:
            errors.append(required(f"{path}.whenUnsatisfiable", "can not be empty"))
        elif action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            errors.append(not_supported(f"{path}.whenUnsatisfiable", action,
                                        [DO_NOT_SCHEDULE, SCHEDULE_ANYWAY]))
        if constraint.get("labelSelector") is not None:
            errors.append(forbidden(f"{path}.labelSelector",
                                    "constraint must not define a selector, as they deduced "
                                    "for each pod"))
        if (topology_key, action) in seen:
            errors.append(duplicate(path, f"{{{topology_key}, {action}}}"))
        seen.add((topology_key, action))
    if errors:
        messages = list(dict.fromkeys(str(error) for error in errors))
        raise ValueError(messages[0] if len(messages) == 1 else
                         "[" + ", ".join(messages) + "]")
