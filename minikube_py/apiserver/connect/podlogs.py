"""pods/log: `kubectl logs` through the API server, streamed from the kubelet of the pod's node.

Upstream: pkg/registry/core/pod/rest/log.go (LogREST), pod/strategy.go (LogLocation),
pkg/kubelet/client (where a node's kubelet listens), and apiserver's generic/rest
streamer.go and response_checker.go (relaying the kubelet's answer or its error).

    GET /api/v1/namespaces/{ns}/pods/{name}/log?container=c&follow=true&tailLines=10...
      -> decode + validate the PodLogOptions      (400 / 422 Invalid)
      -> get the pod                               (404)
      -> choose the container                      (400 when missing or unknown)
      -> not scheduled yet: 204 No Content, as upstream's empty location
      -> the node's address and kubelet port
      -> GET http://<node>:<port>/containerLogs/{ns}/{name}/{c}?<the same options>
      -> 2xx: copy the body chunk by chunk (kubectl logs -f sees lines as they come);
         otherwise: the kubelet's error as a Status
"""

from __future__ import annotations

import contextlib
import json

import aiohttp
from aiohttp import web

from minikube_py.api import Obj, errors
from minikube_py.api.podlogoptions import PodLogOptions
from minikube_py.apiserver.connect.kubeletclient import KubeletClient
from minikube_py.apiserver.endpoints.requestinfo import RequestInfo
from minikube_py.apiserver.endpoints.responses import AUDIT_ID
from minikube_py.apiserver.registry.store import Store

# How much of a failed kubelet answer goes into the Status (upstream's maxReadLength).
MAX_ERROR_BODY = 50000

# NewGenericServerResponse: the Status for a kubelet answer that is not 400 or 500.
_GENERIC_ERRORS = {
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    409: ("Conflict", "the server reported a conflict"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: ("TooManyRequests",
          "the server has received too many requests and has asked us to try again later"),
    504: ("Timeout", "the server was unable to return a response in the time allotted, but may "
                     "still be processing the request"),
}


async def serve_pod_log(pods: Store, nodes: Store, request: web.Request, info: RequestInfo,
                        namespace: str, kubelet: KubeletClient) -> web.StreamResponse:
    """LogREST.Get: find where the container's log is served and stream it back."""
    try:
        options = PodLogOptions.from_query(request.query)
    except ValueError as err:
        raise errors.bad_request(str(err)) from None
    problems = options.validate()
    if problems:
        raise errors.invalid("PodLogOptions", "", info.name, problems)
    pod = await pods.get(namespace, info.name)
    container = choose_container(pod, options.container)
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        return web.Response(status=204)
    url = kubelet.url(await nodes.get("", node_name),
                      f"/containerLogs/{namespace}/{info.name}/{container}")
    return await stream_from_kubelet(request, kubelet, url, options.to_query(), info.name)


def choose_container(pod: Obj, requested: str) -> str:
    """validateContainer: the named container, or the pod's only one."""
    name = pod["metadata"]["name"]
    spec = pod.get("spec") or {}
    # podutil.VisitContainers order: init containers, containers, ephemeral containers.
    every = [c["name"] for kind in ("initContainers", "containers", "ephemeralContainers")
             for c in spec.get(kind) or []]
    if requested:
        if requested not in every:
            raise errors.bad_request(f"container {requested} is not valid for pod {name}")
        return requested
    containers = spec.get("containers") or []
    if len(containers) == 1:
        return str(containers[0]["name"])
    if not containers:
        raise errors.bad_request(f"a container name must be specified for pod {name}")
    raise errors.bad_request(
        f"a container name must be specified for pod {name}, choose one of: [{' '.join(every)}]")


async def stream_from_kubelet(request: web.Request, kubelet: KubeletClient, url: str,
                              query: dict[str, str], name: str) -> web.StreamResponse:
    """LocationStreamer: copy the kubelet's answer to the client as it arrives."""
    async with kubelet.session() as session:
        try:
            answer = await session.get(url, params=query)
        except aiohttp.ClientError as err:
            raise errors.internal_error(f'Get "{url}": {err}') from None
        async with answer:
            if not 200 <= answer.status <= 206:
                raise kubelet_error(answer.status, await _read_limited(answer), name)
            response = web.StreamResponse(headers={"Content-Type": "text/plain",
                                                   "Audit-Id": request.get(AUDIT_ID, "")})
            response.enable_chunked_encoding()
            await response.prepare(request)
            # The kubelet or the client may go away mid-stream: the stream just ends.
            with contextlib.suppress(aiohttp.ClientError, ConnectionResetError):
                async for chunk in answer.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
            return response


def kubelet_error(code: int, body: str, name: str) -> errors.APIError:
    """GenericHttpResponseChecker: a kubelet error as the Status the client sees."""
    if code == 500:
        return errors.internal_error(body)
    if code == 400:
        return errors.bad_request(body)
    if code == 403:  # the kubelet's message says who may not do what: keep it
        reason, message = "Forbidden", body
    elif code in _GENERIC_ERRORS:
        reason, message = _GENERIC_ERRORS[code]
    elif code > 500:
        reason = "InternalError"
        message = (f"an error on the server ({json.dumps(body)}) has prevented the request "
                   "from succeeding")
    else:  # upstream's StatusReasonUnknown is the empty reason
        reason = ""
        message = (f"the server responded with the status code {code} but did not return "
                   "more information")
    # Upstream fills in no verb here, hence the empty word before the resource.
    return errors.APIError(code, reason, f"{message} ( pods/log {name})",
                           {"name": name, "kind": "pods/log"})


async def _read_limited(answer: aiohttp.ClientResponse) -> str:
    body = b""
    while len(body) < MAX_ERROR_BODY:
        chunk = await answer.content.read(MAX_ERROR_BODY - len(body))
        if not chunk:
            break
        body += chunk
    return body.decode(errors="replace")
