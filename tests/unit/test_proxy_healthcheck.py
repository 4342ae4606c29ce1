"""The proxy's health check node port servers answer as upstream's service health server."""

from __future__ import annotations

import aiohttp

from minikube_py.process import free_port
from minikube_py.proxy.healthcheck import ServiceHealthServers


async def test_health_check_node_port_answers_local_endpoints_and_goes_with_its_service(
) -> None:
    servers = ServiceHealthServers(address="127.0.0.1")
    port = free_port()
    try:
        await servers.update({port: ("default", "web", 2)})
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/healthz") as answer:
                assert answer.status == 200
                assert await answer.json() == {
                    "service": {"namespace": "default", "name": "web"},
                    "localEndpoints": 2, "serviceProxyHealthy": True}
            await servers.update({port: ("default", "web", 0)})
            async with session.get(f"http://127.0.0.1:{port}/") as answer:
                assert answer.status == 503
                assert (await answer.json())["localEndpoints"] == 0
            await servers.update({})
            try:
                async with session.get(f"http://127.0.0.1:{port}/") as answer:
                    raise AssertionError(f"still answering: {answer.status}")
            except aiohttp.ClientConnectionError:
                pass
    finally:
        await servers.stop()
