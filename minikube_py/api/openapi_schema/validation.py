"""An object against a compiled schema, each problem as ValidateCustomResource reports
kube-openapi's validator errors in a 422 Status (pkg/apiserver/validation/validation.go)."""

from __future__ import annotations

import json
import re
from typing import Any

from minikube_py.api.validation import (
    FieldError,
    duplicate,
    invalid,
    not_supported,
    required,
    too_many,
    type_invalid,
    validate_object_meta,
)

from .cel import BLOCKING_DETAIL, RUNTIME_CEL_COST_BUDGET, Budget, validate_cel
from .compiled import Node
from .formats import check_format

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def go_number(value: float) -> str:
    """A float64 as Go's %v prints it: 1 not 1.0, 1e+21 from 1e21 on."""
    if isinstance(value, int):
        return str(value)
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        text = f"{mantissa}e{sign}{exponent.lstrip('+-').zfill(2)}"
    return text


def json_type(value: Any) -> str:
    """The JSON type name kube-openapi's type validator reports for a value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(node: Node, value: Any, kind: str) -> bool:
    if node.int_or_string:
        return kind in ("integer", "string") or (kind == "number" and value == int(value))
    wanted = node.type
    if not wanted or kind == wanted:
        return True
    if wanted == "number":
        return kind == "integer"
    return wanted == "integer" and kind == "number" and value == int(value)


def _type_names(node: Node) -> str:
    return "integer,string" if node.int_or_string else node.type


def _enum_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _unique_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def validate(node: Node, value: Any, path: str = "", old: Any = None,
             warnings: list[str] | None = None,
             cost_budget: int = RUNTIME_CEL_COST_BUDGET) -> list[FieldError]:
    """Every problem of a value against a node, with upstream's messages and paths: the
    OpenAPI checks, then, unless one of them is a type or enum error, the CEL rules
    (x-kubernetes-validations). `old` is the stored object on update: transition rules
    see it as oldSelf, and an error on a value equal to its old one is ratcheted: dropped
    for an OpenAPI check, moved into `warnings` for a rule."""
    errors: list[FieldError] = []
    _validate(node, value, path, errors)
    if old is not None and errors:
        errors = [e for e in errors if not _ratcheted(node, value, old, e, path)]
    if node.cel_below:
        if any(e.type in ("NotSupported", "TypeInvalid") for e in errors):
            errors.append(invalid("<nil>", None, BLOCKING_DETAIL))
        else:
            validate_cel(node, value, path, old, old is not None, None, True,
                         Budget(cost_budget), errors, [] if warnings is None else warnings)
    return errors


_MISSING = object()


def _path_segments(field: str) -> list[str]:
    """A field path's steps: `spec.labels[a.b].x` is spec, labels, a.b, x."""
    segments: list[str] = []
    pos = 0
    while pos < len(field):
        if field[pos] == "[":
            end = field.index("]", pos)
            segments.append(field[pos + 1:end])
            pos = end + 1
        elif field[pos] == ".":
            pos += 1
        else:
            end = pos
            while end < len(field) and field[end] not in ".[":
                end += 1
            segments.append(field[pos:end])
            pos = end
    return segments


def _ratcheted(node: Node, value: Any, old: Any, error: FieldError, base: str) -> bool:
    """Ratcheting (CRDValidationRatcheting): whether the value an error is about, followed
    to its nearest correlatable node (a map key, a map-list item by its keys), equals
    the old object's. A Required error is about its parent object."""
    field = error.field[len(base):].lstrip(".") if base else error.field
    segments = _path_segments(field)
    if error.type == "Required" and segments:
        segments.pop()
    current: Node | None = node
    for segment in segments:
        if current is None:
            break
        if isinstance(value, list):
            if not (current.list_type == "map" and current.list_map_keys and
                    segment.isdigit() and int(segment) < len(value) and
                    isinstance(old, list)):
                break
            item = value[int(segment)]
            if not isinstance(item, dict):
                break
            keys = [item.get(k) for k in current.list_map_keys]
            match = [o for o in old if isinstance(o, dict) and
                     [o.get(k) for k in current.list_map_keys] == keys]
            if not match:
                return False
            value, old, current = item, match[0], current.items
        elif isinstance(value, dict) and isinstance(old, dict) and current.map_type != "atomic":
            value, old = value.get(segment, _MISSING), old.get(segment, _MISSING)
            if value is _MISSING or old is _MISSING:
                return value is old
            current = current.properties.get(segment) or current.additional
        else:
            break
    return bool(value == old)


def _validate(node: Node, value: Any, path: str, errors: list[FieldError]) -> None:
    name = path or "."
    if value is None:
        if not node.nullable and (node.type or node.int_or_string):
            errors.append(type_invalid(path, "null",
                                       f'{name} in body must be of type {_type_names(node)}: '
                                       '"null"'))
        return
    kind = json_type(value)
    if not _type_ok(node, value, kind):
        errors.append(type_invalid(path, kind, f'{name} in body must be of type '
                                               f'{_type_names(node)}: "{kind}"'))
    for sub in node.all_of:
        _validate(sub, value, path, errors)
    if node.enum is not None and json.dumps(value, sort_keys=True) not in node.enum_keys:
        errors.append(not_supported(path, value, [_enum_value(v) for v in node.enum]))
    if kind == "string":
        _validate_string(node, value, path, name, errors)
    elif kind in ("integer", "number"):
        _validate_number(node, value, path, name, errors)
    elif kind == "array":
        _validate_array(node, value, path, name, errors)
    elif kind == "object":
        _validate_object(node, value, path, name, errors)


