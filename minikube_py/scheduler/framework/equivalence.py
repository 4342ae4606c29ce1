"""Remembering Filter and Score answers for equal pods (an equivalence cache).

Replicas of one workload have the same spec, and one scheduling cycle changes one node:
the node the pod is assumed on. So for the next replica, most of what the node-local
plugins said about most nodes is still true. A plugin is node-local when its Filter and
Score answers for a node depend on nothing but the pod's spec and that node's NodeInfo
(NodeResourcesFit, TaintToleration, NodeAffinity, ...); it says so with
`node_local = True`. PodTopologySpread and InterPodAffinity look at other nodes' pods
and ImageLocality at how many nodes hold an image, so they are not node-local.

The runtime remembers, per pod spec:
- which nodes passed the node-local Filters, and the Status of each node that did not;
- each node's raw scores from the node-local Score plugins (before NormalizeScore, which
  looks at all the nodes and runs every cycle).

An answer is reused while the snapshot hands out the very same NodeInfo object (the
cache copies a node's NodeInfo whenever the node or its pods change, see
Cache.update_snapshot), so a reused answer is always the one the plugins would give.
Upstream kube-scheduler had an "equivalence class cache" of predicate results in
1.10-1.13 and dropped it: in Go, running the filters again cost about as much as the
bookkeeping. In Python a plugin call per node costs far more than a dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, TypeVar

from minikube_py.scheduler.framework.interface import Code

if TYPE_CHECKING:
    from minikube_py.scheduler.framework.interface import Status
    from minikube_py.scheduler.framework.types import NodeInfo

V = TypeVar("V")

# How many different pod specs keep their answers (the most recently scheduled ones).
DEFAULT_SIZE = 16


class EquivalenceCache:
    """Per pod spec: each node's Filter verdict and raw scores, valid for one NodeInfo."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        self._filters: dict[Hashable, FilterVerdicts] = {}
        self._scores: dict[Hashable, dict[str, tuple[NodeInfo, tuple[int, ...]]]] = {}

    def _table(self, tables: dict, key: Hashable, new: Callable[[], V]) -> V:
        table = tables.pop(key, None) or new()
        tables[key] = table  # most recently used last
        while len(tables) > self.size:
            del tables[next(iter(tables))]
        return table

    def filter(self, key: Hashable, nodes: list[NodeInfo],
               run: Callable[[list[NodeInfo]], tuple[list[NodeInfo], dict[str, Status]]]
               ) -> tuple[list[NodeInfo], dict[str, Status]]:
        """The nodes that fit (in order) and the statuses of those that do not, asking
        run(nodes) only about the nodes without a remembered verdict. A Status with
        Code.ERROR ends filtering: it comes back with no nodes that fit."""
        table = self._table(self._filters, key, FilterVerdicts)
        get = table.infos.get
        stale = [info for info in nodes if get(info.name) is not info]
        rejections = table.rejections
        if stale:
            _, fresh = run(stale)
            if any(status.code == Code.ERROR for status in fresh.values()):
                return [], fresh  # an error ends the cycle; it is not remembered
            for info in stale:
                table.infos[info.name] = info
                status = fresh.get(info.name)
                if status is None:
                    rejections.pop(info.name, None)
                else:
                    rejections[info.name] = status
        # Every node's verdict is now the one remembered for it. Most nodes fit most pods:
        # only the remembered rejections are looked for among the nodes.
        if not rejections:
            return list(nodes), {}
        fit = [info for info in nodes if info.name not in rejections]
        if len(fit) == len(nodes):
            return fit, {}
        return fit, {info.name: rejections[info.name] for info in nodes
                     if info.name in rejections}

    def scores(self, key: Hashable, nodes: list[NodeInfo],
               run: Callable[[list[NodeInfo]], list[list[int]] | None]
               ) -> list[tuple[int, ...]] | None:
        """Each node's raw scores (one per node-local plugin), asking run(nodes) for the
        nodes without remembered scores: it returns one list per plugin, or None when a
        plugin failed (then nothing is remembered and None is returned)."""
        table = self._table(self._scores, key, dict)
        stale = _stale(table, nodes)
        if stale:
            columns = run(stale)
            if columns is None:
                return None
            for info, row in zip(stale, zip(*columns, strict=True), strict=True):
                table[info.name] = (info, row)
        return [table[info.name][1] for info in nodes]


class FilterVerdicts:
    """One pod spec's remembered Filter verdicts: the NodeInfo each node's verdict was
    made for, and the Status of each node turned down (a node not named there fits)."""

    __slots__ = ("infos", "rejections")

    def __init__(self) -> None:
        self.infos: dict[str, NodeInfo] = {}
        self.rejections: dict[str, Status] = {}


def _stale(table: dict[str, tuple[NodeInfo, V]], nodes: list[NodeInfo]) -> list[NodeInfo]:
    """The nodes, in order, whose entry in the table is missing or was made for another
    NodeInfo object (the node changed since): the caller puts fresh entries there."""
    get = table.get
    return [info for info in nodes
            if (entry := get(info.name)) is None or entry[0] is not info]
