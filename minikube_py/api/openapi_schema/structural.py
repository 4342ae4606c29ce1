"""Whether an openAPIV3Schema is one the API server accepts: only supported fields
(ValidateCustomResourceDefinitionOpenAPISchema and its specStandardValidatorV3) and
structural (pkg/apiserver/schema/validation.go's validateStructuralInvariants)."""

from __future__ import annotations

from typing import Any

from minikube_py.api.validation import FieldError, forbidden, invalid, not_supported, required

from .cel import rule_compile_errors, rule_shape_errors
from .cel_cost import STATIC_ESTIMATED_CRD_COST_LIMIT, TotalCost, cost_error_message
from .compiled import Node

OPENAPI_V3_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
_META_FIELDS = ("apiVersion", "kind", "metadata")
_UNSUPPORTED = (("id", "id is not supported"),
                ("additionalItems", "additionalItems is not supported"),
                ("patternProperties", "patternProperties is not supported"),
                ("definitions", "definitions is not supported"),
                ("dependencies", "dependencies is not supported"),
                ("$ref", "$ref is not supported"))
# what a value validation (anyOf, allOf, oneOf, not) may not say to be structural
_NOT_IN_VALUE_VALIDATION = ("type", "description", "title", "default", "nullable",
                            "additionalProperties", "x-kubernetes-preserve-unknown-fields",
                            "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string")


def schema_errors(schema: dict[str, Any], path: str,
                  suppress_per_expression_cost: bool = False) -> list[FieldError]:
    """Every reason a CRD version's openAPIV3Schema (at `path`, e.g.
    spec.versions[0].schema.openAPIV3Schema) is refused; an update that leaves the schema
    as it was suppresses the per-expression cost limit (the total still holds)."""
    errors: list[FieldError] = []
    cel_errors: list[FieldError] = []
    total = TotalCost(suppress_per_expression_cost)
    _supported(schema, path, True, errors, cel_errors, "", 1, total)
    _structural(schema, path, "root", errors)
    errors += cel_errors
    if total.total > STATIC_ESTIMATED_CRD_COST_LIMIT:
        for rule_path, _ in total.most_expensive:
            errors.append(forbidden(rule_path, "contributed to estimated rule cost total "
                                    "exceeding cost limit for entire OpenAPIv3 schema"))
        errors.append(forbidden(path, cost_error_message(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
            total.total, STATIC_ESTIMATED_CRD_COST_LIMIT)))
    return errors


def _key(path: str, name: str) -> str:
    return f"{path}[{name}]"


def _max_elements(schema: dict[str, Any]) -> int | None:
    """extractMaxElements: how many times a node's children can occur per occurrence of
    the node (None: without bound)."""
    kind = schema.get("type", "")
    if kind == "object" and "additionalProperties" in schema:
        bound = schema.get("maxProperties")
        return None if bound is None else max(0, bound)
    if kind == "array":
        bound = schema.get("maxItems")
        return None if bound is None else max(0, bound)
    return 1


