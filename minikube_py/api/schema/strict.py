"""Strict decoding: the unknown and duplicate fields of a request body.

Upstream decodes bodies with sigs.k8s.io/json UnmarshalStrict, which collects "strict
errors" while decoding into the Go struct: `unknown field "spec.foo"` for a key the struct
has no field for, `duplicate field "metadata.name"` for a key given twice. The API server
turns them into a 400 (fieldValidation=Strict) or warnings (Warn), or ignores them.
Paths join field names with "." and list indexes as "[i]", e.g.
spec.template.spec.containers[0].imagee.
"""

from __future__ import annotations

import json
from typing import Any

from minikube_py.api.schema.types import Type


class FieldPath(str):
    """A field's path as upstream prints it (`spec.containers[0].bogus`), which also keeps
    the exact steps to the field: a key may be empty or hold dots, so the text alone
    cannot always be followed back."""

    steps: tuple[str | int, ...]

    def __new__(cls, steps: tuple[str | int, ...]) -> FieldPath:
        text = ""
        for step in steps:
            text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
        path = super().__new__(cls, text)
        path.steps = steps
        return path


def unknown_fields(obj: Any, schema: Type) -> list[FieldPath]:
    """Paths of the fields of `obj` that `schema` does not have, in document order.

    Map keys (labels, annotations, ConfigMap data) are free, and nothing below an `any`
    type or a type that preserves unknown fields is reported.
    """
    found: list[FieldPath] = []
    _collect_unknown(obj, schema, (), found)
    return found


def _collect_unknown(value: Any, schema: Type, path: tuple[str | int, ...],
                     found: list[FieldPath]) -> None:
    if schema.kind == "object" and isinstance(value, dict):
        for key, item in value.items():
            field = schema.fields.get(key)
            if field is not None:
                _collect_unknown(item, field.type, (*path, key), found)
            elif not schema.preserve_unknown:
                found.append(FieldPath((*path, key)))
    elif schema.kind == "map" and isinstance(value, dict) and schema.items is not None:
        for key, item in value.items():
            _collect_unknown(item, schema.items, (*path, key), found)
    elif schema.kind == "array" and isinstance(value, list) and schema.items is not None:
        for index, item in enumerate(value):
            _collect_unknown(item, schema.items, (*path, index), found)


def drop_null_fields(obj: Any, schema: Type) -> None:
    """Remove the fields sent as an explicit JSON null, at every depth, as decoding into
    the Go struct does: Go leaves such a field at its zero value, so upstream answers it
    as if it were absent. A null list item or map value is its type's zero value: `{}` for
    a struct (`webhooks: [null]` is one webhook with nothing set, which validation then
    refuses), "" for a string (`labels: {a: null}` is the label a="", `nonResourceURLs:
    [null]` the URL ""), 0, false, and "0" for a quantity. Below an `any` type or one that
    preserves unknown fields (raw JSON upstream keeps as sent) nulls stay, and so do null
    lists and maps in a list (Go's nil slice and map)."""
    if schema.kind == "object" and isinstance(obj, dict) and not schema.preserve_unknown:
        for key in [key for key, value in obj.items() if value is None and key in schema.fields]:
            del obj[key]
        for key, value in obj.items():
            field = schema.fields.get(key)
            if field is not None:
                drop_null_fields(value, field.type)
    elif schema.kind == "map" and isinstance(obj, dict) and schema.items is not None:
        for key, value in obj.items():
            obj[key] = _zero_if_null(value, schema.items)
            drop_null_fields(obj[key], schema.items)
    elif schema.kind == "array" and isinstance(obj, list) and schema.items is not None:
        for index, item in enumerate(obj):
            obj[index] = _zero_if_null(item, schema.items)
            drop_null_fields(obj[index], schema.items)


# What a null list item or map value decodes as, by its type: Go's zero value, as
# encoded back (an IntOrString's is the int 0, a Quantity's "0").
ZERO_VALUES: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False,
                               "int-or-string": 0, "quantity": "0"}


