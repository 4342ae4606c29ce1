"""A schema compiled once into a tree of nodes (structural.go's Structural, NewStructural)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import re2

from .cel import CEL_TYPED_FORMATS, CompiledRule, compile_rule, escape
from .cel_cost import schema_decl


def compile_pattern(pattern: str) -> Any:
    """A schema's `pattern`, which is Go (RE2) syntax: Python's re where it reads the
    pattern (several times faster per match), else RE2 itself, for what re refuses (a
    flag group such as `(?i)` after the start)."""
    try:
        return re.compile(pattern)
    except re.error:
        return re2.compile(pattern)


class Node:
    """One schema node: the Structural fields the validator, defaulter and pruner read."""

    __slots__ = (
        "type", "nullable", "format", "enum", "pattern", "maximum", "exclusive_maximum",
        "minimum", "exclusive_minimum", "multiple_of", "max_length", "min_length",
        "max_items", "min_items", "unique_items", "max_properties", "min_properties",
        "required", "properties", "items", "additional", "additional_allowed", "default",
        "has_default", "enum_keys", "int_or_string", "preserve_unknown", "embedded", "list_type",
        "list_map_keys", "map_type", "all_of", "any_of", "one_of", "not_", "prunes",
        "validations", "cel_below", "_cel_rules", "cel_names", "cel_convert",
        "cel_properties", "cel_schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.type: str = schema.get("type", "")
        self.nullable: bool = bool(schema.get("nullable"))
        self.format: str = schema.get("format", "")
        self.enum: list[Any] | None = schema.get("enum")
        # enum members as JSON, so that true is not 1 and 1 is not "1"
        self.enum_keys: frozenset[str] = frozenset(
            json.dumps(v, sort_keys=True) for v in self.enum or ())
        pattern = schema.get("pattern")
        self.pattern: tuple[str, Any] | None = (
            (pattern, compile_pattern(pattern)) if pattern is not None else None)
        self.maximum: float | None = schema.get("maximum")
        self.exclusive_maximum: bool = bool(schema.get("exclusiveMaximum"))
        self.minimum: float | None = schema.get("minimum")
        self.exclusive_minimum: bool = bool(schema.get("exclusiveMinimum"))
        self.multiple_of: float | None = schema.get("multipleOf")
        self.max_length: int | None = schema.get("maxLength")
        self.min_length: int | None = schema.get("minLength")
        self.max_items: int | None = schema.get("maxItems")
        self.min_items: int | None = schema.get("minItems")
        self.unique_items: bool = bool(schema.get("uniqueItems"))
        self.max_properties: int | None = schema.get("maxProperties")
        self.min_properties: int | None = schema.get("minProperties")
        self.required: list[str] = list(schema.get("required") or ())
        self.properties: dict[str, Node] = {
            name: Node(sub) for name, sub in (schema.get("properties") or {}).items()}
        items = schema.get("items")
        self.items: Node | None = Node(items) if isinstance(items, dict) else None
        additional = schema.get("additionalProperties")
        self.additional: Node | None = (
            Node(additional) if isinstance(additional, dict) else None)
        self.additional_allowed: bool = additional is not False
        self.has_default: bool = "default" in schema
        self.default: Any = schema.get("default")
        self.int_or_string: bool = bool(schema.get("x-kubernetes-int-or-string"))
        self.preserve_unknown: bool = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        self.embedded: bool = bool(schema.get("x-kubernetes-embedded-resource"))
        self.list_type: str = schema.get("x-kubernetes-list-type", "")
        self.list_map_keys: list[str] = list(schema.get("x-kubernetes-list-map-keys") or ())
        self.map_type: str = schema.get("x-kubernetes-map-type", "")
        self.all_of = [Node(s) for s in schema.get("allOf") or ()]
        self.any_of = [Node(s) for s in schema.get("anyOf") or ()]
        self.one_of = [Node(s) for s in schema.get("oneOf") or ()]
        self.not_: Node | None = Node(schema["not"]) if isinstance(schema.get("not"), dict) \
            else None
        # a node prunes unknown fields of an object unless it preserves them or maps
        # every key to a schema
        self.prunes: bool = not self.preserve_unknown and self.additional is None \
            and additional is not True
        self.validations: list[dict[str, Any]] = list(
            schema.get("x-kubernetes-validations") or ())
        # whether this node or one below it has CEL rules: validation skips the rest
        self.cel_below: bool = bool(self.validations) or any(
            sub.cel_below for sub in (*self.properties.values(), self.items, self.additional,
                                      *self.all_of) if sub is not None)
        self._cel_rules: list[CompiledRule] | None = None
        # the schema itself where rules are, for the type they see self as (their cost)
        self.cel_schema: dict[str, Any] | None = schema if self.validations else None
        # the properties with rules at or below them, all that CEL validation visits
        self.cel_properties: tuple[tuple[str, Node], ...] = tuple(
            (name, sub) for name, sub in self.properties.items() if sub.cel_below)
        # property names rules spell differently (cel.Escape), and whether this node or one
        # below it holds a value rules see converted (a renamed property, a number, a
        # string of a format CEL has a type for)
        self.cel_names: dict[str, str] = {
            name: escape(name) for name in self.properties if escape(name) != name}
        self.cel_convert: bool = bool(self.cel_names) or self.type == "number" or (
            self.type == "string" and self.format in CEL_TYPED_FORMATS) or any(
            sub.cel_convert for sub in (*self.properties.values(), self.items,
                                        self.additional) if sub is not None)

    def cel_rules(self, is_root: bool = False) -> list[CompiledRule]:
        """This node's x-kubernetes-validations, compiled on first use and kept
        (`is_root`: the node is a resource's root, whose rules see apiVersion, kind and
        metadata)."""
        if self._cel_rules is None:
            decl = schema_decl(self.cel_schema, is_root or self.embedded) \
                if self.cel_schema is not None else None
            self._cel_rules = [compile_rule(v, self, decl) for v in self.validations]
        return self._cel_rules

    def default_copy(self) -> Any:
        """The default value, a fresh copy for each object it goes into."""
        return copy.deepcopy(self.default)


def compile_schema(schema: dict[str, Any]) -> Node:
    """Compile an openAPIV3Schema (already judged structural) into its node tree."""
    return Node(schema)
