"""The garbage collector: delete objects whose owners are gone, orphan or delete the
dependents of an owner being deleted (upstream pkg/controller/garbagecollector/
garbagecollector.go).

    graph (graph.py) --> attempt_to_delete(uid) --> sync(uid), attemptToDeleteItem:
        GET the object; gone or another uid: a virtual delete event for the graph
        owner deleted in the foreground: remove `foregroundDeletion` once no dependent
            with blockOwnerDeletion is left, else queue those dependents
        classify its owners by GET: solid (exists), dangling (gone), waiting (being
            deleted in the foreground)
            a solid owner left    -> patch the dangling and waiting references away
            only waiting owners   -> delete it in the foreground too
            none left             -> delete it (background, or as its finalizers say)
    graph --> attempt_to_orphan(uid) --> remove the owner's reference from every
        dependent, then the owner's `orphan` finalizer

Patches on dependents carry the dependent's uid (a precondition): a dependent deleted and
recreated under the same name is never touched by mistake.
"""

from __future__ import annotations

import asyncio
import logging
from typing import ClassVar

from minikube_py.api import Obj
from minikube_py.api.customresources import preferred_resource
from minikube_py.api.resources import RESOURCES, Resource, by_kind
from minikube_py.client.errors import Conflict, NotFound
from minikube_py.client.informer import EventHandler
from minikube_py.client.rest import ResourceClient
from minikube_py.client.workqueue import RateLimitingQueue, worker
from minikube_py.controllers.base import Controller, ControllerContext, ExpectedSyncError
from minikube_py.controllers.garbagecollector.graph import (
    FOREGROUND_FINALIZER,
    ORPHAN_FINALIZER,
    GraphBuilder,
    Node,
    ObjectReference,
    blocks_owner_deletion,
    has_finalizer,
    owner_identity,
)

log = logging.getLogger(__name__)

# Resources the collector never watches (upstream DefaultIgnoredResources).
IGNORED_RESOURCES = {("", "events"), ("events.k8s.io", "events")}
REMOVE_FINALIZER_ATTEMPTS = 4  # retry.DefaultBackoff.Steps


def deletable_resources() -> list[Resource]:
    """GetDeletableResources: every resource that supports list, watch and delete."""
    return [resource for resource in RESOURCES
            if {"list", "watch", "delete"} <= set(resource.verbs)
            and (resource.group, resource.plural) not in IGNORED_RESOURCES]


class VirtualDeleteEnqueued(Exception):
    """The item is gone: the graph was told, nothing more to do for this key."""


class NamespacedOwnerOfClusterScopedObject(Exception):
    """A cluster-scoped object names a namespaced owner: retrying cannot help."""


class NotObservedYet(ExpectedSyncError):
    """A virtual node not yet seen by an informer: check it again later."""


class UnknownKind(ExpectedSyncError):
    """A kind this server does not serve (a RESTMapping error): retried with backoff."""


