"""Store.guaranteed_update starts from the watch cache's copy, as upstream's cacher does.
A copy that is behind etcd must never win: with a stale cache, every update still lands on
the live object, refusals are decided on the live object, and nothing is lost."""

from __future__ import annotations

import copy
import uuid

import pytest

from minikube_py.api import Obj, errors
from minikube_py.api.resources import RESOURCES
from minikube_py.apiserver.registry.store import Store
from minikube_py.apiserver.registry.strategies import strategy_for
from minikube_py.apiserver.storage.etcd import EtcdClient
from minikube_py.apiserver.storage.watchcache import WatchCache

CONFIGMAPS = next(r for r in RESOURCES if r.plural == "configmaps" and not r.group)


async def stale_store(etcd_client: EtcdClient) -> tuple[Store, WatchCache]:
    """A store whose watch cache is ready but never follows etcd: it keeps what it is given."""
    prefix = f"/registry/test-{uuid.uuid4().hex[:8]}/"
    cache = WatchCache(etcd_client, prefix)
    cache.ready.set()
    store = Store(CONFIGMAPS, strategy_for(CONFIGMAPS), etcd_client, cache)
    store.key = lambda namespace, name: f"{prefix}{namespace}/{name}"  # type: ignore[method-assign]
    return store, cache


def configmap(name: str, data: dict[str, str]) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def with_data(key: str, value: str):  # noqa: ANN201 (a Mutation)
    def mutate(current: Obj) -> Obj:
        current.setdefault("data", {})[key] = value
        return current
    return mutate


async def test_an_update_from_a_stale_cached_copy_lands_on_the_live_object(
        etcd_client: EtcdClient) -> None:
    store, cache = await stale_store(etcd_client)
    first = await store.create("default", configmap("cm", {"a": "1"}))
    cache.objects[store.key("default", "cm")] = copy.deepcopy(first)  # the cache saw v1
    await store.guaranteed_update("default", "cm", with_data("b", "2"))  # etcd moves on
    updated = await store.guaranteed_update("default", "cm", with_data("c", "3"))
    assert updated["data"] == {"a": "1", "b": "2", "c": "3"}
    stored = await store.get("default", "cm")
    assert stored["data"] == {"a": "1", "b": "2", "c": "3"}
    assert stored["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]


async def test_a_refusal_on_a_stale_copy_is_decided_again_on_the_live_object(
        etcd_client: EtcdClient) -> None:
    """A precondition the stale copy fails but the live object meets is not refused."""
    store, cache = await stale_store(etcd_client)
    first = await store.create("default", configmap("cm", {"a": "1"}))
    cache.objects[store.key("default", "cm")] = copy.deepcopy(first)
    live = await store.guaranteed_update("default", "cm", with_data("b", "2"))
    wanted_version = live["metadata"]["resourceVersion"]

    def only_on_the_live_version(current: Obj) -> Obj:
        if current["metadata"]["resourceVersion"] != wanted_version:
            raise errors.conflict("configmaps", "", "cm", "the object has been modified")
        current["data"]["c"] = "3"
        return current

    updated = await store.guaranteed_update("default", "cm", only_on_the_live_version)
    assert updated["data"] == {"a": "1", "b": "2", "c": "3"}


async def test_a_change_the_stale_copy_already_shows_is_still_written(
        etcd_client: EtcdClient) -> None:
    """No change against the cached copy is no proof: etcd may hold something else."""
    store, cache = await stale_store(etcd_client)
    await store.create("default", configmap("cm", {"a": "1"}))
    ahead = await store.guaranteed_update("default", "cm", with_data("a", "2"))
    await store.guaranteed_update("default", "cm", with_data("a", "1"))  # back in etcd
    cache.objects[store.key("default", "cm")] = copy.deepcopy(ahead)  # the cache says "2"
    await store.guaranteed_update("default", "cm", with_data("a", "2"))
    assert (await store.get("default", "cm"))["data"] == {"a": "2"}


async def test_a_refusal_on_the_live_object_reaches_the_caller(etcd_client: EtcdClient) -> None:
    store, _cache = await stale_store(etcd_client)
    await store.create("default", configmap("cm", {"a": "1"}))

    def refuse(current: Obj) -> Obj:
        raise errors.conflict("configmaps", "", "cm", "no")

    with pytest.raises(errors.APIError):
        await store.guaranteed_update("default", "cm", refuse)
