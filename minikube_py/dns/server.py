"""The DNS server: UDP and TCP on port 53, answers from the cluster's records, the rest
forwarded.

    query bytes --> cached answer for these exact bytes?  --yes--> send it (our ID)
                      | no
                      v
                    parse (dnspython)  --malformed--> FORMERR
                      |
                      v
                    ClusterRecords.resolve(name, type)   (records.py)
                      | an Answer                       | None: not a cluster name
                      v                                 v
                    encode, cache, send              forward the query bytes to the
                                                     upstream resolvers; REFUSED if none,
                                                     SERVFAIL if none answers

Cached answers are keyed on the query's bytes after its 2-byte ID, so a repeated
question costs a dict lookup, no parsing. Every change the informers report moves
`ClusterRecords.generation`, and the cache is dropped then, so an answer is never staler
than the informers (CoreDNS's `cache` plugin instead keeps answers up to their TTL).
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import dns.exception
import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from minikube_py.dns.records import TTL, Answer, ClusterRecords, Record

log = logging.getLogger(__name__)

CACHE_SIZE = 10_000
FORWARD_TIMEOUT = 2.0
TCP_IDLE_TIMEOUT = 10.0
UDP_PAYLOAD = 512
"""Largest UDP answer for a query without EDNS (RFC 1035); longer ones are truncated."""
_RCODE_NAMES = {code: dns.rcode.to_text(code) for code in range(16)}


@dataclass
class DNSStats:
    """Counters for /metrics (coredns_dns_requests_total and friends), plain integers:
    a lock per update would cost more than the cached answer itself."""

    requests: dict[str, int] = field(default_factory=dict)  # by protocol
    responses: dict[str, int] = field(default_factory=dict)  # by rcode
    cache_hits: int = 0
    cache_misses: int = 0
    forwarded: int = 0

    def count(self, proto: str, rcode: str) -> None:
        self.requests[proto] = self.requests.get(proto, 0) + 1
        self.responses[rcode] = self.responses.get(rcode, 0) + 1


def formerr(query: bytes) -> bytes:
    """FORMERR for a query we cannot parse: its ID back, QR set, no sections."""
    ident = query[:2].ljust(2, b"\0")
    opcode_bits = query[2] & 0x78 if len(query) > 2 else 0
    return ident + bytes([0x80 | opcode_bits, dns.rcode.FORMERR]) + b"\0" * 8


class DNSServer:
    """Answers queries from `records`; forwards other names to `upstreams`."""

    def __init__(self, records: ClusterRecords, upstreams: Sequence[tuple[str, int]] = (),
                 *, stats: DNSStats | None = None) -> None:
        self.records = records
        self.upstreams = list(upstreams)
        self.stats = stats or DNSStats()
        self._cache: dict[bytes, bytes] = {}
        self._cache_generation = records.generation
        self._soa = dns.rrset.from_text(
            records.zone, TTL, "IN", "SOA",
            f"ns.dns.{records.zone} hostmaster.{records.zone} {int(time.time())} "
            f"7200 1800 86400 {TTL}")

    # -- the answer to one query -------------------------------------------------------

    def cached(self, query: bytes, proto: str) -> bytes | None:
        """The cached answer to these exact query bytes, with the query's own ID."""
        if self._cache_generation != self.records.generation:
            self._cache.clear()
            self._cache_generation = self.records.generation
        body = self._cache.get(query[2:])
        if body is None:
            self.stats.cache_misses += 1
            return None
        self.stats.cache_hits += 1
        self.stats.count(proto, _RCODE_NAMES[body[1] & 0xF])
        return query[:2] + body

    async def respond(self, query: bytes, proto: str) -> bytes:
        """The whole pipeline for one query (see the module's diagram)."""
        return self.cached(query, proto) or await self.answer(query, proto)

    async def answer(self, query: bytes, proto: str) -> bytes:
        """Answer a query that is not in the cache."""
        try:
            message = dns.message.from_wire(query)
        except (dns.exception.DNSException, ValueError, IndexError, struct.error):
            self.stats.count(proto, "FORMERR")
            return formerr(query)
        if message.opcode() != dns.opcode.QUERY or len(message.question) != 1:
            rcode = dns.rcode.NOTIMP if message.opcode() != dns.opcode.QUERY else dns.rcode.FORMERR
            return self._finish(message, rcode, proto)
        question = message.question[0]
        answer = None
        if question.rdclass == dns.rdataclass.IN:
            answer = self.records.resolve(question.name.to_text().lower(),
                                          dns.rdatatype.to_text(question.rdtype))
        if answer is None:
            return await self._forward(query, message, proto)
        wire = self._encode(message, answer, proto)
        if len(self._cache) >= CACHE_SIZE:
            self._cache.clear()
        self._cache[query[2:]] = wire[2:]
        self.stats.count(proto, answer.rcode)
        return wire

    def _encode(self, query: dns.message.Message, answer: Answer, proto: str) -> bytes:
        """The response message for `answer`: authoritative, the SOA on negative answers,
        truncated (TC) when it does not fit a UDP datagram."""
        response = dns.message.make_response(query, recursion_available=True)
        response.flags |= dns.flags.AA
        response.set_rcode(dns.rcode.from_text(answer.rcode))
        response.answer.extend(_rrsets(answer.records))
        response.additional.extend(_rrsets(answer.additional))
        if not answer.records:
            response.authority.append(self._soa)
        limit = 65535 if proto == "tcp" else max(UDP_PAYLOAD, query.payload)
        try:
            return response.to_wire(max_size=limit)
        except dns.exception.TooBig:
            truncated = dns.message.make_response(query, recursion_available=True)
            truncated.flags |= dns.flags.AA | dns.flags.TC
            return truncated.to_wire()

    def _finish(self, query: dns.message.Message, rcode: int, proto: str) -> bytes:
        response = dns.message.make_response(query, recursion_available=True)
        response.set_rcode(rcode)
        self.stats.count(proto, dns.rcode.to_text(rcode))
        return response.to_wire()

    async def _forward(self, query: bytes, message: dns.message.Message, proto: str) -> bytes:
        """Forward a name outside the cluster to each upstream resolver in turn."""
        if not self.upstreams:
            return self._finish(message, dns.rcode.REFUSED, proto)
        self.stats.forwarded += 1
        for host, port in self.upstreams:
            try:
                async with asyncio.timeout(FORWARD_TIMEOUT):
                    if proto == "tcp":
                        response = await _forward_tcp(query, host, port)
                    else:
                        response = await _forward_udp(query, host, port)
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as error:
                log.info("forward to %s:%d failed: %s", host, port, error or "timed out")
                continue
            self.stats.count(proto, _RCODE_NAMES[response[3] & 0xF]
                             if len(response) > 3 else "FORMERR")
            return response
        return self._finish(message, dns.rcode.SERVFAIL, proto)

    # -- the sockets -------------------------------------------------------------------

    async def start(self, host: str, port: int) -> None:
        """Listen on host:port, UDP and TCP (port 0: any free port, the same for both)."""
        loop = asyncio.get_running_loop()
        self._tcp = await asyncio.start_server(self._serve_tcp, host, port)
        port = self._tcp.sockets[0].getsockname()[1]
        self._udp, _ = await loop.create_datagram_endpoint(
            lambda: _UDPProtocol(self), local_addr=(host, port))
        self.port = port

    async def stop(self) -> None:
        self._udp.close()
        self._tcp.close()
        await self._tcp.wait_closed()

    async def _serve_tcp(self, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter) -> None:
        """RFC 7766: queries with a 2-byte length prefix, several on one connection."""
        try:
            while True:
                async with asyncio.timeout(TCP_IDLE_TIMEOUT):
                    (length,) = struct.unpack("!H", await reader.readexactly(2))
                    query = await reader.readexactly(length)
                response = await self.respond(query, "tcp")
                writer.write(struct.pack("!H", len(response)) + response)
                await writer.drain()
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()


