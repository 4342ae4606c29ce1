"""OpenAPI documents: what kubectl downloads to validate, explain and compute patches.

- `/openapi/v2` in protobuf (gnostic's openapi.v2 `Document`): `kubectl apply` refuses to run
  without it. The reply carries `Content-Type: application/octet-stream`; echoing kubectl's
  own media type back makes it fail to parse the header.
- `/openapi/v3`: an index of per group-version documents, and `/openapi/v3/apis/<g>/<v>`:
  the schemas from minikube_py/api/schema, which `kubectl explain` reads.
"""

from __future__ import annotations

import hashlib
from functools import cache, lru_cache
from typing import Any

import orjson

from minikube_py.api.resources import RESOURCES
from minikube_py.api.schema import openapi_v2_definitions, openapi_v3_document

TITLE = "Kubernetes"
VERSION = "v1.37.0"


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


@cache
def v2_protobuf() -> bytes:
    """openapi.v2.Document{swagger: "2.0", info: {title, version}} as protobuf bytes.

    Definitions are served by the JSON form and by v3; in protobuf they would make kubectl
    validate client-side what the server already validates with fieldValidation.
    """
    info = _field(1, TITLE.encode()) + _field(2, VERSION.encode())
    return _field(1, b"2.0") + _field(2, info)


@cache
def _v2_definitions() -> dict[str, Any]:
    return openapi_v2_definitions(_group_versions())


def v2_json(aggregated: dict[str, Any]) -> bytes:
    """The JSON form: every definition of this server, and those of aggregated APIs."""
    return _v2_json(orjson.dumps(aggregated, option=orjson.OPT_SORT_KEYS))


@lru_cache(maxsize=4)
def _v2_json(aggregated: bytes) -> bytes:
    return orjson.dumps({
        "swagger": "2.0",
        "info": {"title": TITLE, "version": VERSION},
        "paths": {},
        "definitions": _v2_definitions() | orjson.loads(aggregated),
    })


def _group_versions() -> list[tuple[str, str]]:
    pairs = [(r.group, r.version) for r in RESOURCES]
    pairs.append(("autoscaling", "v1"))
    return sorted(set(pairs))


def _path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


@cache
def v3_document(path: str) -> bytes | None:
    for group, version in _group_versions():
        if _path(group, version) == path:
            return orjson.dumps(openapi_v3_document(group, version))
    return None


def v3_index(aggregated: dict[str, Any]) -> bytes:
    """The /openapi/v3 index: this server's group-versions and the aggregated ones."""
    return orjson.dumps({"paths": _own_v3_paths() | aggregated})


@cache
def _own_v3_paths() -> dict[str, Any]:
    paths = {}
    for group, version in _group_versions():
        path = _path(group, version)
        body = v3_document(path)
        assert body is not None
        digest = hashlib.sha512(body).hexdigest()[:32].upper()
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return paths
