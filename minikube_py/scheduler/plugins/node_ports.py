"""NodePorts (upstream plugins/nodeports): two pods cannot bind the same host port."""

from __future__ import annotations

from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    ClusterEvent,
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    Status,
)
from minikube_py.scheduler.framework.types import HostPort, NodeInfo, PodInfo, host_ports

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

BIND_ALL_HOST_IP = "0.0.0.0"
_PRE_FILTER_STATE_KEY = "PreFilterNodePorts"


def port_conflicts(wanted: HostPort, in_use: set[HostPort]) -> bool:
    """HostPortInfo.CheckConflict: 0.0.0.0 clashes with the same protocol and port on any
    address; a specific address clashes with itself and with 0.0.0.0."""
    if wanted.ip == BIND_ALL_HOST_IP:
        return any(used.port == wanted.port and used.protocol == wanted.protocol
                   for used in in_use)
    return (wanted in in_use
            or HostPort(BIND_ALL_HOST_IP, wanted.protocol, wanted.port) in in_use)


class NodePorts(PreFilterPlugin, FilterPlugin):
    """PreFilter: collect the pod's host ports (skip pods without any).
    Filter: drop nodes where one of them is already taken."""

    name = "NodePorts"
    node_local = True  # answers depend on the pod's spec and the node alone

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        """The host ports of the containers and sidecars, once per pod."""
        wanted = host_ports(pod.pod)
        if not wanted:
            return None, Status.skip()
        state.write(_PRE_FILTER_STATE_KEY, wanted)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        """Evicting the pod holding the port frees it: the rejection is Unschedulable,
        so preemption may help."""
        wanted: list[HostPort] = state.read(_PRE_FILTER_STATE_KEY)
        if any(port_conflicts(port, node_info.used_ports) for port in wanted):
            return Status.unschedulable(ERR_REASON)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        """A pod that held a port goes away, or a new node arrives."""
        return [ClusterEvent("Pod", "Delete"), ClusterEvent("Node", "Add")]
