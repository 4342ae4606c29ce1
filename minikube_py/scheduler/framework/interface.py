"""The scheduling framework's extension points (upstream framework/interface.go).

A plugin is a class with a `name` that implements one or more extension points:

    scheduling cycle (one pod at a time):
      QueueSort    less(a, b)                      which pending pod goes first
      PreFilter    pre_filter(state, pod, nodes)   compute once per pod; may narrow nodes
      Filter       filter(state, pod, node_info)   can the pod run on this node?
                   filter_nodes(state, pod, nodes) the same for many nodes at once
                   (filter_nodes_split: and the nodes that fit)
      PostFilter   post_filter(state, pod, statuses)   no node fits: e.g. preempt
      PreScore     pre_score(state, pod, nodes)    compute once before scoring
      Score        score(state, pod, node_info)    0..100: how good is this node?
                   score_nodes(state, pod, nodes)  the same for many nodes at once
      NormalizeScore normalize_score(state, pod, scores)   rescale to 0..100
      Reserve      reserve / unreserve             the pod is assumed on the node
      Permit       permit(state, pod, node)        approve, deny, or wait
    binding cycle (asynchronous, many pods at once):
      PreBind, Bind, PostBind                      write the decision to the API server

Filter and Score run for every node, so they are plain (not async) methods on data the
snapshot already holds; the binding steps talk to the API server and are async.

The runtime asks Filter and Score plugins about many nodes in one call (`filter_nodes`,
`score_nodes`). By default those ask `filter` and `score` node by node, so a plugin only
has to write the one-node method. Upstream's Go scheduler calls the one-node methods in
parallel goroutines; in Python a call per node and plugin costs more than the arithmetic
inside it, so the plugins that run for every pod (NodeResourcesFit, TaintToleration,
...) also answer for a whole list of nodes in one loop. Their answers are the same as
the one-node methods' (tests/unit/scheduler/test_batch_extension_points.py checks this).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Any, ClassVar

from minikube_py.api import Obj
from minikube_py.scheduler.framework.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from minikube_py.scheduler.framework.handle import Handle


MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class Code(IntEnum):
    """framework.Code: how an extension point answered."""

    SUCCESS = 0
    ERROR = 1  # something broke: the pod is retried
    UNSCHEDULABLE = 2  # not here, but preemption might help
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3  # not here, and preemption cannot help
    WAIT = 4  # Permit: hold the pod until approved or timed out
    SKIP = 5  # PreFilter/PreScore: this plugin has nothing to do for the pod
    PENDING = 6  # the pod waits for something outside the scheduler


@dataclass(slots=True)
class Status:
    """The answer of a plugin: a code, the reasons users read, and who said it."""

    code: Code = Code.SUCCESS
    reasons: list[str] = field(default_factory=list)
    plugin: str = ""

    @classmethod
    def success(cls) -> Status:
        return cls()

    @classmethod
    def unschedulable(cls, *reasons: str, unresolvable: bool = False) -> Status:
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        return cls(code, list(reasons))

    @classmethod
    def error(cls, reason: str) -> Status:
        return cls(Code.ERROR, [reason])

    @classmethod
    def skip(cls) -> Status:
        return cls(Code.SKIP)

    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_rejected(self) -> bool:
        """Unschedulable (either kind): the node, or the pod for now, was turned down."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                             Code.PENDING)

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        """The status, naming the plugin that gave it (a success needs no name)."""
        if not self.plugin and self.code is not Code.SUCCESS:
            self.plugin = plugin
        return self


SUCCESS = Status()


def default_normalize_score(scores: dict[str, int], *, reverse: bool = False,
                            max_priority: int = MAX_NODE_SCORE) -> None:
    """helper.DefaultNormalizeScore: rescale non-negative scores in place from
    [0, highest] to [0, max_priority]; with `reverse`, the lowest raw score gets the most.

    When every score is 0 they stay 0, or all become max_priority when reversed.
    """
    highest = max(scores.values(), default=0)
    if highest == 0:
        if reverse:
            scores.update(dict.fromkeys(scores, max_priority))
        return
    for name, score in scores.items():
        scaled = max_priority * score // highest
        scores[name] = max_priority - scaled if reverse else scaled


