"""resolveControllerRef: an ownerReference names its controller only if kind, name and uid
all match what the informer cache holds."""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.client.store import Indexer
from minikube_py.controllers.controller_ref import owner_reference, resolve_controller_ref


def replica_set(name: str, uid: str) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"namespace": "default", "name": name, "uid": uid}}


def store_of(*objects: Obj) -> Indexer:
    store = Indexer()
    for obj in objects:
        store.put(obj)
    return store


def test_a_reference_of_another_kind_resolves_to_nothing() -> None:
    rs = replica_set("web", "uid-1")
    reference = {**owner_reference(rs), "kind": "Deployment"}
    assert resolve_controller_ref(store_of(rs), "default", reference, "ReplicaSet") is None


def test_a_reference_to_an_object_not_in_the_cache_resolves_to_nothing() -> None:
    reference = owner_reference(replica_set("web", "uid-1"))
    assert resolve_controller_ref(store_of(), "default", reference, "ReplicaSet") is None
    other_namespace = store_of({**replica_set("web", "uid-1"),
                                "metadata": {"namespace": "other", "name": "web",
                                             "uid": "uid-1"}})
    assert resolve_controller_ref(other_namespace, "default", reference, "ReplicaSet") is None


def test_a_reference_to_an_earlier_object_of_the_same_name_resolves_to_nothing() -> None:
    reference = owner_reference(replica_set("web", "uid-old"))
    store = store_of(replica_set("web", "uid-new"))
    assert resolve_controller_ref(store, "default", reference, "ReplicaSet") is None


def test_a_reference_matching_kind_name_and_uid_resolves_to_the_cached_object() -> None:
    rs = replica_set("web", "uid-1")
    store = store_of(rs, replica_set("db", "uid-2"))
    assert resolve_controller_ref(store, "default", owner_reference(rs), "ReplicaSet") is rs
