"""Shaping answers: JSON or YAML objects and lists, Tables for kubectl get, Status bodies."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from minikube_py.api import Obj, errors, meta
from minikube_py.api.goyaml import emit as go_yaml
from minikube_py.api.resources import Resource
from minikube_py.apiserver.auth.admission import admission_warnings
from minikube_py.apiserver.endpoints import tables
from minikube_py.apiserver.endpoints.negotiation import Wanted
from minikube_py.apiserver.registry.store import ListResult, Store
from minikube_py.apiserver.storage.etcd import LIST_SLICE
from minikube_py.tracing.context import (
    json_without_trace_context,
    may_carry_trace_context,
    without_trace_context,
)

# The request's key for its id, returned in the `Audit-Id` header of every answer.
AUDIT_ID = web.RequestKey("audit_id", str)
# Headers a filter adds to the answer (APF's X-Kubernetes-PF-*): the filter sets them on
# a plain response, a streamed one (a watch) sends them itself, and an error's Status
# carries them too.
RESPONSE_HEADERS = web.RequestKey("response_headers", dict[str, str])
# What the watch endpoint calls once its watcher has started (the initial list read):
# API Priority and Fairness then gives back the seat the watch held to start.
WATCH_INITIALIZED = web.RequestKey("watch_initialized", Callable[[], None])


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """`body` as JSON, ending in the newline Go's json.Encoder writes after every value."""
    return web.Response(body=orjson.dumps(body) + b"\n", status=status,
                        content_type="application/json", headers=headers)


# API groups upstream serves that minikube-py does not build yet (README, "Not built
# yet"): a request for one gets the NotFound upstream answers for an unknown resource,
# with a message that says so, instead of leaving a student to guess.
NOT_BUILT_YET = {
    "storage.k8s.io": "volume attributes classes",
}


def no_such_resource(group: str = "") -> errors.APIError:
    """404 NotFound for a path no resource answers (group: the API group it names)."""
    message = "the server could not find the requested resource"
    missing = NOT_BUILT_YET.get(group)
    if missing is not None:
        message += (f" ({group}: {missing} are not built in minikube-py yet;"
                    ' see its README, "Not built yet")')
    return errors.APIError(404, "NotFound", message, {})


def warning_value(text: str) -> str:
    """One warning as a Warning header's value (upstream's NewWarningHeader): code 299,
    no agent, the text quoted with `"` and `\\` escaped and control characters other
    than tab left out (a line break would end the header)."""
    quoted = "".join("\\" + c if c in '"\\' else c for c in text
                     if c == "\t" or c >= " " and c != "\x7f")
    return f'299 - "{quoted}"'


def warning_headers(warnings: list[str] | None = None) -> dict[str, str]:
    """The `Warning` header of an answer: `warnings` and admission's."""
    warnings = (warnings or []) + (admission_warnings.get() or [])
    if warnings:
        return {"Warning": ", ".join(warning_value(w) for w in warnings)}
    return {}


def respond(
    body: Any, wanted: Wanted, status: int = 200, warnings: list[str] | None = None
) -> web.Response:
    headers = warning_headers(warnings)
    if wanted.yaml:
        return web.Response(
            text=go_yaml.dump(body),  # sigs.k8s.io/yaml, as upstream's YAML serializer
            status=status,
            content_type="application/yaml",
            headers=headers,
        )
    return json_response(body, status, headers)


def success_status(code: int | None, details: dict[str, Any] | None = None) -> Obj:
    """A Status of success, its fields in upstream's order; without a code where upstream
    leaves it out (a delete's answer)."""
    status: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        status["details"] = details
    if code is not None:
        status["code"] = code
    return status


async def from_storage(store: Store, obj: Obj) -> Obj:
    """A stored object in the version the request named (a conversion webhook's call
    for a custom resource whose definition has one)."""
    return (await store.strategy.convert_from_storage([obj]))[0]


def render_one(store: Store, obj: Obj, wanted: Wanted, request: web.Request) -> Obj:
    """One object as the client asked for it: itself, a Table row or its metadata;
    without its trace context unless the client asked for that too."""
    resource = store.resource
    obj = store.strategy.to_external(obj)
    if not wanted.trace_context:
        obj = without_trace_context(obj)
    if wanted.form == "Table":
        return tables.to_table(
            resource,
            [obj],
            now=meta.now(),
            include_object=request.query.get("includeObject", "Metadata"),
            list_metadata={"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            printer=store.strategy.printer,
        )
    if wanted.form == "PartialObjectMetadata":
        return {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata") or {},
        }
    return obj


def list_metadata(result: ListResult) -> Obj:
    list_meta: Obj = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        list_meta["continue"] = result.continue_token
    if result.remaining_item_count is not None:
        list_meta["remainingItemCount"] = result.remaining_item_count
    return list_meta


async def list_json_response(body: Obj) -> web.Response:
    """A List (list_body's, items last) as JSON, its items encoded LIST_SLICE at a time:
    a list of 30,000 pods from the watch cache takes some 100 ms to encode, and the event
    loop serves other requests between slices, as it does while a list read from etcd is
    converted (storage/etcd.py: map_in_slices)."""
    items = body["items"]
    head = orjson.dumps({key: value for key, value in body.items() if key != "items"})
    chunks = []
    for start in range(0, len(items), LIST_SLICE):
        if start:
            await asyncio.sleep(0)
        chunks.append(orjson.dumps(items[start:start + LIST_SLICE])[1:-1])
    return web.Response(body=head[:-1] + b',"items":[' + b",".join(chunks) + b"]}\n",
                        content_type="application/json", headers=warning_headers())


def raw_list_response(resource: Resource, result: ListResult, wanted: Wanted
                      ) -> web.Response:
    """A JSON list assembled from the items' JSON bytes (see store.wire_json)."""
    assert result.raw_items is not None
    items = b",".join(result.raw_items)
    # one look through the whole list instead of one per item: most lists carry no
    # trace context at all
    if not wanted.trace_context and may_carry_trace_context(items):
        items = b",".join(map(json_without_trace_context, result.raw_items))
    head = orjson.dumps({"kind": resource.list_kind, "apiVersion": resource.api_version,
                         "metadata": list_metadata(result)})
    body = head[:-1] + b',"items":[' + items + b"]}\n"
    return web.Response(body=body, content_type="application/json")


def list_body(store: Store, result: ListResult, wanted: Wanted, request: web.Request) -> Obj:
    """A list as the client asked for it: a List, a Table or metadata only (without the
    trace context unless asked)."""
    resource = store.resource
    list_meta = list_metadata(result)
    items = result.items
    if not store.strategy.stored_is_external:
        items = [store.strategy.to_external(o) for o in items]
    if not wanted.trace_context:
        items = [without_trace_context(o) for o in items]
    if wanted.form == "Table":
        return tables.to_table(
            resource,
            items,
            now=meta.now(),
            include_object=request.query.get("includeObject", "Metadata"),
            list_metadata=list_meta,
            printer=store.strategy.printer,
        )
    if wanted.form == "PartialObjectMetadata":
        return {
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": list_meta,
            "items": [
                {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": o.get("metadata") or {},
                }
                for o in items
            ],
        }
    return {
        "kind": resource.list_kind,
        "apiVersion": resource.api_version,
        "metadata": list_meta,
        "items": items,
    }
