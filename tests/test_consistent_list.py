"""A consistent list (no resourceVersion) served from the watch cache, against a real etcd:
only once the cache is shown to hold etcd's current objects (storage/consistent_read.py),
never missing a write that finished before it, and from etcd when the cache cannot catch
up or the feature gate ConsistentListFromCache is off."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.resources import RESOURCES
from minikube_py.api.selectors import FieldSelector, LabelSelector, parse_label_selector
from minikube_py.apiserver.registry.store import DeleteOptions, ListOptions, Store
from minikube_py.apiserver.registry.strategies import strategy_for
from minikube_py.apiserver.storage.consistent_read import consistent_revision
from minikube_py.apiserver.storage.etcd import EtcdClient, prefix_end
from minikube_py.apiserver.storage.watchcache import WatchCache, decode

CONFIGMAPS = next(r for r in RESOURCES if r.plural == "configmaps" and not r.group)
EVERYTHING = ListOptions(LabelSelector.everything(), FieldSelector())


@dataclasses.dataclass
class LiveStore:
    store: Store
    cache: WatchCache
    # every consistent read the cache counted: (success, fallback)
    reads: list[tuple[bool, bool]]

    async def names(self, options: ListOptions = EVERYTHING) -> list[str]:
        listed = await self.store.list("default", options)
        return [o["metadata"]["name"] for o in listed.items]


@contextlib.asynccontextmanager
async def configmap_store(etcd_client: EtcdClient, *, following: bool = True,
                          gate: bool = True) -> AsyncIterator[LiveStore]:
    """A ConfigMap store on a prefix of its own. following=False: a cache that listed
    etcd once and then hears nothing more (a cache held back)."""
    resource = dataclasses.replace(CONFIGMAPS, storage_plural=f"test-{uuid.uuid4().hex[:8]}")
    reads: list[tuple[bool, bool]] = []
    cache = WatchCache(etcd_client, resource.etcd_prefix, consistent_list_from_cache=gate,
                       on_consistent_read=lambda success, fallback: reads.append(
                           (success, fallback)))
    store = Store(resource, strategy_for(CONFIGMAPS), etcd_client, cache)
    task = None
    if following:
        task = asyncio.create_task(cache.run())
        await cache.ready.wait()
    else:
        await hold_back(cache, etcd_client)
    try:
        yield LiveStore(store, cache, reads)
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def hold_back(cache: WatchCache, etcd_client: EtcdClient) -> None:
    """List the cache's prefix into it once, and watch nothing."""
    prefix = cache.prefix.encode()
    result = await etcd_client.range(prefix, prefix_end(prefix))
    cache._replace({kv.key.decode(): decode(kv) for kv in result.kvs}, result.revision)


def configmap(name: str, labels: dict[str, str] | None = None) -> Obj:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": name}}


async def test_a_consistent_list_is_served_from_a_fresh_cache(etcd_client: EtcdClient) -> None:
    async with configmap_store(etcd_client) as live:
        for name in ("a", "b", "c"):
            await live.store.create("default", configmap(name))
        listed = await live.store.list("default", EVERYTHING)
        assert [o["metadata"]["name"] for o in listed.items] == ["a", "b", "c"]
        assert all(o is live.cache.objects[live.store.key("default", o["metadata"]["name"])]
                   for o in listed.items)
        assert listed.resource_version >= int(listed.items[-1]["metadata"]["resourceVersion"])
        assert live.reads == [(True, False)]


async def test_every_write_is_in_the_very_next_consistent_list(etcd_client: EtcdClient) -> None:
    """Read-your-writes, many times over: each create, update and delete is in the list
    that follows it at once, with writes elsewhere in etcd in between (etcd's revision then
    runs ahead of the cache's)."""

    def set_data(value: str) -> Callable[[Obj], Obj]:
        def mutate(current: Obj) -> Obj:
            current["data"] = {"k": value}
            return current
        return mutate

    async with configmap_store(etcd_client) as live:
        other = f"/registry/test-other-{uuid.uuid4().hex[:8]}/x".encode()
        expected: list[str] = []
        for i in range(150):
            name = f"cm-{i:03d}"
            await live.store.create("default", configmap(name))
            expected.append(name)
            assert await live.names() == expected
            if i % 3 == 0:
                await etcd_client.put(other, str(i).encode())
            await live.store.guaranteed_update("default", expected[0], set_data(str(i)))
            listed = await live.store.list("default", EVERYTHING)
            assert listed.items[0]["data"] == {"k": str(i)}
            if i % 2 == 1:
                gone = expected.pop(0)
                await live.store.delete("default", gone, DeleteOptions())
                assert await live.names() == expected
        await etcd_client.delete(other)
        assert all(success for success, _ in live.reads)
        from_cache = sum(not fallback for _, fallback in live.reads)
        assert from_cache >= len(live.reads) * 0.9, live.reads


