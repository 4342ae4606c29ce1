"""core/v1 Volume: the volume sources a pod can mount, and the claim spec ephemeral volumes
embed.

Upstream: k8s.io/api/core/v1/types.go. Only the sources this project uses are described
field by field; legacy cloud and network sources are `any`.
"""

from __future__ import annotations

from minikube_py.api.schema.container import OBJECT_FIELD_SELECTOR, RESOURCE_FIELD_SELECTOR
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
    obj,
)
from minikube_py.api.schema.meta import LABEL_SELECTOR, OBJECT_META
from minikube_py.api.schema.references import (
    CORE,
    LOCAL_OBJECT_REFERENCE,
    TYPED_LOCAL_OBJECT_REFERENCE,
    TYPED_OBJECT_REFERENCE,
)

KEY_TO_PATH = obj(
    f"{CORE}.KeyToPath",
    "Maps a key of a ConfigMap or Secret to a file path.",
    key=f(STRING, "The key to project.", required=True),
    mode=f(INTEGER, "Mode bits of the file, e.g. 0644 as decimal 420."),
    path=f(STRING, "Relative path of the file.", required=True),
    user=f(INTEGER, "Owner UID of the file."),
)

CONFIG_MAP_VOLUME_SOURCE = obj(
    f"{CORE}.ConfigMapVolumeSource",
    "Files made from the keys of a ConfigMap.",
    defaultMode=f(INTEGER, "Mode bits of the files; defaults to 0644."),
    defaultUser=f(INTEGER, "Owner UID of the files."),
    items=atomic(KEY_TO_PATH, "Keys to project; all keys if empty."),
    name=f(STRING, "Name of the ConfigMap."),
    optional=f(BOOLEAN, "If true, the ConfigMap or keys may be missing."),
)

SECRET_VOLUME_SOURCE = obj(
    f"{CORE}.SecretVolumeSource",
    "Files made from the keys of a Secret.",
    defaultMode=f(INTEGER, "Mode bits of the files; defaults to 0644."),
    defaultUser=f(INTEGER, "Owner UID of the files."),
    items=atomic(KEY_TO_PATH, "Keys to project; all keys if empty."),
    optional=f(BOOLEAN, "If true, the Secret or keys may be missing."),
    secretName=f(STRING, "Name of the Secret."),
)

EMPTY_DIR_VOLUME_SOURCE = obj(
    f"{CORE}.EmptyDirVolumeSource",
    "An empty directory that lives as long as the pod.",
    medium=f(STRING, "Storage medium: empty for the node's default, or Memory (tmpfs)."),
    mode=f(INTEGER, "Permission bits of the directory."),
    sizeLimit=f(QUANTITY, "Maximum size of the directory."),
)

HOST_PATH_VOLUME_SOURCE = obj(
    f"{CORE}.HostPathVolumeSource",
    "A file or directory of the node's filesystem.",
    path=f(STRING, "Path on the node.", required=True),
    type=f(STRING, "What must exist at path: Directory, File, Socket, DirectoryOrCreate, ..."),
)

PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE = obj(
    f"{CORE}.PersistentVolumeClaimVolumeSource",
    "The volume bound to a PersistentVolumeClaim in the pod's namespace.",
    claimName=f(STRING, "Name of the claim.", required=True),
    readOnly=f(BOOLEAN, "Mount read-only."),
)

DOWNWARD_API_VOLUME_FILE = obj(
    f"{CORE}.DownwardAPIVolumeFile",
    "One file holding a field or resource of the pod.",
    fieldRef=f(OBJECT_FIELD_SELECTOR, "A field of the pod (labels, annotations, name, ...)."),
    mode=f(INTEGER, "Mode bits of the file."),
    path=f(STRING, "Relative path of the file.", required=True),
    resourceFieldRef=f(RESOURCE_FIELD_SELECTOR, "A resource request or limit."),
    user=f(INTEGER, "Owner UID of the file."),
)

DOWNWARD_API_VOLUME_SOURCE = obj(
    f"{CORE}.DownwardAPIVolumeSource",
    "Files holding information about the pod.",
    defaultMode=f(INTEGER, "Mode bits of the files; defaults to 0644."),
    defaultUser=f(INTEGER, "Owner UID of the files."),
    items=atomic(DOWNWARD_API_VOLUME_FILE, "The files."),
)

CONFIG_MAP_PROJECTION = obj(
    f"{CORE}.ConfigMapProjection",
    "Keys of a ConfigMap projected into a projected volume.",
    items=atomic(KEY_TO_PATH, "Keys to project; all keys if empty."),
    name=f(STRING, "Name of the ConfigMap."),
    optional=f(BOOLEAN, "If true, the ConfigMap or keys may be missing."),
)

SECRET_PROJECTION = obj(
    f"{CORE}.SecretProjection",
    "Keys of a Secret projected into a projected volume.",
    items=atomic(KEY_TO_PATH, "Keys to project; all keys if empty."),
    name=f(STRING, "Name of the Secret."),
    optional=f(BOOLEAN, "If true, the Secret or keys may be missing."),
)

