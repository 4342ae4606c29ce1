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
Once a pod spec's answers cover every node of a snapshot, the next snapshot's change log
(its generation, upstream's word) names the few nodes to ask again, and the thousands of
others are not even looked at: a large cluster's cycle no longer walks every node only to
find that nothing changed.
Upstream kube-scheduler had an "equivalence class cache" of predicate results in
1.10-1.13 and dropped it: in Go, running the filters again cost about as much as the
bookkeeping. In Python a plugin call per node costs far more than a dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Generic, TypeVar

from minikube_py.scheduler.framework.interface import Code

if TYPE_CHECKING:
    from minikube_py.scheduler.framework.interface import Status
    from minikube_py.scheduler.framework.types import ChangeLog, NodeInfo, Snapshot

V = TypeVar("V")
T = TypeVar("T", bound="NodeAnswers")

# How many different pod specs keep their answers (the most recently scheduled ones).
DEFAULT_SIZE = 16


class EquivalenceCache:
    """Per pod spec: each node's Filter verdict and raw scores, valid for one NodeInfo.

    The nodes asked about are NodeInfos of `snapshot` when one is given (a snapshot of the
    scheduler's cache, with its change log)."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        self._filters: dict[Hashable, FilterVerdicts] = {}
        self._scores: dict[Hashable, ScoreRows] = {}

    def _table(self, tables: dict[Hashable, T], key: Hashable, new: Callable[[], T]) -> T:
        table = tables.pop(key, None) or new()
        tables[key] = table  # most recently used last
        while len(tables) > self.size:
            del tables[next(iter(tables))]
        return table

    def filter(self, key: Hashable, nodes: list[NodeInfo],
               run: Callable[[list[NodeInfo]], tuple[list[NodeInfo], Mapping[str, Status]]],
               snapshot: Snapshot | None = None
               ) -> tuple[list[NodeInfo], Mapping[str, Status]]:
        """The nodes that fit (in order) and the statuses of those that do not, asking
        run(nodes) only about the nodes without a remembered verdict. A Status with
        Code.ERROR ends filtering: it comes back with no nodes that fit."""
        table = self._table(self._filters, key, FilterVerdicts)
        stale, synced = table.stale(nodes, snapshot)
        rejections = table.answers
        if stale:
            _, fresh = run(stale)
            if any(status.code == Code.ERROR for status in fresh.values()):
                table.synced = None
                return [], fresh  # an error ends the cycle; it is not remembered
            for info in stale:
                table.infos[info.name] = info
                status = fresh.get(info.name)
                if status is None:
                    rejections.pop(info.name, None)
                else:
                    rejections[info.name] = status
        table.synced = synced
        # Every node's verdict is now the one remembered for it. Most nodes fit most pods:
        # only the remembered rejections are looked for among the nodes.
        if not rejections:
            return list(nodes), {}
        fit = [info for info in nodes if info.name not in rejections]
        if len(fit) == len(nodes):
            return fit, {}
        return fit, {info.name: rejections[info.name] for info in nodes
                     if info.name in rejections}

    def scores(self, key: Hashable, nodes: list[NodeInfo], names: list[str],
               run: Callable[[list[NodeInfo]], list[list[int]] | None]
               ) -> list[tuple[int, ...]] | None:
        """Each node's raw scores (one per node-local plugin), asking run(nodes) for the
        nodes without remembered scores: it returns one list per plugin, or None when a
        plugin failed (then nothing is remembered and None is returned). `names` are the
        nodes' names, in order (read once by the caller: in a large cluster, fetching
        each NodeInfo again costs more than the lookups).

        (Scores are only ever asked for nodes that passed Filter, so they seldom cover a
        whole snapshot: each node is looked at, not the change log.)"""
        table = self._table(self._scores, key, ScoreRows)
        known = table.infos.get
        stale = [info for info, name in zip(nodes, names, strict=True) if known(name) is not info]
        rows = table.answers
        if stale:
            columns = run(stale)
            if columns is None:
                return None
            for info, row in zip(stale, zip(*columns, strict=True), strict=True):
                table.infos[info.name] = info
                rows[info.name] = row
        return list(map(rows.__getitem__, names))


class NodeAnswers(Generic[V]):
    """One pod spec's remembered answers by node name, each with the NodeInfo it was made
    for, and the snapshot (its change log and number) all of whose nodes had theirs: until
    the answers are brought up to date from a later snapshot's change log, that is the
    only snapshot whose nodes need no look each."""

    __slots__ = ("infos", "answers", "synced")

    def __init__(self) -> None:
        self.infos: dict[str, NodeInfo] = {}
        self.answers: dict[str, V] = {}
        self.synced: tuple[ChangeLog, int] | None = None

    def stale(self, nodes: list[NodeInfo], snapshot: Snapshot | None
              ) -> tuple[list[NodeInfo], tuple[ChangeLog, int] | None]:
        """The nodes to ask about, and the snapshot the answers cover once they are asked
        (None: not all of one).

        Answers that covered an earlier snapshot of the same cache: the nodes its change
        log says changed since, wherever they are in the list (every other node is the
        very NodeInfo its answer was made for). Otherwise the nodes whose answer is missing
        or was made for another NodeInfo; and when that leaves at most a few of the
        snapshot's nodes without one, those too, so that the next cycle is a synced one
        (asking about nodes outside `nodes` suits Filter: any node may be asked)."""
        if snapshot is None or snapshot.changes is None:
            get = self.infos.get
            return [info for info in nodes if get(info.name) is not info], None
        now = (snapshot.changes, snapshot.seq)
        if self.synced is not None:
            # (by name: the order of nodes is no matter, so nodes added or removed are
            # among the changed ones, and the answers of those removed are dropped)
            changed = snapshot.changed_since(*self.synced, any_order=True)
            if changed is not None:
                infos = [snapshot.get(name) for name in changed]
                for name, info in zip(changed, infos, strict=True):
                    if info is None:
                        self.infos.pop(name, None)
                        self.answers.pop(name, None)
                return [info for info in infos if info is not None], now
        get = self.infos.get
        stale = [info for info in nodes if get(info.name) is not info]
        if len(self.infos) + len(stale) < len(snapshot):
            return stale, None
        asked = {info.name for info in stale}
        stale += [info for info in snapshot.node_info_list
                  if get(info.name) is not info and info.name not in asked]
        return stale, now


class FilterVerdicts(NodeAnswers["Status"]):
    """Filter verdicts: the Status of each node turned down (a node not named fits)."""

    __slots__ = ()


class ScoreRows(NodeAnswers[tuple[int, ...]]):
    """Each node's raw scores, one per node-local Score plugin."""

    __slots__ = ()
