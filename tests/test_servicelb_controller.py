"""The service-lb controller against the real API server: LoadBalancer Services get an
address from --loadbalancer-ip-range, shown by kubectl, released on delete; whether they
got one, and why not, is an Event and the Service's minikube-py.io/LoadBalancerReady
condition.

Each test runs the controller with a loadBalancerClass of its own, so the LoadBalancer
Services of other tests on the shared API server are not its business."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers.base import ControllerOptions
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.servicelb import FINALIZER, ServiceLBController, parse_range
from tests.api_helpers import eventually

RunControllers = Callable[..., Awaitable[ControllerManager]]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
RANGE = "198.51.100.10-198.51.100.11"


def lb_service(name: str, lb_class: str, **spec: Any) -> Obj:
    return {"metadata": {"name": name},
            "spec": {"type": "LoadBalancer", "loadBalancerClass": lb_class,
                     "selector": {"app": name}, "ports": [{"port": 80}], **spec}}


@pytest.fixture
async def lb_class(run_controllers: RunControllers) -> str:
    """A class of this test's own, and the controller serving it."""
    name = f"test.minikube-py.io/{uuid.uuid4().hex[:8]}"
    await run_controllers(ServiceLBController, options=ControllerOptions(
        loadbalancer_ip_range=RANGE, loadbalancer_class=name))
    return name


