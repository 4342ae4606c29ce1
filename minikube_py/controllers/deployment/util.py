"""Pure helpers of the Deployment controller (upstream pkg/controller/deployment/util/
deployment_util.go): revisions and annotations, conditions, surge and unavailability
budgets, finding the new and old ReplicaSets, and the rollout predicates.

Nothing here talks to the API server; every function reads plain JSON objects and the
few that change one say so and change only the copy they are handed.
"""

from __future__ import annotations

import logging
import math
from datetime import datetime, timedelta
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.intstr import resolve_fenceposts, scaled_value_from_int_or_percent
from minikube_py.api.meta import parse_rfc3339, rfc3339
from minikube_py.tracing.context import ANNOTATION as TRACE_ANNOTATION

log = logging.getLogger(__name__)

# The label (and ReplicaSet name suffix) that tells the ReplicaSets of a Deployment apart.
POD_TEMPLATE_HASH = "pod-template-hash"

REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
ROLLBACK_TO_ANNOTATION = "deprecated.deployment.rollback.to"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
# Annotations a Deployment never copies to its ReplicaSets (nor takes back on rollback);
# the trace each object carries is its own (the API server keeps it: tracing/context.py).
ANNOTATIONS_TO_SKIP = frozenset({
    LAST_APPLIED_ANNOTATION, REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION,
    DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, ROLLBACK_TO_ANNOTATION,
    TRACE_ANNOTATION,
})
# The revision-history annotation is kept under this many characters.
MAX_REVISION_HISTORY_CHARS = 2000
# progressDeadlineSeconds and revisionHistoryLimit of MaxInt32 mean "never" and "keep all".
MAX_INT32 = 2**31 - 1

# Condition types and reasons.
PROGRESSING = "Progressing"
AVAILABLE = "Available"
REPLICA_FAILURE = "ReplicaFailure"
REPLICA_SET_UPDATED = "ReplicaSetUpdated"
FAILED_RS_CREATE = "ReplicaSetCreateError"
NEW_REPLICA_SET_CREATED = "NewReplicaSetCreated"
FOUND_NEW_REPLICA_SET = "FoundNewReplicaSet"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"
# Event reasons of the legacy rollback annotation.
ROLLBACK_REVISION_NOT_FOUND = "DeploymentRollbackRevisionNotFound"
ROLLBACK_TEMPLATE_UNCHANGED = "DeploymentRollbackTemplateUnchanged"
ROLLBACK_DONE = "DeploymentRollback"


# -- field access ------------------------------------------------------------------------------


def replicas(obj: Obj) -> int:
    """spec.replicas of a Deployment or ReplicaSet (the API server defaults it to 1)."""
    return (obj.get("spec") or {}).get("replicas", 1)


def annotations(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def status_count(rs: Obj | None, field: str) -> int:
    return ((rs or {}).get("status") or {}).get(field, 0)


def uid(obj: Obj) -> str:
    return obj["metadata"].get("uid", "")


# -- conditions --------------------------------------------------------------------------------


def new_condition(kind: str, status: str, reason: str, message: str, now: datetime) -> Obj:
    """NewDeploymentCondition."""
    stamp = rfc3339(now)
    return {"type": kind, "status": status, "lastUpdateTime": stamp,
            "lastTransitionTime": stamp, "reason": reason, "message": message}


def get_condition(status: Obj, kind: str) -> Obj | None:
    """GetDeploymentCondition."""
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def set_condition(status: Obj, condition: Obj) -> None:
    """SetDeploymentCondition: replace the condition of that type, unless the present one
    has the same status and reason; keep lastTransitionTime while the status holds."""
    current = get_condition(status, condition["type"])
    if current is not None and current.get("status") == condition["status"] and (
            current.get("reason") == condition["reason"]):
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status, condition["type"])
    status["conditions"] = [*(status.get("conditions") or []), condition]


def remove_condition(status: Obj, kind: str) -> None:
    """RemoveDeploymentCondition."""
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != kind]


def replica_set_to_deployment_condition(condition: Obj) -> Obj:
    """ReplicaSetToDeploymentCondition: a ReplicaFailure of a ReplicaSet, promoted."""
    return {"type": condition.get("type"), "status": condition.get("status"),
            "lastUpdateTime": condition.get("lastTransitionTime"),
            "lastTransitionTime": condition.get("lastTransitionTime"),
            "reason": condition.get("reason"), "message": condition.get("message")}


# -- revisions and annotations -----------------------------------------------------------------


def revision(obj: Obj) -> int:
    """Revision: the revision annotation as a number (0 when absent; ValueError if bad)."""
    value = annotations(obj).get(REVISION_ANNOTATION)
    return 0 if value is None else int(value)


