"""ReplicationControllers (core/v1, `rc`): served with upstream's defaults, validation,
columns and /scale, and kept at spec.replicas by the ReplicaSet controller's logic."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.errors import Invalid, NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers.garbagecollector import GarbageCollector
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.replicaset import ReplicationControllerController
from tests.api_helpers import eventually
from tests.fake_kubelet import FakeKubelet

RunControllers = Callable[..., Awaitable[ControllerManager]]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def rc(name: str, replicas: int = 2, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
            "spec": {"replicas": replicas, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "localhost/echo:1.0"}]}},
                **spec}}


async def test_defaults_take_the_selector_and_labels_from_the_template(
        api_client: Client, namespace: str) -> None:
    body = rc("web")
    del body["spec"]["replicas"]
    created = await api_client.resource("replicationcontrollers").create(body, namespace)
    assert created["spec"]["selector"] == {"app": "web"}
    assert created["metadata"]["labels"] == {"app": "web"}
    assert created["spec"]["replicas"] == 1
    assert created["spec"]["template"]["spec"]["restartPolicy"] == "Always"


async def test_a_selector_the_template_does_not_match_is_invalid(
        api_client: Client, namespace: str) -> None:
    with pytest.raises(Invalid) as error:
        await api_client.resource("replicationcontrollers").create(
            rc("web", selector={"app": "other"}), namespace)
    assert "spec.template.metadata.labels" in str(error.value)
    assert "`selector` does not match template `labels`" in str(error.value)
    body = rc("nothing")
    del body["spec"]["template"]
    with pytest.raises(Invalid, match="spec.selector: Required value"):
        await api_client.resource("replicationcontrollers").create(body, namespace)


def test_kubectl_gets_scales_and_describes_rc(kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(rc("web", 2)))
    table = kubectl("get", "rc", "-n", namespace, "-o", "wide").stdout.splitlines()
    assert table[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS",
                                "IMAGES", "SELECTOR"]
    assert table[1].split()[:2] == ["web", "2"] and table[1].split()[-1] == "app=web"
    kubectl("scale", "rc/web", "--replicas=3", "-n", namespace)
    scale = json.loads(kubectl("get", "--raw", f"/api/v1/namespaces/{namespace}/"
                               "replicationcontrollers/web/scale").stdout)
    assert scale["spec"]["replicas"] == 3 and scale["status"]["selector"] == "app=web"
    assert "app=web" in kubectl("describe", "rc", "web", "-n", namespace).stdout


async def test_controller_creates_scales_down_and_reports_status(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await run_controllers(ReplicationControllerController, GarbageCollector)
    controllers = api_client.resource("replicationcontrollers")
    pods = api_client.resource("pods")
    async with FakeKubelet(api_client, namespace):
        await controllers.create(rc("web", 3), namespace)

        async def ready(count: int) -> Obj | None:
            current = await controllers.get("web", namespace)
            status = current.get("status") or {}
            return current if (status.get("replicas") == count
                               and status.get("readyReplicas") == count) else None

        current = await eventually(lambda: ready(3), what="3 ready replicas")
        owned = (await pods.list(namespace, label_selector="app=web"))["items"]
        assert {p["metadata"]["ownerReferences"][0]["kind"] for p in owned} == {
            "ReplicationController"}
        current["spec"]["replicas"] = 1
        await controllers.update(current)
        await eventually(lambda: ready(1), what="1 ready replica")

    await controllers.delete("web", namespace)

    async def pods_gone() -> bool:
        left = (await pods.list(namespace, label_selector="app=web"))["items"]
        return not [p for p in left if not p["metadata"].get("deletionTimestamp")]

    await eventually(pods_gone, what="the garbage collector to delete the pods")


async def test_orphan_pods_matching_the_selector_are_adopted(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    pods = api_client.resource("pods")
    await pods.create({"metadata": {"name": "stray", "labels": {"app": "adopt"}},
                       "spec": {"containers": [{"name": "c", "image": "localhost/echo:1.0"}]}},
                      namespace)
    await run_controllers(ReplicationControllerController)
    await api_client.resource("replicationcontrollers").create(rc("adopt", 1), namespace)

    async def adopted() -> bool:
        try:
            pod = await pods.get("stray", namespace)
        except NotFound:
            return False
        return any(r.get("kind") == "ReplicationController"
                   for r in pod["metadata"].get("ownerReferences") or [])

    await eventually(adopted, what="the stray pod to be adopted")
    listed = (await pods.list(namespace, label_selector="app=adopt"))["items"]
    assert [p["metadata"]["name"] for p in listed] == ["stray"]  # no second pod created
