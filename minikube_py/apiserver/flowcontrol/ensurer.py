"""The priority-and-fairness-config-producer post-start hook: keep the bootstrap
configuration in the cluster (upstream pkg/registry/flowcontrol/ensurer and
rest/storage_flowcontrol.go), and the config consumer's Dangling conditions.

    every ENSURE_PERIOD (and at once when a FlowSchema or level changes; a second after a
    pass that failed):
        mandatory objects (exempt, catch-all)   missing -> create; spec differs -> restore
                                                (exempt's own shares and lendable % stay)
        suggested objects                       missing -> create; spec differs and
                                                autoupdate-spec allows -> update
        other objects with autoupdate-spec true -> delete (no longer suggested)
        each FlowSchema's Dangling condition    True when its priority level is missing

`apf.kubernetes.io/autoupdate-spec` is read as Go's ParseBool; without a readable value
an object is kept up to date only while its generation is 1 (nobody changed it).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from typing import Protocol

import orjson

from minikube_py.api import Obj, errors
from minikube_py.api.meta import now_rfc3339
from minikube_py.apiserver.flowcontrol.bootstrap import (
    AUTO_UPDATE_ANNOTATION,
    EXEMPT,
    MANDATORY_FLOW_SCHEMAS,
    MANDATORY_PRIORITY_LEVELS,
    SUGGESTED_FLOW_SCHEMAS,
    SUGGESTED_PRIORITY_LEVELS,
)
from minikube_py.apiserver.registry.store import DeleteOptions

log = logging.getLogger("minikube_py.apiserver")

ENSURE_PERIOD = 60.0  # upstream's wait.PollImmediateUntil(time.Minute, ...)
RETRY_PERIOD = 1.0  # after a failed pass, as upstream polls each second until one succeeds
CHANGE_POLL = 0.5  # how often the hook looks whether the two caches changed
TRUE_VALUES = {"1", "t", "T", "TRUE", "true", "True"}
FALSE_VALUES = {"0", "f", "F", "FALSE", "false", "False"}
CONSUMER = "api-priority-and-fairness-config-consumer-v1"


class ConfigStore(Protocol):
    """What the hook uses of the store of FlowSchemas or PriorityLevelConfigurations."""

    async def get(self, namespace: str, name: str) -> Obj: ...

    async def create(self, namespace: str, obj: Obj) -> Obj: ...

    async def update(self, namespace: str, name: str, obj: Obj, *,
                     subresource: str = "", manager: str = "") -> Obj: ...

    async def delete(self, namespace: str, name: str, options: DeleteOptions
                     ) -> tuple[Obj, bool]: ...


class ConfigCache(Protocol):
    """What the hook reads of a watch cache."""

    changes: int

    def list(self, namespace_prefix: str = "") -> list[Obj]: ...


def auto_update(obj: Obj) -> bool | None:
    """The autoupdate-spec annotation as ParseBool reads it; None when unset or unreadable."""
    value = (obj["metadata"].get("annotations") or {}).get(AUTO_UPDATE_ANNOTATION)
    if value in TRUE_VALUES:
        return True
    if value in FALSE_VALUES:
        return False
    return None


def should_update_spec(obj: Obj) -> bool:
    """shouldUpdateSpec: the annotation says so, or, without one, nobody changed it."""
    wanted = auto_update(obj)
    if wanted is not None:
        return wanted
    return obj["metadata"].get("generation") == 1


class ConfigProducer:
    """Keeps the mandatory and suggested FlowSchemas and priority levels in place."""

    def __init__(self, flow_schemas: ConfigStore, priority_levels: ConfigStore,
                 flow_schema_cache: ConfigCache, priority_level_cache: ConfigCache) -> None:
        self.flow_schemas = flow_schemas
        self.priority_levels = priority_levels
        self.caches = (flow_schema_cache, priority_level_cache)
        self.ensured = asyncio.Event()

    async def run(self) -> None:
        """Ensure at once, then every ENSURE_PERIOD or when the configuration changes."""
        while True:
            period = ENSURE_PERIOD
            # what the pass starts from: a change made while it runs (a deletecollection
            # deleting one schema after the pass looked at it) wakes the next pass
            seen = tuple(cache.changes for cache in self.caches)
            try:
                await self.ensure()
                self.ensured.set()
            except Exception as err:  # etcd away, a write refused: log, and try again soon
                period = RETRY_PERIOD
                log.warning(orjson.dumps({"msg": "APF bootstrap ensurer ran into error, will "
                                                 "retry later", "error": repr(err)}).decode())
            until = time.monotonic() + period
            while (time.monotonic() < until
                   and tuple(cache.changes for cache in self.caches) == seen):
                await asyncio.sleep(CHANGE_POLL)

    async def ensure(self) -> None:
        """One pass: levels first (schemas name them), then schemas, then the conditions."""
        for store, cache, mandatory, suggested in (
                (self.priority_levels, self.caches[1], MANDATORY_PRIORITY_LEVELS,
                 SUGGESTED_PRIORITY_LEVELS),
                (self.flow_schemas, self.caches[0], MANDATORY_FLOW_SCHEMAS,
                 SUGGESTED_FLOW_SCHEMAS)):
            for wanted in mandatory:
                await self._ensure_object(store, wanted, mandatory=True)
            for wanted in suggested:
                await self._ensure_object(store, wanted, mandatory=False)
            await self._remove_unwanted(store, cache, mandatory + suggested)
        await self._update_dangling_conditions()

    async def _ensure_object(self, store: ConfigStore, wanted: Obj, *, mandatory: bool
                             ) -> None:
        """Create the object if missing; bring its spec back when allowed to."""
        name = wanted["metadata"]["name"]
        try:
            existing = await store.get("", name)
        except errors.APIError as err:
            if err.code != 404:
                raise
            try:
                await store.create("", copy.deepcopy(wanted))
                log.info(_line("created APF bootstrap object", wanted))
            except errors.APIError as create_err:
                if create_err.code != 409:
                    raise
            return
        spec = copy.deepcopy(wanted["spec"])
        if mandatory and name == EXEMPT and wanted["kind"] == "PriorityLevelConfiguration":
            # the admin may tune the exempt level's shares and lendable percent
            if "exempt" in existing.get("spec", {}):
                spec["exempt"] = copy.deepcopy(existing["spec"]["exempt"])
        annotations = existing["metadata"].get("annotations") or {}
        if existing.get("spec") == spec and (not mandatory or auto_update(existing)):
            return
        if not mandatory and not should_update_spec(existing):
            return
        updated = copy.deepcopy(existing)
        updated["spec"] = spec
        if mandatory or auto_update(existing) is None:
            updated["metadata"]["annotations"] = {**annotations, AUTO_UPDATE_ANNOTATION: "true"}
        try:
            await store.update("", name, updated)
            log.info(_line("updated APF bootstrap object", wanted))
        except errors.APIError as err:
            if err.code not in (404, 409):
                raise

    async def _remove_unwanted(self, store: ConfigStore, cache: ConfigCache,
                               wanted: list[Obj]) -> None:
        """Delete objects once suggested (autoupdate-spec true) that are suggested no more."""
        names = {obj["metadata"]["name"] for obj in wanted}
        for obj in cache.list():
            metadata = obj["metadata"]
            if metadata["name"] in names or auto_update(obj) is not True:
                continue
            try:
                await store.delete("", metadata["name"], DeleteOptions(
                    preconditions={"resourceVersion": metadata.get("resourceVersion", "")}))
                log.info(_line("deleted APF object no longer suggested", obj))
            except errors.APIError as err:
                if err.code not in (404, 409):
                    raise

    async def _update_dangling_conditions(self) -> None:
        """Each FlowSchema's Dangling condition: does the level it names exist?"""
        levels = {obj["metadata"]["name"] for obj in self.caches[1].list()}
        for flow_schema in self.caches[0].list():
            level = flow_schema.get("spec", {}).get("priorityLevelConfiguration", {}).get(
                "name", "")
            dangling = level not in levels
            condition = {
                "type": "Dangling", "status": "True" if dangling else "False",
                "reason": "NotFound" if dangling else "Found",
                "message": (f'This FlowSchema references the PriorityLevelConfiguration object '
                            f'named "{level}" but there is no such object' if dangling else
                            f'This FlowSchema references the PriorityLevelConfiguration object '
                            f'named "{level}" and it exists'),
            }
            conditions = (flow_schema.get("status") or {}).get("conditions") or []
            current = next((c for c in conditions if c.get("type") == "Dangling"), None)
            if current is not None and all(current.get(key) == value
                                           for key, value in condition.items()):
                continue
            condition["lastTransitionTime"] = now_rfc3339()
            updated = copy.deepcopy(flow_schema)
            updated["status"] = {"conditions": [
                *(c for c in conditions if c.get("type") != "Dangling"), condition]}
            try:
                await self.flow_schemas.update("", flow_schema["metadata"]["name"], updated,
                                               subresource="status", manager=CONSUMER)
            except errors.APIError as err:
                if err.code not in (404, 409):
                    raise


def _line(msg: str, obj: Obj) -> str:
    return orjson.dumps({"msg": msg, "type": obj["kind"],
                         "name": obj["metadata"]["name"]}).decode()
