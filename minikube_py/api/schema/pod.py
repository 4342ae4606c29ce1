"""core/v1 Pod: scheduling constraints, the pod spec, its template and its status.

Upstream: k8s.io/api/core/v1/types.go. Patch metadata follows its struct tags: containers
merge by name, volumes by name with retainKeys, conditions by type.
"""

from __future__ import annotations

from minikube_py.api.schema.container import (
    CONTAINER,
    EPHEMERAL_CONTAINER,
    POD_SECURITY_CONTEXT,
    RESOURCE_REQUIREMENTS,
)
from minikube_py.api.schema.dsl import (
    BOOLEAN,
    INTEGER,
    QUANTITY,
    QUANTITY_MAP,
    STRING,
    array,
    atomic,
    atomic_map,
    atomic_struct,
    f,
    merged,
    obj,
)
from minikube_py.api.schema.meta import LABEL_SELECTOR, OBJECT_META, TIME, api_object
from minikube_py.api.schema.references import CORE, LOCAL_OBJECT_REFERENCE
from minikube_py.api.schema.volume import VOLUME, VOLUME_HEALTH_CONDITION

# --- scheduling constraints ------------------------------------------------------------

NODE_SELECTOR_REQUIREMENT = obj(
    f"{CORE}.NodeSelectorRequirement",
    "One match expression over node labels or fields.",
    key=f(STRING, "The label or field key.", required=True),
    operator=f(STRING, "In, NotIn, Exists, DoesNotExist, Gt or Lt.", required=True),
    values=atomic(STRING, "Values for In, NotIn (several), Gt, Lt (one)."),
)

NODE_SELECTOR_TERM = atomic_struct(obj(
    f"{CORE}.NodeSelectorTerm",
    "Requirements that must all hold (AND).",
    matchExpressions=atomic(NODE_SELECTOR_REQUIREMENT, "Requirements on node labels."),
    matchFields=atomic(NODE_SELECTOR_REQUIREMENT, "Requirements on node fields."),
))

NODE_SELECTOR = atomic_struct(obj(
    f"{CORE}.NodeSelector",
    "Terms of which at least one must hold (OR).",
    nodeSelectorTerms=atomic(NODE_SELECTOR_TERM, "The terms.", required=True),
))

PREFERRED_SCHEDULING_TERM = obj(
    f"{CORE}.PreferredSchedulingTerm",
    "A weighted node preference.",
    preference=f(NODE_SELECTOR_TERM, "The preferred nodes.", required=True),
    weight=f(INTEGER, "Weight, 1-100.", required=True),
)

NODE_AFFINITY = obj(
    f"{CORE}.NodeAffinity",
    "Constraints on the nodes the pod may run on.",
    preferredDuringSchedulingIgnoredDuringExecution=atomic(
        PREFERRED_SCHEDULING_TERM, "Preferences; nodes matching more weight score higher."),
    requiredDuringSchedulingIgnoredDuringExecution=f(
        NODE_SELECTOR, "Nodes that must match for the pod to be scheduled."),
)

POD_AFFINITY_TERM = obj(
    f"{CORE}.PodAffinityTerm",
    "Pods (by label, in namespaces) that the pod should be near or away from.",
    labelSelector=f(LABEL_SELECTOR, "Labels of the pods."),
    matchLabelKeys=atomic(STRING, "Label keys whose values are taken from the incoming pod."),
    mismatchLabelKeys=atomic(STRING, "Label keys whose values must differ from the pod's."),
    namespaceSelector=f(LABEL_SELECTOR, "Labels of the namespaces of the pods."),
    namespaces=atomic(STRING, "Namespaces of the pods; the pod's own if empty."),
    topologyKey=f(STRING, "Node label defining 'near', e.g. kubernetes.io/hostname.",
                  required=True),
)

WEIGHTED_POD_AFFINITY_TERM = obj(
    f"{CORE}.WeightedPodAffinityTerm",
    "A weighted pod (anti-)affinity preference.",
    podAffinityTerm=f(POD_AFFINITY_TERM, "The term.", required=True),
    weight=f(INTEGER, "Weight, 1-100.", required=True),
)

