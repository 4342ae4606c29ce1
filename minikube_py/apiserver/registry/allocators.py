"""Service cluster IP and node port allocators: one etcd key per allocated value.

Upstream: pkg/registry/core/service/ipallocator (since 1.33 one IPAddress object per
allocated IP, stored at /registry/ipaddresses/<ip>) and portallocator. Here both kinds of
value are kept the same way, one key each:

    /registry/ipaddresses/10.96.0.10       /registry/servicenodeports/30080

A key is written with etcd's create Txn ("create_revision == 0"), so two API servers can
never hand out the same value: the second create fails and that server tries another one.
The key's value names the owning service, like an IPAddress object's spec.parentRef:

    {"metadata": {"name": "30080", "creationTimestamp": "..."},
     "spec": {"parentRef": {"group": "", "resource": "services",
                            "namespace": "default", "name": "web"}}}

Each range is split in two (KEP-3070): random allocation prefers the upper part, leaving the
first values for users who ask for a specific IP or port.
"""

from __future__ import annotations

import ipaddress
import itertools
import random
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

import orjson

from minikube_py.api import meta
from minikube_py.apiserver.storage.etcd import (
    KeyExistsError,
    KeyValue,
    RevisionMismatch,
    prefix_end,
)

IP_PREFIX = "/registry/ipaddresses/"
NODE_PORT_PREFIX = "/registry/servicenodeports/"
DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
DEFAULT_NODE_PORT_RANGE = "30000-32767"
MAX_SERVICE_CIDR_BITS = 20  # upstream: an IPv4 service range is at most a /12
IP_FAMILY_LABEL = "ipaddress.kubernetes.io/ip-family"
MANAGED_BY_LABEL = "ipaddress.kubernetes.io/managed-by"
IP_ALLOCATOR_NAME = "ipallocator.k8s.io"

V = TypeVar("V", str, int)


class AllocationError(Exception):
    """An allocation failed; the message is upstream's ("provided IP is already allocated")."""


class AlreadyAllocated(AllocationError):
    """ErrAllocated: someone holds the value asked for."""

    def __init__(self, noun: str) -> None:
        super().__init__(f"provided {noun} is already allocated")


class NotInRange(AllocationError):
    """ErrNotInRange: the value asked for is outside the configured range."""

    def __init__(self, noun: str, valid_range: str) -> None:
        super().__init__(
            f"provided {noun} is not in the valid range. "
            f"The range of valid {noun}s is {valid_range}"
        )


class RangeFull(AllocationError):
    """ErrFull: no value is left to allocate."""

    def __init__(self) -> None:
        super().__init__("range is full")


@dataclass(frozen=True)
class Owner:
    """The service an allocated value belongs to (an IPAddress's spec.parentRef)."""

    namespace: str
    name: str


@dataclass(frozen=True)
class Allocated:
    """One allocation key as read back from etcd (for the repair pass)."""

    name: str  # the value as written in the key: "10.96.0.10", "30080"
    owner: Owner | None  # None when the key's value is not an allocation record
    created: datetime | None
    kv: KeyValue


def parse_service_cidr(text: str) -> ipaddress.IPv4Network:
    """--service-cluster-ip-range: an IPv4 network between /12 and /30."""
    try:
        network = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError as err:
        raise ValueError(f"invalid --service-cluster-ip-range {text!r}: {err}") from None
    if not isinstance(network, ipaddress.IPv4Network):
        raise ValueError(f"--service-cluster-ip-range {text!r}: only IPv4 ranges are supported")
    if network.prefixlen < 32 - MAX_SERVICE_CIDR_BITS:
        raise ValueError(
            f"specified --service-cluster-ip-range {text} is too large; for 32-bit addresses, "
            f"the mask must be >= {32 - MAX_SERVICE_CIDR_BITS}"
        )
    if network.num_addresses < 4:
        raise ValueError(f"--service-cluster-ip-range {text} holds no usable address")
    return network