def _supported(schema: dict[str, Any], path: str, is_root: bool,
               errors: list[FieldError], cel_errors: list[FieldError],
               uncorrelatable: str, cardinality: int | None = None,
               total: TotalCost | None = None) -> None:
    """ValidateCustomResourceDefinitionOpenAPISchema, the parts a schema's shape decides;
    its CEL rules compile only when nothing at or below the node is refused
    (`uncorrelatable`: the list or atomic map above, where rules may not use oldSelf;
    `cardinality`: how often the node can occur in an object, None without bound;
    `total`: the estimated cost of the schema's rules so far)."""
    start = len(errors)
    factor = _max_elements(schema)
    below = None if cardinality is None or factor is None else cardinality * factor
    kind = schema.get("type", "")
    if kind and kind not in OPENAPI_V3_TYPES and kind != "null":
        errors.append(not_supported(f"{path}.type", kind, OPENAPI_V3_TYPES))
    for name, detail in _UNSUPPORTED:
        if schema.get(name):
            errors.append(forbidden(f"{path}.{name}", detail))
    if kind == "null":
        errors.append(forbidden(f"{path}.type",
                                "type cannot be set to null, use nullable as an alternative"))
    if isinstance(schema.get("items"), list):
        errors.append(forbidden(f"{path}.items",
                                "items must be a schema object and not an array"))
    if schema.get("uniqueItems"):
        errors.append(forbidden(f"{path}.uniqueItems", "uniqueItems cannot be set to true since "
                                "the runtime complexity becomes quadratic"))
    additional = schema.get("additionalProperties")
    properties = schema.get("properties") or {}
    if additional is not None:
        if properties and additional is not True:
            errors.append(forbidden(f"{path}.additionalProperties",
                                    "additionalProperties and properties are mutual exclusive"))
        if isinstance(additional, dict):
            _supported(additional, f"{path}.additionalProperties", False, errors, cel_errors,
                       uncorrelatable, below, total)
    in_properties = uncorrelatable or (
        path if schema.get("x-kubernetes-map-type") == "atomic" else "")
    for name, sub in properties.items():
        _supported(sub, _key(f"{path}.properties", name), False, errors, cel_errors,
                   in_properties, below, total)
    if isinstance(schema.get("not"), dict):
        _supported(schema["not"], f"{path}.not", False, errors, [], uncorrelatable)
    for combinator in ("allOf", "oneOf", "anyOf"):
        for index, sub in enumerate(schema.get(combinator) or ()):
            _supported(sub, f"{path}.{combinator}[{index}]", False, errors, [],
                       uncorrelatable)
    if isinstance(schema.get("items"), dict):
        in_items = uncorrelatable or (
            path if schema.get("x-kubernetes-list-type") != "map" else "")
        _supported(schema["items"], f"{path}.items", False, errors, cel_errors, in_items,
                   below, total)
    _extensions(schema, path, kind, errors)
    validations = schema.get("x-kubernetes-validations")
    if validations:
        # the compiled node (every pattern below compiled) only where a fieldPath needs it
        node = Node(schema) if any(isinstance(v, dict) and v.get("fieldPath")
                                   for v in validations) else None
        errors += rule_shape_errors(validations, node, path)
        if len(errors) == start:
            cel_errors += rule_compile_errors(validations, path, uncorrelatable, schema,
                                              is_root, cardinality, total)


def _extensions(schema: dict[str, Any], path: str, kind: str,
                errors: list[FieldError]) -> None:
    preserve = schema.get("x-kubernetes-preserve-unknown-fields")
    if preserve is False:
        errors.append(invalid(f"{path}.x-kubernetes-preserve-unknown-fields", False,
                              "must be true or undefined"))
    map_type = schema.get("x-kubernetes-map-type")
    if map_type is not None:
        if kind != "object":
            detail = "must be object if x-kubernetes-map-type is specified"
            errors.append(required(f"{path}.type", detail) if not kind
                          else invalid(f"{path}.type", kind, detail))
        if map_type not in ("atomic", "granular"):
            errors.append(not_supported(f"{path}.x-kubernetes-map-type", map_type,
                                        ["atomic", "granular"]))
    list_type = schema.get("x-kubernetes-list-type")
    if list_type is not None:
        if kind != "array":
            detail = "must be array if x-kubernetes-list-type is specified"
            errors.append(required(f"{path}.type", detail) if not kind
                          else invalid(f"{path}.type", kind, detail))
        if list_type not in ("atomic", "set", "map"):
            errors.append(not_supported(f"{path}.x-kubernetes-list-type", list_type,
                                        ["atomic", "set", "map"]))
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if keys:
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        if list_type is None:
            errors.append(required(f"{path}.x-kubernetes-list-type", detail))
        elif list_type != "map":
            errors.append(invalid(f"{path}.x-kubernetes-list-type", list_type, detail))
    if list_type == "map":
        _list_map(schema, path, keys, errors)


def _list_map(schema: dict[str, Any], path: str, keys: list[str],
              errors: list[FieldError]) -> None:
    if not keys:
        errors.append(required(f"{path}.x-kubernetes-list-map-keys",
                               "must not be empty if x-kubernetes-list-type is map"))
    items = schema.get("items")
    if items is None:
        errors.append(required(f"{path}.items",
                               "must have a schema if x-kubernetes-list-type is map"))
        return
    if not isinstance(items, dict):
        return
    if items.get("type") != "object":
        errors.append(invalid(f"{path}.items.type", items.get("type", ""),
                              "must be object if parent array's x-kubernetes-list-type is map"))
        return
    seen: set[str] = set()
    for key in keys:
        prop = (items.get("properties") or {}).get(key)
        if prop is None:
            errors.append(invalid(f"{path}.x-kubernetes-list-map-keys", keys,
                                  "entries must all be names of item properties"))
        elif prop.get("type") in ("array", "object"):
            errors.append(invalid(_key(f"{path}.items.properties", key) + ".type", "object",
                                  "must be a scalar type if parent array's "
                                  "x-kubernetes-list-type is map"))
        if key in seen:
            errors.append(invalid(f"{path}.x-kubernetes-list-map-keys", keys,
                                  "must not contain duplicate entries"))
        seen.add(key)


