"""lightkube and kr8s, two Python clients from the package index, against a custom resource
used as their documentation shows: lightkube's generic resources
(`create_namespaced_resource`) and kr8s's `new_class`. Each creates an object, watches it
(ADDED, then MODIFIED by a status patch through the status subresource, then DELETED),
lists by a label selector and deletes, on a real API server over a real etcd."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import kr8s.asyncio
import pytest
from kr8s.asyncio.objects import new_class
from kubernetes.client import ApiextensionsV1Api
from lightkube import AsyncClient, KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.types import PatchType

from minikube_py.cluster.apiserver import APIServerProcess
from tests.api_helpers import API, delete_definition, kr8s_on, official_crd_clients
from tests.test_crd import create_established, definition, unique_group

# On the session's API server: every definition made here has a group of its own and
# is deleted at the end.

api_client, extensions, custom = official_crd_clients()

# Bounds a failure only: each step waits for an event, never for a time.
EVENT_TIMEOUT = 30.0


@pytest.fixture
async def group(apiserver: APIServerProcess, extensions: ApiextensionsV1Api
                ) -> AsyncIterator[str]:
    """A fresh group whose `widgets` (namespaced, with a status subresource) are served;
    the definition is deleted at the end, and gone from discovery before the next test."""
    name = unique_group()
    crd = definition(name, subresources={"status": {}})
    async with aiohttp.ClientSession() as session:
        await create_established(API(session, apiserver.url), crd)
    yield name
    await asyncio.to_thread(delete_definition, extensions, crd["metadata"]["name"])


@pytest.fixture
async def lightkube_client(kubeconfig: Path) -> AsyncIterator[AsyncClient]:
    client = AsyncClient(config=KubeConfig.from_file(kubeconfig),
                         field_manager="crd-python-clients")
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def kr8s_api(kubeconfig: Path, group: str) -> AsyncIterator[kr8s.asyncio.Api]:
    """kr8s on the test kubeconfig, made after the definition so its discovery has it. It
    names the server's version unsupported in a warning and carries on."""
    async with kr8s_on(kubeconfig) as api:
        yield api


async def next_event(events: asyncio.Queue[tuple[str, str, dict[str, Any]]]
                     ) -> tuple[str, str, dict[str, Any]]:
    """The watch's next (type, name, object as a dict)."""
    async with asyncio.timeout(EVENT_TIMEOUT):
        return await events.get()


async def test_lightkube_generic_resource_create_watch_status_list_delete(
        lightkube_client: AsyncClient, group: str, namespace: str) -> None:
    client = lightkube_client
    widget = create_namespaced_resource(group, "v1", "Widget", "widgets")
    created = await client.create(widget(
        metadata=ObjectMeta(name="alpha", labels={"tier": "front"}),
        spec={"color": "red"}), namespace=namespace)
    assert created.metadata.name == "alpha" and created.metadata.uid
    assert created.spec == {"color": "red", "size": 3}  # the schema's default applied

    events: asyncio.Queue[tuple[str, str, dict[str, Any]]] = asyncio.Queue()

    async def watch() -> None:
        async for kind, obj in client.watch(widget, namespace=namespace):
            await events.put((kind, obj.metadata.name, obj.to_dict()))

    watcher = asyncio.create_task(watch())
    try:
        kind, name, obj = await next_event(events)
        assert (kind, name, obj["spec"]) == ("ADDED", "alpha", {"color": "red", "size": 3})

        patched = await client.patch(
            widget.Status, "alpha", {"spec": {"size": 9}, "status": {"replicas": 2}},
            namespace=namespace, patch_type=PatchType.MERGE)
        assert patched.status == {"replicas": 2}
        assert patched.spec["size"] == 3  # the status subresource leaves spec alone
        kind, name, obj = await next_event(events)
        assert (kind, name, obj["status"]) == ("MODIFIED", "alpha", {"replicas": 2})
        assert obj["metadata"]["resourceVersion"] == patched.metadata.resourceVersion

        await client.create(widget(metadata=ObjectMeta(name="beta", labels={"tier": "back"}),
                                   spec={}), namespace=namespace)
        await client.create(widget(metadata=ObjectMeta(name="gamma", labels={"tier": "front"}),
                                   spec={"size": 5}), namespace=namespace)
        front = [obj async for obj in client.list(widget, namespace=namespace,
                                                   labels={"tier": "front"})]
        assert sorted(obj.metadata.name for obj in front) == ["alpha", "gamma"]
        assert all(type(obj) is widget for obj in front)

        await client.delete(widget, "alpha", namespace=namespace)
        seen = [await next_event(events) for _ in range(3)]
        assert [(kind, name) for kind, name, _ in seen] == [
            ("ADDED", "beta"), ("ADDED", "gamma"), ("DELETED", "alpha")]
        with pytest.raises(ApiError) as missing:
            await client.get(widget, "alpha", namespace=namespace)
        assert missing.value.status.code == 404
        assert missing.value.status.reason == "NotFound"
    finally:
        watcher.cancel()
        with pytest.raises(asyncio.CancelledError):
            await watcher


async def test_kr8s_new_class_create_watch_status_list_delete(
        kr8s_api: kr8s.asyncio.Api, group: str, namespace: str) -> None:
    api = kr8s_api
    widget = new_class(kind="Widget", version=f"{group}/v1", namespaced=True,
                       plural="widgets")
    alpha = await widget({"metadata": {"name": "alpha", "namespace": namespace,
                                       "labels": {"tier": "front"}},
                          "spec": {"color": "blue"}}, api=api)
    await alpha.create()
    assert alpha.metadata.uid
    assert alpha.raw["spec"] == {"color": "blue", "size": 3}  # the schema's default applied

    events: asyncio.Queue[tuple[str, str, dict[str, Any]]] = asyncio.Queue()

    async def watch() -> None:
        async for kind, obj in api.watch(f"widgets.{group}", namespace=namespace):
            await events.put((kind, obj.name, obj.raw))

    watcher = asyncio.create_task(watch())
    try:
        kind, name, obj = await next_event(events)
        assert (kind, name, obj["spec"]) == ("ADDED", "alpha", {"color": "blue", "size": 3})

        await alpha.patch({"spec": {"size": 9}, "status": {"replicas": 4}},
                          subresource="status")
        assert alpha.raw["status"] == {"replicas": 4}
        assert alpha.raw["spec"]["size"] == 3  # the status subresource leaves spec alone
        kind, name, obj = await next_event(events)
        assert (kind, name, obj["status"]) == ("MODIFIED", "alpha", {"replicas": 4})
        assert obj["metadata"]["resourceVersion"] == alpha.metadata.resourceVersion

        for name, tier in (("beta", "back"), ("gamma", "front")):
            await (await widget({"metadata": {"name": name, "namespace": namespace,
                                              "labels": {"tier": tier}}, "spec": {}},
                                api=api)).create()
        front = [obj async for obj in widget.list(api=api, namespace=namespace,
                                                  label_selector={"tier": "front"})]
        assert sorted(obj.name for obj in front) == ["alpha", "gamma"]
        assert all(isinstance(obj, widget) for obj in front)

        await alpha.delete()
        seen = [await next_event(events) for _ in range(3)]
        assert [(kind, name) for kind, name, _ in seen] == [
            ("ADDED", "beta"), ("ADDED", "gamma"), ("DELETED", "alpha")]
        assert not await alpha.exists()
    finally:
        watcher.cancel()
        with pytest.raises(asyncio.CancelledError):
            await watcher
