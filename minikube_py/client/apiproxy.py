"""A local proxy to the API server, as `kubectl proxy` runs one (k8s.io/kubectl/pkg/proxy):
a port on loopback whose requests go on to the API server with the kubeconfig's
credentials, so that a browser reaches a Service's proxy without holding any.

    browser --GET /api/v1/namespaces/kubernetes-dashboard/services/
                  https:kubernetes-dashboard:/proxy/...-->
        127.0.0.1:<port> (this proxy: loopback only, the allowed prefix only, GET only)
        --the same path, with the kubeconfig's certificate or token--> the API server
        --> the Service's proxy --> the dashboard

Narrower than kubectl proxy's defaults, which pass every path and method on: whoever can
reach the port acts as the kubeconfig's user, so it passes on only what the page needs.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
from aiohttp import web

from minikube_py.client.rest import Client
from minikube_py.lifecycle import Component

log = logging.getLogger(__name__)
LOOPBACK = "127.0.0.1"
# what kubectl proxy's --accept-hosts allows by default: a page of another origin that
# names this port (DNS rebinding) is refused
ACCEPT_HOSTS = ("localhost", "127.0.0.1", "[::1]")
# hop-by-hop fields (RFC 9110), and what the API server's answer sets again
NOT_PASSED = {"connection", "keep-alive", "transfer-encoding", "upgrade", "host",
              "content-length", "authorization", "proxy-authorization", "te", "trailer"}


class APIProxy(Component):
    """127.0.0.1:port -> the API server, for GETs under `prefix` only."""

    def __init__(self, client: Client, prefix: str, port: int = 0) -> None:
        self.client = client
        self.prefix = prefix
        self.port = port
        self._serving = asyncio.Event()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}{self.prefix}"

    async def run(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self.forward)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            # an open event stream never ends by itself: do not wait for it at stop
            await web.TCPSite(runner, LOOPBACK, self.port, shutdown_timeout=1).start()
            self.port = runner.addresses[0][1]
            self._serving.set()
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    async def wait_started(self) -> None:
        await self._serving.wait()

    async def forward(self, request: web.Request) -> web.StreamResponse:
        """Pass one request on, as the kubeconfig's user, and stream the answer back."""
        if request.host.rsplit(":", 1)[0] not in ACCEPT_HOSTS:
            return web.Response(status=403, text="Forbidden: this proxy answers localhost only")
        if request.method != "GET" or not request.path.startswith(self.prefix):
            return web.Response(status=403, text=f"Forbidden: this proxy passes on only GET "
                                                 f"{self.prefix}...")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in NOT_PASSED}
        try:
            answer = await self.client.session.get(
                self.client.config.server + request.path_qs, headers=headers,
                allow_redirects=False, auto_decompress=False)
        except aiohttp.ClientError as error:
            return web.Response(status=502, text=f"cannot reach the API server: {error}")
        async with answer:
            response = web.StreamResponse(status=answer.status, headers={
                k: v for k, v in answer.headers.items() if k.lower() not in NOT_PASSED})
            await response.prepare(request)
            try:
                async for chunk in answer.content.iter_any():
                    await response.write(chunk)
            except (ConnectionResetError, aiohttp.ClientError):
                log.debug("proxy: %s ended early", request.path)
                return response
            await response.write_eof()
            return response
