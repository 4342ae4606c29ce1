"""TaintToleration: untolerated NoSchedule/NoExecute taints reject a node; untolerated
PreferNoSchedule taints lower its score."""

from __future__ import annotations

import pytest

from minikube_py.api import Obj
from minikube_py.scheduler.framework.interface import ClusterEvent, Code, CycleState
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.taint_toleration import TaintToleration


def pod(*tolerations: Obj) -> PodInfo:
    return PodInfo.of({"metadata": {"name": "pod1", "namespace": "default"},
                       "spec": {"tolerations": list(tolerations)}})


def node(name: str, *taints: Obj) -> NodeInfo:
    return NodeInfo.of({"metadata": {"name": name}, "spec": {"taints": list(taints)}})


def taint(key: str, value: str, effect: str) -> Obj:
    return {"key": key, "value": value, "effect": effect}


def toleration(key: str, value: str = "", effect: str = "", operator: str = "Equal") -> Obj:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


UNTOLERATED = "node(s) had untolerated taint(s)"


# Upstream TestTaintTolerationFilter (tainttoleration/taint_toleration_test.go).
@pytest.mark.parametrize(("pod_info", "node_info", "fits"), [
    # a pod having no tolerations can't be scheduled onto a node with nonempty taints
    (pod(), node("nodeA", taint("dedicated", "user1", "NoSchedule")), False),
    # a pod tolerating dedicated=user1:NoSchedule goes onto that dedicated node
    (pod(toleration("dedicated", "user1", "NoSchedule")),
     node("nodeA", taint("dedicated", "user1", "NoSchedule")), True),
    # a toleration for user2 does not tolerate the user1 taint
    (pod(toleration("dedicated", "user2", "NoSchedule")),
     node("nodeA", taint("dedicated", "user1", "NoSchedule")), False),
    # operator Exists tolerates any value
    (pod(toleration("foo", effect="NoSchedule", operator="Exists")),
     node("nodeA", taint("foo", "bar", "NoSchedule")), True),
    # multiple tolerations cover multiple taints
    (pod(toleration("dedicated", "user2", "NoSchedule"),
         toleration("foo", effect="NoSchedule", operator="Exists")),
     node("nodeA", taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")),
     True),
    # keys and values match but the (non-empty) effect does not
    (pod(toleration("foo", "bar", "PreferNoSchedule")),
     node("nodeA", taint("foo", "bar", "NoSchedule")), False),
    # an empty toleration effect matches every effect
    (pod(toleration("foo", "bar")), node("nodeA", taint("foo", "bar", "NoSchedule")), True),
    # PreferNoSchedule taints never reject
    (pod(toleration("dedicated", "user2", "NoSchedule")),
     node("nodeA", taint("dedicated", "user1", "PreferNoSchedule")), True),
    (pod(), node("nodeA", taint("dedicated", "user1", "PreferNoSchedule")), True),
    # NoExecute rejects like NoSchedule
    (pod(), node("nodeA", taint("node.kubernetes.io/not-ready", "", "NoExecute")), False),
])
def test_filter_rejects_untolerated_do_not_schedule_taints(
        pod_info: PodInfo, node_info: NodeInfo, fits: bool) -> None:
    status = TaintToleration().filter(CycleState(), pod_info, node_info)
    if fits:
        assert status.is_success()
    else:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == [UNTOLERATED]


def scores(pod_info: PodInfo, nodes: list[NodeInfo]) -> dict[str, int]:
    plugin, state = TaintToleration(), CycleState()
    assert plugin.pre_score(state, pod_info, nodes).is_success()
    result = {}
    for info in nodes:
        score, status = plugin.score(state, pod_info, info)
        assert status.is_success()
        result[info.name] = score
    assert plugin.normalize_score(state, pod_info, result).is_success()
    return result


ARM = taint("cpu-type", "arm64", "PreferNoSchedule")
SSD = taint("disk-type", "ssd", "PreferNoSchedule")


# Upstream TestTaintTolerationScore.
@pytest.mark.parametrize(("pod_info", "nodes", "expected"), [
    # nodes with taints the pod tolerates score higher than those with intolerable ones
    (pod(toleration("foo", "bar", "PreferNoSchedule")),
     [node("nodeA", taint("foo", "bar", "PreferNoSchedule")),
      node("nodeB", taint("foo", "blah", "PreferNoSchedule"))],
     {"nodeA": 100, "nodeB": 0}),
    # how many tolerated taints a node has does not matter
    (pod(toleration("cpu-type", "arm64", "PreferNoSchedule"),
         toleration("disk-type", "ssd", "PreferNoSchedule")),
     [node("nodeA"), node("nodeB", ARM), node("nodeC", ARM, SSD)],
     {"nodeA": 100, "nodeB": 100, "nodeC": 100}),
    # the more intolerable taints a node has, the lower its score
    (pod(toleration("foo", "bar", "PreferNoSchedule")),
     [node("nodeA"), node("nodeB", ARM), node("nodeC", ARM, SSD)],
     {"nodeA": 100, "nodeB": 50, "nodeC": 0}),
    # only PreferNoSchedule taints and the tolerations that can tolerate them count
    (pod(toleration("cpu-type", "arm64", "NoSchedule"),
         toleration("disk-type", "ssd", "NoSchedule")),
     [node("nodeA"), node("nodeB", taint("cpu-type", "arm64", "NoSchedule")),
      node("nodeC", ARM, SSD)],
     {"nodeA": 100, "nodeB": 100, "nodeC": 0}),
    # no tolerations: the node without taints wins
    (pod(), [node("nodeA"), node("nodeB", ARM)], {"nodeA": 100, "nodeB": 0}),
])
def test_score_prefers_nodes_with_fewer_untolerated_prefer_no_schedule_taints(
        pod_info: PodInfo, nodes: list[NodeInfo], expected: dict[str, int]) -> None:
    assert scores(pod_info, nodes) == expected


def test_pod_is_retried_when_taints_or_its_tolerations_change() -> None:
    assert TaintToleration().events_to_register() == [
        ClusterEvent("Node", "Add"), ClusterEvent("Node", "UpdateNodeTaint"),
        ClusterEvent("Pod", "UpdatePodToleration")]