class GarbageCollector(Controller):
    """Cascading deletion by ownerReferences (upstream GarbageCollector)."""

    name: ClassVar[str] = "garbagecollector"
    event_source: ClassVar[str] = "garbage-collector-controller"
    workers: ClassVar[int] = 20  # --concurrent-gc-syncs

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.attempt_to_orphan = RateLimitingQueue("garbage_collector_attempt_to_orphan",
                                                   metrics=ctx.workqueue_metrics)
        self.graph = GraphBuilder(
            attempt_to_delete=lambda node: self.queue.add(node.identity.uid),
            attempt_to_orphan=lambda node: self.attempt_to_orphan.add(node.identity.uid),
            recorder=self.recorder)
        for resource in deletable_resources():
            informer = self.informer(resource.plural, resource.group or None)
            informer.add_event_handler(self.graph.event_handler(resource))
        # custom resources: monitored once their definition is Established
        self.custom_kinds: dict[tuple[str, str], Resource] = {}
        self.informer("customresourcedefinitions", "apiextensions.k8s.io").add_event_handler(
            EventHandler(on_add=self._monitor_custom_resource,
                         on_update=lambda _old, new: self._monitor_custom_resource(new)))

    def _monitor_custom_resource(self, crd: Obj) -> None:
        """Monitor the resource an Established definition serves (upstream's collector
        finds it by its periodic discovery resync; here the definition's event says so)."""
        resource = preferred_resource(crd)
        if resource is None or self.custom_kinds.get(
                (resource.api_version, resource.kind)) == resource:
            return
        self.custom_kinds[(resource.api_version, resource.kind)] = resource
        informer = self.ctx.informers.informer_for(resource)
        informer.add_event_handler(self.graph.event_handler(resource))

    async def run(self, workers: int | None = None) -> None:
        """Workers for attempt_to_delete (the base loop) and for attempt_to_orphan."""
        count = workers or self.workers
        orphaners = [asyncio.create_task(
            worker(self.attempt_to_orphan, self.attempt_to_orphan_item, self._orphan_failed),
            name=f"{self.name}-orphan-{i}") for i in range(count)]
        try:
            await super().run(count)
        finally:
            self.attempt_to_orphan.shut_down()
            for task in orphaners:
                task.cancel()
            await asyncio.gather(*orphaners, return_exceptions=True)

    # -- API access by identity (upstream operations.go) -----------------------------------------

    def resource_client(self, identity: ObjectReference) -> tuple[ResourceClient, str | None]:
        """apiResource: the client for the identity's kind, and the namespace to use."""
        resource = by_kind(identity.api_version, identity.kind) or self.custom_kinds.get(
            (identity.api_version, identity.kind))
        if resource is None:
            raise UnknownKind(f"unable to get REST mapping for kind: {identity.kind}, "
                              f"version: {identity.api_version}")
        namespace = identity.namespace if resource.namespaced else None
        return self.client.resource(resource.plural, resource.group), namespace

    async def get_object(self, identity: ObjectReference) -> Obj | None:
        client, namespace = self.resource_client(identity)
        try:
            return await client.get(identity.name, namespace)
        except NotFound:
            return None

    async def delete_object(self, identity: ObjectReference, policy: str) -> None:
        """deleteObject: with the uid as precondition and an explicit propagation policy."""
        client, namespace = self.resource_client(identity)
        log.info("%s: deleting %s with propagationPolicy=%s", self.name, identity, policy)
        try:
            await client.delete(identity.name, namespace, propagation_policy=policy,
                                preconditions={"uid": identity.uid})
        except NotFound:
            return

    async def patch_object(self, identity: ObjectReference, patch: Obj, patch_type: str) -> None:
        client, namespace = self.resource_client(identity)
        await client.patch(identity.name, patch, namespace, patch_type=patch_type)

    async def delete_owner_references(self, item: Node, owner_uids: list[str]) -> None:
        """Strategic merge patch removing references by uid, with the item's uid."""
        if self._is_custom(item.identity):
            # no strategic merge for custom resources: upstream's JSON merge patch of the
            # references that stay, guarded by the resourceVersion it read them at
            latest = await self.get_object(item.identity)
            if latest is None:
                return
            kept = [ref for ref in latest["metadata"].get("ownerReferences") or []
                    if ref.get("uid") not in owner_uids]
            await self.patch_object(item.identity, {"metadata": {
                "ownerReferences": kept or None, "uid": item.identity.uid,
                "resourceVersion": latest["metadata"]["resourceVersion"]}}, "merge")
            return
        patch = {"metadata": {
            "ownerReferences": [{"$patch": "delete", "uid": uid} for uid in owner_uids],
            "uid": item.identity.uid}}
        await self.patch_object(item.identity, patch, "strategic")

    def _is_custom(self, identity: ObjectReference) -> bool:
        return (identity.api_version, identity.kind) in self.custom_kinds

    async def unblock_owner_references(self, item: Node) -> None:
        """Set blockOwnerDeletion to false on the item's blocking references."""
        if self._is_custom(item.identity):
            latest = await self.get_object(item.identity)
            if latest is None:
                return
            every = [{**ref, "blockOwnerDeletion": False} if blocks_owner_deletion(ref) else ref
                     for ref in latest["metadata"].get("ownerReferences") or []]
            await self.patch_object(item.identity, {"metadata": {
                "ownerReferences": every, "uid": item.identity.uid,
                "resourceVersion": latest["metadata"]["resourceVersion"]}}, "merge")
            return
        references = [{**reference, "blockOwnerDeletion": False}
                      for reference in item.owners if blocks_owner_deletion(reference)]
        patch = {"metadata": {"ownerReferences": references, "uid": item.identity.uid}}
        await self.patch_object(item.identity, patch, "strategic")

    async def remove_finalizer(self, owner: Node, finalizer: str) -> None:
        """removeFinalizer: a merge patch of the remaining finalizers, on resourceVersion."""
        for attempt in range(REMOVE_FINALIZER_ATTEMPTS):
            obj = await self.get_object(owner.identity)
            if obj is None:
                return
            finalizers = obj["metadata"].get("finalizers") or []
            if finalizer not in finalizers:
                return
            remaining = [name for name in finalizers if name != finalizer]
            patch = {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"],
                                  "finalizers": remaining or None}}
            try:
                await self.patch_object(owner.identity, patch, "merge")
                return
            except Conflict:
                if attempt == REMOVE_FINALIZER_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.01 * 5 ** attempt)

    # -- attemptToDelete ------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """attemptToDeleteWorker: `key` is a uid in the graph."""
        item = self.graph.uid_to_node.get(key)
        if item is None:
            return
        try:
            await self.attempt_to_delete_item(item)
        except (VirtualDeleteEnqueued, NamespacedOwnerOfClusterScopedObject):
            return
        if item.virtual:
            raise NotObservedYet(f"{item.identity} has not been observed by an informer yet")

    async def attempt_to_delete_item(self, item: Node) -> None:
        """attemptToDeleteItem: delete the item iff all its owners are gone."""
        if item.being_deleted and not item.deleting_dependents:
            return  # on its way out; its dependents are handled once it is gone
        latest = await self.get_object(item.identity)
        if latest is None or latest["metadata"].get("uid") != item.identity.uid:
            self.graph.enqueue_virtual_delete_event(item.identity)
            raise VirtualDeleteEnqueued()
        if item.deleting_dependents:
            await self.process_deleting_dependents_item(item)
            return
        references = latest["metadata"].get("ownerReferences") or []
        if not references:
            return
        solid, dangling, waiting = await self.classify_references(item, references)
        if solid:
            if dangling or waiting:
                uids = [reference["uid"] for reference in dangling + waiting]
                await self.delete_owner_references(item, uids)
            return
        if waiting and item.dependents:
            if any(dependent.deleting_dependents for dependent in item.dependents):
                # A cycle would wait forever: stop blocking our owners, then go.
                await self.unblock_owner_references(item)
            await self.delete_object(item.identity, "Foreground")
            return
        if has_finalizer(latest, ORPHAN_FINALIZER):
            policy = "Orphan"
        elif has_finalizer(latest, FOREGROUND_FINALIZER):
            policy = "Foreground"
        else:
            policy = "Background"
        await self.delete_object(item.identity, policy)

    async def process_deleting_dependents_item(self, item: Node) -> None:
        """An owner deleted in the foreground goes once no blocking dependent is left."""
        blocking = item.blocking_dependents()
        if not blocking:
            await self.remove_finalizer(item, FOREGROUND_FINALIZER)
            return
        for dependent in blocking:
            if not dependent.deleting_dependents:
                self.queue.add(dependent.identity.uid)

    async def classify_references(self, item: Node, references: list[Obj]
                                  ) -> tuple[list[Obj], list[Obj], list[Obj]]:
        """classifyReferences: solid, dangling, and waiting-for-dependents owners."""
        solid: list[Obj] = []
        dangling: list[Obj] = []
        waiting: list[Obj] = []
        for reference in references:
            owner = await self.live_owner(reference, item)
            if owner is None:
                dangling.append(reference)
            elif owner["metadata"].get("deletionTimestamp") and has_finalizer(
                    owner, FOREGROUND_FINALIZER):
                waiting.append(reference)
            else:
                solid.append(reference)
        return solid, dangling, waiting

    async def live_owner(self, reference: Obj, item: Node) -> Obj | None:
        """isDangling: the owner as the API server has it now, or None when it is gone
        (not found, or found with another uid). Confirmed absences are cached."""
        absent = owner_identity(reference, "")
        if absent in self.graph.absent_owner_cache:
            return None
        absent = owner_identity(reference, item.identity.namespace)
        if absent in self.graph.absent_owner_cache:
            return None
        resource = by_kind(absent.api_version, absent.kind)
        if resource is None:
            raise UnknownKind(f"unable to get REST mapping for kind: {absent.kind}, "
                              f"version: {absent.api_version}")
        if not resource.namespaced:
            absent = owner_identity(reference, "")
        elif not item.identity.namespace:
            log.info("%s: %s is cluster-scoped but names a namespaced owner %s", self.name,
                     item.identity, absent)
            raise NamespacedOwnerOfClusterScopedObject()
        owner = await self.get_object(absent)
        if owner is None or owner["metadata"].get("uid") != reference.get("uid"):
            self.graph.absent_owner_cache.add(absent)
            return None
        return owner

    # -- attemptToOrphan ------------------------------------------------------------------------

    def _orphan_failed(self, uid: str, error: Exception) -> None:
        """Say why an owner's dependents could not be orphaned (retried with backoff)."""
        log.info("%s: orphaning the dependents of %s failed: %s", self.name, uid, error)

    async def attempt_to_orphan_item(self, uid: str) -> None:
        """attemptToOrphanWorker: drop the owner's reference from every dependent, then
        the owner's `orphan` finalizer, which lets the API server remove it."""
        owner = self.graph.uid_to_node.get(uid)
        if owner is None:
            return
        await self.orphan_dependents(owner, list(owner.dependents))
        await self.remove_finalizer(owner, ORPHAN_FINALIZER)

    async def orphan_dependents(self, owner: Node, dependents: list[Node]) -> None:
        async def orphan(dependent: Node) -> None:
            try:
                await self.delete_owner_references(dependent, [owner.identity.uid])
            except NotFound:
                return

        results = await asyncio.gather(*(orphan(dependent) for dependent in dependents),
                                       return_exceptions=True)
        failures = [result for result in results if isinstance(result, Exception)]
        if failures:
            raise RuntimeError(f"failed to orphan dependents of owner {owner.identity}, got "
                               f"errors: {'; '.join(map(str, failures))}")