def _revisions(replica_sets: list[Obj]) -> list[int]:
    numbers = []
    for rs in replica_sets:
        try:
            numbers.append(revision(rs))
        except ValueError:
            log.debug("replica set %s has a malformed revision; skipped", rs["metadata"]["name"])
    return numbers


def max_revision(replica_sets: list[Obj]) -> int:
    """MaxRevision: the highest revision among the ReplicaSets."""
    return max(_revisions(replica_sets), default=0)


def last_revision(replica_sets: list[Obj]) -> int:
    """LastRevision: the second highest revision (the one before the current)."""
    highest = second = 0
    for number in _revisions(replica_sets):
        if number >= highest:
            highest, second = number, highest
        elif number > second:
            second = number
    return second


def set_deployment_revision(d: Obj, value: str) -> bool:
    """SetDeploymentRevision: record the revision on the Deployment; True if it changed."""
    meta_annotations = d["metadata"].setdefault("annotations", {})
    if meta_annotations.get(REVISION_ANNOTATION) == value:
        return False
    meta_annotations[REVISION_ANNOTATION] = value
    return True


def copy_deployment_annotations(d: Obj, rs: Obj) -> bool:
    """copyDeploymentAnnotationsToReplicaSet: all but the skipped ones; True if changed."""
    rs_annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in annotations(d).items():
        if key in ANNOTATIONS_TO_SKIP or rs_annotations.get(key) == value:
            continue
        rs_annotations[key] = value
        changed = True
    return changed


def set_deployment_annotations_to(d: Obj, rs: Obj) -> None:
    """SetDeploymentAnnotationsTo: on rollback the Deployment takes the ReplicaSet's
    annotations back, keeping only its own skipped ones."""
    kept = {k: v for k, v in annotations(d).items() if k in ANNOTATIONS_TO_SKIP}
    kept.update({k: v for k, v in annotations(rs).items() if k not in ANNOTATIONS_TO_SKIP})
    d["metadata"]["annotations"] = kept


def set_new_replica_set_annotations(d: Obj, rs: Obj, new_revision: str, exists: bool) -> bool:
    """SetNewReplicaSetAnnotations: copy the Deployment's annotations and raise the
    ReplicaSet's revision to `new_revision`. A ReplicaSet that already had a revision is
    being rolled back to: its old revision joins the revision-history annotation."""
    changed = copy_deployment_annotations(d, rs)
    rs_annotations = rs["metadata"]["annotations"]
    old_text = rs_annotations.get(REVISION_ANNOTATION)
    try:
        old_revision = int(old_text) if old_text else 0
    except ValueError:
        log.info("replica set %s has a malformed revision %r", rs["metadata"]["name"], old_text)
        return False
    if old_revision < int(new_revision):
        rs_annotations[REVISION_ANNOTATION] = new_revision
        changed = True
        if old_text is not None:
            _append_revision_history(rs_annotations, old_text)
    if not exists and set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


def _append_revision_history(rs_annotations: dict[str, str], old_revision: str) -> None:
    history = rs_annotations.get(REVISION_HISTORY_ANNOTATION, "")
    if not history:
        rs_annotations[REVISION_HISTORY_ANNOTATION] = old_revision
        return
    entries = history.split(",")
    total = len(history) + len(old_revision) + 1
    start = 0
    while total > MAX_REVISION_HISTORY_CHARS and start < len(entries):
        total -= len(entries[start]) + 1
        start += 1
    if total <= MAX_REVISION_HISTORY_CHARS:
        rs_annotations[REVISION_HISTORY_ANNOTATION] = ",".join([*entries[start:], old_revision])


def int_annotation(rs: Obj, key: str) -> int | None:
    """getIntFromAnnotation: None when missing or not a number."""
    value = annotations(rs).get(key)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def set_replicas_annotations(rs: Obj, desired: int, maximum: int) -> bool:
    """SetReplicasAnnotations: desired-replicas and max-replicas; True if they changed."""
    rs_annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS_ANNOTATION, str(desired)),
                       (MAX_REPLICAS_ANNOTATION, str(maximum))):
        if rs_annotations.get(key) != value:
            rs_annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Obj, desired: int, maximum: int) -> bool:
    """ReplicasAnnotationsNeedUpdate."""
    return (annotations(rs).get(DESIRED_REPLICAS_ANNOTATION) != str(desired)
            or annotations(rs).get(MAX_REPLICAS_ANNOTATION) != str(maximum))


# -- budgets -----------------------------------------------------------------------------------


def is_rolling_update(d: Obj) -> bool:
    return ((d.get("spec") or {}).get("strategy") or {}).get("type") == "RollingUpdate"


def _fenceposts(d: Obj) -> tuple[int, int]:
    rolling = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    return resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"),
                              replicas(d))


