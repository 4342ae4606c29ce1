"""What every kind of Deployment sync shares (upstream pkg/controller/deployment/sync.go):
finding (or creating) the new ReplicaSet and syncing revisions, scaling a ReplicaSet
with its event, proportional scaling, cleaning up old revisions, and the status.

Functions take the controller `dc` first, as upstream's methods take their receiver
(typed as types.DeploymentControl, the few members they use); `d` is the controller's
private copy of the Deployment and may be changed in place.
"""

from __future__ import annotations

import copy
import logging
from datetime import datetime

from minikube_py.api import Obj
from minikube_py.client.errors import AlreadyExists, APIStatusError, ClientError, NotFound
from minikube_py.controllers.controller_ref import being_deleted, is_controlled_by, owner_reference
from minikube_py.controllers.controller_utils import compute_hash
from minikube_py.controllers.deployment.types import DeploymentControl
from minikube_py.controllers.deployment.util import (
    AVAILABLE,
    DESIRED_REPLICAS_ANNOTATION,
    FAILED_RS_CREATE,
    FOUND_NEW_REPLICA_SET,
    MINIMUM_REPLICAS_AVAILABLE,
    MINIMUM_REPLICAS_UNAVAILABLE,
    NEW_REPLICA_SET_CREATED,
    PAUSED,
    POD_TEMPLATE_HASH,
    PROGRESSING,
    RESUMED,
    REVISION_ANNOTATION,
    TIMED_OUT,
    active,
    annotations,
    by_revision,
    by_size_newer,
    by_size_older,
    equal_ignore_hash,
    find_active_or_latest,
    find_new_replica_set,
    find_old_replica_sets,
    get_condition,
    get_proportion,
    get_rollback_to,
    has_progress_deadline,
    has_revision_history_limit,
    int_annotation,
    is_rolling_update,
    is_saturated,
    max_revision,
    max_surge,
    max_unavailable,
    new_condition,
    new_rs_new_replicas,
    replicas,
    replicas_annotations_need_update,
    set_condition,
    set_deployment_revision,
    set_new_replica_set_annotations,
    set_replicas_annotations,
    spec_replicas,
    status_replicas,
)

log = logging.getLogger(__name__)


async def sync_status_only(dc: DeploymentControl, d: Obj, rs_list: list[Obj]) -> None:
    """syncStatusOnly: a Deployment being deleted only gets its status refreshed."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    await sync_deployment_status(dc, [*old_rss, new_rs], new_rs, d)


async def sync_scaling(dc: DeploymentControl, d: Obj, rs_list: list[Obj]) -> None:
    """sync: a paused Deployment, or a scaling event: resize the ReplicaSets (no rollout),
    clean up old revisions if paused, and write status."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    await scale(dc, d, new_rs, old_rss)
    if d["spec"].get("paused") and get_rollback_to(d) is None:
        await cleanup_deployment(dc, old_rss, d)
    await sync_deployment_status(dc, [*old_rss, new_rs], new_rs, d)


async def check_paused_conditions(dc: DeploymentControl, d: Obj) -> None:
    """checkPausedConditions: Progressing=Unknown while paused (DeploymentPaused) and on
    resume (DeploymentResumed), so the pause does not count against the deadline."""
    if not has_progress_deadline(d):
        return
    status = d.setdefault("status", {})
    condition = get_condition(status, PROGRESSING)
    if condition is not None and condition.get("reason") == TIMED_OUT:
        return
    paused_shown = condition is not None and condition.get("reason") == PAUSED
    if d["spec"].get("paused") and not paused_shown:
        set_condition(status, new_condition(PROGRESSING, "Unknown", PAUSED,
                                            "Deployment is paused", dc.now()))
    elif not d["spec"].get("paused") and paused_shown:
        set_condition(status, new_condition(PROGRESSING, "Unknown", RESUMED,
                                            "Deployment is resumed", dc.now()))
    else:
        return
    await dc.update_deployment_status(d)


