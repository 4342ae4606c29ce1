"""The strategy of every built-in resource: `strategy_for(resource)`.

One small class per kind, named after upstream's (`podStrategy` -> `PodStrategy`),
spread over one module per API group. A kind without an entry gets `KindStrategy`:
the base hooks with DNS-subdomain names.
"""

from __future__ import annotations

from minikube_py.api.resources import Resource
from minikube_py.apiserver.registry.strategies.admissionregistration import (
    MutatingWebhookConfigurationStrategy,
    ValidatingAdmissionPolicyBindingStrategy,
    ValidatingAdmissionPolicyStrategy,
    ValidatingWebhookConfigurationStrategy,
)
from minikube_py.apiserver.registry.strategies.apiextensions import (
    CustomResourceDefinitionStrategy,
)
from minikube_py.apiserver.registry.strategies.apps import (
    ControllerRevisionStrategy,
    DaemonSetStrategy,
    DeploymentStrategy,
    ReplicaSetStrategy,
    ReplicationControllerStrategy,
    StatefulSetStrategy,
)
from minikube_py.apiserver.registry.strategies.autoscaling import (
    HorizontalPodAutoscalerStrategy,
    HorizontalPodAutoscalerV1Strategy,
)
from minikube_py.apiserver.registry.strategies.base import KindStrategy, Strategy
from minikube_py.apiserver.registry.strategies.batch import CronJobStrategy, JobStrategy
from minikube_py.apiserver.registry.strategies.certificates import (
    CertificateSigningRequestStrategy,
)
from minikube_py.apiserver.registry.strategies.core import (
    BindingStrategy,
    ConfigMapStrategy,
    EndpointsStrategy,
    LimitRangeStrategy,
    NamespaceStrategy,
    NodeStrategy,
    ResourceQuotaStrategy,
    SecretStrategy,
    ServiceAccountStrategy,
)
from minikube_py.apiserver.registry.strategies.csi import (
    CSIDriverStrategy,
    CSINodeStrategy,
    CSIStorageCapacityStrategy,
    VolumeAttachmentStrategy,
)
from minikube_py.apiserver.registry.strategies.events import EventStrategy, EventsV1EventStrategy
from minikube_py.apiserver.registry.strategies.flowcontrol import (
    FlowSchemaStrategy,
    PriorityLevelConfigurationStrategy,
)
from minikube_py.apiserver.registry.strategies.networking import (
    IngressClassStrategy,
    IngressStrategy,
    NetworkPolicyStrategy,
)
from minikube_py.apiserver.registry.strategies.others import (
    APIServiceStrategy,
    EndpointSliceStrategy,
    LeaseStrategy,
    PodDisruptionBudgetStrategy,
    PriorityClassStrategy,
)
from minikube_py.apiserver.registry.strategies.pods import PodStrategy
from minikube_py.apiserver.registry.strategies.rbac import (
    ClusterRoleBindingStrategy,
    ClusterRoleStrategy,
    RoleBindingStrategy,
    RoleStrategy,
)
from minikube_py.apiserver.registry.strategies.services import ServiceStrategy
from minikube_py.apiserver.registry.strategies.storage import StorageClassStrategy
from minikube_py.apiserver.registry.strategies.volumes import (
    PersistentVolumeClaimStrategy,
    PersistentVolumeStrategy,
)

# (API group, kind) -> strategy class.
STRATEGIES: dict[tuple[str, str], type[KindStrategy]] = {
    ("", "Pod"): PodStrategy,
    ("", "Binding"): BindingStrategy,
    ("", "Node"): NodeStrategy,
    ("", "Namespace"): NamespaceStrategy,
    ("", "Service"): ServiceStrategy,
    ("", "Endpoints"): EndpointsStrategy,
    ("", "ConfigMap"): ConfigMapStrategy,
    ("", "Secret"): SecretStrategy,
    ("", "ServiceAccount"): ServiceAccountStrategy,
    ("", "Event"): EventStrategy,
    ("", "PersistentVolumeClaim"): PersistentVolumeClaimStrategy,
    ("", "PersistentVolume"): PersistentVolumeStrategy,
    ("", "LimitRange"): LimitRangeStrategy,
    ("", "ResourceQuota"): ResourceQuotaStrategy,
    ("", "ReplicationController"): ReplicationControllerStrategy,
    ("apps", "Deployment"): DeploymentStrategy,
    ("apps", "ReplicaSet"): ReplicaSetStrategy,
    ("apps", "StatefulSet"): StatefulSetStrategy,
    ("apps", "DaemonSet"): DaemonSetStrategy,
    ("apps", "ControllerRevision"): ControllerRevisionStrategy,
    ("autoscaling", "HorizontalPodAutoscaler"): HorizontalPodAutoscalerStrategy,
    ("batch", "Job"): JobStrategy,
    ("batch", "CronJob"): CronJobStrategy,
    ("certificates.k8s.io", "CertificateSigningRequest"): CertificateSigningRequestStrategy,
    ("discovery.k8s.io", "EndpointSlice"): EndpointSliceStrategy,
    ("coordination.k8s.io", "Lease"): LeaseStrategy,
    ("events.k8s.io", "Event"): EventsV1EventStrategy,
    ("scheduling.k8s.io", "PriorityClass"): PriorityClassStrategy,
    ("policy", "PodDisruptionBudget"): PodDisruptionBudgetStrategy,
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): FlowSchemaStrategy,
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"):
        PriorityLevelConfigurationStrategy,
    ("networking.k8s.io", "Ingress"): IngressStrategy,
    ("networking.k8s.io", "IngressClass"): IngressClassStrategy,
    ("networking.k8s.io", "NetworkPolicy"): NetworkPolicyStrategy,
    ("storage.k8s.io", "StorageClass"): StorageClassStrategy,
    ("storage.k8s.io", "CSIDriver"): CSIDriverStrategy,
    ("storage.k8s.io", "CSINode"): CSINodeStrategy,
    ("storage.k8s.io", "VolumeAttachment"): VolumeAttachmentStrategy,
    ("storage.k8s.io", "CSIStorageCapacity"): CSIStorageCapacityStrategy,
    ("rbac.authorization.k8s.io", "Role"): RoleStrategy,
    ("rbac.authorization.k8s.io", "ClusterRole"): ClusterRoleStrategy,
    ("rbac.authorization.k8s.io", "RoleBinding"): RoleBindingStrategy,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ClusterRoleBindingStrategy,
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"):
        MutatingWebhookConfigurationStrategy,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"):
        ValidatingWebhookConfigurationStrategy,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"):
        ValidatingAdmissionPolicyStrategy,
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"):
        ValidatingAdmissionPolicyBindingStrategy,
    ("apiregistration.k8s.io", "APIService"): APIServiceStrategy,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): CustomResourceDefinitionStrategy,
}


# Kinds served in another version than the stored one: (group, version, kind) -> strategy.
VERSIONED_STRATEGIES: dict[tuple[str, str, str], type[KindStrategy]] = {
    ("autoscaling", "v1", "HorizontalPodAutoscaler"): HorizontalPodAutoscalerV1Strategy,
}


def strategy_for(resource: Resource) -> Strategy:
    """The strategy the generic store uses for `resource`."""
    versioned = VERSIONED_STRATEGIES.get((resource.group, resource.version, resource.kind))
    if versioned is not None:
        return versioned(resource)
    strategy_class = STRATEGIES.get((resource.group, resource.kind), KindStrategy)
    return strategy_class(resource)


__all__ = ["STRATEGIES", "KindStrategy", "strategy_for"]
