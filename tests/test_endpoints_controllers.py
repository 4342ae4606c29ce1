"""The Endpoints and EndpointSlice controllers against a real API server.

The test plays the kubelet itself (it writes pod status: IP, Ready), so it controls
exactly when a pod becomes ready, unready or terminating. Pods sit on a Node object the
test creates, labelled with a zone, which EndpointSlices report.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.meta import now, rfc3339
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers.endpoints import (
    LAST_CHANGE_TRIGGER_TIME,
    EndpointsController,
    repack_subsets,
)
from minikube_py.controllers.endpointslice import (
    CONTROLLER_NAME,
    MANAGED_BY_LABEL,
    MAX_ENDPOINTS_PER_SLICE,
    SERVICE_NAME_LABEL,
    EndpointSliceController,
    endpoint_key,
    new_endpoint_slice,
    reconcile_port_mapping,
)
from minikube_py.controllers.garbagecollector import GarbageCollector
from minikube_py.controllers.manager import ControllerManager
from tests.api_helpers import eventually
from tests.fake_kubelet import running_status

RunControllers = Callable[..., Awaitable[ControllerManager]]
ZONE = "zone-a"


@pytest.fixture
async def node(api_client: Client, namespace: str) -> AsyncIterator[str]:
    """A Node object in ZONE for the test's pods (no kubelet runs on it). Afterwards the
    pods go (at once: no kubelet would finish their graceful deletion), then the node."""
    nodes, pods = api_client.resource("nodes"), api_client.resource("pods")
    name = f"ep-node-{uuid.uuid4().hex[:8]}"
    await nodes.create({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": {"topology.kubernetes.io/zone": ZONE}}})
    yield name
    for pod in (await pods.list(namespace))["items"]:
        with contextlib.suppress(NotFound):
            await pods.delete(pod["metadata"]["name"], namespace, grace_period_seconds=0)
    with contextlib.suppress(NotFound):
        await nodes.delete(name)


@pytest.fixture
async def controllers(run_controllers: RunControllers) -> ControllerManager:
    return await run_controllers(EndpointsController, EndpointSliceController)


def service(name: str, selector: dict[str, str] | None, *, target_port: int | str = "http",
            **spec: Any) -> Obj:
    body: Obj = {"ports": [{"port": 80, "targetPort": target_port}], **spec}
    if selector is not None:
        body["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


async def start_pod(api: Client, namespace: str, name: str, node: str, *, ready: bool,
                    labels: dict[str, str] | None = None, port: int | None = 8080,
                    **spec: Any) -> Obj:
    """Create a pod on `node` and write the status a kubelet writes once it runs."""
    ports = [{"name": "http", "containerPort": port}] if port is not None else []
    pods = api.resource("pods")
    pod = await pods.create({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": "web"}},
        "spec": {"nodeName": node, "containers": [
            {"name": "app", "image": "busybox:1.36", "ports": ports}], **spec},
    }, namespace)
    pod["status"] = running_status(pod, ready=ready)
    return await pods.update_status(pod)


async def set_ready(api: Client, namespace: str, name: str, ready: bool) -> None:
    """Flip the pod's Ready (and ContainersReady) condition, as a readiness probe would."""
    pods = api.resource("pods")
    pod = await pods.get(name, namespace)
    for condition in pod["status"]["conditions"]:
        if condition["type"] in ("Ready", "ContainersReady"):
            condition["status"] = "True" if ready else "False"
            condition["lastTransitionTime"] = rfc3339(now())
    await pods.update_status(pod)


def ip_of(pod: Obj) -> str:
    return pod["status"]["podIP"]


async def endpoints_of(api: Client, namespace: str, name: str) -> Obj | None:
    try:
        return await api.resource("endpoints").get(name, namespace)
    except NotFound:
        return None


async def slices_of(api: Client, namespace: str, name: str) -> list[Obj]:
    listed = await api.resource("endpointslices", "discovery.k8s.io").list(
        namespace, label_selector=f"{SERVICE_NAME_LABEL}={name}")
    return listed["items"]


def addresses(endpoints: Obj | None, field: str = "addresses") -> set[str]:
    return {a["ip"] for subset in (endpoints or {}).get("subsets") or []
            for a in subset.get(field) or []}


def slice_endpoints(slices: list[Obj]) -> dict[str, Obj]:
    """Endpoint by pod name, over all slices."""
    return {e["targetRef"]["name"]: e for s in slices for e in s.get("endpoints") or []}


