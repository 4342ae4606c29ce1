"""What the framework offers its plugins (upstream framework.Handle).

Most plugins need nothing but the NodeInfo they are given. A few need more: DefaultBinder
writes the Binding, DefaultPreemption reads PodDisruptionBudgets and re-runs the filters
on a node without its victims, InterPodAffinity looks up namespace labels. They reach
all of that through the handle, never through globals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from minikube_py.scheduler.framework.types import NodeInfo, PodInfo, Snapshot

if TYPE_CHECKING:
    from minikube_py.client.events import EventRecorder
    from minikube_py.client.informer import SharedInformerFactory
    from minikube_py.client.rest import Client
    from minikube_py.scheduler.framework.interface import CycleState, Status
    from minikube_py.scheduler.framework.runtime import WaitingPod



class PodNominator(Protocol):
    """Who knows the pods preemption nominated to each node (the scheduling queue)."""

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        ...


class Handle(Protocol):
    """The framework as plugins see it."""

    client: Client
    informers: SharedInformerFactory
    recorder: EventRecorder
    profile_name: str
    waiting_pods: dict[str, WaitingPod]  # pods held at Permit, by uid

    def snapshot(self) -> Snapshot:
        """This cycle's snapshot of every node."""
        ...

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node_info: NodeInfo
                           ) -> Status:
        """Run every Filter plugin of the profile on one node (first failure wins)."""
        ...

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: PodInfo,
                                               node_info: NodeInfo,
                                               nominated: list[PodInfo]) -> Status:
        """Filter as if the `nominated` pods of at least the pod's priority were there."""
        ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """The pods preemption nominated to this node."""
        ...

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo,
                                         to_add: PodInfo, node_info: NodeInfo) -> Status:
        ...

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo,
                                            to_remove: PodInfo, node_info: NodeInfo
                                            ) -> Status:
        ...