_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def _is_int_or_string_exception(combinator: str, index: int, sub: dict[str, Any]) -> bool:
    """The two shapes int-or-string may spell its types in: anyOf of integer and string,
    at the node or in its first allOf."""
    if combinator == "anyOf":
        return sub in _INT_OR_STRING_ANY_OF
    return combinator == "allOf" and index == 0 and \
        sub.get("anyOf") == _INT_OR_STRING_ANY_OF and len(sub) == 1


def _structural(schema: dict[str, Any], path: str, level: str,
                errors: list[FieldError]) -> None:
    """validateStructuralInvariants and validateStructuralCompleteness for one node."""
    kind = schema.get("type", "")
    items = schema.get("items")
    if kind == "array" and items is None:
        errors.append(required(f"{path}.items", "must be specified"))
    if isinstance(items, dict):
        _structural(items, f"{path}.items", "item", errors)
    properties = schema.get("properties") or {}
    for name, sub in properties.items():
        _structural(sub, _key(f"{path}.properties", name), "field", errors)
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        _structural(additional, f"{path}.additionalProperties", "field", errors)
    for combinator in ("allOf", "anyOf", "oneOf"):
        for index, sub in enumerate(schema.get(combinator) or ()):
            if not (schema.get("x-kubernetes-int-or-string")
                    and _is_int_or_string_exception(combinator, index, sub)):
                _value_validation(sub, f"{path}.{combinator}[{index}]", errors)
    if isinstance(schema.get("not"), dict):
        _value_validation(schema["not"], f"{path}.not", errors)
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
    if int_or_string and kind:
        errors.append(invalid(f"{path}.type", kind,
                              "must be empty if x-kubernetes-int-or-string is true"))
    if embedded and kind != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        errors.append(required(f"{path}.type", detail) if not kind
                      else invalid(f"{path}.type", kind, detail))
    elif not kind and not int_or_string:
        if level == "root":
            errors.append(required(f"{path}.type", "must not be empty at the root"))
        elif level == "item" and not preserve:
            errors.append(required(f"{path}.type", "must not be empty for specified array items"))
        elif level == "field" and not preserve:
            errors.append(required(f"{path}.type",
                                   "must not be empty for specified object fields"))
    if level == "root" and kind and kind != "object":
        errors.append(invalid(f"{path}.type", kind, "must be object at the root"))
    if embedded and not preserve and not properties:
        errors.append(required(f"{path}.properties", "must not be empty if "
                               "x-kubernetes-embedded-resource is true without "
                               "x-kubernetes-preserve-unknown-fields"))
    if level == "root" or embedded:
        _resource_meta(properties, path, errors)


def _resource_meta(properties: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    """apiVersion and kind must be strings; metadata an object of name and generateName."""
    for name in ("apiVersion", "kind"):
        sub = properties.get(name)
        if sub is not None and sub.get("type") != "string":
            errors.append(invalid(_key(f"{path}.properties", name) + ".type",
                                  sub.get("type", ""), "must be string"))
    metadata = properties.get("metadata")
    if metadata is None:
        return
    meta_path = _key(f"{path}.properties", "metadata")
    if metadata.get("type") != "object":
        errors.append(invalid(f"{meta_path}.type", metadata.get("type", ""), "must be object"))
    for name in metadata.get("properties") or {}:
        if name not in ("name", "generateName"):
            errors.append(forbidden(_key(f"{meta_path}.properties", name),
                                    "must not be specified"))


def _value_validation(schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    """validateValueValidation: a logical junctor may only restrict values."""
    for name in _NOT_IN_VALUE_VALIDATION:
        if name in schema:
            errors.append(forbidden(f"{path}.{name}", "must be empty to be structural"))
    for name in ("items", "additionalProperties"):
        if isinstance(schema.get(name), dict):
            _value_validation(schema[name], f"{path}.{name}", errors)
    for name, sub in (schema.get("properties") or {}).items():
        _value_validation(sub, _key(f"{path}.properties", name), errors)
    for combinator in ("allOf", "anyOf", "oneOf"):
        for index, sub in enumerate(schema.get(combinator) or ()):
            _value_validation(sub, f"{path}.{combinator}[{index}]", errors)
    if isinstance(schema.get("not"), dict):
        _value_validation(schema["not"], f"{path}.not", errors)
