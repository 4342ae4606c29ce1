"""The DaemonSet controller: one pod per eligible node (upstream pkg/controller/daemon;
its pure helpers, pkg/controller/daemon/util among them, are in daemonset_util.py).

    DaemonSet, pod or node event --> queue "ns/name" --> sync(key):
        nodes that should run the pod but have none  --> create a pod for each
        nodes that should not run it, failed pods    --> delete them
        RollingUpdate: replace old pods, at most maxUnavailable missing (or maxSurge extra)
        write status: desired / current / misscheduled / ready / updated / available

A node is *eligible* when the pod template's nodeSelector and required node affinity
select it and it has no NoSchedule or NoExecute taint the pod does not tolerate. Every
daemon pod tolerates the node-condition taints (not-ready, unreachable, pressure,
unschedulable), so a DaemonSet keeps running on a sick node. The controller does not
set `spec.nodeName`: it gives each pod a required node affinity on `metadata.name`
and lets the default scheduler bind it, as upstream does since 1.12.

Each template the DaemonSet has had is kept as a ControllerRevision `<ds>-<hash>`
(history.py): the pods carry its hash in `controller-revision-hash`, next to the
`pod-template-generation` label taken from the DaemonSet's
`deprecated.daemonset.template.generation` annotation; a pod is up to date when either
label matches, which is upstream's rule too. Going back to an earlier template (`kubectl
rollout undo`) renumbers that template's revision instead of writing a new one, and
revisions beyond spec.revisionHistoryLimit that no pod runs are deleted.

One difference from upstream: when two revisions hold the same template (possible only
after a hash collision), upstream moves the pods of the older one to the newer one's
hash before deleting it; here it is deleted and its pods are replaced as outdated.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections import defaultdict
from datetime import datetime, timedelta

from minikube_py.api import Obj
from minikube_py.api.podutil import is_pod_available, is_pod_ready, pod_key
from minikube_py.api.selectors import label_selector_from_dict
from minikube_py.client.errors import ClientError, Conflict, NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import object_key, split_key
from minikube_py.controllers import history
from minikube_py.controllers.base import Controller, ControllerContext, ExpectedSyncError
from minikube_py.controllers.controller_ref import (
    claim,
    controller_of,
    pod_from_template,
    resolve_controller_ref,
)
from minikube_py.controllers.controller_utils import (
    SLOW_START_INITIAL_BATCH_SIZE,
    compute_hash,
    slow_start_batch,
)
from minikube_py.controllers.daemonset_util import (
    REVISION_HASH_LABEL,
    allows_surge,
    create_pod_template,
    find_updated_pods_on_node,
    is_deleting,
    is_pod_updated,
    node_should_run_daemon_pod,
    pod_order,
    pod_phase,
    replace_node_name_affinity,
    should_ignore_node_update,
    surge_count,
    target_node_name,
    template_generation,
    unavailable_count,
    unscheduled_pods_without_node,
    update_strategy_of,
)
from minikube_py.controllers.expectations import ControllerExpectations

log = logging.getLogger(__name__)

BURST_REPLICAS = 250  # at most this many creations (and deletions) per sync
STATUS_UPDATE_RETRIES = 1
FAILED_POD_BACKOFF_INITIAL = 1.0  # seconds; kube-controller-manager's flowcontrol.Backoff
FAILED_POD_BACKOFF_MAX = 900.0

FAILED_DAEMON_POD = "FailedDaemonPod"
SUCCEEDED_DAEMON_POD = "SucceededDaemonPod"


class FailedPodsBackoff:
    """flowcontrol.Backoff: per-key delays doubling from 1 s to 15 min, forgotten after
    twice the maximum without a failure. Keeps the controller from fighting a kubelet
    that rejects every daemon pod it is given."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial = timedelta(seconds=initial)
        self.maximum = timedelta(seconds=maximum)
        self._entries: dict[str, tuple[timedelta, datetime]] = {}

    def _expired(self, now: datetime, last_update: datetime) -> bool:
        return now - last_update > 2 * self.maximum

    def in_backoff(self, key: str, now: datetime) -> bool:
        """IsInBackOffSinceUpdate: less than the current delay has passed since `next`."""
        entry = self._entries.get(key)
        if entry is None or self._expired(now, entry[1]):
            return False
        return now - entry[1] < entry[0]

    def delay(self, key: str) -> float:
        entry = self._entries.get(key)
        return entry[0].total_seconds() if entry else 0.0

    def next(self, key: str, now: datetime) -> None:
        """Next: start (or double) the key's delay; drop keys idle for long (GC)."""
        entry = self._entries.get(key)
        if entry is None or self._expired(now, entry[1]):
            delay = self.initial
        else:
            delay = min(entry[0] * 2, self.maximum)
        self._entries = {k: v for k, v in self._entries.items() if not self._expired(now, v[1])}
        self._entries[key] = (delay, now)


