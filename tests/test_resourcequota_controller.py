"""The resource quota controller against a real API server: status.used is the sum of
what the namespace's objects charge, and follows them as they come, finish and go."""

from __future__ import annotations

import subprocess
from collections.abc import Awaitable, Callable

from minikube_py.api import Obj
from minikube_py.client.rest import Client
from minikube_py.controllers.base import ControllerOptions
from minikube_py.controllers.manager import ControllerManager, select_controllers
from minikube_py.controllers.registry import ALL_CONTROLLERS
from minikube_py.controllers.resourcequota import ResourceQuotaController
from tests.api_helpers import configmap, eventually

RunControllers = Callable[..., Awaitable[ControllerManager]]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]

COMPUTE_HARD = {"pods": "10", "requests.cpu": "2", "requests.memory": "1Gi",
                "limits.memory": "2Gi", "services": "5", "configmaps": "10",
                "count/deployments.apps": "3"}


def resource_quota(name: str, hard: dict[str, str], scopes: list[str] | None = None) -> Obj:
    spec: Obj = {"hard": hard}
    if scopes:
        spec["scopes"] = scopes
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
            "spec": spec}


def pod(name: str, requests: dict[str, str] | None = None,
        limits: dict[str, str] | None = None) -> Obj:
    resources = {key: value for key, value in (("requests", requests), ("limits", limits))
                 if value}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.36",
                                     "resources": resources}]}}


def deployment(name: str) -> Obj:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def service(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}


async def used_becomes(api: Client, namespace: str, name: str, expected: dict[str, str],
                       timeout: float = 10.0) -> Obj:
    """Wait until the quota's status.used is exactly `expected`; the quota then."""
    quotas = api.resource("resourcequotas")
    last: list[Obj] = []

    async def check() -> Obj | None:
        current = await quotas.get(name, namespace)
        last[:] = [current]
        return current if (current.get("status") or {}).get("used") == expected else None

    try:
        return await eventually(check, timeout=timeout, what=f"status.used == {expected}")
    except AssertionError as error:
        raise AssertionError(f"{error}; last status: {last[0].get('status')}") from None


