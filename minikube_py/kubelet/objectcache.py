"""The Secrets and ConfigMaps this node's pods use, each watched on its own (upstream's
watch-based manager, pkg/kubelet/util/manager/watch_based_manager.go).

A kubelet may read only what its pods use: the Node authorizer lets it get, list and
watch a Secret or ConfigMap by name (`?fieldSelector=metadata.name=x`) when a pod bound
to it refers to it, and nothing else. So instead of one watch of every Secret in the
cluster, it keeps one watch per object:

    a pod's volume or env needs kube-system/cfg -> watch configmaps in kube-system
                                                  with metadata.name=cfg, wait for sync
    the object changes                           -> resync the pods that use it
    housekeeping: no active pod uses it anymore   -> stop that watch

An object that does not exist (yet) is watched all the same: when it appears the pods
that wait for it are synced again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable

from minikube_py.api import Obj
from minikube_py.client.informer import EventHandler, SharedInformer
from minikube_py.client.rest import Client

log = logging.getLogger(__name__)
Key = tuple[str, str]  # namespace, name

SYNC_TIMEOUT = 10.0


class ObjectCache:
    """Per-object watches of one resource (configmaps or secrets)."""

    def __init__(self, client: Client, plural: str,
                 on_change: Callable[[Obj], None]) -> None:
        self.client = client
        self.plural = plural
        self.on_change = on_change
        self._watches: dict[Key, SharedInformer] = {}

    async def get(self, namespace: str, name: str) -> Obj | None:
        """The object as its watch last saw it (None if it does not exist)."""
        informer = self._watches.get((namespace, name))
        if informer is None:
            informer = SharedInformer(self.client, self.plural, namespace=namespace,
                                      field_selector=f"metadata.name={name}")
            informer.add_event_handler(EventHandler(
                on_add=self.on_change, on_update=lambda _old, new: self.on_change(new)))
            self._watches[(namespace, name)] = informer
            informer.run_in_background()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SYNC_TIMEOUT):
                await informer.wait_for_sync()
        return informer.store.get_by_name(namespace, name)

    async def keep_only(self, used: Iterable[Key]) -> None:
        """Stop the watches of objects no pod uses anymore."""
        wanted = set(used)
        for key in [key for key in self._watches if key not in wanted]:
            await self._watches.pop(key).stop()

    async def close(self) -> None:
        await self.keep_only(())