class CycleState:
    """Data one plugin computes in one extension point and reads in a later one, for one
    pod in one scheduling cycle (PreFilter -> Filter, PreScore -> Score)."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.evaluated_nodes = 0  # nodes Filter looked at, and those that passed (for logs)
        self.feasible_nodes = 0

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        """The value, or KeyError naming the key (a plugin's PreFilter did not run)."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def clone(self) -> CycleState:
        """A copy for trying "what if" (preemption runs filters on changed nodes)."""
        twin = CycleState()
        twin._data = {key: value.clone() if hasattr(value, "clone") else value
                      for key, value in self._data.items()}
        twin.skip_filter_plugins = set(self.skip_filter_plugins)
        twin.skip_score_plugins = set(self.skip_score_plugins)
        return twin


@dataclass
class PreFilterResult:
    """PreFilter may name the only nodes worth filtering (None: all of them); `plugins`
    are the PreFilter plugins that narrowed the set (the runtime fills it in)."""

    node_names: set[str] | None = None
    plugins: list[str] = field(default_factory=list)


@dataclass
class PostFilterResult:
    """PostFilter's outcome: the node the pod is nominated to (after preemption)."""

    nominated_node_name: str = ""


@dataclass(frozen=True)
class ClusterEvent:
    """A kind of change that may make unschedulable pods schedulable (framework.ClusterEvent).

    resource: "Pod", "Node", "PersistentVolumeClaim", ...; action: "Add", "Update",
    "Delete", or an update detail such as "UpdateNodeLabel", "UpdateNodeTaint",
    "UpdateNodeAllocatable", "UpdatePodLabel", "UpdatePodScaleDown".
    """

    resource: str
    action: str


class PluginArgsError(ValueError):
    """A plugin's args failed validation; the message aggregates the field errors as
    upstream's utilerrors.Aggregate does (one error as is, several in brackets)."""

    def __init__(self, messages: list[str]) -> None:
        unique = list(dict.fromkeys(messages))
        super().__init__(unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")
        self.messages = unique


class Plugin(ABC):  # noqa: B024 (abstract are the extension points below)
    """Every plugin: a name, and a constructor taking its args and the framework handle."""

    name: ClassVar[str] = ""
    # True when the plugin's Filter and Score answers for a node depend only on the pod's
    # spec and that node's NodeInfo: the runtime may then reuse them for the next pod with
    # the same spec while the node is unchanged (see framework/equivalence.py).
    node_local: ClassVar[bool] = False

    def __init__(self, args: Obj | None = None, handle: Handle | None = None) -> None:
        self.args = args or {}
        self.handle = handle

    def events_to_register(self) -> list[ClusterEvent]:
        """EnqueueExtensions: the cluster events after which a pod this plugin rejected
        may fit; the queue retries the pod only then. Default: any node or pod change."""
        return [ClusterEvent("Node", "Add"), ClusterEvent("Node", "Update"),
                ClusterEvent("Pod", "Delete"), ClusterEvent("Pod", "Update")]


class QueueSortPlugin(Plugin):
    @abstractmethod
    def less(self, first: QueuedPodInfo, second: QueuedPodInfo) -> bool:
        ...


class PreFilterPlugin(Plugin):
    @abstractmethod
    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status]:
        ...

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo,
                node_info: NodeInfo) -> Status:
        """PreFilterExtensions.AddPod: update the PreFilter state as if `to_add` ran on
        the node (preemption evaluates nominated pods this way)."""
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo,
                   node_info: NodeInfo) -> Status:
        """PreFilterExtensions.RemovePod: as if `to_remove` left the node (a victim)."""
        return SUCCESS


class FilterPlugin(Plugin):
    @abstractmethod
    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        ...

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                     ) -> dict[str, Status]:
        """Filter many nodes: the status of each node that is out, by node name (the
        nodes not named fit), in a new dict the caller may keep and change. Default:
        filter() node by node."""
        rejected = {}
        for node_info in nodes:
            status = self.filter(state, pod, node_info)
            if status.code:  # anything but Code.SUCCESS (0)
                rejected[node_info.name] = status
        return rejected

    def filter_nodes_split(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                           ) -> tuple[list[NodeInfo], Mapping[str, Status]]:
        """filter_nodes, with the nodes that fit too (in order; `nodes` itself when all
        do), as the runtime wants them: the statuses in a new dict, or in a NodeToStatus
        (framework/node_to_status.py) when many nodes share one Status and their names
        come as a list. Default: the nodes filter_nodes did not name."""
        rejected = self.filter_nodes(state, pod, nodes)
        if not rejected:
            return nodes, rejected
        return [info for info in nodes if info.name not in rejected], rejected


class PostFilterPlugin(Plugin):
    @abstractmethod
    async def post_filter(self, state: CycleState, pod: PodInfo,
                          statuses: Mapping[str, Status]
                          ) -> tuple[PostFilterResult | None, Status]:
        ...


class PreScorePlugin(Plugin):
    @abstractmethod
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> Status:
        ...


class ScorePlugin(Plugin):
    @abstractmethod
    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo
              ) -> tuple[int, Status]:
        ...

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
                    ) -> tuple[list[int], Status]:
        """Score many nodes: one raw score per node, in order; the first failure ends
        it. Default: score() node by node."""
        scores = []
        for node_info in nodes:
            score, status = self.score(state, pod, node_info)
            if status.code:  # anything but Code.SUCCESS (0)
                return [], status
            scores.append(score)
        return scores, SUCCESS

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: dict[str, int]
                        ) -> Status | None:
        """ScoreExtensions.NormalizeScore: rescale in place; None means "no normalizing"."""
        return None


class ReservePlugin(Plugin):
    @abstractmethod
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        ...

    @abstractmethod
    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        ...


class PermitPlugin(Plugin):
    @abstractmethod
    def permit(self, state: CycleState, pod: PodInfo, node_name: str
               ) -> tuple[Status, float]:
        """(status, timeout seconds): Wait holds the pod until allowed, rejected or timed out."""
        ...


class PreBindPlugin(Plugin):
    @abstractmethod
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        ...


class BindPlugin(Plugin):
    @abstractmethod
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Bind, or Skip to let the next bind plugin do it."""
        ...


class PostBindPlugin(Plugin):
    @abstractmethod
    async def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        ...


@dataclass(slots=True)
class QueuedPodInfo:
    """A pod waiting in the scheduling queue (framework.QueuedPodInfo)."""

    pod_info: PodInfo
    timestamp: float  # when it entered the queue this time (monotonic)
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)

    @property
    def pod(self) -> Obj:
        return self.pod_info.pod
