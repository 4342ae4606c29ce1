"""Which spans tell one object's life, and when `mkctl trace --follow` prints them.

The trace receiver finds spans by the object's name, so an object deleted and made again
under its name left spans that name it too. One life is:

    the object's uid, its creationTimestamp and the trace it carries (Life)
    a span names the life    it names the object (k8s.resource, k8s.namespace, k8s.name)
                             and its k8s.uid is the life's; a span without a uid (written
                             before the object had one) when it started since the life
    a trace is the life's    it is the trace the object carries, or a span of it names
                             the life (the pod whose readiness changed a Service's
                             endpoints: its trace names the Service)

--follow gets spans as the components export them, about once a second each, so they
come out of order: a CRI call ends, and is sent, before the SyncPod around it. Follower
holds each span a moment (HOLD) and prints in the order the spans started; a span whose
parent has not come yet waits for it (up to PARENT_WAIT), so that it is printed under it.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field

from minikube_py.api import Obj

HOLD = 2_000_000_000  # ns a span waits for the spans that started before it
PARENT_WAIT = 10_000_000_000  # ns a span waits for its parent, at most


@dataclass(frozen=True)
class Life:
    """One object's life: the object by name, its uid (empty: a life still to come), when
    it began (ns) and the trace it carries."""

    resource: str
    namespace: str
    name: str
    uid: str = ""
    since: int = 0
    trace_id: str = ""

    @classmethod
    def of(cls, obj: Obj, resource: str, namespace: str, name: str, trace_id: str
           ) -> Life:
        """The life of `obj` as the API server has it now (creationTimestamp counts whole
        seconds)."""
        metadata = obj.get("metadata") or {}
        created = metadata.get("creationTimestamp") or ""
        since = (int(datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
                     .timestamp()) * 1_000_000_000 if created else 0)
        return cls(resource, namespace, name, metadata.get("uid") or "", since, trace_id)

    def named_by(self, span: Obj) -> bool:
        """Whether the span names this life (by its uid, or by its time)."""
        attributes = span.get("attributes") or {}
        if (attributes.get("k8s.resource") != self.resource
                or attributes.get("k8s.name") != self.name
                or attributes.get("k8s.namespace", "") != self.namespace):
            return False
        uid = attributes.get("k8s.uid")
        if uid and self.uid:
            return uid == self.uid
        return span["start"] >= self.since

    def traces(self, traces: list[Obj]) -> list[Obj]:
        """The traces of this life, of those the receiver found by the name."""
        return [trace for trace in traces
                if trace["traceId"] == self.trace_id
                or any(self.named_by(span) for span in trace["spans"])]


@dataclass
class Follower:
    """The spans of one life as they come, handed back in the order they started, each
    with how deep it sits under its parents."""

    life: Life
    hold: int = HOLD
    parent_wait: int = PARENT_WAIT
    _seen: dict[str, Obj] = field(default_factory=dict)  # span id -> span
    _depths: dict[str, int] = field(default_factory=dict)  # of the spans handed back
    _traces: set[str] = field(default_factory=set)  # the life's
    _pending: dict[str, list[tuple[Obj, int]]] = field(default_factory=dict)  # other traces'
    _held: list[tuple[Obj, int]] = field(default_factory=list)  # (span, when it came)

    def __post_init__(self) -> None:
        if self.life.trace_id:
            self._traces.add(self.life.trace_id)

    def printed(self, spans: Iterable[Obj]) -> list[tuple[Obj, int]]:
        """Spans shown already (what there was), in the order they started, with their
        depths; later ones nest under them, and the same span coming again is not new."""
        ordered = sorted(spans, key=lambda span: span["start"])
        for span in ordered:
            self._seen[span["spanId"]] = span
            self._traces.add(span["traceId"])
            self._depths[span["spanId"]] = self._depth(span)
        return [(span, self._depths[span["spanId"]]) for span in ordered]

    def add(self, span: Obj, now: int) -> None:
        """A span as it comes (`now`: the local clock in ns); it waits until due()."""
        if span["spanId"] in self._seen:
            return
        self._seen[span["spanId"]] = span
        trace = span["traceId"]
        if trace not in self._traces and self.life.named_by(span):
            self._traces.add(trace)
            self._held += self._pending.pop(trace, [])
        if trace in self._traces:
            self._held.append((span, now))
        else:
            self._pending.setdefault(trace, []).append((span, now))

    def due(self, now: int) -> list[tuple[Obj, int]]:
        """The spans to print now, oldest first: each has waited `hold`, and its parent
        has come (or it waited `parent_wait` for it); a span not due holds back those
        that started after it."""
        self._held.sort(key=lambda held: held[0]["start"])
        out: list[tuple[Obj, int]] = []
        while self._held:
            span, came = self._held[0]
            waited = now - came
            parent = span.get("parentSpanId") or ""
            orphan = bool(parent) and parent not in self._seen
            if waited < self.hold or (orphan and waited < self.parent_wait):
                break
            self._held.pop(0)
            self._depths[span["spanId"]] = depth = self._depth(span)
            out.append((span, depth))
        return out

    def rest(self) -> list[tuple[Obj, int]]:
        """Every span still held, when no more will come."""
        return self.due(now=2**63)

    def _depth(self, span: Obj) -> int:
        parent = span.get("parentSpanId") or ""
        return self._depths[parent] + 1 if parent in self._depths else 0
