"""The table of kinds: which schema describes each group/version/kind.

Upstream keeps this in the runtime.Scheme (types registered per group-version) and in
the generated OpenAPI definitions; here it is one dict.
"""

from __future__ import annotations

from collections.abc import Iterable

from minikube_py.api.resources import RESOURCES
from minikube_py.api.schema import (
    admissionregistration,
    apiextensions,
    apps,
    authz,
    autoscaling,
    batch,
    certificates,
    core,
    flowcontrol,
    metrics,
    networking,
    node,
    others,
    pod,
    rbac,
    service,
    storage,
)
from minikube_py.api.schema.meta import STATUS, list_kind
from minikube_py.api.schema.types import Type

GroupVersionKind = tuple[str, str, str]

# Top-level kinds, by (group, version, kind); "" is the core group.
KINDS: dict[GroupVersionKind, Type] = {
    ("", "v1", "Pod"): pod.POD,
    ("", "v1", "Binding"): core.BINDING,
    ("", "v1", "Node"): node.NODE,
    ("", "v1", "Namespace"): core.NAMESPACE,
    ("", "v1", "Service"): service.SERVICE,
    ("", "v1", "Endpoints"): service.ENDPOINTS,
    ("", "v1", "ConfigMap"): core.CONFIG_MAP,
    ("", "v1", "Secret"): core.SECRET,
    ("", "v1", "ServiceAccount"): core.SERVICE_ACCOUNT,
    ("", "v1", "Event"): core.EVENT,
    ("", "v1", "PersistentVolumeClaim"): storage.PERSISTENT_VOLUME_CLAIM,
    ("", "v1", "PersistentVolume"): storage.PERSISTENT_VOLUME,
    ("storage.k8s.io", "v1", "StorageClass"): storage.STORAGE_CLASS,
    ("storage.k8s.io", "v1", "CSIDriver"): storage.CSI_DRIVER,
    ("storage.k8s.io", "v1", "CSINode"): storage.CSI_NODE,
    ("storage.k8s.io", "v1", "VolumeAttachment"): storage.VOLUME_ATTACHMENT,
    ("storage.k8s.io", "v1", "CSIStorageCapacity"): storage.CSI_STORAGE_CAPACITY,
    ("", "v1", "LimitRange"): core.LIMIT_RANGE,
    ("", "v1", "ResourceQuota"): core.RESOURCE_QUOTA,
    ("", "v1", "ReplicationController"): apps.REPLICATION_CONTROLLER,
    ("", "v1", "Status"): STATUS,
    ("apps", "v1", "Deployment"): apps.DEPLOYMENT,
    ("apps", "v1", "ReplicaSet"): apps.REPLICA_SET,
    ("apps", "v1", "StatefulSet"): apps.STATEFUL_SET,
    ("apps", "v1", "DaemonSet"): apps.DAEMON_SET,
    ("apps", "v1", "ControllerRevision"): apps.CONTROLLER_REVISION,
    ("batch", "v1", "Job"): batch.JOB,
    ("batch", "v1", "CronJob"): batch.CRON_JOB,
    ("certificates.k8s.io", "v1", "CertificateSigningRequest"):
        certificates.CERTIFICATE_SIGNING_REQUEST,
    ("discovery.k8s.io", "v1", "EndpointSlice"): others.ENDPOINT_SLICE,
    ("coordination.k8s.io", "v1", "Lease"): others.LEASE,
    ("events.k8s.io", "v1", "Event"): others.EVENTS_EVENT,
    ("scheduling.k8s.io", "v1", "PriorityClass"): others.PRIORITY_CLASS,
    ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"): flowcontrol.FLOW_SCHEMA,
    ("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration"):
        flowcontrol.PRIORITY_LEVEL_CONFIGURATION,
    ("apiregistration.k8s.io", "v1", "APIService"): others.API_SERVICE,
    ("networking.k8s.io", "v1", "Ingress"): networking.INGRESS,
    ("networking.k8s.io", "v1", "IngressClass"): networking.INGRESS_CLASS,
    ("networking.k8s.io", "v1", "NetworkPolicy"): networking.NETWORK_POLICY,
    ("policy", "v1", "PodDisruptionBudget"): others.POD_DISRUPTION_BUDGET,
    ("policy", "v1", "Eviction"): others.EVICTION,
    ("autoscaling", "v1", "Scale"): others.SCALE,
    ("autoscaling", "v1", "HorizontalPodAutoscaler"): autoscaling.HORIZONTAL_POD_AUTOSCALER_V1,
    ("autoscaling", "v2", "HorizontalPodAutoscaler"): autoscaling.HORIZONTAL_POD_AUTOSCALER_V2,
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview"):
        authz.SELF_SUBJECT_ACCESS_REVIEW,
    ("authorization.k8s.io", "v1", "SubjectAccessReview"): authz.SUBJECT_ACCESS_REVIEW,
    ("authorization.k8s.io", "v1", "LocalSubjectAccessReview"):
        authz.LOCAL_SUBJECT_ACCESS_REVIEW,
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview"):
        authz.SELF_SUBJECT_RULES_REVIEW,
    ("authentication.k8s.io", "v1", "SelfSubjectReview"): authz.SELF_SUBJECT_REVIEW,
    ("authentication.k8s.io", "v1", "TokenReview"): authz.TOKEN_REVIEW,
    ("authentication.k8s.io", "v1", "TokenRequest"): authz.TOKEN_REQUEST,
    ("rbac.authorization.k8s.io", "v1", "Role"): rbac.ROLE,
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"): rbac.CLUSTER_ROLE,
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"): rbac.ROLE_BINDING,
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"): rbac.CLUSTER_ROLE_BINDING,
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"):
        admissionregistration.VALIDATING_WEBHOOK_CONFIGURATION,
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"):
        admissionregistration.MUTATING_WEBHOOK_CONFIGURATION,
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy"):
        admissionregistration.VALIDATING_ADMISSION_POLICY,
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding"):
        admissionregistration.VALIDATING_ADMISSION_POLICY_BINDING,
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"):
        apiextensions.CUSTOM_RESOURCE_DEFINITION,
}

