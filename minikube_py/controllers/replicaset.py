"""The ReplicaSet controller: keep `spec.replicas` copies of a pod template running
(upstream pkg/controller/replicaset/replica_set.go and replica_set_utils.go).

    pod / replicaset event --> queue "ns/name" --> sync(key), which is syncReplicaSet:
        read the ReplicaSet and its namespace's pods from the informer caches
        claim pods: adopt matching orphans, release owned pods that stopped matching
        if the cache has caught up with our last creates/deletes (expectations):
            too few pods  -> create the difference in slow-start batches (1, 2, 4, ...)
            too many pods -> delete the difference, least valuable pods first
        write status (replicas, ready, available, ReplicaFailure) when it changed

Expectations are what make this safe with a slow cache: after asking for 3 pods the
controller waits until its pod informer has reported 3 new pods (the pod handlers below
lower the count) before it counts pods again, so it never creates them twice.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
import math
from collections.abc import Iterable
from datetime import datetime
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.meta import parse_rfc3339, rfc3339
from minikube_py.api.podutil import (
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    is_pod_terminating,
    pod_condition,
    pod_key,
)
from minikube_py.api.selectors import LabelSelector, SelectorError, label_selector_from_dict
from minikube_py.client.errors import ClientError, Conflict, NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.logs import log_v
from minikube_py.client.store import object_key, split_key
from minikube_py.controllers.base import Controller, ControllerContext, ExpectedSyncError
from minikube_py.controllers.controller_ref import (
    being_deleted,
    claim,
    controller_of,
    is_controlled_by,
    pod_from_template,
    resolve_controller_ref,
)
from minikube_py.controllers.controller_utils import (
    SLOW_START_INITIAL_BATCH_SIZE,
    slow_start_batch,
)
from minikube_py.controllers.expectations import ControllerExpectations

log = logging.getLogger(__name__)

# A ReplicaSet creates or deletes at most this many pods per sync (upstream's burstReplicas).
BURST_REPLICAS = 500
# The ReplicaSet store's index of ReplicaSets by the uid of their controller (a Deployment).
CONTROLLER_UID_INDEX = "controllerUID"
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
REPLICA_FAILURE = "ReplicaFailure"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_INT32 = (-(2**31), 2**31 - 1)


def index_by_controller_uid(obj: Obj) -> list[str]:
    reference = controller_of(obj)
    return [reference["uid"]] if reference and reference.get("uid") else []


# -- which pods to delete (controller.ActivePodsWithRanks) -------------------------------------


def _deletion_cost(pod: Obj) -> int:
    """GetDeletionCostFromPodAnnotations: a missing or malformed cost counts as 0."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(POD_DELETION_COST)
    try:
        cost = int(text) if text is not None else 0
    except ValueError:
        return 0
    return cost if _INT32[0] <= cost <= _INT32[1] else 0


def _ready_time(pod: Obj) -> datetime | None:
    ready = pod_condition(pod, "Ready")
    if ready is None or ready.get("status") != "True" or not ready.get("lastTransitionTime"):
        return None
    return parse_rfc3339(ready["lastTransitionTime"])


def _creation_time(pod: Obj) -> datetime | None:
    stamp = (pod.get("metadata") or {}).get("creationTimestamp")
    return parse_rfc3339(stamp) if stamp else None


def _max_container_restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return max((status.get("restartCount", 0) for status in statuses), default=0)


def _log_rank(moment: datetime, now: datetime) -> int:
    """The age's power of two in nanoseconds: pods of about the same age rank the same."""
    nanoseconds = int((now - moment).total_seconds() * 1e9)
    return int(math.log2(nanoseconds)) if nanoseconds > 0 else -1


def _newer_first(first: datetime | None, second: datetime | None, now: datetime,
                 first_uid: str, second_uid: str) -> bool:
    """Compare two times on a logarithmic scale (LogarithmicScaleDown): a missing time
    first, then the more recent; times of the same rank are ordered by uid, which
    spreads deletions pseudo-randomly among equivalent pods."""
    if first is None or second is None:
        return first is None
    rank_diff = _log_rank(first, now) - _log_rank(second, now)
    if rank_diff == 0:
        return first_uid < second_uid
    return rank_diff < 0


