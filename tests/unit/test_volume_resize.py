"""Claim resize as pure logic: the PersistentVolumeClaimResize admission rules (after
upstream's resize/admission_test.go), the resizer's choice of a size (external-resizer's
expandAndRecover) and the status each step writes (resize_util.go)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.api.errors import APIError
from minikube_py.api.resources import lookup
from minikube_py.api.volumeresize import (
    controller_resize_in_progress,
    merge_resize_conditions,
    node_expansion_pending,
    resize_finished,
)
from minikube_py.apiserver.auth.admission import UPDATE, Chain
from minikube_py.apiserver.auth.admission.persistentvolumeclaimresize import (
    PersistentVolumeClaimResize,
)
from minikube_py.provisioner.resizer import needs_resize, new_size

GIB = Decimal(1024 ** 3)
NOT_EXPANDABLE = ("only dynamically provisioned pvc can be resized and the storageclass "
                  "that provisions the pvc must support resize")


def claim(size: str, *, class_name: str | None = "gold", phase: str = "Bound",
          **status: Any) -> Obj:
    spec: Obj = {"resources": {"requests": {"storage": size}}, "volumeName": "pv-1"}
    if class_name is not None:
        spec["storageClassName"] = class_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "ns"}, "spec": spec,
            "status": {"phase": phase, **status}}


CLASSES = [{"metadata": {"name": "gold"}, "allowVolumeExpansion": True},
           {"metadata": {"name": "silver"}, "allowVolumeExpansion": False},
           {"metadata": {"name": "bronze"}}]


@pytest.mark.parametrize(("old", "new", "refusal"), [
    pytest.param(claim("1Gi"), claim("2Gi"), None, id="a bound claim of an expandable class"),
    pytest.param(claim("1Gi", phase="Pending"), claim("2Gi", phase="Pending"),
                 "Only bound persistent volume claims can be expanded", id="not bound"),
    pytest.param(claim("1Gi", class_name="silver"), claim("2Gi", class_name="silver"),
                 NOT_EXPANDABLE, id="allowVolumeExpansion false"),
    pytest.param(claim("1Gi", class_name="bronze"), claim("2Gi", class_name="bronze"),
                 NOT_EXPANDABLE, id="allowVolumeExpansion unset"),
    pytest.param(claim("1Gi", class_name=None), claim("2Gi", class_name=None),
                 NOT_EXPANDABLE, id="no class"),
    pytest.param(claim("1Gi", class_name="gone"), claim("2Gi", class_name="gone"),
                 NOT_EXPANDABLE, id="a class that does not exist"),
    pytest.param(claim("1Gi", class_name="silver"), claim("2Gi"), NOT_EXPANDABLE,
                 id="the class changed with the size"),
    pytest.param(claim("2Gi", class_name="silver"), claim("1Gi", class_name="silver"), None,
                 id="asking for less is validation's business"),
    pytest.param(claim("1Gi", phase="Pending"), claim("1024Mi", phase="Pending"), None,
                 id="the same size written otherwise"),
])
async def test_only_bound_claims_of_expandable_classes_may_ask_for_more(
        old: Obj, new: Obj, refusal: str | None) -> None:
    resource = lookup("", "v1", "persistentvolumeclaims")
    assert resource is not None
    chain = Chain([PersistentVolumeClaimResize(lambda: CLASSES)])
    attributes = chain.attributes(resource, UPDATE, "ns", "data", new, old)
    if refusal is None:
        await chain.validate(attributes)
        return
    with pytest.raises(APIError) as refused:
        await chain.validate(attributes)
    assert refused.value.status()["message"] == (
        f'persistentvolumeclaims "data" is forbidden: {refusal}')
    assert refused.value.code == 403


def test_a_claim_needs_resize_when_bound_and_asking_for_more_than_it_has() -> None:
    assert needs_resize(claim("2Gi", capacity={"storage": "1Gi"}))
    assert not needs_resize(claim("2Gi", capacity={"storage": "2Gi"}))
    assert not needs_resize(claim("2Gi", phase="Pending", capacity={"storage": "1Gi"}))


@pytest.mark.parametrize(("status", "volume_size", "expected"), [
    pytest.param({}, 1, "3Gi", id="a first round grows to the request"),
    pytest.param({"allocatedResources": {"storage": "2Gi"},
                  "allocatedResourceStatuses": {"storage": "NodeResizePending"}}, 2, None,
                 id="the node's part of the last round comes first"),
    pytest.param({"allocatedResources": {"storage": "2Gi"},
                  "allocatedResourceStatuses": {"storage": "NodeResizeInProgress"}}, 1, "2Gi",
                 id="a round whose volume did not grow yet resumes at its size"),
    pytest.param({"allocatedResources": {"storage": "2Gi"},
                  "allocatedResourceStatuses": {"storage": "ControllerResizeInProgress"}},
                 1, "2Gi", id="a controller round cut short resumes at its size"),
    pytest.param({"allocatedResources": {"storage": "3Gi"},
                  "allocatedResourceStatuses": {"storage": "ControllerResizeInProgress"}},
                 3, "3Gi", id="a volume grown before its status was written: finish it"),
    pytest.param({"allocatedResources": {"storage": "3Gi"},
                  "allocatedResourceStatuses": {"storage": "NodeResizePending"}}, 3, None,
                 id="grown, the node's part to do"),
])
def test_the_resizer_picks_the_size_as_expand_and_recover_does(
        status: Obj, volume_size: int, expected: str | None) -> None:
    asking = claim("3Gi", capacity={"storage": "1Gi"}, **status)
    assert new_size(asking, volume_size * GIB) == expected


def test_each_step_writes_upstreams_status_fields() -> None:
    start = claim("2Gi", capacity={"storage": "1Gi"},
                  conditions=[{"type": "ModifyingVolume", "status": "True"}])
    resizing = {**start, "status": controller_resize_in_progress(start, "2Gi")}
    assert resizing["status"]["allocatedResources"] == {"storage": "2Gi"}
    assert resizing["status"]["allocatedResourceStatuses"] == {
        "storage": "ControllerResizeInProgress"}
    assert [c["type"] for c in resizing["status"]["conditions"]] == [
        "ModifyingVolume", "Resizing"]
    pending = {**resizing, "status": node_expansion_pending(resizing)}
    assert pending["status"]["allocatedResourceStatuses"] == {"storage": "NodeResizePending"}
    assert [c["type"] for c in pending["status"]["conditions"]] == [
        "ModifyingVolume", "FileSystemResizePending"]
    done = resize_finished(pending, "2Gi")
    assert done["capacity"] == {"storage": "2Gi"}
    assert "allocatedResourceStatuses" not in done
    assert done["allocatedResources"] == {"storage": "2Gi"}
    assert done["conditions"] == [{"type": "ModifyingVolume", "status": "True"}]
    assert start["status"]["capacity"] == {"storage": "1Gi"}  # the claim itself unchanged


def test_a_resize_condition_keeps_its_transition_time_while_it_holds() -> None:
    old = [{"type": "Resizing", "status": "True", "lastTransitionTime": "then"}]
    new = [{"type": "Resizing", "status": "True", "lastTransitionTime": "now"}]
    assert merge_resize_conditions(old, new)[0]["lastTransitionTime"] == "then"
    flipped = [{"type": "Resizing", "status": "False", "lastTransitionTime": "now"}]
    assert merge_resize_conditions(old, flipped)[0]["lastTransitionTime"] == "now"
