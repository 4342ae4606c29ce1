"""pods/exec, pods/attach and pods/portforward: `kubectl exec`, `attach` and `port-forward`
(and the Python client's stream() and portforward()) through the API server, to the
kubelet of the pod's node.

Upstream: pkg/registry/core/pod/rest/subresources.go (ExecREST, AttachREST),
pod/strategy.go (ExecLocation, AttachLocation, streamLocation) and apimachinery's
UpgradeAwareHandler, which proxies the upgraded connection to the kubelet.

    GET|POST /api/v1/namespaces/{ns}/pods/{name}/exec?command=sh&stdin=true&stdout=true...
      -> get the pod                                          (404)
      -> choose the container                                 (400 when missing or unknown)
      -> not scheduled yet                                    (400 "does not have a host
                                                               assigned")
      -> the node's address and kubelet port
      -> WebSocket to http://<node>:<port>/exec/{ns}/{name}/{c}?command=sh&stdin=1...
         with the subprotocols the client offered; then the client's WebSocket is
         accepted with the one the kubelet chose, and every message relayed both ways
      -> the kubelet refused (container not running, bad options): its status and text
         go back to the client, as the upgrade-aware proxy passes them on

    pods/portforward?ports=80&ports=443 goes the same way to /portForward/{ns}/{name}
    ?port=80&port=443: no container, the pod's network.

How the client asked decides how the stream goes on (upstream's subresources.go picks the
same way):

    WebSocket offering v5.channel.k8s.io (kubectl exec, attach, cp)
        -> translated: SPDY to the kubelet, so stdin can be closed alone
           (streamtranslator.py)
    WebSocket with SPDY/3.1+portforward.k8s.io (kubectl port-forward, first try)
        -> the tunnel: the WebSocket's binary messages carry SPDY; the kubelet gets a
           SPDY upgrade and the bytes go through unchanged (upstream's tunneling handler)
    Upgrade: SPDY/3.1 (kubectl port-forward's fallback, older clients)
        -> the upgrade proxied as it is: the kubelet's 101, then raw bytes both ways
    WebSocket v4.channel.k8s.io (the official Python client)
        -> relayed message by message to the kubelet's WebSocket
    WebSocket to pods/portforward with any subprotocols, or none (kr8s offers none:
    upstream's port-forward takes that as binary channels, as v4.channel.k8s.io)
        -> the same, offering the kubelet what the client offered
    anything else
        -> the kubelet's answer to a plain request: its error, or 400 "Upgrade request
           required"
"""

from __future__ import annotations

import aiohttp
from aiohttp import web

from minikube_py.api import errors
from minikube_py.apiserver.connect import streamtranslator
from minikube_py.apiserver.connect.kubeletclient import CONNECT_TIMEOUT, KubeletClient
from minikube_py.apiserver.connect.podlogs import choose_container
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo
from minikube_py.apiserver.registry.store import Store
from minikube_py.streaming import bytestreams, channels

FLAGS = ("stdin", "stdout", "stderr", "tty")
SPDY_TUNNEL_PREFIX = "SPDY/3.1+"
"""kubectl port-forward offers `SPDY/3.1+portforward.k8s.io`: SPDY inside a WebSocket."""


def kubelet_query(request: web.Request, kind: str) -> list[tuple[str, str]]:
    """PodExecOptions / PodAttachOptions / PodPortForwardOptions as the kubelet takes
    them: each command word, the set flags as "1", each port (upstream's streamParams)."""
    if kind == "portforward":
        # `ports=80,443` or `ports=80&ports=443`, as upstream's []int32 conversion reads them
        return [("port", port.strip()) for value in request.query.getall("ports", [])
                for port in value.split(",") if port.strip()]
    query: list[tuple[str, str]] = []
    if kind == "exec":
        query += [("command", word) for word in request.query.getall("command", [])]
    for flag in FLAGS:
        if request.query.get(flag, "").lower() in ("true", "1"):
            query.append((flag, "1"))
    return query


