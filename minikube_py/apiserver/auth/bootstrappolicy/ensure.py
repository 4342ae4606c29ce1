"""The rbac/bootstrap-roles post-start hook: write the bootstrap policy into the cluster
(upstream pkg/registry/rbac/rest/storage_rbac.go, EnsureRBACPolicy).

    for ClusterRoles, ClusterRoleBindings, Roles, then RoleBindings, each bootstrap object:
        missing       -> create it
        exists        -> reconcile it (reconcile.py)
            nothing to add     -> leave it
            protected          -> leave it, warn of what it lacks
            update             -> write the grown object (its resourceVersion guards it)
            recreate           -> delete it (its uid guards it), create the expected one
        a write that raced another (404, 409) -> read again and start over, a few times
    one log line per object written; a failure is logged and the next object goes on
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import orjson

from minikube_py.api import Obj, errors
from minikube_py.apiserver.auth.bootstrappolicy import (
    bootstrap_cluster_role_bindings,
    bootstrap_cluster_roles,
    bootstrap_role_bindings,
    bootstrap_roles,
)
from minikube_py.apiserver.auth.bootstrappolicy.reconcile import (
    Reconciled,
    reconcile_binding,
    reconcile_role,
)
from minikube_py.apiserver.auth.bootstrappolicy.rules import RBAC_GROUP
from minikube_py.apiserver.registry.store import DeleteOptions

log = logging.getLogger("minikube_py.apiserver")

# Upstream retries a conflicted reconcile (retry.DefaultBackoff: 5 steps).
ATTEMPTS = 5


class PolicyStore(Protocol):
    """What the hook uses of the store of one RBAC resource."""

    async def get(self, namespace: str, name: str) -> Obj: ...

    async def create(self, namespace: str, obj: Obj) -> Obj: ...

    async def update(self, namespace: str, name: str, obj: Obj) -> Obj: ...

    async def delete(self, namespace: str, name: str, options: DeleteOptions
                     ) -> tuple[Obj, bool]: ...


Reconcile = Callable[[Obj, Obj], Reconciled]


async def ensure_rbac_policy(stores: Mapping[str, PolicyStore]) -> None:
    """Create or reconcile every bootstrap object; `stores` by plural: clusterroles,
    clusterrolebindings, roles, rolebindings."""
    for plural, reconcile, objects in (
            ("clusterroles", reconcile_role, bootstrap_cluster_roles()),
            ("clusterrolebindings", reconcile_binding, bootstrap_cluster_role_bindings()),
            ("roles", reconcile_role, bootstrap_roles()),
            ("rolebindings", reconcile_binding, bootstrap_role_bindings())):
        for expected in objects:
            try:
                await ensure_object(stores[plural], expected, reconcile)
            except errors.APIError as err:
                log.warning(_line("cannot reconcile bootstrap policy", expected,
                                  error=err.message))


async def ensure_object(store: PolicyStore, expected: Obj, reconcile: Reconcile) -> None:
    """Create `expected`, or bring the object of its name up to it (ReconcileRoleOptions.Run
    and ReconcileRoleBindingOptions.Run with Confirm)."""
    namespace = expected["metadata"].get("namespace", "")
    name = expected["metadata"]["name"]
    for _ in range(ATTEMPTS):
        try:
            existing = await store.get(namespace, name)
        except errors.APIError as err:
            if err.code != 404:
                raise
            if await _written(store.create(namespace, copy.deepcopy(expected))):
                log.debug(_line("created bootstrap policy object", expected))
                return
            continue
        result = reconcile(expected, existing)
        if result.operation == "none":
            return
        if result.protected:
            log.warning(_line("skipped reconcile-protected bootstrap policy object", expected,
                              changes=result.changes))
            return
        if result.operation == "recreate":
            uid = existing["metadata"].get("uid", "")
            if not await _written(store.delete(namespace, name,
                                               DeleteOptions(preconditions={"uid": uid}))):
                continue
            if await _written(store.create(namespace, result.obj)):
                log.info(_line("recreated bootstrap policy object", expected,
                               changes=result.changes))
                return
            continue
        if await _written(store.update(namespace, name, result.obj)):
            log.info(_line("updated bootstrap policy object", expected, changes=result.changes))
            return
    raise errors.conflict(_plural(expected), RBAC_GROUP, name,
                          f"still changing after {ATTEMPTS} attempts")


async def _written(write: Awaitable[object]) -> bool:
    """Await a write; False when it raced another writer (not found, conflict, already
    exists), so the caller reads again."""
    try:
        await write
    except errors.APIError as err:
        if err.code in (404, 409):
            return False
        raise
    return True


def _line(msg: str, obj: Obj, **fields: Any) -> str:
    """A JSON log line naming the object as upstream does:
    clusterrole.rbac.authorization.k8s.io/view."""
    metadata = obj["metadata"]
    line: dict[str, Any] = {"msg": msg, "object": f"{obj['kind'].lower()}.{RBAC_GROUP}/"
                                                  f"{metadata['name']}"}
    if metadata.get("namespace"):
        line["namespace"] = metadata["namespace"]
    return orjson.dumps({**line, **fields}).decode()


def _plural(obj: Obj) -> str:
    return obj["kind"].lower() + "s"
