"""What `up --layout kubeadm` counts as settled: a pod whose containers all run, a node
whose kubelet says Ready; both only when said after the kubelets were started, so that
the statuses a `down` left in etcd do not count."""

from __future__ import annotations

from datetime import UTC, datetime

from minikube_py.api import Obj
from minikube_py.cluster.kubeadm.init import _node_ready, _running

SINCE = datetime(2026, 11, 29, 1, 0, 0, tzinfo=UTC)


def pod(*started: str | None, phase: str = "Running") -> Obj:
    return {"status": {"phase": phase, "containerStatuses": [
        {"state": {"running": {"startedAt": at}} if at else {"waiting": {}}}
        for at in started]}}


def node(ready: str, heartbeat: str) -> Obj:
    return {"status": {"conditions": [
        {"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat}]}}


def test_a_pod_runs_when_every_container_runs() -> None:
    assert _running(pod("2026-11-29T01:00:05Z", "2026-11-29T01:00:06Z"))
    assert not _running(pod("2026-11-29T01:00:05Z", None))
    assert not _running(pod())
    assert not _running(pod("2026-11-29T01:00:05Z", phase="Pending"))


def test_a_container_started_before_the_kubelets_is_an_old_status() -> None:
    assert _running(pod("2026-11-29T01:00:00Z"), SINCE)
    assert not _running(pod("2026-11-29T00:59:59Z"), SINCE)
    assert _running(pod("2026-11-29T00:59:59Z"), None)


def test_a_node_is_ready_when_its_kubelet_said_so_since() -> None:
    assert _node_ready(node("True", "2026-11-29T01:00:03Z"), SINCE)
    assert not _node_ready(node("True", "2026-11-29T00:58:00Z"), SINCE)
    assert not _node_ready(node("False", "2026-11-29T01:00:03Z"), SINCE)
    assert _node_ready(node("True", "2026-11-29T00:58:00Z"), None)
