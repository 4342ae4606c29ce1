"""The StatefulSet controller: ordered pods with stable names, hostnames and storage.

Upstream: pkg/controller/statefulset (stateful_set.go, stateful_set_control.go,
stateful_pod_control.go; stateful_set_utils.go is statefulset_util.py).

    StatefulSet, pod or revision event --> queue "ns/name" --> sync(key):
        replicas web-0 .. web-N-1: create the missing ones (their PVCs first)
        OrderedReady: one at a time, in order, each Running and Ready before the next
        Parallel:     all at once
        condemned web-N and above: delete, highest ordinal first (OrderedReady: one at a
                      time, each gone before the next)
        RollingUpdate: delete pods not at the update revision, highest ordinal first,
                      down to the partition, at most maxUnavailable at a time
        write status: replicas, ready, available, current/updated counts and revisions

Each pod gets its identity from its ordinal: name `<set>-<ordinal>`, hostname = name,
subdomain = spec.serviceName (so `web-0.web.ns.svc` resolves), the labels
`statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`, and one
PersistentVolumeClaim per volumeClaimTemplate, named `<template>-<set>-<ordinal>`,
which outlives the pod so a replacement finds the same data.

Each template the set has had is kept as a ControllerRevision `<set>-<hash>` (history.py).
`status.updateRevision` names the revision of the template as it is now and
`status.currentRevision` the one the pods ran before the rollout began; each pod's
`controller-revision-hash` label names its own. A pod recreated below the partition of a
rollout (or, without one, among the first currentReplicas) is built from the current
revision's template, the others from the update revision's. Going back to an earlier
template renumbers its revision instead of writing a new one, and revisions beyond
spec.revisionHistoryLimit that neither the status nor a pod names are deleted. A sync
waits until the revision cache holds the last revision it wrote (history.caught_up), and
that revision's event queues the set again.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable

from minikube_py.api import Obj
from minikube_py.api.intstr import scaled_value_from_int_or_percent
from minikube_py.api.podutil import is_pod_available, is_pod_ready
from minikube_py.api.selectors import LabelSelector, label_selector_from_dict
from minikube_py.client.errors import AlreadyExists, ClientError, Conflict, NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import split_key
from minikube_py.controllers import history
from minikube_py.controllers.base import Controller, ControllerContext, ExpectedSyncError
from minikube_py.controllers.controller_ref import (
    claim,
    controller_of,
    resolve_controller_ref,
)
from minikube_py.controllers.controller_utils import (
    SLOW_START_INITIAL_BATCH_SIZE,
    slow_start_batch,
)
from minikube_py.controllers.statefulset_util import (
    RETAIN,
    claim_name,
    claim_owner_references,
    descending_ordinal,
    get_ordinal,
    has_stale_owner,
    identity_matches,
    in_ordinal_range,
    is_claim_owner_up_to_date,
    is_created,
    is_member_of,
    is_running_and_ready,
    is_terminating,
    new_stateful_set_pod,
    persistent_volume_claims,
    pod_phase,
    pod_reference,
    pod_revision,
    replica_count,
    retention_policy,
    start_ordinal,
    storage_matches,
    update_identity,
    update_storage,
)

log = logging.getLogger(__name__)

STATUS_UPDATE_ATTEMPTS = 5  # retry.DefaultRetry


class StatefulSetController(Controller):
    """StatefulSetController: ordered, stable pods and their claims."""

    name = "statefulset"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.sets = self.informer("statefulsets", "apps")
        self.pods = self.informer("pods")
        self.claims = self.informer("persistentvolumeclaims")
        self.revisions = self.informer("controllerrevisions", "apps")
        self.history = history.History(self.revisions,
                                       self.client.resource("controllerrevisions", "apps"))
        self.set_client = self.client.resource("statefulsets", "apps")
        self.pod_client = self.client.resource("pods")
        self.claim_client = self.client.resource("persistentvolumeclaims")
        self.watch_own_kind(self.sets)
        self.pods.add_event_handler(EventHandler(
            on_add=self._pod_added, on_update=self._pod_updated,
            on_delete=self._enqueue_controller))
        self.revisions.add_event_handler(EventHandler(
            on_add=self._enqueue_controller,
            on_update=lambda _old, new: self._enqueue_controller(new)))

    # -- informer handlers ----------------------------------------------------------------------

    def _resolve_controller_ref(self, namespace: str, reference: Obj) -> Obj | None:
        return resolve_controller_ref(self.sets.store, namespace, reference, "StatefulSet")

    def _sets_for_pod(self, pod: Obj) -> list[Obj]:
        """GetPodStatefulSets: the sets whose selector matches an orphan pod."""
        labels = pod["metadata"].get("labels") or {}
        return [sts for sts in self.sets.store.list(pod["metadata"].get("namespace", ""))
                if label_selector_from_dict(sts["spec"].get("selector")).matches(labels)]

    def _pod_added(self, pod: Obj) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._enqueue_controller(pod)  # as a deleted pod
            return
        reference = controller_of(pod)
        if reference is None:
            for sts in self._sets_for_pod(pod):
                self.enqueue(sts)
            return
        sts = self._resolve_controller_ref(pod["metadata"].get("namespace", ""), reference)
        if sts is not None:
            self.enqueue(sts)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        namespace = new["metadata"].get("namespace", "")
        reference, old_reference = controller_of(new), controller_of(old)
        if reference != old_reference and old_reference is not None:
            old_set = self._resolve_controller_ref(namespace, old_reference)
            if old_set is not None:
                self.enqueue(old_set)
        if reference is not None:
            sts = self._resolve_controller_ref(namespace, reference)
            if sts is None:
                return
            self.enqueue(sts)
            min_ready = sts["spec"].get("minReadySeconds") or 0
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(new):
                self.enqueue_after(sts, min_ready + 1)
            return
        labels_changed = old["metadata"].get("labels") != new["metadata"].get("labels")
        if labels_changed or reference != old_reference:
            for sts in self._sets_for_pod(new):
                self.enqueue(sts)

    def _enqueue_controller(self, obj: Obj) -> None:
        """Queue the set that controls `obj`: a pod deleted, or a revision that reached the
        cache, so that a sync that waited for it (History.caught_up) goes on. Upstream's
        controller has no revision handler; it does not wait."""
        reference = controller_of(obj)
        if reference is None:
            return
        sts = self._resolve_controller_ref(obj["metadata"].get("namespace", ""), reference)
        if sts is not None:
            self.enqueue(sts)

    # -- sync -----------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """syncStatefulSet: claim the set's pods, reconcile them, write status."""
        namespace, name = split_key(key)
        sts = self.sets.store.get_by_name(namespace, name)
        if sts is None:
            self.history.forget(key)
            return
        if not self.history.caught_up(sts):
            return  # numbering from this cache could repeat a number; its event queues us
        selector = label_selector_from_dict(sts["spec"].get("selector"))
        pods = await self._pods_for_set(sts, selector)
        revisions = await self.history.owned(sts, selector)
        status = await self._update_stateful_set(sts, pods, revisions)
        min_ready = sts["spec"].get("minReadySeconds") or 0
        if min_ready > 0 and status["readyReplicas"] != status["availableReplicas"]:
            self.enqueue_after(sts, min_ready)

    async def _pods_for_set(self, sts: Obj, selector: LabelSelector) -> list[Obj]:
        """getPodsForStatefulSet: pods named like members of the set, adopted or released
        by the selector."""
        namespace = sts["metadata"]["namespace"]
        members = [pod for pod in self.pods.store.list(namespace) if is_member_of(sts, pod)]
        return await claim(self.pod_client, sts, selector, members)

    async def _revisions(self, sts: Obj, revisions: list[Obj]) -> tuple[Obj, Obj, int]:
        """getStatefulSetRevisions: (current revision, update revision, collisionCount).

        The update revision is the template as it is now: the newest revision when that
        is it already, an older equal one renumbered (a rollback), or a new one. The
        current one is the revision the status names (the update revision at first).
        """
        status = sts.get("status") or {}
        collision_count = status.get("collisionCount") or 0
        data = history.snapshot(sts)
        number = history.next_number(revisions)
        equal = [r for r in revisions if history.equal(r, data)]
        if equal and equal[-1] is revisions[-1]:
            update = revisions[-1]
        elif equal:
            update = await self.history.renumber(equal[-1], number)
        else:
            while True:
                hash_ = history.hash_data(data, collision_count)
                revision = history.new_revision(sts, number, hash_, history.HASH_LABEL)
                created = await self.history.create(revision)
                if created is not None:
                    update = created
                    break
                collision_count += 1
        current = next((r for r in revisions
                        if r["metadata"]["name"] == status.get("currentRevision")), update)
        return current, update, collision_count

    async def _truncate_history(self, sts: Obj, pods: list[Obj], revisions: list[Obj],
                                status: Obj) -> None:
        """truncateHistory: delete the oldest revisions beyond revisionHistoryLimit among
        those neither the status nor a pod names."""
        live = {status["currentRevision"], status["updateRevision"],
                *(pod_revision(pod) for pod in pods)}
        old = [r for r in revisions if r["metadata"]["name"] not in live]
        limit = sts["spec"].get("revisionHistoryLimit", history.DEFAULT_HISTORY_LIMIT)
        for revision in old[:max(0, len(old) - limit)]:
            await self.history.delete(revision)

    def _unavailable(self, pod: Obj, min_ready: int) -> bool:
        """isUnavailable: not created, terminating, or not Running and available."""
        return (is_terminating(pod) or pod_phase(pod) != "Running"
                or not is_pod_available(pod, min_ready, self.now()))

    def _count_replicas(self, sts: Obj, pods: list[Obj], current: str, update: str,
                        status: Obj) -> None:
        """updateStatus/computeReplicaStatus: the replica counts of the status."""
        min_ready = sts["spec"].get("minReadySeconds") or 0
        counts = dict.fromkeys(("replicas", "readyReplicas", "availableReplicas",
                                "currentReplicas", "updatedReplicas"), 0)
        for pod in pods:
            if is_created(pod):
                counts["replicas"] += 1
            if is_running_and_ready(pod):
                counts["readyReplicas"] += 1
                if is_pod_available(pod, min_ready, self.now()):
                    counts["availableReplicas"] += 1
            if is_created(pod) and not is_terminating(pod):
                revision = pod_revision(pod)
                counts["currentReplicas"] += int(revision == current)
                counts["updatedReplicas"] += int(revision == update)
        status.update(counts)

    async def _update_stateful_set(self, sts: Obj, pods: list[Obj], revisions: list[Obj]
                                   ) -> Obj:
        """UpdateStatefulSet: reconcile the pods, store the status (also after an error,
        which is then raised for a retry), then trim the history."""
        current_revision, update_revision, collision_count = await self._revisions(
            sts, revisions)
        current = current_revision["metadata"]["name"]
        update = update_revision["metadata"]["name"]
        status: Obj = {"observedGeneration": sts["metadata"].get("generation", 0),
                       "currentRevision": current, "updateRevision": update,
                       "collisionCount": collision_count}
        self._count_replicas(sts, pods, current, update, status)
        try:
            await self._reconcile_pods(sts, pods, current_revision, update_revision, status)
        except Exception:
            try:
                await self._store_status(sts, status)
            except ClientError as error:
                log.warning("statefulset %s/%s: could not update status: %s",
                            sts["metadata"]["namespace"], sts["metadata"]["name"], error)
            raise
        await self._store_status(sts, status)
        revisions = [r for r in revisions if r["metadata"]["name"] != update] + [update_revision]
        await self._truncate_history(sts, pods, history.sort_revisions(revisions), status)
        return status

    async def _reconcile_pods(self, sts: Obj, pods: list[Obj], current_revision: Obj,
                              update_revision: Obj, status: Obj) -> None:
        """updateStatefulSet: the heart of the controller, in upstream's order:

            1. replicas (ordinals in range): create missing ones, delete failed ones, fix
               identity and storage; OrderedReady stops at the first that is not Running,
               Ready and available
            2. condemned (ordinals out of range): set claim owners for the retention policy
            3. condemned: delete, highest ordinal first (OrderedReady: one at a time)
            4. RollingUpdate: replace pods not at the update revision (onDelete: nothing)
        """
        start, count = start_ordinal(sts), replica_count(sts)
        min_ready = sts["spec"].get("minReadySeconds") or 0
        slots: list[Obj | None] = [None] * count
        condemned: list[Obj] = []
        for pod in pods:
            if in_ordinal_range(pod, sts):
                slots[get_ordinal(pod) - start] = pod
            elif get_ordinal(pod) >= 0:
                condemned.append(pod)
        update = update_revision["metadata"]["name"]
        replicas = [pod if pod is not None else self._versioned_pod(
            sts, current_revision, update_revision, start + i) for i, pod in enumerate(slots)]
        condemned = descending_ordinal(condemned)
        first_unhealthy = next((pod for pod in [*replicas, *reversed(condemned)]
                                if self._unavailable(pod, min_ready)), None)
        if sts["metadata"].get("deletionTimestamp"):
            return  # being deleted: only the status is kept up to date
        monotonic = sts["spec"].get("podManagementPolicy") != "Parallel"

        async def process_replica(i: int) -> bool:
            return await self._process_replica(sts, monotonic, replicas[i])

        async def fix_claims(i: int) -> bool:
            if not self._claims_match_retention_policy(sts, condemned[i]):
                await self._update_claims_for_retention_policy(sts, condemned[i])
            return False

        async def process_condemned(i: int) -> bool:
            return await self._process_condemned(sts, first_unhealthy, monotonic, condemned[i])

        for step, pods_of_step in ((process_replica, replicas), (fix_claims, condemned),
                                   (process_condemned, condemned)):
            if await self._run_for_all(len(pods_of_step), step, monotonic):
                return
        strategy = sts["spec"].get("updateStrategy") or {}
        if strategy.get("type") == "OnDelete":
            return
        await self._rolling_update(sts, replicas, update, status)

    @staticmethod
    def _versioned_pod(sts: Obj, current_revision: Obj, update_revision: Obj,
                       ordinal: int) -> Obj:
        """newVersionedStatefulSetPod: a missing pod below the rollout's partition (or,
        without a rollingUpdate block, among the first currentReplicas) is made from the
        current revision's template; any other from the update revision's."""
        strategy = sts["spec"].get("updateStrategy") or {}
        rolling = strategy.get("rollingUpdate")
        bound = start_ordinal(sts) + ((sts.get("status") or {}).get("currentReplicas", 0)
                                      if rolling is None else rolling.get("partition") or 0)
        if strategy.get("type", "RollingUpdate") == "RollingUpdate" and ordinal < bound:
            current_set = {**sts, "spec": {**sts["spec"],
                                           "template": history.template_of(current_revision)}}
            return new_stateful_set_pod(current_set, ordinal,
                                        current_revision["metadata"]["name"])
        return new_stateful_set_pod(sts, ordinal, update_revision["metadata"]["name"])

    @staticmethod
    async def _run_for_all(count: int, action: Callable[[int], Awaitable[bool]],
                           monotonic: bool) -> bool:
        """runForAll: in order, stopping when an action says so (OrderedReady), or all at
        once in slow-start batches (Parallel). True means: stop this sync here."""
        if monotonic:
            for i in range(count):
                if await action(i):
                    return True
            return False

        async def run(i: int) -> None:
            await action(i)
        _, errors = await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE, run)
        if errors:
            raise ExpectedSyncError("; ".join(str(error) for error in errors))
        return False

    async def _process_replica(self, sts: Obj, monotonic: bool, pod: Obj) -> bool:
        """processReplica: bring one in-range pod to its desired state; True when an
        OrderedReady set must not look at later ordinals yet."""
        min_ready = sts["spec"].get("minReadySeconds") or 0
        if pod_phase(pod) in ("Failed", "Succeeded"):
            # Restarted whatever its exit code: evicted pods end Failed or Succeeded too.
            if not is_terminating(pod):
                await self._delete_stateful_pod(sts, pod)
            return True
        if not is_created(pod):
            if self._pod_claim_is_stale(sts, pod):
                return True  # a claim still owned by a deleted pod of this name: wait for GC
            await self._create_stateful_pod(sts, pod)
            return monotonic
        if pod_phase(pod) == "Pending":
            await self._create_missing_claims(sts, pod)
        if monotonic and (is_terminating(pod) or not is_running_and_ready(pod)
                          or not is_pod_available(pod, min_ready, self.now())):
            return True
        if not (identity_matches(sts, pod) and storage_matches(sts, pod)):
            await self._update_stateful_pod(sts, copy.deepcopy(pod))
        if not self._claims_match_retention_policy(sts, pod):
            await self._update_claims_for_retention_policy(sts, pod)
        return False

    async def _process_condemned(self, sts: Obj, first_unhealthy: Obj | None, monotonic: bool,
                                 pod: Obj) -> bool:
        """processCondemned: delete an out-of-range pod; OrderedReady waits for the one
        before to be gone and for every other pod to be healthy first."""
        if is_terminating(pod):
            return monotonic
        min_ready = sts["spec"].get("minReadySeconds") or 0
        healthy = is_running_and_ready(pod) and is_pod_available(pod, min_ready, self.now())
        if monotonic and not healthy and pod is not first_unhealthy:
            return True
        await self._delete_stateful_pod(sts, pod)
        return True

    async def _rolling_update(self, sts: Obj, replicas: list[Obj], update: str,
                              status: Obj) -> None:
        """updateStatefulSetAfterInvariantEstablished: delete pods at an old revision from
        the highest ordinal down to the partition, keeping at most maxUnavailable replicas
        unavailable (MaxUnavailableStatefulSet, beta and on since 1.35; default 1)."""
        rolling = (sts["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}
        partition = rolling.get("partition") or 0
        try:
            max_unavailable = max(1, scaled_value_from_int_or_percent(
                rolling.get("maxUnavailable") or 1, len(replicas), round_up=False))
        except ValueError as error:
            raise ExpectedSyncError(f"invalid maxUnavailable: {error}") from error
        min_ready = sts["spec"].get("minReadySeconds") or 0
        unavailable = sum(1 for pod in replicas if self._unavailable(pod, min_ready))
        budget = max_unavailable - unavailable
        for target in range(len(replicas) - 1, partition - 1, -1):
            if budget <= 0:
                return
            pod = replicas[target]
            if pod_revision(pod) != update and not is_terminating(pod):
                try:
                    await self._delete_stateful_pod(sts, pod)
                except NotFound:
                    pass
                budget -= 1
                status["currentReplicas"] -= 1

    # -- pod and claim actions (stateful_pod_control.go) ----------------------------------------

    def _record_pod_event(self, verb: str, sts: Obj, pod: Obj,
                          error: Exception | None = None) -> None:
        """recordPodEvent: "create Pod web-0 in StatefulSet web successful" and the like."""
        subject = f"{verb} Pod {pod['metadata']['name']} in StatefulSet {sts['metadata']['name']}"
        if error is None:
            self.recorder.event(sts, "Normal", f"Successful{verb.title()}",
                                f"{subject} successful")
        else:
            self.recorder.event(sts, "Warning", f"Failed{verb.title()}",
                                f"{subject} failed error: {error}")

    def _record_claim_event(self, verb: str, sts: Obj, pod: Obj, pvc: Obj,
                            error: Exception | None = None) -> None:
        """recordClaimEvent: "create Claim www-web-0 Pod web-0 in StatefulSet web success"."""
        claim_, pod_, set_ = (pvc["metadata"]["name"], pod["metadata"]["name"],
                              sts["metadata"]["name"])
        if error is None:
            self.recorder.event(sts, "Normal", f"Successful{verb.title()}",
                                f"{verb} Claim {claim_} Pod {pod_} in StatefulSet {set_} success")
        else:
            self.recorder.event(
                sts, "Warning", f"Failed{verb.title()}",
                f"{verb} Claim {claim_} for Pod {pod_} in StatefulSet {set_} failed error: "
                f"{error}")

    async def _create_claims(self, sts: Obj, pod: Obj) -> None:
        """createPersistentVolumeClaims: create the pod's claims that do not exist yet."""
        errors: list[str] = []
        for pvc in persistent_volume_claims(sts, get_ordinal(pod)).values():
            meta = pvc["metadata"]
            existing = self.claims.store.get_by_name(meta["namespace"], meta["name"])
            if existing is not None:
                if existing["metadata"].get("deletionTimestamp"):
                    errors.append(f"pvc {meta['name']} is being deleted")
                continue
            try:
                await self.claim_client.create(pvc, meta["namespace"])
            except AlreadyExists as error:
                errors.append(f"failed to create PVC {meta['name']}: {error}")
            except ClientError as error:
                errors.append(f"failed to create PVC {meta['name']}: {error}")
                self._record_claim_event("create", sts, pod, pvc, error)
            else:
                self._record_claim_event("create", sts, pod, pvc)
        if errors:
            raise ExpectedSyncError("; ".join(errors))

    async def _create_stateful_pod(self, sts: Obj, pod: Obj) -> None:
        """CreateStatefulPod: the claims first, then the pod, then the claims' owners."""
        try:
            await self._create_claims(sts, pod)
        except ExpectedSyncError as error:
            self._record_pod_event("create", sts, pod, error)
            raise
        try:
            created = await self.pod_client.create(pod, sts["metadata"]["namespace"])
        except AlreadyExists as error:  # the cache is behind; the next sync sees the pod
            raise ExpectedSyncError(str(error)) from error
        except ClientError as error:
            self._record_pod_event("create", sts, pod, error)
            raise
        await self._update_claims_for_retention_policy(sts, created)
        self._record_pod_event("create", sts, pod)

    async def _create_missing_claims(self, sts: Obj, pod: Obj) -> None:
        """createMissingPersistentVolumeClaims: for a Pending pod whose claim is gone."""
        await self._create_claims(sts, pod)
        await self._update_claims_for_retention_policy(sts, pod)

    async def _update_stateful_pod(self, sts: Obj, pod: Obj) -> None:
        """UpdateStatefulPod: restore the pod's identity labels and claim volumes."""
        if not identity_matches(sts, pod):
            update_identity(sts, pod)
        if not storage_matches(sts, pod):
            update_storage(sts, pod)
            await self._create_claims(sts, pod)
        try:
            await self.pod_client.update(pod)
        except ClientError as error:
            self._record_pod_event("update", sts, pod, error)
            raise
        self._record_pod_event("update", sts, pod)

    async def _delete_stateful_pod(self, sts: Obj, pod: Obj) -> None:
        """DeleteStatefulPod: delete the pod; its claims stay (unless the policy says)."""
        try:
            await self.pod_client.delete(pod["metadata"]["name"], sts["metadata"]["namespace"])
        except ClientError as error:
            self._record_pod_event("delete", sts, pod, error)
            raise
        self._record_pod_event("delete", sts, pod)

    def _existing_claims(self, sts: Obj, pod: Obj) -> list[Obj]:
        """The pod's claims that exist (the names of getPersistentVolumeClaims, without
        building the claims: every sync asks this of every pod)."""
        namespace, ordinal = sts["metadata"]["namespace"], get_ordinal(pod)
        found = (self.claims.store.get_by_name(namespace, claim_name(sts, template, ordinal))
                 for template in sts["spec"].get("volumeClaimTemplates") or [])
        return [pvc for pvc in found if pvc is not None]

    def _pod_claim_is_stale(self, sts: Obj, pod: Obj) -> bool:
        """PodClaimIsStale: with whenScaled=Delete, a claim still owned by an earlier pod of
        this name is about to be garbage collected; do not reuse it."""
        if retention_policy(sts)[1] == RETAIN:
            return False
        return any(has_stale_owner(pvc, pod_reference(pod))
                   for pvc in self._existing_claims(sts, pod))

    def _claims_match_retention_policy(self, sts: Obj, pod: Obj) -> bool:
        """ClaimsMatchRetentionPolicy (claims not in the cache yet are picked up later)."""
        return all(is_claim_owner_up_to_date(pvc, sts, pod)
                   for pvc in self._existing_claims(sts, pod))

    async def _update_claims_for_retention_policy(self, sts: Obj, pod: Obj) -> None:
        """UpdatePodClaimForRetentionPolicy: set each claim's ownerReferences."""
        for pvc in self._existing_claims(sts, pod):
            if is_claim_owner_up_to_date(pvc, sts, pod):
                continue
            updated = copy.deepcopy(pvc)
            updated["metadata"]["ownerReferences"] = claim_owner_references(pvc, sts, pod)
            try:
                await self.claim_client.update(updated)
            except ClientError as error:
                raise ExpectedSyncError(
                    f"could not update claim {pvc['metadata']['name']} for delete policy "
                    f"ownerRefs: {error}") from error

    # -- status ---------------------------------------------------------------------------------

    async def _store_status(self, sts: Obj, status: Obj) -> None:
        """updateStatefulSetStatus: finish a complete rollout, and PUT /status when the
        counts, revisions or observed generation changed (retrying on conflicts)."""
        strategy = (sts["spec"].get("updateStrategy") or {}).get("type")
        wanted = replica_count(sts)
        if strategy == "RollingUpdate" and (
                status["updatedReplicas"] == status["readyReplicas"] == status["replicas"]
                == wanted):
            status["currentReplicas"] = status["updatedReplicas"]
            status["currentRevision"] = status["updateRevision"]
        old = sts.get("status") or {}
        compared = ("replicas", "currentReplicas", "readyReplicas", "updatedReplicas",
                    "currentRevision", "availableReplicas", "updateRevision")
        if status["observedGeneration"] <= old.get("observedGeneration", 0) and all(
                status[field] == old.get(field, 0 if field.endswith("Replicas") else "")
                for field in compared):
            return
        target = sts
        for attempt in range(STATUS_UPDATE_ATTEMPTS):
            updated = {**target, "status": dict(status)}
            try:
                await self.set_client.update_status(updated)
                return
            except Conflict:
                if attempt == STATUS_UPDATE_ATTEMPTS - 1:
                    raise
                target = await self.set_client.get(sts["metadata"]["name"],
                                                   sts["metadata"]["namespace"])