async def get_all_replica_sets_and_sync_revision(
        dc: DeploymentControl, d: Obj, rs_list: list[Obj], create_if_missing: bool,
) -> tuple[Obj | None, list[Obj]]:
    """getAllReplicaSetsAndSyncRevision: (new ReplicaSet or None, all old ones)."""
    old_rss = find_old_replica_sets(d, rs_list)
    new_rs = await get_new_replica_set(dc, d, rs_list, old_rss, create_if_missing)
    return new_rs, old_rss


async def get_new_replica_set(dc: DeploymentControl, d: Obj, rs_list: list[Obj],
                              old_rss: list[Obj], create_if_missing: bool) -> Obj | None:
    """getNewReplicaSet: the ReplicaSet running the Deployment's template.

    If it exists, its revision is raised above every old one (a rollback to it makes it
    the newest revision) and the Deployment records that revision. Otherwise, when asked
    to, create it: named `<deployment>-<hash>`, labelled and selected by the hash, with
    as many replicas as the rollout allows right now.
    """
    new_revision = str(max_revision(old_rss) + 1)
    existing = find_new_replica_set(d, rs_list)
    status = d.setdefault("status", {})
    if existing is not None:
        rs_copy = copy.deepcopy(existing)
        annotations_changed = set_new_replica_set_annotations(d, rs_copy, new_revision, True)
        min_ready = d["spec"].get("minReadySeconds", 0)
        if annotations_changed or rs_copy["spec"].get("minReadySeconds", 0) != min_ready:
            rs_copy["spec"]["minReadySeconds"] = min_ready
            return await dc.replica_set_client.update(rs_copy)
        needs_update = set_deployment_revision(d, annotations(rs_copy).get(REVISION_ANNOTATION, ""))
        if has_progress_deadline(d) and get_condition(status, PROGRESSING) is None:
            message = f'Found new replica set "{rs_copy["metadata"]["name"]}"'
            set_condition(status, new_condition(PROGRESSING, "True", FOUND_NEW_REPLICA_SET,
                                                message, dc.now()))
            needs_update = True
        if needs_update:
            await dc.update_deployment_status(d)
        return rs_copy
    if not create_if_missing:
        return None

    new_rs = new_replica_set(d)
    new_rs["spec"]["replicas"] = new_rs_new_replicas(d, [*old_rss, new_rs], new_rs)
    set_new_replica_set_annotations(d, new_rs, new_revision, False)
    name = new_rs["metadata"]["name"]
    already_exists = False
    try:
        created = await dc.replica_set_client.create(new_rs)
    except AlreadyExists:
        # A slow cache, or a hash collision: the same name with another template.
        already_exists = True
        cached = dc.replica_sets.store.get_by_name(d["metadata"]["namespace"], name)
        if cached is None:
            raise
        if is_controlled_by(cached, d) and equal_ignore_hash(
                d["spec"]["template"], cached["spec"]["template"]):
            created = cached
        else:
            status["collisionCount"] = status.get("collisionCount", 0) + 1
            try:
                await dc.update_deployment_status(d)
                log.info("hash collision for deployment %s: collisionCount now %d",
                         d["metadata"]["name"], status["collisionCount"])
            except APIStatusError as error:
                log.info("could not bump collisionCount of %s: %s", d["metadata"]["name"], error)
            raise
    except ClientError as error:
        message = f'Failed to create new replica set "{name}": {error}'
        if has_progress_deadline(d):
            set_condition(status, new_condition(PROGRESSING, "False", FAILED_RS_CREATE,
                                                message, dc.now()))
            try:
                await dc.update_deployment_status(d)
            except APIStatusError as status_error:
                log.info("could not report %s: %s", FAILED_RS_CREATE, status_error)
        dc.recorder.event(d, "Warning", FAILED_RS_CREATE, message)
        raise
    count = new_rs["spec"]["replicas"]
    if not already_exists and count > 0:
        dc.recorder.event(d, "Normal", "ScalingReplicaSet",
                          f"Scaled up replica set {name} from 0 to {count}")
    needs_update = set_deployment_revision(d, new_revision)
    if not already_exists and has_progress_deadline(d):
        set_condition(status, new_condition(PROGRESSING, "True", NEW_REPLICA_SET_CREATED,
                                            f'Created new replica set "{name}"', dc.now()))
        needs_update = True
    if needs_update:
        await dc.update_deployment_status(d)
    return created


