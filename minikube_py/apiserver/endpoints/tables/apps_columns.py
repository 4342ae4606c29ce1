"""apps/v1: deployments, replica sets, stateful sets, daemon sets, controller revisions."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.apiserver.endpoints.tables.cells import (
    age,
    container_cells,
    format_label_selector,
    format_labels,
    label_selector_string,
    name_of,
    template_spec,
)
from minikube_py.apiserver.endpoints.tables.table import (
    AGE,
    CONTAINERS,
    IMAGES,
    NAME,
    Cells,
    column,
    selector_column,
)

DEPLOYMENT_COLUMNS = (
    NAME,
    column("Ready", "string", "Number of the pod with ready state"),
    column("Up-to-date", "string", "Total number of non-terminated pods targeted by this "
                                   "deployment that have the desired template spec."),
    column("Available", "string", "Total number of available pods (ready for at least "
                                  "minReadySeconds) targeted by this deployment."),
    AGE,
    CONTAINERS,
    IMAGES,
    selector_column("Label selector for pods."),
)


def print_deployment(deployment: Obj, now: datetime) -> Cells:
    """printDeployment: READY ready/desired, UP-TO-DATE, AVAILABLE."""
    spec, status = (deployment.get("spec") or {}), (deployment.get("status") or {})
    selector = label_selector_string(spec.get("selector"))
    return [
        name_of(deployment),
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        age(deployment, now),
        *container_cells(template_spec(deployment)),
        "<invalid>" if selector is None else selector,
    ]


REPLICA_SET_COLUMNS = (
    NAME,
    column("Desired", "integer", "Replicas is the number of desired replicas."),
    column("Current", "integer", "Replicas is the most recently observed number of replicas."),
    column("Ready", "integer", "The number of ready replicas for this replica set."),
    AGE,
    CONTAINERS,
    IMAGES,
    selector_column("Selector is a label query over pods that should match the replica count."),
)


def print_replica_set(replica_set: Obj, now: datetime) -> Cells:
    """printReplicaSet: desired, current and ready replicas."""
    selector = format_label_selector((replica_set.get("spec") or {}).get("selector"))
    return _replica_cells(replica_set, now, selector)


def _replica_cells(obj: Obj, now: datetime, selector: str) -> Cells:
    """The columns ReplicaSets and ReplicationControllers share."""
    spec, status = (obj.get("spec") or {}), (obj.get("status") or {})
    return [
        name_of(obj),
        spec.get("replicas", 1),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        age(obj, now),
        *container_cells(template_spec(obj)),
        selector,
    ]


REPLICATION_CONTROLLER_COLUMNS = tuple(
    column("Ready", "integer", "The number of ready replicas for this replication controller.")
    if c is REPLICA_SET_COLUMNS[3] else c for c in REPLICA_SET_COLUMNS)


def print_replication_controller(controller: Obj, now: datetime) -> Cells:
    """printReplicationController: a ReplicaSet's columns; the selector is a label map."""
    return _replica_cells(controller, now,
                          format_labels((controller.get("spec") or {}).get("selector")))


STATEFUL_SET_COLUMNS = (
    NAME,
    column("Ready", "string", "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
)


def print_stateful_set(stateful_set: Obj, now: datetime) -> Cells:
    """printStatefulSet: READY ready/desired."""
    spec, status = (stateful_set.get("spec") or {}), (stateful_set.get("status") or {})
    return [
        name_of(stateful_set),
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        age(stateful_set, now),
        *container_cells(template_spec(stateful_set)),
    ]


DAEMON_SET_COLUMNS = (
    NAME,
    column("Desired", "integer", "The total number of nodes that should be running the daemon "
                                 "pod."),
    column("Current", "integer", "The number of nodes that are running at least 1 daemon pod "
                                 "and are supposed to run the daemon pod."),
    column("Ready", "integer", "The number of nodes that should be running the daemon pod and "
                               "have one or more of the daemon pod running and ready."),
    column("Up-to-date", "integer", "The total number of nodes that are running updated daemon "
                                    "pod"),
    column("Available", "integer", "The number of nodes that should be running the daemon pod "
                                   "and have one or more of the daemon pod running and "
                                   "available."),
    column("Node Selector", "string", "NodeSelector is a selector which must be true for the "
                                      "pod to fit on a node."),
    AGE,
    CONTAINERS,
    IMAGES,
    selector_column("A label query over pods that are managed by the daemon set."),
)


def print_daemon_set(daemon_set: Obj, now: datetime) -> Cells:
    """printDaemonSet: the scheduling counters and the pods' node selector."""
    status = daemon_set.get("status") or {}
    return [
        name_of(daemon_set),
        status.get("desiredNumberScheduled", 0),
        status.get("currentNumberScheduled", 0),
        status.get("numberReady", 0),
        status.get("updatedNumberScheduled", 0),
        status.get("numberAvailable", 0),
        format_labels(template_spec(daemon_set).get("nodeSelector")),
        age(daemon_set, now),
        *container_cells(template_spec(daemon_set)),
        format_label_selector((daemon_set.get("spec") or {}).get("selector")),
    ]


CONTROLLER_REVISION_COLUMNS = (
    NAME,
    column("Controller", "string", "Controller of the object"),
    column("Revision", "string", "Revision indicates the revision of the state represented "
                                 "by Data."),
    AGE,
)


def print_controller_revision(revision: Obj, now: datetime) -> Cells:
    """printControllerRevision: CONTROLLER as `kind.group/name` of the controller
    owner (`daemonset.apps/web`), or <none>."""
    controller = "<none>"
    for owner in (revision.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller"):
            group = str(owner.get("apiVersion", "")).rpartition("/")[0]
            kind = f"{owner.get('kind', '')}.{group}" if group else owner.get("kind", "")
            controller = f"{kind.lower()}/{owner.get('name', '')}"
            break
    return [name_of(revision), controller, revision.get("revision", 0), age(revision, now)]
