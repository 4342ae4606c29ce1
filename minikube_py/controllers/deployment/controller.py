"""The Deployment controller: roll a pod template out through ReplicaSets (upstream
pkg/controller/deployment/deployment_controller.go).

    deployment / replicaset / pod-deleted event --> queue "ns/name" --> sync(key):
        claim ReplicaSets (adopt orphans matching the selector, release strays)
        being deleted?          -> status only
        paused?                 -> scale only (sync_scaling), Progressing=DeploymentPaused
        rollback annotation?    -> copy the old template in (rollback.py)
        spec.replicas changed?  -> proportional scaling (sync_scaling)
        otherwise               -> one step of the strategy: rolling.py or recreate.py

One ReplicaSet per pod template: its name and its pods carry the template's hash
(`pod-template-hash`). The controller never touches pods; it only sizes ReplicaSets,
and the ReplicaSet controller does the rest.
"""

from __future__ import annotations

import copy
import logging
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.selectors import SelectorError, label_selector_from_dict
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import split_key
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.controller_ref import (
    being_deleted,
    claim,
    controller_of,
    is_controlled_by,
    resolve_controller_ref,
)
from minikube_py.controllers.deployment.recreate import rollout_recreate
from minikube_py.controllers.deployment.rollback import rollback
from minikube_py.controllers.deployment.rolling import rollout_rolling
from minikube_py.controllers.deployment.sync import (
    check_paused_conditions,
    is_scaling_event,
    sync_scaling,
    sync_status_only,
)
from minikube_py.controllers.deployment.util import get_rollback_to, uid

log = logging.getLogger(__name__)


