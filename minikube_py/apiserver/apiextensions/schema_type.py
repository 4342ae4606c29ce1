"""A CRD version's openAPIV3Schema as the project's `Type`: what server-side apply
merges with (list types, map keys, atomic maps) and what unknown fields it refuses.

Upstream turns the structural schema into a structured-merge-diff schema the same way
(apiextensions-apiserver's pkg/controller/openapi/builder and the field manager's
typeconverter).
"""

from __future__ import annotations

from typing import Any

from minikube_py.api.schema.dsl import STRING
from minikube_py.api.schema.meta import OBJECT_META
from minikube_py.api.schema.types import Field, Type

_SCALARS = {"string": "string", "integer": "integer", "number": "number",
            "boolean": "boolean"}


def schema_type(schema: dict[str, Any]) -> Type:
    """The Type of a custom resource: its schema, with the standard apiVersion, kind and
    ObjectMeta at the root."""
    root = _type(schema)
    root.fields["apiVersion"] = Field(STRING)
    root.fields["kind"] = Field(STRING)
    root.fields["metadata"] = Field(OBJECT_META)
    if root.kind != "object":
        root.kind = "object"
    return root


def _type(schema: dict[str, Any]) -> Type:
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    if schema.get("x-kubernetes-int-or-string"):
        return Type(kind="int-or-string")
    kind = schema.get("type", "")
    if kind in _SCALARS:
        return Type(kind=_SCALARS[kind])  # type: ignore[arg-type]
    if kind == "array":
        items = schema.get("items")
        return Type(kind="array", items=_type(items) if isinstance(items, dict) else
                    Type(kind="any", preserve_unknown=True))
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    map_type = schema.get("x-kubernetes-map-type")
    if isinstance(additional, dict) and not properties:
        return Type(kind="map", items=_type(additional), map_type=map_type)
    if additional is True and not properties:
        return Type(kind="map", items=Type(kind="any", preserve_unknown=True),
                    map_type=map_type)
    if kind == "object" or properties:
        fields = {name: _field(sub) for name, sub in properties.items()}
        return Type(kind="object", description=schema.get("description", ""),
                    fields=fields, preserve_unknown=preserve, map_type=map_type)
    return Type(kind="any", preserve_unknown=True)


def _field(schema: dict[str, Any]) -> Field:
    return Field(_type(schema), description=schema.get("description", ""),
                 list_type=schema.get("x-kubernetes-list-type"),
                 list_map_keys=tuple(schema.get("x-kubernetes-list-map-keys") or ()))
