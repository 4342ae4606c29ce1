"""etcd v3 client over grpc.aio: the API server's only way to read, write and watch storage.

Upstream the API server uses etcd's Go client (clientv3) from
staging/src/k8s.io/apiserver/pkg/storage/etcd3. This module offers the few operations
that store needs, each a single etcd request:

- create: a Txn "if create_revision(key) == 0 then put"      (else KeyExistsError)
- update: a Txn "if mod_revision(key) == expected then put"  (else RevisionMismatch)
- delete: a Txn "if mod_revision(key) == expected then delete"
- watch:  a Watch stream that survives reconnects without losing or repeating events.

The compare in a Txn is what makes optimistic concurrency work: a writer reads an object
(its mod_revision is the resourceVersion), changes it, and writes it back only if nobody
wrote in between. etcd checks the compare and applies the put atomically, so of two
concurrent updates from the same revision exactly one wins; the other gets the current
value back from the Txn's failure branch (the API server turns it into 409 Conflict).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit

import grpc

from minikube_py.gen.etcd import kv_pb2, rpc_pb2, rpc_pb2_grpc

if TYPE_CHECKING:
    from minikube_py.apiserver.storage.encryption import ValueTransformer

CHANNEL_OPTIONS = [
    # Reconnect quickly once etcd is back (gRPC's default backoff grows to 120 s).
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
    # Ping an idle connection so a silently dead one is noticed (etcd allows one per 5 s).
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    # A Range answer (a LIST of 5,000 pods is ~7 MB) may exceed gRPC's 4 MiB default;
    # clientv3 lifts the receive limit to math.MaxInt32 for the same reason.
    ("grpc.max_receive_message_length", 2**31 - 1),
    # No transparent retries inside gRPC: _request already decides what to send again,
    # and the retry machinery costs ~10% of every call's CPU (measured in
    # benchmarks/RESULTS.md).
    ("grpc.enable_retries", 0),
]
WATCH_BACKOFF_INITIAL = 0.1
WATCH_BACKOFF_MAX = 2.0
MAX_TXN_OPS = 128  # etcd's default --max-txn-ops: at most this many gets share one Txn
# Get Txns on their way at once; gets that come meanwhile wait and go together in the next.
MAX_GET_TXNS_IN_FLIGHT = 2
COMPACTED_MESSAGE = "required revision has been compacted"
NOT_CONNECTED_MESSAGE = "failed to connect to all addresses"
# Between rounds over the endpoints while none answers: 50 ms, doubling, at most 0.5 s,
# for 2 s at most before the request fails.
RETRY_PAUSE = 0.05
MAX_RETRY_PAUSE = 0.5
RETRY_WINDOW = 2.0

# The items a large list converts between two turns of the event loop. The API server
# serves every request on one loop: a list of 5,000 pods converted in one go holds it for
# tens of milliseconds (seconds on a loaded machine), and a Lease renewal that APF
# admitted at once waits behind every list in flight. A slice of 500 is a few ms.
LIST_SLICE = 500

StubMethod = Callable[..., Awaitable[Any]]  # a gRPC stub's method: rpc(request, timeout=...)
In = TypeVar("In")
Out = TypeVar("Out")


async def map_in_slices(convert: Callable[[In], Out], items: Sequence[In]) -> list[Out]:
    """`convert` of every item, in order, letting the event loop run other requests
    between slices of LIST_SLICE items."""
    converted = list(map(convert, items[:LIST_SLICE]))
    for start in range(LIST_SLICE, len(items), LIST_SLICE):
        await asyncio.sleep(0)
        converted += map(convert, items[start : start + LIST_SLICE])
    return converted


@dataclass(frozen=True, slots=True)
class KeyValue:
    """One key at one revision (mvccpb.KeyValue). With slots a frozen dataclass is made
    in less than half the time: a list of 5,000 pods makes 5,000 of them."""

    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int = 0


@dataclass
class RangeResult:
    """The answer to a Range: the keys found and the revision they were read at."""

    kvs: list[KeyValue]
    more: bool
    count: int
    revision: int


@dataclass(frozen=True)
class RangeState:
    """What one keys-only Range, newest write first, tells of a range of keys."""

    revision: int  # etcd's revision when it answered
    count: int  # the keys in the range at that revision
    newest_write: int  # the largest mod_revision among them (0 when there are none)


@dataclass(frozen=True)
class WatchEvent:
    """One change seen by a watch (mvccpb.Event). A DELETE's kv has only key and mod_revision."""

    type: Literal["PUT", "DELETE"]
    kv: KeyValue
    prev_kv: KeyValue | None


