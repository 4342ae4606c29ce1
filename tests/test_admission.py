"""The admission chain on the real API server: the built-in plugins every write passes
(NamespaceLifecycle, LimitRanger, Priority, DefaultTolerationSeconds), answering as
upstream's do."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from minikube_py.client.errors import Forbidden, NotFound
from minikube_py.client.rest import Client
from tests.api_helpers import eventually

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_the_namespaces_a_cluster_needs_may_not_be_deleted(kubectl: Kubectl, name: str) -> None:
    deleted = kubectl("delete", "namespace", name, check=False)
    assert deleted.returncode != 0
    assert deleted.stderr.strip() == (
        f'Error from server (Forbidden): namespaces "{name}" is forbidden: this namespace '
        "may not be deleted")
    assert kubectl("get", "namespace", name, "-o", "jsonpath={.status.phase}").stdout == "Active"


async def test_nothing_is_created_in_a_namespace_that_does_not_exist(api_client: Client) -> None:
    with pytest.raises(NotFound) as refused:
        await api_client.resource("configmaps").create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, "nowhere")
    assert str(refused.value) == 'namespaces "nowhere" not found'


async def test_a_new_pod_gets_priority_and_default_tolerations(api_client: Client,
                                                               namespace: str) -> None:
    created = await api_client.resource("pods").create({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}, namespace)
    spec = created["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert [(t["key"], t["tolerationSeconds"]) for t in spec["tolerations"]] == [
        ("node.kubernetes.io/not-ready", 300), ("node.kubernetes.io/unreachable", 300)]


def pod_body(name: str, **resources: dict[str, str]) -> dict:
    container: dict = {"name": "app", "image": "nginx"}
    if resources:
        container["resources"] = resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [container]}}


async def test_limit_ranger_fills_in_a_containers_defaults(api_client: Client,
                                                           namespace: str) -> None:
    await api_client.resource("limitranges").create({
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
                             "defaultRequest": {"cpu": "100m"}}]}}, namespace)

    async def admitted() -> dict | None:
        created = await api_client.resource("pods").create(
            pod_body(f"p-{len(made)}", requests={"memory": "64Mi"}), namespace)
        made.append(created)
        return created if "kubernetes.io/limit-ranger" in created["metadata"].get(
            "annotations", {}) else None

    made: list[dict] = []
    created = await eventually(admitted, what="the LimitRange in force")
    resources = created["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": "500m", "memory": "256Mi"},
                         "requests": {"cpu": "100m", "memory": "64Mi"}}
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container app; cpu, memory limit for "
        "container app")
    # The QoS class is computed from what the pod ended up with.
    assert created["status"]["qosClass"] == "Burstable"


async def test_limit_ranger_refuses_what_is_out_of_bounds(
        api_client: Client, namespace: str, kubectl: Kubectl, tmp_path: Path) -> None:
    await api_client.resource("limitranges").create({
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "bounds"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "100m"},
                             "maxLimitRequestRatio": {"cpu": "2"}}]}}, namespace)
    too_big = pod_body("big", requests={"cpu": "500m"}, limits={"cpu": "2"})
    manifest = tmp_path / "big.json"
    manifest.write_text(json.dumps(too_big))

    async def refused() -> subprocess.CompletedProcess[str] | None:
        made = kubectl("create", "-n", namespace, "-f", str(manifest), check=False)
        return made if made.returncode != 0 else None

    made = await eventually(refused, what="the LimitRange in force")
    assert made.stderr.strip() == (
        f'Error from server (Forbidden): error when creating "{manifest}": pods "big" is '
        "forbidden: [maximum cpu usage per Container is 1, but limit is 2, cpu max limit to "
        "request ratio per Container is 2, but provided ratio is 4.000000]")
    with pytest.raises(Forbidden) as small:
        await api_client.resource("pods").create(
            pod_body("small", requests={"cpu": "50m"}, limits={"cpu": "50m"}), namespace)
    assert str(small.value) == (
        'pods "small" is forbidden: minimum cpu usage per Container is 100m, but request is 50m')
    fits = await api_client.resource("pods").create(
        pod_body("fits", requests={"cpu": "300m"}, limits={"cpu": "600m"}), namespace)
    assert fits["metadata"]["name"] == "fits"
    assert [p["metadata"]["name"] for p in
            (await api_client.resource("pods").list(namespace))["items"]] == ["fits"]