# The aggregated metrics API (served by the metrics server, not by the API server).
KINDS.update({
    ("metrics.k8s.io", "v1beta1", "NodeMetrics"): metrics.NODE_METRICS,
    ("metrics.k8s.io", "v1beta1", "NodeMetricsList"): list_kind(metrics.NODE_METRICS),
    ("metrics.k8s.io", "v1beta1", "PodMetrics"): metrics.POD_METRICS,
    ("metrics.k8s.io", "v1beta1", "PodMetricsList"): list_kind(metrics.POD_METRICS),
})

# <Kind>List of every resource that can be listed.
KINDS.update({
    (r.group, r.version, r.list_kind): list_kind(KINDS[(r.group, r.version, r.kind)])
    for r in RESOURCES
    if "list" in r.verbs and (r.group, r.version, r.kind) in KINDS
})


def schema_for(group: str, version: str, kind: str) -> Type | None:
    """The schema of a top-level kind (or its List), e.g. ("apps", "v1", "Deployment")."""
    return KINDS.get((group, version, kind))


def group_version_kinds() -> dict[str, list[GroupVersionKind]]:
    """x-kubernetes-group-version-kind of each definition that is a top-level kind."""
    by_name: dict[str, list[GroupVersionKind]] = {}
    for gvk, schema in KINDS.items():
        by_name.setdefault(schema.name, []).append(gvk)
    return by_name


def definitions(roots: Iterable[Type]) -> dict[str, Type]:
    """Every named type reachable from `roots`, by definition name (sorted)."""
    found: dict[str, Type] = {}
    pending = list(roots)
    while pending:
        schema = pending.pop()
        if schema.name:
            if schema.name in found:
                continue
            found[schema.name] = schema
        pending.extend(field.type for field in schema.fields.values())
        if schema.items is not None:
            pending.append(schema.items)
    return dict(sorted(found.items()))
