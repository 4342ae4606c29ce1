"""The local-path provisioner against a real API server and etcd, with the PersistentVolume
controller binding what it provisions: a WaitForFirstConsumer claim with a selected node
gets a pre-bound hostPath volume pinned to that node, in that node's folder; when the
claim goes, the Released volume's folder, then the volume, go too. A claim of an
expandable class grows: admission, the expand controller and the resizer take it to the
point where the kubelet finishes it."""

from __future__ import annotations

import asyncio
import contextlib
import stat
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from minikube_py.api import Obj
from minikube_py.client.errors import Forbidden, Invalid, NotFound
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.controllers.manager import ControllerManager
from minikube_py.controllers.volume.expand import ExpandController
from minikube_py.controllers.volume.persistentvolume import PersistentVolumeController
from minikube_py.controllers.volume.protection import (
    PVCProtectionController,
    PVProtectionController,
)
from minikube_py.provisioner.localpath import FINALIZER, PROVISIONER_NAME, LocalPathProvisioner
from minikube_py.provisioner.resizer import LocalPathResizer
from tests.api_helpers import eventually
from tests.test_persistentvolume_controller import claim, wait_event, wait_phase

RunControllers = Callable[..., Awaitable[ControllerManager]]


@pytest.fixture
def unique() -> str:
    return f"lp-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def provisioner(kubeconfig: Path, tmp_path: Path) -> AsyncIterator[LocalPathProvisioner]:
    """The provisioner in this process, its nodes' folders under tmp_path/nodes."""
    client = Client.from_kubeconfig(kubeconfig, user_agent="test-local-path-provisioner")
    informers = SharedInformerFactory(client)
    recorder = EventRecorder(client, PROVISIONER_NAME)
    provisioner = LocalPathProvisioner(client, informers, recorder, tmp_path / "nodes")
    informers.start()
    task = None
    try:
        async with asyncio.timeout(30):
            await informers.wait_for_cache_sync()
        task = asyncio.create_task(provisioner.run())
        yield provisioner
    finally:
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await informers.stop()
        await recorder.stop()
        await client.close()


@pytest.fixture
async def cluster_objects(api_client: Client, unique: str) -> AsyncIterator[dict[str, str]]:
    """A Node and a local-path StorageClass of this test (Delete, WaitForFirstConsumer),
    removed with every volume of the class at the end."""
    nodes = api_client.resource("nodes")
    classes = api_client.resource("storageclasses", "storage.k8s.io")
    await nodes.create({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": unique, "labels": {"kubernetes.io/hostname": unique}}})
    await classes.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": unique}, "provisioner": PROVISIONER_NAME,
                          "reclaimPolicy": "Delete",
                          "volumeBindingMode": "WaitForFirstConsumer"})
    yield {"node": unique, "class": unique}
    pvs = api_client.resource("persistentvolumes")
    for pv in (await pvs.list())["items"]:
        if pv["spec"].get("storageClassName") == unique:
            await pvs.patch(pv["metadata"]["name"], {"metadata": {"finalizers": None}})
            with contextlib.suppress(NotFound):
                await pvs.delete(pv["metadata"]["name"])
    await classes.delete(unique)
    await nodes.delete(unique)


def selected(obj: Obj, node: str) -> Obj:
    obj["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": node}
    return obj


async def test_a_claim_gets_a_volume_on_its_node_and_the_folder_goes_with_it(
        api_client: Client, namespace: str, tmp_path: Path, cluster_objects: dict[str, str],
        provisioner: LocalPathProvisioner, run_controllers: RunControllers) -> None:
    node, class_name = cluster_objects["node"], cluster_objects["class"]
    pvs = api_client.resource("persistentvolumes")
    pvcs = api_client.resource("persistentvolumeclaims")
    await run_controllers(PersistentVolumeController, PVCProtectionController,
                          PVProtectionController)

    await pvcs.create(selected(claim("data", class_name, "2Gi"), node), namespace)

    bound = await wait_phase(pvcs, "data", "Bound", namespace)
    uid = bound["metadata"]["uid"]
    name = f"pvc-{uid}"
    assert bound["spec"]["volumeName"] == name
    pv = await wait_phase(pvs, name, "Bound")
    folder = tmp_path / "nodes" / node / "local-path-provisioner" / f"{name}_{namespace}_data"
    assert pv["spec"]["hostPath"] == {"path": str(folder), "type": "DirectoryOrCreate"}
    assert pv["spec"]["nodeAffinity"] == {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                               "values": [node]}]}]}}
    assert pv["spec"]["claimRef"]["uid"] == uid
    assert pv["spec"]["capacity"] == {"storage": "2Gi"}
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    assert pv["spec"]["storageClassName"] == class_name
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == PROVISIONER_NAME
    assert FINALIZER in pv["metadata"]["finalizers"]
    assert folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) == 0o777
    assert await wait_event(api_client, namespace, "Provisioning", "data") == (
        f'External provisioner is provisioning volume for claim "{namespace}/data"')
    assert await wait_event(api_client, namespace, "ProvisioningSucceeded", "data") == (
        f"Successfully provisioned volume {name}")
    (folder / "row").write_text("1")

    await pvcs.delete("data", namespace)

    async def volume_gone() -> bool:
        try:
            await pvs.get(name)
        except NotFound:
            return True
        return False
    await eventually(volume_gone, what=f"{name} deleted")
    assert not folder.exists()