# --- the controller ---------------------------------------------------------------------------


class DaemonSetController(Controller):
    """DaemonSetsController: keep one daemon pod on every eligible node."""

    name = "daemonset"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.daemonsets = self.informer("daemonsets", "apps")
        self.traced = self.daemonsets
        self.pods = self.informer("pods")
        self.nodes = self.informer("nodes")
        self.revisions = self.informer("controllerrevisions", "apps")
        self.daemonset_client = self.client.resource("daemonsets", "apps")
        self.pod_client = self.client.resource("pods")
        self.history = history.History(self.revisions,
                                       self.client.resource("controllerrevisions", "apps"))
        # ControllerExpectations holds one kind of pending action per key, and one sync
        # may both create and delete: keep a record of each.
        self.creations = ControllerExpectations()
        self.deletions = ControllerExpectations()
        self.failed_pods_backoff = FailedPodsBackoff(FAILED_POD_BACKOFF_INITIAL,
                                                     FAILED_POD_BACKOFF_MAX)
        self.daemonsets.add_event_handler(EventHandler(
            on_add=self.enqueue, on_update=self._daemon_set_updated,
            on_delete=self._daemon_set_deleted))
        self.pods.add_event_handler(EventHandler(
            on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted))
        self.nodes.add_event_handler(EventHandler(
            on_add=self._node_added, on_update=self._node_updated))
        self.revisions.add_event_handler(EventHandler(
            on_add=self._revision_changed, on_update=lambda _old, new: self._revision_changed(
                new), on_delete=self._revision_changed))

    # -- informer handlers ----------------------------------------------------------------------

    def _forget_expectations(self, key: str) -> None:
        self.creations.delete(key)
        self.deletions.delete(key)
        self.history.forget(key)

    def _daemon_set_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("uid") != new["metadata"].get("uid"):
            self._daemon_set_deleted(old)
        self.enqueue(new)

    def _daemon_set_deleted(self, ds: Obj) -> None:
        """A new DaemonSet of the same name must start with clean expectations."""
        self._forget_expectations(object_key(ds))
        self.enqueue(ds)

    def _resolve_controller_ref(self, namespace: str, reference: Obj) -> Obj | None:
        return resolve_controller_ref(self.daemonsets.store, namespace, reference, "DaemonSet")

    def _daemon_sets_for_pod(self, pod: Obj) -> list[Obj]:
        """GetPodDaemonSets: the DaemonSets whose selector matches an orphan pod."""
        labels = pod["metadata"].get("labels") or {}
        return [ds for ds in self.daemonsets.store.list(pod["metadata"].get("namespace", ""))
                if label_selector_from_dict(ds["spec"].get("selector")).matches(labels)]

    def _pod_added(self, pod: Obj) -> None:
        if is_deleting(pod):
            self._pod_deleted(pod)
            return
        reference = controller_of(pod)
        if reference is None:
            for ds in self._daemon_sets_for_pod(pod):
                self.enqueue(ds)
            return
        ds = self._resolve_controller_ref(pod["metadata"].get("namespace", ""), reference)
        if ds is not None:
            self.creations.creation_observed(object_key(ds))
            self.enqueue(ds)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if is_deleting(new):
            self._pod_deleted(new)
            return
        namespace = new["metadata"].get("namespace", "")
        reference, old_reference = controller_of(new), controller_of(old)
        if reference != old_reference and old_reference is not None:
            old_ds = self._resolve_controller_ref(namespace, old_reference)
            if old_ds is not None:
                self.enqueue(old_ds)
        if reference is not None:
            ds = self._resolve_controller_ref(namespace, reference)
            if ds is None:
                return
            self.enqueue(ds)
            min_ready = ds["spec"].get("minReadySeconds") or 0
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(new):
                self.enqueue_after(ds, min_ready + 1)
            return
        labels_changed = old["metadata"].get("labels") != new["metadata"].get("labels")
        if labels_changed or reference != old_reference:
            for ds in self._daemon_sets_for_pod(new):
                self.enqueue(ds)

    def _pod_deleted(self, pod: Obj) -> None:
        reference = controller_of(pod)
        if reference is None:
            return
        ds = self._resolve_controller_ref(pod["metadata"].get("namespace", ""), reference)
        if ds is not None:
            self.deletions.deletion_observed(object_key(ds), pod_key(pod))
            self.enqueue(ds)

    def _revision_changed(self, revision: Obj) -> None:
        """addHistory/updateHistory/deleteHistory: sync the owner (or, for an orphan, the
        DaemonSets that may adopt it)."""
        namespace = revision["metadata"].get("namespace", "")
        reference = controller_of(revision)
        if reference is None:
            for ds in self._daemon_sets_for_pod(revision):
                self.enqueue(ds)
            return
        ds = self._resolve_controller_ref(namespace, reference)
        if ds is not None:
            self.enqueue(ds)

    def _node_added(self, node: Obj) -> None:
        for ds in self.daemonsets.store.list():
            if node_should_run_daemon_pod(node, ds)[0]:
                self.enqueue(ds)

    def _node_updated(self, old: Obj, new: Obj) -> None:
        if should_ignore_node_update(old, new):
            return
        for ds in self.daemonsets.store.list():
            if node_should_run_daemon_pod(old, ds) != node_should_run_daemon_pod(new, ds):
                self.enqueue(ds)

    # -- sync -----------------------------------------------------------------------------------

    def _satisfied(self, key: str) -> bool:
        return self.creations.satisfied(key) and self.deletions.satisfied(key)

    async def sync(self, key: str) -> None:
        """syncDaemonSet: create and delete daemon pods, roll updates, write status."""
        namespace, name = split_key(key)
        ds = self.daemonsets.store.get_by_name(namespace, name)
        if ds is None:
            self._forget_expectations(key)
            return
        if is_deleting(ds):
            return  # its pods are the garbage collector's now; status would be meaningless
        if not self.history.caught_up(ds):
            return  # numbering from this cache could repeat a number; its event queues us
        nodes = self.nodes.store.list()
        current, old = await self._construct_history(ds)
        hash_ = current["metadata"]["labels"][REVISION_HASH_LABEL]
        if not self._satisfied(key):
            # Waiting for the cache to see our last creations/deletions: status only.
            await self._update_status(ds, nodes, hash_, update_observed_generation=False)
            return
        try:
            await self._manage(ds, nodes, hash_)
            if self._satisfied(key):
                if update_strategy_of(ds).get("type") == "RollingUpdate":
                    await self._rolling_update(ds, nodes, hash_)
                await self._cleanup_history(ds, old)
        except Exception:
            await self._update_status_after_failure(ds, nodes, hash_)
            raise
        await self._update_status(ds, nodes, hash_, update_observed_generation=True)

    # -- history ----------------------------------------------------------------------------

    async def _construct_history(self, ds: Obj) -> tuple[Obj, list[Obj]]:
        """constructHistory: the revision of the current template (written or renumbered
        when needed) and the older ones."""
        selector = label_selector_from_dict(ds["spec"].get("selector"))
        data = history.snapshot(ds)
        revisions = await self.history.owned(ds, selector)
        current = [r for r in revisions if history.equal(r, data)]
        old = [r for r in revisions if not history.equal(r, data)]
        number = history.next_number(old)
        if not current:
            return await self._snapshot(ds, number), old
        *duplicates, newest = current  # sorted by number: keep the newest
        for duplicate in duplicates:
            await self.history.delete(duplicate)
        return await self.history.renumber(newest, max(number, newest.get("revision", 0))), old

    async def _snapshot(self, ds: Obj, number: int) -> Obj:
        """snapshot: a new revision named by the template's hash. A revision of that name
        with another template is a hash collision: status.collisionCount goes up and the
        sync is retried with the next hash."""
        collision_count = (ds.get("status") or {}).get("collisionCount")
        hash_ = compute_hash(ds["spec"].get("template") or {}, collision_count)
        revision = history.new_revision(ds, number, hash_, REVISION_HASH_LABEL)
        stored = await self.history.create(revision)
        if stored is not None:
            return stored
        meta = ds["metadata"]
        latest = await self.daemonset_client.get(meta["name"], meta["namespace"])
        if (latest.get("status") or {}).get("collisionCount") == collision_count:
            latest.setdefault("status", {})["collisionCount"] = (collision_count or 0) + 1
            await self.daemonset_client.update_status(latest)
        raise ExpectedSyncError(f"found a stale ControllerRevision for DaemonSet "
                                f"{meta['name']!r}: a hash collision, retrying")

    async def _cleanup_history(self, ds: Obj, old: list[Obj]) -> None:
        """cleanupHistory: delete the oldest revisions beyond revisionHistoryLimit, except
        those whose hash a pod still carries."""
        limit = ds["spec"].get("revisionHistoryLimit", history.DEFAULT_HISTORY_LIMIT)
        excess = len(old) - limit
        if excess <= 0:
            return
        live = {(pod["metadata"].get("labels") or {}).get(REVISION_HASH_LABEL)
                for pods in (await self._nodes_to_daemon_pods(ds)).values() for pod in pods}
        for revision in history.sort_revisions(old):
            if excess <= 0:
                break
            if (revision["metadata"].get("labels") or {}).get(REVISION_HASH_LABEL) in live:
                continue
            await self.history.delete(revision)
            excess -= 1

    async def _nodes_to_daemon_pods(self, ds: Obj) -> dict[str, list[Obj]]:
        """getNodesToDaemonPods: the pods this DaemonSet owns (adopting and releasing by
        selector), grouped by the node they run on or are meant for."""
        selector = label_selector_from_dict(ds["spec"].get("selector"))
        candidates = self.pods.store.list(ds["metadata"].get("namespace", ""))
        owned = await claim(self.pod_client, ds, selector, candidates)
        by_node: dict[str, list[Obj]] = defaultdict(list)
        for pod in owned:
            if pod_phase(pod) in ("Succeeded", "Failed") and is_deleting(pod):
                continue  # finished and going away: nothing left to do with it
            node_name = target_node_name(pod)
            if node_name is not None:
                by_node[node_name].append(pod)
        return by_node

    def _pods_should_be_on_node(self, node: Obj, node_to_pods: dict[str, list[Obj]], ds: Obj,
                                hash_: str) -> tuple[list[str], list[str]]:
        """podsShouldBeOnNode: (nodes needing a pod, pods to delete) for one node."""
        node_name = node["metadata"]["name"]
        should_run, should_continue = node_should_run_daemon_pod(node, ds)
        pods = node_to_pods.get(node_name) or []
        if should_run and not pods:
            return [node_name], []
        if not should_continue:
            return [], [pod["metadata"]["name"] for pod in pods if not is_deleting(pod)]
        to_delete: list[str] = []
        running: list[Obj] = []
        for pod in pods:
            if is_deleting(pod):
                continue
            if pod_phase(pod) == "Failed":
                if self._failed_pod_may_be_deleted(ds, node_name, pod):
                    to_delete.append(pod["metadata"]["name"])
            elif pod_phase(pod) == "Succeeded":
                self.recorder.event(
                    ds, "Normal", SUCCEEDED_DAEMON_POD,
                    f"Found succeeded daemon pod {pod_key(pod)} on node {node_name}, "
                    "will try to delete it")
                to_delete.append(pod["metadata"]["name"])
            else:
                running.append(pod)
        running.sort(key=pod_order)
        if not allows_surge(ds):
            # Without surge a node keeps its oldest pod; a node left with none gets a new
            # one at the next sync, once the deletions are seen.
            to_delete += [pod["metadata"]["name"] for pod in running[1:]]
            return [], to_delete
        if len(running) <= 1:
            return ([node_name] if not running and should_run else []), to_delete
        return [], to_delete + self._surge_excess(ds, running, hash_)

    def _failed_pod_may_be_deleted(self, ds: Obj, node_name: str, pod: Obj) -> bool:
        """A failed daemon pod is deleted (and so replaced), but at most once per backoff
        delay per node: a kubelet that keeps rejecting it must not cause a hot loop."""
        backoff_key = (f"{ds['metadata']['uid']}/"
                       f"{(ds.get('status') or {}).get('observedGeneration', 0)}/{node_name}")
        now = self.now()
        if self.failed_pods_backoff.in_backoff(backoff_key, now):
            self.enqueue_after(ds, self.failed_pods_backoff.delay(backoff_key))
            return False
        self.failed_pods_backoff.next(backoff_key, now)
        self.recorder.event(ds, "Warning", FAILED_DAEMON_POD,
                            f"Found failed daemon pod {pod_key(pod)} on node {node_name}, "
                            "will try to kill it")
        return True

    def _surge_excess(self, ds: Obj, running: list[Obj], hash_: str) -> list[str]:
        """With surge a node may hold one old and one new pod, while the new one becomes
        available; anything beyond that, or the old pod once it is replaceable, goes."""
        generation = template_generation(ds)
        to_delete: list[str] = []
        oldest_new = oldest_old = None
        for pod in running:
            if is_pod_updated(pod, hash_, generation):
                if oldest_new is None:
                    oldest_new = pod
                    continue
            elif oldest_old is None:
                oldest_old = pod
                continue
            to_delete.append(pod["metadata"]["name"])
        if oldest_new is not None and oldest_old is not None:
            min_ready = ds["spec"].get("minReadySeconds") or 0
            if not is_pod_ready(oldest_old) or is_pod_available(oldest_new, min_ready,
                                                                self.now()):
                to_delete.append(oldest_old["metadata"]["name"])
        return to_delete

    async def _manage(self, ds: Obj, nodes: list[Obj], hash_: str) -> None:
        """manage: create pods on nodes that lack one, delete those that must go."""
        node_to_pods = await self._nodes_to_daemon_pods(ds)
        nodes_needing: list[str] = []
        to_delete: list[str] = []
        for node in nodes:
            needing, deleting = self._pods_should_be_on_node(node, node_to_pods, ds, hash_)
            nodes_needing += needing
            to_delete += deleting
        to_delete += unscheduled_pods_without_node(nodes, node_to_pods)
        await self._sync_nodes(ds, to_delete, nodes_needing, hash_)

    async def _sync_nodes(self, ds: Obj, pods_to_delete: list[str], nodes_needing: list[str],
                          hash_: str) -> None:
        """syncNodes: delete the given pods and create daemon pods on the given nodes,
        recording expectations first so a slow cache never causes a second round."""
        key = object_key(ds)
        namespace = ds["metadata"].get("namespace", "")
        create_count = min(len(nodes_needing), BURST_REPLICAS)
        doomed = pods_to_delete[:BURST_REPLICAS]
        self.creations.expect_creations(key, create_count)
        self.deletions.expect_deletions(key, [f"{namespace}/{name}" for name in doomed])
        template = create_pod_template(ds["spec"].get("template") or {},
                                       template_generation(ds), hash_)

        async def create(index: int) -> None:
            pod = pod_from_template(template, ds)
            pod["spec"]["affinity"] = replace_node_name_affinity(
                pod["spec"].get("affinity"), nodes_needing[index])
            try:
                created = await self.pod_client.create(pod, namespace)
            except ClientError as error:
                self.creations.lower_creations(key, 1)
                self.recorder.event(ds, "Warning", "FailedCreate", f"Error creating: {error}")
                raise
            self.recorder.event(ds, "Normal", "SuccessfulCreate",
                                f"Created pod: {created['metadata']['name']}")

        successes, errors = await slow_start_batch(create_count, SLOW_START_INITIAL_BATCH_SIZE,
                                                   create)
        skipped = create_count - successes - len(errors)
        if skipped > 0:
            self.creations.lower_creations(key, skipped)  # retried at the next sync

        async def delete(name: str) -> None:
            try:
                await self.pod_client.delete(name, namespace)
            except NotFound:
                self.deletions.lower_deletion(key, f"{namespace}/{name}")
                return
            except ClientError as error:
                self.deletions.lower_deletion(key, f"{namespace}/{name}")
                self.recorder.event(ds, "Warning", "FailedDelete", f"Error deleting: {error}")
                raise
            self.recorder.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")

        results = await asyncio.gather(*(delete(name) for name in doomed),
                                       return_exceptions=True)
        errors += [result for result in results if isinstance(result, Exception)]
        if errors:
            raise ExpectedSyncError("; ".join(str(error) for error in errors))

    # -- rolling update (update.go) -------------------------------------------------------------

    def _update_counts(self, ds: Obj, nodes: list[Obj], node_to_pods: dict[str, list[Obj]]
                       ) -> tuple[int, int, int]:
        """updatedDesiredNodeCounts: (maxSurge, maxUnavailable, desired); every eligible
        node gets an entry in `node_to_pods`, empty if it has no pod yet."""
        desired = 0
        for node in nodes:
            if node_should_run_daemon_pod(node, ds)[0]:
                desired += 1
                node_to_pods.setdefault(node["metadata"]["name"], [])
        try:
            max_unavailable = unavailable_count(ds, desired)
            max_surge = surge_count(ds, desired)
        except ValueError as error:
            raise ExpectedSyncError(f"invalid rolling update parameters: {error}") from error
        if desired > 0 and max_unavailable == 0 and max_surge == 0:
            max_unavailable = 1  # an impossible configuration: allow unavailability
        return max_surge, max_unavailable, desired

    async def _rolling_update(self, ds: Obj, nodes: list[Obj], hash_: str) -> None:
        """rollingUpdate: delete old pods (or create new ones beside them, with surge)
        within the strategy's limits; the manage loop fills the gaps next time."""
        node_to_pods = dict(await self._nodes_to_daemon_pods(ds))
        max_surge, max_unavailable, desired = self._update_counts(ds, nodes, node_to_pods)
        if max_surge == 0:
            doomed = self._pods_to_replace(ds, node_to_pods, hash_, max_unavailable)
            await self._sync_nodes(ds, doomed, [], hash_)
            return
        doomed, new_nodes = self._surge_targets(ds, node_to_pods, hash_, max_surge, desired)
        await self._sync_nodes(ds, doomed, new_nodes, hash_)

    def _pods_to_replace(self, ds: Obj, node_to_pods: dict[str, list[Obj]], hash_: str,
                         max_unavailable: int) -> list[str]:
        """Without surge: delete unavailable old pods at once, and available old pods while
        fewer than maxUnavailable nodes lack an available pod."""
        generation = template_generation(ds)
        min_ready = ds["spec"].get("minReadySeconds") or 0
        now = self.now()
        unavailable = 0
        replacements: list[str] = []
        candidates: list[str] = []
        for pods in node_to_pods.values():
            new_pod, old_pod, ok = find_updated_pods_on_node(pods, hash_, generation)
            if not ok or (new_pod is None) == (old_pod is None):
                unavailable += 1  # being fixed by the manage loop: count it as missing
            elif new_pod is not None:
                if not is_pod_available(new_pod, min_ready, now):
                    unavailable += 1
            elif old_pod is not None and not is_pod_available(old_pod, min_ready, now):
                replacements.append(old_pod["metadata"]["name"])
                unavailable += 1
            elif old_pod is not None and unavailable < max_unavailable:
                candidates.append(old_pod["metadata"]["name"])
        room = max(0, min(max_unavailable - unavailable, len(candidates)))
        return replacements + candidates[:room]

    def _surge_targets(self, ds: Obj, node_to_pods: dict[str, list[Obj]], hash_: str,
                       max_surge: int, desired: int) -> tuple[list[str], list[str]]:
        """With surge: start a new pod beside an old one on up to maxSurge nodes at a time
        (at once where the old pod is unavailable); delete the old pod once the new one is
        available. Returns (pods to delete, nodes to create a pod on)."""
        generation = template_generation(ds)
        min_ready = ds["spec"].get("minReadySeconds") or 0
        now = self.now()
        doomed: list[str] = []
        not_wanted: list[str] = []  # old pods on nodes the DaemonSet no longer selects
        allowed_nodes: list[str] = []
        candidate_nodes: list[str] = []
        surging = available = 0
        for node_name, pods in node_to_pods.items():
            new_pod, old_pod, ok = find_updated_pods_on_node(pods, hash_, generation)
            if not ok:
                surging += 1
                continue
            counted = old_pod if old_pod is not None else new_pod
            if counted is not None and is_pod_available(counted, min_ready, now):
                available += 1
            if old_pod is None:
                continue
            if new_pod is not None:
                if is_pod_available(new_pod, min_ready, now):
                    doomed.append(old_pod["metadata"]["name"])
                else:
                    surging += 1
                continue
            node = self.nodes.store.get(node_name)
            if node is None:
                raise ExpectedSyncError(f"couldn't get node for nodeName {node_name!r}")
            should_run = node_should_run_daemon_pod(node, ds)[0]
            if not is_pod_available(old_pod, min_ready, now):
                if should_run:
                    allowed_nodes.append(node_name)
                else:
                    doomed.append(old_pod["metadata"]["name"])
            elif not should_run:
                not_wanted.append(old_pod["metadata"]["name"])
            elif surging < max_surge:
                candidate_nodes.append(node_name)
        # Users of maxSurge expect full availability: a pod on a node no longer selected
        # goes only once enough pods elsewhere are available.
        doomed += not_wanted[:max(0, available - desired)]
        room = max(0, min(max_surge - surging, len(candidate_nodes)))
        return doomed, allowed_nodes + candidate_nodes[:room]

    # -- status ---------------------------------------------------------------------------------

    async def _update_status_after_failure(self, ds: Obj, nodes: list[Obj], hash_: str) -> None:
        """After a failed sync the status is still written; its own failure is only logged,
        so the original error is the one retried and reported."""
        try:
            await self._update_status(ds, nodes, hash_, update_observed_generation=True)
        except ClientError as error:
            log.warning("daemonset %s: could not update status: %s", object_key(ds), error)

    async def _update_status(self, ds: Obj, nodes: list[Obj], hash_: str, *,
                             update_observed_generation: bool) -> None:
        """updateDaemonSetStatus: count the daemon pods per node and store the counts
        through /status, only when they changed."""
        node_to_pods = await self._nodes_to_daemon_pods(ds)
        generation = template_generation(ds)
        min_ready = ds["spec"].get("minReadySeconds") or 0
        now = self.now()
        desired = current = misscheduled = ready = updated = available = 0
        for node in nodes:
            should_run = node_should_run_daemon_pod(node, ds)[0]
            pods = sorted(node_to_pods.get(node["metadata"]["name"]) or [], key=pod_order)
            if not should_run:
                misscheduled += 1 if pods else 0
                continue
            desired += 1
            if not pods:
                continue
            current += 1
            oldest = pods[0]
            if is_pod_ready(oldest):
                ready += 1
                if is_pod_available(oldest, min_ready, now):
                    available += 1
            if is_pod_updated(oldest, hash_, generation):
                updated += 1
        counts = {"desiredNumberScheduled": desired, "currentNumberScheduled": current,
                  "numberMisscheduled": misscheduled, "numberReady": ready,
                  "updatedNumberScheduled": updated, "numberAvailable": available,
                  "numberUnavailable": desired - available}
        await self._store_status(ds, counts, update_observed_generation)
        if min_ready > 0 and ready != available:
            self.enqueue_after(ds, min_ready)  # re-check availability once time has passed

    async def _store_status(self, ds: Obj, counts: dict[str, int],
                            update_observed_generation: bool) -> None:
        """storeDaemonSetStatus: PUT /status, retrying once on a conflict with a fresh copy."""
        status = ds.get("status") or {}
        generation = ds["metadata"].get("generation", 0)
        if all(status.get(field, 0) == value for field, value in counts.items()) and (
                status.get("observedGeneration", 0) >= generation):
            return
        target = ds
        for attempt in range(STATUS_UPDATE_RETRIES + 1):
            updated = copy.deepcopy(target)
            new_status = updated.setdefault("status", {})
            new_status.update(counts)
            if update_observed_generation:
                new_status["observedGeneration"] = generation
            try:
                await self.daemonset_client.update_status(updated)
                return
            except Conflict:
                if attempt == STATUS_UPDATE_RETRIES:
                    raise
                meta = ds["metadata"]
                target = await self.daemonset_client.get(meta["name"], meta.get("namespace"))
