"""NodeUnschedulable (upstream plugins/nodeunschedulable): cordoned nodes take no new pods."""

from __future__ import annotations

from minikube_py.api.scheduling.taints import tolerations_tolerate_taint
from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    Status,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

# `kubectl cordon` sets spec.unschedulable; a pod that tolerates this taint ignores it.
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class NodeUnschedulable(FilterPlugin):
    """Filter: drop nodes with spec.unschedulable, unless the pod tolerates
    node.kubernetes.io/unschedulable:NoSchedule."""

    name = "NodeUnschedulable"
    node_local = True  # answers depend on the pod's spec and the node alone

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        """Evicting pods never uncordons a node: the rejection is unresolvable."""
        if not (node_info.node.get("spec") or {}).get("unschedulable"):
            return SUCCESS
        tolerations = (pod.pod.get("spec") or {}).get("tolerations")
        if tolerations_tolerate_taint(tolerations, UNSCHEDULABLE_TAINT):
            return SUCCESS
        return Status.unschedulable(ERR_REASON_UNSCHEDULABLE, unresolvable=True)

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                     ) -> dict[str, Status]:
        """Filter for many nodes: only cordoned ones need a look at the tolerations."""
        rejected = {}
        for info in [info for info in nodes if info.unschedulable]:
            status = self.filter(state, pod, info)
            if status.code:  # anything but Code.SUCCESS (0)
                rejected[info.name] = status
        return rejected

    def events_to_register(self) -> list[ClusterEvent]:
        """A new or uncordoned node, or the pod gaining the toleration."""
        return [ClusterEvent("Node", "Add"), ClusterEvent("Node", "UpdateNodeTaint"),
                ClusterEvent("Pod", "UpdatePodToleration")]
