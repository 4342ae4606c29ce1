"""Cluster DNS: cached A queries/s against a bare UDP echo server (the floor), and latency.

The DNS server (minikube_py/dns/server.py, with 1,000 Services in its records) and a UDP
echo server run each in a process of their own on the same event loop (uvloop), one at a
time. One load generator process keeps a fixed number of queries in flight against each
in turn, alternating, so each ratio is taken on the same state of the machine: the
echo server does the least a UDP server can do per datagram, so the ratio says what
answering DNS costs beyond receiving and sending. Then a paced phase sends 1,000
queries/s and records each query's round trip. A full run takes the medians of 5
trials of 3 s and paces for 5 s; --quick, a smoke run, one trial of 0.5 s and 1 s.

Targets: cached A queries/s >= 40% of the echo floor; p99 <= 5 ms at a paced 1,000/s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

# Run as a script, this file's folder comes first on the path, and this file would be
# the `dns` that the next lines import: put the repository there instead.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

import dns.message  # noqa: E402
import uvloop  # noqa: E402

from benchmarks.apiserver import BenchmarkError  # noqa: E402
from benchmarks.report import Row, run_benchmark, verdict  # noqa: E402
from minikube_py.dns.records import ClusterRecords  # noqa: E402
from minikube_py.dns.server import DNSServer  # noqa: E402
from minikube_py.process import free_port  # noqa: E402

SERVICES = 1000
WINDOW = 32
"""Queries in flight at once: enough to keep the server busy, few enough not to drop."""


class Echo(asyncio.DatagramProtocol):
    """The floor: every datagram straight back."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.transport.sendto(data, addr)


