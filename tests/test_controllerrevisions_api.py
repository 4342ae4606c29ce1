"""apps/v1 ControllerRevisions through the real kubectl and the official Python client: the
data is required and immutable, the revision number a non-negative integer that may
change, and `kubectl get controllerrevisions` prints upstream's CONTROLLER and REVISION
columns."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client import ApiException

from minikube_py.apiserver.registry.store import MAX_OBJECT_DEPTH

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
DATA = {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": "x"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


@pytest.fixture
def apps(kubeconfig: Path) -> Iterator[client.AppsV1Api]:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.AppsV1Api(api)
    api.close()


def revision(name: str, number: int, **metadata: object) -> dict[str, object]:
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": name, **metadata}, "data": DATA, "revision": number}


def test_python_client_creates_lists_and_renumbers_a_revision(
        apps: client.AppsV1Api, namespace: str) -> None:
    apps.create_namespaced_controller_revision(namespace, revision("web-1", 1))
    read = apps.read_namespaced_controller_revision("web-1", namespace)
    assert read.revision == 1 and read.data == DATA
    assert read.metadata.generation is None

    renumbered = apps.patch_namespaced_controller_revision(
        "web-1", namespace, {"revision": 3})
    assert renumbered.revision == 3
    listed = apps.list_namespaced_controller_revision(namespace)
    assert [(item.metadata.name, item.revision) for item in listed.items] == [("web-1", 3)]


def test_a_revision_without_data_or_with_a_negative_number_is_refused(
        kubectl: Kubectl, apps: client.AppsV1Api, namespace: str) -> None:
    without_data = kubectl("create", "-n", namespace, "-f", "-", check=False, input=json.dumps(
        {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "bad"},
         "revision": 1}))
    assert without_data.returncode == 1
    assert without_data.stderr == (
        'The ControllerRevision "bad" is invalid: data: Required value: data is mandatory\n')
    with pytest.raises(ApiException) as refused:
        apps.create_namespaced_controller_revision(namespace, revision("bad", -1))
    status = json.loads(refused.value.body)
    assert refused.value.status == 422 and status["reason"] == "Invalid"
    assert [(cause["reason"], cause["field"], cause["message"])
            for cause in status["details"]["causes"]] == [
        ("FieldValueInvalid", "revision",
         "Invalid value: -1: must be greater than or equal to 0")]
    assert apps.list_namespaced_controller_revision(namespace).items == []


def test_the_data_never_changes(apps: client.AppsV1Api, namespace: str) -> None:
    apps.create_namespaced_controller_revision(namespace, revision("web-1", 1))
    with pytest.raises(ApiException) as refused:
        apps.patch_namespaced_controller_revision(
            "web-1", namespace, {"data": {"status": {}}})
    status = json.loads(refused.value.body)
    assert refused.value.status == 422
    assert [(cause["field"], cause["message"].rsplit(": ", 1)[-1])
            for cause in status["details"]["causes"]] == [("data", "field is immutable")]
    assert apps.read_namespaced_controller_revision("web-1", namespace).data == DATA


def test_kubectl_get_prints_the_controller_and_the_revision(
        kubectl: Kubectl, apps: client.AppsV1Api, namespace: str) -> None:
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
             "uid": "8b1f3c4e-0000-4000-8000-000000000001", "controller": True}
    apps.create_namespaced_controller_revision(
        namespace, revision("agent-5d8f", 2, ownerReferences=[owner]))
    apps.create_namespaced_controller_revision(namespace, revision("loose", 7))

    printed = kubectl("get", "controllerrevisions", "-n", namespace).stdout
    rows = [re.split(r"\s{2,}", line.strip())[:-1] for line in printed.strip().splitlines()]
    assert rows == [["NAME", "CONTROLLER", "REVISION"],
                    ["agent-5d8f", "daemonset.apps/agent", "2"], ["loose", "<none>", "7"]]
    resources = kubectl("api-resources", "--api-group=apps", "--no-headers").stdout
    assert re.search(r"^controllerrevisions\s+apps/v1\s+true\s+ControllerRevision$",
                     resources, re.MULTILINE)


def nested_data(levels: int) -> dict[str, object]:
    """Data that, as a revision's, makes the object `levels` objects deep (the revision
    itself is one level, its data the next)."""
    data: dict[str, object] = {}
    for _ in range(levels - 2):
        data = {"a": data}
    return data


def test_data_nested_past_what_the_server_stores_is_a_400_and_the_deepest_reads_back(
        kubectl: Kubectl, apps: client.AppsV1Api, namespace: str) -> None:
    """A body nested deeper than the API server can write back (orjson, its encoder, stops
    at 254 levels; it reads 1,024) is refused before anything is stored; the deepest it
    keeps reads back through a get, a list and a watch event."""
    with pytest.raises(ApiException) as refused:
        apps.create_namespaced_controller_revision(namespace, {
            **revision("too-deep", 1), "data": nested_data(MAX_OBJECT_DEPTH + 1)})
    status = json.loads(refused.value.body)
    assert (refused.value.status, status["reason"], status["message"]) == (
        400, "BadRequest", f"the object is nested more than {MAX_OBJECT_DEPTH} levels deep, "
                           "the most this API server stores")
    assert apps.list_namespaced_controller_revision(namespace).items == []

    deepest = nested_data(MAX_OBJECT_DEPTH)
    apps.create_namespaced_controller_revision(namespace, {**revision("deep", 1),
                                                           "data": deepest})
    assert apps.read_namespaced_controller_revision("deep", namespace).data == deepest
    listed = json.loads(kubectl("get", "controllerrevisions", "-n", namespace,
                                "-o", "json").stdout)
    assert [item["data"] for item in listed["items"]] == [deepest]
    events = watch.Watch().stream(apps.list_namespaced_controller_revision, namespace,
                                  timeout_seconds=30, _preload_content=False)
    first = next(events)
    events.close()
    assert (first["type"], first["raw_object"]["data"]) == ("ADDED", deepest)
    with pytest.raises(ApiException) as deeper:
        apps.patch_namespaced_controller_revision(
            "deep", namespace, {"data": nested_data(MAX_OBJECT_DEPTH + 1)})
    assert deeper.value.status == 400
    assert apps.read_namespaced_controller_revision("deep", namespace).data == deepest
