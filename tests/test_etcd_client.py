"""EtcdClient against a real etcd: reads, optimistic-concurrency writes, watches, leases."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from minikube_py.apiserver.storage.etcd import (
    MAX_GET_TXNS_IN_FLIGHT,
    RETRY_WINDOW,
    CompactedError,
    EtcdClient,
    EtcdError,
    EtcdTimeout,
    EtcdUnavailable,
    KeyExistsError,
    KeyValue,
    RevisionMismatch,
    Watch,
    WatchBatch,
    prefix_end,
)
from minikube_py.cluster.etcd import EtcdProcess, EtcdProcessError
from minikube_py.process import free_port


@pytest.fixture
def prefix() -> bytes:
    """A key prefix no other test uses, so tests on the shared etcd do not see each other."""
    return f"/tests/{uuid.uuid4().hex}/".encode()


async def next_batch(watch: Watch, timeout: float = 10.0) -> WatchBatch:
    async with asyncio.timeout(timeout):
        return await anext(watch)


async def next_events(watch: Watch, count: int) -> list[tuple[str, bytes, bytes]]:
    """Read batches until count events arrived; return (type, key, value) for each."""
    events: list[tuple[str, bytes, bytes]] = []
    while len(events) < count:
        batch = await next_batch(watch)
        events += [(e.type, e.kv.key, e.kv.value) for e in batch.events]
    return events


@pytest.mark.parametrize(
    ("prefix_", "end"),
    [(b"/a", b"/b"), (b"/registry/pods/", b"/registry/pods0"), (b"a\xff", b"b"), (b"\xff", b"\0")],
)
def test_prefix_end_is_the_first_key_after_the_prefix(prefix_: bytes, end: bytes) -> None:
    assert prefix_end(prefix_) == end


@pytest.mark.parametrize(
    ("endpoint", "target"),
    [("http://127.0.0.1:2379", "127.0.0.1:2379"), ("localhost:12379", "localhost:12379")],
)
def test_endpoints_are_http_urls_or_host_port(endpoint: str, target: str) -> None:
    assert EtcdClient([endpoint]).targets == [target]


@pytest.mark.parametrize("endpoint", ["https://127.0.0.1:2379", "http://127.0.0.1", "unix:/x"])
def test_tls_and_portless_endpoints_are_rejected(endpoint: str) -> None:
    with pytest.raises(ValueError, match="expected http://HOST:PORT"):
        EtcdClient([endpoint])


async def test_create_then_get_returns_value_and_revisions(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    revision = await etcd_client.create(prefix + b"a", b"one")

    kv = await etcd_client.get(prefix + b"a")

    assert kv == KeyValue(prefix + b"a", b"one", revision, revision, 1)
    assert await etcd_client.get(prefix + b"missing") is None
    assert await etcd_client.current_revision() >= revision


async def test_concurrent_gets_share_txns_and_each_gets_its_own_answer(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    for i in range(0, 300, 2):
        await etcd_client.create(prefix + b"k%03d" % i, b"v%03d" % i)

    found = await asyncio.gather(*(etcd_client.get(prefix + b"k%03d" % i) for i in range(300)))

    for i, kv in enumerate(found):
        if i % 2:
            assert kv is None
        else:
            assert kv is not None and kv.value == b"v%03d" % i


async def test_gets_issued_while_txns_are_on_their_way_wait_and_go_together(
    etcd_client: EtcdClient, prefix: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Readers arriving one scheduling step apart (as HTTP requests do) still share Txns:
    at most MAX_GET_TXNS_IN_FLIGHT are on their way, the rest wait and then go together."""
    for i in range(100):
        await etcd_client.create(prefix + b"k%03d" % i, b"v%03d" % i)
    send = etcd_client._request
    calls = in_flight = most_in_flight = 0

    async def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls, in_flight, most_in_flight
        calls += 1
        in_flight += 1
        most_in_flight = max(most_in_flight, in_flight)
        try:
            return await send(*args, **kwargs)
        finally:
            in_flight -= 1

    monkeypatch.setattr(etcd_client, "_request", counting)

    async def reader(i: int) -> KeyValue | None:
        for _ in range(i):  # the i-th reader asks i steps of the event loop later
            await asyncio.sleep(0)
        return await etcd_client.get(prefix + b"k%03d" % i)

    found = await asyncio.gather(*(reader(i) for i in range(100)))

    assert [kv.value if kv else None for kv in found] == [b"v%03d" % i for i in range(100)]
    assert most_in_flight <= MAX_GET_TXNS_IN_FLIGHT
    assert calls < 50, f"{calls} gRPC calls for 100 gets asked one loop step apart"
    # A get issued after a write has returned still sees that write.
    await etcd_client.update(prefix + b"k000", b"new", found[0].mod_revision)
    assert (await etcd_client.get(prefix + b"k000")).value == b"new"


