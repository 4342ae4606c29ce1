"""ResourceQuota (upstream plugin/pkg/admission/resourcequota): a write may not push a
namespace past its quotas, and what it charges is recorded before it is written.

    a create (or an update that grows what an object counts for) in a namespace:
        the namespace's ResourceQuotas whose hard names the object counts for and whose
        scopes select it (api/quota.py)
        -> a quota the controller has not measured yet: 403 "status unknown for quota"
        -> cpu/memory tracked but a container does not state it: 403 "failed quota: ..."
        -> used + requested > hard for any name: 403 "exceeded quota: q, requested: ...,
           used: ..., limited: ..."
        -> else status.used += requested on every such quota, each a compare-and-swap
           on the quota's resourceVersion; then the object is written

Requests for one namespace are checked one at a time, each against the quotas as etcd
holds them, so concurrent creates never both take the last unit. An object that is
charged and then not written (its name was taken) stays charged until the resourcequota
controller, which sums the namespace again, corrects the figure, as upstream.
A dry run is checked and charges nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from minikube_py.api import Obj, errors, quota
from minikube_py.apiserver.auth.admission import (
    APISERVER_USER,
    CREATE,
    UPDATE,
    Attributes,
    Plugin,
    request_user,
)


class QuotaStore(Protocol):
    """The resourcequotas store, as far as the plugin uses it."""

    async def get(self, namespace: str, name: str) -> Obj: ...

    async def guaranteed_update(self, namespace: str, name: str,
                                mutate: Callable[[Obj], Obj]) -> Obj: ...


class ResourceQuota(Plugin):
    name = "ResourceQuota"
    operations = frozenset((CREATE, UPDATE))
    validating = True

    def __init__(self, quotas: Callable[[str], list[Obj]], store: QuotaStore) -> None:
        self.quotas = quotas  # a namespace's quotas, from the watch cache
        self.store = store
        self._locks: dict[str, asyncio.Lock] = {}

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation in self.operations and not attributes.subresource
                and attributes.resource.namespaced and attributes.obj is not None
                and bool(self.quotas(attributes.namespace)))

    async def validate(self, attributes: Attributes) -> None:
        """Validate: check every matching quota, then charge them all."""
        requested = self._requested(attributes)
        if not requested:
            return
        namespace = attributes.namespace
        lock = self._locks.setdefault(namespace, asyncio.Lock())
        async with lock:
            charges = []
            for cached in self.quotas(namespace):
                name = cached["metadata"]["name"]
                if not self._interested(cached, attributes, requested):
                    continue
                try:
                    live = await self.store.get(namespace, name)
                except errors.APIError as err:
                    if err.code == 404:
                        continue
                    raise
                charge = self._check(live, attributes, requested)
                if charge:
                    charges.append((name, charge))
            if attributes.dry_run:
                return
            for name, charge in charges:
                await self._charge(namespace, name, charge)

    def _requested(self, attributes: Attributes) -> quota.ResourceList:
        """What the write adds: the object's usage, less the old object's on update."""
        resource = attributes.resource
        assert attributes.obj is not None
        new = quota.usage(resource.plural, resource.group, attributes.obj)
        if attributes.operation == CREATE:
            return new
        if attributes.old is None or (resource.group, resource.plural) not in (
                ("", "pods"), ("", "services"), ("", "persistentvolumeclaims")):
            return {}  # object counts are charged once, at create
        old = quota.usage(resource.plural, resource.group, attributes.old)
        grown = quota.subtract(new, old)
        return {name: value for name, value in grown.items() if value.amount > 0}

    @staticmethod
    def _interested(quota_object: Obj, attributes: Attributes,
                    requested: quota.ResourceList) -> bool:
        resource = attributes.resource
        hard = (quota_object.get("spec") or {}).get("hard") or {}
        tracked = quota.matching_resources(resource.plural, resource.group, hard)
        return bool(tracked) and quota.matches_scopes(
            quota_object.get("spec") or {}, attributes.obj or {}, resource.plural,
            resource.group)

    def _check(self, quota_object: Obj, attributes: Attributes,
               requested: quota.ResourceList) -> quota.ResourceList:
        """The charge this quota takes, or a Forbidden error."""
        resource = attributes.resource
        name = quota_object["metadata"]["name"]
        status = quota_object.get("status") or {}
        hard = quota.parse_resource_list(status.get("hard"))
        used = quota.parse_resource_list(status.get("used"))
        tracked = quota.matching_resources(
            resource.plural, resource.group, (quota_object.get("spec") or {}).get("hard") or {})
        unmeasured = [n for n in tracked if n not in hard or n not in used]
        if unmeasured:
            raise _forbidden(attributes, f"status unknown for quota: {name}, resources: "
                                         f"{','.join(sorted(unmeasured))}")
        missing = quota.constraints(resource.plural, resource.group, tracked,
                                    attributes.obj or {})
        if missing:
            raise _forbidden(attributes, f"failed quota: {name}: {missing}")
        charge = quota.mask(requested, tracked)
        over = quota.exceeded(hard, used, charge)
        if over:
            raise _forbidden(attributes, quota.exceeded_quota_message(
                name, over, charge, used, hard))
        return charge

    async def _charge(self, namespace: str, name: str, charge: quota.ResourceList) -> None:
        """status.used += charge, as the API server's own write."""

        def add(current: Obj) -> Obj:
            status = current.setdefault("status", {})
            used = quota.parse_resource_list(status.get("used"))
            status["used"] = {**(status.get("used") or {}),
                              **quota.format_resource_list(quota.add(used, charge))}
            return current

        token = request_user.set(APISERVER_USER)
        try:
            await self.store.guaranteed_update(namespace, name, add)
        finally:
            request_user.reset(token)


def _forbidden(attributes: Attributes, why: str) -> errors.APIError:
    resource = attributes.resource
    return errors.forbidden(resource.plural, resource.group, attributes.name, why)
