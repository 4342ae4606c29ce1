"""The truth-table model of upstream's NetworkPolicy e2e tests (test/e2e/network/netpol:
model.go, reachability.go, truthtable.go), in Python: pods named "x/a", a matrix of
expected reachability from each pod to each pod, and the way a failure is printed.

    Reachability(pods, default=True)
        expect(from, to, allowed)              one cell
        expect_peer(from_peer, to_peer, allowed)   every cell whose pods match both peers
        expect_all_ingress(pod, allowed)       the pod's column
        expect_all_egress(pod, allowed)        the pod's row
    observe(from, to, allowed); summary() -> wrong cells; pretty() prints
    Expected / Observed / Comparison, as upstream's PrintSummary does.

Loopback (a pod to itself) is left out of the comparison, as upstream's ignoreLoopback.
"""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACES = ("x", "y", "z")
POD_NAMES = ("a", "b", "c")
ALL_PODS = tuple(f"{ns}/{pod}" for ns in NAMESPACES for pod in POD_NAMES)


@dataclass(frozen=True)
class Peer:
    """Matches pods by namespace and/or name; empty matches every pod."""

    namespace: str = ""
    pod: str = ""

    def matches(self, pod: str) -> bool:
        namespace, name = pod.split("/")
        return self.namespace in ("", namespace) and self.pod in ("", name)


class Reachability:
    """Expected and observed reachability over the same pods."""

    def __init__(self, pods: tuple[str, ...] = ALL_PODS, default: bool = True) -> None:
        self.pods = pods
        self.expected = {(a, b): default for a in pods for b in pods}
        self.observed: dict[tuple[str, str], bool] = {}

    def expect(self, source: str, target: str, allowed: bool) -> None:
        self.expected[(source, target)] = allowed

    def expect_peer(self, source: Peer, target: Peer, allowed: bool) -> None:
        for a in self.pods:
            for b in self.pods:
                if source.matches(a) and target.matches(b):
                    self.expected[(a, b)] = allowed

    def expect_all_ingress(self, pod: str, allowed: bool) -> None:
        for a in self.pods:
            self.expected[(a, pod)] = allowed

    def expect_all_egress(self, pod: str, allowed: bool) -> None:
        for b in self.pods:
            self.expected[(pod, b)] = allowed

    def observe(self, source: str, target: str, allowed: bool) -> None:
        self.observed[(source, target)] = allowed

    def wrong(self) -> list[tuple[str, str]]:
        """Cells where what was observed is not what was expected (loopback ignored)."""
        return [cell for cell, allowed in self.expected.items()
                if cell[0] != cell[1] and self.observed.get(cell) != allowed]

    def _table(self, cell: dict[tuple[str, str], str]) -> str:
        rows = ["\t".join(["-", *self.pods])]
        rows += ["\t".join([a, *(cell[(a, b)] for b in self.pods)]) for a in self.pods]
        return "\n".join(rows)

    def pretty(self) -> str:
        """Upstream's three tables: "." reachable / "X" not, and in the comparison "."
        as expected / "X" wrong (loopback shown as ".")."""
        mark = {True: ".", False: "X", None: "?"}
        expected = {c: mark[v] for c, v in self.expected.items()}
        observed = {c: mark[self.observed.get(c)] for c in self.expected}
        comparison = {c: "." if c[0] == c[1] or self.observed.get(c) == v else "X"
                      for c, v in self.expected.items()}
        return (f"Expected:\n{self._table(expected)}\n\nObserved:\n{self._table(observed)}"
                f"\n\nComparison:\n{self._table(comparison)}\n")