async def test_endpoints_and_slices_follow_pod_readiness(
        api_client: Client, namespace: str, node: str, controllers: ControllerManager) -> None:
    created = await api_client.resource("services").create(service("web", {"app": "web"}),
                                                           namespace)
    ready = await start_pod(api_client, namespace, "ready", node, ready=True)
    unready = await start_pod(api_client, namespace, "unready", node, ready=False)

    async def both_listed() -> Obj | None:
        endpoints = await endpoints_of(api_client, namespace, "web")
        if (addresses(endpoints) == {ip_of(ready)}
                and addresses(endpoints, "notReadyAddresses") == {ip_of(unready)}):
            return endpoints
        return None

    endpoints = await eventually(both_listed, what="a ready and a not-ready address")
    subset = endpoints["subsets"][0]
    assert subset["ports"] == [{"port": 8080, "protocol": "TCP"}]
    assert subset["addresses"][0]["targetRef"] == {
        "kind": "Pod", "namespace": namespace, "name": "ready",
        "uid": ready["metadata"]["uid"]}
    assert subset["addresses"][0]["nodeName"] == node
    assert endpoints["metadata"]["annotations"][LAST_CHANGE_TRIGGER_TIME]

    async def slice_with_both() -> list[Obj] | None:
        slices = await slices_of(api_client, namespace, "web")
        return slices if set(slice_endpoints(slices)) == {"ready", "unready"} else None

    slices = await eventually(slice_with_both, what="an EndpointSlice with both pods")
    assert len(slices) == 1
    (endpoint_slice,) = slices
    assert endpoint_slice["addressType"] == "IPv4"
    assert endpoint_slice["metadata"]["name"].startswith("web-")
    assert endpoint_slice["metadata"]["labels"][MANAGED_BY_LABEL] == CONTROLLER_NAME
    assert endpoint_slice["metadata"]["ownerReferences"] == [{
        "apiVersion": "v1", "kind": "Service", "name": "web",
        "uid": created["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert endpoint_slice["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    by_pod = slice_endpoints(slices)
    assert by_pod["ready"]["conditions"] == {"ready": True, "serving": True,
                                             "terminating": False}
    assert by_pod["unready"]["conditions"] == {"ready": False, "serving": False,
                                               "terminating": False}
    assert by_pod["ready"]["addresses"] == [ip_of(ready)]
    assert by_pod["ready"]["nodeName"] == node
    assert by_pod["ready"]["zone"] == ZONE

    # readiness flips: the addresses swap sides
    await set_ready(api_client, namespace, "unready", True)
    await set_ready(api_client, namespace, "ready", False)

    async def swapped() -> bool:
        endpoints = await endpoints_of(api_client, namespace, "web")
        by_pod = slice_endpoints(await slices_of(api_client, namespace, "web"))
        return (addresses(endpoints) == {ip_of(unready)}
                and addresses(endpoints, "notReadyAddresses") == {ip_of(ready)}
                and by_pod["unready"]["conditions"]["ready"]
                and not by_pod["ready"]["conditions"]["ready"])

    await eventually(swapped, what="readiness changes reflected")

    # a terminating pod leaves the Endpoints but stays in its slice, marked terminating
    await api_client.resource("pods").delete("unready", namespace)

    async def terminating() -> Obj | None:
        endpoints = await endpoints_of(api_client, namespace, "web")
        by_pod = slice_endpoints(await slices_of(api_client, namespace, "web"))
        if ip_of(unready) in addresses(endpoints) | addresses(endpoints, "notReadyAddresses"):
            return None
        return by_pod.get("unready") if by_pod["unready"]["conditions"]["terminating"] else None

    endpoint = await eventually(terminating, what="the terminating pod's endpoint")
    assert endpoint["conditions"] == {"ready": False, "serving": True, "terminating": True}


async def test_named_target_port_is_resolved_per_pod(
        api_client: Client, namespace: str, node: str, controllers: ControllerManager) -> None:
    await api_client.resource("services").create(service("web", {"app": "web"}), namespace)
    on_8080 = await start_pod(api_client, namespace, "on-8080", node, ready=True, port=8080)
    on_9090 = await start_pod(api_client, namespace, "on-9090", node, ready=True, port=9090)
    no_port = await start_pod(api_client, namespace, "no-port", node, ready=True, port=None)

    async def two_subsets() -> Obj | None:
        endpoints = await endpoints_of(api_client, namespace, "web")
        subsets = (endpoints or {}).get("subsets") or []
        return endpoints if len(subsets) == 2 else None

    endpoints = await eventually(two_subsets, what="one subset per resolved port")
    by_port = {s["ports"][0]["port"]: {a["ip"] for a in s["addresses"]}
               for s in endpoints["subsets"]}
    assert by_port == {8080: {ip_of(on_8080)}, 9090: {ip_of(on_9090)}}
    assert ip_of(no_port) not in addresses(endpoints)

    async def three_slices() -> list[Obj] | None:
        slices = await slices_of(api_client, namespace, "web")
        return slices if len(slice_endpoints(slices)) == 3 else None

    slices = await eventually(three_slices, what="slices for every port set")
    by_ports = {tuple(p["port"] for p in s["ports"]): {e["targetRef"]["name"]
                                                        for e in s["endpoints"]}
                for s in slices}
    # upstream makes one slice per distinct port set; a pod without the port gets one too
    assert by_ports == {(8080,): {"on-8080"}, (9090,): {"on-9090"}, (): {"no-port"}}

    async def warning() -> Obj | None:
        events = (await api_client.resource("events").list(
            namespace, field_selector="involvedObject.name=web,reason=TargetPortNotFound"))
        return events["items"][0] if events["items"] else None
    event = await eventually(warning, what="a TargetPortNotFound Warning on the Service")
    assert event["type"] == "Warning" and event["involvedObject"]["kind"] == "Service"
    assert event["message"] == ('Service port 80 targets the port named "http", which no '
                                "container of pod no-port declares: no endpoint on that port")


async def test_selector_change_moves_the_endpoints(
        api_client: Client, namespace: str, node: str, controllers: ControllerManager) -> None:
    services = api_client.resource("services")
    await services.create(service("web", {"app": "blue"}, target_port=8080), namespace)
    blue = await start_pod(api_client, namespace, "blue", node, ready=True,
                           labels={"app": "blue"})
    green = await start_pod(api_client, namespace, "green", node, ready=True,
                            labels={"app": "green"})

    async def serving(ip: str) -> bool:
        endpoints = await endpoints_of(api_client, namespace, "web")
        by_pod = slice_endpoints(await slices_of(api_client, namespace, "web"))
        slice_ips = {e["addresses"][0] for e in by_pod.values()}
        return addresses(endpoints) == {ip} and slice_ips == {ip}

    await eventually(lambda: serving(ip_of(blue)), what="the blue pod behind the service")
    await services.patch("web", {"spec": {"selector": {"app": "green"}}}, namespace)
    await eventually(lambda: serving(ip_of(green)), what="the green pod behind the service")


async def test_service_without_selector_is_left_alone(
        api_client: Client, namespace: str, node: str, controllers: ControllerManager) -> None:
    services, endpoints_api = api_client.resource("services"), api_client.resource("endpoints")
    await services.create(service("external", None, target_port=8080), namespace)
    manual = await endpoints_api.create({
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "external"},
        "subsets": [{"addresses": [{"ip": "192.0.2.10"}], "ports": [{"port": 8080}]}]},
        namespace)
    # a selector service synced after it shows the controller has seen both
    await services.create(service("web", {"app": "web"}, target_port=8080), namespace)
    await start_pod(api_client, namespace, "web", node, ready=True)
    await eventually(lambda: endpoints_of(api_client, namespace, "web"), what="web endpoints")
    assert await endpoints_api.get("external", namespace) == manual
    assert await slices_of(api_client, namespace, "external") == []


async def test_publish_not_ready_addresses_and_hostnames(
        api_client: Client, namespace: str, node: str, controllers: ControllerManager) -> None:
    await api_client.resource("services").create(
        service("db", {"app": "db"}, target_port=8080, clusterIP="None",
                publishNotReadyAddresses=True), namespace)
    pod = await start_pod(api_client, namespace, "db-0", node, ready=False,
                          labels={"app": "db"}, hostname="db-0", subdomain="db")

    async def published() -> Obj | None:
        endpoints = await endpoints_of(api_client, namespace, "db")
        return endpoints if addresses(endpoints) == {ip_of(pod)} else None

    endpoints = await eventually(published, what="the not-ready pod published as ready")
    assert endpoints["subsets"][0]["addresses"][0]["hostname"] == "db-0"
    assert endpoints["metadata"]["labels"] == {"service.kubernetes.io/headless": ""}

    async def endpoint() -> Obj | None:
        return slice_endpoints(await slices_of(api_client, namespace, "db")).get("db-0")

    published_endpoint = await eventually(endpoint, what="the pod in the db slice")
    assert published_endpoint["conditions"] == {"ready": True, "serving": False,
                                                "terminating": False}
    assert published_endpoint["hostname"] == "db-0"


async def test_service_deletion_deletes_its_endpoints_and_slices(
        api_client: Client, namespace: str, node: str, run_controllers: RunControllers) -> None:
    # Endpoints go with the Service by the Endpoints controller; slices by the garbage
    # collector, through their owner reference.
    await run_controllers(EndpointsController, EndpointSliceController, GarbageCollector)
    services = api_client.resource("services")
    await services.create(service("web", {"app": "web"}), namespace)
    await start_pod(api_client, namespace, "web", node, ready=True)
    await eventually(lambda: endpoints_of(api_client, namespace, "web"), what="endpoints")
    await eventually(lambda: slices_of(api_client, namespace, "web"), what="a slice")
    await services.delete("web", namespace)

    async def gone() -> bool:
        return (await endpoints_of(api_client, namespace, "web") is None
                and await slices_of(api_client, namespace, "web") == [])

    await eventually(gone, what="the Endpoints and EndpointSlices deleted with the Service")


async def test_empty_service_gets_a_placeholder_slice(
        api_client: Client, namespace: str, controllers: ControllerManager) -> None:
    await api_client.resource("services").create(service("idle", {"app": "idle"}), namespace)
    slices = await eventually(lambda: slices_of(api_client, namespace, "idle"),
                              what="a placeholder slice")
    assert [(s["endpoints"], s["ports"]) for s in slices] == [([], [])]
    endpoints = await eventually(lambda: endpoints_of(api_client, namespace, "idle"),
                                 what="empty Endpoints")
    assert "subsets" not in endpoints


@pytest.mark.parametrize(("subsets", "expected"), [
    pytest.param(
        [{"addresses": [{"ip": "10.0.0.2"}], "ports": [{"port": 80}]},
         {"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}],
        [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}]}],
        id="addresses-of-one-port-merge"),
    pytest.param(
        [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]},
         {"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 443}]}],
        [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}, {"port": 443}]}],
        id="ports-of-one-address-merge"),
    pytest.param(
        [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]},
         {"notReadyAddresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}],
        [{"notReadyAddresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}],
        id="not-ready-wins"),
    pytest.param(
        [{"addresses": [{"ip": "10.0.0.1"}]}],
        [{"addresses": [{"ip": "10.0.0.1"}]}],
        id="headless-without-ports-kept"),
])
def test_repack_subsets_gives_the_canonical_layout(subsets: list[Obj],
                                                   expected: list[Obj]) -> None:
    assert repack_subsets(subsets) == expected


