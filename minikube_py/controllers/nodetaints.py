"""Adding and removing a node's taints with retries on conflict (upstream
pkg/controller/controller_utils.go: AddOrUpdateTaintOnNode, RemoveTaintOffNode)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

from minikube_py.api import Obj
from minikube_py.client.errors import Conflict
from minikube_py.client.rest import ResourceClient

UPDATE_TAINT_STEPS = 5  # UpdateTaintBackoff: 5 tries, 100 ms apart with jitter
UPDATE_TAINT_DELAY = 0.1


def match_taint(a: Obj, b: Obj) -> bool:
    """Taint.MatchTaint: the same key and effect (the value does not count)."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def taint_exists(taints: list[Obj], taint: Obj) -> bool:
    return any(match_taint(existing, taint) for existing in taints)


async def patch_node_taints(nodes: ResourceClient, name: str,
                            edit: Callable[[list[Obj]], list[Obj] | None]) -> None:
    """AddOrUpdateTaintOnNode / RemoveTaintOffNode: read the node, let `edit` compute its
    new taints (None: nothing to do), patch them with the resourceVersion read; retried
    on conflict."""
    for attempt in range(UPDATE_TAINT_STEPS):
        node = await nodes.get(name)
        taints = edit(list((node.get("spec") or {}).get("taints") or []))
        if taints is None:
            return
        patch = {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                 "spec": {"taints": taints or None}}
        try:
            await nodes.patch(name, patch, patch_type="strategic")
            return
        except Conflict:
            if attempt == UPDATE_TAINT_STEPS - 1:
                raise
            await asyncio.sleep(UPDATE_TAINT_DELAY * (1 + random.random()))


async def add_or_update_taints(nodes: ResourceClient, name: str, taints: list[Obj]) -> None:
    """AddOrUpdateTaintOnNode: add taints, or replace those with the same key and effect."""
    if not taints:
        return

    def edit(current: list[Obj]) -> list[Obj] | None:
        updated = False
        for taint in taints:
            existing = next((t for t in current if match_taint(t, taint)), None)
            if existing == taint:
                continue
            current = [t for t in current if not match_taint(t, taint)] + [taint]
            updated = True
        return current if updated else None

    await patch_node_taints(nodes, name, edit)


async def remove_taints(nodes: ResourceClient, name: str, node: Obj | None,
                        taints: list[Obj]) -> None:
    """RemoveTaintOffNode: no call at all when the cached node has none of them."""
    cached = ((node or {}).get("spec") or {}).get("taints") or []
    if not taints or (node is not None and not any(taint_exists(cached, t) for t in taints)):
        return

    def edit(current: list[Obj]) -> list[Obj] | None:
        kept = [t for t in current if not taint_exists(taints, t)]
        return kept if len(kept) != len(current) else None

    await patch_node_taints(nodes, name, edit)

