"""The dashboard's door: HTTPS only, and with a client CA, only the API server's proxy.

    no --tls-cert-file       a self-signed certificate made at start (upstream Dashboard's
                             --auto-generate-certificates): the API server's proxy does not
                             check it, it dials endpoints by address
    --client-ca-file F       every connection must show a client certificate F signed, or
                             its TLS handshake fails: a browser, curl or a pod that reaches
                             the address directly gets no page (the cluster's is kubeadm's
                             front-proxy CA, whose one certificate the API server shows
                             through --proxy-client-cert-file)
    --allowed-names A,B      and that certificate's CN must be one of these (403 otherwise),
                             as an aggregated API server's --requestheader-allowed-names

Without --client-ca-file anyone who reaches the port is served: for a cluster whose API
server lets anyone do anything (`up --no-secure`) and for tests.
"""

from __future__ import annotations

import ipaddress
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from minikube_py.security import pki

SELF_SIGNED_NAME = "kubernetes-dashboard"


def serving_context(address: str, cert_file: str = "", key_file: str = "",
                    client_ca_file: str = "") -> ssl.SSLContext:
    """TLS for the dashboard's port: its certificate (or a self-signed one for `address`),
    and client certificates required and checked when a client CA is given."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file:
        context.load_cert_chain(cert_file, key_file or None)
    else:
        _load_self_signed(context, address)
    if client_ca_file:
        context.load_verify_locations(cafile=client_ca_file)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _load_self_signed(context: ssl.SSLContext, address: str) -> None:
    """--auto-generate-certificates: a throwaway CA and a serving certificate it signs,
    kept on disk only while they are loaded."""
    try:
        addresses: tuple[str, ...] = (str(ipaddress.ip_address(address)),)
    except ValueError:
        addresses = ()
    ca = pki.new_ca(f"{SELF_SIGNED_NAME}-ca")
    serving = pki.issue(ca, SELF_SIGNED_NAME, dns_names=(SELF_SIGNED_NAME, "localhost"),
                        ip_addresses=addresses, server=True)
    with tempfile.TemporaryDirectory(prefix="dashboard-tls-") as directory:
        cert, key = serving.write(Path(directory), "serving")
        context.load_cert_chain(cert, key)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def allowed_names_middleware(names: tuple[str, ...]) -> Callable[..., Awaitable[
        web.StreamResponse]]:
    """403 for a client whose (CA-checked) certificate names none of `names`."""
    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        transport = request.transport
        peer = pki.peer_subject(transport.get_extra_info("peercert") if transport else None)
        if peer is None or peer[0] not in names:
            return web.Response(status=403, text=f"Forbidden: only {', '.join(names)} may "
                                                 "call the dashboard")
        return await handler(request)

    return check
