"""The framework runtime: one profile's plugins, called at each extension point in order
(upstream framework/runtime/framework.go).

A profile lists, per extension point, which plugins run (and, for Score, with what
weight). The runtime calls them in that order and combines their answers:

    Filter:   the first plugin that rejects a node decides (others are not asked)
    Score:    sum over plugins of weight x normalized score
    Reserve:  all; if one fails, every plugin's Unreserve runs in reverse order
    Permit:   any Deny rejects; any Wait holds the pod (up to the longest timeout)
    Bind:     the first plugin that does not Skip binds
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from minikube_py.api import Obj
from minikube_py.scheduler.framework.equivalence import EquivalenceCache
from minikube_py.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SUCCESS,
    BindPlugin,
    Code,
    CycleState,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
)
from minikube_py.scheduler.framework.node_to_status import NodeToStatus
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo, Snapshot

if TYPE_CHECKING:
    from minikube_py.client.events import EventRecorder
    from minikube_py.client.informer import SharedInformerFactory
    from minikube_py.client.rest import Client
    from minikube_py.scheduler.framework.handle import PodNominator

ObserveDuration = Callable[[str, str, float], None]  # (extension point, status, seconds)


@dataclass
class ExtensionPoints:
    """A profile's plugins at each extension point, in the order they run (the profile's
    `plugins.queueSort`, `plugins.preFilter`, ... once profile.py has resolved them)."""

    queue_sort: list[QueueSortPlugin] = field(default_factory=list)
    pre_filter: list[PreFilterPlugin] = field(default_factory=list)
    filter: list[FilterPlugin] = field(default_factory=list)
    post_filter: list[PostFilterPlugin] = field(default_factory=list)
    pre_score: list[PreScorePlugin] = field(default_factory=list)
    score: list[ScorePlugin] = field(default_factory=list)
    reserve: list[ReservePlugin] = field(default_factory=list)
    permit: list[PermitPlugin] = field(default_factory=list)
    pre_bind: list[PreBindPlugin] = field(default_factory=list)
    bind: list[BindPlugin] = field(default_factory=list)
    post_bind: list[PostBindPlugin] = field(default_factory=list)

    def all_plugins(self) -> list[Plugin]:
        """Every plugin, once for each extension point it runs at."""
        return [plugin for point in fields(self) for plugin in getattr(self, point.name)]


@dataclass
class WaitingPod:
    """A pod held at Permit: the plugins that still have to allow it, and its deadline."""

    pod: PodInfo
    node_name: str
    pending: set[str]
    decided: asyncio.Future[Status] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())

    def allow(self, plugin: str) -> None:
        self.pending.discard(plugin)
        if not self.pending and not self.decided.done():
            self.decided.set_result(SUCCESS)

    def reject(self, plugin: str, message: str) -> None:
        if not self.decided.done():
            self.decided.set_result(Status(Code.UNSCHEDULABLE, [message], plugin))


class Framework:
    """One scheduling profile: its plugins by extension point, and how to run them."""

    def __init__(self, profile_name: str, plugins: ExtensionPoints,
                 score_weights: dict[str, int], *, client: Client | None = None,
                 informers: SharedInformerFactory | None = None,
                 recorder: EventRecorder | None = None,
                 percentage_of_nodes_to_score: int = 0,
                 observe: ObserveDuration | None = None) -> None:
        self.profile_name = profile_name
        self.plugins = plugins
        self.score_weights = score_weights
        self.client = client
        self.informers = informers
        self.recorder = recorder
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self._observe = observe
        self._snapshot = Snapshot()
        self.waiting_pods: dict[str, WaitingPod] = {}
        self.pod_nominator: PodNominator | None = None  # the scheduling queue
        self.equivalence = EquivalenceCache()

    # -- the Handle plugins see ------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def set_snapshot(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """PodNominator.NominatedPodsForNode: the pods preemption nominated to this node."""
        if self.pod_nominator is None:
            return []
        return self.pod_nominator.nominated_pods_for_node(node_name)

    def record_duration(self, point: str, started: float, status: Status) -> None:
        if self._observe is not None:
            self._observe(point, status.code.name.title(), time.perf_counter() - started)

    # -- QueueSort ----------------------------------------------------------------------------

    def queue_sort_less(self) -> Callable[[Any, Any], bool]:
        sorters = self.plugins.queue_sort
        if len(sorters) != 1:
            raise ValueError(f"profile {self.profile_name}: exactly one queueSort plugin "
                             f"is required, got {len(sorters)}")
        return sorters[0].less

    # -- the scheduling cycle -----------------------------------------------------------------

    def run_pre_filter_plugins(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                               ) -> tuple[PreFilterResult | None, Status]:
        """Every PreFilter; their node sets intersect; a rejection ends the cycle."""
        started = time.perf_counter()
        result: PreFilterResult | None = None
        for plugin in self.plugins.pre_filter:
            plugin_result, status = plugin.pre_filter(state, pod, nodes)
            if status.is_skip():
                state.skip_filter_plugins.add(plugin.name)
                continue
            if not status.is_success():
                status.with_plugin(plugin.name)
                self.record_duration("PreFilter", started, status)
                return None, status
            if plugin_result is not None and plugin_result.node_names is not None:
                if result is None or result.node_names is None:
                    result = PreFilterResult(set(plugin_result.node_names))
                else:
                    result.node_names &= plugin_result.node_names
                result.plugins.append(plugin.name)
                if not result.node_names:
                    status = Status.unschedulable(
                        f"node(s) didn't satisfy plugin(s) [{', '.join(result.plugins)}]",
                        unresolvable=True).with_plugin(plugin.name)
                    self.record_duration("PreFilter", started, status)
                    return result, status
        self.record_duration("PreFilter", started, SUCCESS)
        return result, SUCCESS

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node_info: NodeInfo
                           ) -> Status:
        """Filter one node: the first plugin that says no decides."""
        for plugin in self.plugins.filter:
            if plugin.name in state.skip_filter_plugins:
                continue
            status = plugin.filter(state, pod, node_info)
            if status.code:  # anything but Code.SUCCESS (0): this node is out
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_filter_plugins_on_nodes(self, state: CycleState, pod: PodInfo,
                                    nodes: list[NodeInfo]
                                    ) -> tuple[list[NodeInfo], NodeToStatus]:
        """Filter many nodes: each plugin is asked about the nodes every plugin before it
        let through. (the nodes that fit, in order; the status of each node that is out,
        kept as the plugins handed them back: framework/node_to_status.py)

        The verdicts of the node-local Filters that come first (in the default profile,
        all but PodTopologySpread and InterPodAffinity) are remembered for the next pod
        with the same spec (framework/equivalence.py). The nodes are NodeInfos of the
        snapshot set for this cycle (set_snapshot), as the scheduler hands them out."""
        plugins = [plugin for plugin in self.plugins.filter
                   if plugin.name not in state.skip_filter_plugins]
        local = 0
        while local < len(plugins) and plugins[local].node_local:
            local += 1
        if not local:
            return self._filter_nodes(plugins, state, pod, nodes)
        first, rest = plugins[:local], plugins[local:]
        snapshot = self._snapshot if self._snapshot.changes is not None else None
        nodes, remembered = self.equivalence.filter(
            (pod.spec_key(), tuple(plugin.name for plugin in first)), nodes,
            lambda unknown: self._filter_nodes(first, state, pod, unknown), snapshot)
        rejected = NodeToStatus(remembered)
        if rest and nodes:
            nodes, rejected_later = self._filter_nodes(rest, state, pod, nodes)
            rejected.update(rejected_later)
        return nodes, rejected

    @staticmethod
    def _filter_nodes(plugins: list[FilterPlugin], state: CycleState, pod: PodInfo,
                      nodes: list[NodeInfo]) -> tuple[list[NodeInfo], NodeToStatus]:
        rejected = NodeToStatus()
        for plugin in plugins:
            if not nodes:
                break
            nodes, out = plugin.filter_nodes_split(state, pod, nodes)
            if out:
                # (the plugin's dict or runs, kept as they are: no copy of thousands)
                part = out if isinstance(out, NodeToStatus) else NodeToStatus(out)
                for status in part.distinct_statuses():
                    status.with_plugin(plugin.name)  # a status shared by nodes, named once
                rejected.update(part)
        return nodes, rejected

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo,
                                         to_add: PodInfo, node_info: NodeInfo) -> Status:
        for plugin in self.plugins.pre_filter:
            if plugin.name in state.skip_filter_plugins:
                continue
            status = plugin.add_pod(state, pod, to_add, node_info)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo,
                                            to_remove: PodInfo, node_info: NodeInfo
                                            ) -> Status:
        for plugin in self.plugins.pre_filter:
            if plugin.name in state.skip_filter_plugins:
                continue
            status = plugin.remove_pod(state, pod, to_remove, node_info)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: PodInfo,
                                               node_info: NodeInfo,
                                               nominated: list[PodInfo]) -> Status:
        """Filter as if the pods nominated to this node (by preemption) with a priority
        at least the pod's were already there, so they keep the room made for them."""
        priority = pod_priority(pod.pod)
        higher = [p for p in nominated if pod_priority(p.pod) >= priority and p.uid != pod.uid]
        if not higher:
            return self.run_filter_plugins(state, pod, node_info)
        state_with = state.clone()
        info_with = node_info.clone()
        for other in higher:
            info_with.add_pod(other)
            status = self.run_pre_filter_extension_add_pod(state_with, pod, other, info_with)
            if not status.is_success():
                return status
        status = self.run_filter_plugins(state_with, pod, info_with)
        if not status.is_success():
            return status
        return self.run_filter_plugins(state, pod, node_info)

    async def run_post_filter_plugins(self, state: CycleState, pod: PodInfo,
                                      statuses: Mapping[str, Status]
                                      ) -> tuple[PostFilterResult | None, Status]:
        """PostFilter (preemption): the first plugin that finds a way out wins."""
        started = time.perf_counter()
        reasons: list[str] = []
        for plugin in self.plugins.post_filter:
            result, status = await plugin.post_filter(state, pod, statuses)
            if status.is_success():
                self.record_duration("PostFilter", started, status)
                return result, status
            if status.code == Code.ERROR:
                self.record_duration("PostFilter", started, status)
                return None, status.with_plugin(plugin.name)
            reasons += status.reasons
        status = Status(Code.UNSCHEDULABLE, reasons)
        self.record_duration("PostFilter", started, status)
        return None, status

    def run_pre_score_plugins(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                              ) -> Status:
        started = time.perf_counter()
        for plugin in self.plugins.pre_score:
            status = plugin.pre_score(state, pod, nodes)
            if status.is_skip():
                state.skip_score_plugins.add(plugin.name)
            elif not status.is_success():
                self.record_duration("PreScore", started, status)
                return status.with_plugin(plugin.name)
        self.record_duration("PreScore", started, SUCCESS)
        return SUCCESS

    def run_score_plugins(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo],
                          by_plugin: dict[str, list[int]] | None = None
                          ) -> tuple[dict[str, int], Status]:
        """Score every node with every Score plugin, normalize, weight, and sum.

        Node-local plugins' raw scores are remembered for the next pod with the same spec
        (framework/equivalence.py); for those that do not normalize, so is their weighted
        sum. Given `by_plugin` (the scheduler does when a trace records the decision), it
        is filled with each plugin's weighted score per node, in the order of `nodes`: the
        numbers the sum is made of, kept rather than computed again."""
        started = time.perf_counter()
        plugins = [plugin for plugin in self.plugins.score
                   if plugin.name not in state.skip_score_plugins]
        names = [info.name for info in nodes]
        totals, remembered, status = self._node_local_scores(state, pod, nodes, names,
                                                             plugins, by_plugin)
        if status.code:  # anything but Code.SUCCESS (0)
            self.record_duration("Score", started, status)
            return {}, status
        same_for_all = 0  # what plugins gave every node alike, added at the end
        for plugin in plugins:
            if plugin.node_local and not _normalizes(plugin):
                continue  # already in totals
            if plugin.name in remembered:
                scores = remembered[plugin.name]
            else:
                scores, status = plugin.score_nodes(state, pod, nodes)
                if status.code:  # anything but Code.SUCCESS (0)
                    status = status.with_plugin(plugin.name)
                    break
            status = self._check_scores(state, pod, plugin, names, scores)
            if status.code:
                break
            weight = self.score_weights.get(plugin.name, 1)
            if by_plugin is not None:
                by_plugin[plugin.name] = [score * weight for score in scores]
            if scores and min(scores) == max(scores):
                same_for_all += scores[0] * weight
            else:
                totals = [total + score * weight for total, score in zip(totals, scores,
                                                                          strict=True)]
        self.record_duration("Score", started, status)
        if status.code:
            return {}, status
        if same_for_all:
            totals = [total + same_for_all for total in totals]
        if by_plugin is not None:  # in the profile's order
            ordered = {plugin.name: by_plugin[plugin.name] for plugin in plugins}
            by_plugin.clear()
            by_plugin.update(ordered)
        return dict(zip(names, totals, strict=True)), SUCCESS

    def _check_scores(self, state: CycleState, pod: PodInfo, plugin: ScorePlugin,
                      names: list[str], scores: list[int]) -> Status:
        """NormalizeScore (in place), then check every score is within [0, 100]."""
        if _normalizes(plugin):
            by_name = dict(zip(names, scores, strict=True))
            status = plugin.normalize_score(state, pod, by_name)
            if status is not None and not status.is_success():
                return status.with_plugin(plugin.name)
            scores[:] = by_name.values()  # scores is the caller's own list
        if scores and not MIN_NODE_SCORE <= min(scores) <= max(scores) <= MAX_NODE_SCORE:
            invalid = next(s for s in scores if not MIN_NODE_SCORE <= s <= MAX_NODE_SCORE)
            return Status.error(f"plugin {plugin.name!r} returns an invalid score {invalid}, "
                                "it should in the range of [0, 100] after normalizing")
        return SUCCESS

    def _node_local_scores(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo],
                           names: list[str], plugins: list[ScorePlugin],
                           by_plugin: dict[str, list[int]] | None
                           ) -> tuple[list[int], dict[str, list[int]], Status]:
        """What the node-local Score plugins say, remembered per pod spec: the weighted sum
        of those that do not normalize (one total per node), and the raw scores of those
        that do, by plugin name (the caller normalizes them: that looks at every node).
        The summed plugins' own scores are remembered too, and put in `by_plugin`
        (weighted) when it is given."""
        summed = [plugin for plugin in plugins if plugin.node_local and not _normalizes(plugin)]
        raw = [plugin for plugin in plugins if plugin.node_local and _normalizes(plugin)]
        if not summed and not raw:
            return [0] * len(nodes), {}, SUCCESS
        weights = [self.score_weights.get(plugin.name, 1) for plugin in summed]
        failed: list[Status] = []

        def run(unknown: list[NodeInfo]) -> list[list[int]] | None:
            unknown_names = [info.name for info in unknown]
            totals = [0] * len(unknown)
            columns: list[list[int]] = []
            for plugin, weight in zip(summed, weights, strict=True):
                scores, status = plugin.score_nodes(state, pod, unknown)
                if not status.code:  # Code.SUCCESS (0)
                    status = self._check_scores(state, pod, plugin, unknown_names, scores)
                if status.code:
                    failed.append(status.with_plugin(plugin.name))
                    return None
                totals = [total + score * weight for total, score in zip(totals, scores,
                                                                          strict=True)]
                columns.append(scores)
            for plugin in raw:
                scores, status = plugin.score_nodes(state, pod, unknown)
                if status.code:
                    failed.append(status.with_plugin(plugin.name))
                    return None
                columns.append(scores)
            return [totals, *columns]

        key = (pod.spec_key(), tuple(plugin.name for plugin in summed),
               tuple(plugin.name for plugin in raw))
        rows = self.equivalence.scores(key, nodes, names, run)
        if rows is None:
            return [], {}, failed[0]
        # one list per column (the total, then each plugin's scores), transposed at C speed
        columns = [list(column) for column in zip(*rows, strict=True)] if rows else [
            [] for _ in range(1 + len(summed) + len(raw))]
        if by_plugin is not None:
            for index, (plugin, weight) in enumerate(zip(summed, weights, strict=True),
                                                     start=1):
                by_plugin[plugin.name] = [score * weight for score in columns[index]]
        return (columns[0],
                {plugin.name: columns[index]
                 for index, plugin in enumerate(raw, start=1 + len(summed))}, SUCCESS)

    def run_reserve_plugins_reserve(self, state: CycleState, pod: PodInfo, node_name: str
                                    ) -> Status:
        for plugin in self.plugins.reserve:
            status = plugin.reserve(state, pod, node_name)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: PodInfo,
                                      node_name: str) -> None:
        for plugin in reversed(self.plugins.reserve):
            plugin.unreserve(state, pod, node_name)

    def run_permit_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Permit: Success, a rejection, or Wait (the pod is parked in waiting_pods)."""
        pending: set[str] = set()
        timeout = 0.0
        for plugin in self.plugins.permit:
            status, plugin_timeout = plugin.permit(state, pod, node_name)
            if status.code == Code.WAIT:
                pending.add(plugin.name)
                timeout = max(timeout, plugin_timeout)
            elif not status.is_success():
                return status.with_plugin(plugin.name)
        if not pending:
            return SUCCESS
        waiting = WaitingPod(pod, node_name, pending)
        self.waiting_pods[pod.uid] = waiting
        loop = asyncio.get_running_loop()
        loop.call_later(timeout, waiting.reject, "", f"rejected due to timeout after "
                        f"waiting {timeout:g}s at plugin {sorted(pending)[0]}")
        return Status(Code.WAIT)

    async def wait_on_permit(self, pod: PodInfo) -> Status:
        """The binding cycle's first step: wait until a held pod is allowed or rejected."""
        waiting = self.waiting_pods.get(pod.uid)
        if waiting is None:
            return SUCCESS
        try:
            return await waiting.decided
        finally:
            self.waiting_pods.pop(pod.uid, None)

    # -- the binding cycle ----------------------------------------------------------------------

    async def run_pre_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str
                                   ) -> Status:
        started = time.perf_counter()
        for plugin in self.plugins.pre_bind:
            status = await plugin.pre_bind(state, pod, node_name)
            if not status.is_success():
                self.record_duration("PreBind", started, status)
                return status.with_plugin(plugin.name)
        self.record_duration("PreBind", started, SUCCESS)
        return SUCCESS

    async def run_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str
                               ) -> Status:
        started = time.perf_counter()
        for plugin in self.plugins.bind:
            status = await plugin.bind(state, pod, node_name)
            if status.is_skip():
                continue
            self.record_duration("Bind", started, status)
            return status.with_plugin(plugin.name)
        status = Status.error("no bind plugin bound the pod")
        self.record_duration("Bind", started, status)
        return status

    async def run_post_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str
                                    ) -> None:
        for plugin in self.plugins.post_bind:
            await plugin.post_bind(state, pod, node_name)


def _normalizes(plugin: ScorePlugin) -> bool:
    """Whether a Score plugin has its own NormalizeScore."""
    return type(plugin).normalize_score is not ScorePlugin.normalize_score


def pod_priority(pod: Obj) -> int:
    """corev1helpers.PodPriority: spec.priority, 0 when unset."""
    return int((pod.get("spec") or {}).get("priority") or 0)
