"""NodeToStatus: the Status of each node Filter turned down, recorded lazily (upstream
framework/types.go NodeToStatus).

A scheduling cycle in a large cluster turns down thousands of nodes, most of them for
one reason: with a zone spread constraint of maxSkew 1, every node of the zones over the
limit says "node(s) didn't match pod topology spread constraints", and the plugin finds
those nodes as one list at C speed. Writing a dict entry per node, then copying it into
the cycle's result, costs more than finding them did. Yet the per-node statuses are read
only when no node fits (the FitError's message, preemption's choice of candidates) or
when a trace records the decision.

So NodeToStatus keeps what the plugins handed back as it came, in parts:

    a run:   the names of many nodes, and the one Status they share
    a dict:  node name -> Status, as a plugin's filter_nodes returns it

and builds the per-node dict only when something reads a node's status. Its length, the
distinct Statuses (to name their plugin, to look for an error) and the nodes dropped
from it work on the parts. Upstream keeps a map plus one "absentNodesStatus" for the
nodes it does not name; here the nodes not named are simply absent, as before (the
readers give them their own default).

A node is turned down once (by the first plugin that says no), so the parts never name
a node twice: add_run and update rely on it; setting a node's status through the
mapping (`statuses[name] = status`) may replace one.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from itertools import filterfalse
from operator import attrgetter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minikube_py.scheduler.framework.interface import Code, Status

Run = tuple[Sequence[str], "Status"]  # many nodes turned down for one Status
Part = Run | dict[str, "Status"]


class NodeToStatus(Mapping[str, "Status"]):
    """Node name -> the Status of its Filter rejection, kept as runs and dicts and made
    a dict on the first read of one node's status."""

    __slots__ = ("_parts", "_by_name", "_own")

    def __init__(self, statuses: Mapping[str, Status] | None = None) -> None:
        """Empty, or holding `statuses` (a dict is kept, not copied)."""
        self._parts: list[Part] = []
        self._by_name: dict[str, Status] | None = None  # the parts merged, once read
        self._own = False  # whether _by_name was made here (not a dict handed in)
        if statuses:
            self.update(statuses)

    @classmethod
    def of_run(cls, names: Sequence[str], status: Status) -> NodeToStatus:
        """Every node of `names` turned down with `status`."""
        statuses = cls()
        statuses.add_run(names, status)
        return statuses

    # -- recording ------------------------------------------------------------------------

    def add_run(self, names: Sequence[str], status: Status) -> None:
        """Record many nodes turned down with one Status (none of them named yet)."""
        if names:
            self._parts.append((names, status))
            self._by_name = None

    def update(self, other: Mapping[str, Status]) -> None:
        """Record the statuses of other nodes (none of them named yet): a NodeToStatus's
        parts are taken as they are, a dict as one part (kept, not copied)."""
        if isinstance(other, NodeToStatus):
            self._parts += other._parts
        elif other:
            self._parts.append(other if isinstance(other, dict) else dict(other))
        self._by_name = None

    def drop(self, names: set[str]) -> None:
        """Forget the statuses of these nodes (those filtered past the last node wanted)."""
        if not names:
            return
        parts: list[Part] = []
        for part in self._parts:
            if isinstance(part, dict):
                kept = {name: status for name, status in part.items() if name not in names}
                if kept:
                    parts.append(kept)
            else:
                run_names = list(filterfalse(names.__contains__, part[0]))
                if run_names:
                    parts.append((run_names, part[1]))
        self._parts = parts
        self._by_name = None

    def __setitem__(self, name: str, status: Status) -> None:
        """Set one node's status (for a few nodes: extenders, nodes with nominated pods)."""
        by_name = self._merged()
        if not self._own:
            by_name = self._by_name = dict(by_name)  # not the dict a plugin handed in
            self._own = True
        by_name[name] = status
        self._parts = [by_name]

    # -- what is read without a status per node ----------------------------------------

    def __len__(self) -> int:
        return sum(len(part) if isinstance(part, dict) else len(part[0])
                   for part in self._parts)

    def distinct_statuses(self) -> list[Status]:
        """Each Status object once, in the order the nodes were recorded: what the runtime
        names the plugin on, and looks at for an error."""
        seen: dict[int, Status] = {}
        for part in self._parts:
            if isinstance(part, dict):
                values = part.values()
                seen.update(zip(map(id, values), values, strict=True))
            else:
                seen.setdefault(id(part[1]), part[1])
        return list(seen.values())

    def codes(self) -> set[Code]:
        """The codes of the statuses recorded."""
        return set(map(attrgetter("code"), self.distinct_statuses()))

    # -- the mapping: node by node --------------------------------------------------------

    def _merged(self) -> dict[str, Status]:
        """The per-node dict, built once from the parts (and kept until they change)."""
        if self._by_name is None:
            self._own = not (len(self._parts) == 1 and isinstance(self._parts[0], dict))
            if not self._own:
                self._by_name = self._parts[0]  # type: ignore[assignment]
            else:
                by_name: dict[str, Status] = {}
                for part in self._parts:
                    if isinstance(part, dict):
                        by_name.update(part)
                    else:
                        by_name.update(dict.fromkeys(part[0], part[1]))
                self._by_name = by_name
        return self._by_name

    def __getitem__(self, name: str) -> Status:
        return self._merged()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._merged()

    def __iter__(self) -> Iterator[str]:
        return iter(self._merged())

    def get(self, name: str, default: Status | None = None) -> Status | None:  # type: ignore[override]
        return self._merged().get(name, default)

    # (the dict's own views: read at C speed)
    def items(self) -> ItemsView[str, Status]:
        return self._merged().items()

    def keys(self) -> KeysView[str]:
        return self._merged().keys()

    def values(self) -> ValuesView[Status]:
        return self._merged().values()

    def __repr__(self) -> str:
        return f"NodeToStatus({self._merged()!r})"
