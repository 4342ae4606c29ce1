"""Server-side apply against the real API server: raw HTTP, the official Python client and
kubectl 1.37's `apply --server-side`.

What upstream does is the specification: PATCH with application/apply-patch+yaml creates
or merges, `metadata.managedFields` records who owns which field (FieldsV1), a field
another manager owns with another value is a 409 unless forced, and writes by other
means are recorded as "Update" entries once an object is tracked.
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from kubernetes import config, dynamic

from minikube_py.api import Obj
from minikube_py.apiserver.storage.etcd import EtcdClient, prefix_end
from minikube_py.cluster.apiserver import APIServerProcess
from tests.api_helpers import API, configmap

Kubectl = Callable[..., subprocess.CompletedProcess[str]]
APPLY = "application/apply-patch+yaml"


@pytest.fixture
async def api(apiserver: APIServerProcess) -> AsyncIterator[API]:
    async with aiohttp.ClientSession() as session:
        yield API(session, apiserver.url)


async def apply(api: API, path: str, body: Obj | bytes, manager: str | None = "tool",
                **query: str) -> tuple[int, Any]:
    """PATCH an applied configuration (JSON, or bytes as they are) to `path`."""
    params = {**({"fieldManager": manager} if manager else {}), **query}
    suffix = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
    return await api.request("PATCH", path + suffix, body, content_type=APPLY)


def owners(obj: Obj) -> dict[tuple[str, str], Obj]:
    """managedFields by (manager, operation)."""
    return {(e["manager"], e["operation"]): e
            for e in obj["metadata"].get("managedFields", [])}


def cm_path(namespace: str, name: str = "cfg") -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps/{name}"


def deployment(name: str = "web", replicas: int = 1) -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                     {"name": "app", "image": "busybox:1.36"}]}}},
    }


# --- raw HTTP ----------------------------------------------------------------------------


async def test_apply_creates_a_missing_object_owned_by_its_manager(api: API,
                                                                  namespace: str) -> None:
    status, created = await apply(api, cm_path(namespace), configmap("cfg", {"a": "1"}))

    assert status == 201, created
    assert created["data"] == {"a": "1"} and created["metadata"]["uid"]
    [entry] = created["metadata"]["managedFields"]
    assert entry["manager"] == "tool" and entry["operation"] == "Apply"
    assert entry["apiVersion"] == "v1" and entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"] == {"f:data": {"f:a": {}}}
    status, stored = await api.get(cm_path(namespace))
    assert status == 200 and stored["metadata"]["managedFields"] == [entry]


async def test_apply_accepts_a_yaml_body(api: API, namespace: str) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: '1'\n"

    status, created = await apply(api, cm_path(namespace), body)

    assert status == 201, created
    assert created["data"] == {"a": "1"}


async def test_applying_again_merges_and_removes_what_the_manager_stopped_applying(
        api: API, namespace: str) -> None:
    await apply(api, cm_path(namespace), configmap("cfg", {"a": "1", "b": "2"}, {"x": "1"}))

    status, applied = await apply(api, cm_path(namespace), configmap("cfg", {"a": "changed"}))

    assert status == 200, applied
    assert applied["data"] == {"a": "changed"}
    assert "labels" not in applied["metadata"]
    assert owners(applied)[("tool", "Apply")]["fieldsV1"] == {"f:data": {"f:a": {}}}


async def test_applying_the_same_configuration_twice_writes_once(api: API,
                                                                 namespace: str) -> None:
    _, first = await apply(api, cm_path(namespace), configmap("cfg", {"a": "1"}))
    status, second = await apply(api, cm_path(namespace), configmap("cfg", {"a": "1"}))

    assert status == 200
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


async def test_another_managers_field_with_another_value_is_a_409_unless_forced(
        api: API, namespace: str) -> None:
    await apply(api, cm_path(namespace), configmap("cfg", {"a": "1", "b": "2"}), "alice")

    status, refused = await apply(api, cm_path(namespace), configmap("cfg", {"a": "bob's"}),
                                  "bob")

    assert status == 409, refused
    assert refused["reason"] == "Conflict"
    assert refused["message"] == 'Apply failed with 1 conflict: conflict with "alice": .data.a'
    assert refused["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                             "message": 'conflict with "alice"',
                                             "field": ".data.a"}]

    status, forced = await apply(api, cm_path(namespace), configmap("cfg", {"a": "bob's"}),
                                 "bob", force="true")

    assert status == 200, forced
    assert forced["data"] == {"a": "bob's", "b": "2"}
    assert owners(forced)[("alice", "Apply")]["fieldsV1"] == {"f:data": {"f:b": {}}}
    assert owners(forced)[("bob", "Apply")]["fieldsV1"] == {"f:data": {"f:a": {}}}


async def test_the_same_value_from_two_managers_is_shared_ownership(api: API,
                                                                    namespace: str) -> None:
    await apply(api, cm_path(namespace), configmap("cfg", {"a": "1"}), "alice")

    status, shared = await apply(api, cm_path(namespace), configmap("cfg", {"a": "1"}), "bob")

    assert status == 200, shared
    assert set(owners(shared)) == {("alice", "Apply"), ("bob", "Apply")}


async def test_a_write_after_apply_is_an_update_entry_that_takes_the_field(
        api: API, namespace: str) -> None:
    await apply(api, cm_path(namespace), configmap("cfg", {"a": "1", "b": "2"}))

    status, patched = await api.patch(cm_path(namespace) + "?fieldManager=editor",
                                      {"data": {"a": "edited"}})

    assert status == 200, patched
    update = owners(patched)[("editor", "Update")]
    assert update["fieldsV1"] == {"f:data": {"f:a": {}}} and update["apiVersion"] == "v1"
    assert owners(patched)[("tool", "Apply")]["fieldsV1"] == {"f:data": {"f:b": {}}}
    status, refused = await apply(api, cm_path(namespace), configmap("cfg", {"a": "1",
                                                                             "b": "2"}))
    assert status == 409
    assert refused["message"] == ('Apply failed with 1 conflict: conflict with "editor" using '
                                  "v1: .data.a")


async def test_the_default_manager_is_the_user_agent_up_to_its_first_slash(
        api: API, namespace: str) -> None:
    _, applied = await apply(api, cm_path(namespace), configmap("cfg", {"a": "1"}))
    put = copy.deepcopy(applied)
    put["data"]["a"] = "2"

    status, updated = await api.put(cm_path(namespace), put,
                                    headers={"User-Agent": "my-tool/1.2 (linux)"})

    assert status == 200, updated
    assert ("my-tool", "Update") in owners(updated)


async def test_objects_never_applied_keep_no_managed_fields(api: API, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    status, created = await api.post(path + "?fieldManager=creator", configmap("plain"))
    assert status == 201 and "managedFields" not in created["metadata"]

    _, patched = await api.patch(cm_path(namespace, "plain"), {"data": {"a": "1"}})
    _, updated = await api.put(cm_path(namespace, "plain"), patched)

    assert "managedFields" not in patched["metadata"]
    assert "managedFields" not in updated["metadata"]


async def test_a_created_object_that_carries_managed_fields_is_tracked(
        api: API, namespace: str) -> None:
    body = configmap("copied", {"a": "1", "b": "2"})
    body["metadata"]["managedFields"] = [{
        "manager": "elsewhere", "operation": "Apply", "apiVersion": "v1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]

    status, created = await api.post(
        f"/api/v1/namespaces/{namespace}/configmaps?fieldManager=restore", body)

    assert status == 201, created
    # Everything a create writes is new, so the creator takes it all (as upstream).
    assert list(owners(created)) == [("restore", "Update")]
    assert owners(created)[("restore", "Update")]["fieldsV1"] == {"f:data": {
        ".": {}, "f:a": {}, "f:b": {}}}


async def test_applying_a_service_twice_matches_ports_by_port_and_defaulted_protocol(
        api: API, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/services/web"
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"selector": {"app": "web"},
                        "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}
    _, created = await apply(api, path, service)
    service["spec"]["ports"][0]["targetPort"] = 9090

    status, applied = await apply(api, path, service)

    assert status == 200, applied
    assert applied["spec"]["ports"] == [
        {"name": "http", "port": 80, "targetPort": 9090, "protocol": "TCP"}]
    assert applied["spec"]["clusterIP"] == created["spec"]["clusterIP"]
    fields = owners(applied)[("tool", "Apply")]["fieldsV1"]["f:spec"]
    assert fields == {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {
        ".": {}, "f:name": {}, "f:port": {}, "f:targetPort": {}}}, "f:selector": {}}


async def test_managed_fields_are_cleared_by_writing_one_empty_entry(
        api: API, namespace: str) -> None:
    await apply(api, cm_path(namespace), configmap("cfg", {"a": "1"}))

    status, cleared = await api.patch(cm_path(namespace), {"metadata": {"managedFields": [{}]}})

    assert status == 200, cleared
    assert "managedFields" not in cleared["metadata"]
    assert cleared["data"] == {"a": "1"}


async def test_dry_run_apply_answers_the_result_and_writes_nothing(
        api: API, namespace: str, etcd_client: EtcdClient) -> None:
    await apply(api, cm_path(namespace), configmap("cfg", {"a": "1"}))
    before = await etcd_client.range(b"/registry/", prefix_end(b"/registry/"), keys_only=True)

    status, answered = await apply(api, cm_path(namespace), configmap("cfg", {"a": "2"}),
                                   dryRun="All")
    created_status, created = await apply(api, cm_path(namespace, "new"),
                                          configmap("new", {"a": "1"}), dryRun="All")

    assert (status, answered["data"]) == (200, {"a": "2"})
    assert (created_status, created["metadata"]["name"]) == (201, "new")
    after = await etcd_client.range(b"/registry/", prefix_end(b"/registry/"), keys_only=True)
    assert after.revision == before.revision
    assert (await api.get(cm_path(namespace, "new")))[0] == 404


async def test_apply_to_status_owns_only_status_and_needs_the_object(api: API,
                                                                     namespace: str) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    await apply(api, path, deployment())
    status_config = {"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": "web"}, "spec": {"replicas": 5},
                     "status": {"observedGeneration": 1}}

    status, applied = await apply(api, path + "/status", status_config, "controller")

    assert status == 200, applied
    assert applied["status"]["observedGeneration"] == 1 and applied["spec"]["replicas"] == 1
    entry = owners(applied)[("controller", "Apply")]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:observedGeneration": {}}}
    missing = await apply(api, f"/apis/apps/v1/namespaces/{namespace}/deployments/none/status",
                          {**status_config, "metadata": {"name": "none"}}, "controller")
    assert missing[0] == 404


async def test_kubectl_scale_style_write_through_scale_is_an_update_with_subresource(
        api: API, namespace: str) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    await apply(api, path, deployment(replicas=2))

    status, _ = await api.patch(path + "/scale", {"spec": {"replicas": 4}},
                                headers={"User-Agent": "kubectl/v1.37.1 (linux/amd64)"})
    assert status == 200
    _, scaled = await api.get(path)

    entry = owners(scaled)[("kubectl", "Update")]
    assert entry["subresource"] == "scale" and entry["apiVersion"] == "apps/v1"
    assert entry["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    status, refused = await apply(api, path, deployment(replicas=3))
    assert status == 409
    assert refused["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
        "using apps/v1: .spec.replicas")


async def test_force_on_a_patch_that_is_not_an_apply_is_invalid(api: API,
                                                                namespace: str) -> None:
    await apply(api, cm_path(namespace), configmap("cfg", {"a": "1"}))

    status, refused = await api.patch(cm_path(namespace) + "?force=true", {"data": {"a": "2"}})

    assert status == 422
    assert refused["message"] == ('PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: '
                                  "may not be specified for non-apply patch")


# --- the official Python client ----------------------------------------------------------


def test_python_client_server_side_apply_of_a_configmap_twice(kubeconfig: Path,
                                                               namespace: str,
                                                               tmp_path: Path) -> None:
    # its discovery cache in the test's folder (by default a file in /tmp that stays)
    client = dynamic.DynamicClient(config.new_client_from_config(config_file=str(kubeconfig)),
                                   cache_file=str(tmp_path / "discovery.json"))
    configmaps = client.resources.get(api_version="v1", kind="ConfigMap")
    body = configmap("settings", {"color": "blue"})

    first = configmaps.server_side_apply(body=body, namespace=namespace, field_manager="lab")
    body["data"] = {"color": "green", "size": "large"}
    second = configmaps.server_side_apply(body=body, namespace=namespace, field_manager="lab")

    assert first.data.color == "blue"
    applied = second.to_dict()
    assert applied["data"] == {"color": "green", "size": "large"}
    [entry] = applied["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("lab", "Apply")
    assert entry["fieldsV1"] == {"f:data": {"f:color": {}, "f:size": {}}}


# --- kubectl apply --server-side ---------------------------------------------------------

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
    tier: frontend
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: {image}
        ports:
        - containerPort: 80
"""


