"""A large list is converted a slice at a time, letting the API server's event loop serve
other requests in between, and its answer is the same bytes as when built in one go."""

from __future__ import annotations

import asyncio

import orjson

from minikube_py.api.resources import lookup
from minikube_py.apiserver.endpoints.negotiation import Wanted
from minikube_py.apiserver.endpoints.responses import (
    json_response,
    list_json_response,
    raw_list_response,
)
from minikube_py.apiserver.registry.store import ListResult
from minikube_py.apiserver.storage.etcd import LIST_SLICE, map_in_slices
from minikube_py.tracing.context import ANNOTATION


async def test_a_list_longer_than_a_slice_lets_another_request_run_between_slices() -> None:
    other_ran = asyncio.Event()

    async def other_request() -> None:
        other_ran.set()

    task = asyncio.create_task(other_request())
    converted = await map_in_slices(lambda item: (item, other_ran.is_set()),
                                    range(3 * LIST_SLICE + 1))
    await task
    assert [item for item, _ in converted] == list(range(3 * LIST_SLICE + 1))
    # the first slice runs before the loop turns; every later item after the other task
    assert [seen for _, seen in converted] == [False] * LIST_SLICE + [True] * (
        2 * LIST_SLICE + 1)


async def test_a_list_of_one_slice_is_converted_without_giving_up_the_loop() -> None:
    other_ran = asyncio.Event()

    async def other_request() -> None:
        other_ran.set()

    task = asyncio.create_task(other_request())
    converted = await map_in_slices(lambda item: other_ran.is_set(), range(LIST_SLICE))
    await task
    assert converted == [False] * LIST_SLICE
    assert await map_in_slices(str, []) == []


def pod(name: str, annotations: dict[str, str] | None = None) -> bytes:
    metadata: dict[str, object] = {"name": name, "namespace": "default",
                                   "resourceVersion": "7"}
    if annotations:
        metadata["annotations"] = annotations
    return orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                         "spec": {"containers": [{"name": "c", "image": "busybox"}]}})


def test_a_raw_list_keeps_its_items_bytes_when_none_carries_a_trace_context() -> None:
    items = [pod(f"p{i}") for i in range(3)]
    resource = lookup("", "v1", "pods")
    assert resource is not None
    answer = raw_list_response(resource, ListResult([], 12, raw_items=items), Wanted())
    assert answer.body == (b'{"kind":"PodList","apiVersion":"v1","metadata":'
                           b'{"resourceVersion":"12"},"items":[' + b",".join(items) + b"]}\n")


def test_a_raw_list_strips_the_trace_context_only_where_an_item_carries_it() -> None:
    traced = pod("traced", {ANNOTATION: "00-0af7651916cd43dd8448eb211c80319c-"
                                        "b7ad6b7169203331-01", "team": "a"})
    plain = pod("plain")
    resource = lookup("", "v1", "pods")
    assert resource is not None
    result = ListResult([], 12, raw_items=[plain, traced, plain])
    listed = orjson.loads(raw_list_response(resource, result, Wanted()).body)
    assert [item["metadata"].get("annotations") for item in listed["items"]] == [
        None, {"team": "a"}, None]
    assert orjson.dumps(listed["items"][0]) == plain
    kept = orjson.loads(raw_list_response(resource, result, Wanted(trace_context=True)).body)
    assert kept["items"][1]["metadata"]["annotations"][ANNOTATION].startswith("00-")


async def test_a_list_from_the_cache_is_encoded_in_slices_to_the_same_bytes() -> None:
    """list_json_response lets another request run while it encodes, and answers exactly
    what json_response would."""
    body = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"},
            "items": [{"metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}}
                      for i in range(2 * LIST_SLICE + 3)]}
    encoded = False
    ran_while_encoding: list[bool] = []

    async def other_request() -> None:
        ran_while_encoding.append(not encoded)

    task = asyncio.create_task(other_request())
    answer = await list_json_response(body)
    encoded = True
    await task
    assert ran_while_encoding == [True]
    assert answer.body == json_response(body).body
    empty = {**body, "items": []}
    assert (await list_json_response(empty)).body == json_response(empty).body