def prefer_for_deletion(first: Obj, second: Obj, first_rank: int, second_rank: int,
                        now: datetime) -> bool:
    """ActivePodsWithRanks.Less: True when `first` should be deleted before `second`.

    1. unassigned < assigned            5. more pods of the owner on its node < fewer
    2. Pending < Unknown < Running      6. ready for less time < longer (log scale)
    3. not ready < ready                7. more container restarts < fewer
    4. lower pod-deletion-cost < higher 8. created more recently < earlier (log scale)
    """
    first_node = (first.get("spec") or {}).get("nodeName", "")
    second_node = (second.get("spec") or {}).get("nodeName", "")
    if first_node != second_node and (not first_node or not second_node):
        return not first_node
    first_phase = _PHASE_ORDINAL.get((first.get("status") or {}).get("phase", ""), 0)
    second_phase = _PHASE_ORDINAL.get((second.get("status") or {}).get("phase", ""), 0)
    if first_phase != second_phase:
        return first_phase < second_phase
    if is_pod_ready(first) != is_pod_ready(second):
        return not is_pod_ready(first)
    if _deletion_cost(first) != _deletion_cost(second):
        return _deletion_cost(first) < _deletion_cost(second)
    if first_rank != second_rank:
        return first_rank > second_rank
    first_uid = first["metadata"].get("uid", "")
    second_uid = second["metadata"].get("uid", "")
    if is_pod_ready(first) and is_pod_ready(second):
        first_ready, second_ready = _ready_time(first), _ready_time(second)
        if first_ready != second_ready:
            return _newer_first(first_ready, second_ready, now, first_uid, second_uid)
    if _max_container_restarts(first) != _max_container_restarts(second):
        return _max_container_restarts(first) > _max_container_restarts(second)
    first_created, second_created = _creation_time(first), _creation_time(second)
    if first_created != second_created:
        return _newer_first(first_created, second_created, now, first_uid, second_uid)
    return False


def pods_to_delete(pods: list[Obj], related_pods: Iterable[Obj], diff: int,
                   now: datetime) -> list[Obj]:
    """getPodsToDelete: the `diff` pods to delete, those least worth keeping first.

    A pod's rank is how many active pods of the same owner (all ReplicaSets of its
    Deployment) share its node, so scaling down also spreads the survivors out.
    """
    if diff >= len(pods):
        return list(pods[:diff])
    on_node: dict[str, int] = {}
    for pod in related_pods:
        if is_pod_active(pod):
            node = (pod.get("spec") or {}).get("nodeName", "")
            on_node[node] = on_node.get(node, 0) + 1
    ranked = [(pod, on_node.get((pod.get("spec") or {}).get("nodeName", ""), 0))
              for pod in pods]

    def compare(first: tuple[Obj, int], second: tuple[Obj, int]) -> int:
        if prefer_for_deletion(first[0], second[0], first[1], second[1], now):
            return -1
        if prefer_for_deletion(second[0], first[0], second[1], first[1], now):
            return 1
        return 0

    ranked.sort(key=functools.cmp_to_key(compare))
    return [pod for pod, _rank in ranked[:diff]]


# -- status (replica_set_utils.go) -------------------------------------------------------------


def calculate_status(rs: Obj, active_pods: list[Obj], terminating_pods: list[Obj],
                     manage_error: Exception | None, now: datetime) -> Obj:
    """calculateStatus: count the claimed pods; raise or clear ReplicaFailure."""
    spec = rs.get("spec") or {}
    status = copy.deepcopy(rs.get("status") or {})
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = spec.get("minReadySeconds", 0)
    fully_labeled = ready = available = 0
    for pod in active_pods:
        labels = pod["metadata"].get("labels") or {}
        if all(labels.get(key) == value for key, value in template_labels.items()):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != REPLICA_FAILURE]
    failure = next((c for c in status.get("conditions") or []
                    if c.get("type") == REPLICA_FAILURE), None)
    if manage_error is not None:
        if failure is None:
            diff = len(active_pods) - spec.get("replicas", 1)
            reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
            failure = {"type": REPLICA_FAILURE, "status": "True",
                       "lastTransitionTime": rfc3339(now), "reason": reason,
                       "message": str(manage_error)}
        conditions.append(failure)
    status.update(replicas=len(active_pods), fullyLabeledReplicas=fully_labeled,
                  readyReplicas=ready, availableReplicas=available,
                  terminatingReplicas=len(terminating_pods), conditions=conditions)
    return status


