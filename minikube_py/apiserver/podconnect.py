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

Here the proxy relays WebSocket messages instead of raw bytes: the same frames arrive.
A request that is not a WebSocket upgrade (kubectl's SPDY fallback) gets the kubelet's
answer to a plain request: its error, or 400 "Upgrade request required".
"""

from __future__ import annotations

import aiohttp
from aiohttp import web

from minikube_py.api import errors
from minikube_py.apiserver.podlogs import CONNECT_TIMEOUT, choose_container, kubelet_location
from minikube_py.apiserver.requestinfo import RequestInfo
from minikube_py.apiserver.store import Store
from minikube_py.streaming import channels

FLAGS = ("stdin", "stdout", "stderr", "tty")


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
                           namespace: str) -> web.StreamResponse:
    """ExecREST / AttachREST / PortForwardREST Connect: find the kubelet, then proxy the
    stream to it."""
    kind = info.subresource
    pod = await pods.get(namespace, info.name)
    if kind != "portforward":
        container = choose_container(pod, request.query.get("container", ""))
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        raise errors.bad_request(f"pod {info.name} does not have a host assigned")
    host, port = kubelet_location(await nodes.get("", node_name))
    url = (f"http://{host}:{port}/portForward/{namespace}/{info.name}"
           if kind == "portforward"
           else f"http://{host}:{port}/{kind}/{namespace}/{info.name}/{container}")
    query = kubelet_query(request, kind)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        offered = [p for p in channels.offered_protocols(request) if p in channels.PROTOCOLS]
        if not channels.is_websocket(request) or not offered:
            answer = await _plain_answer(session, url, query)
            if answer.status == 400 and answer.body == b"Upgrade request required" and (
                    request.headers.get("Upgrade")):
                # kubectl's SPDY (port-forward first tries SPDY tunnelled in a WebSocket)
                raise errors.bad_request(
                    f"unable to upgrade to {request.headers['Upgrade']} "
                    f"({', '.join(channels.offered_protocols(request)) or 'no subprotocol'}): "
                    f"minikube-py streams over WebSocket with {', '.join(channels.PROTOCOLS)} "
                    "only, for now")
            return answer
        try:
            kubelet = await session.ws_connect(url, params=query, protocols=offered,
                                               max_msg_size=0)
        except aiohttp.WSServerHandshakeError:
            # the kubelet said no; its reason is in the body, which a failed handshake
            # does not keep: ask once more without the upgrade
            return await _plain_answer(session, url, query)
        except aiohttp.ClientError as err:
            raise errors.internal_error(f"error dialing backend: {err}") from None
        client = web.WebSocketResponse(protocols=(kubelet.protocol or offered[0],),
                                       max_msg_size=0)
        await client.prepare(request)
        await channels.relay(client, kubelet)
        return client


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
