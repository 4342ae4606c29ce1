"""The disruption controller: how many pods a PodDisruptionBudget lets evictions take now.

    PDB (selector, minAvailable | maxUnavailable) + its pods --> status:
        expectedPods        how many pods there should be: the pods' controllers' scale
                            (or simply the pods found, for an integer minAvailable)
        desiredHealthy      minAvailable, or expectedPods - maxUnavailable ("50%" of
                            expectedPods, rounded up)
        currentHealthy      pods that are Ready and not being deleted or evicted
        disruptionsAllowed  currentHealthy - desiredHealthy (never below 0; 0 while no
                            pod is expected)
        condition DisruptionAllowed: True/SufficientPods or False/InsufficientPods

The eviction API reads disruptionsAllowed; pods it evicted are listed in disruptedPods
until their deletion shows up (or 2 minutes pass). When a sync fails, the PDB is made
safe: disruptionsAllowed 0, condition reason SyncFailed. Upstream:
pkg/controller/disruption/disruption.go and k8s.io/component-helpers/apps/poddisruptionbudget.
"""

from __future__ import annotations

import copy
import logging
from datetime import datetime, timedelta

from minikube_py.api import Obj
from minikube_py.api.intstr import scaled_value_from_int_or_percent
from minikube_py.api.meta import parse_rfc3339, rfc3339
from minikube_py.api.podutil import is_pod_ready
from minikube_py.api.selectors import SelectorError, label_selector_from_dict
from minikube_py.client.errors import Conflict
from minikube_py.client.informer import EventHandler
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.controller_ref import controller_of, resolve_controller_ref

log = logging.getLogger(__name__)

# DeletionTimeout: how long an evicted pod may take to show its deletion.
DELETION_TIMEOUT = timedelta(minutes=2)
DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT_PODS, INSUFFICIENT_PODS, SYNC_FAILED = "SufficientPods", "InsufficientPods", "SyncFailed"


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _is_kind(reference: Obj, kind: str, groups: tuple[str, ...]) -> bool:
    """verifyGroupKind."""
    return reference.get("kind") == kind and _group(reference.get("apiVersion", "")) in groups


def _go_label_selector(selector: Obj | None) -> str:
    """A *metav1.LabelSelector printed with %v, as upstream's UnmanagedPods event shows it."""
    if selector is None:
        return "nil"
    labels = "".join(f"{key}: {value}," for key, value in sorted(
        (selector.get("matchLabels") or {}).items()))
    expressions = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(e.get('values') or [])}],}},"
        for e in selector.get("matchExpressions") or [])
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}")


def set_status_condition(conditions: list[Obj], new: Obj, now: datetime) -> None:
    """meta.SetStatusCondition: add or update by type; the transition time moves only when
    the status changes."""
    old = next((c for c in conditions if c.get("type") == new["type"]), None)
    if old is None:
        conditions.append({**new, "lastTransitionTime": rfc3339(now)})
        return
    if old.get("status") != new["status"]:
        old["lastTransitionTime"] = rfc3339(now)
    old.update(new)


def disruption_allowed_condition(status: Obj) -> Obj:
    """UpdateDisruptionAllowedCondition: the condition the status's numbers call for."""
    allowed = status.get("disruptionsAllowed", 0) > 0
    condition: Obj = {"type": DISRUPTION_ALLOWED, "status": "True" if allowed else "False",
                      "reason": SUFFICIENT_PODS if allowed else INSUFFICIENT_PODS,
                      "message": ""}
    if status.get("observedGeneration"):
        condition["observedGeneration"] = status["observedGeneration"]
    return condition


def conditions_are_up_to_date(pdb: Obj) -> bool:
    """ConditionsAreUpToDate: the DisruptionAllowed condition matches the current numbers."""
    status = pdb.get("status") or {}
    generation = pdb["metadata"].get("generation", 0)
    condition = next((c for c in status.get("conditions") or []
                      if c.get("type") == DISRUPTION_ALLOWED), None)
    if (condition is None or status.get("observedGeneration", 0) != generation
            or condition.get("observedGeneration", 0) != generation):
        return False
    if status.get("disruptionsAllowed", 0) > 0:
        return condition.get("status") == "True" and condition.get("reason") == SUFFICIENT_PODS
    return condition.get("status") == "False" and condition.get("reason") in (
        INSUFFICIENT_PODS, SYNC_FAILED)


