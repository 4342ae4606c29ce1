"""`default` values applied to an object, in place (defaulting/algorithm.go's Default):
a field missing, or null where the schema is not nullable, takes its schema's default,
inside properties, additionalProperties and items alike, then is defaulted in turn."""

from __future__ import annotations

from typing import Any

from .compiled import Node


def _wants_default(node: Node, value: Any) -> bool:
    return node.has_default and value is None and not node.nullable


def apply_defaults(node: Node | None, value: Any) -> None:
    """Default a value (an object read from storage or sent in a request) in place."""
    if node is None:
        return
    if isinstance(value, dict):
        for key, sub in node.properties.items():
            if sub.has_default and (key not in value or _wants_default(sub, value[key])):
                value[key] = sub.default_copy()
        additional = node.additional
        for key, item in value.items():
            sub = node.properties.get(key)
            if sub is None and additional is not None:
                if _wants_default(additional, item):
                    value[key] = item = additional.default_copy()
                sub = additional
            if sub is not None:
                apply_defaults(sub, item)
    elif isinstance(value, list) and node.items is not None:
        items = node.items
        for index, item in enumerate(value):
            if _wants_default(items, item):
                value[index] = item = items.default_copy()
            apply_defaults(items, item)
