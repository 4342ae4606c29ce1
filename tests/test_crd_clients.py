"""CustomResourceDefinitions through the official `kubernetes` client (its pydantic models
check every answer's shape), and real-world definitions applied with kubectl
--server-side: Gateway API's standard install and its examples. Mirrors upstream's
custom_resource_definition.go cases for creating, listing, the status subresource and
deletecollection of definitions, and crd_watch.go's watch of custom resources."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.api_helpers import official_crd_clients, served, until
from tests.conftest import module_own_apiserver
from tests.test_crd import definition

etcd, apiserver, kubeconfig = module_own_apiserver("crd-clients")
api_client, extensions, custom = official_crd_clients()

# ../shared/data/crds from the checkout: /work/main's parent, or a worktree's ancestor
CRDS = next((parent / "shared/data/crds" for parent in Path(__file__).resolve().parents
             if (parent / "shared/data/crds").is_dir()), None)


def established(extensions: client.ApiextensionsV1Api, name: str
                ) -> client.V1CustomResourceDefinition:
    def check() -> client.V1CustomResourceDefinition | None:
        crd = extensions.read_custom_resource_definition(name)
        return crd if any(c.type == "Established" and c.status == "True"
                          for c in crd.status.conditions or []) else None

    return until(check, f"{name} Established")


def serving(custom: client.CustomObjectsApi, group: str, plural: str) -> None:
    until(lambda: served(custom, group, plural, "v1"), f"{plural}.{group} served")


def test_definitions_are_created_listed_by_label_and_deleted_as_a_collection(
        extensions: client.ApiextensionsV1Api) -> None:
    """custom_resource_definition.go: "creating/deleting custom resource definition
    objects works" and "listing custom resource definition objects works"."""
    label = f"e2e-list-test-{uuid.uuid4().hex[:6]}"
    created_specs = {}
    for _ in range(10):
        crd = definition(f"g{uuid.uuid4().hex[:8]}.example.com")
        crd["metadata"]["labels"] = {label: "true"}
        created = extensions.create_custom_resource_definition(crd)
        created_specs[created.metadata.name] = created.spec.to_dict()
    # one without the label: the selector must leave it out, and the collection delete too
    unlabeled = extensions.create_custom_resource_definition(
        definition(f"g{uuid.uuid4().hex[:8]}.example.com")).metadata.name
    listed = extensions.list_custom_resource_definition(label_selector=f"{label}=true")
    assert {item.metadata.name: item.spec.to_dict() for item in listed.items} == created_specs
    extensions.delete_collection_custom_resource_definition(label_selector=f"{label}=true")

    def all_gone() -> bool:
        return not extensions.list_custom_resource_definition(
            label_selector=f"{label}=true").items

    until(all_gone, "the definitions deleted")
    assert extensions.read_custom_resource_definition(unlabeled).metadata.name == unlabeled
    extensions.delete_custom_resource_definition(unlabeled)


def test_the_status_subresource_of_a_definition(extensions: client.ApiextensionsV1Api
                                                ) -> None:
    """custom_resource_definition.go: "getting/updating/patching custom resource
    definition status sub-resource works"."""
    crd = definition(f"g{uuid.uuid4().hex[:8]}.example.com")
    name = crd["metadata"]["name"]
    extensions.create_custom_resource_definition(crd)
    current = established(extensions, name)
    got = extensions.read_custom_resource_definition_status(name)
    assert got.status.accepted_names.kind == "Widget"
    current.status.conditions.append(client.V1CustomResourceDefinitionCondition(
        type="StatusUpdated", status="True", reason="E2E", message="Set from e2e test"))
    updated = extensions.replace_custom_resource_definition_status(name, current)
    assert any(c.type == "StatusUpdated" for c in updated.status.conditions)
    patched = extensions.patch_custom_resource_definition_status(name, {"status": {
        "conditions": [*[c.to_dict() for c in updated.status.conditions
                         if c.type != "StatusUpdated"],
                       {"type": "StatusPatched", "status": "True", "reason": "E2E",
                        "message": "Set from e2e test"}]}})
    assert {c.type for c in patched.status.conditions} >= {"StatusPatched", "Established"}
    # upstream's own patch: a JSON patch of /status replacing the conditions
    replaced = extensions.patch_custom_resource_definition_status(name, [
        {"op": "add", "path": "/status/conditions",
         "value": [{"type": "Patched", "status": "True", "message": "patched"}]}])
    assert [(c.type, c.message) for c in replaced.status.conditions] == [
        ("Patched", "patched")]
    # a /status write cannot change the spec
    current = extensions.read_custom_resource_definition(name)
    current.spec.names.short_names = ["changed"]
    unchanged = extensions.replace_custom_resource_definition_status(name, current)
    assert unchanged.spec.names.short_names is None
    extensions.delete_custom_resource_definition(name)


