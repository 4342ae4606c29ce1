"""When a consistent list may be served from the watch cache (storage/consistent_read.py),
on given snapshots: the rule, the wait for the cache, a watch from a revision the cache has
not reached, and the --feature-gates flag that turns it off."""

from __future__ import annotations

import asyncio

import pytest

from minikube_py.apiserver.__main__ import build_parser
from minikube_py.apiserver.features import parse_feature_gates
from minikube_py.apiserver.storage.consistent_read import CacheSnapshot, fresh_revision
from minikube_py.apiserver.storage.etcd import RangeState
from tests.unit.test_watchcache import cache, delete, drain, put


def test_a_cache_that_has_seen_etcds_revision_is_served_at_its_own() -> None:
    assert fresh_revision(CacheSnapshot(applied_revision=20, count=3),
                          RangeState(revision=20, count=3, newest_write=18)) == 20


def test_a_cache_behind_only_other_resources_writes_is_served_at_etcds_revision() -> None:
    """Every key was last written at or before the cache's revision and the counts agree:
    etcd's objects at R are the cache's."""
    assert fresh_revision(CacheSnapshot(applied_revision=15, count=3),
                          RangeState(revision=40, count=3, newest_write=15)) == 40


def test_a_write_the_cache_has_not_applied_is_not_served() -> None:
    assert fresh_revision(CacheSnapshot(applied_revision=15, count=3),
                          RangeState(revision=40, count=4, newest_write=31)) is None
    assert fresh_revision(CacheSnapshot(applied_revision=15, count=3),
                          RangeState(revision=40, count=3, newest_write=31)) is None


def test_a_delete_the_cache_has_not_applied_is_not_served() -> None:
    """No key newer than the cache, but etcd holds one key less: the cache still shows a
    deleted object."""
    assert fresh_revision(CacheSnapshot(applied_revision=15, count=3),
                          RangeState(revision=40, count=2, newest_write=12)) is None


def test_an_empty_prefix_is_fresh_once_the_cache_is_empty() -> None:
    assert fresh_revision(CacheSnapshot(applied_revision=5, count=0),
                          RangeState(revision=40, count=0, newest_write=0)) == 40
    assert fresh_revision(CacheSnapshot(applied_revision=5, count=1),
                          RangeState(revision=40, count=0, newest_write=0)) is None


async def test_progress_notifications_do_not_count_as_applied() -> None:
    wc = cache()
    wc._apply(put("a", 11))
    wc._advance(11, applied=True)
    wc._advance(30, applied=False)  # a progress notification: etcd at 30
    assert (wc.revision, wc.applied_revision) == (30, 11)


async def test_waiting_for_the_cache_ends_when_it_applies_the_revision() -> None:
    wc = cache()
    waiting = asyncio.create_task(wc.wait_until_applied(12, timeout=10))
    await asyncio.sleep(0)
    wc._apply(put("a", 11))
    wc._advance(11, applied=True)
    await asyncio.sleep(0)
    assert not waiting.done()
    wc._apply(put("b", 12))
    wc._advance(12, applied=True)
    assert await waiting


async def test_waiting_for_the_cache_gives_up_after_its_timeout() -> None:
    assert not await cache().wait_until_applied(11, timeout=0.05)


async def test_a_watch_from_a_revision_the_cache_has_not_reached_skips_events_up_to_it() -> None:
    """A list served at etcd's revision R (cache at 10) is followed by a watch from R: the
    events in (10, R] the cache applies later are in the list's state already."""
    wc = cache()
    watcher = wc.watch(13, None)
    wc._apply(put("a", 11))
    wc._apply(delete("a", 12))
    wc._apply(put("b", 13))
    wc._apply(put("c", 14))
    assert await drain(watcher) == [("ADDED", "c", "14")]


def test_feature_gates_parse_name_bool_pairs() -> None:
    assert parse_feature_gates("") == {"ConsistentListFromCache": True}
    assert parse_feature_gates("ConsistentListFromCache=false") == {
        "ConsistentListFromCache": False}
    assert parse_feature_gates(" ConsistentListFromCache = True ,") == {
        "ConsistentListFromCache": True}


@pytest.mark.parametrize(("value", "message"), [
    ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
    ("ConsistentListFromCache=maybe", "invalid value of ConsistentListFromCache=maybe"),
    ("ConsistentListFromCache", "missing bool value for ConsistentListFromCache"),
])
def test_a_bad_feature_gate_is_refused_with_the_reason(
        value: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--etcd-servers", "http://127.0.0.1:2379",
                                   f"--feature-gates={value}"])
    assert message in capsys.readouterr().err


async def test_the_cache_holds_a_state_shown_fresh_until_it_changes() -> None:
    """What lets the pages of a list continue in the cache."""
    wc = cache()
    wc._apply(put("a", 11))
    wc._advance(11, applied=True)
    assert wc.holds_state_at(11) and not wc.holds_state_at(20)
    wc.note_fresh_at(20)  # a consistent read showed the objects to be etcd's at 20
    assert wc.holds_state_at(20)
    wc._apply(put("b", 21))
    wc._advance(21, applied=True)
    assert not wc.holds_state_at(20) and not wc.holds_state_at(11) and wc.holds_state_at(21)
