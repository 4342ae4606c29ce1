"""Defaulting of pods and pod templates (upstream pkg/apis/core/v1/defaults.go).

`set_pod_spec_defaults` is SetDefaults_PodSpec with everything the generated defaulter
does for the containers and volumes inside; it runs for pods and for the pod template
of every workload. `set_pod_defaults` adds what upstream does only for real pods
(SetDefaults_Pod) and what its admission plugins would set in this small cluster.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.defaulting import (
    as_dict,
    defaulted_dict,
    items_of,
    set_default,
    set_default_if_zero,
)

DEFAULT_SCHEDULER_NAME = "default-scheduler"
DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30
DEFAULT_TERMINATION_MESSAGE_PATH = "/dev/termination-log"
DEFAULT_FILE_MODE = 0o644  # 420, what the API shows for configMap/secret defaultMode
DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


def set_pod_spec_defaults(spec: Obj) -> None:
    """SetDefaults_PodSpec and the defaults of the containers and volumes of a pod spec."""
    set_default_if_zero(spec, "dnsPolicy", "ClusterFirst")
    set_default_if_zero(spec, "restartPolicy", "Always")
    set_default(spec, "securityContext", {})
    set_default(spec, "terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS)
    set_default_if_zero(spec, "schedulerName", DEFAULT_SCHEDULER_NAME)
    _sync_service_account_fields(spec)
    for list_name in _CONTAINER_LISTS:
        for _, container in items_of(spec, list_name):
            set_container_defaults(container)
    for _, volume in items_of(spec, "volumes"):
        set_volume_defaults(volume)


def set_pod_defaults(pod: Obj) -> None:
    """SetDefaults_Pod: the pod-only defaults, on top of the pod spec's."""
    spec = pod.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    set_pod_spec_defaults(spec)
    for list_name in ("containers", "initContainers"):
        for _, container in items_of(spec, list_name):
            _default_requests_to_limits(container)
    set_default(spec, "enableServiceLinks", True)
    if spec.get("hostNetwork"):
        _default_host_network_ports(spec)


def set_container_defaults(container: Obj) -> None:
    """SetDefaults_Container, with the ports, probes, handlers and env inside."""
    set_default_if_zero(container, "imagePullPolicy", default_pull_policy(container.get("image")))
    set_default_if_zero(container, "terminationMessagePath", DEFAULT_TERMINATION_MESSAGE_PATH)
    set_default_if_zero(container, "terminationMessagePolicy", "File")
    # Go writes the (non-pointer) resources struct even when empty.
    set_default(container, "resources", {})
    for _, port in items_of(container, "ports"):
        set_default_if_zero(port, "protocol", "TCP")
    for probe_name in _PROBES:
        probe = container.get(probe_name)
        if isinstance(probe, dict):
            _set_probe_defaults(probe)
    lifecycle = as_dict(container.get("lifecycle"))
    for hook in ("postStart", "preStop"):
        _set_handler_defaults(as_dict(lifecycle.get(hook)))
    for _, env in items_of(container, "env"):
        field_ref = as_dict(as_dict(env.get("valueFrom")).get("fieldRef"))
        if field_ref:
            set_default_if_zero(field_ref, "apiVersion", "v1")


def default_pull_policy(image: object) -> str:
    """Always for `:latest` or an image without tag or digest, else IfNotPresent."""
    if not isinstance(image, str) or not image:
        return "IfNotPresent"
    name, _, digest = image.partition("@")
    last_component = name.rsplit("/", 1)[-1]
    tag = last_component.rpartition(":")[2] if ":" in last_component else ""
    if not tag and not digest:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _set_probe_defaults(probe: Obj) -> None:
    """SetDefaults_Probe: the timing every kubelet probe worker needs."""
    set_default_if_zero(probe, "timeoutSeconds", 1)
    set_default_if_zero(probe, "periodSeconds", 10)
    set_default_if_zero(probe, "successThreshold", 1)
    set_default_if_zero(probe, "failureThreshold", 3)
    _set_handler_defaults(probe)
    grpc = probe.get("grpc")
    if isinstance(grpc, dict):
        set_default(grpc, "service", "")


def _set_handler_defaults(handler: Obj) -> None:
    """SetDefaults_HTTPGetAction for a probe or lifecycle handler."""
    http_get = handler.get("httpGet")
    if isinstance(http_get, dict):
        set_default_if_zero(http_get, "path", "/")
        set_default_if_zero(http_get, "scheme", "HTTP")


_VOLUME_SOURCES = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret",
    "nfs", "iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs",
    "quobyte", "downwardAPI", "fc", "flexVolume", "configMap", "azureFile", "vsphereVolume",
    "photonPersistentDisk", "portworxVolume", "azureDisk", "storageos", "projected", "scaleIO",
    "csi", "ephemeral", "image",
)  # fmt: skip


def volume_sources(volume: Obj) -> list[str]:
    """The volume source fields set on a volume, in upstream's order (exactly one is valid)."""
    return [name for name in _VOLUME_SOURCES if volume.get(name) is not None]


def set_volume_defaults(volume: Obj) -> None:
    """SetDefaults_Volume: a volume without a source is an emptyDir; file modes 0644."""
    if not volume_sources(volume):
        volume["emptyDir"] = {}
    for source in ("secret", "configMap", "downwardAPI", "projected"):
        if isinstance(volume.get(source), dict):
            set_default(volume[source], "defaultMode", DEFAULT_FILE_MODE)
    if isinstance(volume.get("hostPath"), dict):
        set_default(volume["hostPath"], "type", "")
    for _, item in items_of(as_dict(volume.get("downwardAPI")), "items"):
        _default_field_ref(item)
    for _, source in items_of(as_dict(volume.get("projected")), "sources"):
        token = source.get("serviceAccountToken")
        if isinstance(token, dict):
            set_default(token, "expirationSeconds", DEFAULT_TOKEN_EXPIRATION_SECONDS)
        for _, item in items_of(as_dict(source.get("downwardAPI")), "items"):
            _default_field_ref(item)
    claim_template = as_dict(as_dict(volume.get("ephemeral")).get("volumeClaimTemplate"))
    claim_spec = as_dict(claim_template.get("spec"))
    if claim_spec:
        set_default(claim_spec, "volumeMode", "Filesystem")


def _default_field_ref(item: Obj) -> None:
    field_ref = item.get("fieldRef")
    if isinstance(field_ref, dict):
        set_default_if_zero(field_ref, "apiVersion", "v1")


def _sync_service_account_fields(spec: Obj) -> None:
    """serviceAccount is the deprecated name of serviceAccountName; the API keeps both equal."""
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]


def _default_requests_to_limits(container: Obj) -> None:
    """A resource with a limit and no request is requested at its limit."""
    resources = as_dict(container.get("resources"))
    limits = as_dict(resources.get("limits"))
    if not limits:
        return
    requests = defaulted_dict(resources, "requests")
    for name, quantity in limits.items():
        requests.setdefault(name, quantity)


def _default_host_network_ports(spec: Obj) -> None:
    """With hostNetwork a container port is also the host port."""
    for list_name in ("containers", "initContainers"):
        for _, container in items_of(spec, list_name):
            for _, port in items_of(container, "ports"):
                set_default_if_zero(port, "hostPort", port.get("containerPort"))
