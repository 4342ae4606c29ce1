"""kubectl describe's describers (k8s.io/kubectl/pkg/describe): one function per kind
that turns an object, and what the server knows around it, into the text `describe`
prints.

    writer.py     PrefixWriter and tabbedString: indented lines, cells aligned
    common.py     labels, annotations, taints, tolerations, ages, the Events table
    pod.py        pods
    containers.py the containers of pods and pod templates: state, resources, env, mounts
    volumes.py    the volumes of pods and pod templates
    workloads.py  deployments, replicasets, daemonsets and statefulsets
    batch.py      jobs and cron jobs
    node.py       nodes: conditions, capacity, the pods on them, what they request
    service.py    services and their endpoints; Endpoints objects
    serviceaccount.py  service accounts
    configmap.py  configmaps: each key and its value
    secret.py     secrets: each key and its size
    storage.py    persistent volume claims and the pods that use them
    ingress.py    ingresses (rules, backends and their endpoints) and ingress classes
    networkpolicy.py  network policies: the selected pods, allowed sources and destinations
    hpa.py        horizontal pod autoscalers: metrics (current / target), behavior, conditions
    namespace.py  namespaces, with their resource quotas and limit ranges
    generic.py    any other kind (custom resources): every field, labelled

A describer takes the object and a Lookups (the few reads it makes besides: events,
the pods of a node, the replicasets of a deployment) and returns the whole text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

from minikube_py.api import Obj


class Lookups(Protocol):
    """The reads a describer makes around its object."""

    def list(self, path: str, params: dict[str, str]) -> list[Obj]:
        """Every item of a collection (followed page by page); raises StatusError."""

    def get(self, path: str) -> Obj:
        """One object; raises StatusError."""


class Settings(NamedTuple):
    """DescriberSettings."""

    show_events: bool = True
    chunk_size: int = 500


Describer = Callable[[Obj, Lookups, Settings], str]


def describer_for(group: str, kind: str) -> Describer | None:
    """DescriberFor: the describer of a kind; the generic one for a kind kubectl has no
    describer for (custom resources); None for a kind kubectl describes its own way and
    mkctl cannot yet."""
    module, name = _DESCRIBERS.get((group, kind), ("", ""))
    if not module:
        if (group, kind) in _KUBECTL_DESCRIBES:
            return None
        module, name = "generic", "generic_describer"
    import importlib

    return getattr(importlib.import_module(f"minikube_py.mkctl.describers.{module}"), name)


_DESCRIBERS = {  # (group, kind) -> (module, function)
    ("", "Pod"): ("pod", "pod_describer"),
    ("", "Node"): ("node", "node_describer"),
    ("", "Service"): ("service", "service_describer"),
    ("", "Endpoints"): ("service", "endpoints_describer"),
    ("", "ServiceAccount"): ("serviceaccount", "service_account_describer"),
    ("", "ConfigMap"): ("configmap", "config_map_describer"),
    ("", "Secret"): ("secret", "secret_describer"),
    ("", "PersistentVolumeClaim"): ("storage", "persistent_volume_claim_describer"),
    ("", "Namespace"): ("namespace", "namespace_describer"),
    ("apps", "Deployment"): ("workloads", "deployment_describer"),
    ("apps", "ReplicaSet"): ("workloads", "replica_set_describer"),
    ("apps", "DaemonSet"): ("workloads", "daemon_set_describer"),
    ("apps", "StatefulSet"): ("workloads", "stateful_set_describer"),
    ("batch", "Job"): ("batch", "job_describer"),
    ("batch", "CronJob"): ("batch", "cron_job_describer"),
    ("networking.k8s.io", "Ingress"): ("ingress", "ingress_describer"),
    ("networking.k8s.io", "IngressClass"): ("ingress", "ingress_class_describer"),
    ("networking.k8s.io", "NetworkPolicy"): ("networkpolicy", "network_policy_describer"),
    ("autoscaling", "HorizontalPodAutoscaler"): ("hpa", "horizontal_pod_autoscaler_describer"),
}

# The kinds kubectl's describerMap gives a describer of their own.
_KUBECTL_DESCRIBES = {
    *(("", kind) for kind in (
        "Pod", "ReplicationController", "Secret", "Service", "ServiceAccount", "Node",
        "LimitRange", "ResourceQuota", "PersistentVolume", "PersistentVolumeClaim",
        "Namespace", "Endpoints", "ConfigMap", "PriorityClass")),
    ("discovery.k8s.io", "EndpointSlice"), ("autoscaling", "HorizontalPodAutoscaler"),
    ("networking.k8s.io", "Ingress"), ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "ServiceCIDR"), ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "NetworkPolicy"), ("batch", "Job"), ("batch", "CronJob"),
    ("apps", "StatefulSet"), ("apps", "Deployment"), ("apps", "DaemonSet"),
    ("apps", "ReplicaSet"), ("certificates.k8s.io", "CertificateSigningRequest"),
    ("storage.k8s.io", "StorageClass"), ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttributesClass"), ("policy", "PodDisruptionBudget"),
    ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("scheduling.k8s.io", "PriorityClass"),
}