@dataclass
class WatchBatch:
    """One WatchResponse: events of whole revisions, or none for a progress notification."""

    events: list[WatchEvent]
    revision: int


class EtcdError(Exception):
    """A request to etcd failed."""


class EtcdUnavailable(EtcdError):
    """No etcd endpoint could be reached."""


class EtcdTimeout(EtcdError):
    """etcd did not answer within the request timeout."""


class CompactedError(EtcdError):
    """The requested revision was compacted away (etcd's ErrCompacted).

    compact_revision is the oldest revision still available when etcd said so (watches),
    or 0 when etcd did not say (reads).
    """

    def __init__(self, compact_revision: int, message: str = "") -> None:
        super().__init__(message or f"{COMPACTED_MESSAGE} (compacted to {compact_revision})")
        self.compact_revision = compact_revision


class KeyExistsError(EtcdError):
    """create found the key already there."""

    def __init__(self, key: bytes) -> None:
        super().__init__(f"key {key!r} already exists")
        self.key = key


class RevisionMismatch(EtcdError):
    """The key's mod_revision was not the expected one; current is the key now (None: gone)."""

    def __init__(self, current: KeyValue | None, key: bytes = b"") -> None:
        key = current.key if current is not None else key
        now = "is gone" if current is None else f"is at mod_revision {current.mod_revision}"
        super().__init__(f"key {key!r} {now}")
        self.current = current


def prefix_end(prefix: bytes) -> bytes:
    """The range_end that selects every key starting with prefix ("/a" -> "/b").

    Increment the last byte that is not 0xff and drop what follows; a prefix of only
    0xff bytes has no end, and b"\\0" means "to the end of the keyspace".
    """
    for i in range(len(prefix) - 1, -1, -1):
        if prefix[i] < 0xFF:
            return prefix[:i] + bytes([prefix[i] + 1])
    return b"\0"


@dataclass(frozen=True)
class EtcdTLS:
    """How the client reaches etcd over TLS (the API server's --etcd-cafile,
    --etcd-certfile, --etcd-keyfile): the CA etcd's certificate is checked against, and
    the client certificate etcd checks (--client-cert-auth)."""

    ca_file: str
    cert_file: str
    key_file: str

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=Path(self.ca_file).read_bytes(),
            private_key=Path(self.key_file).read_bytes(),
            certificate_chain=Path(self.cert_file).read_bytes())


def _target(endpoint: str, tls: EtcdTLS | None) -> str:
    """The gRPC target "host:port" for an endpoint like "https://127.0.0.1:2379"."""
    url = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    wanted = "https" if tls is not None else "http"
    if url.scheme != wanted or not url.port:
        raise ValueError(f"etcd endpoint {endpoint!r}: expected {wanted}://HOST:PORT"
                         + (" (https needs the CA and client certificate files)"
                            if url.scheme == "https" else ""))
    return url.netloc


def _key_value(kv: kv_pb2.KeyValue) -> KeyValue:
    return KeyValue(kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version, kv.lease)


def _watch_event(event: kv_pb2.Event, key_value: Callable[[kv_pb2.KeyValue], KeyValue]
                 ) -> WatchEvent:
    return WatchEvent(
        type="PUT" if event.type == kv_pb2.Event.PUT else "DELETE",
        kv=key_value(event.kv),
        prev_kv=key_value(event.prev_kv) if event.HasField("prev_kv") else None,
    )


def _translate(err: grpc.aio.AioRpcError) -> EtcdError:
    """Map a gRPC status from etcd to the matching EtcdError."""
    code, details = err.code(), err.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE:
        return EtcdUnavailable(f"etcd unavailable: {details}")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return EtcdTimeout(f"etcd did not answer in time: {details}")
    if code == grpc.StatusCode.OUT_OF_RANGE and COMPACTED_MESSAGE in details:
        return CompactedError(0, details)
    return EtcdError(f"etcd: {code.name}: {details}")


