"""The local-path provisioner, the external-provisioner way (kubernetes-csi's
external-provisioner controller around rancher's local-path-provisioner).

    claim: annotation volume.kubernetes.io/storage-provisioner = minikube-py.io/local-path,
           volume.kubernetes.io/selected-node = N, no spec.volumeName
        -> a folder for it on node N, and the PersistentVolume pvc-<claim uid>: hostPath
           DirectoryOrCreate, node affinity kubernetes.io/hostname In [N], claimRef
           pre-bound to the claim (the PV controller completes the binding)
    volume: provisioned by us, Released, reclaim policy Delete
        -> remove the folder, delete the PV, then drop our finalizer

A claim that carries a trace (a StatefulSet's claim carries the StatefulSet's) gets a
span of it, "provision", whose PV create the API server records under it: the volume
carries the claim's trace on, to the PV controller's binding (docs/tracing.md).

A node of this cluster is a network namespace on this machine, with its files under
`<state>/nodes/<node>/`; a node's volumes live in `<nodes dir>/<node>/local-path-provisioner/
pvc-<uid>_<namespace>_<name>` (rancher's /var/local-path-provisioner/ on a real node), so
`down --purge` removes them with the node.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import shutil
from pathlib import Path
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    LOCAL_PATH_PROVISIONER,
    claim_class,
)
from minikube_py.client.errors import AlreadyExists, ClientError, Conflict, NotFound
from minikube_py.client.events import EventRecorder
from minikube_py.client.informer import EventHandler, SharedInformerFactory
from minikube_py.client.rest import Client
from minikube_py.client.store import object_key
from minikube_py.client.workqueue import RateLimitingQueue, run_workers
from minikube_py.tracing import context as tracing_context
from minikube_py.tracing.tracer import DISABLED, Tracer

log = logging.getLogger(__name__)

PROVISIONER_NAME = LOCAL_PATH_PROVISIONER
FINALIZER = "external-provisioner.volume.kubernetes.io/finalizer"
NODE_FOLDER = "local-path-provisioner"
HOSTNAME_LABEL = "kubernetes.io/hostname"
STORAGE_GROUP = "storage.k8s.io"
VOLUME_DIR_MODE = 0o777  # rancher's helper pod: mkdir -m 0777


def log_sync_error(name: str, key: str, error: Exception) -> None:
    """Why a key failed, in one line: a Conflict is an ordinary requeue; the API or the
    disk saying no, a warning; anything else is a bug, with its traceback."""
    level = (logging.DEBUG if isinstance(error, Conflict) else logging.WARNING
             if isinstance(error, ClientError | OSError) else logging.ERROR)
    log.log(level, "%s: error syncing %r: %s", name, key, error,
            exc_info=level == logging.ERROR)


def _annotations(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def volume_name(claim: Obj) -> str:
    """makeVolumeName: the PV of a claim is pvc-<claim uid>."""
    return f"pvc-{claim['metadata']['uid']}"


class LocalPathProvisioner:
    """Provisions and deletes the volumes of claims that name this provisioner: informers
    queue keys, workers sync them, a failed key is retried with backoff (the
    external-provisioner's ProvisionController loop)."""

    name: ClassVar[str] = "local-path-provisioner"
    # not the external-provisioner's 100 (--worker-threads): with 100, 200 claims at once
    # reached Bound later here (benchmarks/RESULTS.md, 2026-11-29 17:00), their creates
    # and events crowding the PV controller's writes at the API server
    workers: ClassVar[int] = 4

    def __init__(self, client: Client, informers: SharedInformerFactory,
                 recorder: EventRecorder, nodes_dir: Path, *,
                 tracer: Tracer = DISABLED) -> None:
        self.client = client
        self.recorder = recorder
        self.nodes_dir = nodes_dir
        self.tracer = tracer
        self.queue = RateLimitingQueue(self.name)
        self.claims = informers.informer("persistentvolumeclaims")
        self.volumes = informers.informer("persistentvolumes")
        self.classes = informers.informer("storageclasses", STORAGE_GROUP)
        self.nodes = informers.informer("nodes")
        self.volumes_client = client.resource("persistentvolumes")
        for informer in (self.claims, self.volumes):
            informer.add_event_handler(EventHandler(
                on_add=self.enqueue, on_update=lambda _old, new: self.enqueue(new)))

    def enqueue(self, obj: Obj) -> None:
        self.queue.add(object_key(obj))

    async def run(self) -> None:
        """The workers, until cancelled (the informers must have synced first)."""
        await run_workers(self.queue, self.workers, self.sync,
                          functools.partial(log_sync_error, self.name))

    def node_root(self, node: str) -> Path:
        """Where node `node` keeps its local-path volumes."""
        return self.nodes_dir / node / NODE_FOLDER

    async def sync(self, key: str) -> None:
        """A claim's key has a "/", a volume's does not."""
        if "/" in key:
            claim = self.claims.store.get(key)
            if claim is not None and self.should_provision(claim):
                await self.traced_provision(claim)
            return
        volume = self.volumes.store.get(key)
        if volume is not None:
            await self.sync_volume(volume)

    # -- provisioning -----------------------------------------------------------------------

    def should_provision(self, claim: Obj) -> bool:
        """shouldProvision: unbound, asking for us, and no volume of ours exists yet."""
        if claim["metadata"].get("deletionTimestamp") or claim["spec"].get("volumeName"):
            return False
        annotations = _annotations(claim)
        provisioner = (annotations.get(ANN_STORAGE_PROVISIONER)
                       or annotations.get(ANN_BETA_STORAGE_PROVISIONER))
        return (provisioner == PROVISIONER_NAME
                and self.volumes.store.get(volume_name(claim)) is None)

    async def traced_provision(self, claim: Obj) -> None:
        """provision(claim), as a span of the claim's trace when it carries one."""
        parent = tracing_context.of_object(claim) if self.tracer.enabled else None
        if parent is None:
            await self.provision(claim)
            return
        meta = claim["metadata"]
        with self.tracer.span("provision", parent=parent, **{
                "k8s.resource": "persistentvolumeclaims", "k8s.namespace": meta["namespace"],
                "k8s.name": meta["name"], "k8s.uid": meta["uid"],
                "node": _annotations(claim).get(ANN_SELECTED_NODE, "")}):
            await self.provision(claim)

    async def provision(self, claim: Obj) -> None:
        """provisionClaimOperation: the folder on the selected node, then the PV."""
        meta = claim["metadata"]
        class_name = claim_class(claim)
        storage_class = self.classes.store.get(class_name)
        if storage_class is None or storage_class.get("provisioner") != PROVISIONER_NAME:
            self.recorder.event(claim, "Warning", "ProvisioningFailed",
                                f'storageclass.storage.k8s.io "{class_name}" not found')
            return
        node = _annotations(claim).get(ANN_SELECTED_NODE, "")
        if not node:
            if storage_class.get("volumeBindingMode") == "WaitForFirstConsumer":
                return  # the scheduler selects the node
            self.recorder.event(claim, "Warning", "ProvisioningFailed",
                                "failed to provision volume with StorageClass "
                                f'"{class_name}": configuration error, no node was specified')
            return
        if self.nodes.store.get(node) is None:
            self.recorder.event(claim, "Warning", "ProvisioningFailed",
                                f'failed to get target node: nodes "{node}" not found')
            return
        self.recorder.event(claim, "Normal", "Provisioning",
                            f'External provisioner is provisioning volume for claim '
                            f'"{meta["namespace"]}/{meta["name"]}"')
        name = volume_name(claim)
        path = self.node_root(node) / f"{name}_{meta['namespace']}_{meta['name']}"
        await asyncio.to_thread(_make_folder, path)
        volume = self.make_volume(claim, storage_class, node, path)
        try:
            await self.volumes_client.create(volume)
        except AlreadyExists:
            return
        log.info("provisioned %s for claim %s/%s on node %s", name, meta["namespace"],
                 meta["name"], node)
        self.recorder.event(claim, "Normal", "ProvisioningSucceeded",
                            f"Successfully provisioned volume {name}")

    def make_volume(self, claim: Obj, storage_class: Obj, node: str, path: Path) -> Obj:
        """The PV for `claim`: its size and access modes, the class's reclaim policy, the
        node's folder, pinned to the node, pre-bound to the claim."""
        meta, spec = claim["metadata"], claim["spec"]
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "0")
        return {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": volume_name(claim),
                         "annotations": {ANN_DYNAMICALLY_PROVISIONED: PROVISIONER_NAME},
                         "finalizers": [FINALIZER]},
            "spec": {
                "capacity": {"storage": storage},
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy", "Delete"),
                "storageClassName": storage_class["metadata"]["name"],
                "volumeMode": spec.get("volumeMode", "Filesystem"),
                "hostPath": {"path": str(path), "type": "DirectoryOrCreate"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": HOSTNAME_LABEL, "operator": "In", "values": [node]}]}]}},
                "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                             "namespace": meta["namespace"], "name": meta["name"],
                             "uid": meta["uid"],
                             "resourceVersion": meta.get("resourceVersion", "")},
            },
        }

    # -- deleting -----------------------------------------------------------------------------

    def is_ours(self, volume: Obj) -> bool:
        return _annotations(volume).get(ANN_DYNAMICALLY_PROVISIONED) == PROVISIONER_NAME

    async def sync_volume(self, volume: Obj) -> None:
        """shouldDelete then deleteVolumeOperation: a Released Delete volume of ours loses
        its folder, then the PV is deleted and, once it is terminating, our finalizer."""
        if not self.is_ours(volume):
            return
        spec, meta = volume["spec"], volume["metadata"]
        released = (volume.get("status") or {}).get("phase") == "Released"
        if meta.get("deletionTimestamp"):
            if released or spec.get("persistentVolumeReclaimPolicy") != "Delete":
                await self._remove_finalizer(volume)
            return
        if not released or spec.get("persistentVolumeReclaimPolicy") != "Delete":
            return
        path = self._folder_of(volume)
        if path is None:
            self.recorder.event(volume, "Warning", "VolumeFailedDelete",
                                f"{(spec.get('hostPath') or {}).get('path', '')} is not "
                                f"a folder of this provisioner")
            return
        await asyncio.to_thread(shutil.rmtree, path, ignore_errors=True)
        log.info("deleted the folder %s of volume %s", path, meta["name"])
        try:
            await self.volumes_client.delete(meta["name"])
        except NotFound:
            return

    def _folder_of(self, volume: Obj) -> Path | None:
        """The volume's folder, if it lies in a node's local-path folder (nothing else is
        ever removed)."""
        path = (volume["spec"].get("hostPath") or {}).get("path", "")
        if not path:
            return None
        folder = Path(os.path.normpath(path))
        root = folder.parent
        if root.name != NODE_FOLDER or root.parent.parent != self.nodes_dir:
            return None
        return folder

    async def _remove_finalizer(self, volume: Obj) -> None:
        finalizers = volume["metadata"].get("finalizers") or []
        if FINALIZER not in finalizers:
            return
        await self.volumes_client.patch(
            volume["metadata"]["name"],
            [{"op": "test", "path": "/metadata/resourceVersion",
              "value": volume["metadata"]["resourceVersion"]},
             {"op": "replace", "path": "/metadata/finalizers",
              "value": [f for f in finalizers if f != FINALIZER]}],
            patch_type="json")


def _make_folder(path: Path) -> None:
    """mkdir -m 0777 -p, as rancher's helper pod creates a volume's folder."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(VOLUME_DIR_MODE)
