"""The REST client every component uses to talk to the API server (client-go's clientset).

    async with Client.from_kubeconfig(path) as client:
        pods = client.resource("pods")
        pod = await pods.get("web", "default")
        async for event_type, obj in pods.watch("default", resource_version=rv):
            ...

Paths come from the resource table (`minikube_py/api/resources.py`), the same table the
server routes by. Failures raise the typed exceptions of `client/errors.py`. Reads are
retried with backoff on 429, 5xx and connection loss; writes only when the server
certainly did not act on them (429, or the connection could not be opened).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
import orjson

from minikube_py.api import Obj
from minikube_py.api.resources import RESOURCES, Resource
from minikube_py.client import transport
from minikube_py.client.errors import (
    APIStatusError,
    ConnectionFailed,
    TooManyRequests,
    status_error,
)
from minikube_py.client.kubeconfig import ClientConfig, load_kubeconfig
from minikube_py.tracing import context as tracing_context

PATCH_CONTENT_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
_RETRIABLE_CODES = {429, 500, 502, 503, 504}


def find_resource(name: str, group: str | None = None) -> Resource:
    """The resource table row for a plural name (`deployments`), optionally by group."""
    for resource in RESOURCES:
        if resource.plural == name and (group is None or resource.group == group):
            return resource
    raise KeyError(f"unknown resource {name!r}" + (f" in group {group!r}" if group else ""))


class Client:
    """An HTTP session to one API server, plus a `ResourceClient` per resource.

    `trace_context=True`: the objects come with the trace context the API server keeps on
    them (the annotation tracing/context.py names), which it shows no other client. The
    components that continue objects' traces ask for it; tools and tests do not.
    """

    def __init__(self, config: ClientConfig, *, user_agent: str = "minikube-py",
                 max_retries: int = 5, trace_context: bool = False) -> None:
        self.config = config
        self.user_agent = user_agent
        self.max_retries = max_retries
        self.trace_context = trace_context
        self._session: aiohttp.ClientSession | None = None
        self._pool: transport.ConnectionPool | None = None
        self._session_ssl: ssl.SSLContext | bool | None = None
        self._borrowed_pool = False  # with_token: the pool is another client's
        self._resources: dict[tuple[str, str], ResourceClient] = {}

    @classmethod
    def from_kubeconfig(cls, path: str | Path | None = None, *, context: str | None = None,
                        user_agent: str = "minikube-py", trace_context: bool = False
                        ) -> Client:
        return cls(load_kubeconfig(path, context=context), user_agent=user_agent,
                   trace_context=trace_context)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.close()

    async def close(self) -> None:
        """Close what this client opened (not the connections with_token borrowed)."""
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._pool is not None and not self._borrowed_pool:
            await self._pool.close()
        self._pool = None

    def with_token(self, token: str) -> Client:
        """A client that is another user, by its own bearer token, over this client's
        keep-alive connections (many hollow kubelets in one process, each
        `system:node:<name>` as a real kubelet is). Closing it leaves the connections
        to this client. A watch it opens has a session of its own.

        Not for a client with a client certificate: the certificate would name the user
        of every request on its connections, whatever the token says."""
        if self.config.cert_file:
            raise ValueError("with_token: this client authenticates with a client "
                             "certificate, which names the user of its connections")
        other = Client(dataclasses.replace(self.config, token=token),
                       user_agent=self.user_agent, max_retries=self.max_retries,
                       trace_context=self.trace_context)
        other._pool = self.pool.with_headers({"Authorization": f"Bearer {token}"})
        other._borrowed_pool = True
        return other

    def set_token(self, token: str) -> None:
        """Use another bearer token from now on (a ServiceAccount token renewed before it
        expires); connections already open keep theirs until they close."""
        self.config = dataclasses.replace(self.config, token=token)
        if self._pool is not None:
            self._pool.set_header("Authorization", f"Bearer {token}")
        if self._session is not None:
            self._session.headers["Authorization"] = f"Bearer {token}"

    def reload_client_certificate(self) -> None:
        """Read the kubeconfig's client certificate and key files again (a kubelet's
        rotated certificate): new connections present the new one. Open watches keep
        theirs until they reconnect; idle keep-alive connections are dropped."""
        if not (self.config.cert_file and self.config.key_file):
            return
        if self._pool is not None and self._pool.ssl is not None:
            self._pool.ssl.load_cert_chain(self.config.cert_file, self.config.key_file)
            self._pool.drop_idle()
        if isinstance(self._session_ssl, ssl.SSLContext):
            self._session_ssl.load_cert_chain(self.config.cert_file, self.config.key_file)

    def _headers(self) -> dict[str, str]:
        headers = {"User-Agent": self.user_agent, "Accept": "application/json"}
        if self.trace_context:
            headers[tracing_context.OBJECT_HEADER] = tracing_context.INCLUDE
        if self.config.token:
            headers["Authorization"] = f"Bearer {self.config.token}"
        return headers

    @property
    def pool(self) -> transport.ConnectionPool:
        """The connections one-shot calls use (client/transport.py)."""
        if self._pool is None:
            self._pool = transport.ConnectionPool(
                self.config.server, ssl_context=self.config.tls_context(),
                headers=self._headers())
        return self._pool

    @property
    def session(self) -> aiohttp.ClientSession:
        """The aiohttp session watches stream on."""
        if self._session is None:
            headers = self._headers()
            self._session_ssl = self.config.ssl_context()
            connector = aiohttp.TCPConnector(limit=100, ssl=self._session_ssl)
            self._session = aiohttp.ClientSession(
                base_url=None, headers=headers, connector=connector,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            )
        return self._session

    def resource(self, plural: str, group: str | None = None) -> ResourceClient:
        """The client for one resource, e.g. `resource("deployments")`; a custom resource
        once `resource_for` has named it."""
        if group is not None and (group, plural) in self._resources:
            return self._resources[(group, plural)]
        resource = find_resource(plural, group)
        key = (resource.group, resource.plural)
        if key not in self._resources:
            self._resources[key] = ResourceClient(self, resource)
        return self._resources[key]

    def resource_for(self, resource: Resource) -> ResourceClient:
        """The client for a resource the table does not list (a custom resource, from its
        definition); later `resource(plural, group)` calls find it too."""
        key = (resource.group, resource.plural)
        if key not in self._resources or self._resources[key].resource != resource:
            self._resources[key] = ResourceClient(self, resource)
        return self._resources[key]

    async def request(self, method: str, path: str, *, params: dict[str, str] | None = None,
                      body: Any = None, content_type: str = "application/json",
                      timeout: float = 60.0) -> Obj:
        """One API call, with the retries its verb allows; returns the decoded JSON body."""
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        if (span := tracing_context.current()) is not None:
            # the span this call is part of: the API server continues its trace
            headers[tracing_context.HEADER] = span.traceparent()
        idempotent = method == "GET"
        attempt = 0
        while True:
            try:
                answer = await self.pool.request(method, path, params=params, body=data,
                                                 headers=headers, timeout=timeout)
                if answer.status < 400:
                    return orjson.loads(answer.body) if answer.body else {}
                error = _error_from(answer.status, answer.body, answer.headers)
            except transport.NotSent as failure:
                error = ConnectionFailed(f"cannot reach the API server: {failure}")
            except (TimeoutError, transport.Interrupted) as failure:
                if not idempotent:
                    raise ConnectionFailed(f"{method} {path}: {failure!r}") from failure
                error = ConnectionFailed(f"{method} {path}: {failure!r}")
            if not self._should_retry(error, idempotent) or attempt >= self.max_retries:
                raise error
            await asyncio.sleep(_backoff(attempt, error))
            attempt += 1

    @staticmethod
    def _should_retry(error: Exception, idempotent: bool) -> bool:
        if isinstance(error, ConnectionFailed | TooManyRequests):
            return True
        return idempotent and isinstance(error, APIStatusError) and (
            error.code in _RETRIABLE_CODES)

    async def stream(self, path: str, params: dict[str, str]) -> AsyncIterator[Obj]:
        """A watch: one decoded JSON object per line, until the server ends the stream."""
        try:
            async with self.session.get(
                self.config.server + path, params=params,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=None),
            ) as answer:
                if answer.status >= 400:
                    raise _error_from(answer.status, await answer.read(), answer.headers)
                async for line in answer.content:
                    if line.strip():
                        yield orjson.loads(line)
        except aiohttp.ClientError as failure:
            reason = str(failure) or type(failure).__name__
            raise ConnectionFailed(f"watch {path}: {reason}") from failure


def _error_from(code: int, payload: bytes, headers: Any) -> APIStatusError:
    try:
        status = orjson.loads(payload)
    except orjson.JSONDecodeError:
        status = None
    if not isinstance(status, dict) or status.get("kind") != "Status":
        status = {"kind": "Status", "status": "Failure", "code": code,
                  "message": payload.decode(errors="replace")[:500] or f"HTTP {code}"}
    error = status_error(status, code)
    if "retry-after" in headers:  # names in lower case (client/transport.py)
        try:
            error.retry_after = float(headers["retry-after"])
        except ValueError:
            error.retry_after = None
    return error


def _backoff(attempt: int, error: Exception) -> float:
    """Retry-After when the server gave one, else 100 ms doubling, with jitter."""
    if isinstance(error, APIStatusError) and error.retry_after:
        return error.retry_after
    return min(0.1 * 2 ** attempt, 5.0) * (1 + random.random() * 0.2)


class ResourceClient:
    """The verbs of one resource: get, list, watch, create, update, patch, delete."""

    def __init__(self, client: Client, resource: Resource) -> None:
        self.client = client
        self.resource = resource
        root = "/api" if not resource.group else "/apis/" + resource.group
        self._root = f"{root}/{resource.version}"

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        """`/apis/apps/v1/namespaces/ns/deployments/web/scale`; no namespace: all of them."""
        parts = [self._root]
        if self.resource.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.resource.plural)
        if name:
            parts.append(name)
        if subresource:
            parts.append(subresource)
        return "/".join(parts)

    def _object_path(self, obj: Obj, subresource: str | None = None) -> str:
        meta = obj.get("metadata") or {}
        return self.path(meta.get("namespace"), meta.get("name"), subresource)

    async def get(self, name: str, namespace: str | None = None, *,
                  subresource: str | None = None, resource_version: str | None = None
                  ) -> Obj:
        """One object; resource_version "0": any version the server has, from its watch
        cache (no read of etcd), as upstream's FromApiserverCache."""
        params = {"resourceVersion": resource_version} if resource_version is not None else None
        return await self.client.request("GET", self.path(namespace, name, subresource),
                                         params=params)

    async def list(self, namespace: str | None = None, *, label_selector: str = "",
                   field_selector: str = "", limit: int = 0, continue_token: str = "",
                   resource_version: str | None = None) -> Obj:
        """One page of a list; pass `continue_token` from `metadata.continue` for the next."""
        params = _selectors(label_selector, field_selector)
        if limit:
            params["limit"] = str(limit)
        if continue_token:
            params["continue"] = continue_token
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        return await self.client.request("GET", self.path(namespace), params=params)

    async def watch(self, namespace: str | None = None, *, resource_version: str = "",
                    label_selector: str = "", field_selector: str = "",
                    timeout_seconds: int | None = None, allow_bookmarks: bool = True,
                    ) -> AsyncIterator[tuple[str, Obj]]:
        """Watch events as (type, object): ADDED, MODIFIED, DELETED, BOOKMARK, ERROR."""
        params = _selectors(label_selector, field_selector)
        params["watch"] = "true"
        if resource_version:
            params["resourceVersion"] = resource_version
        if allow_bookmarks:
            params["allowWatchBookmarks"] = "true"
        if timeout_seconds is not None:
            params["timeoutSeconds"] = str(timeout_seconds)
        async for event in self.client.stream(self.path(namespace), params):
            yield event.get("type", ""), event.get("object") or {}

    async def create(self, obj: Obj, namespace: str | None = None, *,
                     subresource: str | None = None, name: str | None = None) -> Obj:
        namespace = namespace or (obj.get("metadata") or {}).get("namespace")
        return await self.client.request(
            "POST", self.path(namespace, name, subresource), body=obj)

    async def update(self, obj: Obj, *, subresource: str | None = None) -> Obj:
        """PUT the whole object; its resourceVersion makes this a compare-and-swap."""
        return await self.client.request("PUT", self._object_path(obj, subresource), body=obj)

    async def update_status(self, obj: Obj) -> Obj:
        """PUT to /status: only the status is written, the spec is left as it is."""
        return await self.update(obj, subresource="status")

    async def patch(self, name: str, patch: Any, namespace: str | None = None, *,
                    patch_type: str = "merge", subresource: str | None = None) -> Obj:
        return await self.client.request(
            "PATCH", self.path(namespace, name, subresource), body=patch,
            content_type=PATCH_CONTENT_TYPES[patch_type])

    async def delete(self, name: str, namespace: str | None = None, *,
                     propagation_policy: str | None = None,
                     grace_period_seconds: int | None = None,
                     preconditions: dict[str, str] | None = None) -> Obj:
        """DELETE with DeleteOptions; returns the object (or a Status once it is gone)."""
        options = _delete_options(propagation_policy, grace_period_seconds, preconditions)
        return await self.client.request("DELETE", self.path(namespace, name), body=options)

    async def delete_collection(self, namespace: str | None = None, *,
                                label_selector: str = "", field_selector: str = "",
                                propagation_policy: str | None = None) -> Obj:
        return await self.client.request(
            "DELETE", self.path(namespace), params=_selectors(label_selector, field_selector),
            body=_delete_options(propagation_policy, None, None))


def _selectors(label_selector: str, field_selector: str) -> dict[str, str]:
    params = {}
    if label_selector:
        params["labelSelector"] = label_selector
    if field_selector:
        params["fieldSelector"] = field_selector
    return params


def _delete_options(propagation_policy: str | None, grace_period_seconds: int | None,
                    preconditions: dict[str, str] | None) -> Obj:
    options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if propagation_policy:
        options["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if preconditions:
        options["preconditions"] = preconditions
    return options