# -- slicing, without a server: the reconciler's planning step ----------------------------

PORTS = [{"name": "", "port": 8080, "protocol": "TCP"}]
SERVICE = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid"},
           "spec": {"clusterIP": "10.96.0.10", "selector": {"app": "web"}}}


def endpoint(i: int) -> Obj:
    return {"addresses": [f"10.1.{i // 250}.{i % 250 + 1}"],
            "conditions": {"ready": True, "serving": True, "terminating": False},
            "targetRef": {"kind": "Pod", "namespace": "ns", "name": f"pod-{i}", "uid": str(i)}}


def existing_slice(name: str, members: range, svc: Obj) -> Obj:
    endpoint_slice = new_endpoint_slice(svc, PORTS, "IPv4")
    endpoint_slice["metadata"]["name"] = name
    endpoint_slice["endpoints"] = [endpoint(i) for i in members]
    return endpoint_slice


def desired(members: range) -> dict[Any, Obj]:
    return {endpoint_key(endpoint(i)): endpoint(i) for i in members}


def test_endpoints_are_cut_into_slices_of_at_most_100() -> None:
    changes = reconcile_port_mapping(SERVICE, [], desired(range(150)), PORTS, "IPv4")
    assert sorted(len(s["endpoints"]) for s in changes.create) == [50, MAX_ENDPOINTS_PER_SLICE]
    assert changes.update == changes.delete == []


def test_a_removed_endpoint_updates_only_the_slice_that_held_it() -> None:
    slices = [existing_slice("web-a", range(100), SERVICE),
              existing_slice("web-b", range(100, 150), SERVICE)]
    wanted = desired(range(150))
    del wanted[endpoint_key(endpoint(120))]
    changes = reconcile_port_mapping(SERVICE, slices, wanted, PORTS, "IPv4")
    assert [(s["metadata"]["name"], len(s["endpoints"])) for s in changes.update] == [
        ("web-b", 49)]
    assert changes.create == changes.delete == []


def test_new_endpoints_go_to_the_unchanged_slice_they_fit_best() -> None:
    slices = [existing_slice("web-a", range(95), SERVICE),
              existing_slice("web-b", range(100, 150), SERVICE)]
    changes = reconcile_port_mapping(
        SERVICE, slices, desired([*range(95), *range(100, 160)]), PORTS, "IPv4")
    # 10 new endpoints do not fit in web-a (5 free), so web-b takes them
    assert [(s["metadata"]["name"], len(s["endpoints"])) for s in changes.update] == [
        ("web-b", 60)]
    assert changes.create == changes.delete == []
