"""Indexed completion mode: each pod owns one completion index (upstream
pkg/controller/job/indexed_job_utils.go)."""

from __future__ import annotations

import itertools

from minikube_py.api import Obj
from minikube_py.api.podutil import is_pod_terminating
from minikube_py.controllers.job.pods import (
    has_tracking_finalizer,
    only_replace_failed_pods,
    pod_phase,
)
from minikube_py.controllers.job.types import SyncState

JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"

_MAX_GENERATED_NAME_LENGTH = 58  # names.MaxGeneratedNameLength: 63 minus 5 random characters


def is_indexed(job: Obj) -> bool:
    return job["spec"].get("completionMode") == "Indexed"


def completion_index(pod: Obj) -> int | None:
    """getCompletionIndex: the pod's index annotation, None when missing or not a number."""
    value = (pod["metadata"].get("annotations") or {}).get(JOB_COMPLETION_INDEX, "")
    return int(value) if value.isdigit() else None


def index_order(pod: Obj) -> int:
    """byCompletionIndex: pods without an index first."""
    index = completion_index(pod)
    return -1 if index is None else index


def parse_indexes(text: str, completions: int) -> set[int]:
    """parseIndexesFromString: "1,3-5" -> {1, 3, 4, 5}, ignoring indexes >= completions."""
    indexes: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            continue
        indexes.update(range(int(first), min(int(last or first), completions - 1) + 1))
    return indexes


def format_indexes(indexes: set[int]) -> str:
    """orderedIntervals.String: {0, 1, 2, 5, 6} -> "0-2,5,6" (a range needs three)."""
    parts: list[str] = []
    ordered = sorted(indexes)
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        first, last = ordered[start], ordered[end]
        if last == first:
            parts.append(str(first))
        elif last == first + 1:
            parts += [str(first), str(last)]
        else:
            parts.append(f"{first}-{last}")
        start = end + 1
    return ",".join(parts)


def pod_generate_name_with_index(job_name: str, index: int) -> str:
    """podGenerateNameWithIndex: `<job>-<index>-`, the job name cut to fit."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > _MAX_GENERATED_NAME_LENGTH:
        prefix = job_name[:_MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix


def add_completion_index_env(template: Obj) -> None:
    """addCompletionIndexEnvVariables: JOB_COMPLETION_INDEX from the pod's index label."""
    pod_spec = template.setdefault("spec", {})
    for container in [*(pod_spec.get("initContainers") or []), *(pod_spec.get("containers") or [])]:
        env = container.setdefault("env", [])
        if not any(variable.get("name") == COMPLETION_INDEX_ENV for variable in env):
            env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.labels['{JOB_COMPLETION_INDEX}']"}}})


def calculate_succeeded_indexes(job: Obj, pods: list[Obj]) -> tuple[set[int], set[int]]:
    """calculateSucceededIndexes: the indexes in status.completedIndexes, and those plus
    the indexes of succeeded pods not yet counted."""
    completions = job["spec"]["completions"]
    previous = parse_indexes(job["status"].get("completedIndexes", ""), completions)
    current = set(previous)
    for pod in pods:
        index = completion_index(pod)
        if (pod_phase(pod) == "Succeeded" and index is not None and index < completions
                and has_tracking_finalizer(pod)):
            current.add(index)
    return previous, current


def first_pending_indexes(state: SyncState, count: int, completions: int) -> list[int]:
    """firstPendingIndexes: the lowest indexes neither succeeded nor running (nor, when
    only failed pods are replaced, terminating)."""
    taken = set(state.succeeded_indexes)
    taken.update(completion_index(pod) for pod in state.active_pods)
    if only_replace_failed_pods(state.job):
        taken.update(completion_index(pod) for pod in state.pods if is_pod_terminating(pod))
    pending = (index for index in range(completions) if index not in taken)
    return list(itertools.islice(pending, count))
