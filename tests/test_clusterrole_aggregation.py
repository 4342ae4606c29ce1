"""The clusterrole-aggregation controller against a real API server: admin, edit and view
hold the rules of the ClusterRoles labelled to aggregate into them, as upstream keeps them.

The shared API server authorizes everything and so creates no bootstrap roles: the tests
that need admin, edit and view write them as the API server's bootstrap policy does."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import yaml

from minikube_py.api import Obj
from minikube_py.apiserver.auth.bootstrappolicy import cluster_roles
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client, ResourceClient
from minikube_py.controllers.clusterroleaggregation import ClusterRoleAggregationController
from minikube_py.controllers.manager import ControllerManager
from tests.api_helpers import eventually

RunControllers = Callable[..., Awaitable[ControllerManager]]
AGGREGATED = ("admin", "edit", "view", "system:aggregate-to-admin",
              "system:aggregate-to-edit", "system:aggregate-to-view")
TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"


def clusterroles(api: Client) -> ResourceClient:
    return api.resource("clusterroles", "rbac.authorization.k8s.io")


@pytest.fixture
async def roles(api_client: Client) -> AsyncIterator[list[str]]:
    """Names of ClusterRoles the test creates, deleted after it."""
    created: list[str] = []
    yield created
    for name in created:
        with contextlib.suppress(NotFound):
            await clusterroles(api_client).delete(name)


@pytest.fixture
async def bootstrap_roles(api_client: Client, roles: list[str]) -> dict[str, Obj]:
    """admin, edit, view and the system:aggregate-to-* roles, as the API server writes
    them at start under RBAC; by name, as created."""
    written = {}
    for role in cluster_roles():
        if role["metadata"]["name"] in AGGREGATED:
            written[role["metadata"]["name"]] = await clusterroles(api_client).create(role)
            roles.append(role["metadata"]["name"])
    return written


def cluster_role(name: str, rules: list[Obj], labels: dict[str, str] | None = None,
                 selects: list[str] | None = None) -> Obj:
    role: Obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": name, "labels": labels or {}}, "rules": rules}
    if selects:
        role["aggregationRule"] = {"clusterRoleSelectors": [
            {"matchLabels": {label: "true"}} for label in selects]}
    return role


def read(group: str, resource: str) -> Obj:
    return {"apiGroups": [group], "resources": [resource], "verbs": ["get", "list", "watch"]}


async def rules_of(api: Client, name: str) -> list[Obj]:
    return (await clusterroles(api).get(name)).get("rules") or []


async def test_the_bootstrap_roles_need_no_write_the_controller_agrees_with_them(
        api_client: Client, bootstrap_roles: dict[str, Obj],
        run_controllers: RunControllers) -> None:
    manager = await run_controllers(ClusterRoleAggregationController)

    def syncs() -> float:
        return manager.registry.get_sample_value("controller_syncs_total", {
            "controller": "clusterrole-aggregation", "result": "success"}) or 0.0

    async def each_aggregated_role_synced() -> bool:
        # the roles were all there when the cache synced, before the workers started:
        # the queue then held admin, edit and view once each
        return syncs() >= 3

    await eventually(each_aggregated_role_synced, what="admin, edit and view synced")
    for name in ("admin", "edit", "view"):
        stored = await clusterroles(api_client).get(name)
        assert stored["metadata"]["resourceVersion"] == (
            bootstrap_roles[name]["metadata"]["resourceVersion"]), name


async def test_a_role_labelled_aggregate_to_view_adds_its_rules_to_view_edit_and_admin(
        api_client: Client, bootstrap_roles: dict[str, Obj], roles: list[str],
        run_controllers: RunControllers,
        kubectl: Callable[..., Any]) -> None:
    await run_controllers(ClusterRoleAggregationController)
    name = f"widget-viewer-{uuid.uuid4().hex[:8]}"
    widgets = read("example.com", "widgets")
    await clusterroles(api_client).create(cluster_role(name, [widgets], {TO_VIEW: "true"}))
    roles.append(name)

    async def everywhere(present: bool) -> bool:
        held = [widgets in await rules_of(api_client, role) for role in ("view", "edit", "admin")]
        return held == [present] * 3

    await eventually(lambda: everywhere(True), what="widgets in view, edit and admin")
    view = yaml.safe_load(kubectl("get", "clusterrole", "view", "-o", "yaml").stdout)
    assert view["aggregationRule"] == {"clusterRoleSelectors": [
        {"matchLabels": {TO_VIEW: "true"}}]}
    # sorted by name, the new role's rules come after system:aggregate-to-view's
    assert view["rules"] == [*bootstrap_roles["view"]["rules"], widgets]

    kubectl("label", "clusterrole", name, f"{TO_VIEW}-")
    await eventually(lambda: everywhere(False), what="widgets gone from view, edit and admin")
    assert await rules_of(api_client, "view") == bootstrap_roles["view"]["rules"]


async def test_a_custom_aggregated_role_follows_the_roles_its_selectors_pick(
        api_client: Client, roles: list[str], run_controllers: RunControllers) -> None:
    await run_controllers(ClusterRoleAggregationController)
    suffix = uuid.uuid4().hex[:8]
    label = f"example.com/aggregate-to-monitoring-{suffix}"
    pods, nodes, services = read("", "pods"), read("", "nodes"), read("", "services")
    monitoring = f"monitoring-{suffix}"
    api = clusterroles(api_client)
    await api.create(cluster_role(monitoring, [], selects=[label]))
    # created in reverse order of name: the rules still come in name order, each once
    for name, rules in ((f"b-nodes-{suffix}", [nodes, pods]), (f"a-pods-{suffix}", [pods]),
                        (f"unlabelled-{suffix}", [services])):
        labels = {label: "true"} if "unlabelled" not in name else {}
        await api.create(cluster_role(name, rules, labels))
        roles.append(name)
    roles.append(monitoring)

    async def holds(expected: list[Obj]) -> bool:
        return await rules_of(api_client, monitoring) == expected

    await eventually(lambda: holds([pods, nodes]), what="the selected roles' rules")
    # a selected role's rules change: the aggregate follows
    b_nodes = await api.get(f"b-nodes-{suffix}")
    await api.update({**b_nodes, "rules": [nodes, services]})
    await eventually(lambda: holds([pods, nodes, services]), what="the changed rules")
    # a selected role goes: its rules go with it
    await api.delete(f"a-pods-{suffix}")
    await eventually(lambda: holds([nodes, services]), what="the deleted role's rules gone")
    # rules written into the aggregated role by hand are put back as they should be
    await api.update({**await api.get(monitoring), "rules": [pods]})
    await eventually(lambda: holds([nodes, services]), what="the hand-written rules undone")