class _UDPProtocol(asyncio.DatagramProtocol):
    """One socket for every UDP query; a cached answer is sent without a task."""

    def __init__(self, server: DNSServer) -> None:
        self.server = server

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if len(data) > 2 and data[2] & 0x80:
            return  # a response, not a query: answering it could start a loop
        response = self.server.cached(data, "udp")
        if response is not None:
            self.transport.sendto(response, addr)
            return
        task = asyncio.ensure_future(self.server.answer(data, "udp"))
        task.add_done_callback(lambda done: self._reply(done, addr))

    def _reply(self, done: asyncio.Future[bytes], addr: tuple[str, int]) -> None:
        if not done.cancelled() and done.exception() is None and not self.transport.is_closing():
            self.transport.sendto(done.result(), addr)
        elif not done.cancelled() and done.exception() is not None:
            log.error("answering a query from %s failed", addr, exc_info=done.exception())


def _rrsets(records: list[Record]) -> list[dns.rrset.RRset]:
    """Group records by (name, type) into dnspython rrsets."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for record in records:
        if record.rtype == "SRV":
            priority, weight, port, target = record.data
            text = f"{priority} {weight} {port} {target}"
        else:
            text = str(record.data)
        grouped.setdefault((record.name, record.rtype), []).append(text)
    return [dns.rrset.from_text(name, TTL, "IN", rtype, *texts)
            for (name, rtype), texts in grouped.items()]


async def _forward_udp(query: bytes, host: str, port: int) -> bytes:
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[bytes] = loop.create_future()

    class Forward(asyncio.DatagramProtocol):
        def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
            if data[:2] == query[:2] and not answer.done():
                answer.set_result(data)

        def error_received(self, exc: Exception) -> None:
            if not answer.done():
                answer.set_exception(exc)

    transport, _ = await loop.create_datagram_endpoint(Forward, remote_addr=(host, port))
    try:
        transport.sendto(query)
        return await answer
    finally:
        transport.close()


async def _forward_tcp(query: bytes, host: str, port: int) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(struct.pack("!H", len(query)) + query)
        await writer.drain()
        (length,) = struct.unpack("!H", await reader.readexactly(2))
        return await reader.readexactly(length)
    finally:
        writer.close()
