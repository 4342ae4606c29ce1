"""Benchmark: raw etcd create rate through EtcdClient (the ceiling for API server creates).

Run as `.venv/bin/python -m benchmarks.etcd_raw [--n N] [--concurrency C]`; it starts
a private etcd on tmpfs, so it needs nothing running.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from pathlib import Path

from minikube_py.apiserver.storage.etcd import EtcdClient
from minikube_py.cluster.etcd import EtcdProcess

TMPFS = Path("/dev/shm")


def scratch_directory() -> tempfile.TemporaryDirectory[str]:
    """A scratch dir on tmpfs (etcd fsyncs a lot) named with our pid, so a test run that
    finds it after this process crashed knows it may remove it (tests/conftest.py)."""
    root = TMPFS if TMPFS.is_dir() else Path(tempfile.gettempdir())
    return tempfile.TemporaryDirectory(prefix=f"minikube-py-bench-{os.getpid()}-", dir=root)
VALUE = b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"bench"}}'


async def raw_create_rate(client: EtcdClient, n: int = 5000, concurrency: int = 64) -> float:
    """Create n small keys (create Txn each) from `concurrency` workers; return creates/s.

    Keys go under a fresh /benchmarks/raw/<id>/ prefix and are left in place.
    """
    prefix = f"/benchmarks/raw/{uuid.uuid4().hex}/".encode()
    next_index = iter(range(n))

    async def worker() -> None:
        for index in next_index:
            await client.create(prefix + str(index).encode(), VALUE)

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, n)):
            group.create_task(worker())
    return n / (time.perf_counter() - started)


async def run(n: int, concurrency: int) -> None:
    """Start a private etcd, measure, and print the rate."""
    with scratch_directory() as tmp:
        async with EtcdProcess(Path(tmp) / "etcd") as etcd, etcd.client() as client:
            rate = await raw_create_rate(client, n, concurrency)
            version = await client.server_version()
    print(f"etcd {version}: {rate:,.0f} creates/s (n={n}, concurrency={concurrency})")


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="number of keys to create")
    parser.add_argument("--concurrency", type=int, default=64, help="concurrent creates")
    args = parser.parse_args()
    asyncio.run(run(args.n, args.concurrency))


if __name__ == "__main__":
    main()
