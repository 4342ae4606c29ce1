"""storage.k8s.io/v1 CSI kinds: drivers, nodes and volume attachments.

Column descriptions are the API's field documentation (SwaggerDoc), as upstream's.
CSIStorageCapacities have no printer here: upstream's printers.go has one, but their
storage answers with the apiserver's default table (Name, Created At), and so does ours.
"""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.apiserver.endpoints.tables.cells import NONE, UNSET, age, name_of
from minikube_py.apiserver.endpoints.tables.table import AGE, NAME, Cells, column

_ATTACH_REQUIRED = (
    "attachRequired indicates this CSI volume driver requires an attach operation (because it "
    "implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach "
    "detach controller should call the attach volume interface which checks the "
    "volumeattachment status and waits until the volume is attached before proceeding to "
    "mounting. The CSI external-attacher coordinates with CSI volume driver and updates the "
    "volumeattachment status when the attach operation is complete. If the value is specified "
    "to false, the attach operation will be skipped. Otherwise the attach operation will be "
    "called.\n\nThis field is immutable."
)
_POD_INFO_ON_MOUNT = (
    "podInfoOnMount indicates this CSI volume driver requires additional pod information (like "
    "podName, podUID, etc.) during mount operations, if set to true. If set to false, pod "
    "information will not be passed on mount. Default is false.\n\nThe CSI driver specifies "
    "podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information "
    "as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for "
    "parsing and validating the information passed in as VolumeContext.\n\nThe following "
    "VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but "
    "the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name "
    "\"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": "
    "string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral "
    "inline volume\n                                defined by a CSIVolumeSource, otherwise "
    "\"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is "
    "only required for drivers which support both the \"Persistent\" and \"Ephemeral\" "
    "VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. "
    "As Kubernetes 1.15 doesn't support this field, drivers can only support one mode when "
    "deployed on such a cluster and the deployment determines which mode that is, for example "
    "via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes < "
    "1.29 and now is mutable."
)
_STORAGE_CAPACITY = (
    "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the "
    "storage capacity that the driver deployment will report by creating CSIStorageCapacity "
    "objects with capacity information, if set to true.\n\nThe check can be enabled "
    "immediately when deploying a driver. In that case, provisioning new volumes with late "
    "binding will pause until the driver deployment has published some suitable "
    "CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field "
    "unset or false and it can be flipped later when storage capacity information has been "
    "published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is mutable."
)
_TOKEN_REQUESTS = (
    "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting "
    "volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext "
    "in the CSI NodePublishVolume calls. The CSI driver should parse and validate the "
    "following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {\n  "
    "\"<audience>\": {\n    \"token\": <token>,\n    \"expirationTimestamp\": <expiration "
    "timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each TokenRequest should be "
    "different and at most one token is empty string. To receive a new token after expiry, "
    "RequiresRepublish can be used to trigger NodePublishVolume periodically."
)
_REQUIRES_REPUBLISH = (
    "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically "
    "called to reflect any possible change in the mounted volume. This field defaults to "
    "false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to "
    "NodePublishVolume should only update the contents of the volume. New mount points will "
    "not be seen by a running container."
)
_VOLUME_LIFECYCLE_MODES = (
    "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The "
    "default if the list is empty is \"Persistent\", which is the usage defined by the CSI "
    "specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other "
    "mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec with "
    "CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to "
    "be aware of this because it is only going to get a NodePublishVolume call for such a "
    "volume.\n\nFor more information about implementing this mode, see "
    "https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support "
    "one or more of these modes and more modes may be added in the future.\n\nThis field is "
    "beta. This field is immutable."
)
_ATTACHER = (
    "attacher indicates the name of the volume driver that MUST handle this request. This is "
    "the name returned by GetPluginName()."
)
_PERSISTENT_VOLUME_NAME = (
    "persistentVolumeName represents the name of the persistent volume to attach."
)
_NODE_NAME = (
    "nodeName represents the node that the volume should be attached to."
)
_ATTACHED = (
    "attached indicates the volume is successfully attached. This field must only be set by "
    "the entity completing the attach operation, i.e. the external-attacher."
)

CSI_DRIVER_COLUMNS = (
    NAME,
    column("AttachRequired", "boolean", _ATTACH_REQUIRED),
    column("PodInfoOnMount", "boolean", _POD_INFO_ON_MOUNT),
    column("StorageCapacity", "boolean", _STORAGE_CAPACITY),
    column("TokenRequests", "string", _TOKEN_REQUESTS),
    column("RequiresRepublish", "boolean", _REQUIRES_REPUBLISH),
    column("Modes", "string", _VOLUME_LIFECYCLE_MODES),
    AGE,
)


def _flag(spec: Obj, name: str, unset: bool) -> bool:
    """A *bool of the spec, or what the printer shows when it is nil."""
    value = spec.get(name)
    return unset if value is None else value is True


def print_csi_driver(driver: Obj, now: datetime) -> Cells:
    """printCSIDriver: the flags (nil read as their defaults), the token audiences and the
    lifecycle modes."""
    spec = driver.get("spec") or {}
    requests = spec.get("tokenRequests")
    tokens = UNSET if requests is None else ",".join(
        str((request or {}).get("audience", "")) for request in requests)
    modes = ",".join(str(mode) for mode in spec.get("volumeLifecycleModes") or []) or NONE
    return [
        name_of(driver),
        _flag(spec, "attachRequired", True),
        _flag(spec, "podInfoOnMount", False),
        _flag(spec, "storageCapacity", False),
        tokens,
        _flag(spec, "requiresRepublish", False),
        modes,
        age(driver, now),
    ]


CSI_NODE_COLUMNS = (
    NAME,
    column("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on "
                                 "the node"),
    AGE,
)


def print_csi_node(node: Obj, now: datetime) -> Cells:
    """printCSINode: how many drivers the node has."""
    return [name_of(node), len((node.get("spec") or {}).get("drivers") or []), age(node, now)]


VOLUME_ATTACHMENT_COLUMNS = (
    NAME,
    column("Attacher", "string", _ATTACHER, format_="name"),
    column("PV", "string", _PERSISTENT_VOLUME_NAME),
    column("Node", "string", _NODE_NAME),
    column("Attached", "boolean", _ATTACHED),
    AGE,
)


def print_volume_attachment(attachment: Obj, now: datetime) -> Cells:
    """printVolumeAttachment: the volume's name is empty for an inline volume."""
    spec = attachment.get("spec") or {}
    return [
        name_of(attachment),
        spec.get("attacher", ""),
        (spec.get("source") or {}).get("persistentVolumeName") or "",
        spec.get("nodeName", ""),
        (attachment.get("status") or {}).get("attached") is True,
        age(attachment, now),
    ]