def parse_port_range(text: str) -> range:
    """--service-node-port-range: `30000-32767`, inclusive at both ends."""
    first, sep, last = text.strip().partition("-")
    try:
        ports = range(int(first), int(last if sep else first) + 1)
    except ValueError:
        raise ValueError(
            f"invalid --service-node-port-range {text!r} (expected e.g. 30000-32767)"
        ) from None
    if not ports:
        raise ValueError(f"invalid --service-node-port-range {text!r}: the first port is last")
    if ports.start < 1 or ports.stop > 65536:
        raise ValueError(f"invalid --service-node-port-range {text!r}: ports are 1-65535")
    return ports


def static_band(size: int, minimum: int, maximum: int, step: int) -> int:
    """calculateRangeOffset: how many of the first values random allocation avoids.

    min(max(minimum, size/step), maximum), and 0 for ranges of `minimum` values or fewer.
    """
    if size <= minimum:
        return 0
    return min(max(minimum, size // step), maximum)


def allocation_record(name: str, owner: Owner) -> dict[str, Any]:
    """The value of an allocation key: who holds the value, and since when."""
    return {
        "metadata": {"name": name, "creationTimestamp": meta.rfc3339(meta.now())},
        "spec": {
            "parentRef": {
                "group": "",
                "resource": "services",
                "namespace": owner.namespace,
                "name": owner.name,
            }
        },
    }


def read_record(kv: KeyValue, prefix: str) -> Allocated:
    """An allocation key as read from etcd; a value not written by us has no owner."""
    name = kv.key.decode()[len(prefix) :]
    try:
        record = orjson.loads(kv.value)
        ref = record["spec"]["parentRef"]
        owner = Owner(str(ref["namespace"]), str(ref["name"]))
        created = meta.parse_rfc3339(record["metadata"]["creationTimestamp"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return Allocated(name, None, None, kv)
    return Allocated(name, owner, created, kv)


class RangeAllocator(ABC, Generic[V]):
    """Values of one range, each allocated value one etcd key (upstream's allocator.Interface).

    A subclass maps values to offsets 0..size-1 and back. Offsets in `reserved` are never
    handed out at random; they can only be asked for by value.
    """

    noun = "value"

    def __init__(
        self,
        etcd: Any,
        prefix: str,
        size: int,
        valid_range: str,
        band: int,
        reserved: Collection[int] = (),
    ) -> None:
        self.etcd = etcd
        self.prefix = prefix
        self.size = size
        self.valid_range = valid_range
        self.band = band
        self.reserved = frozenset(reserved)

    @abstractmethod
    def value_at(self, offset: int) -> V:
        """The value at an offset of the range."""

    @abstractmethod
    def offset_of(self, value: V) -> int | None:
        """The value's offset in the range, or None when it is outside."""

    @abstractmethod
    def parse(self, name: str) -> V | None:
        """A key's last segment back to a value (None if it is no value of this kind)."""

    def key(self, value: V) -> bytes:
        return f"{self.prefix}{value}".encode()

    def record(self, value: V, owner: Owner) -> bytes:
        return orjson.dumps(allocation_record(str(value), owner))

    async def allocate(self, value: V, owner: Owner, *, dry_run: bool = False) -> None:
        """Allocate: reserve this value for owner (NotInRange, AlreadyAllocated)."""
        if self.offset_of(value) is None:
            raise NotInRange(self.noun, self.valid_range)
        if dry_run:
            if await self.etcd.get(self.key(value)) is not None:
                raise AlreadyAllocated(self.noun)
            return
        try:
            await self.etcd.create(self.key(value), self.record(value, owner))
        except KeyExistsError:
            raise AlreadyAllocated(self.noun) from None

    async def allocate_next(
        self, owner: Owner, *, dry_run: bool = False, avoid: Collection[V] = ()
    ) -> V:
        """AllocateNext: reserve a free value, from a random start (RangeFull when none).

        One read lists what is taken; a create that loses a race with another API server
        moves on to the next free value. A dry run only picks the value.
        """
        prefix = self.prefix.encode()
        listed = await self.etcd.range(prefix, prefix_end(prefix), keys_only=True)
        names = (kv.key.decode()[len(self.prefix) :] for kv in listed.kvs)
        values = [value for value in map(self.parse, names) if value is not None]
        taken = {self.offset_of(value) for value in [*values, *avoid]}
        for offset in self.candidates():
            if offset in taken:
                continue
            value = self.value_at(offset)
            if dry_run:
                return value
            try:
                await self.etcd.create(self.key(value), self.record(value, owner))
            except KeyExistsError:
                continue
            return value
        raise RangeFull()

    def candidates(self) -> Iterator[int]:
        """The upper part of the range from a random offset, then the lower part likewise."""
        for first, stop in ((self.band, self.size), (0, self.band)):
            if first >= stop:
                continue
            start = random.randrange(first, stop)
            for offset in itertools.chain(range(start, stop), range(first, start)):
                if offset not in self.reserved:
                    yield offset

    async def release(self, value: V) -> None:
        """Release: free the value (releasing a free value does nothing)."""
        try:
            await self.etcd.delete(self.key(value))
        except RevisionMismatch:
            pass

    async def release_if_unchanged(self, allocated: Allocated) -> bool:
        """Free a key only if nobody rewrote it since it was read (the repair pass)."""
        try:
            await self.etcd.delete(allocated.kv.key, allocated.kv.mod_revision)
        except RevisionMismatch:
            return False
        return True

    async def allocations(self) -> list[Allocated]:
        """Every allocation key of this kind, with its owner."""
        prefix = self.prefix.encode()
        result = await self.etcd.range(prefix, prefix_end(prefix))
        return [read_record(kv, self.prefix) for kv in result.kvs]


class IPAllocator(RangeAllocator[str]):
    """--service-cluster-ip-range: IPv4 cluster IPs (upstream ipallocator.Allocator).

    The network and broadcast addresses are never allocated; the first address
    (10.96.0.1) is reserved for the `kubernetes` service and only given when asked for.
    """

    noun = "IP"

    def __init__(self, etcd: Any, cidr: str = DEFAULT_SERVICE_CIDR) -> None:
        self.network = parse_service_cidr(cidr)
        self.first = int(self.network.network_address) + 1
        size = self.network.num_addresses - 2
        band = static_band(self.network.num_addresses, minimum=16, maximum=256, step=16)
        super().__init__(etcd, IP_PREFIX, size, str(self.network), band, reserved=(0,))

    @property
    def kubernetes_service_ip(self) -> str:
        """The first IP of the range: the `kubernetes` service's cluster IP."""
        return self.value_at(0)

    def value_at(self, offset: int) -> str:
        return str(ipaddress.IPv4Address(self.first + offset))

    def offset_of(self, value: str) -> int | None:
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            return None
        offset = int(address) - self.first
        if address.version != 4 or not 0 <= offset < self.size:
            return None
        return offset

    def parse(self, name: str) -> str | None:
        try:
            return str(ipaddress.IPv4Address(name))
        except ValueError:
            return None

    def record(self, value: str, owner: Owner) -> bytes:
        """An IPAddress object (networking.k8s.io/v1), as upstream's allocator writes one."""
        record = allocation_record(value, owner)
        record["metadata"]["labels"] = {
            IP_FAMILY_LABEL: "IPv4",
            MANAGED_BY_LABEL: IP_ALLOCATOR_NAME,
        }
        return orjson.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress", **record})


class PortAllocator(RangeAllocator[int]):
    """--service-node-port-range: node ports (upstream portallocator.PortAllocator)."""

    noun = "port"

    def __init__(self, etcd: Any, ports: str = DEFAULT_NODE_PORT_RANGE) -> None:
        self.ports = parse_port_range(ports)
        valid = f"{self.ports.start}-{self.ports.stop - 1}"
        band = static_band(len(self.ports), minimum=16, maximum=128, step=32)
        super().__init__(etcd, NODE_PORT_PREFIX, len(self.ports), valid, band)

    def value_at(self, offset: int) -> int:
        return self.ports.start + offset

    def offset_of(self, value: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int) or value not in self.ports:
            return None
        return value - self.ports.start

    def parse(self, name: str) -> int | None:
        return int(name) if name.isdigit() else None