def _zero_if_null(value: Any, schema: Type) -> Any:
    """A null decoded into a Go value that is not a pointer, slice or map: its zero value."""
    if value is not None:
        return value
    if schema.kind == "object":
        return None if schema.preserve_unknown else {}
    return ZERO_VALUES.get(schema.kind)


INT64 = (-(2**63), 2**63 - 1)
GO_TYPES = {"string": "string", "integer": "int64", "number": "float64", "boolean": "bool",
            "array": "[]", "map": "map[string]", "int-or-string": "intstr.IntOrString",
            "quantity": "resource.Quantity"}


def _fits(value: Any, kind: str) -> bool:
    """Whether Go's decoder takes this JSON value for a field of this kind (null fits
    every field: it leaves the zero value)."""
    if value is None or kind == "any":
        return True
    if kind in ("object", "map"):
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == "integer":
        return isinstance(value, int) and INT64[0] <= value <= INT64[1]
    if kind == "number":
        return isinstance(value, (int, float))
    if kind == "int-or-string":
        return isinstance(value, str) or (isinstance(value, int) and INT64[0] <= value <= INT64[1])
    return isinstance(value, (str, int, float))  # a quantity: "1Gi" or a number


def json_type(value: Any) -> str:
    """How Go's encoding/json names a JSON value's type in its unmarshal errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {list: "array", str: "string", dict: "object"}.get(type(value), "null")


def type_error(obj: Any, schema: Type) -> str | None:
    """The first value whose JSON type the schema's Go type cannot take, as Go's decoder
    words it: `json: cannot unmarshal object into Go struct field ObjectMeta.metadata.name
    of type string`. The API server refuses such a body with 400 before any strategy runs,
    so every hook can trust the types."""
    return _type_error(obj, schema, "", schema.name.rsplit(".", 1)[-1] or "Object")


def _type_error(value: Any, schema: Type, path: str, struct: str) -> str | None:
    if not _fits(value, schema.kind):
        go_type = GO_TYPES.get(schema.kind) or ("struct" if schema.kind == "object" else "")
        if schema.kind == "object" and schema.name:
            go_type = schema.name.rsplit(".", 1)[-1]
        shown = "number " + str(value) if json_type(value) == "number" else json_type(value)
        return (f"json: cannot unmarshal {shown} into Go struct field {struct}.{path or '.'} "
                f"of type {go_type}")
    if schema.kind == "object" and isinstance(value, dict):
        inner = schema.name.rsplit(".", 1)[-1] or struct
        for key, item in value.items():
            field = schema.fields.get(key)
            if field is not None:
                found = _type_error(item, field.type, _join(path, key), inner)
                if found:
                    return found
    elif schema.kind in ("map", "array") and schema.items is not None:
        items = value.items() if isinstance(value, dict) else enumerate(value or [])
        for key, item in items:
            found = _type_error(item, schema.items, _join(path, str(key)), struct)
            if found:
                return found
    return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _DecodedObject(dict[str, Any]):
    """A JSON object that remembers which of its keys appeared more than once."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        seen: set[str] = set()
        self.duplicates: list[str] = []
        for key, _ in pairs:
            if key in seen and key not in self.duplicates:
                self.duplicates.append(key)
            seen.add(key)


def duplicate_fields(raw_json: bytes) -> list[str]:
    """Paths of the keys given more than once in one JSON object of `raw_json`.

    Like encoding/json, the last value of a duplicate key is the one decoded, so only
    duplicates within that value are found below it. Raises ValueError for invalid JSON.
    """
    found: list[str] = []
    _collect_duplicates(json.loads(raw_json, object_pairs_hook=_DecodedObject), "", found)
    return found


def _collect_duplicates(value: Any, path: str, found: list[str]) -> None:
    if isinstance(value, _DecodedObject):
        found.extend(_join(path, key) for key in value.duplicates)
        for key, item in value.items():
            _collect_duplicates(item, _join(path, key), found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _collect_duplicates(item, f"{path}[{index}]", found)
