"""NodeName keeps a pod that names its node off every other node."""

from __future__ import annotations

import pytest

from minikube_py.scheduler.framework.interface import ClusterEvent, Code, CycleState
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.node_name import NodeName


def pod(node_name: str = "") -> PodInfo:
    spec = {"nodeName": node_name} if node_name else {}
    return PodInfo.of({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})


def node(name: str) -> NodeInfo:
    return NodeInfo.of({"metadata": {"name": name}})


# Upstream TestNodeName (nodename/node_name_test.go).
@pytest.mark.parametrize(("pod_info", "node_name", "fits"), [
    (pod(), "foo", True),  # no host specified
    (pod("foo"), "foo", True),  # host matches
    (pod("bar"), "foo", False),  # host doesn't match
])
def test_filter_admits_only_the_named_node(pod_info: PodInfo, node_name: str, fits: bool) -> None:
    status = NodeName().filter(CycleState(), pod_info, node(node_name))
    if fits:
        assert status.is_success()
    else:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ["node(s) didn't match the requested node name"]


def test_only_a_new_node_can_carry_the_wanted_name() -> None:
    assert NodeName().events_to_register() == [ClusterEvent("Node", "Add")]
