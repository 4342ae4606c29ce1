"""CustomResourceDefinitions through the official `kubernetes` client (its pydantic models
check every answer's shape), custom resources as etcd holds them, and the real-world
definitions of ../shared/data/crds applied with kubectl --server-side: Gateway API's
standard install and its examples, cert-manager's and prometheus-operator's CRDs, each
with a valid object accepted and an invalid one refused. Mirrors upstream's
custom_resource_definition.go cases for creating, listing, the status subresource and
deletecollection of definitions, and crd_watch.go's watch of custom resources."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from minikube_py.apiserver.storage.etcd import EtcdClient
from tests.api_helpers import official_crd_clients, retry_on_conflict, served, until
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
    # a /status write cannot change the spec. The controllers write the conditions the
    # patch above took away back (NamesAccepted, Established) meanwhile: read, change
    # and write again on a conflict, as a client does (retry.RetryOnConflict)
    def change_short_names() -> client.V1CustomResourceDefinition:
        current = extensions.read_custom_resource_definition(name)
        current.spec.names.short_names = ["changed"]
        return extensions.replace_custom_resource_definition_status(name, current)

    unchanged = retry_on_conflict(change_short_names)
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


async def test_custom_resources_are_stored_under_their_group_and_plural(
        extensions: client.ApiextensionsV1Api, custom: client.CustomObjectsApi,
        etcd_client: EtcdClient) -> None:
    """A custom resource's etcd key is /registry/<group>/<plural>/<namespace>/<name>
    (cluster-scoped: without the namespace), as apiextensions-apiserver stores it, and
    its value is the object as served."""
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    extensions.create_custom_resource_definition(definition(group))
    extensions.create_custom_resource_definition(definition(
        group, "gadgets", "Gadget", scope="Cluster"))
    established(extensions, f"widgets.{group}")
    established(extensions, f"gadgets.{group}")
    serving(custom, group, "widgets")
    serving(custom, group, "gadgets")
    widget = custom.create_namespaced_custom_object(group, "v1", "default", "widgets", {
        "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"},
        "spec": {"color": "blue"}})
    gadget = custom.create_cluster_custom_object(group, "v1", "gadgets", {
        "apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g1"},
        "spec": {}})
    stored = await etcd_client.get(f"/registry/{group}/widgets/default/w1".encode())
    assert stored is not None
    assert orjson.loads(stored.value)["spec"] == widget["spec"] == {"color": "blue", "size": 3}
    assert str(stored.mod_revision) == widget["metadata"]["resourceVersion"]
    stored = await etcd_client.get(f"/registry/{group}/gadgets/g1".encode())
    assert stored is not None
    assert orjson.loads(stored.value)["metadata"]["uid"] == gadget["metadata"]["uid"]


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


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    """The real kubectl against the module's API server."""
    return subprocess.run([str(Path(sys.executable).with_name("kubectl")),
                           f"--kubeconfig={kubeconfig}", *args], input=stdin,
                          capture_output=True, text=True, timeout=180)


def install(kubeconfig: Path, folder: Path) -> None:
    """A project's CRDs (every YAML file of the folder), applied with kubectl
    --server-side as the project's install guide says; waits until each is Established."""
    result = kubectl(kubeconfig, "apply", "--server-side", "-f", str(folder))
    assert result.returncode == 0, result.stderr
    names = [line.split()[0] for line in result.stdout.splitlines()
             if line.startswith("customresourcedefinition.apiextensions.k8s.io/")]
    assert len(names) == len([p for p in folder.glob("*_*.yaml") if "_vap_" not in p.name])
    result = kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
                     *names)
    assert result.returncode == 0, result.stderr


def created(kubeconfig: Path, manifest: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """kubectl create of one object, retried while kubectl's discovery lacks its kind."""
    for _ in range(100):
        result = kubectl(kubeconfig, "create", "-f", "-", stdin=json.dumps(manifest))
        if "ensure CRDs are installed first" not in result.stderr and \
                "no matches for kind" not in result.stderr:
            return result
        time.sleep(0.1)
    return result


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds")
def test_gateway_api_standard_install_is_established_and_its_examples_apply(
        kubeconfig: Path) -> None:
    """Gateway API v1.6.1's standard install (its CRDs and its ValidatingAdmissionPolicy),
    applied with kubectl --server-side, becomes Established; every example of the project
    applies, and an HTTPRoute the CRD's CEL rules forbid is refused with the rule's
    message."""
    assert CRDS is not None
    install(kubeconfig, CRDS / "gateway-api")
    examples = CRDS / "gateway-api" / "examples"
    assert list(examples.glob("*.yaml"))
    for _ in range(100):  # until its kinds show in kubectl's discovery
        result = kubectl(kubeconfig, "apply", "--server-side", "-f", str(examples))
        if "no matches for kind" not in result.stderr:
            break
        time.sleep(0.1)
    assert result.returncode == 0, result.stderr
    listed = kubectl(kubeconfig, "get", "gateways.gateway.networking.k8s.io", "-A",
                     "-o", "name")
    assert listed.returncode == 0 and "gateway.gateway.networking.k8s.io/" in listed.stdout
    route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
             "metadata": {"name": "twice", "namespace": "default"},
             "spec": {"parentRefs": [{"name": "gw"}, {"name": "gw"}],
                      "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]}}
    refused = created(kubeconfig, route)
    assert refused.returncode != 0
    assert ('The HTTPRoute "twice" is invalid: spec.parentRefs: Invalid value: "array": '
            "sectionName must be unique when parentRefs includes 2 or more references to "
            "the same parent") in refused.stderr
    route["spec"]["parentRefs"][1]["sectionName"] = "https"
    route["spec"]["parentRefs"][0]["sectionName"] = "http"
    assert created(kubeconfig, route).returncode == 0


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds")
def test_cert_manager_crds_are_established_and_validate_certificates(
        kubeconfig: Path) -> None:
    """cert-manager's CRDs (printer columns, categories, shortNames, selectableFields),
    applied with kubectl --server-side, become Established; a Certificate as cert-manager's
    docs write one is accepted, and one with a private key algorithm outside the schema's
    enum (DSA) is refused with the schema's values."""
    assert CRDS is not None
    install(kubeconfig, CRDS / "cert-manager")
    certificate = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                   "metadata": {"name": "example-com", "namespace": "default"},
                   "spec": {"secretName": "example-com-tls", "dnsNames": ["example.com"],
                            "issuerRef": {"name": "ca-issuer", "kind": "Issuer"},
                            "privateKey": {"algorithm": "ECDSA", "size": 256}}}
    accepted = created(kubeconfig, certificate)
    assert accepted.returncode == 0, accepted.stderr
    listed = kubectl(kubeconfig, "get", "certificates.cert-manager.io", "-A")
    assert listed.returncode == 0 and "example-com" in listed.stdout, listed.stderr
    certificate["metadata"]["name"] = "dsa"
    certificate["spec"]["privateKey"]["algorithm"] = "DSA"
    refused = created(kubeconfig, certificate)
    assert refused.returncode != 0
    assert ('The Certificate "dsa" is invalid: spec.privateKey.algorithm: Unsupported '
            'value: "DSA": supported values: "RSA", "ECDSA", "Ed25519"') in refused.stderr


@pytest.mark.skipif(CRDS is None, reason="no ../shared/data/crds")
def test_prometheus_operator_crds_are_established_and_validate_service_monitors(
        kubeconfig: Path) -> None:
    """prometheus-operator's CRDs (several MB of schema), applied with kubectl
    --server-side, become Established; a ServiceMonitor as the operator's docs write one is
    accepted, and one whose endpoint scrapes with the scheme `gopher` is refused with the
    schema's values."""
    assert CRDS is not None
    install(kubeconfig, CRDS / "prometheus-operator")
    monitor = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
               "metadata": {"name": "example-app", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"app": "example-app"}},
                        "endpoints": [{"port": "web", "scheme": "http",
                                       "interval": "30s"}]}}
    accepted = created(kubeconfig, monitor)
    assert accepted.returncode == 0, accepted.stderr
    monitor["metadata"]["name"] = "gopher"
    monitor["spec"]["endpoints"][0]["scheme"] = "gopher"
    refused = created(kubeconfig, monitor)
    assert refused.returncode != 0
    assert ('The ServiceMonitor "gopher" is invalid: spec.endpoints[0].scheme: Unsupported '
            'value: "gopher": supported values: "http", "https", "HTTP", "HTTPS"'
            ) in refused.stderr
