"""core/v1 PersistentVolumeClaim and PersistentVolume; storage.k8s.io/v1 StorageClass and
the CSI kinds (CSIDriver, CSINode, VolumeAttachment, CSIStorageCapacity).

Upstream: k8s.io/api/core/v1/types.go and k8s.io/api/storage/v1/types.go. The claim
spec lives in volume.py, since ephemeral volumes embed it.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import (
    ANY,
    BOOLEAN,
    INTEGER,
    QUANTITY,
    QUANTITY_MAP,
    STRING,
    STRING_MAP,
    atomic,
    f,
    merged,
    obj,
    set_of,
)
from minikube_py.api.schema.meta import (
    LABEL_SELECTOR,
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

TOKEN_REQUEST = obj(
    f"{STORAGE}.TokenRequest",
    "A service account token the kubelet passes to the driver on mount.",
    audience=f(STRING, "Intended audience of the token; empty: the API server's.",
               required=True),
    expirationSeconds=f(INTEGER, "Validity of the token, in seconds."),
)

CSI_DRIVER_SPEC = obj(
    f"{STORAGE}.CSIDriverSpec",
    "How Kubernetes works with a CSI driver.",
    attachRequired=f(BOOLEAN, "Whether volumes need an attach (ControllerPublishVolume) "
                     "before mount. Immutable."),
    fsGroupPolicy=f(STRING, "ReadWriteOnceWithFSType (default), File or None: when the "
                    "pod's fsGroup changes the volume's ownership."),
    nodeAllocatableUpdatePeriodSeconds=f(INTEGER, "How often the kubelet refreshes the "
                                         "driver's allocatable volume count."),
    podInfoOnMount=f(BOOLEAN, "Whether the kubelet passes the pod's name, namespace and uid "
                     "on mount."),
    preventPodSchedulingIfMissing=f(BOOLEAN, "Whether pods wait for the driver to be on "
                                    "their node."),
    requiresRepublish=f(BOOLEAN, "Whether NodePublishVolume is called again periodically."),
    seLinuxMount=f(BOOLEAN, "Whether the driver supports the -o context mount option."),
    serviceAccountTokenInSecrets=f(BOOLEAN, "Whether service account tokens are passed in "
                                   "the secrets field instead of the volume context."),
    storageCapacity=f(BOOLEAN, "Whether scheduling considers the driver's "
                      "CSIStorageCapacity objects."),
    tokenRequests=atomic(TOKEN_REQUEST, "Service account tokens the driver needs."),
    volumeLifecycleModes=set_of(STRING, "Persistent (default) and/or Ephemeral. Immutable."),
)

CSI_DRIVER = api_object(
    f"{STORAGE}.CSIDriver",
    "A CSI volume driver deployed on the cluster; its name is the driver's name.",
    spec=f(CSI_DRIVER_SPEC, "How the driver is used.", required=True),
)

CSI_NODE_DRIVER = obj(
    f"{STORAGE}.CSINodeDriver",
    "One CSI driver installed on the node.",
    allocatable=f(obj(
        f"{STORAGE}.VolumeNodeResources",
        "Volume limits of a driver on a node.",
        count=f(INTEGER, "Most volumes of this driver on the node."),
    ), "Volume resources available on the node."),
    name=f(STRING, "The driver's name.", required=True),
    nodeID=f(STRING, "The node's id as the driver knows it.", required=True),
    topologyKeys=atomic(STRING, "Topology labels the driver supports."),
)

STORAGE_HEALTH_CONDITION = obj(
    f"{STORAGE}.StorageHealthCondition",
    "An adverse condition of a storage backend.",
    accessMode=f(STRING, "Access mode affected; unset: all."),
    lastTransitionTime=f(TIME, "When the condition appeared."),
    message=f(STRING, "Human-readable details."),
    reason=f(STRING, "CamelCase reason.", required=True),
    status=f(STRING, "StorageUnreachable or StorageDegraded.", required=True),
    volumeMode=f(STRING, "Volume mode affected; unset: both."),
)

CSI_NODE = api_object(
    f"{STORAGE}.CSINode",
    "The CSI drivers installed on a node; its name is the node's name.",
    spec=f(obj(
        f"{STORAGE}.CSINodeSpec",
        "The CSI drivers on the node.",
        drivers=merged(CSI_NODE_DRIVER, "The drivers on the node.", key="name",
                       required=True),
    ), "The drivers on the node.", required=True),
    status=f(obj(
        f"{STORAGE}.CSINodeStatus",
        "Health of storage on the node.",
        storageHealth=merged(obj(
            f"{STORAGE}.StorageHealth",
            "Backend health reported by one driver.",
            healthConditions=atomic(STORAGE_HEALTH_CONDITION, "Adverse conditions."),
            name=f(STRING, "The driver's name.", required=True),
        ), "Backend health, by driver.", key="name"),
    ), "Storage health on the node."),
)

VOLUME_ERROR = obj(
    f"{STORAGE}.VolumeError",
    "An error of an attach or detach.",
    errorCode=f(INTEGER, "The gRPC code of the error."),
    message=f(STRING, "The error, safe to log."),
    time=f(TIME, "When the error happened."),
)

VOLUME_ATTACHMENT = api_object(
    f"{STORAGE}.VolumeAttachment",
    "The intent to attach a volume to a node, and its outcome.",
    spec=f(obj(
        f"{STORAGE}.VolumeAttachmentSpec",
        "What to attach where. Immutable.",
        attacher=f(STRING, "The driver that must attach the volume.", required=True),
        nodeName=f(STRING, "The node to attach the volume to.", required=True),
        source=f(obj(
            f"{STORAGE}.VolumeAttachmentSource",
            "The volume to attach: exactly one of its fields.",
            inlineVolumeSpec=f(PERSISTENT_VOLUME_SPEC, "An inline volume of a pod, "
                               "translated to a volume spec."),
            persistentVolumeName=f(STRING, "The persistent volume to attach."),
        ), "The volume to attach.", required=True),
    ), "What to attach where.", required=True),
    status=f(obj(
        f"{STORAGE}.VolumeAttachmentStatus",
        "The outcome of the attach, written by the attacher.",
        attachError=f(VOLUME_ERROR, "The last attach error."),
        attached=f(BOOLEAN, "Whether the volume is attached.", required=True),
        attachmentMetadata=f(STRING_MAP, "What the attacher returned, for the mount."),
        detachError=f(VOLUME_ERROR, "The last detach error."),
    ), "The outcome of the attach."),
)

CSI_STORAGE_CAPACITY = api_object(
    f"{STORAGE}.CSIStorageCapacity",
    "The capacity a CSI driver reports for one storage class in one topology segment.",
    capacity=f(QUANTITY, "Available capacity; unset: unknown."),
    maximumVolumeSize=f(QUANTITY, "Largest volume that can be created."),
    nodeTopology=f(LABEL_SELECTOR, "The nodes that can reach this storage."),
    storageClassName=f(STRING, "The storage class the capacity is for. Immutable.",
                       required=True),
)
