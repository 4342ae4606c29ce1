"""The dashboard's hub (dashboard/hub.py): what the page is told of each object, and how
every tab hears each change from the one informer per resource. The informers are fed by
hand here, as their reflector would feed them; nothing is listed or watched."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.kubeconfig import ClientConfig
from minikube_py.client.rest import Client
from minikube_py.dashboard import hub
from minikube_py.dashboard.hub import ClusterHub


@pytest.fixture
async def cluster_hub() -> AsyncIterator[ClusterHub]:
    async with Client(ClientConfig(server="http://127.0.0.1:1")) as client:
        yield ClusterHub(SharedInformerFactory(client))


def pod(name: str, **status: object) -> dict:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "resourceVersion": "1"},
            "spec": {"nodeName": "node-1"}, "status": dict(status)}


def test_a_pod_is_told_with_its_node_phase_readiness_and_ip() -> None:
    assert hub.pod_view(pod("web", phase="Running", podIP="10.244.1.5", conditions=[
        {"type": "Ready", "status": "True"}])) == {
        "namespace": "default", "name": "web", "uid": "uid-web", "deleting": False,
        "nodeName": "node-1", "phase": "Running", "ready": True, "podIP": "10.244.1.5"}
    # a pod no kubelet has reported on: Pending, not ready
    assert hub.pod_view({"metadata": {"name": "new"}}) == {
        "namespace": "", "name": "new", "uid": "", "deleting": False, "nodeName": "",
        "phase": "Pending", "ready": False, "podIP": ""}


def test_an_endpoint_without_conditions_is_ready_as_upstream_reads_it() -> None:
    view = hub.endpoint_slice_view({
        "metadata": {"name": "web-abc", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "web"}},
        "endpoints": [{"addresses": ["10.244.1.5"]},
                      {"addresses": ["10.244.2.7"], "conditions": {"ready": False},
                       "targetRef": {"name": "web-2"}}]})
    assert view["service"] == "web"
    assert [(e["addresses"], e["ready"], e["pod"]) for e in view["endpoints"]] == [
        (["10.244.1.5"], True, ""), (["10.244.2.7"], False, "web-2")]


async def test_every_tab_hears_each_change_once_after_its_snapshot(
        cluster_hub: ClusterHub) -> None:
    pods = cluster_hub.informers.informer("pods")
    pods.add(pod("web-1"))
    snapshot, first = cluster_hub.join()
    _, second = cluster_hub.join()
    assert [p["name"] for p in snapshot["Pod"]] == ["web-1"]
    assert set(snapshot) == {"Node", "Pod", "Service", "EndpointSlice", "Event"}

    pods.add(pod("web-2"))
    pods.update({**pod("web-1", phase="Running"), "metadata": {
        **pod("web-1")["metadata"], "resourceVersion": "2"}})
    pods.delete(pod("web-2"))
    for queue in (first, second):
        told = [queue.get_nowait() for _ in range(queue.qsize())]
        assert [(m["type"], m["kind"], m["object"]["name"]) for m in told] == [
            ("ADDED", "Pod", "web-2"), ("MODIFIED", "Pod", "web-1"),
            ("DELETED", "Pod", "web-2")]
    cluster_hub.leave(first)
    pods.add(pod("web-3"))
    assert first.empty() and second.qsize() == 1
    assert cluster_hub.tabs == 1


async def test_a_tab_that_lags_behind_is_dropped_and_told_to_start_over(
        cluster_hub: ClusterHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub, "QUEUE_SIZE", 3)
    _, queue = cluster_hub.join()
    pods = cluster_hub.informers.informer("pods")
    for index in range(4):
        pods.add(pod(f"web-{index}"))
    assert cluster_hub.tabs == 0
    told = [queue.get_nowait() for _ in range(queue.qsize())]
    assert [m and m["object"]["name"] for m in told] == ["web-1", "web-2", None]
