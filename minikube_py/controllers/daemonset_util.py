"""Pure helpers of the DaemonSet controller: daemon pod templates and tolerations, node
eligibility, update strategy counts (upstream pkg/controller/daemon/util and the pure
functions of daemon_controller.go and update.go)."""

from __future__ import annotations

import copy

from minikube_py.api import Obj
from minikube_py.api.intstr import scaled_value_from_int_or_percent
from minikube_py.api.scheduling.nodeaffinity import pod_matches_node_selector_and_affinity
from minikube_py.api.scheduling.taints import find_untolerated_taint

TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
TEMPLATE_GENERATION_LABEL = "pod-template-generation"
REVISION_HASH_LABEL = "controller-revision-hash"
NODE_NAME_FIELD = "metadata.name"

# AddOrUpdateDaemonPodTolerations: (taint key, effect) every daemon pod tolerates.
_DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
_HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def _same_toleration(a: Obj, b: Obj) -> bool:
    """Toleration.MatchToleration: same key, operator, value and effect."""
    return all((a.get(field) or "") == (b.get(field) or "")
               for field in ("key", "operator", "value", "effect"))


def add_or_update_toleration(spec: Obj, toleration: Obj) -> None:
    """AddOrUpdateTolerationInPodSpec: replace the matching toleration, or append it."""
    tolerations = list(spec.get("tolerations") or [])
    for i, existing in enumerate(tolerations):
        if _same_toleration(existing, toleration):
            tolerations[i] = toleration
            break
    else:
        tolerations.append(toleration)
    spec["tolerations"] = tolerations


