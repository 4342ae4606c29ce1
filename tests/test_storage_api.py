"""Storage objects through the real kubectl: storage.k8s.io/v1 StorageClass (defaults,
validation, fixed fields, columns), the always-written status of PersistentVolumes, the
protection finalizers and the default class that admission gives claims.

StorageClasses are cluster-scoped, so each test names its own; a *default* class would
change every other test's claims, so the default-class test has an API server of its own.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from minikube_py.cluster.kubeconfig import write_kubeconfig

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


def storage_class(name: str, **fields: Any) -> str:
    return json.dumps({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                       "metadata": {"name": name}, **fields})


def claim(name: str, **spec: Any) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                       "metadata": {"name": name},
                       "spec": {"accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": "1Gi"}}, **spec}})


def volume(name: str, **spec: Any) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "PersistentVolume",
                       "metadata": {"name": name},
                       "spec": {"accessModes": ["ReadWriteOnce"],
                                "capacity": {"storage": "1Gi"},
                                "hostPath": {"path": f"/tmp/{name}"}, **spec}})


def table(text: str) -> list[list[str]]:
    """`kubectl get` output as rows of cells, the AGE cell dropped: the clock changes it."""
    return [re.split(r"\s{2,}", line.strip())[:-1] for line in text.strip().splitlines()]


@pytest.fixture
def unique() -> str:
    return f"st-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def cluster_scoped(kubectl: Kubectl) -> Iterator[list[str]]:
    """Cluster-scoped objects ("kind/name") to delete when the test ends."""
    names: list[str] = []
    yield names
    for name in names:
        kubectl("patch", name, "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                check=False)
        kubectl("delete", name, "--ignore-not-found", "--wait=false", check=False)


def test_a_storage_class_reclaims_with_delete_and_binds_immediately_unless_told(
        kubectl: Kubectl, unique: str, cluster_scoped: list[str]) -> None:
    cluster_scoped += [f"sc/{unique}-plain", f"sc/{unique}-local"]
    kubectl("create", "-f", "-", input=storage_class(f"{unique}-plain",
                                                     provisioner="example.com/disk"))
    kubectl("create", "-f", "-", input=storage_class(
        f"{unique}-local", provisioner="minikube-py.io/local-path", reclaimPolicy="Retain",
        volumeBindingMode="WaitForFirstConsumer", allowVolumeExpansion=True,
        parameters={"path": "/data"}))

    plain = json.loads(kubectl("get", "sc", f"{unique}-plain", "-o", "json").stdout)
    assert {key: plain[key] for key in plain if key != "metadata"} == {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "provisioner": "example.com/disk", "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate"}
    assert "generation" not in plain["metadata"]
    out = kubectl("get", "sc", f"{unique}-plain", f"{unique}-local").stdout
    assert table(out) == [
        ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION"],
        [f"{unique}-plain", "example.com/disk", "Delete", "Immediate", "false"],
        [f"{unique}-local", "minikube-py.io/local-path", "Retain", "WaitForFirstConsumer",
         "true"],
    ]


@pytest.mark.parametrize(("fields", "error"), [
    ({}, "provisioner: Required value"),
    ({"provisioner": "example.com/Disk_"},
     'provisioner: Invalid value: "example.com/disk_": name part must consist of '
     "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
     "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
     "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ({"provisioner": "example.com/disk", "reclaimPolicy": "Recycle"},
     'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"'),
    ({"provisioner": "example.com/disk", "volumeBindingMode": "Later"},
     'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", '
     '"WaitForFirstConsumer"'),
    ({"provisioner": "example.com/disk", "allowedTopologies": [{"matchLabelExpressions": [
        {"key": "zone", "values": ["a", "a"]}]}]},
     'allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: "a"'),
], ids=["no-provisioner", "bad-provisioner", "recycle", "unknown-binding-mode",
        "duplicate-topology-value"])
def test_a_bad_storage_class_is_refused_with_upstreams_message(
        kubectl: Kubectl, unique: str, fields: dict[str, Any], error: str) -> None:
    done = kubectl("create", "-f", "-", input=storage_class(unique, **fields), check=False)

    assert done.returncode == 1
    assert done.stderr == (f'The StorageClass "{unique}" is invalid: {error}\n')


def test_a_storage_classs_provisioner_policy_and_binding_mode_never_change(
        kubectl: Kubectl, unique: str, cluster_scoped: list[str]) -> None:
    cluster_scoped.append(f"sc/{unique}")
    kubectl("create", "-f", "-", input=storage_class(unique, provisioner="example.com/disk"))

    done = kubectl("patch", "sc", unique, "--type=merge", "-p", json.dumps({
        "provisioner": "example.com/other", "reclaimPolicy": "Retain",
        "volumeBindingMode": "WaitForFirstConsumer", "parameters": {"a": "b"}}), check=False)

    assert done.returncode == 1
    assert done.stderr == (
        f'The StorageClass "{unique}" is invalid: \n'
        "* parameters: Forbidden: updates to parameters are forbidden.\n"
        "* provisioner: Forbidden: updates to provisioner are forbidden.\n"
        "* reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.\n"
        '* volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable\n')
    kubectl("patch", "sc", unique, "--type=merge", "-p", '{"allowVolumeExpansion":true}')


def test_kubectl_cannot_grow_a_claim_whose_class_does_not_allow_it(
        kubectl: Kubectl, namespace: str, unique: str, cluster_scoped: list[str]) -> None:
    cluster_scoped.append(f"sc/{unique}")
    kubectl("create", "-f", "-", input=storage_class(unique, provisioner="example.com/disk"))
    kubectl("create", "-n", namespace, "-f", "-", input=claim("data", storageClassName=unique))
    grow = json.dumps({"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    pending = kubectl("patch", "pvc", "data", "-n", namespace, "-p", grow, check=False)
    assert pending.returncode == 1 and pending.stderr.startswith(
        'The PersistentVolumeClaim "data" is invalid: spec: Forbidden: spec is immutable after '
        "creation except resources.requests and volumeAttributesClassName for bound claims")
    kubectl("patch", "pvc", "data", "-n", namespace, "--subresource=status", "-p",
            '{"status":{"phase":"Bound","capacity":{"storage":"1Gi"}}}')

    refused = kubectl("patch", "pvc", "data", "-n", namespace, "-p", grow, check=False)

    assert refused.returncode == 1
    assert refused.stderr == (
        'Error from server (Forbidden): persistentvolumeclaims "data" is forbidden: only '
        "dynamically provisioned pvc can be resized and the storageclass that provisions the "
        "pvc must support resize\n")
    kubectl("patch", "sc", unique, "--type=merge", "-p", '{"allowVolumeExpansion":true}')
    kubectl("patch", "pvc", "data", "-n", namespace, "-p", grow)
    shrunk = kubectl("patch", "pvc", "data", "-n", namespace, "-p", json.dumps(
        {"spec": {"resources": {"requests": {"storage": "512Mi"}}}}), check=False)
    assert "spec.resources.requests.storage: Forbidden: field can not be less than " \
        "status.capacity" in shrunk.stderr


def test_claims_and_volumes_are_protected_and_volumes_start_pending(
        kubectl: Kubectl, namespace: str, unique: str, cluster_scoped: list[str]) -> None:
    cluster_scoped.append(f"pv/{unique}")
    kubectl("create", "-f", "-", input=volume(unique))
    kubectl("create", "-n", namespace, "-f", "-", input=claim("data", storageClassName=""))

    pv = json.loads(kubectl("get", "pv", unique, "-o", "json").stdout)
    pvc = json.loads(kubectl("get", "pvc", "data", "-n", namespace, "-o", "json").stdout)
    assert pv["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    assert pvc["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert pv["status"] == {"phase": "Pending",
                            "lastPhaseTransitionTime": pv["metadata"]["creationTimestamp"]}
    assert pvc["status"] == {"phase": "Pending"}
    assert pvc["spec"]["storageClassName"] == ""  # no class on purpose: kept

    kubectl("delete", "pvc", "data", "-n", namespace, "--wait=false")
    terminating = kubectl("get", "pvc", "data", "-n", namespace).stdout
    assert table(terminating)[1][:2] == ["data", "Terminating"]


def test_a_volume_phase_change_is_stamped_and_a_written_stamp_kept(
        kubectl: Kubectl, unique: str, cluster_scoped: list[str]) -> None:
    cluster_scoped.append(f"pv/{unique}")
    kubectl("create", "-f", "-", input=volume(unique))

    def status_write(status: dict[str, Any]) -> dict[str, Any]:
        out = kubectl("patch", "pv", unique, "--subresource=status", "--type=merge",
                      "-p", json.dumps({"status": status}), "-o", "json").stdout
        return dict(json.loads(out)["status"])

    stamped = status_write({"phase": "Available"})
    assert stamped["phase"] == "Available" and stamped["lastPhaseTransitionTime"]
    assert status_write({"message": "same phase"})["lastPhaseTransitionTime"] == (
        stamped["lastPhaseTransitionTime"])
    own = status_write({"phase": "Bound", "lastPhaseTransitionTime": "2020-01-01T00:00:00Z"})
    assert own["lastPhaseTransitionTime"] == "2020-01-01T00:00:00Z"


def test_kubectl_get_pv_pvc_sc_prints_upstreams_columns(
        kubectl: Kubectl, namespace: str, unique: str, cluster_scoped: list[str]) -> None:
    cluster_scoped += [f"pv/{unique}", f"sc/{unique}"]
    kubectl("create", "-f", "-", input=volume(unique, storageClassName=unique,
                                              persistentVolumeReclaimPolicy="Delete",
                                              accessModes=["ReadWriteOnce", "ReadOnlyMany"]))
    kubectl("create", "-f", "-", input=storage_class(unique, provisioner="example.com/disk"))
    kubectl("create", "-n", namespace, "-f", "-", input=claim("data", storageClassName=unique))

    out = kubectl("get", "pv,sc", unique).stdout
    pvc = kubectl("get", "pvc", "-n", namespace).stdout

    assert table(out) == [
        ["NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM",
         "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON"],
        [f"persistentvolume/{unique}", "1Gi", "RWO,ROX", "Delete", "Pending", unique,
         "<unset>"],
        [],
        ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION"],
        [f"storageclass.storage.k8s.io/{unique}", "example.com/disk", "Delete", "Immediate",
         "false"],
    ]
    assert table(pvc) == [
        ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS",
         "VOLUMEATTRIBUTESCLASS"],
        ["data", "Pending", unique, "<unset>"],
    ]


async def test_a_claim_without_a_class_gets_the_newest_default_class(
        private_etcd: EtcdProcess, tmp_path: Path) -> None:
    """DefaultStorageClass admission, on a server of its own: a default class would
    change every other test's claims."""
    async with APIServerProcess([private_etcd.client_url], tmp_path / "api.log") as api:
        config_file = write_kubeconfig(tmp_path / "kubeconfig", api.url)

        def run(*args: str, input: str | None = None) -> str:
            done = subprocess.run([str(Path(sys.executable).with_name("kubectl")),
                                   f"--kubeconfig={config_file}", *args], input=input,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            return done.stdout

        def default(name: str, value: str) -> str:
            return storage_class(name, provisioner="example.com/disk", metadata={
                "name": name,
                "annotations": {"storageclass.kubernetes.io/is-default-class": value}})

        def class_of(name: str) -> str:
            return run("get", "pvc", name, "-o", "jsonpath={.spec.storageClassName}")

        run("create", "-f", "-", input=claim("before"))
        run("create", "-f", "-", input=default("old", "true"))
        run("create", "-f", "-", input=storage_class("plain", provisioner="example.com/disk"))
        run("create", "-f", "-", input=default("not", "false"))
        run("create", "-f", "-", input=claim("after"))
        run("create", "-f", "-", input=claim("chosen", storageClassName="plain"))
        run("create", "-f", "-", input=claim("none", storageClassName=""))

        assert [class_of(name) for name in ("before", "after", "chosen", "none")] == [
            "", "old", "plain", ""]
        assert [row[0] for row in table(run("get", "sc"))] == [
            "NAME", "not", "old (default)", "plain"]
