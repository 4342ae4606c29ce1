"""TaintToleration (upstream plugins/tainttoleration): taints repel pods that do not
tolerate them; PreferNoSchedule taints only make a node less attractive."""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.scheduling.taints import find_untolerated_taint, tolerations_tolerate_taint
from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    Status,
    default_normalize_score,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo

# The reason names no taint: one message for every node keeps FailedScheduling events short.
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

_DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")
_PRE_SCORE_STATE_KEY = "PreScoreTaintToleration"


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin):
    """Filter: drop nodes with a NoSchedule or NoExecute taint the pod does not tolerate.
    Score: fewer untolerated PreferNoSchedule taints score higher."""

    name = "TaintToleration"
    node_local = True  # answers depend on the pod's spec and the node alone

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        """Preemption removes pods, not taints: the rejection is unresolvable."""
        taints = (node_info.node.get("spec") or {}).get("taints")
        if not taints:
            return SUCCESS
        tolerations = (pod.pod.get("spec") or {}).get("tolerations")
        if find_untolerated_taint(taints, tolerations, _DO_NOT_SCHEDULE_EFFECTS) is None:
            return SUCCESS
        return Status.unschedulable(ERR_REASON_UNTOLERATED, unresolvable=True)

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                     ) -> dict[str, Status]:
        """Filter for many nodes: only the tainted ones need a look at the tolerations."""
        tolerations = (pod.pod.get("spec") or {}).get("tolerations")
        rejected = {}
        for info in [info for info in nodes if info.taints]:
            if find_untolerated_taint(info.taints, tolerations,
                                      _DO_NOT_SCHEDULE_EFFECTS) is not None:
                rejected[info.name] = Status.unschedulable(ERR_REASON_UNTOLERATED,
                                                           unresolvable=True)
        return rejected

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        """Keep only the tolerations that can tolerate PreferNoSchedule (that effect, or
        any effect when the toleration names none)."""
        tolerations = (pod.pod.get("spec") or {}).get("tolerations") or []
        state.write(_PRE_SCORE_STATE_KEY, [t for t in tolerations
                                           if t.get("effect") in (None, "", "PreferNoSchedule")])
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        """The raw score: how many PreferNoSchedule taints the pod does not tolerate."""
        tolerations: list[Obj] = state.read(_PRE_SCORE_STATE_KEY)
        count = sum(1 for taint in (node_info.node.get("spec") or {}).get("taints") or []
                    if taint.get("effect") == "PreferNoSchedule"
                    and not tolerations_tolerate_taint(tolerations, taint))
        return count, SUCCESS

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                    ) -> tuple[list[int], Status]:
        """Score for many nodes: an untainted node counts 0 without a look."""
        return [self.score(state, pod, info)[0] if info.taints else 0 for info in nodes], SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: dict[str, int]
                        ) -> Status | None:
        """Reversed: the node with the most untolerated taints gets 0, none gets 100."""
        default_normalize_score(scores, reverse=True)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        """A new node, a node whose taints changed, or the pod gaining tolerations."""
        return [ClusterEvent("Node", "Add"), ClusterEvent("Node", "UpdateNodeTaint"),
                ClusterEvent("Pod", "UpdatePodToleration")]