def new_replica_set(d: Obj) -> Obj:
    """The ReplicaSet for the Deployment's current template, its hash in label and name."""
    template = copy.deepcopy(d["spec"]["template"])
    template_hash = compute_hash(template, (d.get("status") or {}).get("collisionCount"))
    template.setdefault("metadata", {})
    template["metadata"]["labels"] = {**(template["metadata"].get("labels") or {}),
                                      POD_TEMPLATE_HASH: template_hash}
    selector = copy.deepcopy(d["spec"]["selector"])
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}),
                               POD_TEMPLATE_HASH: template_hash}
    meta = d["metadata"]
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": f"{meta['name']}-{template_hash}", "namespace": meta["namespace"],
                     "ownerReferences": [owner_reference(d)],
                     "labels": dict(template["metadata"]["labels"])},
        "spec": {"replicas": 0, "minReadySeconds": d["spec"].get("minReadySeconds", 0),
                 "selector": selector, "template": template},
    }


async def scale(dc: DeploymentControl, d: Obj, new_rs: Obj | None,
                old_rss: list[Obj]) -> None:
    """scale: follow a change of spec.replicas without hastening a rollout.

    One active ReplicaSet simply takes the new size. A saturated new ReplicaSet means
    the old ones go to zero. Otherwise (a rolling update in progress) the pods to add or
    remove are shared among the active ReplicaSets in proportion to their sizes, the
    leftover going to the largest: scaling 10 -> 20 mid-rollout keeps the new:old ratio.
    """
    target = find_active_or_latest(new_rs, old_rss)
    if target is not None:
        if replicas(target) != replicas(d):
            await scale_replica_set_and_record_event(dc, target, replicas(d), d)
        return
    if is_saturated(d, new_rs):
        for old in active(old_rss):
            await scale_replica_set_and_record_event(dc, old, 0, d)
        return
    if not is_rolling_update(d):
        return
    running = active([*old_rss, new_rs])
    allowed = replicas(d) + max_surge(d) if replicas(d) > 0 else 0
    to_add = allowed - spec_replicas(running)
    operation = ""
    if to_add > 0:
        running, operation = by_size_newer(running), "up"
    elif to_add < 0:
        running, operation = by_size_older(running), "down"
    added = 0
    sizes: dict[str, int] = {}
    for rs in running:
        proportion = get_proportion(rs, d, to_add, added) if to_add else 0
        sizes[rs["metadata"]["name"]] = replicas(rs) + proportion
        added += proportion
    for index, rs in enumerate(running):
        name = rs["metadata"]["name"]
        if index == 0 and to_add:
            sizes[name] = max(sizes[name] + to_add - added, 0)
        await scale_replica_set(dc, rs, sizes[name], d, operation)


async def scale_replica_set_and_record_event(dc: DeploymentControl, rs: Obj, new_scale: int,
                                             d: Obj) -> tuple[bool, Obj]:
    """scaleReplicaSetAndRecordEvent: resize one ReplicaSet, if its size differs."""
    if replicas(rs) == new_scale:
        return False, rs
    operation = "up" if replicas(rs) < new_scale else "down"
    return await scale_replica_set(dc, rs, new_scale, d, operation)


async def scale_replica_set(dc: DeploymentControl, rs: Obj, new_scale: int, d: Obj,
                            operation: str) -> tuple[bool, Obj]:
    """scaleReplicaSet: write the size and the desired/max-replicas annotations (the
    ReplicaSet's record of the Deployment size it was scaled for); event on resize."""
    size_changed = replicas(rs) != new_scale
    desired, maximum = replicas(d), replicas(d) + max_surge(d)
    if not size_changed and not replicas_annotations_need_update(rs, desired, maximum):
        return False, rs
    old_scale = replicas(rs)
    rs_copy = copy.deepcopy(rs)
    rs_copy["spec"]["replicas"] = new_scale
    set_replicas_annotations(rs_copy, desired, maximum)
    updated = await dc.replica_set_client.update(rs_copy)
    if size_changed:
        dc.recorder.event(d, "Normal", "ScalingReplicaSet",
                          f"Scaled {operation} replica set {rs['metadata']['name']} "
                          f"from {old_scale} to {new_scale}")
    return size_changed, updated


