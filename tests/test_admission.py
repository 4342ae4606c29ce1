"""The admission chain on the real API server: the built-in plugins every write passes
(NamespaceLifecycle, Priority, DefaultTolerationSeconds), as upstream's answer them."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client

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
