"""Every controller the controller-manager knows, in the order they start.

`--controllers` names them by these names (upstream's names, e.g. `replicaset`,
`garbagecollector`, `nodelifecycle`). `*` runs all but those disabled by default, as
upstream: `bootstrapsigner` and `tokencleaner` run only when named.
"""

from __future__ import annotations

from minikube_py.controllers.base import Controller
from minikube_py.controllers.bootstrapsigner import BootstrapSigner
from minikube_py.controllers.certificates.approver import CSRApprovingController
from minikube_py.controllers.certificates.cleaner import CSRCleanerController
from minikube_py.controllers.certificates.signer import CSRSigningController
from minikube_py.controllers.clusterroleaggregation import ClusterRoleAggregationController
from minikube_py.controllers.cronjob import CronJobController
from minikube_py.controllers.daemonset import DaemonSetController
from minikube_py.controllers.deployment.controller import DeploymentController
from minikube_py.controllers.disruption import DisruptionController
from minikube_py.controllers.endpoints import EndpointsController
from minikube_py.controllers.endpointslice import EndpointSliceController
from minikube_py.controllers.garbagecollector import GarbageCollector
from minikube_py.controllers.job import JobController
from minikube_py.controllers.namespace import NamespaceController
from minikube_py.controllers.nodelifecycle import NodeLifecycleController
from minikube_py.controllers.podautoscaler.controller import HorizontalController
from minikube_py.controllers.podgc import PodGCController
from minikube_py.controllers.replicaset import (
    ReplicaSetController,
    ReplicationControllerController,
)
from minikube_py.controllers.resourcequota import ResourceQuotaController
from minikube_py.controllers.rootcacertpublisher import RootCACertPublisher
from minikube_py.controllers.serviceaccount import ServiceAccountController
from minikube_py.controllers.servicelb import ServiceLBController
from minikube_py.controllers.statefulset import StatefulSetController
from minikube_py.controllers.taint_eviction import TaintEvictionController
from minikube_py.controllers.tokencleaner import TokenCleaner
from minikube_py.controllers.ttlafterfinished import TTLAfterFinishedController
from minikube_py.controllers.volume.expand import ExpandController
from minikube_py.controllers.volume.persistentvolume import PersistentVolumeController
from minikube_py.controllers.volume.protection import (
    PVCProtectionController,
    PVProtectionController,
)

ALL_CONTROLLERS: tuple[type[Controller], ...] = (
    EndpointsController,
    EndpointSliceController,
    ReplicaSetController,
    ReplicationControllerController,
    DeploymentController,
    DaemonSetController,
    StatefulSetController,
    JobController,
    CronJobController,
    TTLAfterFinishedController,
    GarbageCollector,
    NamespaceController,
    ServiceAccountController,
    ResourceQuotaController,
    ServiceLBController,
    DisruptionController,
    HorizontalController,
    NodeLifecycleController,
    TaintEvictionController,
    PodGCController,
    PersistentVolumeController,
    ExpandController,
    PVCProtectionController,
    PVProtectionController,
    ClusterRoleAggregationController,
    RootCACertPublisher,
    CSRApprovingController,
    CSRSigningController,
    CSRCleanerController,
    BootstrapSigner,
    TokenCleaner,
)