class DeploymentController(Controller):
    """Syncs Deployments with their ReplicaSets (upstream DeploymentController)."""

    name: ClassVar[str] = "deployment"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.deployment_client = self.client.resource("deployments", "apps")
        self.replica_set_client = self.client.resource("replicasets", "apps")
        self.deployments = self.informer("deployments", "apps")
        self.watch_own_kind(self.deployments)
        self.replica_sets = self.informer("replicasets", "apps")
        self.replica_sets.add_event_handler(EventHandler(
            on_add=self.add_replica_set, on_update=self.update_replica_set,
            on_delete=self.delete_replica_set))
        self.pods = self.informer("pods")
        self.pods.add_event_handler(EventHandler(on_delete=self.delete_pod))

    # -- informer handlers ---------------------------------------------------------------------

    def resolve_controller_ref(self, namespace: str, reference: Obj) -> Obj | None:
        """The Deployment a controller reference names, if it is still the same object."""
        return resolve_controller_ref(self.deployments.store, namespace, reference, "Deployment")

    def deployments_selecting(self, rs: Obj) -> list[Obj]:
        """GetDeploymentsForReplicaSet: Deployments whose non-empty selector matches."""
        labels = rs["metadata"].get("labels")
        if not labels:
            return []
        matching = []
        for d in self.deployments.store.list(rs["metadata"].get("namespace", "")):
            try:
                selector = label_selector_from_dict((d.get("spec") or {}).get("selector"))
            except SelectorError:
                continue
            if not selector.empty() and selector.matches(labels):
                matching.append(d)
        return matching

    def add_replica_set(self, rs: Obj) -> None:
        """addReplicaSet: wake its Deployment, or those that might adopt an orphan."""
        if being_deleted(rs):
            self.delete_replica_set(rs)
            return
        reference = controller_of(rs)
        if reference is not None:
            d = self.resolve_controller_ref(rs["metadata"].get("namespace", ""), reference)
            if d is not None:
                self.enqueue(d)
            return
        for d in self.deployments_selecting(rs):
            self.enqueue(d)

    def update_replica_set(self, old: Obj, new: Obj) -> None:
        """updateReplicaSet: wake the old and new owner; an orphan whose labels changed
        wakes the Deployments that might adopt it."""
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        namespace = new["metadata"].get("namespace", "")
        old_reference, new_reference = controller_of(old), controller_of(new)
        if old_reference != new_reference and old_reference is not None:
            previous = self.resolve_controller_ref(namespace, old_reference)
            if previous is not None:
                self.enqueue(previous)
        if new_reference is not None:
            d = self.resolve_controller_ref(namespace, new_reference)
            if d is not None:
                self.enqueue(d)
            return
        if (old["metadata"].get("labels") != new["metadata"].get("labels")
                or old_reference != new_reference):
            for d in self.deployments_selecting(new):
                self.enqueue(d)

    def delete_replica_set(self, rs: Obj) -> None:
        reference = controller_of(rs)
        if reference is None:
            return
        d = self.resolve_controller_ref(rs["metadata"].get("namespace", ""), reference)
        if d is not None:
            self.enqueue(d)

    def delete_pod(self, pod: Obj) -> None:
        """deletePod: a Recreate rollout waits for the last old pod to go away."""
        d = self.deployment_for_pod(pod)
        if d is None or (d["spec"].get("strategy") or {}).get("type") != "Recreate":
            return
        rs_list = [rs for rs in self.replica_sets.store.list(d["metadata"]["namespace"])
                   if is_controlled_by(rs, d)]
        if not any(self.pod_map(d, rs_list).values()):
            self.enqueue(d)

    def deployment_for_pod(self, pod: Obj) -> Obj | None:
        """getDeploymentForPod: pod -> its ReplicaSet -> that ReplicaSet's Deployment."""
        reference = controller_of(pod)
        if reference is None:
            return None
        namespace = pod["metadata"].get("namespace", "")
        rs = resolve_controller_ref(self.replica_sets.store, namespace, reference, "ReplicaSet")
        if rs is None:
            return None
        rs_reference = controller_of(rs)
        return None if rs_reference is None else self.resolve_controller_ref(namespace,
                                                                             rs_reference)

    # -- listers -------------------------------------------------------------------------------

    async def replica_sets_for(self, d: Obj) -> list[Obj]:
        """getReplicaSetsForDeployment: the ReplicaSets it owns, after adopting orphans
        that match its selector and releasing owned ones that no longer do."""
        selector = label_selector_from_dict(d["spec"].get("selector"))
        candidates = self.replica_sets.store.list(d["metadata"]["namespace"])
        return await claim(self.replica_set_client, d, selector, candidates)

    def pod_map(self, d: Obj, rs_list: list[Obj]) -> dict[str, list[Obj]]:
        """getPodMapForDeployment: its pods (terminating ones too) by ReplicaSet uid."""
        try:
            selector = label_selector_from_dict(d["spec"].get("selector"))
        except SelectorError:
            return {}
        pods_by_rs: dict[str, list[Obj]] = {uid(rs): [] for rs in rs_list}
        for pod in self.pods.store.list(d["metadata"]["namespace"]):
            reference = controller_of(pod)
            if (reference is not None and reference.get("uid") in pods_by_rs
                    and selector.matches(pod["metadata"].get("labels"))):
                pods_by_rs[reference["uid"]].append(pod)
        return pods_by_rs

    async def update_deployment_status(self, d: Obj) -> None:
        """Write d's status (and revision annotation) through /status; d keeps the new
        resourceVersion so that the next write of this sync does not conflict."""
        written = await self.deployment_client.update_status(d)
        d["metadata"]["resourceVersion"] = written["metadata"]["resourceVersion"]

    # -- sync ----------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """syncDeployment: pick what this sync does (see the module docstring)."""
        namespace, name = split_key(key)
        cached = self.deployments.store.get_by_name(namespace, name)
        if cached is None:
            return
        d = copy.deepcopy(cached)
        if d["spec"].get("selector") == {}:
            self.recorder.event(d, "Warning", "SelectingAll",
                                "This deployment is selecting all pods. "
                                "A non-empty selector is required.")
            status = d.setdefault("status", {})
            if status.get("observedGeneration", 0) < d["metadata"].get("generation", 0):
                status["observedGeneration"] = d["metadata"]["generation"]
                await self.update_deployment_status(d)
            return
        rs_list = await self.replica_sets_for(d)
        pod_map = self.pod_map(d, rs_list)
        if being_deleted(d):
            await sync_status_only(self, d, rs_list)
            return
        await check_paused_conditions(self, d)
        if d["spec"].get("paused"):
            await sync_scaling(self, d, rs_list)
            return
        if get_rollback_to(d) is not None:
            await rollback(self, d, rs_list)
            return
        if await is_scaling_event(self, d, rs_list):
            await sync_scaling(self, d, rs_list)
            return
        strategy = (d["spec"].get("strategy") or {}).get("type")
        if strategy == "Recreate":
            await rollout_recreate(self, d, rs_list, pod_map)
        elif strategy == "RollingUpdate":
            await rollout_rolling(self, d, rs_list)
        else:
            raise ValueError(f"unexpected deployment strategy type: {strategy}")