POD_AFFINITY = obj(
    f"{CORE}.PodAffinity",
    "Place the pod near other pods.",
    preferredDuringSchedulingIgnoredDuringExecution=atomic(
        WEIGHTED_POD_AFFINITY_TERM, "Preferences."),
    requiredDuringSchedulingIgnoredDuringExecution=atomic(
        POD_AFFINITY_TERM, "Terms that must all hold."),
)

POD_ANTI_AFFINITY = obj(
    f"{CORE}.PodAntiAffinity",
    "Keep the pod away from other pods.",
    preferredDuringSchedulingIgnoredDuringExecution=atomic(
        WEIGHTED_POD_AFFINITY_TERM, "Preferences."),
    requiredDuringSchedulingIgnoredDuringExecution=atomic(
        POD_AFFINITY_TERM, "Terms that must all hold."),
)

AFFINITY = obj(
    f"{CORE}.Affinity",
    "Scheduling constraints relative to nodes and to other pods.",
    nodeAffinity=f(NODE_AFFINITY, "Constraints on nodes."),
    podAffinity=f(POD_AFFINITY, "Co-locate with other pods."),
    podAntiAffinity=f(POD_ANTI_AFFINITY, "Avoid other pods."),
)

TOLERATION = obj(
    f"{CORE}.Toleration",
    "Lets the pod schedule onto (or stay on) nodes with a matching taint.",
    effect=f(STRING, "NoSchedule, PreferNoSchedule or NoExecute; empty matches all."),
    key=f(STRING, "Taint key; empty with operator Exists matches all taints."),
    operator=f(STRING, "Exists or Equal; defaults to Equal."),
    tolerationSeconds=f(INTEGER, "For NoExecute: seconds the pod stays after the taint "
                        "appears."),
    value=f(STRING, "Taint value to match with Equal."),
)

TOPOLOGY_SPREAD_CONSTRAINT = obj(
    f"{CORE}.TopologySpreadConstraint",
    "How matching pods should spread across topology domains.",
    labelSelector=f(LABEL_SELECTOR, "Pods counted in each domain."),
    matchLabelKeys=atomic(STRING, "Label keys whose values are taken from the incoming pod."),
    maxSkew=f(INTEGER, "Maximum allowed difference of pod counts between domains.",
              required=True),
    minDomains=f(INTEGER, "Minimum number of eligible domains."),
    nodeAffinityPolicy=f(STRING, "Honor or Ignore node affinity when counting."),
    nodeTaintsPolicy=f(STRING, "Honor or Ignore node taints when counting."),
    topologyKey=f(STRING, "Node label defining the domains.", required=True),
    whenUnsatisfiable=f(STRING, "DoNotSchedule or ScheduleAnyway.", required=True),
)

POD_DNS_CONFIG_OPTION = obj(
    f"{CORE}.PodDNSConfigOption",
    "A resolver option.",
    name=f(STRING, "Option name, e.g. ndots."),
    value=f(STRING, "Option value."),
)

POD_DNS_CONFIG = obj(
    f"{CORE}.PodDNSConfig",
    "DNS settings merged into the pod's resolv.conf.",
    nameservers=atomic(STRING, "Name server IPs."),
    options=atomic(POD_DNS_CONFIG_OPTION, "Resolver options."),
    searches=atomic(STRING, "Search domains."),
)

HOST_ALIAS = obj(
    f"{CORE}.HostAlias",
    "An entry of the pod's /etc/hosts.",
    hostnames=atomic(STRING, "Host names for the IP."),
    ip=f(STRING, "The IP address.", required=True),
)

POD_OS = obj(
    f"{CORE}.PodOS",
    "The operating system of the pod's containers.",
    name=f(STRING, "linux or windows.", required=True),
)

POD_READINESS_GATE = obj(
    f"{CORE}.PodReadinessGate",
    "An extra condition that must be True for the pod to be ready.",
    conditionType=f(STRING, "Type of a pod condition.", required=True),
)

POD_RESOURCE_CLAIM = obj(
    f"{CORE}.PodResourceClaim",
    "A resource claim the pod uses, by name or from a template.",
    name=f(STRING, "Name of the claim inside the pod.", required=True),
    resourceClaimName=f(STRING, "Name of an existing ResourceClaim."),
    resourceClaimTemplateName=f(STRING, "Name of a ResourceClaimTemplate to create one from."),
)

