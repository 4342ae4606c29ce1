"""DefaultPreemption (upstream plugins/defaultpreemption and framework/preemption):
PostFilter: when no node fits the pod, evict lower-priority pods where that costs the
least, and nominate that node for the pod.

    Preempt(pod)
      1. eligible?     not with preemptionPolicy Never, nor while the victims of an earlier
                       preemption are still terminating on the node it was nominated to
      2. candidates    only nodes whose filters said Unschedulable (UnschedulableAndUnresolvable
                       means evicting cannot help); starting at a random node, dry-run
                       SelectVictimsOnNode on a copy of each until enough candidates are found
      3. pick one      fewest PodDisruptionBudget violations, then the lowest highest-victim
                       priority, the smallest priority sum, the fewest victims, the latest
                       start of the most important victims, then the first
      4. prepare       each victim gets the DisruptionTarget condition and is deleted
                       (gracefully); lower-priority pods nominated to that node lose it
      5. nominate      the scheduler records status.nominatedNodeName; the pod is retried
                       once the victims are gone, and finds the room kept for it
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minikube_py.api import Obj
from minikube_py.api.meta import now, parse_rfc3339, rfc3339
from minikube_py.api.selectors import LabelSelector, SelectorError, label_selector_from_dict
from minikube_py.api.validation import FieldError, invalid
from minikube_py.client.errors import ClientError, NotFound
from minikube_py.scheduler.framework.interface import (
    SUCCESS,
    ClusterEvent,
    Code,
    CycleState,
    PluginArgsError,
    PostFilterPlugin,
    PostFilterResult,
    Status,
)
from minikube_py.scheduler.framework.runtime import pod_priority
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo
from minikube_py.scheduler.scheduler import FitError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from minikube_py.client.informer import SharedInformer
    from minikube_py.scheduler.framework.handle import Handle

log = logging.getLogger(__name__)

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


@dataclass
class Candidate:
    """A node where the pod fits once `victims` are gone (most important victim first)."""

    name: str
    victims: list[Obj]
    num_pdb_violations: int


class DefaultPreemption(PostFilterPlugin):
    """PostFilter: evict the cheapest set of lower-priority pods that makes the pod fit."""

    name = "DefaultPreemption"

    def __init__(self, args: Obj | None = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        percentage = self.args.get("minCandidateNodesPercentage")
        absolute = self.args.get("minCandidateNodesAbsolute")
        self.min_candidate_nodes_percentage: int = (
            DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE if percentage is None else percentage)
        self.min_candidate_nodes_absolute: int = (
            DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE if absolute is None else absolute)
        errors = validate_default_preemption_args(self.min_candidate_nodes_percentage,
                                                  self.min_candidate_nodes_absolute)
        if errors:
            raise PluginArgsError([str(error) for error in errors])
        self.random = random.Random()
        # Registered now, so that the scheduler starts them with its other informers.
        self._pods: SharedInformer | None = None
        self._pdbs: SharedInformer | None = None
        if handle is not None and handle.informers is not None:
            self._pods = handle.informers.informer("pods")
            self._pdbs = handle.informers.informer("poddisruptionbudgets", "policy")

    def events_to_register(self) -> list[ClusterEvent]:
        """None: this plugin never rejects a pod, so no event needs to bring one back."""
        return []

    def _handle(self) -> Handle:
        assert self.handle is not None, "DefaultPreemption needs the framework handle"
        return self.handle

    # -- PostFilter ----------------------------------------------------------------------------

    async def post_filter(self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status]
                          ) -> tuple[PostFilterResult | None, Status]:
        """PostFilter: preempt; a failure's message reads "preemption: <why>"."""
        result, status = await self.preempt(state, pod, statuses)
        if status.message():
            status = Status(status.code, [f"preemption: {status.message()}"])
        return result, status

    async def preempt(self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status]
                      ) -> tuple[PostFilterResult | None, Status]:
        """Evaluator.Preempt: steps 1 to 5 above. A result of None leaves the pod's
        nomination as it is; PostFilterResult("") clears it."""
        latest = self._pods.store.get(pod.key) if self._pods is not None else pod.pod
        if latest is None:
            return None, Status.error(f'pod "{pod.name}" not found')
        pod = PodInfo.of(latest)
        nominated = (latest.get("status") or {}).get("nominatedNodeName", "")
        eligible, why = self.pod_eligible_to_preempt_others(
            pod, statuses.get(nominated, _absent_node_status()))
        if not eligible:
            return None, Status(Code.UNSCHEDULABLE, [why])
        all_nodes = self._handle().snapshot().node_info_list
        if not all_nodes:
            return None, Status.error("no nodes available")
        candidates, node_statuses, errors = self.find_candidates(state, pod, all_nodes,
                                                                 statuses)
        if errors and not candidates:
            return None, Status.error(_aggregate(errors))
        if not candidates:
            for info in all_nodes:
                node_statuses.setdefault(info.name, Status.unschedulable(
                    NOT_HELPFUL, unresolvable=True))
            fit = FitError(pod, len(all_nodes), node_statuses)
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, [fit.message()])
        best = pick_one_node_for_preemption(candidates)
        status = await self.prepare_candidate(best, pod)
        if not status.is_success():
            return None, status
        return PostFilterResult(best.name), SUCCESS

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_node_status: Status
                                       ) -> tuple[bool, str]:
        """PodEligibleToPreemptOthers: (may the pod preempt, and if not, why)."""
        if (pod.pod.get("spec") or {}).get("preemptionPolicy") == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = (pod.pod.get("status") or {}).get("nominatedNodeName", "")
        if not nominated or nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        info = self._handle().snapshot().get(nominated)
        if info is not None:
            priority = pod_priority(pod.pod)
            for other in info.pods:
                if pod_priority(other.pod) < priority and terminating_by_preemption(other.pod):
                    return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    # -- finding candidates --------------------------------------------------------------------

    def find_candidates(self, state: CycleState, pod: PodInfo, all_nodes: list[NodeInfo],
                        statuses: Mapping[str, Status]
                        ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """findCandidates: dry-run preemption on the nodes evicting pods could help."""
        potential = [info for info in all_nodes if info.name in statuses
                     and statuses[info.name].code == Code.UNSCHEDULABLE]
        if not potential:
            return [], {}, []
        pdbs = self._pdbs.store.list() if self._pdbs is not None else []
        offset, wanted = self.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, wanted)

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """minCandidateNodesPercentage of the nodes, at least minCandidateNodesAbsolute,
        at most all of them."""
        wanted = num_nodes * self.min_candidate_nodes_percentage // 100
        return min(max(wanted, self.min_candidate_nodes_absolute), num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """Where the dry run starts (at random, to spread preemption over the cluster), and
        how many candidates it looks for."""
        return self.random.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def dry_run_preemption(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo],
                           pdbs: list[Obj], offset: int, wanted: int
                           ) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """DryRunPreemption: SelectVictimsOnNode on a copy of each node (and of the cycle
        state) from `offset` round the list, until `wanted` candidates are found with at
        least one that violates no PodDisruptionBudget. Those come first in the result."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[str, Status] = {}
        errors: list[str] = []
        for index in range(len(nodes)):
            info = nodes[(offset + index) % len(nodes)].clone()
            victims, num_violations, status = self.select_victims_on_node(
                state.clone(), pod, info, pdbs)
            if status.is_success() and victims:
                found = violating if num_violations else non_violating
                if len(found) < wanted:
                    found.append(Candidate(info.name, [v.pod for v in victims],
                                           num_violations))
                if non_violating and len(non_violating) + len(violating) >= wanted:
                    break
                continue
            if status.is_success():
                status = Status.error(f'expected at least one victim pod on node "{info.name}"')
            if status.code == Code.ERROR:
                errors.append(status.message())
            statuses[info.name] = status
        return non_violating + violating, statuses, errors

    def select_victims_on_node(self, state: CycleState, pod: PodInfo, node_info: NodeInfo,
                               pdbs: list[Obj]) -> tuple[list[PodInfo], int, Status]:
        """SelectVictimsOnNode: remove every lower-priority pod; if the pod then fits, put
        back ("reprieve") as many as still let it fit: first those a PodDisruptionBudget
        protects, then the others, each group from the most important down. Returns the
        victims (most important first), how many of them violate a budget, and a status.
        `state` and `node_info` are copies this changes."""
        handle = self._handle()
        priority = pod_priority(pod.pod)
        potential = [p for p in node_info.pods if pod_priority(p.pod) < priority]
        if not potential:
            return [], 0, Status.unschedulable(NO_VICTIMS, unresolvable=True)
        for victim in potential:
            status = self._remove(state, pod, victim, node_info)
            if not status.is_success():
                return [], 0, status
        nominated = handle.nominated_pods_for_node(node_info.name)
        status = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info, nominated)
        if not status.is_success():
            return [], 0, status
        potential.sort(key=importance)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0
        for group in (violating, non_violating):
            for candidate in group:
                node_info.add_pod(candidate)
                status = handle.run_pre_filter_extension_add_pod(state, pod, candidate,
                                                                 node_info)
                if not status.is_success():
                    return [], 0, Status.error(status.message())
                if handle.run_filter_plugins_with_nominated_pods(
                        state, pod, node_info, nominated).is_success():
                    continue
                status = self._remove(state, pod, candidate, node_info)
                if not status.is_success():
                    return [], 0, status
                victims.append(candidate)
                if group is violating:
                    num_violating += 1
        if violating and non_violating:
            victims.sort(key=importance)
        return victims, num_violating, SUCCESS

    def _remove(self, state: CycleState, pod: PodInfo, victim: PodInfo, node_info: NodeInfo
                ) -> Status:
        node_info.remove_pod(victim.pod)
        status = self._handle().run_pre_filter_extension_remove_pod(state, pod, victim,
                                                                    node_info)
        return SUCCESS if status.is_success() else Status.error(status.message())

    # -- acting on the chosen node ---------------------------------------------------------------

    async def prepare_candidate(self, candidate: Candidate, pod: PodInfo) -> Status:
        """prepareCandidate: preempt every victim not already terminating (all at once; the
        first failure stops the rest), then clear the nomination of lower-priority pods
        nominated to the node: they may no longer fit, and should look elsewhere."""
        failures: list[Exception] = []
        try:
            async with asyncio.TaskGroup() as group:
                for victim in candidate.victims:
                    if not (victim.get("metadata") or {}).get("deletionTimestamp"):
                        group.create_task(self.preempt_pod(candidate, pod, victim))
        except* ClientError as failed:
            failures = list(failed.exceptions)
        if failures:
            return Status.error(str(failures[0]))
        await self._clear_lower_priority_nominations(candidate.name, pod)
        return SUCCESS

    async def preempt_pod(self, candidate: Candidate, preemptor: PodInfo, victim: Obj) -> None:
        """PreemptPod: reject a victim still waiting at Permit; otherwise mark it with the
        DisruptionTarget condition and delete it (with its grace period). Then a
        `Preempted` Event on the victim."""
        handle = self._handle()
        meta = victim["metadata"]
        waiting = handle.waiting_pods.get(meta.get("uid", ""))
        if waiting is not None:
            waiting.reject(self.name, "preempted")
        else:
            pods = handle.client.resource("pods")
            scheduler_name = (preemptor.pod.get("spec") or {}).get("schedulerName", "")
            condition: Obj = {
                "type": DISRUPTION_TARGET, "status": "True", "reason": PREEMPTION_BY_SCHEDULER,
                "message": f"{scheduler_name}: preempting to accommodate a higher priority pod",
            }
            if meta.get("generation"):
                condition["observedGeneration"] = meta["generation"]
            updated = _updated_condition(victim, condition)
            try:
                if updated is not None:
                    await pods.patch(meta["name"], {"status": {"conditions": [updated]}},
                                     meta["namespace"], patch_type="strategic",
                                     subresource="status")
                await pods.delete(meta["name"], meta["namespace"])
            except NotFound:
                return  # the victim is gone already
        handle.recorder.event(
            {"kind": "Pod", "apiVersion": "v1", **victim}, "Normal", "Preempted",
            f"Preempted by pod {preemptor.uid} on node {candidate.name}")

    async def _clear_lower_priority_nominations(self, node_name: str, pod: PodInfo) -> None:
        """clearNominatedNodeName for getLowerPriorityNominatedPods (failures are logged:
        the preemption itself succeeded)."""
        handle = self._handle()
        priority = pod_priority(pod.pod)
        for other in handle.nominated_pods_for_node(node_name):
            if pod_priority(other.pod) >= priority:
                continue
            current = (self._pods.store.get(other.key) if self._pods is not None
                       else None) or other.pod
            if not (current.get("status") or {}).get("nominatedNodeName"):
                continue
            try:
                await handle.client.resource("pods").patch(
                    other.name, {"status": {"nominatedNodeName": None}}, other.namespace,
                    patch_type="strategic", subresource="status")
            except ClientError as error:
                log.warning("could not clear the nominatedNodeName of pod %s: %s", other.key,
                            error)


# -- the pure parts: args, PodDisruptionBudgets, importance, choosing a node ---------------------


def validate_default_preemption_args(percentage: Any, absolute: Any) -> list[FieldError]:
    """ValidateDefaultPreemptionArgs."""
    errors = []
    if not _is_int(percentage) or not 0 <= percentage <= 100:
        errors.append(invalid("minCandidateNodesPercentage", percentage,
                              "not in valid range [0, 100]"))
    if not _is_int(absolute) or absolute < 0:
        errors.append(invalid("minCandidateNodesAbsolute", absolute,
                              "not in valid range [0, inf)"))
    if percentage == 0 and absolute == 0:
        errors += [
            invalid("minCandidateNodesPercentage", percentage,
                    "cannot be zero at the same time as minCandidateNodesAbsolute"),
            invalid("minCandidateNodesAbsolute", absolute,
                    "cannot be zero at the same time as minCandidateNodesPercentage"),
        ]
    return errors


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def filter_pods_with_pdb_violation(pods: list[PodInfo], pdbs: list[Obj]
                                   ) -> tuple[list[PodInfo], list[PodInfo]]:
    """filterPodsWithPDBViolation: split `pods` (order kept) into those whose eviction
    would break a PodDisruptionBudget and the others. Each budget's disruptionsAllowed is
    counted down as the pods it selects are taken in order; a pod breaks it once the count
    falls below zero. A pod already in the budget's disruptedPods is not counted again."""
    allowed = [int((pdb.get("status") or {}).get("disruptionsAllowed") or 0) for pdb in pdbs]
    selectors = [_pdb_selector(pdb) for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        labels = (pod.pod.get("metadata") or {}).get("labels") or {}
        violated = False
        for index, pdb in enumerate(pdbs if labels else []):
            selector = selectors[index]
            if (pdb.get("metadata") or {}).get("namespace") != pod.namespace or (
                    selector is None or selector.empty() or not selector.matches(labels)):
                continue
            if pod.name in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                continue
            allowed[index] -= 1
            violated = violated or allowed[index] < 0
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def _pdb_selector(pdb: Obj) -> LabelSelector | None:
    """The budget's selector; an invalid one selects nothing."""
    try:
        return label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
    except SelectorError:
        return None


def pod_start_time(pod: Obj) -> float:
    """GetPodStartTime as a timestamp: status.startTime; a pod not started yet counts as
    starting now, later than every pod that has."""
    started = (pod.get("status") or {}).get("startTime")
    return parse_rfc3339(started).timestamp() if started else math.inf


def importance(pod: PodInfo) -> tuple[int, float]:
    """A sort key for MoreImportantPod: higher priority first, then the longer running."""
    return -pod_priority(pod.pod), pod_start_time(pod.pod)


def terminating_by_preemption(pod: Obj) -> bool:
    """podTerminatingByPreemption: being deleted because a scheduler preempted it."""
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == DISRUPTION_TARGET:
            return (condition.get("status") == "True"
                    and condition.get("reason") == PREEMPTION_BY_SCHEDULER)
    return False


def pick_one_node_for_preemption(candidates: list[Candidate]) -> Candidate:
    """pickOneNodeForPreemption: each criterion keeps the candidates that score best on
    it; the first criterion that leaves one decides, and if none does, the first wins."""

    def fewest_pdb_violations(c: Candidate) -> float:
        return -c.num_pdb_violations

    def lowest_highest_priority(c: Candidate) -> float:
        return -pod_priority(c.victims[0])

    def smallest_priority_sum(c: Candidate) -> float:
        # Shifted to be positive, so that more pods of a negative priority cost more.
        return -sum(pod_priority(v) + 2 ** 31 for v in c.victims)

    def fewest_victims(c: Candidate) -> float:
        return -len(c.victims)

    def latest_start_time(c: Candidate) -> float:
        return earliest_start_of_most_important(c.victims)

    remaining = candidates
    for score in (fewest_pdb_violations, lowest_highest_priority, smallest_priority_sum,
                  fewest_victims, latest_start_time):
        best = max(score(c) for c in remaining)
        remaining = [c for c in remaining if score(c) == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def earliest_start_of_most_important(victims: list[Obj]) -> float:
    """GetEarliestPodStartTime: among the victims of the highest priority, the earliest
    start."""
    top = max(pod_priority(v) for v in victims)
    return min(pod_start_time(v) for v in victims if pod_priority(v) == top)


def _updated_condition(pod: Obj, condition: Obj) -> Obj | None:
    """UpdatePodCondition: the condition to write, with a lastTransitionTime that moves
    only when the status does; None when the pod has exactly that condition already."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    old = next((c for c in conditions if c.get("type") == condition["type"]), None)
    moment = rfc3339(now())
    if old is not None and old.get("status") == condition["status"]:
        moment = old.get("lastTransitionTime") or moment
    updated = {**condition, "lastTransitionTime": moment}
    if old is not None and all(old.get(key) == updated.get(key) for key in (
            "status", "reason", "message", "lastProbeTime", "lastTransitionTime",
            "observedGeneration")):
        return None
    return updated


def _absent_node_status() -> Status:
    """The status of a node the filters did not report on (NodeToStatus's default)."""
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


def _aggregate(errors: list[str]) -> str:
    """utilerrors.NewAggregate: one error as is, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
