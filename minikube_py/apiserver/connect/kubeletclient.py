"""How the API server reaches kubelets (upstream pkg/kubelet/client): for logs, exec,
attach, port-forward and nodes/proxy.

    node -> its preferred address and kubelet port (kubelet_location)
         -> https://<address>:<port>/... with the API server's kubelet client certificate
            (--kubelet-client-certificate, --kubelet-client-key), which the kubelet
            authenticates and authorizes (kubelet/auth.py)
            the kubelet's serving certificate is checked against
            --kubelet-certificate-authority; without it, not at all (as upstream)
         or, with no client certificate configured, plain http
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

import aiohttp

from minikube_py.api import Obj, errors

DEFAULT_KUBELET_PORT = 10250
# --kubelet-preferred-address-types as minikube and kubeadm set it (upstream's default
# puts Hostname first, which nodes on one machine cannot resolve).
PREFERRED_ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname")
CONNECT_TIMEOUT = 10.0


def kubelet_location(node: Obj) -> tuple[str, int]:
    """GetConnectionInfo: the node's preferred address and its kubelet's port."""
    status = node.get("status") or {}
    addresses = status.get("addresses") or []
    host = next((a["address"] for kind in PREFERRED_ADDRESS_TYPES for a in addresses
                 if a.get("type") == kind and a.get("address")), None)
    if host is None:
        known = " ".join(f"{{{a.get('type')} {a.get('address')}}}" for a in addresses)
        raise errors.internal_error(f"no preferred addresses found; known addresses: [{known}]")
    endpoint = (status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
    port = endpoint.get("Port")
    if not isinstance(port, int) or port <= 0:
        port = DEFAULT_KUBELET_PORT
    return (f"[{host}]" if ":" in host else host), port


@dataclass(frozen=True)
class KubeletClient:
    ssl_context: ssl.SSLContext | None = None

    @classmethod
    def from_files(cls, certificate: str, key: str, authority: str) -> KubeletClient:
        """The flags' files; plain HTTP when no client certificate is given."""
        if not certificate:
            return cls()
        if authority:
            context = ssl.create_default_context(cafile=authority)
        else:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        context.load_cert_chain(certificate, key)
        return cls(context)

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_context is not None else "http"

    def url(self, node: Obj, path: str, port: int | None = None) -> str:
        host, kubelet_port = kubelet_location(node)
        return f"{self.scheme}://{host}:{port or kubelet_port}{path}"

    def session(self, **options: Any) -> aiohttp.ClientSession:
        """A session for one call to a kubelet."""
        options.setdefault("timeout", aiohttp.ClientTimeout(total=None,
                                                            sock_connect=CONNECT_TIMEOUT))
        connector = aiohttp.TCPConnector(ssl=self.ssl_context or False)
        return aiohttp.ClientSession(connector=connector, **options)
