"""NodeUnschedulable keeps new pods off cordoned nodes unless they tolerate the cordon."""

from __future__ import annotations

import pytest

from minikube_py.api import Obj
from minikube_py.scheduler.framework.interface import ClusterEvent, Code, CycleState
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.node_unschedulable import NodeUnschedulable

UNSCHEDULABLE_KEY = "node.kubernetes.io/unschedulable"


def pod(tolerations: list[Obj] | None = None) -> PodInfo:
    spec = {"tolerations": tolerations} if tolerations is not None else {}
    return PodInfo.of({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})


def node(unschedulable: bool | None) -> NodeInfo:
    spec = {} if unschedulable is None else {"unschedulable": unschedulable}
    return NodeInfo.of({"metadata": {"name": "n"}, "spec": spec})


# Upstream TestNodeUnschedulable (nodeunschedulable/node_unschedulable_test.go).
@pytest.mark.parametrize(("pod_info", "node_info", "fits"), [
    (pod(), node(True), False),  # does not schedule pod to unschedulable node
    (pod(), node(False), True),  # schedules pod to schedulable node
    (pod(), node(None), True),  # unschedulable unset means schedulable
    (pod([{"key": UNSCHEDULABLE_KEY, "effect": "NoSchedule"}]), node(True), True),
    (pod([{"key": UNSCHEDULABLE_KEY, "operator": "Exists"}]), node(True), True),
    (pod([{"operator": "Exists"}]), node(True), True),  # tolerates everything
    (pod([{"key": UNSCHEDULABLE_KEY, "effect": "NoExecute"}]), node(True), False),
])
def test_cordoned_node_admits_only_pods_tolerating_the_unschedulable_taint(
        pod_info: PodInfo, node_info: NodeInfo, fits: bool) -> None:
    status = NodeUnschedulable().filter(CycleState(), pod_info, node_info)
    if fits:
        assert status.is_success()
    else:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ["node(s) were unschedulable"]


def test_pod_is_retried_when_a_node_is_uncordoned_or_the_pod_gains_the_toleration() -> None:
    assert NodeUnschedulable().events_to_register() == [
        ClusterEvent("Node", "Add"), ClusterEvent("Node", "UpdateNodeTaint"),
        ClusterEvent("Pod", "UpdatePodToleration")]
