"""The PersistentVolume controller and the claim and volume protection controllers
against a real API server and etcd.

Each test gives its volumes and claims a storage class name of its own, so that the
controller, which sees every volume of the shared API server, binds only what the test
made. The provisioner is played by the test: it creates the volume the way an external
provisioner does (pre-bound to the claim, pv.kubernetes.io/provisioned-by).
"""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.registry import ALL_CONTROLLERS
from minikube_py.controllers.volume.persistentvolume import PersistentVolumeController
from minikube_py.controllers.volume.protection import (
    PVCProtectionController,
    PVProtectionController,
)
from tests.api_helpers import eventually

RunControllers = Callable[..., Awaitable[ControllerManager]]
Kubectl = Callable[..., subprocess.CompletedProcess[str]]
ALL = (PersistentVolumeController, PVCProtectionController, PVProtectionController)


def volume(name: str, storage_class: str, size: str = "1Gi", *, policy: str = "Retain",
           modes: tuple[str, ...] = ("ReadWriteOnce",), claim_ref: Obj | None = None,
           annotations: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"accessModes": list(modes), "capacity": {"storage": size},
                 "hostPath": {"path": f"/tmp/{name}"}, "storageClassName": storage_class,
                 "persistentVolumeReclaimPolicy": policy}
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": annotations or {}}, "spec": spec}


def claim(name: str, storage_class: str, size: str = "1Gi", **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                     "resources": {"requests": {"storage": size}}, **spec}}