POD_SCHEDULING_GATE = obj(
    f"{CORE}.PodSchedulingGate",
    "A gate that keeps the pod from being scheduled while present.",
    name=f(STRING, "Name of the gate.", required=True),
)

POD_SCHEDULING_GROUP = obj(
    f"{CORE}.PodSchedulingGroup",
    "The group of pods this pod is scheduled with.",
    podGroupName=f(STRING, "Name of the PodGroup."),
)

EVICTION_RESPONDER = obj(
    f"{CORE}.EvictionResponder",
    "A component that reacts to evictions of the pod.",
    name=f(STRING, "Name of the responder.", required=True),
    priority=f(INTEGER, "Order in which responders are asked.", required=True),
)

POD_SPEC = obj(
    f"{CORE}.PodSpec",
    "The desired state of a pod: its containers, volumes and scheduling constraints.",
    activeDeadlineSeconds=f(INTEGER, "Seconds the pod may run before it is failed."),
    affinity=f(AFFINITY, "Node and pod affinity constraints."),
    automountServiceAccountToken=f(BOOLEAN, "Mount a service account token automatically."),
    containers=merged(CONTAINER, "The containers; at least one.", key="name", required=True),
    dnsConfig=f(POD_DNS_CONFIG, "DNS settings besides those of dnsPolicy."),
    dnsPolicy=f(STRING, "ClusterFirst (default), ClusterFirstWithHostNet, Default or None."),
    enableServiceLinks=f(BOOLEAN, "Inject service environment variables; default true."),
    ephemeralContainers=merged(EPHEMERAL_CONTAINER, "Debugging containers added to a "
                               "running pod.", key="name"),
    evictionResponders=merged(EVICTION_RESPONDER, "Responders reacting to evictions.",
                              key="name"),
    hostAliases=merged(HOST_ALIAS, "Entries added to /etc/hosts.", key="ip"),
    hostIPC=f(BOOLEAN, "Use the host's IPC namespace."),
    hostNetwork=f(BOOLEAN, "Use the host's network namespace."),
    hostPID=f(BOOLEAN, "Use the host's PID namespace."),
    hostUsers=f(BOOLEAN, "Use the host's user namespace; default true."),
    hostname=f(STRING, "Hostname of the pod; the pod name if empty."),
    hostnameOverride=f(STRING, "Hostname seen by the pod, overriding hostname and subdomain."),
    imagePullSecrets=merged(LOCAL_OBJECT_REFERENCE, "Secrets used to pull images.",
                            key="name"),
    initContainers=merged(CONTAINER, "Containers run to completion, in order, before the "
                          "others.", key="name"),
    nodeName=f(STRING, "The node the pod is bound to; set by the scheduler."),
    nodeSelector=f(atomic_map(STRING), "Labels a node must have to run the pod."),
    os=f(POD_OS, "Operating system of the containers."),
    overhead=f(QUANTITY_MAP, "Resources used by the pod sandbox, set from the RuntimeClass."),
    preemptionPolicy=f(STRING, "PreemptLowerPriority (default) or Never."),
    priority=f(INTEGER, "Priority value, resolved from priorityClassName."),
    priorityClassName=f(STRING, "Name of the PriorityClass of the pod."),
    readinessGates=atomic(POD_READINESS_GATE, "Extra conditions for readiness."),
    resourceClaims=merged(POD_RESOURCE_CLAIM, "Resource claims the pod uses.", key="name",
                          strategy="merge,retainKeys"),
    resources=f(RESOURCE_REQUIREMENTS, "Pod-level resource requests and limits."),
    restartPolicy=f(STRING, "Always (default), OnFailure or Never."),
    runtimeClassName=f(STRING, "Name of the RuntimeClass to run the pod with."),
    schedulerName=f(STRING, "Scheduler that places the pod; default-scheduler if empty."),
    schedulingGates=merged(POD_SCHEDULING_GATE, "Gates that block scheduling while present.",
                           key="name"),
    schedulingGroup=f(POD_SCHEDULING_GROUP, "The group the pod is scheduled with."),
    securityContext=f(POD_SECURITY_CONTEXT, "Pod-wide security settings."),
    serviceAccount=f(STRING, "Deprecated alias of serviceAccountName."),
    serviceAccountName=f(STRING, "ServiceAccount the pod runs as."),
    setHostnameAsFQDN=f(BOOLEAN, "Set the hostname to the pod's FQDN."),
    shareProcessNamespace=f(BOOLEAN, "Share one PID namespace between the containers."),
    subdomain=f(STRING, "Subdomain: the FQDN is <hostname>.<subdomain>.<ns>.svc.<domain>."),
    terminationGracePeriodSeconds=f(INTEGER, "Seconds between SIGTERM and SIGKILL; "
                                    "default 30."),
    tolerations=atomic(TOLERATION, "Taints the pod tolerates."),
    topologySpreadConstraints=merged(
        TOPOLOGY_SPREAD_CONSTRAINT, "How the pod's replicas spread across domains.",
        key="topologyKey", map_keys=("topologyKey", "whenUnsatisfiable")),
    volumes=merged(VOLUME, "Volumes the containers can mount.", key="name",
                   strategy="merge,retainKeys"),
)