async def test_gets_fail_together_when_etcd_is_gone(private_etcd: EtcdProcess) -> None:
    async with private_etcd.client(request_timeout=2.0) as client:
        await client.current_revision()
        await private_etcd.stop()
        results = await asyncio.gather(*(client.get(b"/k%d" % i) for i in range(10)),
                                       return_exceptions=True)
    assert all(isinstance(r, EtcdUnavailable) for r in results), results


async def test_a_request_waits_out_an_endpoint_that_answers_a_moment_late(
        etcd: EtcdProcess) -> None:
    """A connection that fails for a moment (a loaded machine) is not an outage: the
    request is tried again for a short while and succeeds once etcd answers."""
    port = free_port()
    upstream = etcd.client_url.removeprefix("http://").split(":")

    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        to_etcd_reader, to_etcd_writer = await asyncio.open_connection(upstream[0],
                                                                       int(upstream[1]))

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()
        await asyncio.gather(pipe(reader, to_etcd_writer), pipe(to_etcd_reader, writer))

    async with EtcdClient([f"http://127.0.0.1:{port}"], request_timeout=5.0) as client:
        request = asyncio.create_task(client.current_revision())
        await asyncio.sleep(0.3)  # the request's first tries find nothing listening
        assert not request.done()
        server = await asyncio.start_server(forward, "127.0.0.1", port)
        async with server:
            assert await request > 0


async def test_an_endpoint_that_stays_away_fails_the_request_within_the_retry_window() -> None:
    async with EtcdClient([f"http://127.0.0.1:{free_port()}"], request_timeout=5.0) as client:
        began = time.monotonic()
        with pytest.raises(EtcdUnavailable):
            await client.current_revision()
        assert time.monotonic() - began < RETRY_WINDOW + 1.5


@pytest.mark.parametrize(
    ("options", "keys", "values", "more", "count"),
    [
        ({}, [b"a", b"b", b"c"], [b"A", b"B", b"C"], False, 3),
        ({"limit": 2}, [b"a", b"b"], [b"A", b"B"], True, 3),
        ({"limit": 3}, [b"a", b"b", b"c"], [b"A", b"B", b"C"], False, 3),
        ({"keys_only": True}, [b"a", b"b", b"c"], [b"", b"", b""], False, 3),
        ({"count_only": True}, [], [], False, 3),
    ],
)
async def test_range_over_a_prefix_honours_limit_and_reports_more(
    etcd_client: EtcdClient,
    prefix: bytes,
    options: dict[str, int | bool],
    keys: list[bytes],
    values: list[bytes],
    more: bool,
    count: int,
) -> None:
    for name in (b"c", b"a", b"b"):
        await etcd_client.create(prefix + name, name.upper())
    await etcd_client.create(prefix_end(prefix), b"just outside the prefix")

    result = await etcd_client.range(prefix, prefix_end(prefix), **options)

    assert [kv.key.removeprefix(prefix) for kv in result.kvs] == keys
    assert [kv.value for kv in result.kvs] == values
    assert (result.more, result.count) == (more, count)
    assert result.revision == await etcd_client.current_revision()


