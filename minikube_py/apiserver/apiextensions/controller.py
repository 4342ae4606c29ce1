"""Definitions to served resources: the API server's own controllers for
CustomResourceDefinitions (upstream's apiextensions-apiserver runs the same set).

    the definitions' watch cache -> one sync per changed definition:
      gone                 stop serving its resources (their watch cache stops)
      being deleted        finalizer customresourcecleanup: delete every instance, then
                           drop the finalizer (upstream's finalizer controller)
      names / conditions   NamesAccepted and Established written to status (naming.py)
      Established          serve each served version: a Resource, a strategy from the
                           version's schema, a Store on /registry/<group>/<plural>/,
                           added to the server's table of stores (what the handler routes
                           by) and to discovery

Nothing here runs per request: a request for a custom resource finds its store in the
same dict as a built-in one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from minikube_py.api import Obj, errors
from minikube_py.api.customresources import is_established, served_resource
from minikube_py.api.managedfields import FieldManager
from minikube_py.api.resources import Resource
from minikube_py.api.selectors import parse_field_selector, parse_label_selector
from minikube_py.apiserver.apiextensions.conversion import WebhookConverter
from minikube_py.apiserver.apiextensions.naming import calculate_status, set_condition
from minikube_py.apiserver.apiextensions.openapi import Published
from minikube_py.apiserver.apiextensions.printing import printer
from minikube_py.apiserver.apiextensions.stores import CLEANUP_FINALIZER, CustomResourceStore
from minikube_py.apiserver.apiextensions.strategy import (
    CustomResourceStrategy,
    CustomResourceVersions,
)
from minikube_py.apiserver.auth.admission import Chain
from minikube_py.apiserver.auth.admission.chain import service_resolver
from minikube_py.apiserver.registry.store import (
    UNOWNED_FIELDS,
    DeleteOptions,
    ListOptions,
    Store,
)
from minikube_py.apiserver.storage.etcd import EtcdError
from minikube_py.apiserver.storage.watchcache import WatchCache
from minikube_py.client.logs import kv

log = logging.getLogger("minikube_py.apiserver.apiextensions")

StoreKey = tuple[str, str, str]


@dataclass
class Served:
    """What one definition serves: its watch cache and a store per served version."""

    cache: WatchCache
    task: asyncio.Task[None]
    signature: Any = None
    crd: Obj = field(default_factory=dict)
    stores: dict[StoreKey, CustomResourceStore] = field(default_factory=dict)


class CustomResourceDefinitions:
    """The definitions' controllers, and the stores of the resources they define."""

    def __init__(self, crds: Store, stores: dict[StoreKey, Store],
                 caches: dict[str, WatchCache], admission: Callable[[], Chain],
                 new_cache: Callable[[str, str, str], WatchCache]) -> None:
        self.crds = crds
        self.stores = stores
        self.caches = caches
        self.admission = admission
        # (prefix, plural, group) -> the watch cache of a defined resource
        self.new_cache = new_cache
        self.served: dict[str, Served] = {}
        # every served resource, rebuilt when one changes (discovery reads it)
        self.resources: tuple[Resource, ...] = ()
        # their schemas in OpenAPI v2 and v3, rebuilt with them
        self.openapi = Published()
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._cleanups: dict[str, asyncio.Task[None]] = {}

    # -- the loop ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Watch the definitions and sync each one that changes, until cancelled."""
        workers = [asyncio.create_task(self._watch()), asyncio.create_task(self._work())]
        try:
            await asyncio.gather(*workers)
        finally:
            for task in workers + list(self._cleanups.values()):
                task.cancel()
            for served in self.served.values():
                served.task.cancel()
            for task in workers + list(self._cleanups.values()) + [
                    s.task for s in self.served.values()]:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _watch(self) -> None:
        """Every definition once (ADDED), then each change; again after a relist."""
        cache = self.crds.cache
        await cache.ready.wait()
        while True:
            watcher = cache.watch(None, None)
            try:
                while not watcher.closed or watcher.queue:
                    for _type, obj, _event in await watcher.next_batch(None):
                        self._queue.put_nowait(obj["metadata"]["name"])
            finally:
                cache.stop_watching(watcher)
            await asyncio.sleep(0.1)

    async def _work(self) -> None:
        while True:
            name = await self._queue.get()
            try:
                await self.sync(name)
            except errors.APIError as err:
                if err.code != 409:
                    log.warning(kv("syncing CustomResourceDefinition failed", crd=name,
                                   err=err.message))
                self._queue.put_nowait(name)
                await asyncio.sleep(0.2)
            except EtcdError as err:
                log.warning(kv("syncing CustomResourceDefinition failed", crd=name,
                               err=str(err)))
                self._queue.put_nowait(name)
                await asyncio.sleep(1.0)
            except Exception:
                # a definition this server cannot serve must not stop the others' syncs
                log.exception(kv("syncing CustomResourceDefinition failed", crd=name))

    # -- one definition ---------------------------------------------------------------------

    async def sync(self, name: str) -> None:
        """Sync one definition: its status, its finalizer, what it serves."""
        crd = self.crds.cache.get(self.crds.key("", name))
        if crd is None:
            self._unserve(name)
            return
        group = (crd.get("spec") or {}).get("group")
        if crd["metadata"].get("deletionTimestamp"):
            if CLEANUP_FINALIZER in (crd["metadata"].get("finalizers") or ()):
                if is_established(crd):
                    # its storage, to delete the instances (after a restart, too)
                    self._serve(crd)
                self._start_cleanup(crd)
            return
        status = calculate_status(crd, self.crds.cache.list())
        if status != crd.get("status"):
            await self._write_status(name, status)
            # a definition of the group may now get a name this one gave up
            for other in self.crds.cache.list():
                if other["metadata"]["name"] != name and (
                        (other.get("spec") or {}).get("group") == group):
                    self._queue.put_nowait(other["metadata"]["name"])
            return
        if is_established(crd):
            self._serve(crd)

    async def _write_status(self, name: str, status: Obj) -> None:
        """Write the definition's status; the rest of it (megabytes of schema, for some)
        is written as stored, not copied."""
        def mutate(current: Obj) -> Obj:
            current["status"] = status
            return current

        def private_copy(stored: Obj) -> Obj:
            # what the write changes: status, and metadata's resourceVersion after it
            return {**stored, "metadata": dict(stored["metadata"])}

        await self.crds.guaranteed_update("", name, mutate, private_copy)

    # -- serving ----------------------------------------------------------------------------

    def _serve(self, crd: Obj) -> None:
        """Serve each served version of an Established definition (again when it
        changed)."""
        name = crd["metadata"]["name"]
        spec = crd["spec"]
        accepted = crd["status"]["acceptedNames"]
        # a definition deleted and created again under its name is served afresh
        signature = (crd["metadata"].get("uid"), crd["metadata"].get("generation"),
                     repr(accepted))
        served = self.served.get(name)
        if served is not None and served.signature == signature:
            return
        group, plural = spec["group"], accepted.get("plural") or spec["names"]["plural"]
        prefix = f"/registry/{group}/{plural}/"
        if served is None:
            cache = self.new_cache(prefix, plural, group)
            self.caches[prefix] = cache
            served = Served(cache, asyncio.create_task(cache.run()))
            self.served[name] = served
        for key in served.stores:
            self.stores.pop(key, None)
        served.stores = {}
        versions = [v for v in spec["versions"] if v.get("served")]
        storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
        converter = None
        if (spec.get("conversion") or {}).get("strategy") == "Webhook":
            converter = WebhookConverter(crd, service_resolver(self.stores))
        field_versions = CustomResourceVersions(crd, converter)
        for version in versions:
            resource = served_resource(crd, version)
            strategy = CustomResourceStrategy(
                resource, version["schema"]["openAPIV3Schema"], resource.api_version,
                f"{group}/{storage}",
                (version.get("subresources") or {}).get("scale"),
                version.get("selectableFields"), converter)
            strategy.printer = printer(version.get("additionalPrinterColumns") or [])
            store = CustomResourceStore(resource, strategy, self.crds.etcd, served.cache,
                                        self.admission())
            # the Type is built on the first write that merges with it
            store.field_manager = FieldManager(
                lambda served_strategy=strategy: served_strategy.schema, resource.api_version,
                strategy.reset_fields(), UNOWNED_FIELDS, field_versions)
            key = (group, resource.version, resource.plural)
            served.stores[key] = store
            self.stores[key] = store
        served.signature = signature
        served.crd = crd
        self._rebuild_resources()
        log.info(kv("serving custom resource", crd=name,
                    versions=",".join(v["name"] for v in versions)))

    def _unserve(self, name: str) -> None:
        served = self.served.pop(name, None)
        if served is None:
            return
        for key in served.stores:
            self.stores.pop(key, None)
        self.caches.pop(served.cache.prefix, None)
        served.cache.end_watches()
        served.task.cancel()
        self._rebuild_resources()
        log.info(kv("stopped serving custom resource", crd=name))

    def _rebuild_resources(self) -> None:
        self.resources = tuple(store.resource for served in self.served.values()
                               for store in served.stores.values())
        self.openapi.rebuild([served.crd for served in self.served.values()])

    # -- deletion ---------------------------------------------------------------------------

    def _start_cleanup(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        running = self._cleanups.get(name)
        if running is None or running.done():
            self._cleanups[name] = asyncio.create_task(self._cleanup(name))

    async def _cleanup(self, name: str) -> None:
        """The finalizer controller: refuse new instances, delete every instance, wait
        until they are gone (their own finalizers may hold them), drop the finalizer."""
        served = self.served.get(name)
        if served is not None:
            for store in served.stores.values():
                store.terminating = True
        await self._set_terminating(name, "InstanceDeletionInProgress",
                                    "CustomResource deletion is in progress")
        if served is not None and served.stores:
            store = next(iter(served.stores.values()))
            everything = ListOptions(parse_label_selector(""), parse_field_selector(""))
            while True:
                # a consistent read of etcd: the watch cache may not show an instance
                # created a moment ago, which would then outlive its definition
                remaining = (await store.list("", everything)).items
                if not remaining:
                    break
                for obj in remaining:
                    metadata = obj["metadata"]
                    if metadata.get("deletionTimestamp"):
                        continue
                    with contextlib.suppress(errors.APIError):
                        await store.delete(metadata.get("namespace", ""), metadata["name"],
                                           DeleteOptions())
                await asyncio.sleep(0.2)

        def drop_finalizer(current: Obj) -> Obj:
            finalizers = [f for f in current["metadata"].get("finalizers") or []
                          if f != CLEANUP_FINALIZER]
            if finalizers:
                current["metadata"]["finalizers"] = finalizers
            else:
                current["metadata"].pop("finalizers", None)
            return current

        await self.crds.guaranteed_update("", name, drop_finalizer)

    async def _set_terminating(self, name: str, reason: str, message: str) -> None:
        def mutate(current: Obj) -> Obj:
            set_condition(current, "Terminating", True, reason, message)
            return current

        await self.crds.guaranteed_update("", name, mutate)

