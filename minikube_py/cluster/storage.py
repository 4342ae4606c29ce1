"""The cluster's default StorageClass, as kind's: `standard`, served by the local-path
provisioner (minikube_py/provisioner), volumes made once a pod is scheduled."""

from __future__ import annotations

from pathlib import Path

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import LOCAL_PATH_PROVISIONER
from minikube_py.client.errors import AlreadyExists
from minikube_py.client.rest import Client

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
DEFAULT_STORAGE_CLASS: Obj = {
    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
    "metadata": {"name": "standard", "annotations": {DEFAULT_CLASS_ANNOTATION: "true"},
                 "labels": {"app.kubernetes.io/managed-by": "minikube-py"}},
    "provisioner": LOCAL_PATH_PROVISIONER,
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "WaitForFirstConsumer",
    "allowVolumeExpansion": True,
}


async def ensure_default_storage_class(kubeconfig: Path) -> None:
    """Create `standard` unless it exists (a later `up` leaves what a user changed)."""
    async with Client.from_kubeconfig(kubeconfig, user_agent="minikube-py-up") as client:
        try:
            await client.resource("storageclasses", "storage.k8s.io").create(
                DEFAULT_STORAGE_CLASS)
        except AlreadyExists:
            return