async def test_used_is_the_sum_of_the_namespace_and_follows_deletes_and_finished_pods(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await api_client.resource("resourcequotas").create(
        resource_quota("compute", COMPUTE_HARD), namespace)
    await run_controllers(ResourceQuotaController)
    empty = await used_becomes(api_client, namespace, "compute", {
        "configmaps": "0", "count/deployments.apps": "0", "limits.memory": "0", "pods": "0",
        "requests.cpu": "0", "requests.memory": "0", "services": "0"})
    assert empty["status"]["hard"] == COMPUTE_HARD

    pods = api_client.resource("pods")
    await pods.create(pod("small", {"cpu": "250m", "memory": "128Mi"}, {"memory": "256Mi"}),
                      namespace)
    await pods.create(pod("big", {"cpu": "500m", "memory": "256Mi"}, {"memory": "512Mi"}),
                      namespace)
    await api_client.resource("services").create(service("web"), namespace)
    for name in ("one", "two"):
        await api_client.resource("configmaps").create(configmap(name), namespace)
    await api_client.resource("deployments", "apps").create(deployment("web"), namespace)
    await used_becomes(api_client, namespace, "compute", {
        "configmaps": "2", "count/deployments.apps": "1", "limits.memory": "768Mi",
        "pods": "2", "requests.cpu": "750m", "requests.memory": "384Mi", "services": "1"})

    await pods.delete("small", namespace, grace_period_seconds=0)
    await api_client.resource("configmaps").delete("one", namespace)
    await used_becomes(api_client, namespace, "compute", {
        "configmaps": "1", "count/deployments.apps": "1", "limits.memory": "512Mi",
        "pods": "1", "requests.cpu": "500m", "requests.memory": "256Mi", "services": "1"})

    big = await pods.get("big", namespace)
    big["status"] = {**big.get("status", {}), "phase": "Succeeded"}
    await pods.update_status(big)
    await used_becomes(api_client, namespace, "compute", {
        "configmaps": "1", "count/deployments.apps": "1", "limits.memory": "0", "pods": "0",
        "requests.cpu": "0", "requests.memory": "0", "services": "1"})


async def test_best_effort_and_not_best_effort_quotas_count_their_own_pods(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    # The objects come first: quota admission refuses what a quota matches until the
    # controller has measured it.
    pods = api_client.resource("pods")
    await pods.create(pod("idle"), namespace)
    await pods.create(pod("one", {"cpu": "100m"}), namespace)
    await pods.create(pod("two", {"memory": "64Mi"}, {"cpu": "1", "memory": "64Mi"}), namespace)
    await api_client.resource("configmaps").create(configmap("settings"), namespace)
    quotas = api_client.resource("resourcequotas")
    await quotas.create(resource_quota("best-effort", {"pods": "5"}, ["BestEffort"]), namespace)
    await quotas.create(resource_quota(
        "not-best-effort", {"pods": "5", "requests.cpu": "2", "count/configmaps": "5"},
        ["NotBestEffort"]), namespace)
    await run_controllers(ResourceQuotaController)

    await used_becomes(api_client, namespace, "best-effort", {"pods": "1"})
    # Requests default to limits, so "two" asks for 1 cpu; a scoped quota counts no
    # config maps (only pods have scopes), but still reports the name, at 0.
    await used_becomes(api_client, namespace, "not-best-effort", {
        "count/configmaps": "0", "pods": "2", "requests.cpu": "1100m"})


async def test_a_changed_spec_hard_is_recounted_and_mirrored_in_status_hard(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    quotas = api_client.resource("resourcequotas")
    await quotas.create(resource_quota("objects", {"pods": "5"}), namespace)
    await api_client.resource("configmaps").create(configmap("a"), namespace)
    await run_controllers(ResourceQuotaController)
    await used_becomes(api_client, namespace, "objects", {"pods": "0"})

    await quotas.patch("objects", {"spec": {"hard": {"count/configmaps": "3"}}}, namespace)
    updated = await used_becomes(api_client, namespace, "objects",
                                 {"count/configmaps": "1", "pods": "0"})
    assert updated["status"]["hard"] == {"count/configmaps": "3", "pods": "5"}


async def test_the_periodic_resync_corrects_a_used_written_by_someone_else(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    quotas = api_client.resource("resourcequotas")
    await quotas.create(resource_quota("pods", {"pods": "5"}), namespace)
    await run_controllers(ResourceQuotaController,
                          options=ControllerOptions(resource_quota_sync_period=1.0))
    current = await used_becomes(api_client, namespace, "pods", {"pods": "0"})
    current["status"]["used"] = {"pods": "4"}
    await quotas.update(current, subresource="status")
    await used_becomes(api_client, namespace, "pods", {"pods": "0"}, timeout=15)


async def test_kubectl_shows_used_against_hard(
        api_client: Client, namespace: str, run_controllers: RunControllers,
        kubectl: Kubectl) -> None:
    await api_client.resource("pods").create(
        pod("web", {"cpu": "500m"}, {"memory": "256Mi"}), namespace)
    await api_client.resource("resourcequotas").create(resource_quota(
        "compute", {"pods": "10", "requests.cpu": "2", "limits.memory": "1Gi"}), namespace)
    await run_controllers(ResourceQuotaController)
    await used_becomes(api_client, namespace, "compute",
                       {"limits.memory": "256Mi", "pods": "1", "requests.cpu": "500m"})

    table = kubectl("get", "quota", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "REQUEST", "LIMIT", "AGE"]
    assert table[1].startswith("compute")
    assert "pods: 1/10, requests.cpu: 500m/2" in table[1]
    assert "limits.memory: 256Mi/1Gi" in table[1]

    described = kubectl("describe", "quota", "compute", "-n", namespace).stdout
    rows = [line.split() for line in described.splitlines()]
    assert ["Resource", "Used", "Hard"] in rows
    assert ["pods", "1", "10"] in rows
    assert ["requests.cpu", "500m", "2"] in rows
    assert ["limits.memory", "256Mi", "1Gi"] in rows


def test_resourcequota_runs_by_default_under_its_upstream_name() -> None:
    assert ResourceQuotaController.name == "resourcequota"
    assert ResourceQuotaController in select_controllers(["*"], ALL_CONTROLLERS)
    assert ResourceQuotaController not in select_controllers(["*", "-resourcequota"],
                                                             ALL_CONTROLLERS)
