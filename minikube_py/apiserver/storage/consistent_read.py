"""Consistent reads from the watch cache: is the cache as fresh as etcd is now?

Upstream's ConsistentListFromCache (cacher/delegator.go, GetCurrentResourceVersionFromStorage
and the watch cache's waitUntilFreshAndBlock): a list without a resourceVersion must show
every write that finished before it. Upstream reads etcd's current revision R and waits
until its cache has seen R, which it learns from a requested progress notification. On
etcd before 3.4.31 / 3.5.13 (Debian's 3.4.23 here) such a notification may overtake events
etcd still owes the watch (etcd issue 15220), so upstream reads those lists from etcd, and
so do we not trust notifications. We check freshness with one Range instead:

    etcd: Range(prefix, keys only, newest mod_revision first, limit 1)
          -> R (etcd's revision), N (keys under the prefix at R), M (their newest mod_revision)
    cache (no await in between): c = applied_revision, n = its object count
      c >= R               fresh: serve the cache at c
      M <= c and n == N    fresh: serve the cache at R
      otherwise            wait (bounded) for the cache to apply more, check again;
                           still not fresh: read etcd

Why "M <= c and n == N" means the cache holds exactly etcd's objects at R. The cache's
objects are etcd's state of the prefix at c (the list and every event up to c applied,
none after). Take a key k that exists at R. Its last write before R was at its
mod_revision m <= M <= c, and nothing wrote k in (m, R], so k existed at c with the same
value and mod_revision: every key of R is in the cache, unchanged. The cache holds n = N
keys, as many as R has, so it holds no other. The state at R is therefore what the cache
holds, and R is the list's resourceVersion. A watch from R must then skip the events in
(c, R] the cache has yet to apply (a key created and deleted in between): Watcher.offer
drops every event at or below its start revision.

A delete the cache has not applied yet breaks n == N (the cache has one key more, and no
key of R is newer than c to make up for it), a create or an update breaks M <= c: in
both cases the cache waits for its events, and a read never misses a write before it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from minikube_py.apiserver.storage.etcd import EtcdClient, RangeState, prefix_end
from minikube_py.apiserver.storage.watchcache import WatchCache

# How long a consistent read waits for the cache to apply what etcd holds before it
# reads etcd instead (upstream waits up to 3 s for its progress notification).
FRESHNESS_WAIT = 1.0


@dataclass(frozen=True)
class CacheSnapshot:
    """The cache as a consistent read looks at it: both taken without an await between."""

    applied_revision: int
    count: int


def snapshot(cache: WatchCache, namespace_prefix: str = "") -> CacheSnapshot:
    """The cache's applied revision and its number of objects under the prefix."""
    count = len(cache.keys(namespace_prefix)) if namespace_prefix else len(cache.objects)
    return CacheSnapshot(cache.applied_revision, count)


def fresh_revision(cache: CacheSnapshot, etcd: RangeState) -> int | None:
    """The resourceVersion a consistent list from the cache carries, or None while the
    cache may still miss a write etcd holds (see the module docstring for the proof)."""
    if cache.applied_revision >= etcd.revision:
        return cache.applied_revision
    if etcd.newest_write <= cache.applied_revision and cache.count == etcd.count:
        return etcd.revision
    return None


async def consistent_revision(cache: WatchCache, etcd: EtcdClient,
                              wait: float = FRESHNESS_WAIT, *, namespace_prefix: str = ""
                              ) -> int | None:
    """The revision at which the cache's objects under `namespace_prefix` ("": all) are
    etcd's current ones, after waiting up to `wait` seconds for the cache to apply what it
    lacks; None: read etcd instead. The proof holds for any prefix, so a namespace's list
    asks etcd about the namespace's keys only: the Range costs what the namespace holds."""
    prefix = (cache.prefix + namespace_prefix).encode()
    state = await etcd.range_state(prefix, prefix_end(prefix))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        now = snapshot(cache, namespace_prefix)
        revision = fresh_revision(now, state)
        if revision is not None:
            cache.note_fresh_at(revision, namespace_prefix)
            return revision
        # Events are on their way: at least up to the newest write, and past what the
        # cache has now when a delete is missing.
        wanted = max(state.newest_write, now.applied_revision + 1)
        if not await cache.wait_until_applied(wanted, deadline - loop.time()):
            return None
