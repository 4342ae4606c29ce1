"""The Reflector: list, then watch from the list's resourceVersion, forever (client-go's).

    list  -> sink.replace(objects)          (the whole truth at one resourceVersion)
    watch -> sink.add / update / delete     (every change after it, in order)

When the watch ends (the server's timeout, a dropped connection) the reflector watches
again from the last resourceVersion it saw, so no event is lost and none is repeated.
BOOKMARK events only move that version forward. When the version is too old (410 Gone:
etcd compacted it) the reflector lists again. Errors back off from 0.8 s to 30 s, with
jitter (client-go's), and each is one warning line.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Protocol

from minikube_py.api import Obj
from minikube_py.client.errors import APIStatusError, ClientError, Gone
from minikube_py.client.rest import ResourceClient
from minikube_py.client.retry import Backoff

log = logging.getLogger(__name__)

LIST_PAGE_SIZE = 500
MIN_WATCH_TIMEOUT = 300  # seconds; each watch asks for 5-10 minutes, as upstream
INITIAL_BACKOFF, MAX_BACKOFF = 0.8, 30.0


class ReflectorSink(Protocol):
    """What the reflector feeds: the informer (its store and its handlers)."""

    def replace(self, objects: list[Obj], resource_version: str) -> None: ...
    def add(self, obj: Obj) -> None: ...
    def update(self, obj: Obj) -> None: ...
    def delete(self, obj: Obj) -> None: ...


class WatchExpired(Exception):
    """The watch's resourceVersion is gone from history (410): list again."""


class Reflector:
    """Keep a sink in step with one resource on the server (optionally filtered)."""

    def __init__(self, resource: ResourceClient, sink: ReflectorSink, *,
                 namespace: str | None = None, label_selector: str = "",
                 field_selector: str = "") -> None:
        self.resource = resource
        self.sink = sink
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.last_sync_resource_version = ""
        self.name = resource.resource.plural

    async def run(self) -> None:
        """ListAndWatch until cancelled; failures back off and start over. It never
        gives up: an informer whose reflector stopped would serve a stale cache forever."""
        backoff = Backoff(INITIAL_BACKOFF, MAX_BACKOFF)
        need_list = True
        while True:
            try:
                if need_list:
                    await self.list()
                    need_list = False
                await self.watch()
                backoff.reset()
                continue
            except (WatchExpired, Gone) as expired:
                log.info("%s: %s; listing again", self.name, expired)
                need_list = True
                continue
            except ClientError as failure:
                delay = backoff.step()
                log.warning("%s: %s failed: %s; retrying in %.1fs", self.name,
                            "list" if need_list else "watch", failure, delay)
            except Exception:  # a bug (a handler's is caught by the informer): say where
                delay = backoff.step()
                log.exception("%s: list/watch failed; retrying in %.1fs", self.name, delay)
            await asyncio.sleep(delay)

    async def list(self) -> None:
        """List every object (in pages of 500, at one snapshot) and replace the sink's."""
        objects: list[Obj] = []
        token = ""
        while True:
            page = await self.resource.list(
                self.namespace, label_selector=self.label_selector,
                field_selector=self.field_selector, limit=LIST_PAGE_SIZE,
                continue_token=token)
            kind = self.resource.resource.kind
            api_version = self.resource.resource.api_version
            for item in page.get("items") or []:
                item.setdefault("kind", kind)
                item.setdefault("apiVersion", api_version)
                objects.append(item)
            token = (page.get("metadata") or {}).get("continue", "")
            if not token:
                break
        self.last_sync_resource_version = page["metadata"]["resourceVersion"]
        self.sink.replace(objects, self.last_sync_resource_version)

    async def watch(self) -> None:
        """Watch from the last version seen until the server ends the stream."""
        timeout = int(MIN_WATCH_TIMEOUT * (1 + random.random()))
        async for event_type, obj in self.resource.watch(
            self.namespace, resource_version=self.last_sync_resource_version,
            label_selector=self.label_selector, field_selector=self.field_selector,
            timeout_seconds=timeout, allow_bookmarks=True,
        ):
            if event_type == "ERROR":
                if obj.get("code") == 410:
                    raise WatchExpired(obj.get("message", "resource version too old"))
                raise APIStatusError(obj, int(obj.get("code") or 500))
            version = (obj.get("metadata") or {}).get("resourceVersion", "")
            if event_type == "ADDED":
                self.sink.add(obj)
            elif event_type == "MODIFIED":
                self.sink.update(obj)
            elif event_type == "DELETED":
                self.sink.delete(obj)
            elif event_type != "BOOKMARK":
                log.warning("%s: unknown watch event type %r", self.name, event_type)
                continue
            if version:
                self.last_sync_resource_version = version