def server_side_apply(kubectl: Kubectl, namespace: str, manifest: str, *flags: str,
                      check: bool = True) -> subprocess.CompletedProcess[str]:
    return kubectl("apply", "--server-side", *flags, "-n", namespace, "-f", "-",
                   input=manifest, check=check)


def deployment_yaml(kubectl: Kubectl, namespace: str, *flags: str) -> Obj:
    return yaml.safe_load(kubectl("get", "-n", namespace, "deployment", "web", "-o", "yaml",
                                  *flags).stdout)


def test_kubectl_server_side_apply_creates_then_updates_a_deployment(
        kubectl: Kubectl, namespace: str) -> None:
    created = server_side_apply(kubectl, namespace, WEB.format(replicas=2, image="nginx:1.25"))
    assert created.stdout.strip() == "deployment.apps/web serverside-applied"

    server_side_apply(kubectl, namespace, WEB.format(replicas=2, image="nginx:1.26"))

    web = deployment_yaml(kubectl, namespace, "--show-managed-fields")
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    [entry] = web["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl", "Apply")
    container = entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"][
        'k:{"name":"nginx"}']
    assert container["f:ports"] == {'k:{"containerPort":80,"protocol":"TCP"}': {
        ".": {}, "f:containerPort": {}}}
    assert entry["fieldsV1"]["f:spec"]["f:selector"] == {}