async def cleanup_deployment(dc: DeploymentControl, old_rss: list[Obj], d: Obj) -> None:
    """cleanupDeployment: keep only revisionHistoryLimit old ReplicaSets, deleting the
    oldest revisions among those fully scaled down."""
    if not has_revision_history_limit(d):
        return
    cleanable = [rs for rs in old_rss if not being_deleted(rs)]
    excess = len(cleanable) - d["spec"]["revisionHistoryLimit"]
    for rs in by_revision(cleanable)[:max(excess, 0)]:
        status = rs.get("status") or {}
        if (status.get("replicas", 0) != 0 or replicas(rs) != 0
                or rs["metadata"].get("generation", 0) > status.get("observedGeneration", 0)):
            continue
        try:
            await dc.replica_set_client.delete(rs["metadata"]["name"], rs["metadata"]["namespace"])
        except NotFound:
            continue


async def sync_deployment_status(dc: DeploymentControl, all_rss: list[Obj | None],
                                 new_rs: Obj | None, d: Obj) -> None:
    """syncDeploymentStatus: write the status computed from the ReplicaSets, if it changed."""
    new_status = calculate_status(all_rss, new_rs, d, dc.now())
    if wire_status(d.get("status") or {}) == new_status:
        return
    d["status"] = new_status
    await dc.update_deployment_status(d)


def calculate_status(all_rss: list[Obj | None], new_rs: Obj | None, d: Obj,
                     now: datetime) -> Obj:
    """calculateStatus: the Deployment's counters summed from its ReplicaSets, and the
    Available condition (at least spec.replicas - maxUnavailable pods available)."""
    present = [rs for rs in all_rss if rs is not None]
    available = status_replicas(present, "availableReplicas")
    old_status = d.get("status") or {}
    status: Obj = {
        "observedGeneration": d["metadata"].get("generation", 0),
        "replicas": status_replicas(present),
        "updatedReplicas": status_replicas([new_rs]),
        "readyReplicas": status_replicas(present, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(spec_replicas(present) - available, 0),
        "conditions": copy.deepcopy(old_status.get("conditions") or []),
    }
    if all("terminatingReplicas" in (rs.get("status") or {}) for rs in present):
        status["terminatingReplicas"] = status_replicas(present, "terminatingReplicas")
    if "collisionCount" in old_status:
        status["collisionCount"] = old_status["collisionCount"]
    if available >= replicas(d) - max_unavailable(d):
        condition = new_condition(AVAILABLE, "True", MINIMUM_REPLICAS_AVAILABLE,
                                  "Deployment has minimum availability.", now)
    else:
        condition = new_condition(AVAILABLE, "False", MINIMUM_REPLICAS_UNAVAILABLE,
                                  "Deployment does not have minimum availability.", now)
    set_condition(status, condition)
    return wire_status(status)


def wire_status(status: Obj) -> Obj:
    """A DeploymentStatus as Go serialises it: zero counters and no conditions omitted;
    terminatingReplicas and collisionCount are pointers, kept even when zero."""
    pointers = ("terminatingReplicas", "collisionCount")
    return {key: value for key, value in status.items()
            if key in pointers or value not in (0, [], None)}


async def is_scaling_event(dc: DeploymentControl, d: Obj, rs_list: list[Obj]) -> bool:
    """isScalingEvent: an active ReplicaSet was sized for another spec.replicas."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, False)
    for rs in active([*old_rss, new_rs]):
        desired = int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
        if desired is not None and desired != replicas(d):
            return True
    return False