_COUNTS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas",
           "terminatingReplicas")


def status_unchanged(rs: Obj, new_status: Obj) -> bool:
    """The steady state of updateReplicaSetStatus: nothing to write."""
    old = rs.get("status") or {}
    return (all(old.get(field, 0) == new_status.get(field, 0) for field in _COUNTS)
            and "terminatingReplicas" in old
            and (old.get("conditions") or []) == (new_status.get("conditions") or [])
            and rs["metadata"].get("generation") == old.get("observedGeneration"))


def _wire_status(status: Obj) -> Obj:
    """Drop what Go's omitempty would: zero counters and an empty condition list."""
    keep_zero = ("replicas", "terminatingReplicas")
    return {key: value for key, value in status.items()
            if key in keep_zero or value not in (0, [], None)}


# -- the controller ----------------------------------------------------------------------------


class ReplicaSetController(Controller):
    """Keeps the pods of every ReplicaSet at spec.replicas (upstream ReplicaSetController).

    The kind it manages is given by the class attributes below, so that the
    ReplicationController controller is this class with another kind, as upstream's
    replication manager is its ReplicaSet controller with another GroupVersionKind."""

    name: ClassVar[str] = "replicaset"
    managed_plural: ClassVar[str] = "replicasets"
    managed_group: ClassVar[str] = "apps"
    managed_kind: ClassVar[str] = "ReplicaSet"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.expectations = ControllerExpectations()
        self.replica_set_client = self.client.resource(self.managed_plural, self.managed_group)
        self.pod_client = self.client.resource("pods")
        self.replica_sets = self.informer(self.managed_plural, self.managed_group)
        self.traced = self.replica_sets
        self.replica_sets.add_indexers({CONTROLLER_UID_INDEX: index_by_controller_uid})
        self.replica_sets.add_event_handler(EventHandler(
            on_add=self.enqueue, on_update=self.update_replica_set,
            on_delete=self.delete_replica_set))
        self.pods = self.informer("pods")
        self.pods.add_event_handler(EventHandler(
            on_add=self.add_pod, on_update=self.update_pod, on_delete=self.delete_pod))

    # -- informer handlers: who needs a sync ---------------------------------------------------

    def update_replica_set(self, old: Obj, new: Obj) -> None:
        """updateRS: a recreated ReplicaSet of the same name first forgets the old one."""
        if old["metadata"].get("uid") != new["metadata"].get("uid"):
            self.delete_replica_set(old)
        self.enqueue(new)

    def delete_replica_set(self, rs: Obj) -> None:
        """deleteRS: drop expectations, so a new ReplicaSet of that name starts clean."""
        self.expectations.delete(object_key(rs))
        self.enqueue(rs)

    @staticmethod
    def selector_of(rs: Obj) -> LabelSelector:
        """The pod selector of a managed object (SelectorError when it does not parse)."""
        return label_selector_from_dict((rs.get("spec") or {}).get("selector"))

    def resolve_controller_ref(self, namespace: str, reference: Obj) -> Obj | None:
        """The ReplicaSet a controller reference names, if it is still the same object."""
        return resolve_controller_ref(self.replica_sets.store, namespace, reference,
                                      self.managed_kind)

    def replica_sets_selecting(self, pod: Obj) -> list[Obj]:
        """GetPodReplicaSets: ReplicaSets whose (non-empty) selector matches the pod."""
        matching = []
        labels = pod["metadata"].get("labels") or {}
        for rs in self.replica_sets.store.list(pod["metadata"].get("namespace", "")):
            try:
                selector = self.selector_of(rs)
            except SelectorError:
                continue
            if not selector.empty() and selector.matches(labels):
                matching.append(rs)
        return matching

    def add_pod(self, pod: Obj) -> None:
        """addPod: a pod of ours appeared (one expected creation seen), or an orphan that
        a ReplicaSet may want to adopt."""
        if being_deleted(pod):
            self.delete_pod(pod)
            return
        reference = controller_of(pod)
        if reference is not None:
            rs = self.resolve_controller_ref(pod["metadata"].get("namespace", ""), reference)
            if rs is not None:
                self.expectations.creation_observed(object_key(rs))
                self.enqueue(rs)
            return
        for rs in self.replica_sets_selecting(pod):
            self.enqueue(rs)

    def update_pod(self, old: Obj, new: Obj) -> None:
        """updatePod: wake the owner; a pod marked for deletion counts as deleted now."""
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        labels_changed = old["metadata"].get("labels") != new["metadata"].get("labels")
        if being_deleted(new):
            self.delete_pod(new)
            if labels_changed:
                self.delete_pod(old)
            return
        old_reference, new_reference = controller_of(old), controller_of(new)
        reference_changed = old_reference != new_reference
        namespace = new["metadata"].get("namespace", "")
        if reference_changed and old_reference is not None:
            previous = self.resolve_controller_ref(namespace, old_reference)
            if previous is not None:
                self.enqueue(previous)
        if new_reference is not None:
            rs = self.resolve_controller_ref(namespace, new_reference)
            if rs is None:
                return
            self.enqueue(rs)
            min_ready = (rs.get("spec") or {}).get("minReadySeconds", 0)
            if not is_pod_ready(old) and is_pod_ready(new) and min_ready > 0:
                # Check availability again once the pod has been ready long enough
                # (plus a second against clock skew, as upstream).
                self.enqueue_after(rs, min_ready + 1)
            return
        if labels_changed or reference_changed:
            for rs in self.replica_sets_selecting(new):
                self.enqueue(rs)

    def delete_pod(self, pod: Obj) -> None:
        """deletePod: one expected deletion seen (if we asked for it); wake the owner."""
        reference = controller_of(pod)
        if reference is None:
            return
        rs = self.resolve_controller_ref(pod["metadata"].get("namespace", ""), reference)
        if rs is None:
            return
        key = object_key(rs)
        self.expectations.deletion_observed(key, pod_key(pod))
        self.queue.add(key)

    # -- sync ----------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """syncReplicaSet: claim pods, create or delete the difference, write status."""
        namespace, name = split_key(key)
        rs = self.replica_sets.store.get_by_name(namespace, name)
        if rs is None:
            self.expectations.delete(key)
            return
        needs_sync = self.expectations.satisfied(key)
        try:
            selector = self.selector_of(rs)
        except SelectorError as error:
            log.warning("%s %s has an invalid selector: %s", self.name, key, error)
            return
        all_pods = self.pods.store.list(namespace)
        active = await claim(self.pod_client, rs, selector,
                             [pod for pod in all_pods if is_pod_active(pod)])
        terminating = [pod for pod in all_pods
                       if is_pod_terminating(pod) and is_controlled_by(pod, rs)
                       and selector.matches(pod["metadata"].get("labels"))]
        manage_error: Exception | None = None
        if needs_sync and not being_deleted(rs):
            try:
                await self.manage_replicas(key, active, rs)
            except ClientError as error:
                manage_error = error
        new_status = calculate_status(rs, active, terminating, manage_error, self.now())
        updated = await self.update_status(rs, new_status)
        spec, status = updated.get("spec") or {}, updated.get("status") or {}
        min_ready = spec.get("minReadySeconds", 0)
        if (manage_error is None and min_ready > 0
                and status.get("readyReplicas", 0) == spec.get("replicas", 1)
                and status.get("availableReplicas", 0) != spec.get("replicas", 1)):
            self.queue.add_after(key, min_ready)
        if manage_error is not None:
            raise ExpectedSyncError(f"{key}: {manage_error}") from manage_error

    async def manage_replicas(self, key: str, pods: list[Obj], rs: Obj) -> None:
        """manageReplicas: create or delete pods so that len(pods) == spec.replicas."""
        diff = len(pods) - (rs.get("spec") or {}).get("replicas", 1)
        if diff < 0:
            await self.create_pods(key, rs, min(-diff, BURST_REPLICAS))
        elif diff > 0:
            await self.delete_pods(key, rs, pods, min(diff, BURST_REPLICAS))

    async def create_pods(self, key: str, rs: Obj, count: int) -> None:
        """Expect `count` creations, then create in slow-start batches; a failing batch
        stops the rest, and creations never attempted are no longer expected."""
        self.expectations.expect_creations(key, count)
        log_v(log, 2, "Too few replicas", replicaSet=key, need=(rs.get("spec") or {}).get(
            "replicas", 1), creating=count)

        async def create_one(_index: int) -> None:
            pod = pod_from_template((rs.get("spec") or {}).get("template") or {}, rs)
            try:
                created = await self.pod_client.create(pod, rs["metadata"]["namespace"])
            except ClientError as error:
                self.recorder.event(rs, "Warning", "FailedCreate", f"Error creating: {error}")
                raise
            self.recorder.event(rs, "Normal", "SuccessfulCreate",
                                f"Created pod: {created['metadata']['name']}")

        successes, errors = await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE,
                                                   create_one)
        if successes < count:
            self.expectations.lower_creations(key, count - successes)
        if errors:
            raise errors[0]

    async def delete_pods(self, key: str, rs: Obj, pods: list[Obj], count: int) -> None:
        """Expect the chosen pods' deletions by key (so each is counted once), then delete
        them all at once."""
        victims = pods_to_delete(pods, self.indirectly_related_pods(rs), count, self.now())
        self.expectations.expect_deletions(key, [pod_key(pod) for pod in victims])
        log_v(log, 2, "Too many replicas", replicaSet=key, need=(rs.get("spec") or {}).get(
            "replicas", 1), deleting=count)

        async def delete_one(pod: Obj) -> Exception | None:
            name = pod["metadata"]["name"]
            try:
                await self.pod_client.delete(name, rs["metadata"]["namespace"])
            except NotFound:
                self.expectations.lower_deletion(key, pod_key(pod))
                return None
            except ClientError as error:
                self.expectations.lower_deletion(key, pod_key(pod))
                self.recorder.event(rs, "Warning", "FailedDelete", f"Error deleting: {error}")
                return error
            self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")
            return None

        results = await asyncio.gather(*(delete_one(pod) for pod in victims))
        errors = [error for error in results if error is not None]
        if errors:
            raise errors[0]

    def indirectly_related_pods(self, rs: Obj) -> list[Obj]:
        """getIndirectlyRelatedPods: pods of every ReplicaSet with the same controller."""
        reference = controller_of(rs)
        if reference is None:
            return []
        related: dict[str, Obj] = {}
        for other in self.replica_sets.store.by_index(CONTROLLER_UID_INDEX, reference["uid"]):
            try:
                selector = self.selector_of(other)
            except SelectorError:
                continue
            for pod in self.pods.store.list(other["metadata"].get("namespace", "")):
                if selector.matches(pod["metadata"].get("labels")):
                    related.setdefault(pod["metadata"].get("uid", ""), pod)
        return list(related.values())

    async def update_status(self, rs: Obj, new_status: Obj) -> Obj:
        """updateReplicaSetStatus: write through /status if anything changed; on a
        conflict read the ReplicaSet once more and retry once."""
        if status_unchanged(rs, new_status):
            return rs
        new_status["observedGeneration"] = rs["metadata"].get("generation")
        updated = copy.deepcopy(rs)
        updated["status"] = _wire_status(new_status)
        try:
            return await self.replica_set_client.update_status(updated)
        except Conflict:
            meta = rs["metadata"]
            fresh = await self.replica_set_client.get(meta["name"], meta["namespace"])
            fresh["status"] = _wire_status(new_status)
            return await self.replica_set_client.update_status(fresh)


class ReplicationControllerController(ReplicaSetController):
    """ReplicationControllers (core/v1): ReplicaSets whose selector is a plain label map
    (upstream pkg/controller/replication, which reuses the ReplicaSet controller)."""

    name: ClassVar[str] = "replicationcontroller"
    event_source: ClassVar[str] = "replication-controller"
    managed_plural: ClassVar[str] = "replicationcontrollers"
    managed_group: ClassVar[str] = ""
    managed_kind: ClassVar[str] = "ReplicationController"

    @staticmethod
    def selector_of(rs: Obj) -> LabelSelector:
        return label_selector_from_dict(
            {"matchLabels": (rs.get("spec") or {}).get("selector") or {}})