class DisruptionController(Controller):
    """Keep every PodDisruptionBudget's status in step with its pods."""

    name = "disruption"
    event_source = "controllermanager"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.pdbs_api = self.client.resource("poddisruptionbudgets", "policy")
        pdbs = self.informer("poddisruptionbudgets", "policy")
        pods = self.informer("pods")
        self.pdbs = pdbs.store
        self.pods = pods.store
        self.replica_sets = self.informer("replicasets", "apps").store
        self.deployments = self.informer("deployments", "apps").store
        self.stateful_sets = self.informer("statefulsets", "apps").store
        self.watch_own_kind(pdbs)
        pods.add_event_handler(EventHandler(
            on_add=self.pod_changed, on_update=lambda _old, new: self.pod_changed(new),
            on_delete=self.pod_changed))

    def pod_changed(self, pod: Obj) -> None:
        """getPdbForPod: queue the (first) PDB that selects the pod."""
        namespace = pod["metadata"].get("namespace", "")
        labels = pod["metadata"].get("labels") or {}
        matching = []
        for pdb in self.pdbs.list(namespace):
            try:
                selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
            except SelectorError:
                continue
            if selector.matches(labels):
                matching.append(pdb)
        if not matching:
            return
        if len(matching) > 1:
            self.recorder.event(
                pod, "Warning", "MultiplePodDisruptionBudgets",
                f'Pod "{namespace}"/"{pod["metadata"]["name"]}" matches multiple '
                f'PodDisruptionBudgets.  Chose "{matching[0]["metadata"]["name"]}" arbitrarily.')
        self.enqueue(matching[0])

    async def sync(self, key: str) -> None:
        """sync: trySync, and on failure (other than a write conflict) failSafe."""
        pdb = self.pdbs.get(key)
        if pdb is None:
            return
        try:
            await self.try_sync(pdb)
        except Conflict:
            raise  # someone wrote the PDB first: retry, no need to fail safe
        except Exception as error:  # any other failure: no disruption allowed (fail open)
            log.warning("failed to sync PDB %s: %s", key, error)
            await self.fail_safe(pdb, error)

    async def try_sync(self, pdb: Obj) -> None:
        """trySync: count expected, desired and healthy pods; write the status."""
        try:
            pods = self.pods_for_pdb(pdb)
        except SelectorError as error:
            self.recorder.event(pdb, "Warning", "NoPods", f"Failed to get pods: {error}")
            raise
        if not pods:
            self.recorder.event(pdb, "Normal", "NoPods", "No matching pods found")
        try:
            expected, desired_healthy, unmanaged = self.expected_pod_count(pdb, pods)
        except (ValueError, LookupError) as error:
            self.recorder.event(pdb, "Warning", "CalculateExpectedPodCountFailed",
                                f"Failed to calculate the number of expected pods: {error}")
            raise
        if unmanaged:
            self.recorder.event(
                pdb, "Warning", "UnmanagedPods",
                "Pods selected by this PodDisruptionBudget (selector: "
                f"{_go_label_selector((pdb.get('spec') or {}).get('selector'))}) were found to "
                "be unmanaged. As a result, the status of the PDB cannot be calculated "
                "correctly, which may result in undefined behavior. To account for these pods "
                'please set ".spec.minAvailable" field of the PDB to an integer value.')
        now = self.now()
        disrupted, recheck = self.build_disrupted_pod_map(pods, pdb, now)
        healthy = count_healthy_pods(pods, disrupted, now)
        await self.update_pdb_status(pdb, healthy, desired_healthy, expected, disrupted)
        if recheck is not None:
            self.enqueue_after(pdb, (recheck - now).total_seconds())

    def pods_for_pdb(self, pdb: Obj) -> list[Obj]:
        """getPodsForPdb: the namespace's pods the selector matches (an empty selector
        matches all of them, no selector none)."""
        selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
        return [pod for pod in self.pods.list(pdb["metadata"]["namespace"])
                if selector.matches(pod["metadata"].get("labels"))]

    def expected_pod_count(self, pdb: Obj, pods: list[Obj]) -> tuple[int, int, list[str]]:
        """getExpectedPodCount: (expectedCount, desiredHealthy, unmanaged pod names)."""
        spec = pdb.get("spec") or {}
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = self.expected_scale(pods)
            max_unavailable = scaled_value_from_int_or_percent(
                spec["maxUnavailable"], expected, round_up=True)
            return expected, max(expected - max_unavailable, 0), unmanaged
        min_available = spec.get("minAvailable")
        if isinstance(min_available, int):
            return len(pods), min_available, []
        if isinstance(min_available, str):
            expected, unmanaged = self.expected_scale(pods)
            return expected, scaled_value_from_int_or_percent(
                min_available, expected, round_up=True), unmanaged
        return 0, 0, []

    def expected_scale(self, pods: list[Obj]) -> tuple[int, list[str]]:
        """getExpectedScale: the sum of the scales of the pods' controllers (each counted
        once); pods with no controller are returned by name."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            reference = controller_of(pod)
            if reference is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if reference.get("uid") in scales:
                continue
            found = self.controller_and_scale(reference, pod["metadata"]["namespace"])
            if found is None:
                raise LookupError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            uid, scale = found
            scales[uid] = scale
        return sum(scales.values()), unmanaged

    def controller_and_scale(self, reference: Obj, namespace: str) -> tuple[str, int] | None:
        """The finders: a Deployment (through its ReplicaSet), a ReplicaSet of its own, or a
        StatefulSet; (uid, spec.replicas) from the informer caches."""
        if _is_kind(reference, "ReplicaSet", ("apps", "extensions")):
            replica_set = resolve_controller_ref(self.replica_sets, namespace, reference,
                                                  "ReplicaSet")
            if replica_set is None:
                return None
            owner = controller_of(replica_set)
            if owner is None or owner.get("kind") != "Deployment":
                return replica_set["metadata"]["uid"], _replicas(replica_set)
            if not _is_kind(owner, "Deployment", ("apps", "extensions")):
                return None
            deployment = resolve_controller_ref(self.deployments, namespace, owner, "Deployment")
            if deployment is None:
                return None
            return deployment["metadata"]["uid"], _replicas(deployment)
        if _is_kind(reference, "StatefulSet", ("apps",)):
            stateful_set = resolve_controller_ref(self.stateful_sets, namespace, reference,
                                                  "StatefulSet")
            if stateful_set is not None:
                return stateful_set["metadata"]["uid"], _replicas(stateful_set)
        return None

    def build_disrupted_pod_map(self, pods: list[Obj], pdb: Obj, now: datetime
                                ) -> tuple[dict[str, str], datetime | None]:
        """buildDisruptedPodMap: evicted pods still waiting for their deletion, and when to
        look again; an entry older than DeletionTimeout is dropped with a Warning."""
        listed = (pdb.get("status") or {}).get("disruptedPods") or {}
        result: dict[str, str] = {}
        recheck: datetime | None = None
        for pod in pods:
            name = pod["metadata"]["name"]
            if pod["metadata"].get("deletionTimestamp") or name not in listed:
                continue
            expected_deletion = parse_rfc3339(listed[name]) + DELETION_TIMEOUT
            if expected_deletion < now:
                namespace = pdb["metadata"]["namespace"]
                self.recorder.event(
                    pod, "Warning", "NotDeleted",
                    f"Pod was expected by PDB {namespace}/{namespace} to be deleted but it "
                    "wasn't")
            else:
                recheck = expected_deletion if recheck is None else min(recheck,
                                                                        expected_deletion)
                result[name] = listed[name]
        return result, recheck

    async def update_pdb_status(self, pdb: Obj, healthy: int, desired_healthy: int,
                                expected: int, disrupted: dict[str, str]) -> None:
        """updatePdbStatus: write the numbers and the condition through /status if changed."""
        allowed = healthy - desired_healthy
        if expected <= 0 or allowed <= 0:
            allowed = 0  # safe until the first sync that sees pods
        status = pdb.get("status") or {}
        generation = pdb["metadata"].get("generation", 0)
        if (status.get("currentHealthy") == healthy
                and status.get("desiredHealthy") == desired_healthy
                and status.get("expectedPods") == expected
                and status.get("disruptionsAllowed") == allowed
                and (status.get("disruptedPods") or {}) == disrupted
                and status.get("observedGeneration", 0) == generation
                and conditions_are_up_to_date(pdb)):
            return
        new_status: Obj = {"currentHealthy": healthy, "desiredHealthy": desired_healthy,
                           "expectedPods": expected, "disruptionsAllowed": allowed}
        if disrupted:
            new_status["disruptedPods"] = disrupted
        if generation:
            new_status["observedGeneration"] = generation
        new_status["conditions"] = copy.deepcopy(status.get("conditions") or [])
        set_status_condition(new_status["conditions"], disruption_allowed_condition(new_status),
                             self.now())
        await self.pdbs_api.update_status({**pdb, "status": new_status})

    async def fail_safe(self, pdb: Obj, error: Exception) -> None:
        """failSafe: when the numbers cannot be computed, allow no disruption at all."""
        status = copy.deepcopy(pdb.get("status") or {})
        status["disruptionsAllowed"] = 0
        condition: Obj = {"type": DISRUPTION_ALLOWED, "status": "False", "reason": SYNC_FAILED,
                          "message": str(error)}
        if status.get("observedGeneration"):
            condition["observedGeneration"] = status["observedGeneration"]
        set_status_condition(status.setdefault("conditions", []), condition, self.now())
        await self.pdbs_api.update_status({**pdb, "status": status})


def _replicas(obj: Obj) -> int:
    replicas = (obj.get("spec") or {}).get("replicas")
    return replicas if isinstance(replicas, int) else 1


def count_healthy_pods(pods: list[Obj], disrupted: dict[str, str], now: datetime) -> int:
    """countHealthyPods: Ready pods, not being deleted and not just evicted."""
    healthy = 0
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        evicted_at = disrupted.get(pod["metadata"]["name"])
        if evicted_at is not None and parse_rfc3339(evicted_at) + DELETION_TIMEOUT > now:
            continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy
