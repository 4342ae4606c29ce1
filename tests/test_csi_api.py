"""The CSI objects of storage.k8s.io/v1 through the official client and the real kubectl:
CSIDriver (defaults, fixed fields, generation), CSINode (drivers fixed once listed but
their count), VolumeAttachment (fixed spec, status through /status), CSIStorageCapacity
(fixed class and topology), and the columns `kubectl get` prints for each.

These kinds are cluster-scoped but for CSIStorageCapacity, so each test names its own
and deletes them when it ends.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def storage(kubeconfig: Path) -> Iterator[client.StorageV1Api]:
    """The official client's storage.k8s.io/v1 API, from the test kubeconfig."""
    api = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.StorageV1Api(api)
    api.close()


@pytest.fixture
def unique() -> str:
    return f"csi-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def cluster_scoped(kubectl: Kubectl) -> Iterator[list[str]]:
    """Cluster-scoped objects ("resource/name") to delete when the test ends."""
    names: list[str] = []
    yield names
    for name in names:
        kubectl("delete", name, "--ignore-not-found", "--wait=false", check=False)


def driver(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": name}, "spec": spec}


def csi_node(name: str, *drivers: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": name}, "spec": {"drivers": list(drivers)}}


def attachment(name: str, node: str, volume: str, attacher: str) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
            "metadata": {"name": name},
            "spec": {"attacher": attacher, "nodeName": node,
                     "source": {"persistentVolumeName": volume}}}


def reason_and_message(refused: pytest.ExceptionInfo[ApiException]) -> tuple[int, str, str]:
    status = json.loads(refused.value.body)
    return refused.value.status, status["reason"], status["message"]


def table(text: str) -> list[list[str]]:
    """`kubectl get` output as rows of cells."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_api_resources_lists_the_csi_kinds_without_short_names(kubectl: Kubectl) -> None:
    out = kubectl("api-resources", "--api-group=storage.k8s.io", "--no-headers").stdout

    assert [line.split() for line in out.strip().splitlines()] == [
        ["csidrivers", "storage.k8s.io/v1", "false", "CSIDriver"],
        ["csinodes", "storage.k8s.io/v1", "false", "CSINode"],
        ["csistoragecapacities", "storage.k8s.io/v1", "true", "CSIStorageCapacity"],
        ["storageclasses", "sc", "storage.k8s.io/v1", "false", "StorageClass"],
        ["volumeattachments", "storage.k8s.io/v1", "false", "VolumeAttachment"]]


def test_a_csi_driver_gets_upstreams_defaults_and_no_generation_until_it_changes(
        storage: client.StorageV1Api, unique: str, cluster_scoped: list[str]) -> None:
    name = f"{unique}.example.com"
    cluster_scoped.append(f"csidriver/{name}")
    created = storage.create_csi_driver(driver(name))

    spec = created.spec
    assert (spec.attach_required, spec.pod_info_on_mount, spec.storage_capacity,
            spec.requires_republish, spec.se_linux_mount) == (True, False, False, False, False)
    assert spec.fs_group_policy == "ReadWriteOnceWithFSType"
    assert spec.volume_lifecycle_modes == ["Persistent"]
    assert spec.token_requests is None
    assert created.metadata.generation is None

    unchanged = storage.patch_csi_driver(name, {"spec": {"attachRequired": True}})
    assert unchanged.metadata.generation is None
    changed = storage.patch_csi_driver(name, {"spec": {"podInfoOnMount": True}})
    assert changed.spec.pod_info_on_mount is True  # mutable since 1.29
    assert changed.metadata.generation == 1

    storage.delete_csi_driver(name)
    with pytest.raises(ApiException) as gone:
        storage.read_csi_driver(name)
    assert gone.value.status == 404


def test_a_csi_drivers_attach_and_lifecycle_modes_never_change(
        storage: client.StorageV1Api, unique: str, cluster_scoped: list[str]) -> None:
    name = f"{unique}.example.com"
    cluster_scoped.append(f"csidriver/{name}")
    storage.create_csi_driver(driver(name, volumeLifecycleModes=["Persistent", "Ephemeral"]))

    with pytest.raises(ApiException) as attach:
        storage.patch_csi_driver(name, {"spec": {"attachRequired": False}})
    assert reason_and_message(attach) == (
        422, "Invalid", f'CSIDriver.storage.k8s.io "{name}" is invalid: '
        "spec.attachedRequired: Invalid value: false: field is immutable")

    with pytest.raises(ApiException) as modes:
        storage.patch_csi_driver(name, {"spec": {"volumeLifecycleModes": ["Ephemeral"]}})
    assert reason_and_message(modes) == (
        422, "Invalid", f'CSIDriver.storage.k8s.io "{name}" is invalid: '
        'spec.volumeLifecycleModes: Invalid value: []storage.VolumeLifecycleMode{"Ephemeral"}: '
        "field is immutable")


def test_a_bad_csi_driver_is_refused_with_every_upstream_message(
        storage: client.StorageV1Api, unique: str) -> None:
    body = driver(f"{unique}.example.com", fsGroupPolicy="Sometimes",
                  volumeLifecycleModes=["Forever"],
                  tokenRequests=[{"audience": "a", "expirationSeconds": 60},
                                 {"audience": "a"}])
    with pytest.raises(ApiException) as refused:
        storage.create_csi_driver(body)

    code, reason, message = reason_and_message(refused)
    assert (code, reason) == (422, "Invalid")
    assert ('spec.fsGroupPolicy: Unsupported value: "Sometimes": supported values: "File", '
            '"None", "ReadWriteOnceWithFSType"') in message
    assert ("spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a "
            "duration less than 10 minutes") in message
    assert 'spec.tokenRequests[1].audience: Duplicate value: "a"' in message
    assert ('spec.volumeLifecycleModes: Unsupported value: "Forever": supported values: '
            '"Persistent", "Ephemeral"') in message


def test_a_csi_node_keeps_a_listed_driver_but_its_count(
        storage: client.StorageV1Api, unique: str, cluster_scoped: list[str]) -> None:
    cluster_scoped.append(f"csinode/{unique}")
    disk = {"name": "disk.example.com", "nodeID": "node-a", "topologyKeys": ["zone"],
            "allocatable": {"count": 8}}
    storage.create_csi_node(csi_node(unique, disk))

    counted = storage.patch_csi_node(unique, {"spec": {"drivers": [
        {**disk, "allocatable": {"count": 4}}]}})
    assert counted.spec.drivers[0].allocatable.count == 4
    added = storage.patch_csi_node(unique, {"spec": {"drivers": [
        {"name": "nfs.example.com", "nodeID": "node-a"}]}})
    assert sorted(d.name for d in added.spec.drivers) == ["disk.example.com", "nfs.example.com"]

    with pytest.raises(ApiException) as moved:
        storage.patch_csi_node(unique, {"spec": {"drivers": [
            {"name": "disk.example.com", "nodeID": "node-b"}]}})
    code, reason, message = reason_and_message(moved)
    assert (code, reason) == (422, "Invalid")
    assert message.startswith(f'CSINode.storage.k8s.io "{unique}" is invalid: spec.drivers: '
                              "Invalid value: ")
    assert message.endswith(": field is immutable")


def test_a_csi_node_refuses_a_bad_driver_name_a_missing_id_and_a_driver_twice(
        storage: client.StorageV1Api, unique: str) -> None:
    body = csi_node(unique, {"name": "Bad_Driver!", "nodeID": "n"},
                    {"name": "disk.example.com", "nodeID": ""},
                    {"name": "disk.example.com", "nodeID": "n", "topologyKeys": ["z", "z"]})
    with pytest.raises(ApiException) as refused:
        storage.create_csi_node(body)

    code, reason, message = reason_and_message(refused)
    assert (code, reason) == (422, "Invalid")
    assert ('spec.drivers[0].name: Invalid value: "Bad_Driver!": a lowercase RFC 1123 '
            "subdomain must consist of") in message
    assert "spec.drivers[1].nodeID: Required value" in message
    assert 'spec.drivers[2].name: Duplicate value: "disk.example.com"' in message
    assert 'spec.drivers[2]: Duplicate value: "z"' in message


def test_a_volume_attachments_spec_is_fixed_and_its_status_written_through_status(
        storage: client.StorageV1Api, unique: str, cluster_scoped: list[str]) -> None:
    cluster_scoped.append(f"volumeattachment/{unique}")
    created = storage.create_volume_attachment(
        {**attachment(unique, "node-1", "pv-1", "disk.example.com"),
         "status": {"attached": True}})
    assert created.status.attached is False  # a client may not set status on create

    attached = storage.patch_volume_attachment_status(unique, {"status": {
        "attached": True, "attachmentMetadata": {"device": "/dev/vdb"}}})
    assert attached.status.attached is True
    assert attached.spec.node_name == "node-1"
    relabelled = storage.patch_volume_attachment(unique, {
        "metadata": {"labels": {"a": "b"}}, "status": {"attached": False}})
    assert relabelled.status.attached is True  # the main resource does not write status

    with pytest.raises(ApiException) as moved:
        storage.patch_volume_attachment(unique, {"spec": {"nodeName": "node-2"}})
    code, reason, message = reason_and_message(moved)
    assert (code, reason) == (422, "Invalid")
    assert message.startswith(f'VolumeAttachment.storage.k8s.io "{unique}" is invalid: '
                              "spec: Invalid value: ")
    assert message.endswith(": field is immutable")

    with pytest.raises(ApiException) as bad_status:
        storage.patch_volume_attachment_status(unique, {"status": {
            "attachError": {"message": "x", "errorCode": -1}}})
    assert reason_and_message(bad_status)[2].endswith(
        "status.attachError.errorCode: Invalid value: -1: must be between 0 and 2147483647, "
        "inclusive")


def test_a_volume_attachment_names_exactly_one_source_and_a_csi_attacher(
        storage: client.StorageV1Api, unique: str) -> None:
    neither = attachment(unique, "node-1", "pv-1", "Bad_Attacher")
    neither["spec"]["source"] = {}
    with pytest.raises(ApiException) as refused:
        storage.create_volume_attachment(neither)
    message = reason_and_message(refused)[2]
    assert ("spec.source: Required value: must specify exactly one of inlineVolumeSpec and "
            "persistentVolumeName") in message
    assert 'spec.attacher: Invalid value: "Bad_Attacher": a lowercase RFC 1123' in message

    inline = attachment(unique, "node-1", "pv-1", "disk.example.com")
    inline["spec"]["source"] = {"inlineVolumeSpec": {
        "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
        "nfs": {"server": "nfs.example.com", "path": "/"}}}
    with pytest.raises(ApiException) as refused:
        storage.create_volume_attachment(inline)
    message = reason_and_message(refused)[2]
    assert ("spec.source.inlineVolumeSpec.capacity: Forbidden: may not be specified in the "
            "context of inline volumes") in message
    assert ("spec.source.inlineVolumeSpec.csi: Required value: has to be specified in the "
            "context of inline volumes") in message

    both = attachment(unique, "node-1", "pv-1", "disk.example.com")
    both["spec"]["source"]["inlineVolumeSpec"] = {"csi": {"driver": "disk.example.com",
                                                          "volumeHandle": "h"}}
    with pytest.raises(ApiException) as refused:
        storage.create_volume_attachment(both)
    assert ("spec.source: Forbidden: must specify exactly one of inlineVolumeSpec and "
            "persistentVolumeName") in reason_and_message(refused)[2]

    translated = attachment(unique, "node-1", "pv-1", "disk.example.com")
    translated["spec"]["source"] = {"inlineVolumeSpec": {
        "accessModes": ["ReadWriteOnce"], "csi": {"driver": "disk.example.com",
                                                  "volumeHandle": "h"}}}
    created = storage.create_volume_attachment(translated)
    assert created.spec.source.inline_volume_spec.csi.volume_handle == "h"
    storage.delete_volume_attachment(unique)


def test_a_csi_storage_capacitys_class_and_topology_never_change(
        storage: client.StorageV1Api, namespace: str, unique: str) -> None:
    body = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
            "metadata": {"name": unique}, "storageClassName": "standard",
            "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}},
            "capacity": "1.5Gi"}
    storage.create_namespaced_csi_storage_capacity(namespace, body)

    grown = storage.patch_namespaced_csi_storage_capacity(unique, namespace,
                                                          {"capacity": "2Gi"})
    assert grown.capacity == "2Gi"
    with pytest.raises(ApiException) as moved:
        storage.patch_namespaced_csi_storage_capacity(unique, namespace,
                                                      {"storageClassName": "fast"})
    assert reason_and_message(moved) == (
        422, "Invalid", f'CSIStorageCapacity.storage.k8s.io "{unique}" is invalid: '
        'storageClassName: Invalid value: "fast": field is immutable')

    with pytest.raises(ApiException) as negative:
        storage.create_namespaced_csi_storage_capacity(namespace, {
            **body, "metadata": {"name": f"{unique}-2"}, "capacity": "-1Gi"})
    assert reason_and_message(negative)[2].endswith(
        'capacity: Invalid value: "-1Gi": must be greater than or equal to 0')

    listed = storage.list_namespaced_csi_storage_capacity(namespace)
    assert [c.metadata.name for c in listed.items] == [unique]
    storage.delete_namespaced_csi_storage_capacity(unique, namespace)
    assert storage.list_namespaced_csi_storage_capacity(namespace).items == []


def test_kubectl_get_prints_upstreams_csi_columns(
        kubectl: Kubectl, namespace: str, unique: str, cluster_scoped: list[str]) -> None:
    name = f"{unique}.example.com"
    cluster_scoped += [f"csidriver/{name}", f"csinode/{unique}",
                       f"volumeattachment/{unique}"]
    objects = [
        driver(name, podInfoOnMount=True, tokenRequests=[{"audience": "vault"},
                                                         {"audience": "aws"}]),
        csi_node(unique, {"name": name, "nodeID": "n1"}),
        attachment(unique, unique, "pv-1", name),
    ]
    for obj in objects:
        kubectl("create", "-f", "-", input=json.dumps(obj))

    out = kubectl("get", f"csidriver/{name}", f"csinode/{unique}",
                  f"volumeattachment/{unique}").stdout
    blocks = [table(block) for block in out.strip().split("\n\n")]
    assert [row[:-1] for row in blocks[0]] == [
        ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS",
         "REQUIRESREPUBLISH", "MODES"],
        [f"csidriver.storage.k8s.io/{name}", "true", "true", "false", "vault,aws", "false",
         "Persistent"]]
    assert blocks[0][0][-1] == "AGE"
    assert [row[:-1] for row in blocks[1]] == [
        ["NAME", "DRIVERS"], [f"csinode.storage.k8s.io/{unique}", "1"]]
    assert [row[:-1] for row in blocks[2]] == [
        ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED"],
        [f"volumeattachment.storage.k8s.io/{unique}", name, "pv-1", unique, "false"]]

    # upstream's storage of CSIStorageCapacities prints with the default table, not with
    # the printer printers.go has for them
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
        "metadata": {"name": unique}, "storageClassName": "standard", "capacity": "1536Mi"}))
    rows = table(kubectl("get", "-n", namespace, "csistoragecapacities").stdout)
    assert rows[0] == ["NAME", "CREATED AT"]
    assert rows[1][0] == unique and re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:]{8}Z", rows[1][1])
