"""The disruption controller against a real API server: PodDisruptionBudget status.

Workloads are plain objects made by the test (no Deployment or ReplicaSet controller
runs); the test creates their pods with controller references and writes pod readiness
itself, as a kubelet would.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.rest import Client
from minikube_py.controllers.controller_ref import owner_reference
from minikube_py.controllers.disruption import DisruptionController
from minikube_py.controllers.manager import ControllerManager
from tests.api_helpers import eventually
from tests.fake_kubelet import running_status

RunControllers = Callable[..., Awaitable[ControllerManager]]
LABELS = {"app": "web"}


def template() -> Obj:
    return {"metadata": {"labels": LABELS},
            "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]}}


def pdb(**spec: Any) -> Obj:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": LABELS}, **spec}}


async def start_pod(api: Client, namespace: str, name: str, *, ready: bool = True,
                    owner: Obj | None = None) -> Obj:
    pods = api.resource("pods")
    meta: Obj = {"name": name, "labels": LABELS}
    if owner is not None:
        meta["ownerReferences"] = [owner_reference(owner)]
    pod = await pods.create({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                             "spec": template()["spec"]}, namespace)
    pod["status"] = running_status(pod, ready=ready)
    return await pods.update_status(pod)


async def make_workload(api: Client, namespace: str, kind: str, replicas: int) -> Obj:
    """The controller the pods point at: a Deployment's ReplicaSet, or a StatefulSet."""
    spec = {"replicas": replicas, "selector": {"matchLabels": LABELS}, "template": template()}
    if kind == "StatefulSet":
        return await api.resource("statefulsets", "apps").create(
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
             "spec": {**spec, "serviceName": "web"}}, namespace)
    deployment = await api.resource("deployments", "apps").create(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
         "spec": spec}, namespace)
    return await api.resource("replicasets", "apps").create(
        {"apiVersion": "apps/v1", "kind": "ReplicaSet",
         "metadata": {"name": "web-abc", "ownerReferences": [owner_reference(deployment)]},
         "spec": {**spec, "replicas": 1}}, namespace)


async def status_when(api: Client, namespace: str, **wanted: int) -> Callable[
        [], Awaitable[Obj | None]]:
    async def check() -> Obj | None:
        current = await api.resource("poddisruptionbudgets", "policy").get("web", namespace)
        status = current.get("status") or {}
        return status if all(status.get(k) == v for k, v in wanted.items()) else None
    return check


def allowed_condition(status: Obj) -> tuple[str, str]:
    (condition,) = [c for c in status["conditions"] if c["type"] == "DisruptionAllowed"]
    return condition["status"], condition["reason"]


async def test_integer_min_available_counts_the_ready_pods(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(DisruptionController)
    for name in ("a", "b", "c"):
        await start_pod(api_client, namespace, name)
    await api_client.resource("poddisruptionbudgets", "policy").create(
        pdb(minAvailable=2), namespace)

    status = await eventually(await status_when(
        api_client, namespace, currentHealthy=3, desiredHealthy=2, expectedPods=3,
        disruptionsAllowed=1), what="one disruption allowed")
    assert status["observedGeneration"] == 1
    assert allowed_condition(status) == ("True", "SufficientPods")

    pods = api_client.resource("pods")
    pod = await pods.get("c", namespace)
    pod["status"]["conditions"] = [
        {**c, "status": "False"} if c["type"] == "Ready" else c
        for c in pod["status"]["conditions"]]
    await pods.update_status(pod)
    status = await eventually(await status_when(
        api_client, namespace, currentHealthy=2, disruptionsAllowed=0),
        what="no disruption allowed once a pod is unready")
    assert allowed_condition(status) == ("False", "InsufficientPods")


@pytest.mark.parametrize(("kind", "spec", "desired", "allowed"), [
    pytest.param("Deployment", {"minAvailable": "50%"}, 2, 1, id="deployment-min-50%"),
    pytest.param("Deployment", {"maxUnavailable": "25%"}, 3, 0, id="deployment-max-25%"),
    pytest.param("Deployment", {"maxUnavailable": 2}, 2, 1, id="deployment-max-2"),
    pytest.param("StatefulSet", {"minAvailable": "60%"}, 3, 0, id="statefulset-min-60%"),
    pytest.param("StatefulSet", {"maxUnavailable": "50%"}, 2, 1, id="statefulset-max-50%"),
])
async def test_percentages_are_of_the_controllers_scale(
        api_client: Client, namespace: str, run_controllers: RunControllers, kind: str,
        spec: Obj, desired: int, allowed: int) -> None:
    """4 replicas wanted, 3 pods running and ready: percentages round up, of 4."""
    await run_controllers(DisruptionController)
    owner = await make_workload(api_client, namespace, kind, replicas=4)
    for name in ("a", "b", "c"):
        await start_pod(api_client, namespace, name, owner=owner)
    await api_client.resource("poddisruptionbudgets", "policy").create(pdb(**spec), namespace)
    await eventually(await status_when(
        api_client, namespace, expectedPods=4, currentHealthy=3, desiredHealthy=desired,
        disruptionsAllowed=allowed), what=f"status for {spec}")


async def test_a_pod_whose_controller_is_unknown_makes_the_budget_fail_safe(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(DisruptionController)
    missing = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": "gone", "uid": "00000000-0000-0000-0000-000000000000"}}
    await start_pod(api_client, namespace, "orphan", owner=missing)
    await api_client.resource("poddisruptionbudgets", "policy").create(
        pdb(minAvailable="50%"), namespace)

    async def failed() -> Obj | None:
        current = await api_client.resource("poddisruptionbudgets", "policy").get(
            "web", namespace)
        conditions = (current.get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c.get("reason") == "SyncFailed"), None)

    condition = await eventually(failed, what="the SyncFailed condition")
    assert condition["status"] == "False"
    assert condition["message"] == 'found no controllers for pod "orphan"'

    async def event() -> Obj | None:
        events = await api_client.resource("events").list(namespace)
        return next((e for e in events["items"]
                     if e["reason"] == "CalculateExpectedPodCountFailed"), None)

    recorded = await eventually(event, what="a CalculateExpectedPodCountFailed event")
    assert recorded["message"] == ('Failed to calculate the number of expected pods: '
                                   'found no controllers for pod "orphan"')


async def test_no_disruption_is_allowed_while_no_pod_is_expected(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(DisruptionController)
    await api_client.resource("poddisruptionbudgets", "policy").create(
        pdb(maxUnavailable=1), namespace)
    status = await eventually(await status_when(
        api_client, namespace, expectedPods=0, disruptionsAllowed=0, observedGeneration=1),
        what="an observed, empty budget")
    assert allowed_condition(status) == ("False", "InsufficientPods")
