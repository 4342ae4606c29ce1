"""apps/v1 kinds: Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision (and
core/v1's ReplicationController, the ReplicaSet's predecessor).

Upstream: k8s.io/api/apps/v1/types.go. Deployment's strategy carries
`patchStrategy:"retainKeys"`, so switching its type drops the old rollingUpdate.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import (
    ANY,
    BOOLEAN,
    INT_OR_STRING,
    INTEGER,
    STRING,
    STRING_MAP,
    atomic,
    f,
    merged,
    obj,
)
from minikube_py.api.schema.meta import LABEL_SELECTOR, TIME, api_object
from minikube_py.api.schema.pod import POD_TEMPLATE_SPEC
from minikube_py.api.schema.references import CORE
from minikube_py.api.schema.storage import PERSISTENT_VOLUME_CLAIM
from minikube_py.api.schema.types import Type

APPS = "io.k8s.api.apps.v1"


def _condition(kind: str) -> Type:
    """The <Kind>Condition type the apps controllers report."""
    return obj(
        f"{APPS}.{kind}Condition",
        f"One aspect of a {kind}'s state.",
        lastTransitionTime=f(TIME, "When status last changed."),
        message=f(STRING, "Human-readable details."),
        reason=f(STRING, "CamelCase reason for the last transition."),
        status=f(STRING, "True, False or Unknown.", required=True),
        type=f(STRING, "Type of the condition.", required=True),
    )


# --- Deployment ------------------------------------------------------------------------

DEPLOYMENT_STRATEGY = obj(
    f"{APPS}.DeploymentStrategy",
    "How a Deployment replaces old pods with new ones.",
    rollingUpdate=f(obj(
        f"{APPS}.RollingUpdateDeployment",
        "Bounds of a rolling update.",
        maxSurge=f(INT_OR_STRING, "Pods allowed above the desired count (number or "
                   "percent); default 25%."),
        maxUnavailable=f(INT_OR_STRING, "Pods allowed to be unavailable (number or percent); "
                         "default 25%."),
    ), "Parameters for type RollingUpdate."),
    type=f(STRING, "RollingUpdate (default) or Recreate."),
)

DEPLOYMENT_CONDITION = obj(
    f"{APPS}.DeploymentCondition",
    "One aspect of a Deployment's state (Available, Progressing, ReplicaFailure).",
    lastTransitionTime=f(TIME, "When status last changed."),
    lastUpdateTime=f(TIME, "When the condition was last updated."),
    message=f(STRING, "Human-readable details."),
    reason=f(STRING, "CamelCase reason for the last transition."),
    status=f(STRING, "True, False or Unknown.", required=True),
    type=f(STRING, "Type of the condition.", required=True),
)

DEPLOYMENT = api_object(
    f"{APPS}.Deployment",
    "Declarative updates for pods, carried out through ReplicaSets.",
    spec=f(obj(
        f"{APPS}.DeploymentSpec",
        "The desired state of a Deployment.",
        minReadySeconds=f(INTEGER, "Seconds a new pod must be ready to count as available."),
        paused=f(BOOLEAN, "Pause rollouts while true."),
        progressDeadlineSeconds=f(INTEGER, "Seconds before a stalled rollout is reported; "
                                  "default 600."),
        replicas=f(INTEGER, "Desired number of pods; default 1."),
        revisionHistoryLimit=f(INTEGER, "Old ReplicaSets kept for rollback; default 10."),
        selector=f(LABEL_SELECTOR, "Labels of the pods the Deployment manages.",
                   required=True),
        strategy=f(DEPLOYMENT_STRATEGY, "How pods are replaced.", strategy="retainKeys"),
        template=f(POD_TEMPLATE_SPEC, "The pods to create.", required=True),
    ), "Desired state of the Deployment."),
    status=f(obj(
        f"{APPS}.DeploymentStatus",
        "The observed state of a Deployment.",
        availableReplicas=f(INTEGER, "Pods ready for at least minReadySeconds."),
        collisionCount=f(INTEGER, "Hash collisions of the template, used to name "
                         "ReplicaSets."),
        conditions=merged(DEPLOYMENT_CONDITION, "Current conditions.", key="type"),
        observedGeneration=f(INTEGER, "Generation the controller last acted on."),
        readyReplicas=f(INTEGER, "Pods that are ready."),
        replicas=f(INTEGER, "Pods targeted by the Deployment."),
        terminatingReplicas=f(INTEGER, "Pods being terminated."),
        unavailableReplicas=f(INTEGER, "Pods still needed to reach the desired count."),
        updatedReplicas=f(INTEGER, "Pods with the current template."),
    ), "Observed state of the Deployment. Read-only."),
)

# --- ReplicaSet ------------------------------------------------------------------------

REPLICA_SET = api_object(
    f"{APPS}.ReplicaSet",
    "Keeps a number of identical pods running.",
    spec=f(obj(
        f"{APPS}.ReplicaSetSpec",
        "The desired state of a ReplicaSet.",
        minReadySeconds=f(INTEGER, "Seconds a new pod must be ready to count as available."),
        replicas=f(INTEGER, "Desired number of pods; default 1."),
        selector=f(LABEL_SELECTOR, "Labels of the pods the ReplicaSet manages.",
                   required=True),
        template=f(POD_TEMPLATE_SPEC, "The pods to create."),
    ), "Desired state of the ReplicaSet."),
    status=f(obj(
        f"{APPS}.ReplicaSetStatus",
        "The observed state of a ReplicaSet.",
        availableReplicas=f(INTEGER, "Pods ready for at least minReadySeconds."),
        conditions=merged(_condition("ReplicaSet"), "Current conditions.", key="type"),
        fullyLabeledReplicas=f(INTEGER, "Pods whose labels match the template's."),
        observedGeneration=f(INTEGER, "Generation the controller last acted on."),
        readyReplicas=f(INTEGER, "Pods that are ready."),
        replicas=f(INTEGER, "Pods observed.", required=True),
        terminatingReplicas=f(INTEGER, "Pods being terminated."),
    ), "Observed state of the ReplicaSet. Read-only."),
)

# --- StatefulSet -----------------------------------------------------------------------

STATEFUL_SET_UPDATE_STRATEGY = obj(
    f"{APPS}.StatefulSetUpdateStrategy",
    "How a StatefulSet updates its pods.",
    rollingUpdate=f(obj(
        f"{APPS}.RollingUpdateStatefulSetStrategy",
        "Bounds of a rolling update.",
        maxUnavailable=f(INT_OR_STRING, "Pods allowed to be unavailable; default 1."),
        partition=f(INTEGER, "Only pods with an ordinal at or above this are updated."),
    ), "Parameters for type RollingUpdate."),
    type=f(STRING, "RollingUpdate (default) or OnDelete."),
)

STATEFUL_SET = api_object(
    f"{APPS}.StatefulSet",
    "Pods with stable names and storage, created and updated in order.",
    spec=f(obj(
        f"{APPS}.StatefulSetSpec",
        "The desired state of a StatefulSet.",
        minReadySeconds=f(INTEGER, "Seconds a new pod must be ready to count as available."),
        ordinals=f(obj(
            f"{APPS}.StatefulSetOrdinals",
            "Numbering of the replicas.",
            start=f(INTEGER, "Ordinal of the first replica; default 0."),
        ), "Numbering of the replicas."),
        persistentVolumeClaimRetentionPolicy=f(obj(
            f"{APPS}.StatefulSetPersistentVolumeClaimRetentionPolicy",
            "What happens to claims from volumeClaimTemplates.",
            whenDeleted=f(STRING, "Retain (default) or Delete when the StatefulSet is "
                          "deleted."),
            whenScaled=f(STRING, "Retain (default) or Delete when scaled down."),
        ), "Lifecycle of the claims created from volumeClaimTemplates."),
        podManagementPolicy=f(STRING, "OrderedReady (default) or Parallel."),
        replicas=f(INTEGER, "Desired number of pods; default 1."),
        revisionHistoryLimit=f(INTEGER, "Revisions kept; default 10."),
        selector=f(LABEL_SELECTOR, "Labels of the pods the StatefulSet manages.",
                   required=True),
        serviceName=f(STRING, "Headless service giving the pods their DNS names."),
        template=f(POD_TEMPLATE_SPEC, "The pods to create.", required=True),
        updateStrategy=f(STATEFUL_SET_UPDATE_STRATEGY, "How pods are updated."),
        volumeClaimTemplates=atomic(PERSISTENT_VOLUME_CLAIM, "Claims created for each pod."),
    ), "Desired state of the StatefulSet."),
    status=f(obj(
        f"{APPS}.StatefulSetStatus",
        "The observed state of a StatefulSet.",
        availableReplicas=f(INTEGER, "Pods ready for at least minReadySeconds."),
        collisionCount=f(INTEGER, "Hash collisions of revisions."),
        conditions=merged(_condition("StatefulSet"), "Current conditions.", key="type"),
        currentReplicas=f(INTEGER, "Pods at currentRevision."),
        currentRevision=f(STRING, "Revision of the pods before the update."),
        observedGeneration=f(INTEGER, "Generation the controller last acted on."),
        readyReplicas=f(INTEGER, "Pods that are ready."),
        replicas=f(INTEGER, "Pods created.", required=True),
        updateRevision=f(STRING, "Revision being rolled out."),
        updatedReplicas=f(INTEGER, "Pods at updateRevision."),
    ), "Observed state of the StatefulSet. Read-only."),
)

# --- DaemonSet -------------------------------------------------------------------------

DAEMON_SET_UPDATE_STRATEGY = obj(
    f"{APPS}.DaemonSetUpdateStrategy",
    "How a DaemonSet updates its pods.",
    rollingUpdate=f(obj(
        f"{APPS}.RollingUpdateDaemonSet",
        "Bounds of a rolling update.",
        maxSurge=f(INT_OR_STRING, "Nodes that may run an extra updated pod; default 0."),
        maxUnavailable=f(INT_OR_STRING, "Nodes whose pod may be unavailable; default 1."),
    ), "Parameters for type RollingUpdate."),
    type=f(STRING, "RollingUpdate (default) or OnDelete."),
)

DAEMON_SET = api_object(
    f"{APPS}.DaemonSet",
    "Runs one copy of a pod on every (selected) node.",
    spec=f(obj(
        f"{APPS}.DaemonSetSpec",
        "The desired state of a DaemonSet.",
        minReadySeconds=f(INTEGER, "Seconds a new pod must be ready to count as available."),
        revisionHistoryLimit=f(INTEGER, "Revisions kept; default 10."),
        selector=f(LABEL_SELECTOR, "Labels of the pods the DaemonSet manages.",
                   required=True),
        template=f(POD_TEMPLATE_SPEC, "The pod to run on each node.", required=True),
        updateStrategy=f(DAEMON_SET_UPDATE_STRATEGY, "How pods are updated."),
    ), "Desired state of the DaemonSet."),
    status=f(obj(
        f"{APPS}.DaemonSetStatus",
        "The observed state of a DaemonSet.",
        collisionCount=f(INTEGER, "Hash collisions of revisions."),
        conditions=merged(_condition("DaemonSet"), "Current conditions.", key="type"),
        currentNumberScheduled=f(INTEGER, "Nodes running a daemon pod that should.",
                                 required=True),
        desiredNumberScheduled=f(INTEGER, "Nodes that should run a daemon pod.",
                                 required=True),
        numberAvailable=f(INTEGER, "Nodes whose daemon pod is available."),
        numberMisscheduled=f(INTEGER, "Nodes running a daemon pod that should not.",
                             required=True),
        numberReady=f(INTEGER, "Nodes whose daemon pod is ready.", required=True),
        numberUnavailable=f(INTEGER, "Nodes whose daemon pod is not available."),
        observedGeneration=f(INTEGER, "Generation the controller last acted on."),
        updatedNumberScheduled=f(INTEGER, "Nodes running the updated pod."),
    ), "Observed state of the DaemonSet. Read-only."),
)

# --- ControllerRevision ----------------------------------------------------------------

CONTROLLER_REVISION = api_object(
    f"{APPS}.ControllerRevision",
    "An immutable snapshot of a controller's state (for DaemonSets and StatefulSets: a "
    "patch that restores their pod template), kept for rollouts and rollbacks. Its data "
    "never changes; its revision number may.",
    data=f(ANY, "The snapshot: any JSON object the controller understands."),
    revision=f(INTEGER, "Which revision of the state the data is.", required=True),
)

# --- ReplicationController (core/v1: the ReplicaSet's predecessor) ---------------------

REPLICATION_CONTROLLER = api_object(
    f"{CORE}.ReplicationController",
    "Keeps a number of identical pods running; its selector is a plain label map.",
    spec=f(obj(
        f"{CORE}.ReplicationControllerSpec",
        "The desired state of a ReplicationController.",
        minReadySeconds=f(INTEGER, "Seconds a new pod must be ready to count as available."),
        replicas=f(INTEGER, "Desired number of pods; default 1."),
        selector=f(STRING_MAP, "Labels of the pods it manages; default: the template's."),
        template=f(POD_TEMPLATE_SPEC, "The pods to create."),
    ), "Desired state of the ReplicationController."),
    status=f(obj(
        f"{CORE}.ReplicationControllerStatus",
        "The observed state of a ReplicationController.",
        availableReplicas=f(INTEGER, "Pods ready for at least minReadySeconds."),
        conditions=merged(obj(
            f"{CORE}.ReplicationControllerCondition",
            "One aspect of a ReplicationController's state.",
            lastTransitionTime=f(TIME, "When status last changed."),
            message=f(STRING, "Human-readable details."),
            reason=f(STRING, "CamelCase reason for the last transition."),
            status=f(STRING, "True, False or Unknown.", required=True),
            type=f(STRING, "Type of the condition.", required=True),
        ), "Current conditions.", key="type"),
        fullyLabeledReplicas=f(INTEGER, "Pods whose labels match the template's."),
        observedGeneration=f(INTEGER, "Generation the controller last acted on."),
        readyReplicas=f(INTEGER, "Pods that are ready."),
        replicas=f(INTEGER, "Pods observed.", required=True),
    ), "Observed state of the ReplicationController. Read-only."),
)