DOWNWARD_API_PROJECTION = obj(
    f"{CORE}.DownwardAPIProjection",
    "Downward API files projected into a projected volume.",
    items=atomic(DOWNWARD_API_VOLUME_FILE, "The files."),
)

SERVICE_ACCOUNT_TOKEN_PROJECTION = obj(
    f"{CORE}.ServiceAccountTokenProjection",
    "A service account token, refreshed by the kubelet.",
    audience=f(STRING, "Intended audience of the token; the API server's by default."),
    expirationSeconds=f(INTEGER, "Requested validity of the token; default 1 hour."),
    path=f(STRING, "Relative path of the token file.", required=True),
    user=f(INTEGER, "Owner UID of the file."),
)

CLUSTER_TRUST_BUNDLE_PROJECTION = obj(
    f"{CORE}.ClusterTrustBundleProjection",
    "Certificates of ClusterTrustBundle objects written to a file.",
    labelSelector=f(LABEL_SELECTOR, "Select bundles by label (with signerName)."),
    name=f(STRING, "Select one bundle by name."),
    optional=f(BOOLEAN, "If true, missing bundles do not block pod start."),
    path=f(STRING, "Relative path of the file.", required=True),
    signerName=f(STRING, "Select bundles of this signer."),
    user=f(INTEGER, "Owner UID of the file."),
)

POD_CERTIFICATE_PROJECTION = obj(
    f"{CORE}.PodCertificateProjection",
    "A private key and certificate the kubelet obtains for the pod.",
    certificateChainPath=f(STRING, "Where to write the certificate chain."),
    credentialBundlePath=f(STRING, "Where to write key and chain as one PEM bundle."),
    keyPath=f(STRING, "Where to write the private key."),
    keyType=f(STRING, "Type of key pair to generate, e.g. ED25519.", required=True),
    maxExpirationSeconds=f(INTEGER, "Maximum lifetime of the certificate."),
    signerName=f(STRING, "Signer the certificate request is addressed to.", required=True),
    user=f(INTEGER, "Owner UID of the files."),
    userAnnotations=f(STRING_MAP, "Extra information passed to the signer."),
)

VOLUME_PROJECTION = obj(
    f"{CORE}.VolumeProjection",
    "One source of a projected volume; exactly one is set.",
    clusterTrustBundle=f(CLUSTER_TRUST_BUNDLE_PROJECTION, "Trust bundle certificates."),
    configMap=f(CONFIG_MAP_PROJECTION, "Keys of a ConfigMap."),
    downwardAPI=f(DOWNWARD_API_PROJECTION, "Information about the pod."),
    podCertificate=f(POD_CERTIFICATE_PROJECTION, "A key and certificate for the pod."),
    secret=f(SECRET_PROJECTION, "Keys of a Secret."),
    serviceAccountToken=f(SERVICE_ACCOUNT_TOKEN_PROJECTION, "A service account token."),
)

PROJECTED_VOLUME_SOURCE = obj(
    f"{CORE}.ProjectedVolumeSource",
    "Several sources projected into one directory.",
    defaultMode=f(INTEGER, "Mode bits of the files; defaults to 0644."),
    defaultUser=f(INTEGER, "Owner UID of the files."),
    sources=atomic(VOLUME_PROJECTION, "The sources."),
)

NFS_VOLUME_SOURCE = obj(
    f"{CORE}.NFSVolumeSource",
    "An NFS export.",
    path=f(STRING, "Path exported by the server.", required=True),
    readOnly=f(BOOLEAN, "Mount read-only."),
    server=f(STRING, "Hostname or IP of the NFS server.", required=True),
)

CSI_VOLUME_SOURCE = obj(
    f"{CORE}.CSIVolumeSource",
    "An ephemeral volume provided by a CSI driver.",
    driver=f(STRING, "Name of the CSI driver.", required=True),
    fsType=f(STRING, "Filesystem type, e.g. ext4."),
    nodePublishSecretRef=f(LOCAL_OBJECT_REFERENCE, "Secret passed to NodePublishVolume."),
    readOnly=f(BOOLEAN, "Mount read-only."),
    volumeAttributes=f(STRING_MAP, "Driver-specific properties."),
)

IMAGE_VOLUME_SOURCE = obj(
    f"{CORE}.ImageVolumeSource",
    "The content of an OCI image or artifact, read-only.",
    pullPolicy=f(STRING, "Always, Never or IfNotPresent."),
    reference=f(STRING, "Image or artifact reference."),
)

VOLUME_RESOURCE_REQUIREMENTS = obj(
    f"{CORE}.VolumeResourceRequirements",
    "Storage requested and limited for a volume.",
    limits=f(QUANTITY_MAP, "Maximum amount of each resource."),
    requests=f(QUANTITY_MAP, "Minimum amount of each resource, e.g. storage: 1Gi."),
)

