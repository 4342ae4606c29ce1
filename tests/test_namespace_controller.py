"""The namespace controller against a real API server: deleting a namespace empties it.

The controller waits 5 s (upstream's namespaceDeletionGracePeriod) before it acts on a
deleted namespace, and 15 s for objects held by finalizers; the tests shorten both so they
run in about a second.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Awaitable, Callable

import pytest

from minikube_py.api import Obj
from minikube_py.apiserver.storage.etcd import EtcdClient, prefix_end
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers import namespace as namespace_module
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.namespace import NamespaceController
from minikube_py.controllers.serviceaccount import ServiceAccountController
from tests.api_helpers import configmap, eventually
from tests.fake_kubelet import FakeKubelet

RunControllers = Callable[..., Awaitable[ControllerManager]]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(autouse=True)
def quick_namespace_controller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(namespace_module, "NAMESPACE_DELETION_GRACE_PERIOD", 0.1)
    monkeypatch.setattr(namespace_module, "FINALIZER_ESTIMATE_SECONDS", 1)


def pod(name: str, *, node: str | None = None) -> Obj:
    spec: Obj = {"terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "app", "image": "busybox:1.36"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": spec}


def deployment(name: str) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "containers": [{"name": "app", "image": "busybox:1.36"}]}}}}


async def fill(api: Client, namespace: str) -> None:
    """One or more objects of many namespaced kinds."""
    objects: list[tuple[str, str | None, Obj]] = [
        ("configmaps", None, configmap("settings", {"a": "1"})),
        ("secrets", None, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"},
                           "stringData": {"password": "hunter2"}}),
        ("services", None, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
        ("pods", None, pod("on-node", node="node-that-plays-kubelet")),
        ("pods", None, pod("unscheduled")),
        ("deployments", "apps", deployment("web")),
        ("serviceaccounts", None, {"apiVersion": "v1", "kind": "ServiceAccount",
                                   "metadata": {"name": "robot"}}),
        ("leases", "coordination.k8s.io", {"apiVersion": "coordination.k8s.io/v1",
                                           "kind": "Lease", "metadata": {"name": "lock"}}),
        ("poddisruptionbudgets", "policy", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
        ("roles", "rbac.authorization.k8s.io", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        ("events", None, {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "hello"},
                          "involvedObject": {"kind": "Pod", "name": "on-node",
                                             "namespace": namespace},
                          "reason": "Testing", "message": "hello", "type": "Normal"}),
    ]
    for plural, group, obj in objects:
        await api.resource(plural, group).create(obj, namespace)


async def etcd_keys_of(etcd: EtcdClient, namespace: str) -> list[str]:
    """Every etcd key of the namespace or of an object in it."""
    result = await etcd.range(b"/registry/", prefix_end(b"/registry/"), keys_only=True)
    keys = [kv.key.decode() for kv in result.kvs]
    return [key for key in keys
            if f"/{namespace}/" in key or key == f"/registry/namespaces/{namespace}"]


async def namespace_gone(api: Client, namespace: str) -> bool:
    try:
        await api.resource("namespaces").get(namespace)
    except NotFound:
        return True
    return False


async def test_kubectl_delete_namespace_removes_its_content_and_then_the_namespace(
        api_client: Client, namespace: str, kubectl: Kubectl, etcd_client: EtcdClient,
        run_controllers: RunControllers) -> None:
    await run_controllers(NamespaceController, ServiceAccountController)
    await eventually(lambda: api_client.resource("serviceaccounts").list(namespace),
                     what="the namespace in use")
    async with FakeKubelet(api_client, namespace):
        await fill(api_client, namespace)
        assert len(await etcd_keys_of(etcd_client, namespace)) > 10

        # kubectl waits until the namespace is gone
        result = await asyncio.to_thread(kubectl, "delete", "namespace", namespace)

    assert result.stdout.strip() == f'namespace "{namespace}" deleted'
    assert await namespace_gone(api_client, namespace)
    assert await etcd_keys_of(etcd_client, namespace) == []


async def test_objects_held_by_finalizers_keep_the_namespace_until_released(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(NamespaceController)
    configmaps, namespaces = api_client.resource("configmaps"), api_client.resource("namespaces")
    held = configmap("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await configmaps.create(held, namespace)
    await configmaps.create(configmap("free"), namespace)
    await namespaces.delete(namespace)

    async def conditions() -> dict[str, Obj] | None:
        status = (await namespaces.get(namespace)).get("status", {})
        by_type = {c["type"]: c for c in status.get("conditions", [])}
        remaining = by_type.get("NamespaceContentRemaining", {})
        return by_type if remaining.get("status") == "True" else None

    by_type = await eventually(conditions, what="conditions saying what remains")
    assert {t: (c["status"], c["reason"], c["message"]) for t, c in by_type.items()} == {
        "NamespaceDeletionDiscoveryFailure": (
            "False", "ResourcesDiscovered", "All resources successfully discovered"),
        "NamespaceDeletionGroupVersionParsingFailure": (
            "False", "ParsedGroupVersions", "All legacy kube types successfully parsed"),
        "NamespaceDeletionContentFailure": (
            "False", "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization"),
        "NamespaceContentRemaining": (
            "True", "SomeResourcesRemain",
            "Some resources are remaining: configmaps. has 1 resource instances"),
        "NamespaceFinalizersRemaining": (
            "True", "SomeFinalizerRemain",
            "Some finalizers are remaining: example.com/hold in 1 resource instances"),
    }
    remaining = await configmaps.list(namespace)
    assert [c["metadata"]["name"] for c in remaining["items"]] == ["held"]
    assert (await namespaces.get(namespace))["spec"]["finalizers"] == ["kubernetes"]

    await configmaps.patch("held", {"metadata": {"finalizers": None}}, namespace)
    await eventually(lambda: namespace_gone(api_client, namespace), timeout=15,
                     what="the namespace to go once its last object went")


async def test_namespaces_that_are_not_being_deleted_are_left_alone(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    configmaps = api_client.resource("configmaps")
    await configmaps.create(configmap("kept"), namespace)
    await run_controllers(NamespaceController)
    other = f"{namespace}-gone"
    await api_client.resource("namespaces").create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    await api_client.resource("namespaces").delete(other)
    await eventually(lambda: namespace_gone(api_client, other), what="the deleted namespace")
    assert [c["metadata"]["name"] for c in (await configmaps.list(namespace))["items"]] == [
        "kept"]