async def test_create_of_an_existing_key_raises_key_exists(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    await etcd_client.create(prefix + b"a", b"first")

    with pytest.raises(KeyExistsError):
        await etcd_client.create(prefix + b"a", b"second")

    assert (await etcd_client.get(prefix + b"a")).value == b"first"


async def test_update_at_the_current_revision_writes_and_bumps_version(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    created = await etcd_client.create(prefix + b"a", b"v1")

    updated = await etcd_client.update(prefix + b"a", b"v2", created)

    assert updated > created
    kv = await etcd_client.get(prefix + b"a")
    assert kv == KeyValue(prefix + b"a", b"v2", created, updated, 2)


async def test_update_with_a_stale_revision_raises_mismatch_carrying_the_current_kv(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    created = await etcd_client.create(prefix + b"a", b"v1")
    updated = await etcd_client.update(prefix + b"a", b"v2", created)

    with pytest.raises(RevisionMismatch) as raised:
        await etcd_client.update(prefix + b"a", b"lost update", created)

    assert raised.value.current == KeyValue(prefix + b"a", b"v2", created, updated, 2)
    assert (await etcd_client.get(prefix + b"a")).value == b"v2"


async def test_update_of_a_deleted_key_raises_mismatch_with_no_current_kv(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    created = await etcd_client.create(prefix + b"a", b"v1")
    await etcd_client.delete(prefix + b"a")

    with pytest.raises(RevisionMismatch) as raised:
        await etcd_client.update(prefix + b"a", b"v2", created)

    assert raised.value.current is None
    assert await etcd_client.get(prefix + b"a") is None


async def test_delete_with_a_matching_precondition_returns_the_deleted_kv(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    created = await etcd_client.create(prefix + b"a", b"v1")

    revision, deleted = await etcd_client.delete(prefix + b"a", expected_mod_revision=created)

    assert revision > created
    assert deleted == KeyValue(prefix + b"a", b"v1", created, created, 1)
    assert await etcd_client.get(prefix + b"a") is None


async def test_delete_with_a_stale_precondition_keeps_the_key(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    created = await etcd_client.create(prefix + b"a", b"v1")
    updated = await etcd_client.update(prefix + b"a", b"v2", created)

    with pytest.raises(RevisionMismatch) as raised:
        await etcd_client.delete(prefix + b"a", expected_mod_revision=created)

    assert raised.value.current is not None
    assert raised.value.current.mod_revision == updated
    assert (await etcd_client.get(prefix + b"a")).value == b"v2"


@pytest.mark.parametrize("expected_mod_revision", [None, 1])
async def test_delete_of_an_absent_key_raises_mismatch_with_no_current_kv(
    etcd_client: EtcdClient, prefix: bytes, expected_mod_revision: int | None
) -> None:
    with pytest.raises(RevisionMismatch) as raised:
        await etcd_client.delete(prefix + b"never-created", expected_mod_revision)

    assert raised.value.current is None


async def test_range_at_an_old_revision_sees_the_old_value(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    created = await etcd_client.create(prefix + b"a", b"v1")
    await etcd_client.update(prefix + b"a", b"v2", created)
    await etcd_client.create(prefix + b"b", b"later")

    result = await etcd_client.range(prefix, prefix_end(prefix), revision=created)

    assert [(kv.key, kv.value) for kv in result.kvs] == [(prefix + b"a", b"v1")]


async def test_range_at_a_compacted_revision_raises_compacted(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    created = await etcd_client.create(prefix + b"a", b"v1")
    updated = await etcd_client.update(prefix + b"a", b"v2", created)
    await etcd_client.compact(updated)

    with pytest.raises(CompactedError):
        await etcd_client.range(prefix + b"a", revision=created)

    assert (await etcd_client.range(prefix + b"a", revision=updated)).kvs[0].value == b"v2"


async def test_watch_from_a_revision_replays_events_in_order_with_prev_kv(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    created = await etcd_client.create(prefix + b"a", b"v1")
    updated = await etcd_client.update(prefix + b"a", b"v2", created)
    deleted, _ = await etcd_client.delete(prefix + b"a")
    await etcd_client.create(prefix_end(prefix), b"outside the watched range")

    async with etcd_client.watch(prefix, prefix_end(prefix), created) as watch:
        events = []
        while len(events) < 3:
            events += (await next_batch(watch)).events

    assert [(e.type, e.kv.mod_revision, e.kv.value) for e in events] == [
        ("PUT", created, b"v1"),
        ("PUT", updated, b"v2"),
        ("DELETE", deleted, b""),
    ]
    assert [e.prev_kv and e.prev_kv.value for e in events] == [None, b"v1", b"v2"]
    assert watch.last_revision == deleted


async def test_watch_from_now_sees_only_later_changes(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    await etcd_client.create(prefix + b"before", b"")

    async with etcd_client.watch(prefix, prefix_end(prefix), 0) as watch:
        assert watch.last_revision == await etcd_client.current_revision()
        await etcd_client.create(prefix + b"after", b"x")

        assert await next_events(watch, 1) == [("PUT", prefix + b"after", b"x")]


async def test_watch_at_a_compacted_revision_raises_compacted(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    created = await etcd_client.create(prefix + b"a", b"v1")
    updated = await etcd_client.update(prefix + b"a", b"v2", created)
    await etcd_client.compact(updated)

    with pytest.raises(CompactedError) as raised:
        async with etcd_client.watch(prefix, prefix_end(prefix), created) as watch:
            await next_batch(watch)

    assert raised.value.compact_revision == updated



async def test_periodic_progress_notification_moves_the_resume_point(
    fast_tmp: Path, prefix: bytes
) -> None:
    every_second = ("--experimental-watch-progress-notify-interval=1s",)
    async with (
        EtcdProcess(fast_tmp / "etcd-progress", extra_args=every_second) as etcd,
        etcd.client() as client,
        client.watch(prefix, prefix_end(prefix), 0) as watch,
    ):
        elsewhere = await client.create(prefix_end(prefix) + b"elsewhere", b"")

        batch = await next_batch(watch, timeout=5.0)

    assert (batch.events, batch.revision) == ([], elsewhere)
    assert watch.last_revision == elsewhere


async def test_watch_survives_an_etcd_restart_without_losing_or_repeating_events(
    private_etcd: EtcdProcess, prefix: bytes
) -> None:
    async with private_etcd.client() as client:
        async with client.watch(prefix, prefix_end(prefix), 0) as watch:
            await client.create(prefix + b"before", b"1")
            assert await next_events(watch, 1) == [("PUT", prefix + b"before", b"1")]

            reconnecting = asyncio.Event()
            reconnect = watch._reconnect

            async def noticed_reconnect() -> None:
                reconnecting.set()
                await reconnect()

            watch._reconnect = noticed_reconnect  # type: ignore[method-assign]
            await private_etcd.stop()
            reading = asyncio.create_task(next_events(watch, 2))
            async with asyncio.timeout(60):  # the watch notices the loss and reconnects
                await reconnecting.wait()
            await private_etcd.start()
            async with private_etcd.client() as writer:
                await writer.create(prefix + b"after-1", b"2")
                await writer.create(prefix + b"after-2", b"3")

            assert await reading == [
                ("PUT", prefix + b"after-1", b"2"),
                ("PUT", prefix + b"after-2", b"3"),
            ]


async def test_watch_resuming_at_a_revision_compacted_during_an_outage_raises_compacted(
    private_etcd: EtcdProcess, prefix: bytes
) -> None:
    async with private_etcd.client() as client:
        async with client.watch(prefix, prefix_end(prefix), 0) as watch:
            await client.create(prefix + b"seen", b"")
            await next_events(watch, 1)

            await private_etcd.stop()
            await private_etcd.start()
            async with private_etcd.client() as writer:
                await writer.create(prefix + b"missed", b"")
                compacted = await writer.create(prefix + b"missed-too", b"")
                await writer.compact(compacted)

            with pytest.raises(CompactedError) as raised:
                await next_batch(watch)

    assert raised.value.compact_revision == compacted


async def test_requests_to_a_stopped_etcd_fail_fast_with_unavailable(
    private_etcd: EtcdProcess, prefix: bytes
) -> None:
    async with private_etcd.client() as client:
        await client.create(prefix + b"a", b"")
        await private_etcd.stop()

        for request in (
            client.get(prefix + b"a"),
            client.create(prefix + b"b", b""),
            client.watch(prefix, prefix_end(prefix), 0).__aenter__(),
        ):
            started = time.monotonic()
            with pytest.raises(EtcdUnavailable):
                await request
            # Unavailable at once, not after waiting out the request timeout.
            assert time.monotonic() - started < client.request_timeout


async def wait_until_stopped(pid: int) -> None:
    """SIGSTOP is delivered asynchronously: wait until every thread of the process is
    stopped (state T), so that no request can still be answered."""
    deadline = time.monotonic() + 30  # a bound for failures only
    while True:
        states = [Path(f"/proc/{pid}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()[0]
                  for task in os.listdir(f"/proc/{pid}/task")]
        if all(state in ("T", "t") for state in states):
            return
        assert time.monotonic() < deadline, f"process {pid} did not stop"
        await asyncio.sleep(0.01)


async def test_requests_to_a_hung_etcd_time_out(private_etcd: EtcdProcess) -> None:
    async with private_etcd.client(request_timeout=0.5) as client:
        await client.current_revision()
        assert private_etcd.pid is not None
        os.kill(private_etcd.pid, signal.SIGSTOP)
        try:
            await wait_until_stopped(private_etcd.pid)
            started = time.monotonic()
            with pytest.raises(EtcdTimeout):
                await client.get(b"/a")
            assert 0.4 < time.monotonic() - started < 30  # bounded (not hung), even when loaded
        finally:
            os.kill(private_etcd.pid, signal.SIGCONT)


async def test_client_moves_on_to_the_next_endpoint_when_one_is_down(
    etcd: EtcdProcess, prefix: bytes
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    async with EtcdClient([dead, etcd.client_url]) as client:
        revision = await client.create(prefix + b"a", b"written via the second endpoint")

        assert (await client.get(prefix + b"a")).mod_revision == revision


async def test_lease_expiry_deletes_the_attached_key(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    lease = await etcd_client.lease_grant(1)
    ttl = await etcd_client.lease_time_to_live(lease)
    await etcd_client.create(prefix + b"a", b"short-lived", lease=lease)
    assert (await etcd_client.get(prefix + b"a")).lease == lease

    deadline = time.monotonic() + ttl + 5
    while await etcd_client.get(prefix + b"a") is not None:
        assert time.monotonic() < deadline, "the key outlived its lease"
        await asyncio.sleep(0.2)

    assert await etcd_client.lease_time_to_live(lease) == -1


async def test_lease_keepalive_renews_and_revoke_deletes_keys_at_once(
    etcd_client: EtcdClient, prefix: bytes
) -> None:
    lease = await etcd_client.lease_grant(60)
    await etcd_client.create(prefix + b"a", b"", lease=lease)

    assert await etcd_client.lease_keepalive_once(lease) == 60
    await etcd_client.lease_revoke(lease)

    assert await etcd_client.get(prefix + b"a") is None
    with pytest.raises(EtcdError):
        await etcd_client.lease_keepalive_once(lease)


async def test_etcd_process_refuses_a_port_another_server_listens_on(
    etcd: EtcdProcess, fast_tmp: Path
) -> None:
    with pytest.raises(EtcdProcessError, match="already in use"):
        await EtcdProcess(fast_tmp / "etcd-clash", client_port=etcd.client_port).start()


async def test_etcd_process_reports_why_etcd_exited_during_start_up(fast_tmp: Path) -> None:
    broken = EtcdProcess(fast_tmp / "etcd-broken", extra_args=("--no-such-flag",))

    with pytest.raises(EtcdProcessError, match="(?s)exited with code.*no-such-flag"):
        await broken.start()

    assert not broken.running


async def test_etcd_process_stop_leaves_no_process_and_start_reuses_its_data(
    private_etcd: EtcdProcess, prefix: bytes
) -> None:
    async with private_etcd.client() as client:
        revision = await client.create(prefix + b"a", b"kept")
    pid = private_etcd.pid
    assert pid is not None

    await private_etcd.stop()

    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    await private_etcd.start()
    async with private_etcd.client() as client:
        assert (await client.get(prefix + b"a")).mod_revision == revision
