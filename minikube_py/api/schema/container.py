"""core/v1 Container: environment, ports, resources, mounts, probes, lifecycle hooks and
security contexts.

Upstream: k8s.io/api/core/v1/types.go. Patch metadata follows its struct tags: env merges
by name, ports by containerPort, volumeMounts by mountPath.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import (
    BOOLEAN,
    INT_OR_STRING,
    INTEGER,
    QUANTITY,
    QUANTITY_MAP,
    STRING,
    array,
    atomic,
    atomic_struct,
    f,
    merged,
    obj,
    set_of,
)
from minikube_py.api.schema.references import CORE

# --- environment variables -------------------------------------------------------------

OBJECT_FIELD_SELECTOR = atomic_struct(obj(
    f"{CORE}.ObjectFieldSelector",
    "Selects a field of the pod (downward API).",
    apiVersion=f(STRING, "Version of the schema fieldPath is written in; defaults to v1."),
    fieldPath=f(STRING, "Path of the field, e.g. metadata.name or status.podIP.",
                required=True),
))

RESOURCE_FIELD_SELECTOR = atomic_struct(obj(
    f"{CORE}.ResourceFieldSelector",
    "Selects a container resource request or limit (downward API).",
    containerName=f(STRING, "Container whose resources are read; required for volumes."),
    divisor=f(QUANTITY, "Unit the value is expressed in; defaults to 1."),
    resource=f(STRING, "The resource, e.g. limits.cpu or requests.memory.", required=True),
))

CONFIG_MAP_KEY_SELECTOR = atomic_struct(obj(
    f"{CORE}.ConfigMapKeySelector",
    "Selects a key of a ConfigMap.",
    key=f(STRING, "The key to select.", required=True),
    name=f(STRING, "Name of the ConfigMap."),
    optional=f(BOOLEAN, "If true, the ConfigMap or key may be missing."),
))

SECRET_KEY_SELECTOR = atomic_struct(obj(
    f"{CORE}.SecretKeySelector",
    "Selects a key of a Secret.",
    key=f(STRING, "The key to select.", required=True),
    name=f(STRING, "Name of the Secret."),
    optional=f(BOOLEAN, "If true, the Secret or key may be missing."),
))

FILE_KEY_SELECTOR = obj(
    f"{CORE}.FileKeySelector",
    "Selects a key of an env file in a volume.",
    key=f(STRING, "The key in the env file.", required=True),
    optional=f(BOOLEAN, "If true, the file or key may be missing."),
    path=f(STRING, "Path of the file within the volume.", required=True),
    volumeName=f(STRING, "Name of the volume mount holding the file.", required=True),
)

ENV_VAR_SOURCE = obj(
    f"{CORE}.EnvVarSource",
    "Where an environment variable's value comes from; exactly one source is set.",
    configMapKeyRef=f(CONFIG_MAP_KEY_SELECTOR, "A key of a ConfigMap."),
    fieldRef=f(OBJECT_FIELD_SELECTOR, "A field of the pod."),
    fileKeyRef=f(FILE_KEY_SELECTOR, "A key of an env file in a volume."),
    resourceFieldRef=f(RESOURCE_FIELD_SELECTOR, "A resource request or limit of a container."),
    secretKeyRef=f(SECRET_KEY_SELECTOR, "A key of a Secret."),
)

ENV_VAR = obj(
    f"{CORE}.EnvVar",
    "An environment variable of a container.",
    name=f(STRING, "Name of the variable.", required=True),
    value=f(STRING, "Value; $(VAR) references to earlier variables are expanded."),
    valueFrom=f(ENV_VAR_SOURCE, "Source of the value; not allowed together with value."),
)

CONFIG_MAP_ENV_SOURCE = obj(
    f"{CORE}.ConfigMapEnvSource",
    "Imports every key of a ConfigMap as environment variables.",
    name=f(STRING, "Name of the ConfigMap."),
    optional=f(BOOLEAN, "If true, the ConfigMap may be missing."),
)

SECRET_ENV_SOURCE = obj(
    f"{CORE}.SecretEnvSource",
    "Imports every key of a Secret as environment variables.",
    name=f(STRING, "Name of the Secret."),
    optional=f(BOOLEAN, "If true, the Secret may be missing."),
)

ENV_FROM_SOURCE = obj(
    f"{CORE}.EnvFromSource",
    "A set of environment variables from a ConfigMap or Secret.",
    configMapRef=f(CONFIG_MAP_ENV_SOURCE, "The ConfigMap to import."),
    prefix=f(STRING, "Prefix prepended to every imported name."),
    secretRef=f(SECRET_ENV_SOURCE, "The Secret to import."),
)

# --- ports, resources, mounts ----------------------------------------------------------

CONTAINER_PORT = obj(
    f"{CORE}.ContainerPort",
    "A network port of a container.",
    containerPort=f(INTEGER, "Port number on the pod's IP address.", required=True),
    hostIP=f(STRING, "Host IP to bind the host port to."),
    hostPort=f(INTEGER, "Port number on the host; rarely needed."),
    name=f(STRING, "IANA_SVC_NAME, unique in the pod; services can refer to it."),
    protocol=f(STRING, "TCP, UDP or SCTP; defaults to TCP.", default="TCP"),
)

RESOURCE_CLAIM = obj(
    f"{CORE}.ResourceClaim",
    "Names a resource claim of the pod that a container uses.",
    name=f(STRING, "Name of an entry in pod.spec.resourceClaims.", required=True),
    request=f(STRING, "Name of one request in the claim; empty for all of them."),
)

RESOURCE_REQUIREMENTS = obj(
    f"{CORE}.ResourceRequirements",
    "Compute resources requested and limited, by resource name (cpu, memory, ...).",
    claims=f(array(RESOURCE_CLAIM),
             "Resource claims of the pod this container uses.",
             list_type="map", map_keys=("name",)),
    limits=f(QUANTITY_MAP, "Maximum amount of each resource allowed."),
    requests=f(QUANTITY_MAP, "Minimum amount of each resource required; the scheduler "
               "places the pod by these."),
)

VOLUME_MOUNT = obj(
    f"{CORE}.VolumeMount",
    "Mounts a volume into a container's filesystem.",
    bindMountOptions=atomic(STRING, "Extra options for the bind mount."),
    mountPath=f(STRING, "Path in the container; must not contain ':'.", required=True),
    mountPropagation=f(STRING, "None, HostToContainer or Bidirectional."),
    name=f(STRING, "Name of the volume.", required=True),
    readOnly=f(BOOLEAN, "Mount read-only if true."),
    recursiveReadOnly=f(STRING, "Disabled, IfPossible or Enabled: make sub-mounts read-only."),
    subPath=f(STRING, "Path within the volume to mount instead of its root."),
    subPathExpr=f(STRING, "Like subPath, with $(VAR) expanded from the environment."),
)

VOLUME_DEVICE = obj(
    f"{CORE}.VolumeDevice",
    "Maps a raw block volume into a container.",
    devicePath=f(STRING, "Path of the device in the container.", required=True),
    name=f(STRING, "Name of a persistentVolumeClaim volume of the pod.", required=True),
)

# --- probes and lifecycle hooks --------------------------------------------------------

EXEC_ACTION = obj(
    f"{CORE}.ExecAction",
    "Runs a command in the container; exit status 0 is success.",
    command=atomic(STRING, "Command line to run, not in a shell."),
)

HTTP_HEADER = obj(
    f"{CORE}.HTTPHeader",
    "An HTTP header of a probe request.",
    name=f(STRING, "Header name.", required=True),
    value=f(STRING, "Header value.", required=True),
)

HTTP_GET_ACTION = obj(
    f"{CORE}.HTTPGetAction",
    "Sends an HTTP GET; a 2xx or 3xx status is success.",
    host=f(STRING, "Host to connect to; defaults to the pod IP."),
    httpHeaders=atomic(HTTP_HEADER, "Extra request headers."),
    path=f(STRING, "Path to request."),
    port=f(INT_OR_STRING, "Port number or name.", required=True),
    protocol=f(STRING, "Wire protocol for the probe connection."),
    scheme=f(STRING, "HTTP or HTTPS; defaults to HTTP."),
)

TCP_SOCKET_ACTION = obj(
    f"{CORE}.TCPSocketAction",
    "Opens a TCP connection; connecting is success.",
    host=f(STRING, "Host to connect to; defaults to the pod IP."),
    port=f(INT_OR_STRING, "Port number or name.", required=True),
)

GRPC_ACTION = obj(
    f"{CORE}.GRPCAction",
    "Calls the gRPC health checking service.",
    mode=f(STRING, "Connection mode of the gRPC health probe."),
    port=f(INTEGER, "Port of the gRPC service.", required=True),
    service=f(STRING, "Service name sent in the HealthCheckRequest."),
)

SLEEP_ACTION = obj(
    f"{CORE}.SleepAction",
    "Sleeps for a while.",
    seconds=f(INTEGER, "Seconds to sleep.", required=True),
)

PROBE = obj(
    f"{CORE}.Probe",
    "A health check run by the kubelet against a container.",
    exec=f(EXEC_ACTION, "Run a command."),
    failureThreshold=f(INTEGER, "Consecutive failures before the probe fails; default 3."),
    grpc=f(GRPC_ACTION, "Call a gRPC health service."),
    httpGet=f(HTTP_GET_ACTION, "Send an HTTP GET."),
    initialDelaySeconds=f(INTEGER, "Seconds after container start before the first probe."),
    periodSeconds=f(INTEGER, "Seconds between probes; default 10."),
    successThreshold=f(INTEGER, "Consecutive successes before the probe succeeds; default 1."),
    tcpSocket=f(TCP_SOCKET_ACTION, "Open a TCP connection."),
    terminationGracePeriodSeconds=f(INTEGER, "Grace period when a failed probe kills the "
                                    "container; overrides the pod's."),
    timeoutSeconds=f(INTEGER, "Seconds before the probe times out; default 1."),
)

LIFECYCLE_HANDLER = obj(
    f"{CORE}.LifecycleHandler",
    "An action run at a lifecycle hook; exactly one is set.",
    exec=f(EXEC_ACTION, "Run a command."),
    httpGet=f(HTTP_GET_ACTION, "Send an HTTP GET."),
    sleep=f(SLEEP_ACTION, "Sleep for a while."),
    tcpSocket=f(TCP_SOCKET_ACTION, "Deprecated; kept for compatibility."),
)

LIFECYCLE = obj(
    f"{CORE}.Lifecycle",
    "Actions the kubelet runs after a container starts and before it stops.",
    postStart=f(LIFECYCLE_HANDLER, "Run right after the container is created."),
    preStop=f(LIFECYCLE_HANDLER, "Run before the container is terminated."),
    stopSignal=f(STRING, "Signal sent to stop the container, e.g. SIGTERM."),
)

# --- security contexts -----------------------------------------------------------------

CAPABILITIES = obj(
    f"{CORE}.Capabilities",
    "Linux capabilities added to and dropped from the default set.",
    add=atomic(STRING, "Capabilities to add."),
    drop=atomic(STRING, "Capabilities to drop."),
)

SE_LINUX_OPTIONS = obj(
    f"{CORE}.SELinuxOptions",
    "SELinux labels applied to a container.",
    level=f(STRING, "SELinux level label."),
    role=f(STRING, "SELinux role label."),
    type=f(STRING, "SELinux type label."),
    user=f(STRING, "SELinux user label."),
)

SECCOMP_PROFILE = obj(
    f"{CORE}.SeccompProfile",
    "The seccomp profile applied.",
    localhostProfile=f(STRING, "Profile file on the node, for type Localhost."),
    type=f(STRING, "Localhost, RuntimeDefault or Unconfined.", required=True),
)

APP_ARMOR_PROFILE = obj(
    f"{CORE}.AppArmorProfile",
    "The AppArmor profile applied.",
    localhostProfile=f(STRING, "Profile loaded on the node, for type Localhost."),
    type=f(STRING, "Localhost, RuntimeDefault or Unconfined.", required=True),
)

WINDOWS_SECURITY_CONTEXT_OPTIONS = obj(
    f"{CORE}.WindowsSecurityContextOptions",
    "Windows-specific security options.",
    gmsaCredentialSpec=f(STRING, "Inlined GMSA credential spec."),
    gmsaCredentialSpecName=f(STRING, "Name of the GMSA credential spec to use."),
    hostProcess=f(BOOLEAN, "Run as a Windows host process container."),
    runAsUserName=f(STRING, "Windows user to run the entrypoint as."),
)

SECURITY_CONTEXT = obj(
    f"{CORE}.SecurityContext",
    "Security settings of one container; they override the pod's.",
    allowPrivilegeEscalation=f(BOOLEAN, "Whether a process may gain more privileges than "
                               "its parent."),
    appArmorProfile=f(APP_ARMOR_PROFILE, "AppArmor profile of the container."),
    capabilities=f(CAPABILITIES, "Capabilities to add or drop."),
    privileged=f(BOOLEAN, "Run privileged: like root on the host."),
    procMount=f(STRING, "Default or Unmasked: how /proc is mounted."),
    readOnlyRootFilesystem=f(BOOLEAN, "Mount the root filesystem read-only."),
    runAsGroup=f(INTEGER, "GID of the entrypoint process."),
    runAsNonRoot=f(BOOLEAN, "Refuse to start the container if it would run as UID 0."),
    runAsUser=f(INTEGER, "UID of the entrypoint process."),
    seLinuxOptions=f(SE_LINUX_OPTIONS, "SELinux context of the container."),
    seccompProfile=f(SECCOMP_PROFILE, "Seccomp profile of the container."),
    windowsOptions=f(WINDOWS_SECURITY_CONTEXT_OPTIONS, "Windows-specific settings."),
)

SYSCTL = obj(
    f"{CORE}.Sysctl",
    "A namespaced kernel parameter to set.",
    name=f(STRING, "Name of the parameter.", required=True),
    value=f(STRING, "Value of the parameter.", required=True),
)

POD_SECURITY_CONTEXT = obj(
    f"{CORE}.PodSecurityContext",
    "Security settings for every container of the pod.",
    appArmorProfile=f(APP_ARMOR_PROFILE, "AppArmor profile of the containers."),
    fsGroup=f(INTEGER, "Supplemental group that owns the pod's volumes."),
    fsGroupChangePolicy=f(STRING, "OnRootMismatch or Always: when volume ownership changes."),
    runAsGroup=f(INTEGER, "GID of the containers' entrypoints."),
    runAsNonRoot=f(BOOLEAN, "Refuse to start containers that would run as UID 0."),
    runAsUser=f(INTEGER, "UID of the containers' entrypoints."),
    seLinuxChangePolicy=f(STRING, "MountOption or Recursive: how volumes get SELinux labels."),
    seLinuxOptions=f(SE_LINUX_OPTIONS, "SELinux context of the containers."),
    seccompProfile=f(SECCOMP_PROFILE, "Seccomp profile of the containers."),
    supplementalGroups=atomic(INTEGER, "Extra groups of the first process in each container."),
    supplementalGroupsPolicy=f(STRING, "Merge or Strict: how supplemental groups are found."),
    sysctls=atomic(SYSCTL, "Namespaced sysctls set for the pod."),
    windowsOptions=f(WINDOWS_SECURITY_CONTEXT_OPTIONS, "Windows-specific settings."),
)

# --- containers ------------------------------------------------------------------------

CONTAINER_RESIZE_POLICY = obj(
    f"{CORE}.ContainerResizePolicy",
    "Whether resizing one resource restarts the container.",
    resourceName=f(STRING, "cpu or memory.", required=True),
    restartPolicy=f(STRING, "NotRequired or RestartContainer.", required=True),
)

CONTAINER_RESTART_RULE_ON_EXIT_CODES = obj(
    f"{CORE}.ContainerRestartRuleOnExitCodes",
    "Matches container exit codes.",
    operator=f(STRING, "In or NotIn.", required=True),
    values=set_of(INTEGER, "The exit codes."),
)

CONTAINER_RESTART_RULE = obj(
    f"{CORE}.ContainerRestartRule",
    "A rule deciding whether an exited container is restarted.",
    action=f(STRING, "Restart: the action when the rule matches.", required=True),
    exitCodes=f(CONTAINER_RESTART_RULE_ON_EXIT_CODES, "Exit codes the rule matches."),
)

# Container and EphemeralContainer share their fields (upstream keeps them in sync).
_CONTAINER_FIELDS = dict(
    args=atomic(STRING, "Arguments to the entrypoint; the image's CMD if empty."),
    command=atomic(STRING, "Entrypoint; the image's ENTRYPOINT if empty. Not run in a shell."),
    env=merged(ENV_VAR, "Environment variables.", key="name"),
    envFrom=atomic(ENV_FROM_SOURCE, "Sources of environment variables (ConfigMaps, Secrets)."),
    image=f(STRING, "Container image name."),
    imagePullPolicy=f(STRING, "Always, Never or IfNotPresent."),
    lifecycle=f(LIFECYCLE, "Actions at container start and stop."),
    livenessProbe=f(PROBE, "Restart the container when this probe fails."),
    name=f(STRING, "Name of the container, a DNS_LABEL unique in the pod.", required=True),
    ports=merged(CONTAINER_PORT, "Ports the container exposes (informational).",
                 key="containerPort", map_keys=("containerPort", "protocol")),
    readinessProbe=f(PROBE, "Remove the pod from service endpoints while this fails."),
    resizePolicy=atomic(CONTAINER_RESIZE_POLICY, "How each resource may be resized in place."),
    resources=f(RESOURCE_REQUIREMENTS, "Compute resources requested and limited."),
    restartPolicy=f(STRING, "Per-container restart policy; Always makes an init container "
                    "a sidecar."),
    restartPolicyRules=atomic(CONTAINER_RESTART_RULE, "Rules deciding restarts on exit."),
    securityContext=f(SECURITY_CONTEXT, "Security settings of the container."),
    startupProbe=f(PROBE, "Other probes wait until this one succeeds."),
    stdin=f(BOOLEAN, "Allocate a buffer for stdin."),
    stdinOnce=f(BOOLEAN, "Close stdin after the first attach disconnects."),
    terminationMessagePath=f(STRING, "File whose content becomes the termination message."),
    terminationMessagePolicy=f(STRING, "File or FallbackToLogsOnError."),
    tty=f(BOOLEAN, "Allocate a TTY; requires stdin."),
    volumeDevices=merged(VOLUME_DEVICE, "Raw block devices for the container.",
                         key="devicePath"),
    volumeMounts=merged(VOLUME_MOUNT, "Volumes mounted into the container.", key="mountPath"),
    workingDir=f(STRING, "Working directory; the image's if empty."),
)

CONTAINER = obj(
    f"{CORE}.Container",
    "A single application container of a pod.",
    **_CONTAINER_FIELDS,
)

EPHEMERAL_CONTAINER = obj(
    f"{CORE}.EphemeralContainer",
    "A temporary container added to a running pod, e.g. for debugging.",
    **_CONTAINER_FIELDS,
    targetContainerName=f(STRING, "Container whose namespaces this container joins."),
)
