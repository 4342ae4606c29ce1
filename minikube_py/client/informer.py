"""Informers: a Reflector feeding an Indexer, and handlers told of every change.

    reflector (list+watch) --> informer.add/update/delete --> store (Indexer)
                                                          \\-> handlers: on_add, on_update,
                                                               on_delete (usually: queue a key)

A `SharedInformerFactory` hands out one informer per resource, so a process runs one
list+watch per resource however many control loops read it (client-go's
SharedInformerFactory). Handlers run in the event loop, in event order, and must be
quick: the usual handler only puts a key on a workqueue.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from minikube_py.api import Obj
from minikube_py.api.resources import Resource
from minikube_py.client.reflector import Reflector
from minikube_py.client.rest import Client
from minikube_py.client.store import Indexer, IndexFunc, object_key
from minikube_py.lifecycle import Component

log = logging.getLogger(__name__)


@dataclass
class EventHandler:
    """ResourceEventHandlerFuncs: any of the three may be left out."""

    on_add: Callable[[Obj], None] | None = None
    on_update: Callable[[Obj, Obj], None] | None = None
    on_delete: Callable[[Obj], None] | None = None


class SharedInformer(Component):
    """One resource's cache plus the handlers interested in it; run() lists and watches
    (the Reflector) and start() returns once the first list is in the cache."""

    def __init__(self, client: Client, plural: str, group: str | None = None, *,
                 namespace: str | None = None, label_selector: str = "",
                 field_selector: str = "") -> None:
        self.resource = client.resource(plural, group)
        self.store = Indexer()
        self.reflector = Reflector(self.resource, self, namespace=namespace,
                                   label_selector=label_selector,
                                   field_selector=field_selector)
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()

    @property
    def name(self) -> str:
        return self.reflector.name

    def add_event_handler(self, handler: EventHandler) -> None:
        """Register handlers; a late one first hears an add for every cached object."""
        self._handlers.append(handler)
        if handler.on_add is not None:
            for obj in self.store.list():
                self._call(handler.on_add, obj)

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        self.store.add_indexers(indexers)

    def last_sync_resource_version(self) -> str:
        """LastSyncResourceVersion: the version of the newest list or watch event the cache
        holds; every write at or below it has reached the cache (a watch is in order)."""
        return self.reflector.last_sync_resource_version

    def has_synced(self) -> bool:
        """True once the first list has been stored and announced to the handlers."""
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    async def run(self) -> None:
        await self.reflector.run()

    async def wait_started(self) -> None:
        await self.wait_for_sync()

    # -- the reflector's sink ------------------------------------------------------------

    def replace(self, objects: list[Obj], resource_version: str) -> None:
        """A fresh list: announce what is new, changed, or gone since the cache last knew."""
        old_items = {object_key(obj): obj for obj in self.store.list()}
        self.store.replace(objects)
        for obj in objects:
            old = old_items.pop(object_key(obj), None)
            if old is None:
                self._notify_add(obj)
            elif _version(old) != _version(obj):
                self._notify_update(old, obj)
        for gone in old_items.values():
            self._notify_delete(gone)
        self._synced.set()

    def add(self, obj: Obj) -> None:
        old = self.store.put(obj)
        if old is None:
            self._notify_add(obj)
        else:
            self._notify_update(old, obj)

    def update(self, obj: Obj) -> None:
        old = self.store.put(obj)
        if old is None:
            self._notify_add(obj)
        else:
            self._notify_update(old, obj)

    def delete(self, obj: Obj) -> None:
        self.store.remove(object_key(obj))
        self._notify_delete(obj)

    # -- handlers --------------------------------------------------------------------------

    def _notify_add(self, obj: Obj) -> None:
        for handler in self._handlers:
            if handler.on_add is not None:
                self._call(handler.on_add, obj)

    def _notify_update(self, old: Obj, new: Obj) -> None:
        for handler in self._handlers:
            if handler.on_update is not None:
                self._call(handler.on_update, old, new)

    def _notify_delete(self, obj: Obj) -> None:
        for handler in self._handlers:
            if handler.on_delete is not None:
                self._call(handler.on_delete, obj)

    def _call(self, func: Callable[..., None], *args: Obj) -> None:
        try:
            func(*args)
        except Exception:  # one broken handler must not stop the others or the informer
            log.exception("%s: event handler %r failed", self.name, func)


def _version(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("resourceVersion", "")


class SharedInformerFactory:
    """One informer per resource for the whole process; start them all, wait for sync."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._informers: dict[tuple[str, str], SharedInformer] = {}
        self._started = False

    def informer(self, plural: str, group: str | None = None) -> SharedInformer:
        resource = self.client.resource(plural, group).resource
        key = (resource.group, resource.plural)
        if key not in self._informers:
            informer = SharedInformer(self.client, resource.plural, resource.group)
            self._informers[key] = informer
            if self._started:
                informer.run_in_background()
        return self._informers[key]

    def informer_for(self, resource: Resource) -> SharedInformer:
        """The informer of a resource the table does not list (a custom resource)."""
        self.client.resource_for(resource)
        return self.informer(resource.plural, resource.group)

    def start(self) -> None:
        self._started = True
        for informer in self._informers.values():
            informer.run_in_background()

    async def wait_for_cache_sync(self, timeout: float | None = None) -> None:
        waits = [informer.wait_for_sync() for informer in self._informers.values()]
        async with asyncio.timeout(timeout):
            await asyncio.gather(*waits)

    async def stop(self) -> None:
        await asyncio.gather(*(informer.stop() for informer in self._informers.values()))
        self._started = False
