"""`describe deployment`, `replicaset`, `daemonset` and `statefulset` (describe.go:
describeDeployment, describeReplicaSet, describeDaemonSet, describeStatefulSet,
DescribePodTemplate, getPodStatusForController).

    Deployment: Name, Namespace, CreationTimestamp, Labels, Annotations, Selector,
        Replicas, StrategyType, MinReadySeconds, RollingUpdateStrategy, Pod Template,
        Conditions, OldReplicaSets / NewReplicaSet, Events
    ReplicaSet: Name, Namespace, Selector, Labels, Annotations, Controlled By,
        Replicas, Pods Status (of the pods it controls), Pod Template, Conditions, Events
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    describe_events,
    print_annotations_multiline,
    print_controller,
    print_labels_multiline,
    print_tolerations_multiline,
    search_events,
)
from minikube_py.mkctl.describers.containers import describe_containers
from minikube_py.mkctl.describers.pod import describe_topology_spread_constraints
from minikube_py.mkctl.describers.storage import claim_class
from minikube_py.mkctl.describers.volumes import describe_volumes
from minikube_py.mkctl.describers.writer import LEVEL_0, LEVEL_1, PrefixWriter, rfc1123z
from minikube_py.mkctl.errors import MkctlError

POD_TEMPLATE_HASH = "pod-template-hash"


def _selector_string(selector: Obj | None) -> str:
    """metav1.LabelSelectorAsSelector(...).String()."""
    from minikube_py.api.selectors import label_selector_to_string

    return label_selector_to_string(selector)


def describe_pod_template(template: Obj | None, w: PrefixWriter) -> None:
    """DescribePodTemplate: the template's labels, containers (no state: there is no
    pod), volumes, node selectors and tolerations, indented under "Pod Template:"."""
    w.write(LEVEL_0, "Pod Template:\n")
    if template is None:
        w.write(LEVEL_1, "<unset>")
        return
    meta, spec = template.get("metadata") or {}, template.get("spec") or {}
    print_labels_multiline(w, "  Labels", meta.get("labels"))
    if meta.get("annotations"):
        print_annotations_multiline(w, "  Annotations", meta["annotations"])
    if spec.get("serviceAccountName"):
        w.write(LEVEL_1, f"Service Account:\t{spec['serviceAccountName']}\n")
    if spec.get("initContainers"):
        describe_containers("Init Containers", spec["initContainers"], None, None, w, "  ")
    describe_containers("Containers", spec.get("containers") or [], None, None, w, "  ")
    describe_volumes(spec.get("volumes"), w, "  ")
    describe_topology_spread_constraints(spec.get("topologySpreadConstraints"), w, "  ")
    if spec.get("priorityClassName"):
        w.write(LEVEL_1, f"Priority Class Name:\t{spec['priorityClassName']}\n")
    print_labels_multiline(w, "  Node-Selectors", spec.get("nodeSelector"))
    print_tolerations_multiline(w, "  Tolerations", spec.get("tolerations"))


def _conditions(conditions: list[Obj] | None, w: PrefixWriter) -> None:
    if conditions:
        w.write(LEVEL_0, "Conditions:\n  Type\tStatus\tReason\n")
        w.write(LEVEL_1, "----\t------\t------\n")
        for c in conditions:
            w.write(LEVEL_1,
                    f"{c.get('type', '')} \t{c.get('status', '')}\t{c.get('reason', '')}\n")


# -- deployments --------------------------------------------------------------------------

def _without_hash(template: Obj) -> Obj:
    meta = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    return {**template, "metadata": meta}


def replica_sets_of(deployment: Obj, replica_sets: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    """GetAllReplicaSets: the old and the new ReplicaSets the deployment controls; the
    new one runs its current template (pod-template-hash aside), the oldest such if
    several."""
    uid = (deployment.get("metadata") or {}).get("uid")
    owned = [rs for rs in replica_sets if any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in (rs.get("metadata") or {}).get("ownerReferences") or [])]
    owned.sort(key=lambda rs: ((rs.get("metadata") or {}).get("creationTimestamp", ""),
                               (rs.get("metadata") or {}).get("name", "")))
    template = _without_hash((deployment.get("spec") or {}).get("template") or {})
    new = next((rs for rs in owned if _without_hash(
        (rs.get("spec") or {}).get("template") or {}) == template), None)
    return [rs for rs in owned if rs is not new], [new] if new is not None else []


def _replica_sets_by_labels(replica_sets: list[Obj]) -> str:
    """printReplicaSetsByLabels: "web-5d4f (2/2 replicas created)", or "<none>"."""
    shown = [f"{rs['metadata']['name']} ({(rs.get('status') or {}).get('replicas', 0)}/"
             f"{(rs.get('spec') or {}).get('replicas', 0)} replicas created)"
             for rs in replica_sets]
    return ", ".join(shown) or "<none>"


def deployment_describer(deployment: Obj, lookups: Lookups, settings: Settings) -> str:
    """DeploymentDescriber: the deployment, its events, and its ReplicaSets (those its
    selector matches and it controls)."""
    meta = deployment.get("metadata") or {}
    namespace = meta.get("namespace", "")
    events = search_events(lookups, namespace, meta.get("name", ""), "Deployment",
                           meta.get("uid", ""), settings)
    old: list[Obj] = []
    new: list[Obj] = []
    try:
        params = {"labelSelector": _selector_string(
            (deployment.get("spec") or {}).get("selector"))}
        if settings.chunk_size > 0:
            params["limit"] = str(settings.chunk_size)
        listed = lookups.list(f"/apis/apps/v1/namespaces/{namespace}/replicasets", params)
        old, new = replica_sets_of(deployment, listed)
    except MkctlError:
        pass
    return describe_deployment(deployment, old, new, events)


def describe_deployment(deployment: Obj, old: list[Obj], new: list[Obj],
                        events: list[Obj] | None) -> str:
    """describeDeployment."""
    meta, spec = deployment.get("metadata") or {}, deployment.get("spec") or {}
    status = deployment.get("status") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    w.write(LEVEL_0, f"CreationTimestamp:\t{rfc1123z(meta.get('creationTimestamp'))}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    w.write(LEVEL_0, f"Selector:\t{_selector_string(spec.get('selector'))}\n")
    w.write(LEVEL_0, f"Replicas:\t{spec.get('replicas', 0)} desired | "
                     f"{status.get('updatedReplicas', 0)} updated | "
                     f"{status.get('replicas', 0)} total | "
                     f"{status.get('availableReplicas', 0)} available | "
                     f"{status.get('unavailableReplicas', 0)} unavailable\n")
    strategy = spec.get("strategy") or {}
    w.write(LEVEL_0, f"StrategyType:\t{strategy.get('type', '')}\n")
    w.write(LEVEL_0, f"MinReadySeconds:\t{spec.get('minReadySeconds', 0)}\n")
    rolling = strategy.get("rollingUpdate")
    if rolling is not None:
        w.write(LEVEL_0, f"RollingUpdateStrategy:\t{rolling.get('maxUnavailable', 0)} max "
                         f"unavailable, {rolling.get('maxSurge', 0)} max surge\n")
    describe_pod_template(spec.get("template"), w)
    _conditions(status.get("conditions"), w)
    if old or new:
        w.write(LEVEL_0, f"OldReplicaSets:\t{_replica_sets_by_labels(old)}\n")
        w.write(LEVEL_0, f"NewReplicaSet:\t{_replica_sets_by_labels(new)}\n")
    describe_events(events, w)
    return w.tabbed()


# -- replicasets --------------------------------------------------------------------------

def pod_status_for_controller(lookups: Lookups, controller: Obj, settings: Settings
                               ) -> dict[str, int]:
    """getPodStatusForController: how many of the pods the controller's selector matches,
    and it controls, are Running, Pending, Succeeded and Failed."""
    meta = controller.get("metadata") or {}
    phases = {"Running": 0, "Pending": 0, "Succeeded": 0, "Failed": 0}
    params = {"labelSelector": _selector_string((controller.get("spec") or {}).get("selector"))}
    if settings.chunk_size > 0:
        params["limit"] = str(settings.chunk_size)
    for pod in lookups.list(f"/api/v1/namespaces/{meta.get('namespace', '')}/pods", params):
        refs = (pod.get("metadata") or {}).get("ownerReferences") or []
        owner = next((ref for ref in refs if ref.get("controller")), None)
        phase = (pod.get("status") or {}).get("phase", "")
        if owner is not None and owner.get("uid") == meta.get("uid") and phase in phases:
            phases[phase] += 1
    return phases


def _pods_status(phases: dict[str, int]) -> str:
    return (f"{phases['Running']} Running / {phases['Pending']} Waiting / "
            f"{phases['Succeeded']} Succeeded / {phases['Failed']} Failed")


def replica_set_describer(rs: Obj, lookups: Lookups, settings: Settings) -> str:
    """ReplicaSetDescriber: the ReplicaSet, the phases of the pods it controls, its
    events."""
    meta = rs.get("metadata") or {}
    phases: dict[str, int] = {}
    pods_error = ""
    try:
        phases = pod_status_for_controller(lookups, rs, settings)
    except MkctlError as error:
        pods_error = str(error)
    events = search_events(lookups, meta.get("namespace", ""), meta.get("name", ""),
                           "ReplicaSet", meta.get("uid", ""), settings)
    return describe_replica_set(rs, events, phases, pods_error)


def describe_replica_set(rs: Obj, events: list[Obj] | None, phases: dict[str, int],
                         pods_error: str) -> str:
    """describeReplicaSet."""
    meta, spec, status = rs.get("metadata") or {}, rs.get("spec") or {}, rs.get(
        "status") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    w.write(LEVEL_0, f"Selector:\t{_selector_string(spec.get('selector')) or '<none>'}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    controlled_by = print_controller(rs)
    if controlled_by:
        w.write(LEVEL_0, f"Controlled By:\t{controlled_by}\n")
    w.write(LEVEL_0, f"Replicas:\t{status.get('replicas', 0)} current / "
                     f"{spec.get('replicas', 0)} desired\n")
    w.write(LEVEL_0, "Pods Status:\t")
    if pods_error:
        w.write(LEVEL_0, f"error in fetching pods: {pods_error}\n")
    else:
        w.write(LEVEL_0, _pods_status(phases) + "\n")
    describe_pod_template(spec.get("template"), w)
    _conditions(status.get("conditions"), w)
    describe_events(events, w)
    return w.tabbed()


# -- daemonsets and statefulsets ----------------------------------------------------------

def daemon_set_describer(daemon: Obj, lookups: Lookups, settings: Settings) -> str:
    """DaemonSetDescriber + describeDaemonSet."""
    from minikube_py.mkctl.describers.service import format_labels

    meta, spec = daemon.get("metadata") or {}, daemon.get("spec") or {}
    status = daemon.get("status") or {}
    phases = pod_status_for_controller(lookups, daemon, settings)
    events = search_events(lookups, meta.get("namespace", ""), meta.get("name", ""),
                           "DaemonSet", meta.get("uid", ""), settings)
    node_selector = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector")
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    w.write(LEVEL_0, f"Selector:\t{_selector_string(spec.get('selector'))}\n")
    w.write(LEVEL_0, f"Node-Selector:\t{format_labels(node_selector)}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    for title, field in (
            ("Desired Number of Nodes Scheduled", "desiredNumberScheduled"),
            ("Current Number of Nodes Scheduled", "currentNumberScheduled"),
            ("Number of Nodes Scheduled with Up-to-date Pods", "updatedNumberScheduled"),
            ("Number of Nodes Scheduled with Available Pods", "numberAvailable"),
            ("Number of Nodes Misscheduled", "numberMisscheduled")):
        w.write(LEVEL_0, f"{title}: {status.get(field, 0)}\n")
    w.write(LEVEL_0, f"Pods Status:\t{_pods_status(phases)}\n")
    describe_pod_template(spec.get("template"), w)
    describe_events(events, w)
    return w.tabbed()


def _volume_claim_templates(templates: list[Obj] | None, w: PrefixWriter) -> None:
    """describeVolumeClaimTemplates."""
    if not templates:
        w.write(LEVEL_0, "Volume Claims:\t<none>\n")
        return
    w.write(LEVEL_0, "Volume Claims:\n")
    for claim in templates:
        meta, spec = claim.get("metadata") or {}, claim.get("spec") or {}
        w.write(LEVEL_1, f"Name:\t{meta.get('name', '')}\n")
        w.write(LEVEL_1, f"StorageClass:\t{claim_class(claim)}\n")
        print_labels_multiline(w, "Labels", meta.get("labels"), initial_indent="  ")
        print_labels_multiline(w, "Annotations", meta.get("annotations"), initial_indent="  ")
        capacity = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        w.write(LEVEL_1, f"Capacity:\t{capacity if capacity is not None else '<default>'}\n")
        w.write(LEVEL_1, f"Access Modes:\t[{' '.join(spec.get('accessModes') or [])}]\n")


def stateful_set_describer(sts: Obj, lookups: Lookups, settings: Settings) -> str:
    """StatefulSetDescriber + describeStatefulSet."""
    meta, spec = sts.get("metadata") or {}, sts.get("spec") or {}
    status = sts.get("status") or {}
    phases = pod_status_for_controller(lookups, sts, settings)
    events = search_events(lookups, meta.get("namespace", ""), meta.get("name", ""),
                           "StatefulSet", meta.get("uid", ""), settings)
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    w.write(LEVEL_0, f"CreationTimestamp:\t{rfc1123z(meta.get('creationTimestamp'))}\n")
    w.write(LEVEL_0, f"Selector:\t{_selector_string(spec.get('selector'))}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    if spec.get("serviceName"):
        w.write(LEVEL_0, f"Service Name:\t{spec['serviceName']}\n")
    if spec.get("podManagementPolicy"):
        w.write(LEVEL_0, f"Pod Management Policy:\t{spec['podManagementPolicy']}\n")
    w.write(LEVEL_0, f"Replicas:\t{spec.get('replicas', 0)} desired | "
                     f"{status.get('replicas', 0)} total\n")
    strategy = spec.get("updateStrategy") or {}
    w.write(LEVEL_0, f"Update Strategy:\t{strategy.get('type', '')}\n")
    rolling = strategy.get("rollingUpdate")
    if rolling is not None and rolling.get("partition") is not None:
        w.write(LEVEL_1, f"Partition:\t{rolling['partition']}\n")
        if rolling.get("maxUnavailable") is not None:
            w.write(LEVEL_1, f"MaxUnavailable:\t{rolling['maxUnavailable']}\n")
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        w.write(LEVEL_0, "Persistent Volume Claim Retention Policy:\n")
        w.write(LEVEL_1, f"WhenDeleted:\t{retention.get('whenDeleted', '')}\n")
        w.write(LEVEL_1, f"WhenScaled:\t{retention.get('whenScaled', '')}\n")
    w.write(LEVEL_0, f"Pods Status:\t{_pods_status(phases)}\n")
    describe_pod_template(spec.get("template"), w)
    _volume_claim_templates(spec.get("volumeClaimTemplates"), w)
    describe_events(events, w)
    return w.tabbed()