# Here rather than with the PersistentVolumeClaim kind: ephemeral volumes embed a claim.
PERSISTENT_VOLUME_CLAIM_SPEC = obj(
    f"{CORE}.PersistentVolumeClaimSpec",
    "The storage a claim asks for.",
    accessModes=atomic(STRING, "ReadWriteOnce, ReadOnlyMany, ReadWriteMany or "
                       "ReadWriteOncePod."),
    dataSource=f(TYPED_LOCAL_OBJECT_REFERENCE, "Populate the volume from a snapshot or claim."),
    dataSourceRef=f(TYPED_OBJECT_REFERENCE, "Populate the volume from any populator object."),
    resources=f(VOLUME_RESOURCE_REQUIREMENTS, "Minimum resources the volume should have."),
    selector=f(LABEL_SELECTOR, "Labels of volumes eligible for binding."),
    storageClassName=f(STRING, "Name of the StorageClass required."),
    volumeAttributesClassName=f(STRING, "Name of the VolumeAttributesClass to use."),
    volumeMode=f(STRING, "Filesystem or Block."),
    volumeName=f(STRING, "Name of the PersistentVolume to bind to."),
)

PERSISTENT_VOLUME_CLAIM_TEMPLATE = obj(
    f"{CORE}.PersistentVolumeClaimTemplate",
    "A claim to create for an ephemeral volume.",
    metadata=f(OBJECT_META, "Labels and annotations copied to the claim."),
    spec=f(PERSISTENT_VOLUME_CLAIM_SPEC, "Spec of the claim.", required=True),
)

EPHEMERAL_VOLUME_SOURCE = obj(
    f"{CORE}.EphemeralVolumeSource",
    "A volume from a claim created with the pod and deleted with it.",
    volumeClaimTemplate=f(PERSISTENT_VOLUME_CLAIM_TEMPLATE, "The claim to create."),
)

VOLUME = obj(
    f"{CORE}.Volume",
    "A named volume of a pod; exactly one source is set. Legacy sources are not described.",
    awsElasticBlockStore=f(ANY, "Deprecated AWS EBS disk."),
    azureDisk=f(ANY, "Deprecated Azure data disk."),
    azureFile=f(ANY, "Deprecated Azure file share."),
    cephfs=f(ANY, "Deprecated CephFS mount."),
    cinder=f(ANY, "Deprecated OpenStack Cinder volume."),
    configMap=f(CONFIG_MAP_VOLUME_SOURCE, "Files from a ConfigMap."),
    csi=f(CSI_VOLUME_SOURCE, "Ephemeral storage from a CSI driver."),
    downwardAPI=f(DOWNWARD_API_VOLUME_SOURCE, "Files about the pod."),
    emptyDir=f(EMPTY_DIR_VOLUME_SOURCE, "A scratch directory living as long as the pod."),
    ephemeral=f(EPHEMERAL_VOLUME_SOURCE, "A claim created and deleted with the pod."),
    fc=f(ANY, "Fibre Channel volume."),
    flexVolume=f(ANY, "Deprecated FlexVolume plugin."),
    flocker=f(ANY, "Deprecated Flocker volume."),
    gcePersistentDisk=f(ANY, "Deprecated GCE persistent disk."),
    gitRepo=f(ANY, "Deprecated git repository checkout."),
    glusterfs=f(ANY, "Deprecated GlusterFS mount."),
    hostPath=f(HOST_PATH_VOLUME_SOURCE, "A path on the node."),
    image=f(IMAGE_VOLUME_SOURCE, "Content of an OCI image."),
    iscsi=f(ANY, "iSCSI disk."),
    name=f(STRING, "Name of the volume, a DNS_LABEL unique in the pod.", required=True),
    nfs=f(NFS_VOLUME_SOURCE, "An NFS export."),
    persistentVolumeClaim=f(PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE, "A claimed volume."),
    photonPersistentDisk=f(ANY, "Deprecated Photon persistent disk."),
    portworxVolume=f(ANY, "Deprecated Portworx volume."),
    projected=f(PROJECTED_VOLUME_SOURCE, "Several sources in one directory."),
    quobyte=f(ANY, "Deprecated Quobyte mount."),
    rbd=f(ANY, "Deprecated Ceph RBD disk."),
    scaleIO=f(ANY, "Deprecated ScaleIO volume."),
    secret=f(SECRET_VOLUME_SOURCE, "Files from a Secret."),
    storageos=f(ANY, "Deprecated StorageOS volume."),
    vsphereVolume=f(ANY, "Deprecated vSphere disk."),
)

# Reported for the volumes of pods and for claims.
VOLUME_HEALTH_CONDITION = obj(
    f"{CORE}.VolumeHealthCondition",
    "An adverse health condition of a volume.",
    message=f(STRING, "Human-readable description."),
    reason=f(STRING, "CamelCase reason.", required=True),
    status=f(STRING, "Health category.", required=True),
)
