"""core/v1 Node: taints, addresses, conditions, capacity and the system info its kubelet
reports.

Upstream: k8s.io/api/core/v1/types.go.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import (
    BOOLEAN,
    INTEGER,
    QUANTITY_MAP,
    STRING,
    array,
    atomic,
    f,
    merged,
    obj,
    set_of,
)
from minikube_py.api.schema.meta import (
    TIME,
    api_object,
)
from minikube_py.api.schema.references import CORE

TAINT = obj(
    f"{CORE}.Taint",
    "Repels pods that do not tolerate it from a node.",
    effect=f(STRING, "NoSchedule, PreferNoSchedule or NoExecute.", required=True),
    key=f(STRING, "Taint key.", required=True),
    timeAdded=f(TIME, "When a NoExecute taint was added."),
    value=f(STRING, "Taint value."),
)

CONFIG_MAP_NODE_CONFIG_SOURCE = obj(
    f"{CORE}.ConfigMapNodeConfigSource",
    "A ConfigMap holding kubelet configuration.",
    kubeletConfigKey=f(STRING, "Key holding the KubeletConfiguration.", required=True),
    name=f(STRING, "Name of the ConfigMap.", required=True),
    namespace=f(STRING, "Namespace of the ConfigMap.", required=True),
    resourceVersion=f(STRING, "resourceVersion of the ConfigMap."),
    uid=f(STRING, "UID of the ConfigMap."),
)

NODE_CONFIG_SOURCE = obj(
    f"{CORE}.NodeConfigSource",
    "Where a node's kubelet configuration comes from (deprecated dynamic config).",
    configMap=f(CONFIG_MAP_NODE_CONFIG_SOURCE, "A ConfigMap source."),
)

NODE_POD_PREEMPTION_POLICY = obj(
    f"{CORE}.NodePodPreemptionPolicy",
    "Which preemptions the node allows for its pods.",
    disableResizePreemption=f(array(STRING), "Owners whose resizes never preempt pods."),
)

NODE_SPEC = obj(
    f"{CORE}.NodeSpec",
    "The desired state of a node.",
    configSource=f(NODE_CONFIG_SOURCE, "Deprecated dynamic kubelet configuration."),
    externalID=f(STRING, "Deprecated."),
    podCIDR=f(STRING, "Pod IP range assigned to the node."),
    podCIDRs=set_of(STRING, "Pod IP ranges assigned to the node, one per IP family.",
                    strategy="merge"),
    podPreemptionPolicy=f(NODE_POD_PREEMPTION_POLICY, "Preemption settings of the node."),
    providerID=f(STRING, "ID of the node at the cloud provider."),
    taints=atomic(TAINT, "Taints of the node."),
    unschedulable=f(BOOLEAN, "If true, no new pods are scheduled here (cordon)."),
)

NODE_ADDRESS = obj(
    f"{CORE}.NodeAddress",
    "An address of a node.",
    address=f(STRING, "The address.", required=True),
    type=f(STRING, "Hostname, InternalIP, ExternalIP, InternalDNS or ExternalDNS.",
           required=True),
)

NODE_CONDITION = obj(
    f"{CORE}.NodeCondition",
    "One aspect of a node's state (Ready, MemoryPressure, DiskPressure, ...).",
    lastHeartbeatTime=f(TIME, "Last time the condition was reported."),
    lastTransitionTime=f(TIME, "When status last changed."),
    message=f(STRING, "Human-readable details."),
    reason=f(STRING, "CamelCase reason for the last transition."),
    status=f(STRING, "True, False or Unknown.", required=True),
    type=f(STRING, "Type of the condition.", required=True),
)

NODE_CONFIG_STATUS = obj(
    f"{CORE}.NodeConfigStatus",
    "Status of the deprecated dynamic kubelet configuration.",
    active=f(NODE_CONFIG_SOURCE, "Configuration the kubelet runs with."),
    assigned=f(NODE_CONFIG_SOURCE, "Configuration the kubelet will use."),
    error=f(STRING, "Problems reconciling the configuration."),
    lastKnownGood=f(NODE_CONFIG_SOURCE, "Configuration to fall back to."),
)

DAEMON_ENDPOINT = obj(
    f"{CORE}.DaemonEndpoint",
    "A port of a daemon on the node.",
    Port=f(INTEGER, "Port number.", required=True),
)

NODE_DAEMON_ENDPOINTS = obj(
    f"{CORE}.NodeDaemonEndpoints",
    "Ports of the daemons running on the node.",
    kubeletEndpoint=f(DAEMON_ENDPOINT, "The kubelet's port."),
)

NODE_FEATURES = obj(
    f"{CORE}.NodeFeatures",
    "Features the node's runtime supports.",
    supplementalGroupsPolicy=f(BOOLEAN, "Whether supplementalGroupsPolicy is supported."),
)

CONTAINER_IMAGE = obj(
    f"{CORE}.ContainerImage",
    "An image present on the node.",
    names=atomic(STRING, "Names of the image, e.g. with tag and digest."),
    sizeBytes=f(INTEGER, "Size of the image."),
)

NODE_SWAP_STATUS = obj(
    f"{CORE}.NodeSwapStatus",
    "Swap memory of the node.",
    capacity=f(INTEGER, "Total swap in bytes."),
)

NODE_SYSTEM_INFO = obj(
    f"{CORE}.NodeSystemInfo",
    "Versions and IDs reported by the node.",
    architecture=f(STRING, "CPU architecture, e.g. amd64.", required=True),
    bootID=f(STRING, "Boot ID.", required=True),
    containerRuntimeVersion=f(STRING, "Runtime and version, e.g. containerd://2.0.",
                              required=True),
    kernelVersion=f(STRING, "Kernel version (uname -r).", required=True),
    kubeProxyVersion=f(STRING, "Deprecated.", required=True),
    kubeletVersion=f(STRING, "Kubelet version.", required=True),
    machineID=f(STRING, "Machine ID (/etc/machine-id).", required=True),
    operatingSystem=f(STRING, "linux or windows.", required=True),
    osImage=f(STRING, "OS image from /etc/os-release.", required=True),
    runningInUserNamespace=f(BOOLEAN, "Whether the node runs in a user namespace."),
    swap=f(NODE_SWAP_STATUS, "Swap memory."),
    systemUUID=f(STRING, "System UUID.", required=True),
)

NODE_RUNTIME_HANDLER_FEATURES = obj(
    f"{CORE}.NodeRuntimeHandlerFeatures",
    "Features of a runtime handler.",
    recursiveReadOnlyMounts=f(BOOLEAN, "Supports recursive read-only mounts."),
    userNamespaces=f(BOOLEAN, "Supports user namespaces."),
)

NODE_RUNTIME_HANDLER = obj(
    f"{CORE}.NodeRuntimeHandler",
    "A runtime handler available on the node.",
    features=f(NODE_RUNTIME_HANDLER_FEATURES, "Supported features."),
    name=f(STRING, "Handler name; empty for the default."),
)

ATTACHED_VOLUME = obj(
    f"{CORE}.AttachedVolume",
    "A volume attached to the node.",
    devicePath=f(STRING, "Where the volume is available.", required=True),
    name=f(STRING, "Name of the volume.", required=True),
)

NODE_STATUS = obj(
    f"{CORE}.NodeStatus",
    "The observed state of a node, reported by its kubelet.",
    addresses=merged(NODE_ADDRESS, "Addresses of the node.", key="type"),
    allocatable=f(QUANTITY_MAP, "Resources available to pods."),
    capacity=f(QUANTITY_MAP, "Total resources of the node."),
    conditions=merged(NODE_CONDITION, "Current conditions of the node.", key="type"),
    config=f(NODE_CONFIG_STATUS, "Status of dynamic kubelet configuration."),
    daemonEndpoints=f(NODE_DAEMON_ENDPOINTS, "Ports of the node's daemons."),
    declaredFeatures=f(array(STRING), "Features the node declares for scheduling."),
    features=f(NODE_FEATURES, "Features supported by the node."),
    images=atomic(CONTAINER_IMAGE, "Images on the node."),
    nodeInfo=f(NODE_SYSTEM_INFO, "Versions and IDs of the node."),
    phase=f(STRING, "Deprecated lifecycle phase."),
    runtimeHandlers=atomic(NODE_RUNTIME_HANDLER, "Available runtime handlers."),
    volumesAttached=atomic(ATTACHED_VOLUME, "Volumes attached to the node."),
    volumesInUse=atomic(STRING, "Attachable volumes in use by the node."),
)

NODE = api_object(
    f"{CORE}.Node",
    "A worker machine; its kubelet runs the pods bound to it.",
    spec=f(NODE_SPEC, "Desired state of the node."),
    status=f(NODE_STATUS, "Observed state of the node. Read-only."),
)