def add_daemon_pod_tolerations(spec: Obj) -> None:
    """AddOrUpdateDaemonPodTolerations: node problems must not evict or block daemon pods."""
    wanted = list(_DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append(_HOST_NETWORK_TOLERATION)
    for key, effect in wanted:
        add_or_update_toleration(spec, {"key": key, "operator": "Exists", "effect": effect})


def template_generation(ds: Obj) -> str | None:
    """GetTemplateGeneration: the template generation annotation, if it is a number."""
    value = (ds["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    return value if isinstance(value, str) and value.isdigit() else None


def create_pod_template(template: Obj, generation: str | None, hash_: str) -> Obj:
    """CreatePodTemplate: the DaemonSet's template plus tolerations and revision labels."""
    new = copy.deepcopy(template)
    add_daemon_pod_tolerations(new.setdefault("spec", {}))
    labels = new.setdefault("metadata", {}).setdefault("labels", {})
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = generation
    if hash_:
        labels[REVISION_HASH_LABEL] = hash_
    return new


def is_pod_updated(pod: Obj, hash_: str, generation: str | None) -> bool:
    """IsPodUpdated: the pod carries the current template hash or template generation."""
    labels = pod["metadata"].get("labels") or {}
    generation_matches = generation is not None and (
        labels.get(TEMPLATE_GENERATION_LABEL) == generation)
    hash_matches = bool(hash_) and labels.get(REVISION_HASH_LABEL) == hash_
    return hash_matches or generation_matches


def replace_node_name_affinity(affinity: Obj | None, node_name: str) -> Obj:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: require exactly this node (by name).

    The pod's own required node affinity terms are replaced: the controller already
    checked them when it chose the node.
    """
    term = {"matchFields": [{"key": NODE_NAME_FIELD, "operator": "In", "values": [node_name]}]}
    affinity = copy.deepcopy(affinity) if affinity else {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    required["nodeSelectorTerms"] = [term]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    affinity["nodeAffinity"] = node_affinity
    return affinity


def target_node_name(pod: Obj) -> str | None:
    """GetTargetNodeName: spec.nodeName, or for a pod not yet scheduled the node its
    `metadata.name In [node]` affinity term asks for."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for requirement in term.get("matchFields") or []:
            if requirement.get("key") == NODE_NAME_FIELD and requirement.get("operator") == "In":
                values = requirement.get("values") or []
                return values[0] if len(values) == 1 else None
    return None


def new_daemon_pod(ds: Obj, node_name: str) -> Obj:
    """NewPod: the pod the DaemonSet would place on a node, for the eligibility checks."""
    template = ds["spec"].get("template") or {}
    spec = copy.deepcopy(template.get("spec") or {})
    spec["nodeName"] = node_name
    add_daemon_pod_tolerations(spec)
    meta = {**copy.deepcopy(template.get("metadata") or {}),
            "namespace": ds["metadata"].get("namespace", "")}
    return {"metadata": meta, "spec": spec}


def node_should_run_daemon_pod(node: Obj, ds: Obj) -> tuple[bool, bool]:
    """NodeShouldRunDaemonPod: (should run, should continue running) on this node.

    A node with a NoSchedule taint the pod does not tolerate gets no new pod, but a pod
    already there may stay unless a NoExecute taint is untolerated too.
    """
    node_name = node["metadata"]["name"]
    wanted_node = ((ds["spec"].get("template") or {}).get("spec") or {}).get("nodeName")
    if wanted_node and wanted_node != node_name:
        return False, False
    pod = new_daemon_pod(ds, node_name)
    if not pod_matches_node_selector_and_affinity(pod, node):
        return False, False
    taints = (node.get("spec") or {}).get("taints") or []
    tolerations = pod["spec"].get("tolerations")
    if find_untolerated_taint(taints, tolerations, ("NoSchedule", "NoExecute")) is None:
        return True, True
    return False, find_untolerated_taint(taints, tolerations, ("NoExecute",)) is None


def pod_order(pod: Obj) -> tuple[int, str, str]:
    """podByCreationTimestampAndPhase: scheduled pods first, then oldest, then by name."""
    meta = pod["metadata"]
    scheduled = 0 if (pod.get("spec") or {}).get("nodeName") else 1
    return scheduled, meta.get("creationTimestamp", ""), meta.get("name", "")


def pod_phase(pod: Obj) -> str:
    return (pod.get("status") or {}).get("phase", "")


def is_deleting(obj: Obj) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def update_strategy_of(ds: Obj) -> Obj:
    return ds["spec"].get("updateStrategy") or {}


def surge_count(ds: Obj, number_to_schedule: int) -> int:
    """SurgeCount: maxSurge resolved against the number of nodes (0 unless RollingUpdate)."""
    strategy = update_strategy_of(ds)
    rolling = strategy.get("rollingUpdate")
    if strategy.get("type") != "RollingUpdate" or not rolling or rolling.get("maxSurge") is None:
        return 0
    return scaled_value_from_int_or_percent(rolling["maxSurge"], number_to_schedule, True)


def unavailable_count(ds: Obj, number_to_schedule: int) -> int:
    """UnavailableCount: maxUnavailable resolved against the number of nodes."""
    strategy = update_strategy_of(ds)
    rolling = strategy.get("rollingUpdate")
    if strategy.get("type") != "RollingUpdate" or not rolling:
        return 0
    return scaled_value_from_int_or_percent(rolling.get("maxUnavailable"), number_to_schedule,
                                            True)


def allows_surge(ds: Obj) -> bool:
    """AllowsSurge: more than one pod per node may exist during an update."""
    try:
        return surge_count(ds, 1) > 0
    except ValueError:
        return False


def find_updated_pods_on_node(pods: list[Obj], hash_: str, generation: str | None
                              ) -> tuple[Obj | None, Obj | None, bool]:
    """findUpdatedPodsOnNode: (new pod, old pod, ok) among a node's live pods; not ok
    when there are two of either kind (the manage loop prunes those first)."""
    new_pod = old_pod = None
    for pod in pods:
        if is_deleting(pod):
            continue
        if is_pod_updated(pod, hash_, generation):
            if new_pod is not None:
                return None, None, False
            new_pod = pod
        else:
            if old_pod is not None:
                return None, None, False
            old_pod = pod
    return new_pod, old_pod, True


def unscheduled_pods_without_node(nodes: list[Obj], node_to_pods: dict[str, list[Obj]]
                                  ) -> list[str]:
    """getUnscheduledPodsWithoutNode: pods aimed at a node that no longer exists and never
    bound; pod GC only collects bound pods, so the DaemonSet removes these itself."""
    existing = {node["metadata"]["name"] for node in nodes}
    return [pod["metadata"]["name"]
            for node_name, pods in node_to_pods.items() if node_name not in existing
            for pod in pods if not (pod.get("spec") or {}).get("nodeName")]


def _node_in_same_condition(old: list[Obj], new: list[Obj]) -> bool:
    """nodeInSameCondition: the same condition types are True on both."""
    def true_types(conditions: list[Obj]) -> set[str]:
        return {c.get("type", "") for c in conditions if c.get("status") == "True"}
    return true_types(old) == true_types(new)


def should_ignore_node_update(old: Obj, new: Obj) -> bool:
    """shouldIgnoreNodeUpdate: only the resourceVersion or heartbeat-like condition
    timestamps changed, not which conditions hold."""
    old_conditions = (old.get("status") or {}).get("conditions") or []
    new_conditions = (new.get("status") or {}).get("conditions") or []
    if not _node_in_same_condition(old_conditions, new_conditions):
        return False

    def comparable(node: Obj) -> Obj:
        node = copy.deepcopy(node)
        node["metadata"].pop("resourceVersion", None)
        (node.get("status") or {}).pop("conditions", None)
        return node
    return comparable(old) == comparable(new)