def test_custom_objects_through_the_official_client(
        extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi) -> None:
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    extensions.create_custom_resource_definition(definition(
        group, subresources={"status": {}}))
    established(extensions, f"widgets.{group}")
    serving(custom, group, "widgets")
    body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"color": "red"}}
    created = custom.create_namespaced_custom_object(group, "v1", "default", "widgets", body)
    assert created["spec"] == {"color": "red", "size": 3}
    patched = custom.patch_namespaced_custom_object_status(
        group, "v1", "default", "widgets", "w", {"status": {"replicas": 2}})
    assert patched["status"] == {"replicas": 2}
    listed = custom.list_namespaced_custom_object(group, "v1", "default", "widgets")
    assert [item["metadata"]["name"] for item in listed["items"]] == ["w"]
    custom.delete_namespaced_custom_object(group, "v1", "default", "widgets", "w")
    with pytest.raises(ApiException) as missing:
        custom.get_namespaced_custom_object(group, "v1", "default", "widgets", "w")
    assert missing.value.status == 404


def test_a_watch_of_custom_objects_through_the_official_client(
        extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi) -> None:
    """crd_watch.go: a watch sees a custom resource added, modified and deleted."""
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    extensions.create_custom_resource_definition(definition(group, scope="Cluster"))
    established(extensions, f"widgets.{group}")
    serving(custom, group, "widgets")
    version = custom.list_cluster_custom_object(group, "v1", "widgets")["metadata"][
        "resourceVersion"]
    body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "name1"},
            "spec": {}}
    custom.create_cluster_custom_object(group, "v1", "widgets", body)
    custom.patch_cluster_custom_object(group, "v1", "widgets", "name1",
                                       {"spec": {"color": "blue"}})
    custom.delete_cluster_custom_object(group, "v1", "widgets", "name1")
    seen = []
    for event in watch.Watch().stream(custom.list_cluster_custom_object, group, "v1",
                                      "widgets", resource_version=version,
                                      timeout_seconds=30):
        seen.append((event["type"], event["object"]["metadata"]["name"]))
        if event["type"] == "DELETED":
            break
    assert seen == [("ADDED", "name1"), ("MODIFIED", "name1"), ("DELETED", "name1")]


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds")
def test_gateway_api_standard_install_is_established_and_its_examples_apply(
        kubeconfig: Path) -> None:
    """Gateway API v1.6.1's standard CRDs, applied with kubectl --server-side, become
    Established, and every example of the project applies. Their CEL rules
    (x-kubernetes-validations) are not evaluated yet, so this does not show that
    invalid objects are refused."""
    assert CRDS is not None
    kubectl = [str(Path(sys.executable).with_name("kubectl")),
               f"--kubeconfig={kubeconfig}"]
    files = sorted((CRDS / "gateway-api").glob("gateway.networking.k8s.io_*.yaml"))
    crd_files = [f for f in files if "_vap_" not in f.name]  # the VAP is not served yet
    for path in crd_files:
        result = subprocess.run([*kubectl, "apply", "--server-side", "-f", str(path)],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
    result = subprocess.run(
        [*kubectl, "wait", "--for=condition=Established", "--timeout=60s",
         *(f"crd/{p.name.removesuffix('.yaml').split('_', 1)[1]}.gateway.networking.k8s.io"
           for p in crd_files)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    examples = sorted((CRDS / "gateway-api" / "examples").glob("*.yaml"))
    assert examples
    for path in examples:
        for _ in range(100):  # until its kinds show in kubectl's discovery
            result = subprocess.run([*kubectl, "apply", "--server-side", "-f", str(path)],
                                    capture_output=True, text=True, timeout=120)
            if "no matches for kind" not in result.stderr:
                break
            time.sleep(0.1)
        assert result.returncode == 0, f"{path.name}: {result.stderr}"
    listed = subprocess.run([*kubectl, "get", "gateways.gateway.networking.k8s.io", "-A",
                             "-o", "name"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "gateway.gateway.networking.k8s.io/" in listed.stdout


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds")
def test_cert_manager_crds_are_established(kubeconfig: Path) -> None:
    """cert-manager's CRDs (printer columns, categories, shortNames, selectableFields),
    applied with kubectl --server-side, become Established and are listed."""
    assert CRDS is not None
    kubectl = [str(Path(sys.executable).with_name("kubectl")), f"--kubeconfig={kubeconfig}"]
    result = subprocess.run([*kubectl, "apply", "--server-side", "-f",
                             str(CRDS / "cert-manager")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    names = [f"crd/{p.name.removesuffix('.yaml').split('_', 1)[1]}.{p.name.split('_')[0]}"
             for p in sorted((CRDS / "cert-manager").glob("*.yaml"))]
    result = subprocess.run([*kubectl, "wait", "--for=condition=Established",
                             "--timeout=60s", *names], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    for _ in range(100):  # until kubectl's discovery has the new kinds
        listed = subprocess.run([*kubectl, "get", "certificates.cert-manager.io", "-A"],
                                capture_output=True, text=True, timeout=60)
        if listed.returncode == 0:
            break
        time.sleep(0.1)
    assert listed.returncode == 0, listed.stderr
