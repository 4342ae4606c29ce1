"""core/v1 storage: persistent volumes and persistent volume claims."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.api.storagehelpers import is_default_class
from minikube_py.apiserver.endpoints.tables.cells import UNSET, age, name_of
from minikube_py.apiserver.endpoints.tables.table import AGE, NAME, Cells, column

ACCESS_MODE_ABBREVIATIONS = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)
STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def access_modes(modes: list[str]) -> str:
    """GetAccessModesAsString: "RWO,RWX", always in this fixed order."""
    return ",".join(short for mode, short in ACCESS_MODE_ABBREVIATIONS if mode in modes)


def storage_class(obj: Obj) -> str:
    """The beta storage-class annotation wins over spec.storageClassName."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[STORAGE_CLASS_ANNOTATION]
    return (obj.get("spec") or {}).get("storageClassName", "")


def phase_or_terminating(obj: Obj) -> str:
    """The status phase, or "Terminating" once deletion has started."""
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return (obj.get("status") or {}).get("phase", "")


PERSISTENT_VOLUME_COLUMNS = (
    NAME,
    column("Capacity", "string", "capacity is the description of the persistent volume's "
                                 "resources and capacity."),
    column("Access Modes", "string", "accessModes contains all ways the volume can be "
                                     "mounted."),
    column("Reclaim Policy", "string", "persistentVolumeReclaimPolicy defines what happens "
                                       "to a persistent volume when released from its claim."),
    column("Status", "string", "phase indicates if a volume is available, bound to a claim, "
                               "or released by a claim."),
    column("Claim", "string", "claimRef is part of a bi-directional binding between "
                              "PersistentVolume and PersistentVolumeClaim."),
    column("StorageClass", "string", "StorageClass of the pv"),
    column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
    column("Reason", "string", "reason is a brief CamelCase string that describes any "
                               "failure."),
    AGE,
    column("VolumeMode", "string", "volumeMode defines if a volume is intended to be used "
                                   "with a formatted filesystem or to remain in raw block "
                                   "state.", priority=1),
)


def print_persistent_volume(volume: Obj, now: datetime) -> Cells:
    """printPersistentVolume: capacity, modes, policy, phase, claim, class."""
    spec = volume.get("spec") or {}
    claim = spec.get("claimRef")
    return [
        name_of(volume),
        (spec.get("capacity") or {}).get("storage", "0"),
        access_modes(spec.get("accessModes") or []),
        spec.get("persistentVolumeReclaimPolicy", ""),
        phase_or_terminating(volume),
        f"{claim.get('namespace', '')}/{claim.get('name', '')}" if claim is not None else "",
        storage_class(volume),
        spec.get("volumeAttributesClassName") or UNSET,
        (volume.get("status") or {}).get("reason", ""),
        age(volume, now),
        spec.get("volumeMode") or UNSET,
    ]


PERSISTENT_VOLUME_CLAIM_COLUMNS = (
    NAME,
    column("Status", "string", "phase represents the current phase of PersistentVolumeClaim."),
    column("Volume", "string", "volumeName is the binding reference to the PersistentVolume "
                               "backing this claim."),
    column("Capacity", "string", "capacity represents the actual resources of the underlying "
                                 "volume."),
    column("Access Modes", "string", "accessModes contains the actual access modes the volume "
                                     "backing the PVC has."),
    column("StorageClass", "string", "StorageClass of the pvc"),
    column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
    AGE,
    column("VolumeMode", "string", "volumeMode defines what type of volume is required by the "
                                   "claim.", priority=1),
)


def print_persistent_volume_claim(claim: Obj, now: datetime) -> Cells:
    """printPersistentVolumeClaim: capacity and modes appear once the claim is bound."""
    spec, status = (claim.get("spec") or {}), (claim.get("status") or {})
    capacity, modes = "", ""
    if spec.get("volumeName"):
        capacity = (status.get("capacity") or {}).get("storage", "0")
        modes = access_modes(status.get("accessModes") or [])
    return [
        name_of(claim),
        phase_or_terminating(claim),
        spec.get("volumeName", ""),
        capacity,
        modes,
        storage_class(claim),
        spec.get("volumeAttributesClassName") or UNSET,
        age(claim, now),
        spec.get("volumeMode") or UNSET,
    ]


STORAGE_CLASS_COLUMNS = (
    NAME,
    column("Provisioner", "string", "provisioner indicates the type of the provisioner."),
    column("ReclaimPolicy", "string", "reclaimPolicy controls the reclaimPolicy for "
                                      "dynamically provisioned PersistentVolumes of this "
                                      "storage class. Defaults to Delete."),
    column("VolumeBindingMode", "string", "volumeBindingMode indicates how "
                                          "PersistentVolumeClaims should be provisioned and "
                                          "bound.  When unset, VolumeBindingImmediate is used. "
                                          "This field is only honored by servers that enable "
                                          "the VolumeScheduling feature."),
    column("AllowVolumeExpansion", "string", "allowVolumeExpansion shows whether the storage "
                                             "class allow volume expand."),
    AGE,
)


def _or(value: object, default: str) -> object:
    """A Go pointer field's value, or what the printer shows when it is nil."""
    return default if value is None else value


def print_storage_class(storage_class: Obj, now: datetime) -> Cells:
    """printStorageClass: "(default)" after the default class's name."""
    name = name_of(storage_class)
    if is_default_class(storage_class):
        name += " (default)"
    return [
        name,
        storage_class.get("provisioner", ""),
        _or(storage_class.get("reclaimPolicy"), "Delete"),
        _or(storage_class.get("volumeBindingMode"), "Immediate"),
        storage_class.get("allowVolumeExpansion") is True,
        age(storage_class, now),
    ]
