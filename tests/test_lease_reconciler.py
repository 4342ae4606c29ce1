"""The lease endpoint reconciler: several API servers on one etcd, and the `kubernetes`
Service's endpoints naming exactly the ones that are alive."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from minikube_py.apiserver.registry.lease_reconciler import LEASE_TTL, RECONCILE_INTERVAL
from minikube_py.apiserver.storage.etcd import prefix_end
from minikube_py.cluster.apiserver import APIServerProcess
from minikube_py.cluster.etcd import EtcdProcess
from tests.api_helpers import API

ENDPOINTS = "/api/v1/namespaces/default/endpoints/kubernetes"
SLICE = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes"


async def _addresses(api: API) -> tuple[list[str], list[str]]:
    """What the kubernetes Endpoints and EndpointSlice name, in their order."""
    endpoints, endpoint_slice = (await api.get(ENDPOINTS))[1], (await api.get(SLICE))[1]
    listed: Any = (endpoints.get("subsets") or [{}])[0].get("addresses") or []
    return ([address["ip"] for address in listed],
            [address for endpoint in endpoint_slice.get("endpoints") or []
             for address in endpoint["addresses"]])


async def _until_addresses(api: API, wanted: list[str], timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while await _addresses(api) != (wanted, wanted):
            await asyncio.sleep(0.2)


@pytest.mark.slow
async def test_the_kubernetes_endpoints_follow_the_live_api_servers(
        private_etcd: EtcdProcess, fast_tmp: Path) -> None:
    """Two servers are both endpoints (sorted); one stopped cleanly drops its master lease
    at once; one killed with -9 leaves once its lease's TTL has run out."""

    def server(address: str) -> APIServerProcess:
        return APIServerProcess([private_etcd.client_url],
                                fast_tmp / f"apiserver-lease-{address}.log",
                                extra_args=(f"--advertise-address={address}",))

    first, second, third = server("10.250.0.9"), server("10.250.0.10"), server("10.250.0.8")
    async with first, second, aiohttp.ClientSession() as session:
        api = API(session, first.url)
        await _until_addresses(api, ["10.250.0.9", "10.250.0.10"], 30)
        async with private_etcd.client() as etcd:
            prefix = b"/registry/masterleases/"
            leases = await etcd.range(prefix, prefix_end(prefix))
            assert sorted(kv.key for kv in leases.kvs) == [prefix + b"10.250.0.10",
                                                           prefix + b"10.250.0.9"]
            assert all(kv.lease for kv in leases.kvs)
        await second.stop()
        await _until_addresses(api, ["10.250.0.9"], 5)
        async with third:
            await _until_addresses(api, ["10.250.0.8", "10.250.0.9"], RECONCILE_INTERVAL + 20)
            await third.kill()
            await _until_addresses(api, ["10.250.0.9"], LEASE_TTL + RECONCILE_INTERVAL + 20)
