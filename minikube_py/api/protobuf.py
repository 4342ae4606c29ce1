"""Decode Kubernetes protobuf request bodies (application/vnd.kubernetes.protobuf) into JSON dicts.

client-go's typed clientsets (and so `kubectl create namespace/deployment/secret ...`) send
objects in protobuf, as upstream's k8s.io/apimachinery/pkg/runtime/serializer/protobuf
writes them:

    "k8s\\x00"  +  runtime.Unknown{typeMeta: {apiVersion, kind}, raw: <the object's message>}

`decode` unwraps the envelope, parses `raw` with the generated message class of the kind
(proto/k8s/*.proto, subsets of upstream's generated.proto files) and turns the message into
the JSON dict the rest of the server works with, the way Go would have marshalled the
decoded struct to JSON:

- go-to-protobuf names fields after their JSON tags, so a field's name is its JSON key;
  a few Go structs are embedded with `json:",inline"`: their fields move up one level;
- maps are maps, `[]byte` is base64, and four types have their own JSON form:
  Time (RFC 3339), IntOrString (a number or a string), Quantity (a string), FieldsV1
  (the JSON document it holds) and a user's ExtraValue (the list of strings);
- Go's `omitempty`: unset fields, empty lists and maps, zero scalars and the zero Time
  (`creationTimestamp` of a new object) are left out, except where the Go field is a
  pointer (or has no omitempty) and its zero means something (`replicas: 0`,
  `automountServiceAccountToken: false`): those fields are listed in KEEP_ZERO.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from minikube_py.api import meta
from minikube_py.gen.k8s import (
    admissionregistration_v1_pb2,
    apps_v1_pb2,
    authentication_v1_pb2,
    authorization_v1_pb2,
    autoscaling_v1_pb2,
    autoscaling_v2_pb2,
    batch_v1_pb2,
    certificates_v1_pb2,
    core_v1_pb2,
    meta_v1_pb2,
    networking_v1_pb2,
    policy_v1_pb2,
    rbac_v1_pb2,
    runtime_pb2,
    scheduling_v1_pb2,
)

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"


class ProtobufError(ValueError):
    """The body is not a Kubernetes protobuf object this server can read."""


# The kinds a protobuf body may carry: (apiVersion, kind) -> the object's message class.
KINDS: dict[tuple[str, str], type[Message]] = {
    ("v1", "ConfigMap"): core_v1_pb2.ConfigMap,
    # a DELETE's body from client-go's typed clients (kubectl drain --disable-eviction)
    ("v1", "DeleteOptions"): meta_v1_pb2.DeleteOptions,
    ("meta.k8s.io/v1", "DeleteOptions"): meta_v1_pb2.DeleteOptions,
    ("v1", "Namespace"): core_v1_pb2.Namespace,
    ("v1", "Pod"): core_v1_pb2.Pod,
    ("v1", "ResourceQuota"): core_v1_pb2.ResourceQuota,
    ("v1", "Secret"): core_v1_pb2.Secret,
    ("v1", "Service"): core_v1_pb2.Service,
    ("v1", "ServiceAccount"): core_v1_pb2.ServiceAccount,
    ("apps/v1", "Deployment"): apps_v1_pb2.Deployment,
    ("autoscaling/v1", "HorizontalPodAutoscaler"): autoscaling_v1_pb2.HorizontalPodAutoscaler,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): autoscaling_v2_pb2.HorizontalPodAutoscaler,
    ("batch/v1", "CronJob"): batch_v1_pb2.CronJob,
    ("batch/v1", "Job"): batch_v1_pb2.Job,
    ("certificates.k8s.io/v1", "CertificateSigningRequest"):
        certificates_v1_pb2.CertificateSigningRequest,
    ("networking.k8s.io/v1", "Ingress"): networking_v1_pb2.Ingress,
    ("networking.k8s.io/v1", "IngressClass"): networking_v1_pb2.IngressClass,
    ("networking.k8s.io/v1", "NetworkPolicy"): networking_v1_pb2.NetworkPolicy,
    ("policy/v1", "PodDisruptionBudget"): policy_v1_pb2.PodDisruptionBudget,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): rbac_v1_pb2.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): rbac_v1_pb2.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role"): rbac_v1_pb2.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): rbac_v1_pb2.RoleBinding,
    ("scheduling.k8s.io/v1", "PriorityClass"): scheduling_v1_pb2.PriorityClass,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"):
        authorization_v1_pb2.SelfSubjectAccessReview,
    ("authorization.k8s.io/v1", "SubjectAccessReview"):
        authorization_v1_pb2.SubjectAccessReview,
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"):
        authorization_v1_pb2.LocalSubjectAccessReview,
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"):
        authorization_v1_pb2.SelfSubjectRulesReview,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): authentication_v1_pb2.SelfSubjectReview,
    ("authentication.k8s.io/v1", "TokenRequest"): authentication_v1_pb2.TokenRequest,
    ("authentication.k8s.io/v1", "TokenReview"): authentication_v1_pb2.TokenReview,
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"):
        admissionregistration_v1_pb2.MutatingWebhookConfiguration,
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"):
        admissionregistration_v1_pb2.ValidatingWebhookConfiguration,
}

CORE = "k8s.io.api.core.v1"
ADMISSIONREGISTRATION = "k8s.io.api.admissionregistration.v1"
CERTIFICATES = "k8s.io.api.certificates.v1"
NETWORKING = "k8s.io.api.networking.v1"
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
TIME = f"{META}.Time"
FIELDS_V1 = f"{META}.FieldsV1"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
EXTRA_VALUES = ("k8s.io.api.authorization.v1.ExtraValue",
                "k8s.io.api.authentication.v1.ExtraValue", f"{CERTIFICATES}.ExtraValue")

# Go struct fields embedded with `json:",inline"`: in JSON their fields belong to the parent
# (a configMap volume is {"name": ..., "items": ...}, a probe {"httpGet": ..., "periodSeconds": 5}).
INLINE: frozenset[str] = frozenset({
    f"{ADMISSIONREGISTRATION}.RuleWithOperations.rule",
    f"{NETWORKING}.IngressRule.ingressRuleValue",
    f"{CORE}.Volume.volumeSource",
    f"{CORE}.Probe.handler",
    f"{CORE}.EphemeralContainer.ephemeralContainerCommon",
    *(f"{CORE}.{owner}.localObjectReference" for owner in (
        "ConfigMapEnvSource", "ConfigMapKeySelector", "ConfigMapProjection",
        "ConfigMapVolumeSource", "SecretEnvSource", "SecretKeySelector", "SecretProjection",
    )),
})

# Scalar fields whose zero value ("", 0, false) Go writes to JSON: pointer fields (set, even
# to zero, when present on the wire) and the few fields without omitempty.
KEEP_ZERO: dict[str, frozenset[str]] = {
    name: frozenset(fields.split()) for name, fields in {
        f"{META}.ObjectMeta": "deletionGracePeriodSeconds",
        f"{META}.DeleteOptions": "gracePeriodSeconds orphanDependents "
                                 "ignoreStoreReadErrorWithClusterBreakingPotential",
        f"{META}.Preconditions": "uid resourceVersion",
        f"{META}.OwnerReference": "controller blockOwnerDeletion",
        f"{CORE}.AzureDiskVolumeSource": "cachingMode fsType readOnly kind",
        f"{CORE}.CSIVolumeSource": "readOnly fsType",
        f"{CORE}.ClientIPConfig": "timeoutSeconds",
        f"{CORE}.ClusterTrustBundleProjection": "name signerName optional",
        f"{CORE}.ConfigMap": "immutable",
        f"{CORE}.ConfigMapEnvSource": "optional",
        f"{CORE}.ConfigMapKeySelector": "optional",
        f"{CORE}.ConfigMapProjection": "optional",
        f"{CORE}.ConfigMapVolumeSource": "defaultMode optional",
        f"{CORE}.Container": "restartPolicy",
        f"{CORE}.ContainerPort": "containerPort",
        f"{CORE}.ContainerStateTerminated": "exitCode",
        f"{CORE}.ContainerStatus": "ready restartCount started stopSignal",
        f"{CORE}.DownwardAPIVolumeFile": "mode",
        f"{CORE}.DownwardAPIVolumeSource": "defaultMode",
        f"{CORE}.EphemeralContainerCommon": "restartPolicy",
        f"{CORE}.FileKeySelector": "optional",
        f"{CORE}.GRPCAction": "port service",
        f"{CORE}.HostPathVolumeSource": "type",
        f"{CORE}.ISCSIVolumeSource": "initiatorName",
        f"{CORE}.KeyToPath": "mode",
        f"{CORE}.Lifecycle": "stopSignal",
        f"{CORE}.LoadBalancerIngress": "ipMode",
        f"{CORE}.PersistentVolumeClaimSpec": (
            "storageClassName volumeMode volumeAttributesClassName"),
        f"{CORE}.PodCertificateProjection": "maxExpirationSeconds",
        f"{CORE}.PodResourceClaim": "resourceClaimName resourceClaimTemplateName",
        f"{CORE}.PodResourceClaimStatus": "resourceClaimName",
        f"{CORE}.PodSecurityContext": (
            "runAsUser runAsGroup runAsNonRoot fsGroup fsGroupChangePolicy "
            "supplementalGroupsPolicy seLinuxChangePolicy"),
        f"{CORE}.PodSpec": (
            "terminationGracePeriodSeconds activeDeadlineSeconds automountServiceAccountToken "
            "shareProcessNamespace priority enableServiceLinks preemptionPolicy "
            "setHostnameAsFQDN hostUsers hostnameOverride"),
        f"{CORE}.PortStatus": "port error",
        f"{CORE}.PreferredSchedulingTerm": "weight",
        f"{CORE}.Probe": "terminationGracePeriodSeconds",
        f"{CORE}.ProjectedVolumeSource": "defaultMode",
        f"{CORE}.SeccompProfile": "localhostProfile",
        f"{CORE}.AppArmorProfile": "localhostProfile",
        f"{CORE}.Secret": "immutable",
        f"{CORE}.SecretEnvSource": "optional",
        f"{CORE}.SecretKeySelector": "optional",
        f"{CORE}.SecretProjection": "optional",
        f"{CORE}.SecretVolumeSource": "defaultMode optional",
        f"{CORE}.SecurityContext": (
            "privileged runAsUser runAsGroup runAsNonRoot readOnlyRootFilesystem "
            "allowPrivilegeEscalation procMount"),
        f"{CORE}.ServiceAccount": "automountServiceAccountToken",
        f"{CORE}.ServiceAccountTokenProjection": "expirationSeconds",
        f"{CORE}.ServicePort": "port appProtocol",
        f"{CORE}.ServiceSpec": (
            "ipFamilyPolicy allocateLoadBalancerNodePorts loadBalancerClass "
            "internalTrafficPolicy trafficDistribution"),
        f"{CORE}.SleepAction": "seconds",
        f"{CORE}.Toleration": "tolerationSeconds",
        f"{CORE}.TopologySpreadConstraint": (
            "maxSkew minDomains nodeAffinityPolicy nodeTaintsPolicy"),
        f"{CORE}.TypedLocalObjectReference": "apiGroup",
        f"{CORE}.TypedObjectReference": "apiGroup namespace",
        f"{CORE}.VolumeMount": "recursiveReadOnly mountPropagation",
        f"{CORE}.VolumeMountStatus": "recursiveReadOnly",
        f"{CORE}.WeightedPodAffinityTerm": "weight",
        f"{CORE}.WindowsSecurityContextOptions": (
            "gmsaCredentialSpecName gmsaCredentialSpec runAsUserName hostProcess"),
        f"{ADMISSIONREGISTRATION}.MatchCondition": "name expression",
        f"{ADMISSIONREGISTRATION}.MutatingWebhook": (
            "name failurePolicy matchPolicy sideEffects timeoutSeconds reinvocationPolicy"),
        f"{ADMISSIONREGISTRATION}.Rule": "scope",
        f"{ADMISSIONREGISTRATION}.ServiceReference": "namespace name path port",
        f"{ADMISSIONREGISTRATION}.ValidatingWebhook": (
            "name failurePolicy matchPolicy sideEffects timeoutSeconds"),
        f"{ADMISSIONREGISTRATION}.WebhookClientConfig": "url",
        f"{CERTIFICATES}.CertificateSigningRequestCondition": "type status",
        f"{CERTIFICATES}.CertificateSigningRequestSpec": "signerName expirationSeconds",
        "k8s.io.api.apps.v1.DeploymentSpec": (
            "replicas revisionHistoryLimit progressDeadlineSeconds podReplacementPolicy"),
        "k8s.io.api.apps.v1.DeploymentStatus": "terminatingReplicas collisionCount",
        "k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerSpec": (
            "minReplicas maxReplicas targetCPUUtilizationPercentage"),
        "k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerStatus": (
            "observedGeneration currentReplicas desiredReplicas currentCPUUtilizationPercentage"),
        "k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerSpec": "minReplicas maxReplicas",
        "k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerStatus": (
            "observedGeneration desiredReplicas"),
        "k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerCondition": "observedGeneration",
        "k8s.io.api.autoscaling.v2.HPAScalingRules": "selectPolicy stabilizationWindowSeconds",
        "k8s.io.api.autoscaling.v2.HPAScalingPolicy": "type value periodSeconds",
        "k8s.io.api.autoscaling.v2.MetricTarget": "averageUtilization",
        "k8s.io.api.autoscaling.v2.MetricValueStatus": "averageUtilization",
        "k8s.io.api.batch.v1.CronJobSpec": (
            "timeZone startingDeadlineSeconds suspend successfulJobsHistoryLimit "
            "failedJobsHistoryLimit"),
        "k8s.io.api.batch.v1.JobSpec": (
            "parallelism completions activeDeadlineSeconds backoffLimit backoffLimitPerIndex "
            "maxFailedIndexes manualSelector ttlSecondsAfterFinished completionMode suspend "
            "podReplacementPolicy managedBy"),
        "k8s.io.api.batch.v1.JobStatus": "terminating failedIndexes ready",
        "k8s.io.api.batch.v1.PodFailurePolicyOnExitCodesRequirement": "containerName",
        "k8s.io.api.batch.v1.SuccessPolicyRule": "succeededIndexes succeededCount",
        f"{NETWORKING}.IngressClassParametersReference": "apiGroup scope namespace",
        f"{NETWORKING}.IngressPortStatus": "port protocol error",
        f"{NETWORKING}.NetworkPolicyPort": "protocol endPort",
        "k8s.io.api.policy.v1.PodDisruptionBudgetSpec": (
            "unhealthyPodEvictionPolicy availabilityMode"),
        "k8s.io.api.policy.v1.PodDisruptionBudgetStatus": (
            "disruptionsAllowed currentHealthy desiredHealthy expectedPods"),
        "k8s.io.api.scheduling.v1.PriorityClass": "value preemptionPolicy",
    }.items()
}

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf request body as the object's JSON dict (apiVersion and kind from typeMeta)."""
    if not body:
        raise ProtobufError("empty data")
    if not body.startswith(MAGIC):
        raise ProtobufError("provided data does not appear to be a protobuf message, "
                            f"expected prefix {list(MAGIC)}")
    if len(body) == len(MAGIC):
        raise ProtobufError("empty body")
    envelope = runtime_pb2.Unknown()
    _parse(envelope, body[len(MAGIC):], "runtime.Unknown envelope")
    api_version, kind = envelope.typeMeta.apiVersion, envelope.typeMeta.kind
    if envelope.contentEncoding:
        raise ProtobufError(f"unsupported content encoding {envelope.contentEncoding!r}")
    message_class = KINDS.get((api_version, kind))
    if message_class is None:
        raise ProtobufError(f'no kind "{kind}" is registered for version "{api_version}"')
    message = message_class()
    _parse(message, envelope.raw, kind)
    try:
        fields = message_to_json(message)
    except (UnicodeDecodeError, OverflowError, orjson.JSONDecodeError) as err:
        raise ProtobufError(f"unable to decode {kind}: {err}") from None
    return {"apiVersion": api_version, "kind": kind, **fields}


