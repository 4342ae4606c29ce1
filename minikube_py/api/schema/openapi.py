"""OpenAPI rendering of the schemas: the /openapi/v3 document of a group-version and the
definitions of /openapi/v2.

Upstream builds both with k8s.io/kube-openapi from the generated definitions and the
routes of the API server. The shapes follow upstream's: a property that refers to another
definition is {"allOf": [{"$ref": ...}], "description": ...} in v3 and a plain $ref in v2;
top-level kinds carry x-kubernetes-group-version-kind, which `kubectl explain` looks for
(staging/src/k8s.io/kubectl/pkg/explain/v2/templates/plaintext.tmpl); lists carry the
x-kubernetes-list-* and x-kubernetes-patch-* extensions of their fields.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minikube_py.api.resources import (
    CONNECT_SUBRESOURCES,
    RESOURCES,
    SUBRESOURCE_KINDS,
    Resource,
)
from minikube_py.api.schema.meta import (
    DELETE_OPTIONS,
    LIST_META,
    MICRO_TIME,
    OBJECT_META,
    PATCH,
    STATUS,
    TIME,
)
from minikube_py.api.schema.paths import REF_V3, resource_paths
from minikube_py.api.schema.registry import (
    KINDS,
    GroupVersionKind,
    definitions,
    group_version_kinds,
)
from minikube_py.api.schema.types import Field, Type

REF_V2 = "#/definitions/"

_DATE_TIME = {TIME.name, MICRO_TIME.name}


def _definition(schema: Type, ref: str, v3: bool, gvks: list[GroupVersionKind]) -> dict:
    """The definition of a named type: an object's properties, or a named scalar."""
    out: dict[str, Any] = {}
    if schema.description:
        out["description"] = schema.description
    if schema.kind == "object":
        out["type"] = "object"
        if schema.fields:
            out["properties"] = {
                name: _property(field, ref, v3) for name, field in schema.fields.items()
            }
        required = [name for name, field in schema.fields.items() if field.required]
        if required:
            out["required"] = required
        if schema.preserve_unknown:
            out["x-kubernetes-preserve-unknown-fields"] = True
        if schema.map_type:
            out["x-kubernetes-map-type"] = schema.map_type
    else:
        out.update(_scalar(schema, v3))
    if gvks:
        out["x-kubernetes-group-version-kind"] = [
            {"group": group, "kind": kind, "version": version} for group, version, kind in gvks
        ]
    return out


def _scalar(schema: Type, v3: bool) -> dict:
    """Named scalars as upstream renders them: Time, Quantity, IntOrString."""
    if schema.kind == "quantity":
        return {"oneOf": [{"type": "string"}, {"type": "number"}]} if v3 else {"type": "string"}
    if schema.kind == "int-or-string":
        if not v3:
            return {"type": "string", "format": "int-or-string"}
        return {
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
        }
    if schema.kind == "any":
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if schema.kind == "string" and schema.name in _DATE_TIME:
        return {"type": "string", "format": "date-time"}
    if schema.kind == "number":
        return {"type": "number", "format": "double"}
    return {"type": schema.kind}


def _inline(schema: Type, ref: str, v3: bool) -> dict:
    """The schema of a value: a $ref to a named type, or the type spelled out."""
    if schema.name:
        return {"$ref": ref + schema.name}
    if schema.kind == "array":
        return {"type": "array"} | (
            {"items": _inline(schema.items, ref, v3)} if schema.items else {}
        )
    if schema.kind == "map":
        return {"type": "object"} | (
            {"additionalProperties": _inline(schema.items, ref, v3)} if schema.items else {}
        ) | ({"x-kubernetes-map-type": schema.map_type} if schema.map_type else {})
    if schema.kind == "object":
        return _definition(schema, ref, v3, [])
    return _scalar(schema, v3)


def _property(field: Field, ref: str, v3: bool) -> dict:
    """A property: its type, description and the x-kubernetes-list/patch extensions."""
    out = _inline(field.type, ref, v3)
    extras: dict[str, Any] = {}
    if field.description:
        extras["description"] = field.description
    if field.default is not None:
        extras["default"] = field.default
    if field.list_type:
        extras["x-kubernetes-list-type"] = field.list_type
    if field.list_map_keys:
        extras["x-kubernetes-list-map-keys"] = list(field.list_map_keys)
    if field.patch_merge_key:
        extras["x-kubernetes-patch-merge-key"] = field.patch_merge_key
    if field.patch_strategy:
        extras["x-kubernetes-patch-strategy"] = field.patch_strategy
    if extras and "$ref" in out and v3:
        # OpenAPI 3.0 ignores siblings of $ref; upstream wraps the reference in allOf.
        out = {"allOf": [out]}
    return out | extras


def openapi_v3_document(group: str, version: str,
                        served: Iterable[Resource] = RESOURCES) -> dict:
    """The /openapi/v3/api[s]/<group>/<version> document: the paths of the group-version's
    resources (of `served`: the API server's own by default) and every definition they
    reach (ObjectMeta, PodSpec, Scale, ...)."""
    resources = [r for r in served if (r.group, r.version) == (group, version)]
    roots = [schema for (g, v, _), schema in KINDS.items() if (g, v) == (group, version)]
    paths: dict[str, dict] = {}
    for resource in resources:
        paths.update(resource_paths(resource))
        roots.extend(KINDS[SUBRESOURCE_KINDS[sub]] for sub in resource.subresources
                     if sub in SUBRESOURCE_KINDS and sub not in CONNECT_SUBRESOURCES)
    if resources:
        roots.extend((STATUS, DELETE_OPTIONS, PATCH))
    gvks = group_version_kinds()
    schemas = {name: _definition(schema, REF_V3, True, gvks.get(name) or [])
               for name, schema in definitions(roots).items()}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": schemas},
    }


def openapi_v2_definitions(group_versions: Iterable[tuple[str, str]]) -> dict:
    """The swagger 2.0 `definitions` of every kind of the group-versions, with
    "#/definitions/..." references."""
    gvks = group_version_kinds()
    wanted = set(group_versions)
    roots = [*(schema for (g, v, _), schema in KINDS.items() if (g, v) in wanted),
             DELETE_OPTIONS, PATCH]
    return {name: _definition(schema, REF_V2, False, gvks.get(name) or [])
            for name, schema in definitions(roots).items()}


def standard_definitions(v3: bool, roots: Iterable[Type] = ()) -> dict:
    """The definitions every group-version's document carries (ObjectMeta, ListMeta,
    Status, DeleteOptions, Patch and what they reach), plus those of `roots`: what a
    document of custom resources refers to."""
    ref = REF_V3 if v3 else REF_V2
    found = definitions([*roots, OBJECT_META, LIST_META, STATUS, DELETE_OPTIONS, PATCH])
    return {name: _definition(schema, ref, v3, []) for name, schema in found.items()}
