"""pods/proxy, services/proxy and nodes/proxy: HTTP through the API server to a pod, to one
of a Service's endpoints, or to a node's kubelet.

Upstream: pkg/registry/core/{pod,service,node}/rest/proxy.go and each ResourceLocation
(pod/strategy.go, service/storage/rest.go, node/strategy.go), apimachinery's
net.SplitSchemeNamePort and UpgradeAwareHandler.

    /api/v1/namespaces/{ns}/pods/{name}[:{port}]/proxy/{path}      -> http://<pod IP>:<port>/{path}
    /api/v1/namespaces/{ns}/services/{name}[:{port}]/proxy/{path}  -> one ready endpoint
    /api/v1/nodes/{name}[:{port}]/proxy/{path}                     -> the node's kubelet

The name may also be `scheme:name:port` (`https:web:443`). A pod's port defaults to its
first declared container port; a Service's port is its port's name or number (needed
when it has several). The method, query, body and headers go on (the caller's
credentials for the API server do not); the answer comes back as it is, streamed.

An https backend is reached as upstream's proxy transport reaches it (kube-apiserver's
CreateProxyTransport): its certificate is not checked, since pods and endpoints are
dialled by address. Where upstream shows no certificate of its own, this server shows
--proxy-client-cert-file when it has one (kubeadm's front-proxy-client, which upstream
shows only to aggregated API servers): so a backend can let in only the API server's
proxy, as the dashboard does (docs/decisions.md, "The dashboard lets in only the API
server's proxy").
"""

from __future__ import annotations

import random
import ssl

import aiohttp
from aiohttp import web

from minikube_py.api import errors
from minikube_py.api.selectors import parse_field_selector, parse_label_selector
from minikube_py.apiserver.connect.kubeletclient import (
    CONNECT_TIMEOUT,
    KubeletClient,
    kubelet_location,
)
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo
from minikube_py.apiserver.registry.store import ListOptions, Store

# Not passed on: they describe one hop, not the request (RFC 9110's connection-specific
# fields), and the client's credentials for the API server are not the target's.
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailer", "transfer-encoding", "upgrade", "host", "content-length",
              "authorization"}
SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def proxy_transport(cert_file: str = "", key_file: str = "") -> ssl.SSLContext:
    """CreateProxyTransport: TLS to pods and endpoints, whose certificates are not checked
    (they are dialled by IP); with the proxy client certificate when one is given. No CA
    bundle is loaded (create_default_context would read the system's, 20 ms at every
    start), since no certificate is checked against one."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


def split_scheme_name_port(text: str) -> tuple[str, str, str]:
    """SplitSchemeNamePort: `name`, `name:port` or `scheme:name:port`."""
    parts = text.split(":")
    if len(parts) == 1:
        return "", parts[0], ""
    if len(parts) == 2:
        return "", parts[0], parts[1]
    if len(parts) == 3 and parts[0] in ("http", "https"):
        return parts[0], parts[1], parts[2]
    raise errors.bad_request(f"invalid request {text!r}")


def proxied_path(request: web.Request, info: RequestInfo) -> str:
    """What follows .../{name}/proxy in the request's path ("/" when nothing does)."""
    marker = f"/{info.resource}/{info.name}/proxy"
    rest = request.path.split(marker, 1)[1] if marker in request.path else ""
    return rest or "/"


async def pod_location(pods: Store, namespace: str, name_port: str) -> str:
    scheme, name, port = split_scheme_name_port(name_port)
    pod = await pods.get(namespace, name)
    if not port:
        port = next((str(p["containerPort"]) for c in (pod.get("spec") or {}).get(
            "containers") or [] for p in c.get("ports") or []), "")
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        raise errors.APIError(503, "ServiceUnavailable",
                              f"pod {name} has no IP address yet", {"name": name, "kind": "pods"})
    return f"{scheme or 'http'}://{ip}:{port}" if port else f"{scheme or 'http'}://{ip}"


async def service_location(services: Store, slices: Store, namespace: str,
                           name_port: str) -> str:
    """A random ready endpoint of the Service's port, as upstream's ResourceLocation."""
    scheme, name, port = split_scheme_name_port(name_port)
    service = await services.get(namespace, name)
    ports = (service.get("spec") or {}).get("ports") or []
    if port:
        chosen = [p for p in ports if p.get("name") == port or str(p.get("port")) == port]
    else:
        chosen = ports if len(ports) == 1 else [p for p in ports if not p.get("name")]
    if not chosen:
        raise errors.APIError(503, "ServiceUnavailable",
                              f"no endpoints available for service \"{name_port}\"",
                              {"name": name_port, "kind": "services"})
    port_name = chosen[0].get("name", "")
    listed = await slices.list(namespace, ListOptions(
        parse_label_selector(f"{SERVICE_NAME_LABEL}={name}"), parse_field_selector("")))
    candidates = []
    for endpoint_slice in listed.items:
        target = next((p.get("port") for p in endpoint_slice.get("ports") or []
                       if p.get("name", "") == port_name), None)
        if target is None:
            continue
        for endpoint in endpoint_slice.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            candidates += [(address, target) for address in endpoint.get("addresses") or []]
    if not candidates:
        raise errors.APIError(503, "ServiceUnavailable",
                              f"no endpoints available for service \"{name_port}\"",
                              {"name": name_port, "kind": "services"})
    address, target = random.choice(candidates)
    return f"{scheme or 'http'}://{address}:{target}"


async def node_location(nodes: Store, name_port: str, kubelet: KubeletClient) -> str:
    """The node's kubelet (or another port of the node), by the kubelet's scheme."""
    scheme, name, port = split_scheme_name_port(name_port)
    host, kubelet_port = kubelet_location(await nodes.get("", name))
    return f"{scheme or kubelet.scheme}://{host}:{port or kubelet_port}"


async def serve_proxy(stores: dict[tuple[str, str, str], Store], request: web.Request,
                      info: RequestInfo, namespace: str, kubelet: KubeletClient,
                      transport: ssl.SSLContext | None = None) -> web.StreamResponse:
    """ProxyREST.Connect: find where the resource is reached, then pass the request on
    (`transport`: TLS to an https pod or endpoint, proxy_transport's)."""
    if info.resource == "nodes":  # with the kubelet client certificate, over https
        base = await node_location(stores[("", "v1", "nodes")], info.name, kubelet)
        return await forward(request, base + proxied_path(request, info),
                             kubelet.ssl_context)
    if info.resource == "pods":
        base = await pod_location(stores[("", "v1", "pods")], namespace, info.name)
    else:
        base = await service_location(stores[("", "v1", "services")],
                                      stores[("discovery.k8s.io", "v1", "endpointslices")],
                                      namespace, info.name)
    return await forward(request, base + proxied_path(request, info),
                         transport or proxy_transport())


async def forward(request: web.Request, url: str, ssl_context: ssl.SSLContext | None = None
                  ) -> web.StreamResponse:
    """Pass the request on to `url` (its query, body and end-to-end headers) and stream
    the answer back as it is."""
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout, auto_decompress=False,
                                     connector=aiohttp.TCPConnector(
                                         ssl=ssl_context or False)) as session:
        try:
            answer = await session.request(request.method, url, params=request.query,
                                           headers=headers, data=await request.read(),
                                           allow_redirects=False)
        except aiohttp.ClientError as err:
            raise errors.APIError(503, "ServiceUnavailable", f"error trying to reach "
                                  f"service: {err}", {}) from None
        async with answer:
            response = web.StreamResponse(status=answer.status, headers={
                k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP})
            await response.prepare(request)
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
