"""Small async HTTP helpers for tests that talk to the API server directly."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
import orjson

T = TypeVar("T")


class API:
    """A thin JSON client: `await api.post(path, body)` -> (status, body dict)."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json", headers: dict[str, str] | None = None
                      ) -> tuple[int, Any]:
        data = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        all_headers = {"Content-Type": content_type, **(headers or {})}
        async with self.session.request(method, self.base + path, data=data,
                                        headers=all_headers) as response:
            raw = await response.read()
            try:
                return response.status, orjson.loads(raw)
            except orjson.JSONDecodeError:
                return response.status, raw.decode()

    async def get(self, path: str, **kw: Any) -> tuple[int, Any]:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.request("POST", path, body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.request("PUT", path, body, **kw)

    async def patch(self, path: str, body: Any, kind: str = "merge", **kw: Any
                    ) -> tuple[int, Any]:
        content_type = {"merge": "application/merge-patch+json",
                        "json": "application/json-patch+json",
                        "strategic": "application/strategic-merge-patch+json"}[kind]
        return await self.request("PATCH", path, body, content_type=content_type, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return await self.request("DELETE", path, body, **kw)


def configmap(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None
              ) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data or {}}


def pod(name: str, *, labels: dict[str, str] | None = None, node: str | None = None
        ) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox:1.36"}]}
    if node:
        spec["nodeName"] = node
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


async def eventually(predicate: Callable[[], Awaitable[T | None]], timeout: float = 30.0,
                     interval: float = 0.05, what: str = "the condition") -> T:
    """Poll an async predicate until it returns something truthy; fail after `timeout`,
    a bound for a failure only (a loaded machine stretches every step, so it is generous)."""
    deadline = time.monotonic() + timeout
    while True:
        result = await predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)