def max_surge(d: Obj) -> int:
    """MaxSurge: how many pods above spec.replicas a rolling update may run."""
    return _fenceposts(d)[0] if is_rolling_update(d) else 0


def max_unavailable(d: Obj) -> int:
    """MaxUnavailable: how many of spec.replicas may be unavailable (at most all)."""
    if not is_rolling_update(d) or replicas(d) == 0:
        return 0
    return min(_fenceposts(d)[1], replicas(d))


def has_progress_deadline(d: Obj) -> bool:
    deadline = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return deadline is not None and deadline != MAX_INT32


def has_revision_history_limit(d: Obj) -> bool:
    limit = (d.get("spec") or {}).get("revisionHistoryLimit")
    return limit is not None and limit != MAX_INT32


# -- finding the new and old ReplicaSets -------------------------------------------------------


def _semantic(value: Any) -> Any:
    """A copy without what Go's typed comparison cannot tell from absent: nulls, empty
    maps and lists (kubectl sends templates back with `creationTimestamp: null`)."""
    if isinstance(value, dict):
        kept = {key: _semantic(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item not in (None, {}, [])}
    if isinstance(value, list):
        return [_semantic(item) for item in value]
    return value


def template_without_hash(template: Obj) -> Obj:
    """The template with null/empty fields and the pod-template-hash label dropped."""
    normal = _semantic(template)
    labels = (normal.get("metadata") or {}).get("labels")
    if labels and POD_TEMPLATE_HASH in labels:
        labels = {k: v for k, v in labels.items() if k != POD_TEMPLATE_HASH}
        normal["metadata"] = {**normal["metadata"], "labels": labels}
        if not labels:
            del normal["metadata"]["labels"]
    return normal


def equal_ignore_hash(first: Obj, second: Obj) -> bool:
    """EqualIgnoreHash: two pod templates are the same but for their hash labels."""
    return template_without_hash(first) == template_without_hash(second)


def by_creation(replica_sets: list[Obj]) -> list[Obj]:
    """ReplicaSetsByCreationTimestamp: oldest first, then by name."""
    return sorted(replica_sets, key=lambda rs: (rs["metadata"].get("creationTimestamp", ""),
                                                rs["metadata"].get("name", "")))


def by_size_newer(replica_sets: list[Obj]) -> list[Obj]:
    """ReplicaSetsBySizeNewer: largest first; among equals the newest first."""
    return sorted(reversed(by_creation(replica_sets)), key=lambda rs: -replicas(rs))


def by_size_older(replica_sets: list[Obj]) -> list[Obj]:
    """ReplicaSetsBySizeOlder: largest first; among equals the oldest first."""
    return sorted(by_creation(replica_sets), key=lambda rs: -replicas(rs))


def by_revision(replica_sets: list[Obj]) -> list[Obj]:
    """ReplicaSetsByRevision: lowest revision first (unparsable ones by creation)."""
    def key(rs: Obj) -> tuple[int, str, str]:
        try:
            number = revision(rs)
        except ValueError:
            number = 0
        return (number, rs["metadata"].get("creationTimestamp", ""), rs["metadata"]["name"])
    return sorted(replica_sets, key=key)


def active(replica_sets: list[Obj | None]) -> list[Obj]:
    """FilterActiveReplicaSets: those that want at least one pod."""
    return [rs for rs in replica_sets if rs is not None and replicas(rs) > 0]


def find_new_replica_set(d: Obj, replica_sets: list[Obj]) -> Obj | None:
    """FindNewReplicaSet: the (oldest) ReplicaSet whose template is the Deployment's."""
    template = (d.get("spec") or {}).get("template") or {}
    for rs in by_creation(replica_sets):
        if equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template):
            return rs
    return None


def find_old_replica_sets(d: Obj, replica_sets: list[Obj]) -> list[Obj]:
    """FindOldReplicaSets (its second result): every ReplicaSet but the new one."""
    new_rs = find_new_replica_set(d, replica_sets)
    return [rs for rs in replica_sets if new_rs is None or uid(rs) != uid(new_rs)]


def find_active_or_latest(new_rs: Obj | None, old_rss: list[Obj]) -> Obj | None:
    """FindActiveOrLatest: the only active ReplicaSet, or the newest if none is active;
    None when several are active (they are scaled proportionally)."""
    if new_rs is None and not old_rss:
        return None
    newest_first = list(reversed(by_creation(old_rss)))
    running = active([*newest_first, new_rs])
    if not running:
        return new_rs if new_rs is not None else newest_first[0]
    return running[0] if len(running) == 1 else None


# -- counting ----------------------------------------------------------------------------------