POD_TEMPLATE_SPEC = obj(
    f"{CORE}.PodTemplateSpec",
    "The pods a controller creates: their metadata and spec.",
    metadata=f(OBJECT_META, "Labels and annotations of the pods."),
    spec=f(POD_SPEC, "Spec of the pods."),
)

# --- pod status ------------------------------------------------------------------------

POD_CONDITION = obj(
    f"{CORE}.PodCondition",
    "One aspect of the pod's state (PodScheduled, Initialized, ContainersReady, Ready, ...).",
    lastProbeTime=f(TIME, "Last time the condition was probed."),
    lastTransitionTime=f(TIME, "When status last changed."),
    message=f(STRING, "Human-readable details."),
    observedGeneration=f(INTEGER, "metadata.generation the condition was set for."),
    reason=f(STRING, "CamelCase reason for the last transition."),
    status=f(STRING, "True, False or Unknown.", required=True),
    type=f(STRING, "Type of the condition.", required=True),
)

CONTAINER_STATE_RUNNING = obj(
    f"{CORE}.ContainerStateRunning",
    "A running container.",
    startedAt=f(TIME, "When the container last (re)started."),
)

CONTAINER_STATE_TERMINATED = obj(
    f"{CORE}.ContainerStateTerminated",
    "A container that exited.",
    containerID=f(STRING, "ID of the container, <type>://<id>."),
    exitCode=f(INTEGER, "Exit status.", required=True),
    finishedAt=f(TIME, "When the container exited."),
    message=f(STRING, "Message about the termination."),
    reason=f(STRING, "Brief reason, e.g. Completed, Error or OOMKilled."),
    signal=f(INTEGER, "Signal that ended the container."),
    startedAt=f(TIME, "When the container started."),
)

CONTAINER_STATE_WAITING = obj(
    f"{CORE}.ContainerStateWaiting",
    "A container not running yet.",
    message=f(STRING, "Why the container is not running."),
    reason=f(STRING, "Brief reason, e.g. ContainerCreating or CrashLoopBackOff."),
)

CONTAINER_STATE = obj(
    f"{CORE}.ContainerState",
    "The state of a container; exactly one member is set.",
    running=f(CONTAINER_STATE_RUNNING, "The container is running."),
    terminated=f(CONTAINER_STATE_TERMINATED, "The container exited."),
    waiting=f(CONTAINER_STATE_WAITING, "The container is waiting to run."),
)

RESOURCE_HEALTH = obj(
    f"{CORE}.ResourceHealth",
    "Health of one device allocated to a container.",
    health=f(STRING, "Healthy, Unhealthy or Unknown."),
    message=f(STRING, "Human-readable context for the health."),
    resourceID=f(STRING, "ID of the device.", required=True),
)

RESOURCE_STATUS = obj(
    f"{CORE}.ResourceStatus",
    "Health of the devices behind one resource of a container.",
    name=f(STRING, "Name of the resource.", required=True),
    resources=f(array(
        RESOURCE_HEALTH), "Health of each device.", list_type="map",
        map_keys=("resourceID",)),
)

