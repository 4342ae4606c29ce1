"""core/v1 PersistentVolumeClaim and PersistentVolume, storage.k8s.io/v1 StorageClass.

Upstream: k8s.io/api/core/v1/types.go and k8s.io/api/storage/v1/types.go. The claim
spec lives in volume.py, since ephemeral volumes embed it.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import (
    ANY,
    BOOLEAN,
    QUANTITY_MAP,
    STRING,
    STRING_MAP,
    atomic,
    f,
    merged,
    obj,
)
from minikube_py.api.schema.meta import (
    TIME,
    api_object,
)
from minikube_py.api.schema.pod import NODE_SELECTOR
from minikube_py.api.schema.references import CORE, OBJECT_REFERENCE
from minikube_py.api.schema.volume import (
    HOST_PATH_VOLUME_SOURCE,
    NFS_VOLUME_SOURCE,
    PERSISTENT_VOLUME_CLAIM_SPEC,
    VOLUME_HEALTH_CONDITION,
)

PERSISTENT_VOLUME_CLAIM_CONDITION = obj(
    f"{CORE}.PersistentVolumeClaimCondition",
    "One aspect of a claim's state (e.g. Resizing).",
    lastProbeTime=f(TIME, "Last time the condition was probed."),
    lastTransitionTime=f(TIME, "When status last changed."),
    message=f(STRING, "Human-readable details."),
    reason=f(STRING, "CamelCase reason for the last transition."),
    status=f(STRING, "True, False or Unknown.", required=True),
    type=f(STRING, "Type of the condition.", required=True),
)

VOLUME_HEALTH_STATUS = obj(
    f"{CORE}.VolumeHealthStatus",
    "Health of a volume.",
    healthConditions=merged(VOLUME_HEALTH_CONDITION, "Adverse conditions.", key="status"),
    lastTransitionTime=f(TIME, "When the conditions last changed."),
)

MODIFY_VOLUME_STATUS = obj(
    f"{CORE}.ModifyVolumeStatus",
    "Status of a change of the volume's attributes class.",
    status=f(STRING, "Pending, InProgress or Infeasible.", required=True),
    targetVolumeAttributesClassName=f(STRING, "Class being applied."),
)

PERSISTENT_VOLUME_CLAIM_STATUS = obj(
    f"{CORE}.PersistentVolumeClaimStatus",
    "The observed state of a claim.",
    accessModes=atomic(STRING, "Access modes of the bound volume."),
    allocatedResourceStatuses=f(STRING_MAP, "Status of resizes, by resource."),
    allocatedResources=f(QUANTITY_MAP, "Resources allocated to the claim."),
    capacity=f(QUANTITY_MAP, "Resources of the bound volume."),
    conditions=merged(PERSISTENT_VOLUME_CLAIM_CONDITION, "Current conditions.", key="type"),
    currentVolumeAttributesClassName=f(STRING, "Attributes class in effect."),
    healthStatus=f(VOLUME_HEALTH_STATUS, "Health of the volume."),
    modifyVolumeStatus=f(MODIFY_VOLUME_STATUS, "Status of an attributes class change."),
    phase=f(STRING, "Pending, Bound or Lost."),
)

PERSISTENT_VOLUME_CLAIM = api_object(
    f"{CORE}.PersistentVolumeClaim",
    "A request for storage by a user, bound to a PersistentVolume.",
    spec=f(PERSISTENT_VOLUME_CLAIM_SPEC, "The storage requested."),
    status=f(PERSISTENT_VOLUME_CLAIM_STATUS, "Observed state of the claim. Read-only."),
)

LOCAL_VOLUME_SOURCE = obj(
    f"{CORE}.LocalVolumeSource",
    "A local disk, partition or directory of one node.",
    fsType=f(STRING, "Filesystem type, for block devices."),
    path=f(STRING, "Full path on the node.", required=True),
)

VOLUME_NODE_AFFINITY = obj(
    f"{CORE}.VolumeNodeAffinity",
    "The nodes a volume can be used from.",
    required=f(NODE_SELECTOR, "Nodes that can access the volume."),
)

PERSISTENT_VOLUME_SPEC = obj(
    f"{CORE}.PersistentVolumeSpec",
    "A piece of storage: its capacity, access modes and source. Legacy sources are not "
    "described.",
    accessModes=atomic(STRING, "Ways the volume can be mounted."),
    awsElasticBlockStore=f(ANY, "Deprecated AWS EBS disk."),
    azureDisk=f(ANY, "Deprecated Azure data disk."),
    azureFile=f(ANY, "Deprecated Azure file share."),
    capacity=f(QUANTITY_MAP, "Capacity of the volume, e.g. storage: 10Gi."),
    cephfs=f(ANY, "Deprecated CephFS mount."),
    cinder=f(ANY, "Deprecated OpenStack Cinder volume."),
    claimRef=f(OBJECT_REFERENCE, "The claim bound to this volume."),
    csi=f(ANY, "A volume provided by a CSI driver."),
    fc=f(ANY, "Fibre Channel volume."),
    flexVolume=f(ANY, "Deprecated FlexVolume plugin."),
    flocker=f(ANY, "Deprecated Flocker volume."),
    gcePersistentDisk=f(ANY, "Deprecated GCE persistent disk."),
    glusterfs=f(ANY, "Deprecated GlusterFS mount."),
    hostPath=f(HOST_PATH_VOLUME_SOURCE, "A path on the node (single-node testing only)."),
    iscsi=f(ANY, "iSCSI disk."),
    local=f(LOCAL_VOLUME_SOURCE, "A local disk of one node."),
    mountOptions=atomic(STRING, "Mount options, e.g. ro or soft."),
    nfs=f(NFS_VOLUME_SOURCE, "An NFS export."),
    nodeAffinity=f(VOLUME_NODE_AFFINITY, "Nodes the volume can be used from."),
    persistentVolumeReclaimPolicy=f(STRING, "Retain, Delete or Recycle: what happens when "
                                    "released."),
    photonPersistentDisk=f(ANY, "Deprecated Photon persistent disk."),
    portworxVolume=f(ANY, "Deprecated Portworx volume."),
    quobyte=f(ANY, "Deprecated Quobyte mount."),
    rbd=f(ANY, "Deprecated Ceph RBD disk."),
    scaleIO=f(ANY, "Deprecated ScaleIO volume."),
    storageClassName=f(STRING, "StorageClass of the volume."),
    storageos=f(ANY, "Deprecated StorageOS volume."),
    volumeAttributesClassName=f(STRING, "VolumeAttributesClass of the volume."),
    volumeMode=f(STRING, "Filesystem (default) or Block."),
    vsphereVolume=f(ANY, "Deprecated vSphere disk."),
)

PERSISTENT_VOLUME_STATUS = obj(
    f"{CORE}.PersistentVolumeStatus",
    "The observed state of a volume.",
    lastPhaseTransitionTime=f(TIME, "When the phase last changed."),
    message=f(STRING, "Human-readable details."),
    phase=f(STRING, "Pending, Available, Bound, Released or Failed."),
    reason=f(STRING, "CamelCase reason for a failure."),
)

PERSISTENT_VOLUME = api_object(
    f"{CORE}.PersistentVolume",
    "A piece of storage in the cluster, provisioned by an admin or a StorageClass.",
    spec=f(PERSISTENT_VOLUME_SPEC, "The storage offered."),
    status=f(PERSISTENT_VOLUME_STATUS, "Observed state of the volume. Read-only."),
)

STORAGE = "io.k8s.api.storage.v1"

TOPOLOGY_SELECTOR_TERM = obj(
    f"{CORE}.TopologySelectorTerm",
    "A topology term: all its label requirements must hold (ANDed).",
    matchLabelExpressions=atomic(obj(
        f"{CORE}.TopologySelectorLabelRequirement",
        "A topology label and the values it may have.",
        key=f(STRING, "The label key.", required=True),
        values=atomic(STRING, "The values the label may have.", required=True),
    ), "Requirements on topology labels."),
)

STORAGE_CLASS = api_object(
    f"{STORAGE}.StorageClass",
    "A class of storage, for which PersistentVolumes can be dynamically provisioned.",
    allowVolumeExpansion=f(BOOLEAN, "Whether claims of this class may grow."),
    allowedTopologies=atomic(TOPOLOGY_SELECTOR_TERM, "Where volumes may be provisioned."),
    mountOptions=atomic(STRING, "Mount options of provisioned volumes, e.g. ro."),
    parameters=f(STRING_MAP, "Parameters for the provisioner."),
    provisioner=f(STRING, "The provisioner's name.", required=True),
    reclaimPolicy=f(STRING, "Delete (default) or Retain, for provisioned volumes."),
    volumeBindingMode=f(STRING, "Immediate (default) or WaitForFirstConsumer."),
)
