"""What the cluster autoscaler simulates (pure: no I/O), with the scheduler's own filters.

Upstream's cluster-autoscaler carries a copy of the scheduler's framework and asks its
Filter plugins whether a pod fits a node, real or imagined (simulator/ and estimator/):

    fits(pod, node)            PreFilter + Filter of NodeUnschedulable, NodeName,
                               TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit
    filter_out_schedulable     pending pods that fit the nodes there are (or coming up),
                               placed first-fit: the scheduler will place them, no new node
    estimate (binpacking)      the rest, first-fit on template nodes added one by one: how
                               many nodes they need, and which pods no template node fits
    utilization                max(cpu, memory) requested / allocatable of a node
    movable                    a node's pods can go (controlled by a workload, not
                               safe-to-evict=false, no local storage) and fit elsewhere
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minikube_py.api import Obj
from minikube_py.scheduler.framework.interface import CycleState, FilterPlugin, PreFilterPlugin
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.node_affinity import NodeAffinity
from minikube_py.scheduler.plugins.node_name import NodeName
from minikube_py.scheduler.plugins.node_ports import NodePorts
from minikube_py.scheduler.plugins.node_resources_fit import NodeResourcesFit
from minikube_py.scheduler.plugins.node_unschedulable import NodeUnschedulable
from minikube_py.scheduler.plugins.taint_toleration import TaintToleration

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"


class Filters:
    """The scheduler's node-local Filter plugins, asked as the scheduler would."""

    def __init__(self) -> None:
        self.plugins: list[FilterPlugin] = [
            NodeUnschedulable(), NodeName(), TaintToleration(), NodeAffinity(), NodePorts(),
            NodeResourcesFit()]

    def prepare(self, pod: PodInfo) -> Prepared:
        """PreFilter once per pod: the state its Filters read, and the plugins to skip."""
        prepared = Prepared(pod, CycleState())
        for plugin in self.plugins:
            if isinstance(plugin, PreFilterPlugin):
                _, status = plugin.pre_filter(prepared.state, pod, [])
                if status.is_skip():
                    prepared.skip.add(plugin.name)
                elif not status.is_success():
                    prepared.reasons = list(status.reasons)
        return prepared

    def check(self, prepared: Prepared, node: NodeInfo) -> list[str]:
        """The reasons the pod does not fit the node (none: it fits)."""
        if prepared.reasons:
            return prepared.reasons
        for plugin in self.plugins:
            if plugin.name not in prepared.skip:
                status = plugin.filter(prepared.state, prepared.pod, node)
                if not status.is_success():
                    return list(status.reasons)
        return []

    def first_fit(self, pod: Obj, nodes: list[NodeInfo]) -> NodeInfo | None:
        """The first node the pod fits, with the pod added to it; None if none."""
        prepared = self.prepare(PodInfo.of(pod))
        target = next((node for node in nodes if not self.check(prepared, node)), None)
        if target is not None:
            target.add_pod(prepared.pod)
        return target


@dataclass
class Prepared:
    """One pod after PreFilter: its cycle state, skipped plugins, and PreFilter's no."""

    pod: PodInfo
    state: CycleState
    skip: set[str] = field(default_factory=set)
    reasons: list[str] = field(default_factory=list)


@dataclass
class Estimate:
    """What a scale-up needs: template nodes and the pods on them, and who fits none."""

    nodes: list[list[Obj]] = field(default_factory=list)
    no_fit: dict[str, list[str]] = field(default_factory=dict)  # pod key -> reasons


def pod_key(pod: Obj) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def filter_out_schedulable(filters: Filters, pending: list[Obj], nodes: list[NodeInfo]
                           ) -> list[Obj]:
    """FilterOutSchedulable: the pending pods no node there is can hold (those that fit
    are added to the node they fit, in order, so that two pods do not take one slot)."""
    return [pod for pod in pending if filters.first_fit(pod, nodes) is None]


def estimate(filters: Filters, pending: list[Obj], template: Obj) -> Estimate:
    """BinpackingNodeEstimator: first-fit on the new nodes so far, else one more template
    node if the pod fits an empty one, else the pod fits no new node."""
    found = Estimate()
    new_nodes: list[NodeInfo] = []
    for pod in pending:
        target = filters.first_fit(pod, new_nodes)
        if target is None:
            empty = NodeInfo.of(template)
            prepared = filters.prepare(PodInfo.of(pod))
            reasons = filters.check(prepared, empty)
            if reasons:
                found.no_fit[pod_key(pod)] = reasons
                continue
            empty.add_pod(prepared.pod)
            new_nodes.append(empty)
            found.nodes.append([pod])
        else:
            found.nodes[new_nodes.index(target)].append(pod)
    return found


def utilization(node: NodeInfo) -> float:
    """The node's utilization: the larger of its requested cpu and memory shares."""
    allocatable = node.allocatable
    cpu = node.requested.milli_cpu / allocatable.milli_cpu if allocatable.milli_cpu else 0.0
    memory = node.requested.memory / allocatable.memory if allocatable.memory else 0.0
    return max(cpu, memory)


def blocking_reason(pod: Obj) -> str:
    """Why the pod keeps its node from being removed ("": it may be moved): upstream's
    drainability rules, as far as they apply here."""
    metadata = pod.get("metadata") or {}
    annotation = (metadata.get("annotations") or {}).get(SAFE_TO_EVICT)
    if annotation == "false":
        return "NotSafeToEvictAnnotation"
    if annotation == "true":
        return ""
    owners = metadata.get("ownerReferences") or []
    if (metadata.get("annotations") or {}).get("kubernetes.io/config.mirror"):
        return ""  # a static pod stays with its node
    if not any(owner.get("controller") for owner in owners):
        return "NotReplicated"
    if any(owner.get("kind") == "DaemonSet" for owner in owners):
        return ""  # DaemonSet pods are not moved: they go with the node
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if "emptyDir" in volume or "hostPath" in volume:
            return "LocalStorageRequested"
    return ""


def moves(pod: Obj) -> bool:
    """Whether removing the node means finding the pod another one (not DaemonSet or
    mirror pods)."""
    metadata = pod.get("metadata") or {}
    if (metadata.get("annotations") or {}).get("kubernetes.io/config.mirror"):
        return False
    return not any(owner.get("kind") == "DaemonSet"
                   for owner in metadata.get("ownerReferences") or [])


def find_places(filters: Filters, pods: list[Obj], others: list[NodeInfo]) -> bool:
    """Whether every pod fits one of the other nodes (each placed as it is found a
    place, so that the pods of one node do not all count on the same free room)."""
    return all(filters.first_fit(unbound(pod), others) is not None for pod in pods)


def unbound(pod: Obj) -> Obj:
    """The pod as it would be recreated elsewhere: no node name (NodeName would keep it
    on its own node)."""
    return {**pod, "spec": {k: v for k, v in (pod.get("spec") or {}).items()
                            if k != "nodeName"}}
