"""The rbac/bootstrap-roles hook's writes (apiserver/auth/bootstrappolicy/ensure.py) against an
in-memory store: create what is missing, write what reconciling finds, and read again
when a write races another writer."""

from __future__ import annotations

import copy

from minikube_py.api import Obj, errors
from minikube_py.apiserver.auth.bootstrappolicy.ensure import ensure_object
from minikube_py.apiserver.auth.bootstrappolicy.reconcile import reconcile_binding, reconcile_role
from minikube_py.apiserver.auth.bootstrappolicy.rules import (
    cluster_role,
    cluster_role_binding,
    rule,
    users,
)
from minikube_py.apiserver.registry.store import DeleteOptions

PODS = rule(["get", "list"], [""], ["pods"])


class MemoryStore:
    """Objects by name, a resourceVersion and uid each; `race` writes the object of that
    name once, as another writer would, just before the hook's next update."""

    def __init__(self, *objects: Obj) -> None:
        self.objects: dict[str, Obj] = {}
        self.writes: list[str] = []
        self.race: Obj | None = None
        for obj in objects:
            self._store(copy.deepcopy(obj))

    def _store(self, obj: Obj) -> Obj:
        metadata = obj["metadata"]
        metadata["resourceVersion"] = str(len(self.writes) + 100)
        metadata.setdefault("uid", f"uid-{len(self.writes)}")
        self.objects[metadata["name"]] = obj
        return copy.deepcopy(obj)

    async def get(self, namespace: str, name: str) -> Obj:
        if name not in self.objects:
            raise errors.not_found("clusterroles", "rbac.authorization.k8s.io", name)
        return copy.deepcopy(self.objects[name])

    async def create(self, namespace: str, obj: Obj) -> Obj:
        name = obj["metadata"]["name"]
        if name in self.objects:
            raise errors.already_exists("clusterroles", "rbac.authorization.k8s.io", name)
        self.writes.append(f"create {name}")
        return self._store(copy.deepcopy(obj))

    async def update(self, namespace: str, name: str, obj: Obj) -> Obj:
        if self.race is not None:
            raced, self.race = self.race, None
            self.writes.append(f"someone else updates {name}")
            self._store(copy.deepcopy(raced))
        current = self.objects[name]["metadata"]["resourceVersion"]
        if obj["metadata"].get("resourceVersion") != current:
            raise errors.conflict("clusterroles", "rbac.authorization.k8s.io", name,
                                  "the object has been modified")
        self.writes.append(f"update {name}")
        return self._store(copy.deepcopy(obj))

    async def delete(self, namespace: str, name: str, options: DeleteOptions
                     ) -> tuple[Obj, bool]:
        self.writes.append(f"delete {name}")
        return self.objects.pop(name), True


async def test_a_missing_object_is_created_and_an_unchanged_one_left_alone() -> None:
    expected = cluster_role("reader", [PODS])
    store = MemoryStore()
    await ensure_object(store, expected, reconcile_role)
    await ensure_object(store, expected, reconcile_role)
    assert store.writes == ["create reader"]


async def test_an_update_that_races_another_writer_is_computed_again() -> None:
    expected = cluster_role("reader", [PODS])
    store = MemoryStore(cluster_role("reader", []))
    store.race = cluster_role("reader", [rule(["create"], ["example.com"], ["widgets"])])
    await ensure_object(store, expected, reconcile_role)
    assert store.writes == ["someone else updates reader", "update reader"]
    assert store.objects["reader"]["rules"] == [
        rule(["create"], ["example.com"], ["widgets"]), rule(["get"], [""], ["pods"]),
        rule(["list"], [""], ["pods"])]


async def test_a_binding_of_another_role_is_deleted_and_created_again() -> None:
    expected = cluster_role_binding("system:kube-scheduler", users("system:kube-scheduler"))
    other = copy.deepcopy(expected)
    other["roleRef"]["name"] = "view"
    store = MemoryStore(other)
    await ensure_object(store, expected, reconcile_binding)
    assert store.writes == ["delete system:kube-scheduler", "create system:kube-scheduler"]
    assert store.objects["system:kube-scheduler"]["roleRef"] == expected["roleRef"]