async def test_a_claim_on_an_unknown_node_or_without_a_node_fails_with_an_event(
        api_client: Client, namespace: str, cluster_objects: dict[str, str],
        provisioner: LocalPathProvisioner, run_controllers: RunControllers) -> None:
    class_name = cluster_objects["class"]
    pvcs = api_client.resource("persistentvolumeclaims")
    classes = api_client.resource("storageclasses", "storage.k8s.io")
    immediate = f"{class_name}-now"
    await classes.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": immediate}, "provisioner": PROVISIONER_NAME})
    try:
        await run_controllers(PersistentVolumeController)
        await pvcs.create(selected(claim("lost", class_name), "no-such-node"), namespace)
        await pvcs.create(claim("nowhere", immediate), namespace)
        assert await wait_event(api_client, namespace, "ProvisioningFailed", "lost") == (
            'failed to get target node: nodes "no-such-node" not found')
        assert await wait_event(api_client, namespace, "ProvisioningFailed", "nowhere") == (
            f'failed to provision volume with StorageClass "{immediate}": '
            "configuration error, no node was specified")
        for name in ("lost", "nowhere"):
            got = await pvcs.get(name, namespace)
            assert got["status"]["phase"] == "Pending" and not got["spec"].get("volumeName")
    finally:
        await classes.delete(immediate)


def test_only_folders_of_a_nodes_local_path_folder_are_ever_removed(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes"
    provisioner = LocalPathProvisioner.__new__(LocalPathProvisioner)
    provisioner.nodes_dir = nodes

    def volume(path: str) -> Obj:
        return {"spec": {"hostPath": {"path": path}}}

    inside = nodes / "node-1/local-path-provisioner/pvc-1_ns_data"
    assert provisioner._folder_of(volume(str(inside))) == inside
    for outside in ("/etc", str(nodes / "node-1"), str(nodes / "node-1/kubelet/pvc-1"),
                    str(inside / "../../../../etc/x"), str(tmp_path / "local-path-provisioner/x"),
                    ""):
        assert provisioner._folder_of(volume(outside)) is None, outside


@pytest.fixture
async def resizer(kubeconfig: Path) -> AsyncIterator[LocalPathResizer]:
    """The provisioner's resizer in this process."""
    client = Client.from_kubeconfig(kubeconfig, user_agent="test-local-path-resizer")
    informers = SharedInformerFactory(client)
    resizer = LocalPathResizer(client, informers)
    informers.start()
    task = None
    try:
        async with asyncio.timeout(30):
            await informers.wait_for_cache_sync()
        task = asyncio.create_task(resizer.run())
        yield resizer
    finally:
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await informers.stop()
        await client.close()


def grow(size: str) -> Obj:
    return {"spec": {"resources": {"requests": {"storage": size}}}}


async def test_a_claim_grows_only_bound_and_when_its_class_allows_it(
        api_client: Client, namespace: str, cluster_objects: dict[str, str],
        provisioner: LocalPathProvisioner, resizer: LocalPathResizer,
        run_controllers: RunControllers) -> None:
    node, class_name = cluster_objects["node"], cluster_objects["class"]
    pvcs = api_client.resource("persistentvolumeclaims")
    classes = api_client.resource("storageclasses", "storage.k8s.io")
    await run_controllers(PersistentVolumeController, ExpandController)
    await pvcs.create(selected(claim("data", class_name), node), namespace)
    await pvcs.create(claim("waiting", class_name), namespace)
    bound = await wait_phase(pvcs, "data", "Bound", namespace)

    with pytest.raises(Invalid) as unbound:  # validation answers before admission
        await pvcs.patch("waiting", grow("2Gi"), namespace)
    assert unbound.value.status["message"].startswith(
        'PersistentVolumeClaim "waiting" is invalid: spec: Forbidden: spec is immutable after '
        "creation except resources.requests and volumeAttributesClassName for bound claims")
    with pytest.raises(Forbidden) as refused:
        await pvcs.patch("data", grow("2Gi"), namespace)
    assert refused.value.status["message"] == (
        'persistentvolumeclaims "data" is forbidden: only dynamically provisioned pvc can be '
        "resized and the storageclass that provisions the pvc must support resize")

    await classes.patch(class_name, {"allowVolumeExpansion": True})
    await pvcs.patch("data", grow("2Gi"), namespace)

    async def waits_for_node() -> Obj | None:
        got: Obj = await pvcs.get("data", namespace)
        statuses = got["status"].get("allocatedResourceStatuses") or {}
        return got if statuses.get("storage") == "NodeResizePending" else None
    grown = await eventually(waits_for_node, what="the claim waiting for its node's part")
    status = grown["status"]
    assert status["capacity"] == {"storage": "1Gi"}  # the kubelet's part is still to do
    assert status["allocatedResources"] == {"storage": "2Gi"}
    assert [(c["type"], c["status"], c.get("message")) for c in status["conditions"]] == [
        ("FileSystemResizePending", "True", "Waiting for user to (re-)start a pod to finish "
                                            "file system resize of volume on node.")]
    volume = await api_client.resource("persistentvolumes").get(bound["spec"]["volumeName"])
    assert volume["spec"]["capacity"] == {"storage": "2Gi"}
    assert await wait_event(api_client, namespace, "ExternalExpanding", "data") == (
        "waiting for an external controller to expand this PVC")
    assert await wait_event(api_client, namespace, "Resizing", "data") == (
        f"External resizer is resizing volume {volume['metadata']['name']}")
    assert await wait_event(api_client, namespace, "FileSystemResizeRequired", "data") == (
        "Require file system resize of volume on node")

    with pytest.raises(Invalid) as shrunk:
        await pvcs.patch("data", grow("1Gi"), namespace)
    assert "field can not be less than status.capacity" in shrunk.value.status["message"]