def pod_using(name: str, claim_name: str, node: str | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "app", "image": "busybox:1.36"}],
                 "volumes": [{"name": "data",
                              "persistentVolumeClaim": {"claimName": claim_name}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def unique() -> str:
    return f"pvc-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def volumes(api_client: Client) -> AsyncIterator[list[str]]:
    """PersistentVolumes (cluster-scoped) to remove when the test ends, finalizers and all."""
    names: list[str] = []
    yield names
    client = api_client.resource("persistentvolumes")
    for name in names:
        with contextlib.suppress(NotFound):
            await client.patch(name, {"metadata": {"finalizers": None}})
            await client.delete(name)


async def phase_of(client: Any, name: str, namespace: str | None = None) -> str:
    return str(((await client.get(name, namespace)).get("status") or {}).get("phase", ""))


async def wait_phase(client: Any, name: str, phase: str, namespace: str | None = None) -> Obj:
    async def reached() -> Obj | None:
        obj: Obj = await client.get(name, namespace)
        return obj if (obj.get("status") or {}).get("phase") == phase else None
    return await eventually(reached, what=f"{name} {phase}")


async def wait_event(api_client: Client, namespace: str, reason: str, name: str) -> str:
    """The message of the first event with `reason` about the object `name`."""
    async def found() -> str | None:
        events = await api_client.resource("events").list(namespace)
        for event in events["items"]:
            if event["reason"] == reason and event["involvedObject"]["name"] == name:
                return str(event["message"])
        return None
    return await eventually(found, what=f"a {reason} event on {name}")


async def test_a_claim_binds_the_smallest_volume_that_fits_with_the_fewest_modes(
        api_client: Client, namespace: str, unique: str, volumes: list[str],
        run_controllers: RunControllers, kubectl: Kubectl) -> None:
    pvs, pvcs = api_client.resource("persistentvolumes"), api_client.resource(
        "persistentvolumeclaims")
    for suffix, size, modes in (("small", "1Gi", ("ReadWriteOnce",)),
                                ("big", "5Gi", ("ReadWriteOnce",)),
                                ("wrong-mode", "2Gi", ("ReadOnlyMany",)),
                                ("fits", "2Gi", ("ReadWriteOnce",)),
                                ("more-modes", "1600Mi", ("ReadWriteOnce", "ReadOnlyMany"))):
        volumes.append(f"{unique}-{suffix}")
        await pvs.create(volume(f"{unique}-{suffix}", unique, size, modes=modes))
    await run_controllers(*ALL)
    for name in volumes:
        await wait_phase(pvs, name, "Available")

    await pvcs.create(claim("data", unique, "1500Mi"), namespace)

    bound = await wait_phase(pvcs, "data", "Bound", namespace)
    assert bound["spec"]["volumeName"] == f"{unique}-fits"
    assert bound["status"]["capacity"] == {"storage": "2Gi"}
    assert bound["status"]["accessModes"] == ["ReadWriteOnce"]
    assert bound["metadata"]["annotations"] == {"pv.kubernetes.io/bind-completed": "yes",
                                                "pv.kubernetes.io/bound-by-controller": "yes"}
    pv = await wait_phase(pvs, f"{unique}-fits", "Bound")
    assert pv["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim", "namespace": namespace, "name": "data",
        "uid": bound["metadata"]["uid"], "apiVersion": "v1",
        "resourceVersion": pv["spec"]["claimRef"]["resourceVersion"]}
    assert pv["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}
    rows = kubectl("get", "pvc", "data", "-n", namespace, "--no-headers").stdout.split()
    assert rows[:6] == ["data", "Bound", f"{unique}-fits", "2Gi", "RWO", unique]
    for other in ("small", "big", "wrong-mode", "more-modes"):
        assert await phase_of(pvs, f"{unique}-{other}") == "Available"


async def test_pre_bound_claims_and_volumes_bind_to_each_other_only(
        api_client: Client, namespace: str, unique: str, volumes: list[str],
        run_controllers: RunControllers) -> None:
    pvs, pvcs = api_client.resource("persistentvolumes"), api_client.resource(
        "persistentvolumeclaims")
    volumes += [f"{unique}-named", f"{unique}-reserved", f"{unique}-small"]
    await run_controllers(*ALL)
    await pvs.create(volume(f"{unique}-named", unique, "3Gi"))
    await pvs.create(volume(f"{unique}-reserved", unique, "1Gi", claim_ref={
        "namespace": namespace, "name": "reserver"}))
    await pvs.create(volume(f"{unique}-small", unique, "1Mi"))

    await pvcs.create(claim("asker", unique, volumeName=f"{unique}-named"), namespace)
    asker = await wait_phase(pvcs, "asker", "Bound", namespace)
    await pvcs.create(claim("other", unique), namespace)  # may not take the reserved one
    await pvcs.create(claim("too-big", unique, volumeName=f"{unique}-small"), namespace)
    await pvcs.create(claim("reserver", unique), namespace)

    assert asker["metadata"]["annotations"] == {"pv.kubernetes.io/bind-completed": "yes"}
    named = await wait_phase(pvs, f"{unique}-named", "Bound")
    assert "pv.kubernetes.io/bound-by-controller" in named["metadata"]["annotations"]
    reserver = await wait_phase(pvcs, "reserver", "Bound", namespace)
    assert reserver["spec"]["volumeName"] == f"{unique}-reserved"
    reserved = await wait_phase(pvs, f"{unique}-reserved", "Bound")
    assert not reserved["metadata"].get("annotations")  # pre-bound by its creator
    assert await wait_event(api_client, namespace, "VolumeMismatch", "too-big") == (
        f'Cannot bind to requested volume "{unique}-small": requested PV is too small')
    assert await phase_of(pvcs, "other", namespace) == "Pending"
    assert await phase_of(pvcs, "too-big", namespace) == "Pending"


async def test_claims_of_a_missing_class_or_no_class_say_why_they_stay_pending(
        api_client: Client, namespace: str, unique: str,
        run_controllers: RunControllers) -> None:
    pvcs = api_client.resource("persistentvolumeclaims")
    await run_controllers(*ALL)

    await pvcs.create(claim("unknown", unique), namespace)
    await pvcs.create(claim("classless", ""), namespace)

    assert await wait_event(api_client, namespace, "ProvisioningFailed", "unknown") == (
        f'storageclass.storage.k8s.io "{unique}" not found')
    assert await wait_event(api_client, namespace, "FailedBinding", "classless") == (
        "no persistent volumes available for this claim and no storage class is set")
    events = (await api_client.resource("events").list(namespace))["items"]
    assert {event["source"]["component"] for event in events} == {
        "persistentvolume-controller"}
    assert await phase_of(pvcs, "unknown", namespace) == "Pending"


async def test_a_wait_for_first_consumer_claim_is_provisioned_on_its_selected_node(
        api_client: Client, namespace: str, unique: str, volumes: list[str],
        run_controllers: RunControllers, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod's creation does not queue its claim: the resync (15 s upstream, 1 s here)
    finds it."""
    monkeypatch.setattr(PersistentVolumeController, "sync_period", 1.0)
    pvs, pvcs = api_client.resource("persistentvolumes"), api_client.resource(
        "persistentvolumeclaims")
    classes = api_client.resource("storageclasses", "storage.k8s.io")
    await classes.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": unique}, "provisioner": "example.com/local",
                          "volumeBindingMode": "WaitForFirstConsumer"})
    try:
        await pvs.create(volume(f"{unique}-static", unique))  # WFFC: left to the scheduler
        volumes.append(f"{unique}-static")
        await run_controllers(*ALL)
        await pvcs.create(claim("data", unique), namespace)
        assert await wait_event(api_client, namespace, "WaitForFirstConsumer", "data") == (
            "waiting for first consumer to be created before binding")

        await api_client.resource("pods").create(pod_using("web", "data"), namespace)
        assert await wait_event(api_client, namespace, "WaitForPodScheduled", "data") == (
            "waiting for pod web to be scheduled")
        assert await phase_of(pvcs, "data", namespace) == "Pending"

        await pvcs.patch("data", {"metadata": {"annotations": {
            "volume.kubernetes.io/selected-node": "node-1"}}}, namespace)
        assert await wait_event(api_client, namespace, "ExternalProvisioning", "data") == (
            "Waiting for a volume to be created either by the external provisioner "
            "'example.com/local' or manually by the system administrator. If volume creation "
            "is delayed, please verify that the provisioner is running and correctly "
            "registered.")
        annotated = await pvcs.get("data", namespace)
        assert annotated["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"] \
            == "example.com/local"
        assert annotated["metadata"]["annotations"][
            "volume.beta.kubernetes.io/storage-provisioner"] == "example.com/local"

        provisioned = f"pvc-{annotated['metadata']['uid']}"
        volumes.append(provisioned)
        await pvs.create(volume(provisioned, unique, policy="Delete", claim_ref={
            "kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": namespace,
            "name": "data", "uid": annotated["metadata"]["uid"]},
            annotations={"pv.kubernetes.io/provisioned-by": "example.com/local"}))
        bound = await wait_phase(pvcs, "data", "Bound", namespace)
        assert bound["spec"]["volumeName"] == provisioned
        assert await phase_of(pvs, f"{unique}-static") == "Available"

        await pvcs.delete("data", namespace)  # the pod is not scheduled: nothing uses it
        released = await wait_phase(pvs, provisioned, "Released")
        assert released["metadata"].get("deletionTimestamp") is None  # its provisioner's job
    finally:
        await classes.delete(unique)


async def test_a_released_volume_is_retained_or_fails_to_delete_without_a_deleter(
        api_client: Client, namespace: str, unique: str, volumes: list[str],
        run_controllers: RunControllers) -> None:
    pvs, pvcs = api_client.resource("persistentvolumes"), api_client.resource(
        "persistentvolumeclaims")
    volumes += [f"{unique}-retain", f"{unique}-delete"]
    await run_controllers(*ALL)
    await pvs.create(volume(f"{unique}-retain", unique, "1Gi"))
    await pvs.create(volume(f"{unique}-delete", unique, "2Gi", policy="Delete"))
    for name in volumes:
        await wait_phase(pvs, name, "Available")
    await pvcs.create(claim("kept", unique, "1Gi"), namespace)
    await pvcs.create(claim("dropped", unique, "2Gi"), namespace)
    await wait_phase(pvcs, "kept", "Bound", namespace)
    await wait_phase(pvcs, "dropped", "Bound", namespace)

    await pvcs.delete("kept", namespace)
    await pvcs.delete("dropped", namespace)

    retained = await wait_phase(pvs, f"{unique}-retain", "Released")
    assert retained["spec"]["claimRef"]["name"] == "kept"
    failed = await wait_phase(pvs, f"{unique}-delete", "Failed")
    assert failed["status"]["message"] == (
        f'error getting deleter volume plugin for volume "{unique}-delete": no deletable '
        "volume plugin matched")
    assert await wait_event(api_client, "default", "VolumeFailedDelete", f"{unique}-delete") \
        == failed["status"]["message"]
    # Released, not Bound: pv-protection lets the volume go once it is deleted
    await pvs.delete(f"{unique}-retain")

    async def gone() -> bool:
        try:
            await pvs.get(f"{unique}-retain")
        except NotFound:
            return True
        return False
    await eventually(gone, what="the released volume deleted")


async def test_a_claim_in_use_is_kept_until_its_pod_goes(
        api_client: Client, namespace: str, unique: str,
        run_controllers: RunControllers) -> None:
    pvcs, pods = api_client.resource("persistentvolumeclaims"), api_client.resource("pods")
    await run_controllers(*ALL)
    for name in ("data", "idle", "waiting"):
        await pvcs.create(claim(name, unique), namespace)
    await pods.create(pod_using("user", "data", node="node-1"), namespace)
    await pods.create(pod_using("unscheduled", "waiting"), namespace)  # mounts nothing yet

    async def gone(name: str) -> bool:
        try:
            await pvcs.get(name, namespace)
        except NotFound:
            return True
        return False

    for name in ("data", "idle", "waiting"):
        await pvcs.delete(name, namespace)
    await eventually(lambda: gone("idle"), what="the unused claim deleted")
    await eventually(lambda: gone("waiting"), what="the claim of an unscheduled pod deleted")
    terminating = await pvcs.get("data", namespace)
    assert terminating["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]

    await pods.delete("user", namespace, grace_period_seconds=0)
    await eventually(lambda: gone("data"), what="the claim deleted once unused")


async def test_a_bound_claim_whose_volume_goes_is_lost(
        api_client: Client, namespace: str, unique: str, volumes: list[str],
        run_controllers: RunControllers) -> None:
    pvs, pvcs = api_client.resource("persistentvolumes"), api_client.resource(
        "persistentvolumeclaims")
    volumes.append(unique)
    await run_controllers(PersistentVolumeController, PVProtectionController)
    await pvs.create(volume(unique, unique))
    await pvcs.create(claim("data", unique), namespace)
    await wait_phase(pvcs, "data", "Bound", namespace)

    await pvs.delete(unique)  # Bound: pv-protection keeps it
    kept = await pvs.get(unique)
    assert kept["metadata"]["deletionTimestamp"]
    assert kept["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    await pvs.patch(unique, {"metadata": {"finalizers": None}})

    await wait_phase(pvcs, "data", "Lost", namespace)
    assert await wait_event(api_client, namespace, "ClaimLost", "data") == (
        "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
    lost = await pvcs.get("data", namespace)
    assert "capacity" not in lost["status"] and "accessModes" not in lost["status"]


def test_the_controller_manager_runs_them_by_upstreams_names() -> None:
    names = {controller.name for controller in ALL_CONTROLLERS}
    assert {"persistentvolume-binder", "pvc-protection", "pv-protection"} <= names