def _compare(key: bytes, target: str, **value: int) -> rpc_pb2.Compare:
    """A Txn condition "<target> of key == value", e.g. _compare(k, "MOD", mod_revision=7)."""
    return rpc_pb2.Compare(
        key=key,
        target=rpc_pb2.Compare.CompareTarget.Value(target),
        result=rpc_pb2.Compare.EQUAL,
        **value,
    )


def _put(key: bytes, value: bytes, lease: int) -> rpc_pb2.RequestOp:
    return rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=key, value=value, lease=lease))


def _get(key: bytes) -> rpc_pb2.RequestOp:
    return rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=key))


def _delete(key: bytes) -> rpc_pb2.RequestOp:
    request = rpc_pb2.DeleteRangeRequest(key=key, prev_kv=True)
    return rpc_pb2.RequestOp(request_delete_range=request)


@dataclass
class _Connection:
    """One endpoint's gRPC channel and the etcd service stubs on it."""

    channel: grpc.aio.Channel
    kv: Any
    watch: Any
    lease: Any
    maintenance: Any

    @classmethod
    def open(cls, target: str, credentials: grpc.ChannelCredentials | None) -> _Connection:
        channel = (grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
                   if credentials is None else
                   grpc.aio.secure_channel(target, credentials, options=CHANNEL_OPTIONS))
        return cls(
            channel,
            rpc_pb2_grpc.KVStub(channel),
            rpc_pb2_grpc.WatchStub(channel),
            rpc_pb2_grpc.LeaseStub(channel),
            rpc_pb2_grpc.MaintenanceStub(channel),
        )

    async def keep_alive_once(self, request: rpc_pb2.LeaseKeepAliveRequest, timeout: float) -> Any:
        """One round trip on a LeaseKeepAlive stream (etcd offers keep-alive only as a stream)."""
        call = self.lease.LeaseKeepAlive(timeout=timeout)
        try:
            await call.write(request)
            return await call.read()
        finally:
            call.cancel()