async def test_a_delete_the_cache_has_not_applied_is_never_listed(
        etcd_client: EtcdClient) -> None:
    async with configmap_store(etcd_client, following=False) as live:
        await live.store.create("default", configmap("a"))
        await live.store.create("default", configmap("b"))
        await hold_back(live.cache, etcd_client)  # the cache holds a and b, and stops
        await live.store.delete("default", "a", DeleteOptions())
        assert await consistent_revision(live.cache, etcd_client, wait=0.05) is None
        assert await live.names() == ["b"]
        assert live.reads == [(True, True)]  # read from etcd, after the cache did not catch up


async def test_a_namespaces_list_is_checked_against_that_namespaces_keys_alone(
        etcd_client: EtcdClient) -> None:
    """The Range asks etcd about the namespace's keys only (its cost is the namespace's
    size): a delete elsewhere that the cache has not applied keeps another namespace's
    list fresh, and its own namespace's and the whole resource's lists stale."""
    async with configmap_store(etcd_client, following=False) as live:
        await live.store.create("default", configmap("a"))
        await live.store.create("other", configmap("x"))
        await hold_back(live.cache, etcd_client)  # the cache holds a and x, and stops
        await live.store.delete("other", "x", DeleteOptions())
        cache = live.cache
        fresh = await consistent_revision(cache, etcd_client, wait=0.05,
                                          namespace_prefix="default/")
        assert fresh is not None and fresh > cache.applied_revision
        assert cache.holds_state_at(fresh, "default/")
        assert not cache.holds_state_at(fresh, "other/") and not cache.holds_state_at(fresh)
        assert await consistent_revision(cache, etcd_client, wait=0.05,
                                         namespace_prefix="other/") is None
        assert await consistent_revision(cache, etcd_client, wait=0.05) is None
        assert await live.names() == ["a"]
        listed = await live.store.list("other", EVERYTHING)
        assert listed.items == []  # from etcd: the cache still shows x
        assert live.reads == [(True, False), (True, True)]


async def test_a_consistent_list_waits_for_the_cache_to_catch_up(
        etcd_client: EtcdClient) -> None:
    async with configmap_store(etcd_client, following=False) as live:
        await live.store.create("default", configmap("a"))  # the held-back cache misses it
        listing = asyncio.create_task(live.names())
        await asyncio.sleep(0)
        follow = asyncio.create_task(live.cache.run())
        try:
            assert await listing == ["a"]
        finally:
            follow.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follow
        assert live.reads == [(True, False)]


async def test_with_the_gate_off_a_consistent_list_reads_etcd(etcd_client: EtcdClient) -> None:
    async with configmap_store(etcd_client, following=False, gate=False) as live:
        await live.store.create("default", configmap("a"))
        assert await live.names() == ["a"]  # at once: no wait for the held-back cache
        assert live.reads == []


async def test_every_page_comes_from_the_cache_while_nothing_changes(
        etcd_client: EtcdClient) -> None:
    """Pages of a consistent list continue in the cache while it still holds the first
    page's state, here one shown fresh at etcd's revision past the cache's own."""
    async with configmap_store(etcd_client) as live:
        names = [f"cm-{i}" for i in range(7)]
        for name in names:
            await live.store.create("default", configmap(name))
        other = f"/registry/test-other-{uuid.uuid4().hex[:8]}/x".encode()
        etcd_revision = await etcd_client.put(other, b"1")
        pages = [await live.store.list("default", dataclasses.replace(EVERYTHING, limit=3))]
        assert pages[0].resource_version == etcd_revision > live.cache.applied_revision
        while pages[-1].continue_token:
            pages.append(await live.store.list("default", dataclasses.replace(
                EVERYTHING, limit=3, continue_token=pages[-1].continue_token)))
        assert [len(p.items) for p in pages] == [3, 3, 1]
        assert [p.remaining_item_count for p in pages] == [4, 1, None]
        assert {p.resource_version for p in pages} == {etcd_revision}
        items = [o for p in pages for o in p.items]
        assert [o["metadata"]["name"] for o in items] == names
        assert all(o is live.cache.objects[live.store.key("default", o["metadata"]["name"])]
                   for o in items)
        await etcd_client.delete(other)