def spec_replicas(replica_sets: list[Obj | None]) -> int:
    """GetReplicaCountForReplicaSets: the pods the ReplicaSets ask for."""
    return sum(replicas(rs) for rs in replica_sets if rs is not None)


def status_replicas(replica_sets: list[Obj | None], field: str = "replicas") -> int:
    """GetActual/Ready/AvailableReplicaCountForReplicaSets: a status counter, summed."""
    return sum(status_count(rs, field) for rs in replica_sets if rs is not None)


# -- rollout predicates ------------------------------------------------------------------------


def new_rs_new_replicas(d: Obj, all_rss: list[Obj | None], new_rs: Obj) -> int:
    """NewRSNewReplicas: the size of the new ReplicaSet at this step of the rollout."""
    strategy = ((d.get("spec") or {}).get("strategy") or {}).get("type")
    if strategy == "Recreate":
        return replicas(d)
    if strategy != "RollingUpdate":
        raise ValueError(f"deployment type {strategy} isn't supported")
    rolling = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    surge = scaled_value_from_int_or_percent(rolling.get("maxSurge"), replicas(d), True)
    current = spec_replicas(all_rss)
    max_total = replicas(d) + surge
    if current >= max_total:
        return replicas(new_rs)
    scale_up = min(max_total - current, replicas(d) - replicas(new_rs))
    return replicas(new_rs) + scale_up


def is_saturated(d: Obj, rs: Obj | None) -> bool:
    """IsSaturated: the ReplicaSet holds (and both sides agree) all desired pods, available."""
    if rs is None:
        return False
    desired = int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
    return (desired is not None and replicas(rs) == replicas(d) and desired == replicas(d)
            and status_count(rs, "availableReplicas") == replicas(d))


def deployment_complete(d: Obj, status: Obj) -> bool:
    """DeploymentComplete: all replicas updated and available, no old pods running."""
    want = replicas(d)
    return (status.get("updatedReplicas", 0) == want and status.get("replicas", 0) == want
            and status.get("availableReplicas", 0) == want
            and status.get("observedGeneration", 0) >= d["metadata"].get("generation", 0))


def deployment_progressing(d: Obj, status: Obj) -> bool:
    """DeploymentProgressing: new pods were added or became ready or available, or old
    pods went away, since the status the Deployment carries."""
    old = d.get("status") or {}
    old_old_pods = old.get("replicas", 0) - old.get("updatedReplicas", 0)
    new_old_pods = status.get("replicas", 0) - status.get("updatedReplicas", 0)
    return (status.get("updatedReplicas", 0) > old.get("updatedReplicas", 0)
            or new_old_pods < old_old_pods
            or status.get("readyReplicas", 0) > old.get("readyReplicas", 0)
            or status.get("availableReplicas", 0) > old.get("availableReplicas", 0))


def deployment_timed_out(d: Obj, status: Obj, now: datetime) -> bool:
    """DeploymentTimedOut: no progress reported for progressDeadlineSeconds."""
    if not has_progress_deadline(d):
        return False
    condition = get_condition(status, PROGRESSING)
    if condition is None or condition.get("reason") == NEW_RS_AVAILABLE:
        return False
    if condition.get("reason") == TIMED_OUT:
        return True
    deadline = timedelta(seconds=d["spec"]["progressDeadlineSeconds"])
    return parse_rfc3339(condition["lastUpdateTime"]) + deadline < now


# -- proportional scaling ----------------------------------------------------------------------


def _round(value: float) -> int:
    """integer.RoundToInt32: halves away from zero (Python's round() goes to even)."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def get_proportion(rs: Obj | None, d: Obj, to_add: int, added: int) -> int:
    """GetProportion: this ReplicaSet's share of `to_add` pods, never beyond what is
    left to add (or remove)."""
    if rs is None or replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _replica_set_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _replica_set_fraction(rs: Obj, d: Obj) -> int:
    """getReplicaSetFraction: scale the ReplicaSet by the Deployment's new maximum over
    the maximum it was sized for (the max-replicas annotation)."""
    if replicas(d) == 0:
        return -replicas(rs)
    deployment_replicas = replicas(d) + max_surge(d)
    annotated = int_annotation(rs, MAX_REPLICAS_ANNOTATION)
    if annotated is None:
        annotated = status_count(d, "replicas")
    if annotated == 0:
        return 0
    return _round(replicas(rs) * deployment_replicas / annotated) - replicas(rs)


def get_rollback_to(d: Obj) -> int | None:
    """getRollbackTo: the revision asked for by the deprecated rollback annotation (which
    carries apps/v1beta1's spec.rollbackTo); 0 means the previous revision."""
    value = annotations(d).get(ROLLBACK_TO_ANNOTATION)
    try:
        return int(value) if value else None
    except ValueError:
        return None
