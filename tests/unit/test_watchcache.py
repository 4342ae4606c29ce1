"""The watch cache's fan-out logic on plain data (no etcd): filters, history, overflow."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from minikube_py.api import errors
from minikube_py.apiserver.storage.etcd import KeyValue, WatchEvent
from minikube_py.apiserver.storage.watchcache import WatchCache

PREFIX = "/registry/configmaps/"


def put(name: str, revision: int, labels: dict[str, str] | None = None, created: int = 0
        ) -> WatchEvent:
    obj: dict[str, Any] = {"kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}
    if labels:
        obj["metadata"]["labels"] = labels
    kv = KeyValue(f"{PREFIX}ns/{name}".encode(), orjson.dumps(obj), created or revision,
                  revision, 1)
    return WatchEvent("PUT", kv, None)


def delete(name: str, revision: int) -> WatchEvent:
    return WatchEvent("DELETE", KeyValue(f"{PREFIX}ns/{name}".encode(), b"", 0, revision, 0), None)


def cache(history: int = 100, capacity: int = 100) -> WatchCache:
    wc = WatchCache(None, PREFIX, history_size=history, watcher_capacity=capacity)  # type: ignore[arg-type]
    wc._replace({}, 10)
    return wc


async def drain(watcher: Any) -> list[tuple[str, str, str]]:
    batch = await watcher.next_batch(timeout=0)
    return [(t, o["metadata"]["name"], o["metadata"]["resourceVersion"]) for t, o, _ in batch]


async def test_watch_from_a_revision_replays_history_then_live() -> None:
    wc = cache()
    wc._apply(put("a", 11))
    wc._apply(put("b", 12))
    watcher = wc.watch(11, None)
    wc._apply(put("a", 13, created=11))
    assert await drain(watcher) == [("ADDED", "b", "12"), ("MODIFIED", "a", "13")]


async def test_filtered_watcher_sees_objects_enter_and_leave() -> None:
    wc = cache()
    watcher = wc.watch(10, lambda o: o["metadata"].get("labels", {}).get("app") == "web")
    wc._apply(put("a", 11, {"app": "web"}))
    wc._apply(put("a", 12, {"app": "db"}, created=11))
    wc._apply(put("a", 13, {"app": "web"}, created=11))
    wc._apply(delete("a", 14))
    assert await drain(watcher) == [("ADDED", "a", "11"), ("DELETED", "a", "12"),
                                    ("ADDED", "a", "13"), ("DELETED", "a", "14")]


async def test_too_old_revision_is_410_expired_once_history_is_trimmed() -> None:
    wc = cache(history=3)
    for revision in range(11, 17):
        wc._apply(put(f"o{revision}", revision))
    with pytest.raises(errors.APIError) as raised:
        wc.watch(11, None)
    assert raised.value.code == 410 and raised.value.reason == "Expired"
    assert "too old resource version: 11" in raised.value.message
    assert [n for _, n, _ in await drain(wc.watch(13, None))] == ["o14", "o15", "o16"]


async def test_a_slow_watcher_is_closed_and_never_blocks_the_others() -> None:
    wc = cache(capacity=5)
    slow = wc.watch(10, None)
    fast = wc.watch(10, None)
    received = []
    for revision in range(11, 31):
        wc._apply(put(f"o{revision}", revision))
        received += await drain(fast)
    assert len(received) == 20
    assert slow.closed
    assert slow not in wc.watchers


async def test_initial_state_then_changes_for_a_watch_without_revision() -> None:
    wc = cache()
    wc._apply(put("a", 11))
    watcher = wc.watch(None, None)
    wc._apply(put("b", 12))
    assert await drain(watcher) == [("ADDED", "a", "11"), ("ADDED", "b", "12")]


async def test_events_go_straight_to_an_idle_watch_and_queue_in_order_while_it_is_behind(
        ) -> None:
    wc = cache()
    watcher = wc.watch(10, None)
    sent: list[str] = []
    accepting = True

    def deliver(type: str, obj: dict[str, Any], event: Any) -> bool:
        if accepting:
            sent.append(obj["metadata"]["name"])
        return accepting

    watcher.deliver = deliver
    wc._apply(put("a", 11))
    assert sent == ["a"] and await drain(watcher) == []
    accepting = False
    wc._apply(put("b", 12))
    accepting = True
    wc._apply(put("c", 13))  # "b" is still queued: "c" must wait behind it
    assert sent == ["a"]
    assert await drain(watcher) == [("ADDED", "b", "12"), ("ADDED", "c", "13")]
    wc._apply(put("d", 14))  # caught up: straight through again
    assert sent == ["a", "d"]
    wc.stop_watching(watcher)
    wc._apply(put("e", 15))
    assert sent == ["a", "d"] and watcher.deliver is None


async def test_next_batch_waits_for_an_event() -> None:
    wc = cache()
    watcher = wc.watch(10, None)
    waiting = asyncio.create_task(watcher.next_batch(timeout=5))
    await asyncio.sleep(0.01)
    wc._apply(put("late", 11))
    async with asyncio.timeout(1):
        batch = await waiting
    assert batch[0][1]["metadata"]["name"] == "late"


def test_keys_are_sorted_and_follow_every_key_that_comes_or_goes() -> None:
    wc = cache()
    for name, revision in (("b", 11), ("a", 12), ("c", 13)):
        wc._apply(put(name, revision))
    assert wc.keys() == [f"{PREFIX}ns/{n}" for n in "abc"]
    wc._apply(delete("b", 14))
    wc._apply(put("a", 15, created=12))
    assert wc.keys("ns/") == [f"{PREFIX}ns/a", f"{PREFIX}ns/c"]
    assert wc.keys("other/") == [] and wc.keys("n") == wc.keys()
    other = WatchEvent("PUT", KeyValue(f"{PREFIX}ns2/d".encode(), b"{}", 16, 16, 1), None)
    wc._apply(other)
    assert wc.keys("ns/") == [f"{PREFIX}ns/a", f"{PREFIX}ns/c"]
    assert wc.keys("ns2/") == [f"{PREFIX}ns2/d"]