LINUX_CONTAINER_USER = obj(
    f"{CORE}.LinuxContainerUser",
    "The identity of a Linux container's first process.",
    gid=f(INTEGER, "Primary GID.", required=True),
    supplementalGroups=atomic(INTEGER, "Supplemental GIDs."),
    uid=f(INTEGER, "UID.", required=True),
)

CONTAINER_USER = obj(
    f"{CORE}.ContainerUser",
    "The identity of a container's first process.",
    linux=f(LINUX_CONTAINER_USER, "On Linux."),
)

IMAGE_VOLUME_STATUS = obj(
    f"{CORE}.ImageVolumeStatus",
    "Status of an image volume.",
    imageRef=f(STRING, "Digest of the image used.", required=True),
)

VOLUME_STATUS = obj(
    f"{CORE}.VolumeStatus",
    "Status of a mounted volume, by source.",
    image=f(IMAGE_VOLUME_STATUS, "For image volumes."),
)

VOLUME_MOUNT_STATUS = obj(
    f"{CORE}.VolumeMountStatus",
    "Status of a volume mount of a container.",
    mountPath=f(STRING, "mountPath of the VolumeMount.", required=True),
    name=f(STRING, "name of the VolumeMount.", required=True),
    readOnly=f(BOOLEAN, "Whether the mount is read-only."),
    recursiveReadOnly=f(STRING, "Disabled or Enabled."),
    volumeStatus=f(VOLUME_STATUS, "Status of the volume."),
)

CONTAINER_STATUS = obj(
    f"{CORE}.ContainerStatus",
    "What the kubelet reports about one container.",
    allocatedResources=f(QUANTITY_MAP, "Resources allocated to the container."),
    allocatedResourcesStatus=merged(RESOURCE_STATUS, "Health of allocated devices.",
                                    key="name"),
    containerID=f(STRING, "ID of the container, <type>://<id>."),
    image=f(STRING, "Image the container runs.", required=True),
    imageID=f(STRING, "ID (digest) of the image.", required=True),
    lastState=f(CONTAINER_STATE, "State of the previous run."),
    name=f(STRING, "Name of the container.", required=True),
    ready=f(BOOLEAN, "Whether the readiness probe passes.", required=True),
    resources=f(RESOURCE_REQUIREMENTS, "Resources actually configured."),
    restartCount=f(INTEGER, "Number of restarts.", required=True),
    started=f(BOOLEAN, "Whether the startup probe passed."),
    state=f(CONTAINER_STATE, "Current state."),
    stopSignal=f(STRING, "Effective stop signal."),
    user=f(CONTAINER_USER, "Identity of the first process."),
    volumeMounts=merged(VOLUME_MOUNT_STATUS, "Status of the volume mounts.",
                        key="mountPath"),
)

POD_IP = obj(
    f"{CORE}.PodIP",
    "An IP address of the pod.",
    ip=f(STRING, "The IP address.", required=True),
)

HOST_IP = obj(
    f"{CORE}.HostIP",
    "An IP address of the pod's node.",
    ip=f(STRING, "The IP address.", required=True),
)

POD_RESOURCE_CLAIM_STATUS = obj(
    f"{CORE}.PodResourceClaimStatus",
    "The ResourceClaim generated for a claim of the pod.",
    name=f(STRING, "Name of the claim in pod.spec.resourceClaims.", required=True),
    resourceClaimName=f(STRING, "Name of the generated ResourceClaim."),
)

CONTAINER_EXTENDED_RESOURCE_REQUEST = obj(
    f"{CORE}.ContainerExtendedResourceRequest",
    "Maps a container's extended resource to a request of the special claim.",
    containerName=f(STRING, "The container.", required=True),
    requestName=f(STRING, "The request in the claim.", required=True),
    resourceName=f(STRING, "The extended resource.", required=True),
)

POD_EXTENDED_RESOURCE_CLAIM_STATUS = obj(
    f"{CORE}.PodExtendedResourceClaimStatus",
    "The claim created for extended resources backed by devices.",
    requestMappings=atomic(CONTAINER_EXTENDED_RESOURCE_REQUEST, "Container to request "
                           "mappings.", required=True),
    resourceClaimName=f(STRING, "Name of the claim.", required=True),
)