def test_kubectl_get_hides_managed_fields_unless_asked(kubectl: Kubectl, namespace: str) -> None:
    server_side_apply(kubectl, namespace, WEB.format(replicas=2, image="nginx:1.25"))

    assert "managedFields" not in deployment_yaml(kubectl, namespace)["metadata"]
    assert "managedFields" in deployment_yaml(kubectl, namespace,
                                              "--show-managed-fields")["metadata"]


def test_kubectl_scale_then_apply_of_other_replicas_conflicts_until_forced(
        kubectl: Kubectl, namespace: str) -> None:
    server_side_apply(kubectl, namespace, WEB.format(replicas=2, image="nginx:1.25"))
    kubectl("scale", "-n", namespace, "deployment/web", "--replicas=5")

    refused = server_side_apply(kubectl, namespace, WEB.format(replicas=3, image="nginx:1.25"),
                                check=False)

    assert refused.returncode != 0
    assert ('Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
            "using apps/v1: .spec.replicas") in refused.stderr
    assert deployment_yaml(kubectl, namespace)["spec"]["replicas"] == 5

    server_side_apply(kubectl, namespace, WEB.format(replicas=3, image="nginx:1.25"),
                      "--force-conflicts")

    web = deployment_yaml(kubectl, namespace, "--show-managed-fields")
    assert web["spec"]["replicas"] == 3
    assert [(e["manager"], e["operation"]) for e in web["metadata"]["managedFields"]] == [
        ("kubectl", "Apply")]


def test_kubectl_server_side_apply_removes_a_label_dropped_from_the_file(
        kubectl: Kubectl, namespace: str) -> None:
    server_side_apply(kubectl, namespace, WEB.format(replicas=2, image="nginx:1.25"))

    server_side_apply(kubectl, namespace, WEB.format(replicas=2, image="nginx:1.25").replace(
        "    tier: frontend\n", ""))

    assert deployment_yaml(kubectl, namespace)["metadata"]["labels"] == {"app": "web"}
