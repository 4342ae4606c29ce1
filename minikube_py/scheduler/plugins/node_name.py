"""NodeName (upstream plugins/nodename): a pod that names its node runs there or nowhere."""

from __future__ import annotations

from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    Status,
)
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName(FilterPlugin):
    """Filter: when spec.nodeName is set, drop every node with another name."""

    name = "NodeName"
    node_local = True  # answers depend on the pod's spec and the node alone

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        """Fits: no nodeName, or this node's name. Preemption cannot change a name, so a
        mismatch is UnschedulableAndUnresolvable."""
        wanted = (pod.pod.get("spec") or {}).get("nodeName") or ""
        if not wanted or wanted == node_info.name:
            return SUCCESS
        return Status.unschedulable(ERR_REASON, unresolvable=True)

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                     ) -> dict[str, Status]:
        """Filter for many nodes: a pod without a nodeName fits them all."""
        if not (pod.pod.get("spec") or {}).get("nodeName"):
            return {}
        return super().filter_nodes(state, pod, nodes)

    def events_to_register(self) -> list[ClusterEvent]:
        """A new node may carry the wanted name; updates never change a node's name."""
        return [ClusterEvent("Node", "Add")]