NODE_ALLOCATABLE_MAPPED_RESOURCES = obj(
    f"{CORE}.NodeAllocatableMappedResources",
    "Node resources consumed through a mapped device.",
    name=f(STRING, "Resource name, e.g. cpu.", required=True),
    quantity=f(QUANTITY, "Amount consumed.", required=True),
)

NODE_ALLOCATABLE_OVERHEAD_RESOURCES = obj(
    f"{CORE}.NodeAllocatableOverheadResources",
    "Node resources consumed as overhead of a device.",
    name=f(STRING, "Resource name, e.g. memory.", required=True),
    perContainer=f(QUANTITY, "Overhead per container."),
    perPod=f(QUANTITY, "Flat overhead per pod."),
)

NODE_ALLOCATABLE_RESOURCE_CLAIM_STATUS = obj(
    f"{CORE}.NodeAllocatableResourceClaimStatus",
    "Node allocatable resources consumed through one resource claim.",
    containers=atomic(STRING, "Containers using the claim."),
    mapping=merged(NODE_ALLOCATABLE_MAPPED_RESOURCES, "Resources through mapped devices.",
                   key="name"),
    overhead=merged(NODE_ALLOCATABLE_OVERHEAD_RESOURCES, "Overhead resources.", key="name"),
    resourceClaimName=f(STRING, "The claim.", required=True),
)

POD_VOLUME_HEALTH = obj(
    f"{CORE}.PodVolumeHealth",
    "Node-reported health of one volume of the pod.",
    healthConditions=merged(VOLUME_HEALTH_CONDITION, "Adverse conditions.", key="status"),
    lastTransitionTime=f(TIME, "When the conditions last changed."),
    name=f(STRING, "Name of the volume in pod.spec.volumes.", required=True),
)

POD_STATUS = obj(
    f"{CORE}.PodStatus",
    "The observed state of a pod, written by the scheduler and the kubelet.",
    allocatedResources=f(QUANTITY_MAP, "Pod-level resources allocated."),
    conditions=merged(POD_CONDITION, "Current conditions of the pod.", key="type"),
    containerStatuses=atomic(CONTAINER_STATUS, "One entry per container."),
    ephemeralContainerStatuses=atomic(CONTAINER_STATUS, "One entry per ephemeral container."),
    extendedResourceClaimStatus=f(POD_EXTENDED_RESOURCE_CLAIM_STATUS, "The claim for "
                                  "device-backed extended resources."),
    hostIP=f(STRING, "Primary IP of the node the pod runs on."),
    hostIPs=merged(HOST_IP, "IPs of the node; the first equals hostIP.", key="ip",
                   list_type="atomic"),
    initContainerStatuses=atomic(CONTAINER_STATUS, "One entry per init container."),
    message=f(STRING, "Why the pod is in this state."),
    nodeAllocatableResourceClaimStatuses=merged(
        NODE_ALLOCATABLE_RESOURCE_CLAIM_STATUS, "Node resources consumed through claims.",
        key="resourceClaimName"),
    nominatedNodeName=f(STRING, "Node the pod preempted others on and may run on."),
    observedGeneration=f(INTEGER, "metadata.generation the status was computed for."),
    phase=f(STRING, "Pending, Running, Succeeded, Failed or Unknown."),
    podIP=f(STRING, "Primary IP of the pod."),
    podIPs=merged(POD_IP, "IPs of the pod; the first equals podIP.", key="ip"),
    qosClass=f(STRING, "Guaranteed, Burstable or BestEffort."),
    reason=f(STRING, "CamelCase reason, e.g. Evicted."),
    resize=f(STRING, "Deprecated status of an in-place resize."),
    resourceClaimStatuses=merged(POD_RESOURCE_CLAIM_STATUS, "ResourceClaims generated for "
                                 "the pod.", key="name", strategy="merge,retainKeys"),
    resources=f(RESOURCE_REQUIREMENTS, "Pod-level resources actually configured."),
    startTime=f(TIME, "When the kubelet accepted the pod."),
    volumeHealth=f(array(
        POD_VOLUME_HEALTH), "Node-reported health of the pod's volumes."),
)

POD = api_object(
    f"{CORE}.Pod",
    "A group of containers scheduled together onto one node.",
    spec=f(POD_SPEC, "Desired state of the pod."),
    status=f(POD_STATUS, "Observed state of the pod. Read-only."),
)