def _parse(message: Message, data: bytes, what: str) -> None:
    try:
        message.ParseFromString(data)
    except DecodeError as err:
        raise ProtobufError(f"unable to decode {what}: {err}") from None


def message_to_json(message: Message) -> dict[str, Any]:
    """One message as its JSON object, following Go's encoding/json and omitempty."""
    descriptor: Descriptor = message.DESCRIPTOR
    keep_zero = KEEP_ZERO.get(descriptor.full_name, frozenset())
    out: dict[str, Any] = {}
    for field in descriptor.fields:
        value = getattr(message, field.name)
        if _is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            if value:
                out[field.name] = {_text(key): _value_to_json(value_field, item)
                                   for key, item in value.items()}
        elif field.is_repeated:
            if value:
                out[field.name] = [_value_to_json(field, item) for item in value]
        elif not message.HasField(field.name):
            continue
        elif f"{descriptor.full_name}.{field.name}" in INLINE:
            out.update(message_to_json(value))
        elif field.message_type is not None or value or field.name in keep_zero:
            converted = _value_to_json(field, value)
            if converted is not None:  # the zero Time or an empty FieldsV1: Go omits them
                out[field.name] = converted
    return out


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _value_to_json(field: FieldDescriptor, value: Any) -> Any:
    """A single value (a scalar, or a message) as JSON."""
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    if field.message_type is None:
        return _text(value)
    name = field.message_type.full_name
    if name == TIME:
        return time_to_json(value)
    if name == INT_OR_STRING:
        return value.strVal if value.type == 1 else value.intVal
    if name == QUANTITY:
        return value.string or "0"
    if name == FIELDS_V1:
        return orjson.loads(value.Raw) if value.Raw else None
    if name in EXTRA_VALUES:
        return [_text(item) for item in value.items]
    return message_to_json(value)


def _text(value: Any) -> Any:
    """proto2 hands back a string that is not valid UTF-8 as bytes; Go's encoding/json
    writes such a string with U+FFFD in place of the bad bytes."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def time_to_json(value: Message) -> str | None:
    """metav1.Time: RFC 3339 in UTC to the second; None for an empty message (Go's zero time)."""
    if not value.HasField("seconds") and not value.HasField("nanos"):
        return None
    return meta.rfc3339(_EPOCH + timedelta(seconds=value.seconds))
