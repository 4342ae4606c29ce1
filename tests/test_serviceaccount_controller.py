"""The ServiceAccount controller against a real API server: `default` in every namespace."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.serviceaccount import ServiceAccountController
from tests.api_helpers import eventually

RunControllers = Callable[..., Awaitable[ControllerManager]]


async def default_account(api: Client, namespace: str) -> Obj | None:
    try:
        return await api.resource("serviceaccounts").get("default", namespace)
    except NotFound:
        return None


@pytest.fixture
async def terminating_namespace(api_client: Client) -> AsyncIterator[str]:
    """A namespace stuck Terminating (no namespace controller runs to finalize it);
    finalized by hand afterwards, so the API server removes it."""
    namespaces = api_client.resource("namespaces")
    name = f"sa-terminating-{uuid.uuid4().hex[:8]}"
    await namespaces.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    await namespaces.delete(name)
    yield name
    for account in (await api_client.resource("serviceaccounts").list(name))["items"]:
        await api_client.resource("serviceaccounts").delete(account["metadata"]["name"], name)
    stuck = await namespaces.get(name)
    stuck["spec"]["finalizers"] = []
    await namespaces.update(stuck, subresource="finalize")


async def test_every_active_namespace_gets_a_default_service_account(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(ServiceAccountController)
    account = await eventually(lambda: default_account(api_client, namespace),
                               what="the default ServiceAccount of an existing namespace")
    assert account["metadata"]["namespace"] == namespace

    later = f"{namespace}-later"
    await api_client.resource("namespaces").create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": later}})
    await eventually(lambda: default_account(api_client, later),
                     what="the default ServiceAccount of a new namespace")


async def test_a_deleted_default_service_account_comes_back(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(ServiceAccountController)
    first = await eventually(lambda: default_account(api_client, namespace), what="default")
    await api_client.resource("serviceaccounts").delete("default", namespace)

    async def recreated() -> Obj | None:
        account = await default_account(api_client, namespace)
        return account if account and account["metadata"]["uid"] != first["metadata"][
            "uid"] else None

    await eventually(recreated, what="a new default ServiceAccount")


async def test_a_terminating_namespace_gets_no_service_account(
        api_client: Client, namespace: str, terminating_namespace: str,
        run_controllers: RunControllers) -> None:
    manager = await run_controllers(ServiceAccountController)
    await eventually(lambda: default_account(api_client, namespace), what="default")
    # Deleting the active namespace's account too: once it is back, the controller has
    # also handled the terminating namespace, whose events came first.
    await api_client.resource("serviceaccounts").delete("default", namespace)
    await eventually(lambda: default_account(api_client, namespace), what="default again")
    assert await default_account(api_client, terminating_namespace) is None
    # skipped, not failed: the API server would have refused the create anyway
    errors = manager.registry.get_sample_value(
        "controller_syncs_total", {"controller": "serviceaccount", "result": "error"})
    assert not errors