def _validate_string(node: Node, value: str, path: str, name: str,
                     errors: list[FieldError]) -> None:
    if node.max_length is not None and len(value) > node.max_length:
        unit = "byte" if node.max_length == 1 else "bytes"
        errors.append(FieldError("TooLong", path,
                                 f"may not be more than {node.max_length} {unit}"))
    if node.min_length is not None and len(value) < node.min_length:
        errors.append(invalid(path, value, f"{name} in body should be at least "
                                           f"{node.min_length} chars long"))
    if node.pattern is not None and not node.pattern[1].search(value):
        errors.append(invalid(path, value, f"{name} in body should match '{node.pattern[0]}'"))
    if node.format and not check_format(node.format, value):
        errors.append(type_invalid(path, value, f'{name} in body must be of type '
                                                f'{node.format}: {json.dumps(value)}'))


def _validate_number(node: Node, value: float, path: str, name: str,
                     errors: list[FieldError]) -> None:
    if node.maximum is not None and (value >= node.maximum if node.exclusive_maximum
                                     else value > node.maximum):
        relation = "less than" if node.exclusive_maximum else "less than or equal to"
        errors.append(invalid(path, value, f"{name} in body should be {relation} "
                                           f"{go_number(node.maximum)}"))
    if node.minimum is not None and (value <= node.minimum if node.exclusive_minimum
                                     else value < node.minimum):
        relation = "greater than" if node.exclusive_minimum else "greater than or equal to"
        errors.append(invalid(path, value, f"{name} in body should be {relation} "
                                           f"{go_number(node.minimum)}"))
    if node.multiple_of:
        quotient = value / node.multiple_of
        if quotient != int(quotient):
            errors.append(invalid(path, value, f"{name} in body should be a multiple of "
                                               f"{go_number(node.multiple_of)}"))


def _validate_array(node: Node, value: list[Any], path: str, name: str,
                    errors: list[FieldError]) -> None:
    if node.max_items is not None and len(value) > node.max_items:
        errors.append(too_many(path, len(value), node.max_items))
    if node.min_items is not None and len(value) < node.min_items:
        errors.append(invalid(path, len(value), f"{name} in body should have at least "
                                                f"{node.min_items} items"))
    if node.unique_items and len({_unique_key(v) for v in value}) != len(value):
        errors.append(invalid(path, "", f"{name} in body shouldn't contain duplicates"))
    if node.items is not None:
        for index, item in enumerate(value):
            _validate(node.items, item, f"{path}[{index}]", errors)
    if node.list_type == "set":
        seen: set[str] = set()
        for index, item in enumerate(value):
            key = _unique_key(item)
            if key in seen:
                errors.append(duplicate(f"{path}[{index}]", item))
            seen.add(key)
    elif node.list_type == "map" and node.list_map_keys:
        seen = set()
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            keys = {k: item[k] for k in node.list_map_keys if k in item}
            key = _unique_key(keys)
            if key in seen:
                errors.append(duplicate(f"{path}[{index}]", keys))
            seen.add(key)


def _validate_object(node: Node, value: dict[str, Any], path: str, name: str,
                     errors: list[FieldError]) -> None:
    if node.max_properties is not None and len(value) > node.max_properties:
        errors.append(too_many(path, len(value), node.max_properties))
    if node.min_properties is not None and len(value) < node.min_properties:
        errors.append(invalid(path, len(value), f"{name} in body should have at least "
                                                f"{node.min_properties} properties"))
    for key in node.required:
        if key not in value:
            errors.append(required(_child(path, key)))
    properties = node.properties
    for key, item in value.items():
        sub = properties.get(key)
        if sub is not None:
            _validate(sub, item, _child(path, key), errors)
        elif node.additional is not None:
            _validate(node.additional, item, _child(path, key), errors)
        elif not node.additional_allowed:
            errors.append(invalid(path, "", f"{name}.{key} in body is a forbidden property"))
    if node.embedded:
        _validate_embedded(value, path, errors)


def validate_path_segment_name(name: str) -> list[str]:
    """path.ValidatePathSegmentName: the name rule of an embedded resource."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


def _validate_embedded(value: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    """objectmeta's validateEmbeddedResource: apiVersion and kind set and well formed,
    metadata valid ObjectMeta (a missing name passes)."""
    meta = value.get("metadata")
    if isinstance(meta, dict):
        meta = {"name": "fakename", **{k: v for k, v in meta.items() if v or k != "name"}}
        errors += validate_object_meta(meta, namespaced=bool(meta.get("namespace")),
                                       name_validator=validate_path_segment_name,
                                       path=_child(path, "metadata"))
    for key in ("apiVersion", "kind"):
        if key not in value:
            errors.append(required(_child(path, key), "must not be empty"))
            continue
        field = value[key]
        if not isinstance(field, str):
            errors.append(invalid(_child(path, key), field, "must be a string"))
        elif not field:
            errors.append(invalid(_child(path, key), field, "must not be empty"))
        elif key == "apiVersion" and field.count("/") > 1:
            errors.append(invalid(_child(path, key), field,
                                  f"unexpected GroupVersion string: {field}"))
        elif key == "kind" and not _DNS1035.match(field.lower()):
            errors.append(invalid(_child(path, key), field,
                                  "may have mixed case, but should otherwise match: a DNS-1035 "
                                  "label must consist of lower case alphanumeric characters or "
                                  "'-', start with an alphabetic character, and end with an "
                                  "alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                                  "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"))
