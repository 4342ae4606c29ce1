"""pods/ephemeralcontainers, as `kubectl debug` writes it: a strategic merge patch that adds
a container to a running pod, checked as upstream's podEphemeralContainersStrategy checks
it (the official Python client against our API server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client import ApiException


@pytest.fixture
def v1(kubeconfig: Path) -> Iterator[client.CoreV1Api]:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.CoreV1Api(api)
    api.close()


@pytest.fixture
def pod(v1: client.CoreV1Api, namespace: str) -> str:
    v1.create_namespaced_pod(namespace, {
        "metadata": {"name": "target", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx"}]}})
    return "target"


def debugger(name: str = "debugger", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox:1.36", "stdin": True, "tty": True,
            "targetContainerName": "web", **fields}


def add(v1: client.CoreV1Api, namespace: str, pod: str, *containers: dict[str, Any]
        ) -> client.V1Pod:
    return v1.patch_namespaced_pod_ephemeralcontainers(
        pod, namespace, {"spec": {"ephemeralContainers": list(containers)}})


def invalid(error: pytest.ExceptionInfo[ApiException]) -> list[str]:
    assert error.value.status == 422, error.value.body
    body = json.loads(error.value.body)
    assert body["reason"] == "Invalid"
    return [f'{c["field"]}: {c["message"]}' for c in body["details"]["causes"]]


def test_an_ephemeral_container_is_added_defaulted_and_nothing_else_changes(
        v1: client.CoreV1Api, namespace: str, pod: str) -> None:
    before = v1.read_namespaced_pod(pod, namespace)
    patch = {"metadata": {"labels": {"app": "changed"}},
             "spec": {"ephemeralContainers": [debugger()],
                      "activeDeadlineSeconds": 30}}
    after = v1.patch_namespaced_pod_ephemeralcontainers(pod, namespace, patch)
    (added,) = after.spec.ephemeral_containers
    assert (added.name, added.target_container_name) == ("debugger", "web")
    assert added.termination_message_policy == "File"
    assert added.image_pull_policy == "IfNotPresent"
    # only spec.ephemeralContainers is taken from the write
    assert after.metadata.labels == {"app": "web"}
    assert after.spec.active_deadline_seconds is None
    assert after.spec.containers == before.spec.containers
    # the subresource reads as the pod
    read = v1.read_namespaced_pod_ephemeralcontainers(pod, namespace)
    assert [c.name for c in read.spec.ephemeral_containers] == ["debugger"]
    # a second one goes next to the first, as kubectl debug's two-way merge patch says
    again = v1.patch_namespaced_pod_ephemeralcontainers(pod, namespace, {"spec": {
        "$setElementOrder/ephemeralContainers": [{"name": "debugger"}, {"name": "second"}],
        "ephemeralContainers": [debugger("second")]}})
    assert [c.name for c in again.spec.ephemeral_containers] == ["debugger", "second"]


def test_what_an_ephemeral_container_may_not_have_is_forbidden(
        v1: client.CoreV1Api, namespace: str, pod: str) -> None:
    with pytest.raises(ApiException) as error:
        add(v1, namespace, pod, debugger(
            ports=[{"containerPort": 80}], readinessProbe={"exec": {"command": ["true"]}},
            resources={"limits": {"cpu": "1"}}))
    assert set(invalid(error)) == {
        f"spec.ephemeralContainers[0].{field}: Forbidden: cannot be set for an Ephemeral "
        "Container" for field in ("ports", "readinessProbe", "resources")}


def test_names_are_unique_across_all_containers_and_the_target_must_exist(
        v1: client.CoreV1Api, namespace: str, pod: str) -> None:
    with pytest.raises(ApiException) as error:
        add(v1, namespace, pod, debugger("web"))
    assert invalid(error) == ['spec.ephemeralContainers[0].name: Duplicate value: "web"']
    with pytest.raises(ApiException) as error:
        add(v1, namespace, pod, debugger(targetContainerName="nope"))
    assert invalid(error) == [
        'spec.ephemeralContainers[0].targetContainerName: Not found: "nope"']


def test_existing_ephemeral_containers_may_not_be_removed_or_changed(
        v1: client.CoreV1Api, namespace: str, pod: str) -> None:
    add(v1, namespace, pod, debugger())
    replaced = v1.read_namespaced_pod(pod, namespace)
    replaced.spec.ephemeral_containers = []
    with pytest.raises(ApiException) as error:
        v1.replace_namespaced_pod_ephemeralcontainers(pod, namespace, replaced)
    assert invalid(error) == ['spec.ephemeralContainers: Forbidden: existing ephemeral '
                              'containers "debugger" may not be removed']
    with pytest.raises(ApiException) as error:
        add(v1, namespace, pod, debugger(image="busybox:1.37"))
    assert invalid(error) == ['spec.ephemeralContainers.debugger: Forbidden: existing '
                              'ephemeral containers "debugger" may not be changed']


def test_a_pod_cannot_get_ephemeral_containers_by_create_or_update(
        v1: client.CoreV1Api, namespace: str, pod: str) -> None:
    with pytest.raises(ApiException) as error:
        v1.create_namespaced_pod(namespace, {
            "metadata": {"name": "born-with-one"},
            "spec": {"containers": [{"name": "web", "image": "nginx"}],
                     "ephemeralContainers": [debugger()]}})
    assert "spec.ephemeralContainers: Forbidden: cannot be set on create" in invalid(error)
    with pytest.raises(ApiException) as error:
        v1.patch_namespaced_pod(pod, namespace,
                                {"spec": {"ephemeralContainers": [debugger()]}})
    assert any("spec: Forbidden: pod updates may not change fields" in cause
               for cause in invalid(error))
