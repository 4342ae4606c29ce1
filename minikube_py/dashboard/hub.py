"""One watch per resource, shared by every browser tab.

    informers (nodes, pods, services, endpointslices, events)
        --> on_add / on_update / on_delete: the object cut to what the page draws (view_of)
        --> every tab's queue: {"type": ADDED|MODIFIED|DELETED, "kind", "object"}

A tab that joins first gets the snapshot (every cached object, cut the same way), then
the changes. A tab too slow to keep up (its queue full) is dropped: its EventSource
reconnects by itself and starts again from a fresh snapshot, so the server never holds
an unbounded backlog for one tab.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from minikube_py.api import Obj
from minikube_py.client.informer import EventHandler, SharedInformerFactory

QUEUE_SIZE = 10_000  # changes a tab may lag behind before it is dropped


def _meta(obj: Obj) -> Obj:
    metadata = obj.get("metadata") or {}
    return {"namespace": metadata.get("namespace", ""), "name": metadata.get("name", ""),
            "uid": metadata.get("uid", ""),
            "deleting": bool(metadata.get("deletionTimestamp"))}


def node_view(node: Obj) -> Obj:
    """A node box: its conditions, taints, allocatable resources and whether it is cordoned."""
    spec, status = node.get("spec") or {}, node.get("status") or {}
    return {**_meta(node),
            "conditions": [{"type": c.get("type", ""), "status": c.get("status", ""),
                            "reason": c.get("reason", "")}
                           for c in status.get("conditions") or []],
            "taints": [{"key": t.get("key", ""), "value": t.get("value", ""),
                        "effect": t.get("effect", "")} for t in spec.get("taints") or []],
            "allocatable": dict(status.get("allocatable") or {}),
            "unschedulable": bool(spec.get("unschedulable"))}


def pod_view(pod: Obj) -> Obj:
    """A pod inside its node's box (or in the pending lane when it has no node yet)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    ready = next((c.get("status") == "True" for c in status.get("conditions") or []
                  if c.get("type") == "Ready"), False)
    return {**_meta(pod), "nodeName": spec.get("nodeName", ""),
            "phase": status.get("phase", "Pending"), "ready": ready,
            "podIP": status.get("podIP", "")}


def service_view(service: Obj) -> Obj:
    spec = service.get("spec") or {}
    return {**_meta(service), "type": spec.get("type", "ClusterIP"),
            "clusterIP": spec.get("clusterIP", ""),
            "ports": [{"name": p.get("name", ""), "port": p.get("port"),
                       "protocol": p.get("protocol", "TCP")} for p in spec.get("ports") or []]}


def endpoint_slice_view(endpoint_slice: Obj) -> Obj:
    """The endpoints of one slice, with the Service it belongs to (its label)."""
    labels = (endpoint_slice.get("metadata") or {}).get("labels") or {}
    return {**_meta(endpoint_slice), "service": labels.get("kubernetes.io/service-name", ""),
            "endpoints": [{"addresses": list(e.get("addresses") or []),
                           "ready": (e.get("conditions") or {}).get("ready") is not False,
                           "nodeName": e.get("nodeName", ""),
                           "pod": (e.get("targetRef") or {}).get("name", "")}
                          for e in endpoint_slice.get("endpoints") or []]}


def event_view(event: Obj) -> Obj:
    involved = event.get("involvedObject") or {}
    return {**_meta(event), "type": event.get("type", ""), "reason": event.get("reason", ""),
            "message": event.get("message", ""), "count": event.get("count", 1),
            "source": (event.get("source") or {}).get("component", ""),
            "time": (event.get("lastTimestamp") or event.get("eventTime")
                     or (event.get("metadata") or {}).get("creationTimestamp") or ""),
            "object": {"kind": involved.get("kind", ""), "name": involved.get("name", ""),
                       "namespace": involved.get("namespace", "")}}


# kind on the wire -> (plural, group, cut)
KINDS: dict[str, tuple[str, str | None, Callable[[Obj], Obj]]] = {
    "Node": ("nodes", None, node_view),
    "Pod": ("pods", None, pod_view),
    "Service": ("services", None, service_view),
    "EndpointSlice": ("endpointslices", "discovery.k8s.io", endpoint_slice_view),
    "Event": ("events", None, event_view),
}


class ClusterHub:
    """The informers the page draws from, and the tabs listening to their changes."""

    def __init__(self, informers: SharedInformerFactory) -> None:
        self.informers = informers
        self._tabs: set[asyncio.Queue[Obj | None]] = set()
        for kind, (plural, group, cut) in KINDS.items():
            informers.informer(plural, group).add_event_handler(EventHandler(
                on_add=self._handler(kind, "ADDED", cut),
                on_update=lambda _old, new, kind=kind, cut=cut: self._send(
                    kind, "MODIFIED", cut(new)),
                on_delete=self._handler(kind, "DELETED", cut)))

    def _handler(self, kind: str, change: str, cut: Callable[[Obj], Obj]
                 ) -> Callable[[Obj], None]:
        return lambda obj: self._send(kind, change, cut(obj))

    def _send(self, kind: str, change: str, view: Obj) -> None:
        """Tell every tab of one change; drop the tabs that lag QUEUE_SIZE behind."""
        message = {"type": change, "kind": kind, "object": view}
        for queue in list(self._tabs):
            try:
                queue.put_nowait(message)
            except asyncio.QueueFull:
                self._tabs.discard(queue)
                queue.get_nowait()  # room for the None that ends the tab's stream
                queue.put_nowait(None)

    def snapshot(self) -> dict[str, list[Obj]]:
        """Every cached object, cut to its view, by kind."""
        return {kind: [cut(obj) for obj in self.informers.informer(plural, group).store.list()]
                for kind, (plural, group, cut) in KINDS.items()}

    def join(self) -> tuple[dict[str, Any], asyncio.Queue[Obj | None]]:
        """A new tab: the snapshot, and the queue its changes come on (None: start over)."""
        queue: asyncio.Queue[Obj | None] = asyncio.Queue(QUEUE_SIZE)
        self._tabs.add(queue)
        return self.snapshot(), queue

    def leave(self, queue: asyncio.Queue[Obj | None]) -> None:
        self._tabs.discard(queue)

    @property
    def tabs(self) -> int:
        return len(self._tabs)