async def test_a_limited_consistent_list_pages_from_the_cache_then_from_etcd(
        etcd_client: EtcdClient) -> None:
    """The first page comes from the cache; once the cache has changed, its continue token
    reads the rest from etcd at the first page's revision, so a write between pages is in
    none of them."""
    async with configmap_store(etcd_client) as live:
        names = [f"cm-{i}" for i in range(7)]
        for name in names:
            await live.store.create("default", configmap(name))
        first = await live.store.list("default", dataclasses.replace(EVERYTHING, limit=3))
        assert [o["metadata"]["name"] for o in first.items] == names[:3]
        assert first.remaining_item_count == 4 and first.continue_token
        assert first.items[0] is live.cache.objects[live.store.key("default", "cm-0")]
        assert live.reads == [(True, False)]
        await live.store.create("default", configmap("cm-9"))
        seen = [o["metadata"]["name"] for o in first.items]
        token = first.continue_token
        while token:
            page = await live.store.list("default", dataclasses.replace(
                EVERYTHING, limit=3, continue_token=token))
            assert page.resource_version == first.resource_version
            assert page.items[0] is not live.cache.objects.get(
                live.store.key("default", page.items[0]["metadata"]["name"]))
            seen += [o["metadata"]["name"] for o in page.items]
            token = page.continue_token
        assert seen == names
        assert len(live.reads) == 1  # continuing is not a consistent read


async def test_a_limit_that_covers_everything_gives_no_continue_token(
        etcd_client: EtcdClient) -> None:
    async with configmap_store(etcd_client) as live:
        for name in ("a", "b"):
            await live.store.create("default", configmap(name))
        listed = await live.store.list("default", dataclasses.replace(EVERYTHING, limit=2))
        assert [o["metadata"]["name"] for o in listed.items] == ["a", "b"]
        assert not listed.continue_token and listed.remaining_item_count is None


async def test_selectors_filter_a_consistent_list_from_the_cache(
        etcd_client: EtcdClient) -> None:
    async with configmap_store(etcd_client) as live:
        for i in range(6):
            await live.store.create("default", configmap(f"cm-{i}", {"even": str(i % 2 == 0)}))
        even = ListOptions(parse_label_selector("even=True"), FieldSelector())
        assert await live.names(even) == ["cm-0", "cm-2", "cm-4"]
        page = await live.store.list("default", dataclasses.replace(even, limit=2))
        assert [o["metadata"]["name"] for o in page.items] == ["cm-0", "cm-2"]
        assert page.continue_token and page.remaining_item_count is None
        rest = await live.store.list("default", dataclasses.replace(
            even, limit=2, continue_token=page.continue_token))
        assert [o["metadata"]["name"] for o in rest.items] == ["cm-4"]
        assert live.reads == [(True, False), (True, False)]


async def test_a_watch_from_a_list_at_etcds_revision_sees_only_later_changes(
        etcd_client: EtcdClient) -> None:
    """A list served at etcd's revision R, past the cache's own (other keys were written
    last), and a watch from R: the watch starts after R and misses nothing later."""
    async with configmap_store(etcd_client) as live:
        await live.store.create("default", configmap("a"))
        other = f"/registry/test-other-{uuid.uuid4().hex[:8]}/x".encode()
        etcd_revision = await etcd_client.put(other, b"1")
        listed = await live.store.list("default", EVERYTHING)
        assert listed.resource_version == etcd_revision > live.cache.applied_revision
        watcher = live.cache.watch(listed.resource_version, None)
        await live.store.create("default", configmap("b"))
        batch = await watcher.next_batch(timeout=10)
        assert [(t, o["metadata"]["name"]) for t, o, _ in batch] == [("ADDED", "b")]
        live.cache.stop_watching(watcher)
        await etcd_client.delete(other)
