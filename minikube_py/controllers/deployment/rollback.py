"""Rollback through the deprecated `deprecated.deployment.rollback.to` annotation (upstream
pkg/controller/deployment/rollback.go), which carries extensions/v1beta1's
spec.rollbackTo into apps/v1.

Current kubectl (`kubectl rollout undo`) does not use it: it copies the old ReplicaSet's
template into the Deployment itself, and the ordinary rollout then finds that
ReplicaSet by its template and gives it the newest revision. This path serves clients
that still set the annotation: the controller copies the template, then drops it.
"""

from __future__ import annotations

import copy

from minikube_py.api import Obj
from minikube_py.controllers.deployment.sync import get_all_replica_sets_and_sync_revision
from minikube_py.controllers.deployment.types import DeploymentControl
from minikube_py.controllers.deployment.util import (
    POD_TEMPLATE_HASH,
    ROLLBACK_DONE,
    ROLLBACK_REVISION_NOT_FOUND,
    ROLLBACK_TEMPLATE_UNCHANGED,
    ROLLBACK_TO_ANNOTATION,
    equal_ignore_hash,
    get_rollback_to,
    last_revision,
    revision,
    set_deployment_annotations_to,
)


async def rollback(dc: DeploymentControl, d: Obj, rs_list: list[Obj]) -> None:
    """rollback: copy the template of the asked-for revision (0: the previous one) into
    the Deployment; in any case clear the annotation."""
    new_rs, old_rss = await get_all_replica_sets_and_sync_revision(dc, d, rs_list, True)
    all_rss = [rs for rs in [*old_rss, new_rs] if rs is not None]
    to_revision = get_rollback_to(d) or last_revision(all_rss)
    if to_revision == 0:
        dc.recorder.event(d, "Warning", ROLLBACK_REVISION_NOT_FOUND,
                          "Unable to find last revision.")
        await update_deployment_and_clear_rollback_to(dc, d)
        return
    for rs in all_rss:
        try:
            number = revision(rs)
        except ValueError:
            continue
        if number == to_revision:
            if await rollback_to_template(dc, d, rs):
                dc.recorder.event(d, "Normal", ROLLBACK_DONE,
                                  f'Rolled back deployment "{d["metadata"]["name"]}" '
                                  f"to revision {to_revision}")
            return
    dc.recorder.event(d, "Warning", ROLLBACK_REVISION_NOT_FOUND,
                      "Unable to find the revision to rollback to.")
    await update_deployment_and_clear_rollback_to(dc, d)


async def rollback_to_template(dc: DeploymentControl, d: Obj, rs: Obj) -> bool:
    """rollbackToTemplate: take the ReplicaSet's template (without its hash label) and
    annotations; True if the template changed."""
    performed = False
    if not equal_ignore_hash(d["spec"]["template"], rs["spec"]["template"]):
        template = copy.deepcopy(rs["spec"]["template"])
        labels = (template.get("metadata") or {}).get("labels") or {}
        labels.pop(POD_TEMPLATE_HASH, None)
        d["spec"]["template"] = template
        set_deployment_annotations_to(d, rs)
        performed = True
    else:
        dc.recorder.event(d, "Warning", ROLLBACK_TEMPLATE_UNCHANGED,
                          "The rollback revision contains the same template as current "
                          f'deployment "{d["metadata"]["name"]}"')
    await update_deployment_and_clear_rollback_to(dc, d)
    return performed


async def update_deployment_and_clear_rollback_to(dc: DeploymentControl, d: Obj) -> None:
    """updateDeploymentAndClearRollbackTo: write the Deployment without the annotation."""
    (d["metadata"].get("annotations") or {}).pop(ROLLBACK_TO_ANNOTATION, None)
    await dc.deployment_client.update(d)
