"""NodePorts: a pod's host ports must be free on the node, with 0.0.0.0 clashing with
every address."""

from __future__ import annotations

import pytest

from minikube_py.api import Obj
from minikube_py.scheduler.framework.interface import ClusterEvent, Code, CycleState
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.plugins.node_ports import NodePorts


def port(spec: str) -> Obj:
    """"UDP/127.0.0.1/8080" -> a container port with that protocol, hostIP and hostPort."""
    protocol, ip, number = spec.split("/")
    return {"containerPort": int(number), "hostPort": int(number), "protocol": protocol,
            "hostIP": ip}


def pod(*specs: str, uid: str = "new") -> Obj:
    return {"metadata": {"name": uid, "namespace": "default", "uid": uid},
            "spec": {"containers": [{"name": "c", "image": "i",
                                     "ports": [port(s) for s in specs]}]}}


def run(new_pod: Obj, *existing: Obj) -> tuple[Code, list[str]]:
    node_info = NodeInfo.of({"metadata": {"name": "n"}}, existing)
    plugin, state, pod_info = NodePorts(), CycleState(), PodInfo.of(new_pod)
    _, status = plugin.pre_filter(state, pod_info, [node_info])
    if status.is_skip():
        return Code.SKIP, []
    status = plugin.filter(state, pod_info, node_info)
    return status.code, status.reasons


FITS = (Code.SUCCESS, [])
CONFLICT = (Code.UNSCHEDULABLE, ["node(s) didn't have free ports for the requested pod ports"])


# Upstream TestNodePorts (nodeports/node_ports_test.go).
@pytest.mark.parametrize(("new_pod", "existing", "expected"), [
    (pod("UDP/127.0.0.1/8080"), pod("UDP/127.0.0.1/9090", uid="e"), FITS),  # other port
    (pod("UDP/127.0.0.1/8080"), pod("UDP/127.0.0.1/8080", uid="e"), CONFLICT),  # same udp port
    (pod("TCP/127.0.0.1/8080"), pod("TCP/127.0.0.1/8080", uid="e"), CONFLICT),  # same tcp port
    (pod("TCP/127.0.0.1/8080"), pod("TCP/127.0.0.2/8080", uid="e"), FITS),  # other host ip
    (pod("UDP/127.0.0.1/8080"), pod("TCP/127.0.0.1/8080", uid="e"), FITS),  # other protocol
    (pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"), pod("UDP/127.0.0.1/8080", uid="e"),
     CONFLICT),  # second udp port conflict
    (pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
     pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081", uid="e"), CONFLICT),  # first tcp port
    (pod("TCP/0.0.0.0/8001"), pod("TCP/127.0.0.1/8001", uid="e"),
     CONFLICT),  # first tcp port conflict due to 0.0.0.0 hostIP
    (pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"), pod("TCP/127.0.0.1/8001", uid="e"),
     CONFLICT),  # TCP hostPort conflict due to 0.0.0.0 hostIP
    (pod("TCP/127.0.0.1/8001"), pod("TCP/0.0.0.0/8001", uid="e"),
     CONFLICT),  # second tcp port conflict to 0.0.0.0 hostIP
    (pod("UDP/127.0.0.1/8001"), pod("TCP/0.0.0.0/8001", uid="e"), FITS),  # other protocol
    (pod("UDP/127.0.0.1/8001"), pod("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001", uid="e"),
     CONFLICT),  # UDP hostPort conflict due to 0.0.0.0 hostIP
])
def test_filter_rejects_nodes_where_a_host_port_is_taken(
        new_pod: Obj, existing: Obj, expected: tuple[Code, list[str]]) -> None:
    assert run(new_pod, existing) == expected


def test_pods_without_host_ports_skip_the_filter() -> None:
    plain = {"metadata": {"name": "p", "namespace": "default"},
             "spec": {"containers": [{"name": "c", "image": "i",
                                      "ports": [{"containerPort": 80}]}]}}
    assert run(plain, pod("TCP/0.0.0.0/80", uid="e"))[0] == Code.SKIP


def test_unset_host_ip_binds_every_address_and_unset_protocol_is_tcp() -> None:
    bare = {"metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i",
                                     "ports": [{"containerPort": 80, "hostPort": 80}]}]}}
    assert run(bare, pod("TCP/10.0.0.1/80", uid="e")) == CONFLICT
    assert run(bare, pod("UDP/10.0.0.1/80", uid="e")) == FITS


def test_sidecar_host_ports_count_and_init_container_ports_do_not() -> None:
    def with_init(restart_policy: str | None) -> Obj:
        init: Obj = {"name": "s", "image": "i", "ports": [port("TCP/0.0.0.0/9000")]}
        if restart_policy:
            init["restartPolicy"] = restart_policy
        existing = pod(uid="e")
        existing["spec"]["initContainers"] = [init]
        return existing
    assert run(pod("TCP/0.0.0.0/9000"), with_init("Always")) == CONFLICT
    assert run(pod("TCP/0.0.0.0/9000"), with_init(None)) == FITS


def test_pod_is_retried_when_a_pod_leaves_or_a_node_arrives() -> None:
    assert NodePorts().events_to_register() == [ClusterEvent("Pod", "Delete"),
                                                ClusterEvent("Node", "Add")]
