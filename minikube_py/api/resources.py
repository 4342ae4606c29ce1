"""The table of built-in resources the API server serves.

One row per resource: where it lives in the URL space (group, version, plural), the kind
stored there, whether it is namespaced, and the names kubectl accepts for it. Everything
else (discovery, routing, the etcd key, tables, strategies) is derived from this table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = {
    "status": ("get", "patch", "update"),
    "ephemeralcontainers": ("get", "patch", "update"),
    "scale": ("get", "patch", "update"),
    "approval": ("get", "patch", "update"),
    "binding": ("create",),
    "eviction": ("create",),
    "token": ("create",),
    "finalize": ("update",),
    "log": ("get",),
    "exec": ("create", "get"),
    "attach": ("create", "get"),
    "portforward": ("create", "get"),
    "proxy": ("create", "delete", "get", "patch", "update"),
}
# The kind served by each subresource (None: the parent's kind).
SUBRESOURCE_KINDS = {
    "scale": ("autoscaling", "v1", "Scale"),
    "binding": ("", "v1", "Binding"),
    "eviction": ("policy", "v1", "Eviction"),
    "token": ("authentication.k8s.io", "v1", "TokenRequest"),
    "exec": ("", "v1", "PodExecOptions"),
    "attach": ("", "v1", "PodAttachOptions"),
    "portforward": ("", "v1", "PodPortForwardOptions"),
    "proxy": ("", "v1", "PodProxyOptions"),
    "services/proxy": ("", "v1", "ServiceProxyOptions"),
    "nodes/proxy": ("", "v1", "NodeProxyOptions"),
}
CONNECT_SUBRESOURCES = ("exec", "attach", "portforward", "proxy")
"""Streams to the kubelet (upstream's `connect` operations): they read no object and
write none, so the OpenAPI paths leave them out."""


def subresource_kind(plural: str, subresource: str) -> tuple[str, str, str] | None:
    """The kind a subresource of `plural` serves, when it is not the parent's own."""
    return SUBRESOURCE_KINDS.get(f"{plural}/{subresource}", SUBRESOURCE_KINDS.get(subresource))


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    # Resources stored under another resource's key prefix (events.k8s.io events
    # share /registry/events with core events, as upstream).
    storage_plural: str = ""
    singular: str = field(default="")

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def etcd_prefix(self) -> str:
        """`/registry/pods/`: every object of this resource lives under this prefix."""
        return f"/registry/{self.storage_plural or self.plural}/"

    def etcd_key(self, namespace: str, name: str) -> str:
        if self.namespaced:
            return f"{self.etcd_prefix}{namespace}/{name}"
        return f"{self.etcd_prefix}{name}"


_ALL = ("all",)

RESOURCES: tuple[Resource, ...] = (
    # core/v1
    Resource("", "v1", "Pod", "pods", True, ("po",), _ALL,
             ("status", "binding", "eviction", "ephemeralcontainers", "log", "exec",
              "attach", "portforward", "proxy")),
    Resource("", "v1", "Binding", "bindings", True, verbs=("create",)),
    Resource("", "v1", "Node", "nodes", False, ("no",), subresources=("status", "proxy")),
    Resource("", "v1", "Namespace", "namespaces", False, ("ns",),
             subresources=("status", "finalize"),
             verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    Resource("", "v1", "Service", "services", True, ("svc",), _ALL, ("status", "proxy"),
             verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update",
                    "watch")),
    Resource("", "v1", "Endpoints", "endpoints", True, ("ep",), singular="endpoints"),
    Resource("", "v1", "ConfigMap", "configmaps", True, ("cm",)),
    Resource("", "v1", "Secret", "secrets", True),
    Resource("", "v1", "ServiceAccount", "serviceaccounts", True, ("sa",),
             subresources=("token",)),
    Resource("", "v1", "Event", "events", True, ("ev",)),
    Resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",),
             subresources=("status",)),
    Resource("", "v1", "PersistentVolume", "persistentvolumes", False, ("pv",),
             subresources=("status",)),
    Resource("", "v1", "LimitRange", "limitranges", True, ("limits",)),
    Resource("", "v1", "ResourceQuota", "resourcequotas", True, ("quota",),
             subresources=("status",)),
    Resource("", "v1", "ReplicationController", "replicationcontrollers", True, ("rc",), _ALL,
             ("status", "scale")),
    # apps/v1
    Resource("apps", "v1", "Deployment", "deployments", True, ("deploy",), _ALL,
             ("status", "scale")),
    Resource("apps", "v1", "ReplicaSet", "replicasets", True, ("rs",), _ALL, ("status", "scale")),
    Resource("apps", "v1", "StatefulSet", "statefulsets", True, ("sts",), _ALL,
             ("status", "scale")),
    Resource("apps", "v1", "DaemonSet", "daemonsets", True, ("ds",), _ALL, ("status",)),
    Resource("apps", "v1", "ControllerRevision", "controllerrevisions", True),
    # autoscaling/v2 (stored) and autoscaling/v1 (the same objects, converted)
    Resource("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True,
             ("hpa",), _ALL, ("status",)),
    Resource("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True,
             ("hpa",), _ALL, ("status",)),
    # batch/v1
    Resource("batch", "v1", "Job", "jobs", True, (), _ALL, ("status",)),
    Resource("batch", "v1", "CronJob", "cronjobs", True, ("cj",), _ALL, ("status",)),
    # discovery.k8s.io/v1
    Resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True),
    # certificates.k8s.io/v1 (a signer approves with /approval, issues with /status)
    Resource("certificates.k8s.io", "v1", "CertificateSigningRequest",
             "certificatesigningrequests", False, ("csr",),
             subresources=("status", "approval")),
    # coordination.k8s.io/v1
    Resource("coordination.k8s.io", "v1", "Lease", "leases", True),
    # events.k8s.io/v1 (same objects as core/v1 events, another shape)
    Resource("events.k8s.io", "v1", "Event", "events", True, ("ev",), storage_plural="events"),
    # scheduling.k8s.io/v1
    Resource("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, ("pc",)),
    # flowcontrol.apiserver.k8s.io/v1 (API Priority and Fairness: apiserver/flowcontrol/)
    Resource("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", False,
             subresources=("status",)),
    Resource("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration",
             "prioritylevelconfigurations", False, subresources=("status",)),
    # policy/v1
    Resource("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ("pdb",),
             subresources=("status",)),
    # networking.k8s.io/v1 (stored; no ingress controller or network policy enforcement yet)
    Resource("networking.k8s.io", "v1", "Ingress", "ingresses", True, ("ing",),
             subresources=("status",)),
    Resource("networking.k8s.io", "v1", "IngressClass", "ingressclasses", False),
    Resource("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, ("netpol",)),
    # storage.k8s.io/v1
    Resource("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, ("sc",)),
    Resource("storage.k8s.io", "v1", "CSIDriver", "csidrivers", False),
    Resource("storage.k8s.io", "v1", "CSINode", "csinodes", False, subresources=("status",)),
    Resource("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", False,
             subresources=("status",)),
    Resource("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities", True),
    # rbac.authorization.k8s.io/v1 (stored; the API server does not enforce it yet)
    # questions answered by the authorizer and never stored (authorization.py)
    Resource("authorization.k8s.io", "v1", "SelfSubjectAccessReview",
             "selfsubjectaccessreviews", False, verbs=("create",)),
    Resource("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews",
             False, verbs=("create",)),
    Resource("authorization.k8s.io", "v1", "LocalSubjectAccessReview",
             "localsubjectaccessreviews", True, verbs=("create",)),
    Resource("authorization.k8s.io", "v1", "SelfSubjectRulesReview",
             "selfsubjectrulesreviews", False, verbs=("create",)),
    Resource("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews",
             False, verbs=("create",)),
    Resource("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False,
             verbs=("create",)),
    Resource("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    Resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    Resource("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings",
             False),
    # admissionregistration.k8s.io/v1 (the webhooks and policies admission runs:
    # apiserver/auth/admission/)
    Resource("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
             "mutatingwebhookconfigurations", False),
    Resource("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
             "validatingwebhookconfigurations", False),
    Resource("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy",
             "validatingadmissionpolicies", False, categories=("api-extensions",),
             subresources=("status",)),
    Resource("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding",
             "validatingadmissionpolicybindings", False,
             categories=("api-extensions",)),
    # apiregistration.k8s.io/v1 (the aggregation layer's registry: which server serves
    # which group-version; every built-in one is Local)
    Resource("apiregistration.k8s.io", "v1", "APIService", "apiservices", False,
             subresources=("status",)),
    # apiextensions.k8s.io/v1 (each definition adds a resource at run time:
    # apiserver/apiextensions/)
    Resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition",
             "customresourcedefinitions", False, ("crd", "crds"), ("api-extensions",),
             ("status",)),
)

# Groups in the order discovery lists them (core first, as upstream).
GROUP_ORDER = (
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "flowcontrol.apiserver.k8s.io",
)


def lookup(group: str, version: str, plural: str) -> Resource | None:
    for resource in RESOURCES:
        if (resource.group, resource.version, resource.plural) == (group, version, plural):
            return resource
    return None


def by_kind(api_version: str, kind: str) -> Resource | None:
    for resource in RESOURCES:
        if resource.api_version == api_version and resource.kind == kind:
            return resource
    return None