async def serve_pod_stream(pods: Store, nodes: Store, request: web.Request, info: RequestInfo,
                           namespace: str, kubelet: KubeletClient) -> web.StreamResponse:
    """ExecREST / AttachREST / PortForwardREST Connect: find the kubelet, then proxy the
    stream to it."""
    kind = info.subresource
    pod = await pods.get(namespace, info.name)
    if kind != "portforward":
        container = choose_container(pod, request.query.get("container", ""))
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        raise errors.bad_request(f"pod {info.name} does not have a host assigned")
    node = await nodes.get("", node_name)
    url = (kubelet.url(node, f"/portForward/{namespace}/{info.name}")
           if kind == "portforward"
           else kubelet.url(node, f"/{kind}/{namespace}/{info.name}/{container}"))
    query = kubelet_query(request, kind)
    if streamtranslator.wants_stream_close(request) and kind != "portforward":
        answer = await _dial(kubelet, url, query, streamtranslator.REMOTECOMMAND_SPDY)
        if answer.stream is None:
            return bytestreams.refusal(answer)
        flags = {flag: (flag, "1") in query for flag in FLAGS}
        return await streamtranslator.translate(request, answer, **flags)
    if kind == "portforward" and tunnelled_spdy(request):
        return await _tunnel(request, kubelet, url, query)
    if bytestreams.is_spdy(request):
        return await _proxy_upgrade(request, kubelet, url, query)
    async with kubelet.session() as session:
        offered = channels.offered_protocols(request)
        if kind != "portforward":
            offered = [p for p in offered if p in channels.PROTOCOLS]
        if not channels.is_websocket(request) or not (offered or kind == "portforward"):
            return await _plain_answer(session, url, query)
        try:
            kubelet = await session.ws_connect(url, params=query, protocols=offered,
                                               max_msg_size=0)
        except aiohttp.WSServerHandshakeError:
            # the kubelet said no; its reason is in the body, which a failed handshake
            # does not keep: ask once more without the upgrade
            return await _plain_answer(session, url, query)
        except aiohttp.ClientError as err:
            raise errors.internal_error(f"error dialing backend: {err}") from None
        client = web.WebSocketResponse(
            protocols=(kubelet.protocol,) if kubelet.protocol else (), max_msg_size=0)
        await client.prepare(request)
        await channels.relay(client, kubelet)
        return client


def tunnelled_spdy(request: web.Request) -> bool:
    """A WebSocket that carries SPDY (upstream's IsWebSocketRequestWithTunnelingProtocol)."""
    return channels.is_websocket(request) and any(
        p.startswith(SPDY_TUNNEL_PREFIX) for p in channels.offered_protocols(request))


async def _tunnel(request: web.Request, kubelet: KubeletClient, url: str,
                  query: list[tuple[str, str]]) -> web.StreamResponse:
    """kubectl port-forward's SPDY inside a WebSocket: upgrade to SPDY at the kubelet with
    the versions offered, then carry the bytes between the binary messages and the
    kubelet's connection."""
    versions = [p.removeprefix(SPDY_TUNNEL_PREFIX) for p in channels.offered_protocols(request)
                if p.startswith(SPDY_TUNNEL_PREFIX)]
    answer = await _dial(kubelet, url, query, [("Upgrade", "SPDY/3.1"),
                                      *(("X-Stream-Protocol-Version", v) for v in versions)])
    if answer.stream is None:
        return bytestreams.refusal(answer)
    chosen = answer.headers.get("X-Stream-Protocol-Version", versions[0])
    try:
        client = web.WebSocketResponse(protocols=(SPDY_TUNNEL_PREFIX + chosen,),
                                       max_msg_size=0)
        await client.prepare(request)
        await bytestreams.splice(bytestreams.WebSocketStream(client), answer.stream)
        return client
    finally:
        await answer.stream.close()


async def _proxy_upgrade(request: web.Request, kubelet: KubeletClient, url: str,
                         query: list[tuple[str, str]]) -> web.StreamResponse:
    """A SPDY upgrade passed to the kubelet as it is (the UpgradeAwareHandler)."""
    answer = await _dial(kubelet, url, query, bytestreams.offer_headers(request))
    return await bytestreams.proxy_upgrade(request, answer)


async def _dial(kubelet: KubeletClient, url: str, query: list[tuple[str, str]],
                headers: list[tuple[str, str]] | tuple[tuple[str, str], ...]
                ) -> bytestreams.UpgradeAnswer:
    try:
        return await bytestreams.dial_upgrade(url, query, list(headers),
                                              connect_timeout=CONNECT_TIMEOUT,
                                              ssl_context=kubelet.ssl_context)
    except (OSError, TimeoutError) as err:
        raise errors.internal_error(f"error dialing backend: {err}") from None


async def _plain_answer(session: aiohttp.ClientSession, url: str,
                        query: list[tuple[str, str]]) -> web.Response:
    """The kubelet's answer to the request without an upgrade, passed on as it is."""
    try:
        async with session.get(url, params=query) as answer:
            body = await answer.read()
            return web.Response(status=answer.status, body=body,
                                content_type=answer.content_type or "text/plain")
    except aiohttp.ClientError as err:
        raise errors.internal_error(f"error dialing backend: {err}") from None