async def wait_for(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    return await eventually(check, interval=0.1, what=what)


async def ingress(client: Client, namespace: str, name: str) -> list[str]:
    service = await client.resource("services").get(name, namespace)
    return [i["ip"] for i in service.get("status", {}).get("loadBalancer", {}).get("ingress")
            or []]


def test_parse_range_accepts_first_last_and_cidr_and_refuses_nonsense() -> None:
    assert parse_range("10.0.0.1-10.0.0.3") == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert parse_range("10.0.0.0/30") == ["10.0.0.1", "10.0.0.2"]
    with pytest.raises(ValueError, match="comes before"):
        parse_range("10.0.0.9-10.0.0.1")
    with pytest.raises(ValueError, match="--loadbalancer-ip-range"):
        parse_range("ten-eleven")


async def ready_condition(client: Client, namespace: str, name: str) -> Obj | None:
    service = await client.resource("services").get(name, namespace)
    return next((c for c in service.get("status", {}).get("conditions") or []
                 if c["type"] == "minikube-py.io/LoadBalancerReady"), None)


async def test_load_balancer_gets_an_address_that_kubectl_shows(
        api_client: Client, namespace: str, lb_class: str, kubectl: Kubectl) -> None:
    await api_client.resource("services").create(lb_service("web", lb_class), namespace)
    ips = await wait_for(lambda: ingress(api_client, namespace, "web"), "an address")
    assert ips[0] in parse_range(RANGE)
    service = await api_client.resource("services").get("web", namespace)
    assert FINALIZER in service["metadata"]["finalizers"]
    assert service["status"]["loadBalancer"]["ingress"][0]["ipMode"] == "VIP"
    ready = await ready_condition(api_client, namespace, "web")
    assert ready is not None and (ready["status"], ready["reason"]) == (
        "True", "EnsuredLoadBalancer") and ready["lastTransitionTime"]
    table = kubectl("get", "svc", "web", "-n", namespace).stdout
    assert ips[0] in table.splitlines()[1].split()


async def test_exhausted_range_stays_pending_with_an_event_until_an_address_is_freed(
        api_client: Client, namespace: str, lb_class: str, kubectl: Kubectl) -> None:
    services = api_client.resource("services")
    for name in ("a", "b"):
        await services.create(lb_service(name, lb_class), namespace)
    first = await wait_for(lambda: ingress(api_client, namespace, "a"), "a's address")
    second = await wait_for(lambda: ingress(api_client, namespace, "b"), "b's address")
    assert sorted(first + second) == parse_range(RANGE)
    await services.create(lb_service("c", lb_class), namespace)

    async def warning() -> bool:
        events = await api_client.resource("events").list(namespace)
        return any(e.get("reason") == "SyncLoadBalancerFailed"
                   and e["involvedObject"]["name"] == "c" for e in events["items"])

    await wait_for(warning, "a SyncLoadBalancerFailed Event")
    assert await ingress(api_client, namespace, "c") == []
    ready = await wait_for(lambda: ready_condition(api_client, namespace, "c"),
                           "c's LoadBalancerReady condition")
    assert (ready["status"], ready["reason"]) == ("False", "SyncLoadBalancerFailed")
    assert "no free address left in --loadbalancer-ip-range" in ready["message"]
    assert "<pending>" in kubectl("get", "svc", "c", "-n", namespace).stdout
    await services.delete("a", namespace)

    async def gone() -> bool:
        try:
            await services.get("a", namespace)
        except NotFound:
            return True
        return False

    await wait_for(gone, "a to go (its finalizer removed)")
    assert await wait_for(lambda: ingress(api_client, namespace, "c"), "c's address") == first

    async def ready_now() -> bool:
        ready = await ready_condition(api_client, namespace, "c")
        return ready is not None and ready["status"] == "True"

    await wait_for(ready_now, "c's LoadBalancerReady True")


async def test_other_classes_and_other_types_are_left_alone_and_a_type_change_releases(
        api_client: Client, namespace: str, lb_class: str) -> None:
    services = api_client.resource("services")
    await services.create(lb_service("theirs", "example.com/other-lb"), namespace)
    await services.create(lb_service("mine", lb_class), namespace)
    await wait_for(lambda: ingress(api_client, namespace, "mine"), "mine's address")
    assert await ingress(api_client, namespace, "theirs") == []
    mine = await services.get("mine", namespace)
    mine["spec"] = {"type": "ClusterIP", "selector": {"app": "mine"}, "ports": [{"port": 80}],
                    "clusterIP": mine["spec"]["clusterIP"]}
    await services.update(mine)

    async def released() -> bool:
        service = await services.get("mine", namespace)
        return (not service.get("status", {}).get("loadBalancer")
                and not service.get("status", {}).get("conditions")
                and FINALIZER not in (service["metadata"].get("finalizers") or []))

    await wait_for(released, "the address released and the finalizer removed")


async def test_requested_load_balancer_ip_is_honoured(
        api_client: Client, namespace: str, lb_class: str) -> None:
    await api_client.resource("services").create(
        lb_service("pinned", lb_class, loadBalancerIP="198.51.100.11"), namespace)
    assert await wait_for(lambda: ingress(api_client, namespace, "pinned"),
                          "the requested address") == ["198.51.100.11"]


async def test_a_requested_address_it_cannot_give_is_said_and_a_new_request_moves_the_service(
        api_client: Client, namespace: str, lb_class: str) -> None:
    services = api_client.resource("services")
    await services.create(lb_service("outside", lb_class, loadBalancerIP="198.51.100.99"),
                          namespace)

    async def said() -> bool:
        events = await api_client.resource("events").list(namespace)
        return any(e.get("reason") == "SyncLoadBalancerFailed"
                   and e["involvedObject"]["name"] == "outside"
                   and "requested loadBalancerIP 198.51.100.99 is outside" in e["message"]
                   for e in events["items"])

    await wait_for(said, "a SyncLoadBalancerFailed Event naming the requested address")
    assert await ingress(api_client, namespace, "outside") == []
    await services.create(lb_service("moving", lb_class), namespace)
    assert await wait_for(lambda: ingress(api_client, namespace, "moving"),
                          "an address") == ["198.51.100.10"]
    moving = await services.get("moving", namespace)
    moving["spec"]["loadBalancerIP"] = "198.51.100.11"
    await services.update(moving)

    async def moved() -> bool:
        return await ingress(api_client, namespace, "moving") == ["198.51.100.11"]

    await wait_for(moved, "the Service moved to the address it now asks for")
