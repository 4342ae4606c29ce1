"""The resource quota controller: keep every ResourceQuota's `status` true (upstream
pkg/controller/resourcequota: resource_quota_controller.go and the replenishment of
resource_quota_monitor.go).

    quota added, or its spec.hard changed ------------------+
    every --resource-quota-sync-period (5 min): all quotas -+--> queue "ns/name"
    an object a quota counts is deleted, or an update      |
      changes what it charges (replenishment) -------------+
                                                               |
    sync(key), which is syncResourceQuota:                     v
        status.hard = spec.hard
        status.used = the sum of api/quota.py's `usage` over the namespace's objects the
                      quota's scopes select, for the names in hard (0 when none counts)
        write status (PUT resourcequotas/status) only when hard or used changed

Enforcement is not here: quota admission refuses what would pass `hard` and bumps
`status.used` as it admits. This controller recounts, so usage goes down again when
objects go away, and is right even when admission is off.

Every namespaced resource that can be created, listed, watched and deleted is watched
(upstream's QuotaMonitor over GetQuotableResources), through the shared informers, so
`count/<anything>` is kept current.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import ClassVar

from minikube_py.api import Obj, quota
from minikube_py.api.resources import RESOURCES, Resource
from minikube_py.client.informer import EventHandler
from minikube_py.client.store import Indexer
from minikube_py.controllers.base import Controller, ControllerContext

log = logging.getLogger(__name__)


def quotable_resources() -> list[Resource]:
    """GetQuotableResources: namespaced, supports create, list, watch and delete, and is
    not one quota ignores (events, virtual resources)."""
    return [resource for resource in RESOURCES
            if resource.namespaced
            and {"create", "list", "watch", "delete"} <= set(resource.verbs)
            and (resource.group, resource.plural) not in quota.IGNORED_RESOURCES]


def _hard(quota_obj: Obj, where: str) -> quota.ResourceList:
    return quota.parse_resource_list((quota_obj.get(where) or {}).get("hard"))


class ResourceQuotaController(Controller):
    """Computes status.used of every ResourceQuota (upstream's resource quota controller)."""

    name: ClassVar[str] = "resourcequota"
    workers: ClassVar[int] = 5  # --concurrent-resource-quota-syncs

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.quotas_api = self.client.resource("resourcequotas")
        quotas = self.informer("resourcequotas")
        self.quotas = quotas.store
        quotas.add_event_handler(EventHandler(
            on_add=self.enqueue, on_update=self.quota_updated, on_delete=self.enqueue))
        # The quota monitor: one shared informer per quotable resource, each a replenisher.
        self.monitored: dict[tuple[str, str], Indexer] = {}
        for resource in quotable_resources():
            informer = self.informer(resource.plural, resource.group)
            self.monitored[(resource.group, resource.plural)] = informer.store
            informer.add_event_handler(self.replenishment_handler(resource.group,
                                                                  resource.plural))

    # -- what queues a quota ------------------------------------------------------------------

    def quota_updated(self, old: Obj, new: Obj) -> None:
        """Only a change of spec.hard: status updates are this controller's own doing."""
        if not quota.equals(_hard(old, "spec"), _hard(new, "spec")):
            self.enqueue(new)

    def replenishment_handler(self, group: str, plural: str) -> EventHandler:
        """The monitor of one resource: a delete, or an update that changes what the
        object charges (DefaultUpdateFilter), recounts the quotas tracking it.

        Not an add, as upstream: quota admission charged the create already, and a
        recount then could undo that charge. The quota in this controller's cache may
        already hold admission's charge while the new object's ADDED event has not yet
        reached the informer: the recount would write the lower figure, with a current
        resourceVersion, and admission would then let one object too many through.
        Without admission, the periodic resync counts new objects.
        """
        def changed(old: Obj, new: Obj) -> None:
            if quota.update_changes_usage(plural, group, old, new, self.now()):
                self.replenish(group, plural, new)

        return EventHandler(on_update=changed,
                            on_delete=lambda obj: self.replenish(group, plural, obj))

    def replenish(self, group: str, plural: str, obj: Obj) -> None:
        """replenishQuota: queue the quotas of the object's namespace whose status.hard
        names something this resource counts for."""
        namespace = (obj.get("metadata") or {}).get("namespace", "")
        for resource_quota in self.quotas.list(namespace):
            hard = (resource_quota.get("status") or {}).get("hard") or {}
            if quota.matching_resources(plural, group, hard):
                self.enqueue(resource_quota)

    # -- the loop -----------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        """The workers, and the full resync that recounts every quota each period."""
        resync = asyncio.create_task(self.resync_all(), name=f"{self.name}-resync")
        try:
            await super().run(workers)
        finally:
            resync.cancel()
            await asyncio.gather(resync, return_exceptions=True)

    async def resync_all(self) -> None:
        """enqueueAll, every --resource-quota-sync-period (0 or less: never)."""
        period = self.ctx.options.resource_quota_sync_period
        if period <= 0:
            log.info("%s: periodic quota resync disabled", self.name)
            return
        while True:
            await asyncio.sleep(period)
            for resource_quota in self.quotas.list():
                self.enqueue(resource_quota)

    async def sync(self, key: str) -> None:
        """syncResourceQuota: status.hard from spec.hard, status.used recounted."""
        resource_quota = self.quotas.get(key)
        if resource_quota is None:
            return
        namespace = resource_quota["metadata"]["namespace"]
        spec = resource_quota.get("spec") or {}
        status = resource_quota.get("status") or {}
        hard = _hard(resource_quota, "spec")
        old_used = quota.parse_resource_list(status.get("used"))

        def list_objects(group: str, plural: str) -> Iterable[Obj]:
            return self.monitored[(group, plural)].list(namespace)

        # Names no evaluator measures keep what admission last recorded for them.
        measured = quota.calculate_usage(spec, self.monitored.keys(), list_objects, self.now())
        new_used = {**old_used, **measured}
        used = quota.mask(new_used, hard)
        dirty = (status.get("hard") is None or status.get("used") is None
                 or not quota.equals(hard, _hard(resource_quota, "status"))
                 or not quota.equals(used, old_used))
        if not dirty:
            return
        updated = {**resource_quota, "status": {"hard": quota.format_resource_list(hard),
                                                "used": quota.format_resource_list(used)}}
        await self.quotas_api.update(updated, subresource="status")
