"""The receiver's memory: spans kept on disk, bounded, and found by trace or by object.

    add(spans) -> the newest segment file, spans-<n>.jsonl (one span per line, as it
                  came: otlp.decode's form, read in full only when asked for)
               -> the indexes: trace id -> its spans; object -> the traces that touched it
    a full segment starts the next; beyond `segments` files the oldest is deleted, with
    its spans: the store never holds more than `max_spans`
    a restarted receiver reads the segments back

An object is named by the attributes the API server and the components put on their
spans: k8s.resource (plural), k8s.namespace and k8s.name ("pods/default/web-1"); the
receiver reads only those, and the trace id, when spans arrive.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

import orjson

from minikube_py.api import Obj
from minikube_py.tracing import otlp


def object_key(resource: str, namespace: str, name: str) -> str:
    return f"{resource}/{namespace}/{name}"


class SpanStore:
    def __init__(self, directory: Path, *, max_spans: int = 200_000,
                 segments: int = 4) -> None:
        self.directory = directory
        self.per_segment = max(1, max_spans // segments)
        self.max_segments = segments
        self._segments: list[tuple[Path, list[Obj]]] = []
        self._traces: dict[str, list[Obj]] = {}
        self._objects: dict[str, dict[str, None]] = {}
        self._followers: list[tuple[set[str], str | None, asyncio.Queue[Obj]]] = []

    def load(self) -> None:
        """Read the segments a previous run left."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for path in sorted(self.directory.glob("spans-*.jsonl")):
            records = []
            for line in path.read_bytes().splitlines():
                try:
                    records.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    continue  # a line cut short by a crash
            self._segments.append((path, records))
            for record in records:
                self._index(record)
        self._trim()

    @property
    def count(self) -> int:
        return sum(len(records) for _, records in self._segments)

    def add(self, records: Iterable[Obj]) -> None:
        batch = list(records)
        while batch:
            if not self._segments or len(self._segments[-1][1]) >= self.per_segment:
                self._new_segment()
            path, segment = self._segments[-1]
            room = self.per_segment - len(segment)
            taken, batch = batch[:room], batch[room:]
            with path.open("ab") as file:
                file.write(b"".join(orjson.dumps(r) + b"\n" for r in taken))
            segment.extend(taken)
            for record in taken:
                self._index(record)
            self._notify(taken)
        self._trim()

    def trace(self, trace_id: str) -> list[Obj]:
        """Every span of one trace in full (otlp.flatten), oldest first."""
        return [otlp.flatten(r) for r in sorted(self._traces.get(trace_id) or [],
                                                key=lambda r: r["start"])]

    def traces_of(self, resource: str, namespace: str, name: str) -> list[str]:
        """The traces whose spans name this object, in the order they first did."""
        return list(self._objects.get(object_key(resource, namespace, name)) or {})

    def follow(self, traces: set[str], key: str | None) -> asyncio.Queue[Obj]:
        """A queue of each new span of these traces, or of any trace that comes to name
        the object `key`."""
        queue: asyncio.Queue[Obj] = asyncio.Queue(maxsize=10_000)
        self._followers.append((traces, key, queue))
        return queue

    def unfollow(self, queue: asyncio.Queue[Obj]) -> None:
        self._followers = [f for f in self._followers if f[2] is not queue]

    def _index(self, record: Obj) -> None:
        self._traces.setdefault(record["traceId"], []).append(record)
        if record.get("object"):
            self._objects.setdefault(record["object"], {})[record["traceId"]] = None

    def _notify(self, records: list[Obj]) -> None:
        """Hand followers the new spans of their traces; a trace comes to be theirs when
        any span of the batch names their object (its parent may end before it)."""
        if not self._followers:
            return
        for record in records:
            for traces, wanted, _ in self._followers:
                if record.get("object") == wanted:
                    traces.add(record["traceId"])
        for record in records:
            for traces, _, queue in self._followers:
                if record["traceId"] in traces and not queue.full():
                    queue.put_nowait(otlp.flatten(record))

    def _new_segment(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        number = int(self._segments[-1][0].stem.split("-")[1]) + 1 if self._segments else 1
        self._segments.append((self.directory / f"spans-{number:06d}.jsonl", []))

    def _trim(self) -> None:
        """Drop the oldest segments beyond the bound, then rebuild the indexes."""
        if len(self._segments) <= self.max_segments:
            return
        while len(self._segments) > self.max_segments:
            path, _ = self._segments.pop(0)
            path.unlink(missing_ok=True)
        self._traces, self._objects = {}, {}
        for _, records in self._segments:
            for record in records:
                self._index(record)