class EtcdClient:
    """An etcd v3 client (the part of clientv3 the API server's etcd3 store uses).

    Requests go to one endpoint at a time; when it is unavailable the client moves to the
    next. Requests never wait for etcd to come back: they fail at once with
    EtcdUnavailable, or with EtcdTimeout after request_timeout seconds.
    """

    def __init__(self, endpoints: list[str], *, request_timeout: float = 5.0,
                 transformer: ValueTransformer | None = None,
                 tls: EtcdTLS | None = None) -> None:
        """`transformer`: how values are written to and read from etcd (encryption at
        rest, storage/encryption.py); every value as it is without one. `tls`: https
        endpoints, with a client certificate."""
        if not endpoints:
            raise ValueError("EtcdClient needs at least one endpoint")
        self.transformer = transformer
        self._kv = _key_value if transformer is None else self._decrypted_key_value
        self.targets = [_target(url, tls) for url in endpoints]
        self._credentials = tls.credentials() if tls is not None else None
        self.request_timeout = request_timeout
        self._current = 0
        self._connections: dict[str, _Connection] = {}
        self._closed = False
        self._pending_gets: list[tuple[bytes, asyncio.Future[KeyValue | None]]] = []
        self._tasks: set[asyncio.Future[None]] = set()
        self._get_txns_in_flight = 0

    async def __aenter__(self) -> EtcdClient:
        return self

    def _decrypted_key_value(self, kv: kv_pb2.KeyValue) -> KeyValue:
        assert self.transformer is not None
        return KeyValue(kv.key, self.transformer.from_storage(kv.key, kv.value),
                        kv.create_revision, kv.mod_revision, kv.version, kv.lease)

    def _stored(self, key: bytes, value: bytes) -> bytes:
        return value if self.transformer is None else self.transformer.to_storage(key, value)

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every channel; requests and watches still running fail."""
        self._closed = True
        connections, self._connections = self._connections, {}
        for connection in connections.values():
            await connection.channel.close()

    def _connection(self) -> _Connection:
        """The connection to the current endpoint, opened on first use."""
        if self._closed:
            raise EtcdError("the etcd client is closed")
        target = self.targets[self._current]
        if target not in self._connections:
            self._connections[target] = _Connection.open(target, self._credentials)
        return self._connections[target]

    def _fail_over(self, failed: _Connection) -> None:
        """Move on to the next endpoint, unless another request already did."""
        if self._connections.get(self.targets[self._current]) is failed:
            self._current = (self._current + 1) % len(self.targets)

    async def _request(
        self, rpc: Callable[[_Connection], StubMethod], request: Any, *, safe: bool
    ) -> Any:
        """Send request with rpc, trying the next endpoint while the current one is unavailable.

        A write (safe=False) is repeated only if gRPC never reached the endpoint: after a
        lost connection it may already have been applied. When every endpoint has been
        tried, the round starts again after a short, growing pause, for RETRY_WINDOW
        seconds: a connection attempt that timed out on a loaded machine is not an
        outage (etcd's own client retries such requests too). An etcd that stays away
        still fails the request soon after.
        """
        started = time.monotonic()
        deadline = started + self.request_timeout
        retry_until = min(deadline, started + RETRY_WINDOW)
        pause = RETRY_PAUSE
        while True:
            for _ in self.targets:
                connection = self._connection()
                remaining = deadline - time.monotonic()
                try:
                    return await rpc(connection)(request, timeout=max(remaining, 0.001))
                except grpc.aio.AioRpcError as err:
                    retriable = err.code() == grpc.StatusCode.UNAVAILABLE and (
                        safe or NOT_CONNECTED_MESSAGE in (err.details() or ""))
                    if err.code() == grpc.StatusCode.UNAVAILABLE:
                        self._fail_over(connection)
                    if not retriable:
                        raise _translate(err) from err
                    error = err
            if time.monotonic() + pause >= retry_until:
                raise _translate(error) from error
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_RETRY_PAUSE)

    async def _txn(self, txn: rpc_pb2.TxnRequest) -> rpc_pb2.TxnResponse:
        return await self._request(lambda c: c.kv.Txn, txn, safe=False)

    async def range(
        self,
        key: bytes,
        range_end: bytes = b"",
        *,
        limit: int = 0,
        revision: int = 0,
        keys_only: bool = False,
        count_only: bool = False,
        newest_write_first: bool = False,
    ) -> RangeResult:
        """Range: read key, or [key, range_end), now or at an older revision (a list).

        newest_write_first: by mod_revision, descending, instead of by key (etcd then
        reads the whole range to sort it, and applies limit after)."""
        request = rpc_pb2.RangeRequest(
            key=key,
            range_end=range_end,
            limit=limit,
            revision=revision,
            keys_only=keys_only,
            count_only=count_only,
        )
        if newest_write_first:
            request.sort_order = rpc_pb2.RangeRequest.DESCEND
            request.sort_target = rpc_pb2.RangeRequest.MOD
        response = await self._request(lambda c: c.kv.Range, request, safe=True)
        return RangeResult(
            kvs=await map_in_slices(self._kv, response.kvs),
            more=response.more,
            count=response.count,
            revision=response.header.revision,
        )

    async def range_state(self, key: bytes, range_end: bytes) -> RangeState:
        """The revision now, the count of keys in [key, range_end) and their newest
        mod_revision, in one Range: keys only, newest write first, limit 1 (etcd counts
        the whole range whatever the limit)."""
        result = await self.range(key, range_end, limit=1, keys_only=True,
                                  newest_write_first=True)
        newest = result.kvs[0].mod_revision if result.kvs else 0
        return RangeState(result.revision, result.count, newest)

    async def get(self, key: bytes) -> KeyValue | None:
        """Read one key; None if it does not exist.

        Gets issued at the same moment (many clients reading at once) travel together as
        one read-only Txn: one gRPC call and one linearizable read in etcd instead of many.
        At most MAX_GET_TXNS_IN_FLIGHT such Txns are on their way at once; gets issued
        meanwhile wait for one to come back and then go together. Under load this makes
        the batches several times larger (each gRPC call costs the server about as much
        as the rest of a GET), and a lone get never waits.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[KeyValue | None] = loop.create_future()
        self._pending_gets.append((key, future))
        if len(self._pending_gets) == 1:
            # Runs once every task that is ready now has had its turn to queue a get.
            loop.call_soon(self._flush_gets)
        return await future

    def _flush_gets(self) -> None:
        if self._get_txns_in_flight >= MAX_GET_TXNS_IN_FLIGHT or not self._pending_gets:
            return  # _get_txn_done sends them
        batch = self._pending_gets[:MAX_TXN_OPS]
        self._pending_gets = self._pending_gets[MAX_TXN_OPS:]
        if self._pending_gets:
            asyncio.get_running_loop().call_soon(self._flush_gets)
        self._get_txns_in_flight += 1
        task = asyncio.ensure_future(self._send_gets(batch))
        self._tasks.add(task)
        task.add_done_callback(self._get_txn_done)

    def _get_txn_done(self, task: asyncio.Future[None]) -> None:
        self._tasks.discard(task)
        self._get_txns_in_flight -= 1
        self._flush_gets()

    async def _send_gets(self, batch: list[tuple[bytes, asyncio.Future[KeyValue | None]]]
                         ) -> None:
        try:
            if len(batch) == 1:
                result = await self.range(batch[0][0])
                found = [result.kvs]
            else:
                txn = rpc_pb2.TxnRequest(success=[
                    rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=key))
                    for key, _ in batch
                ])
                response = await self._request(lambda c: c.kv.Txn, txn, safe=True)
                found = [[self._kv(kv) for kv in op.response_range.kvs]
                         for op in response.responses]
        except BaseException as err:
            for _, future in batch:
                if not future.done():
                    future.set_exception(err)
            if not isinstance(err, Exception):
                raise
            return
        for (_, future), kvs in zip(batch, found, strict=True):
            if not future.done():
                future.set_result(kvs[0] if kvs else None)

    async def current_revision(self) -> int:
        """The store's current revision (any read's header carries it)."""
        return (await self.range(b"/", count_only=True)).revision

    async def create(self, key: bytes, value: bytes, *, lease: int = 0) -> int:
        """Create key if absent; return the new revision, or raise KeyExistsError."""
        response = await self._txn(
            rpc_pb2.TxnRequest(
                compare=[_compare(key, "CREATE", create_revision=0)],
                success=[_put(key, self._stored(key, value), lease)],
            )
        )
        if not response.succeeded:
            raise KeyExistsError(key)
        return response.header.revision

    async def put(self, key: bytes, value: bytes, *, lease: int = 0) -> int:
        """Write key whatever it holds (etcdctl put), attached to `lease` (0: none);
        return the new revision."""
        request = rpc_pb2.PutRequest(key=key, value=self._stored(key, value), lease=lease)
        return (await self._request(lambda c: c.kv.Put, request, safe=False)).header.revision

    async def update(
        self, key: bytes, value: bytes, expected_mod_revision: int, *, lease: int = 0
    ) -> int:
        """Overwrite key if nobody changed it since expected_mod_revision; return the new revision.

        Otherwise raise RevisionMismatch with the key as it is now, read by the failure
        branch of the same Txn. Like any etcd put, this sets the key's lease (0 = none).
        """
        response = await self._txn(
            rpc_pb2.TxnRequest(
                compare=[_compare(key, "MOD", mod_revision=expected_mod_revision)],
                success=[_put(key, self._stored(key, value), lease)],
                failure=[_get(key)],
            )
        )
        if not response.succeeded:
            raise RevisionMismatch(self._current_from(response), key)
        return response.header.revision

    async def delete(
        self, key: bytes, expected_mod_revision: int | None = None
    ) -> tuple[int, KeyValue]:
        """Delete key (if still at expected_mod_revision); return the revision and the deleted kv.

        RevisionMismatch(current) if the key changed meanwhile, RevisionMismatch(None)
        if it does not exist.
        """
        compare = []
        if expected_mod_revision is not None:
            compare = [_compare(key, "MOD", mod_revision=expected_mod_revision)]
        response = await self._txn(
            rpc_pb2.TxnRequest(compare=compare, success=[_delete(key)], failure=[_get(key)])
        )
        if not response.succeeded:
            raise RevisionMismatch(self._current_from(response), key)
        deleted = response.responses[0].response_delete_range.prev_kvs
        if not deleted:
            raise RevisionMismatch(None, key)
        return response.header.revision, self._kv(deleted[0])

    def _current_from(self, response: rpc_pb2.TxnResponse) -> KeyValue | None:
        """The key as read by a failed Txn's failure branch (None if it does not exist)."""
        kvs = response.responses[0].response_range.kvs
        return self._kv(kvs[0]) if kvs else None

    async def compact(self, revision: int, *, physical: bool = False) -> None:
        """Compact: forget the history before revision (CompactedError if already done)."""
        request = rpc_pb2.CompactionRequest(revision=revision, physical=physical)
        await self._request(lambda c: c.kv.Compact, request, safe=False)

    def watch(
        self, key: bytes, range_end: bytes, start_revision: int, *, prev_kv: bool = True
    ) -> Watch:
        """A Watch on [key, range_end) from start_revision (0 = from now); use `async with`."""
        return Watch(self, key, range_end, start_revision, prev_kv=prev_kv)

    async def lease_grant(self, ttl: int) -> int:
        """LeaseGrant: a new lease of at least ttl seconds; return its ID."""
        request = rpc_pb2.LeaseGrantRequest(TTL=ttl)
        response = await self._request(lambda c: c.lease.LeaseGrant, request, safe=False)
        if response.error:
            raise EtcdError(f"etcd: lease grant failed: {response.error}")
        return response.ID

    async def lease_revoke(self, lease_id: int) -> None:
        """LeaseRevoke: end the lease now, deleting every key attached to it."""
        request = rpc_pb2.LeaseRevokeRequest(ID=lease_id)
        await self._request(lambda c: c.lease.LeaseRevoke, request, safe=False)

    async def lease_keepalive_once(self, lease_id: int) -> int:
        """LeaseKeepAlive, once: renew the lease and return its new TTL in seconds."""
        request = rpc_pb2.LeaseKeepAliveRequest(ID=lease_id)
        response = await self._request(lambda c: c.keep_alive_once, request, safe=True)
        if response is grpc.aio.EOF or response.TTL <= 0:
            raise EtcdError(f"etcd: lease {lease_id:x} not found")
        return response.TTL

    async def lease_time_to_live(self, lease_id: int) -> int:
        """LeaseTimeToLive: seconds left on the lease; -1 if it expired or never existed."""
        request = rpc_pb2.LeaseTimeToLiveRequest(ID=lease_id)
        response = await self._request(lambda c: c.lease.LeaseTimeToLive, request, safe=True)
        return response.TTL

    async def server_version(self) -> str:
        """Maintenance.Status: the etcd server's version, e.g. "3.4.23"."""
        request = rpc_pb2.StatusRequest()
        response = await self._request(lambda c: c.maintenance.Status, request, safe=True)
        return response.version