async def serve(kind: str, port: int) -> None:
    """A server process: the echo server, or the DNS server with SERVICES Services."""
    if kind == "echo":
        await asyncio.get_running_loop().create_datagram_endpoint(
            Echo, local_addr=("127.0.0.1", port))
    else:
        records = ClusterRecords()
        for i in range(SERVICES):
            records.set_service({
                "metadata": {"name": f"svc-{i}", "namespace": "bench"},
                "spec": {"clusterIP": f"10.96.{i // 250}.{i % 250 + 2}",
                         "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})
        await DNSServer(records).start("127.0.0.1", port)
    await asyncio.Event().wait()


def queries(count: int) -> list[bytes]:
    """Pre-encoded A queries for the Services, as a pod's resolver would send them."""
    return [dns.message.make_query(f"svc-{i % SERVICES}.bench.svc.cluster.local.", "A",
                                   id=i % 65536).to_wire() for i in range(count)]


class Load(asyncio.DatagramProtocol):
    """Keeps WINDOW queries in flight; counts answers, or records round trips."""

    def __init__(self, payloads: list[bytes], *, refill: bool) -> None:
        self.payloads = payloads
        self.refill = refill
        self.next = 0
        self.answered = 0
        self.sent_at: dict[bytes, float] = {}
        self.latencies: list[float] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def send(self) -> None:
        payload = self.payloads[self.next % len(self.payloads)]
        self.next += 1
        self.sent_at[payload[:2]] = time.perf_counter()
        self.transport.sendto(payload)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.answered += 1
        sent = self.sent_at.pop(data[:2], None)
        if sent is not None:
            self.latencies.append(time.perf_counter() - sent)
        if self.refill:
            self.send()


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def rate(port: int, seconds: float, server_pid: int) -> tuple[float, float]:
    """Answers per second with WINDOW queries in flight (an answer sends the next query),
    and the share of one core the server used meanwhile."""
    loop = asyncio.get_running_loop()
    load = Load(queries(4096), refill=True)
    transport, _ = await loop.create_datagram_endpoint(
        lambda: load, remote_addr=("127.0.0.1", port))
    for _ in range(WINDOW):
        load.send()
    await asyncio.sleep(0.5)  # warm-up: every name answered once, so cached
    start_count, start, cpu = load.answered, time.perf_counter(), cpu_seconds(server_pid)
    await asyncio.sleep(seconds)
    count, elapsed = load.answered - start_count, time.perf_counter() - start
    busy = (cpu_seconds(server_pid) - cpu) / elapsed
    transport.close()
    return count / elapsed, busy


async def paced(port: int, per_second: int, seconds: float) -> list[float]:
    """Round trips in ms of queries sent at a fixed rate."""
    loop = asyncio.get_running_loop()
    load = Load(queries(per_second * int(seconds) + 1), refill=False)
    transport, _ = await loop.create_datagram_endpoint(
        lambda: load, remote_addr=("127.0.0.1", port))
    start = time.perf_counter()
    for i in range(per_second * int(seconds)):
        delay = start + i / per_second - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        load.send()
    await asyncio.sleep(0.5)
    transport.close()
    return sorted(latency * 1000 for latency in load.latencies)


def start_server(kind: str) -> tuple[subprocess.Popen[bytes], int]:
    """A server process, once it answers a query."""
    port = free_port()
    process = subprocess.Popen([sys.executable, __file__, "--serve", kind, "--port", str(port)],
                               env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    probe = queries(1)[0]
    deadline = time.monotonic() + 20
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(0.2)
        while True:
            try:
                sock.sendto(probe, ("127.0.0.1", port))
                sock.recv(4096)
                return process, port
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    raise BenchmarkError(f"the {kind} server did not answer") from None


async def measure(args: argparse.Namespace) -> list[Row]:
    trials = 1 if args.quick else 5
    seconds = 0.5 if args.quick else 3.0
    paced_seconds = 1 if args.quick else 5
    dns_rates: list[float] = []
    echo_rates: list[float] = []
    busy: dict[str, list[float]] = {"dns": [], "echo": []}
    for trial in range(trials):
        order = ("echo", "dns") if trial % 2 == 0 else ("dns", "echo")
        for kind in order:
            process, port = start_server(kind)
            try:
                answers, cpu = await rate(port, seconds, process.pid)
                (echo_rates if kind == "echo" else dns_rates).append(answers)
                busy[kind].append(cpu)
            finally:
                process.terminate()
                process.wait()
    ratios = [d / e for d, e in zip(dns_rates, echo_rates, strict=True)]
    process, port = start_server("dns")
    try:
        latencies = await paced(port, 1000, paced_seconds)
    finally:
        process.terminate()
        process.wait()
    sent = 1000 * paced_seconds
    p50 = latencies[len(latencies) // 2]
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    share = statistics.median(ratios)

    def per_answer(kind: str, rates: list[float]) -> float:
        return statistics.median(b / r * 1e6 for b, r in zip(busy[kind], rates, strict=True))

    def listing(values: list[float]) -> str:
        return ", ".join(f"{v:,.0f}" for v in values)

    return [
        ("UDP echo floor, answers/s (32 in flight)",
         f"{statistics.median(echo_rates):,.0f}/s (trials {listing(echo_rates)}); "
         f"server busy {statistics.median(busy['echo']):.0%} of a core, "
         f"{per_answer('echo', echo_rates):.1f} us CPU per answer", "", ""),
        (f"cached A queries/s, {SERVICES} Services (32 in flight)",
         f"{statistics.median(dns_rates):,.0f}/s (trials {listing(dns_rates)}); "
         f"{share:.0%} of the floor (ratios {', '.join(f'{r:.0%}' for r in ratios)}); "
         f"server busy {statistics.median(busy['dns']):.0%} of a core, "
         f"{per_answer('dns', dns_rates):.1f} us CPU per answer",
         ">= 40% of the floor", verdict(share >= 0.40)),
        ("latency at a paced 1,000 queries/s",
         f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {latencies[-1]:.2f} ms; "
         f"{len(latencies):,} of {sent:,} answered", "p99 <= 5 ms",
         verdict(p99 <= 5.0 and len(latencies) == sent)),
    ]


def main() -> None:
    if "--serve" in sys.argv:
        parser = argparse.ArgumentParser()
        parser.add_argument("--serve", choices=("dns", "echo"))
        parser.add_argument("--port", type=int)
        args = parser.parse_args()
        uvloop.run(serve(args.serve, args.port))
        return
    run_benchmark(__doc__.splitlines()[0], "cluster DNS", "dns.py", measure)


if __name__ == "__main__":
    main()
