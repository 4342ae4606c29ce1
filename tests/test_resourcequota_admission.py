"""ResourceQuota admission on the real API server, with the resourcequota controller
measuring: a write that would pass a quota is refused with upstream's message, and the
usage admission records stays exact however many creates race for the last units."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.client.errors import APIStatusError, Forbidden
from minikube_py.client.rest import Client
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.resourcequota import ResourceQuotaController
from tests.api_helpers import eventually

RunControllers = Callable[..., Awaitable[ControllerManager]]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def quota(name: str, hard: dict[str, str]) -> Obj:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
            "spec": {"hard": hard}}


def pod(name: str, cpu: str | None = None) -> Obj:
    container: Obj = {"name": "app", "image": "nginx"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [container]}}


async def measured(api: Client, namespace: str, name: str) -> Obj:
    async def done() -> Obj | None:
        found = await api.resource("resourcequotas").get(name, namespace)
        status = found.get("status") or {}
        return found if set(status.get("used") or {}) == set(found["spec"]["hard"]) else None

    return await eventually(done, what=f"quota {name} measured")


async def test_an_unmeasured_quota_refuses_until_the_controller_has_counted(
        api_client: Client, namespace: str, run_controllers: RunControllers) -> None:
    await api_client.resource("resourcequotas").create(quota("q", {"pods": "2"}), namespace)

    async def refused_as_unknown() -> str | None:
        try:
            await api_client.resource("pods").create(pod("early"), namespace)
        except Forbidden as err:
            return str(err)
        return None

    message = await eventually(refused_as_unknown, what="the quota in the server's cache")
    assert message == 'pods "early" is forbidden: status unknown for quota: q, resources: pods'
    await run_controllers(ResourceQuotaController)
    await measured(api_client, namespace, "q")
    created = await api_client.resource("pods").create(pod("later"), namespace)
    assert created["metadata"]["name"] == "later"


async def test_a_quota_refuses_the_pod_that_would_exceed_it_and_usage_stays_exact(
        api_client: Client, namespace: str, run_controllers: RunControllers,
        kubectl: Kubectl, tmp_path: Path) -> None:
    await run_controllers(ResourceQuotaController)
    await api_client.resource("resourcequotas").create(
        quota("compute", {"pods": "10", "requests.cpu": "2"}), namespace)
    await measured(api_client, namespace, "compute")

    async def create(index: int) -> int:
        try:
            await api_client.resource("pods").create(pod(f"p{index}", "100m"), namespace)
        except APIStatusError as err:
            assert err.code == 403 and "exceeded quota: compute" in str(err), str(err)
            return 403
        return 201

    codes = await asyncio.gather(*(create(index) for index in range(50)))
    assert codes.count(201) == 10 and codes.count(403) == 40
    pods = (await api_client.resource("pods").list(namespace))["items"]
    assert len(pods) == 10
    recorded = await api_client.resource("resourcequotas").get("compute", namespace)
    assert recorded["status"]["used"] == {"pods": "10", "requests.cpu": "1"}

    manifest = tmp_path / "one-more.json"
    manifest.write_text(json.dumps(pod("one-more", "100m")))
    refused = kubectl("create", "-n", namespace, "-f", str(manifest), check=False)
    assert refused.stderr.strip() == (
        f'Error from server (Forbidden): error when creating "{manifest}": pods "one-more" is '
        "forbidden: exceeded quota: compute, requested: pods=1, used: pods=10, limited: "
        "pods=10")
    unstated = kubectl("run", "bare", "-n", namespace, "--image=nginx", check=False)
    assert 'failed quota: compute: must specify requests.cpu for: bare' in unstated.stderr

    # Deleting frees the units; the controller's recount agrees with admission's figure.
    await api_client.resource("pods").delete("p0", namespace, grace_period_seconds=0)

    async def freed() -> bool:
        found = await api_client.resource("resourcequotas").get("compute", namespace)
        return found["status"]["used"] == {"pods": "9", "requests.cpu": "900m"}

    await eventually(freed, what="the quota replenished")
    await api_client.resource("pods").create(pod("replacement", "100m"), namespace)
    after = await api_client.resource("resourcequotas").get("compute", namespace)
    assert after["status"]["used"] == {"pods": "10", "requests.cpu": "1"}