class Watch:
    """One etcd watcher on its own gRPC Watch stream; iterate it for WatchBatch-es.

    etcd numbers every change with a revision, so the watcher can always say where to
    resume: after a lost connection it is created again from last_revision + 1, which
    repeats no event and skips none. If that revision was compacted meanwhile, iteration
    raises CompactedError (the caller must list again), as it does when start_revision
    was compacted already.
    """

    def __init__(
        self,
        client: EtcdClient,
        key: bytes,
        range_end: bytes,
        start_revision: int,
        *,
        prev_kv: bool = True,
    ) -> None:
        self._client = client
        self._create = rpc_pb2.WatchCreateRequest(
            key=key, range_end=range_end, progress_notify=True, prev_kv=prev_kv
        )
        self._start_revision = start_revision
        self._last_revision = max(start_revision - 1, 0)
        self._call: Any = None
        self._watch_id = 0
        self._write_lock = asyncio.Lock()
        self._closed = False
        self._error: EtcdError | None = None

    @property
    def last_revision(self) -> int:
        """The resume point: every event up to this revision has been delivered."""
        return self._last_revision

    async def __aenter__(self) -> Watch:
        await self._open(self._start_revision)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> WatchBatch:
        """Wait for the next WatchResponse, reconnecting as often as needed."""
        while True:
            if self._closed:
                raise StopAsyncIteration
            if self._error is not None:
                raise self._error
            if self._call is None:
                raise RuntimeError("enter the watch with 'async with' before iterating it")
            try:
                response = await self._call.read()
            except grpc.aio.AioRpcError as err:
                if self._closed:
                    raise StopAsyncIteration from None
                if err.code() != grpc.StatusCode.UNAVAILABLE:
                    raise _translate(err) from err
                await self._reconnect()
                continue
            if response is grpc.aio.EOF:
                await self._reconnect()
                continue
            return self._batch(response)

    def _batch(self, response: rpc_pb2.WatchResponse) -> WatchBatch:
        """Turn a WatchResponse into a WatchBatch and advance last_revision."""
        if response.canceled:
            self._call.cancel()
            if response.compact_revision:
                self._error = CompactedError(response.compact_revision)
            else:
                self._error = EtcdError(f"etcd canceled the watch: {response.cancel_reason}")
            raise self._error
        events = [_watch_event(event, self._client._kv) for event in response.events]
        if events:
            # The header revision of a catching-up batch may be ahead of its last event
            # (more events follow), so resume after the last event, not the header.
            self._last_revision = events[-1].kv.mod_revision
        elif response.watch_id == self._watch_id:
            # etcd sends its periodic progress notifications in line with the events, so
            # nothing before them is still on its way: resume after their revision.
            self._last_revision = max(self._last_revision, response.header.revision)
        return WatchBatch(events, response.header.revision)

    async def _open(self, start_revision: int) -> None:
        """Open a Watch stream, create the watcher, and wait for etcd's "created" answer."""
        connection = self._client._connection()
        call = connection.watch.Watch()
        create = rpc_pb2.WatchCreateRequest()
        create.CopyFrom(self._create)
        create.start_revision = start_revision
        try:
            async with asyncio.timeout(self._client.request_timeout):
                await call.write(rpc_pb2.WatchRequest(create_request=create))
                response = await call.read()
        except grpc.aio.AioRpcError as err:
            call.cancel()
            if err.code() == grpc.StatusCode.UNAVAILABLE:
                self._client._fail_over(connection)
            raise _translate(err) from err
        except TimeoutError:
            call.cancel()
            raise EtcdTimeout("etcd did not confirm the watch in time") from None
        if response is grpc.aio.EOF or not response.created:
            call.cancel()
            raise EtcdUnavailable("etcd closed the watch stream before creating the watcher")
        if self._closed:  # close() ran while we were connecting
            call.cancel()
            return
        self._call, self._watch_id = call, response.watch_id
        if start_revision == 0:
            # A watch "from now" starts after the revision etcd reports on creation.
            self._last_revision = response.header.revision
        if response.canceled:
            self._batch(response)

    async def _reconnect(self) -> None:
        """Re-create the watcher after the stream broke, retrying with a bounded backoff."""
        self._call.cancel()
        delay = WATCH_BACKOFF_INITIAL
        while not self._closed:
            await asyncio.sleep(delay)
            try:
                await self._open(self._last_revision + 1)
                return
            except (EtcdUnavailable, EtcdTimeout):
                delay = min(delay * 2, WATCH_BACKOFF_MAX)

    async def _send(self, request: rpc_pb2.WatchRequest) -> None:
        """Write to the stream, one write at a time; a broken stream is left for __anext__."""
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError, TimeoutError):
            async with self._write_lock, asyncio.timeout(self._client.request_timeout):
                await self._call.write(request)


    async def close(self) -> None:
        """Cancel the watcher in etcd and close the stream."""
        if self._closed:
            return
        self._closed = True
        if self._call is not None and not self._call.done():
            cancel = rpc_pb2.WatchCancelRequest(watch_id=self._watch_id)
            await self._send(rpc_pb2.WatchRequest(cancel_request=cancel))
            self._call.cancel()
