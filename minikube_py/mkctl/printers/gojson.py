"""JSON exactly as kubectl writes it: Go's encoding/json.

    dumps(obj)                  MarshalIndent(obj, "", "    "): kubectl's `-o json`
    dumps(obj, indent="  ")     `kubectl version -o json`
    dumps(obj, indent=None)     Marshal: compact, as jsonpath prints maps and lists

Objects kubectl holds as unstructured maps come out with their keys sorted; typed ones
(kubeconfig, version, APIResourceList) in their struct's field order, which the caller
gives by building the dict in that order and passing sort_keys=False. Go also escapes
`<`, `>`, `&`, U+2028 and U+2029 inside strings, and spells floats its own way.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import Any

from minikube_py.api.gofmt import json_float

_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                 "\u2028": "\\u2028", "\u2029": "\\u2029"}


def go_string(text: str) -> str:
    """A JSON string literal as Go encodes it."""
    encoded = encode_basestring(text)
    if any(char in encoded for char in _HTML_ESCAPES):
        encoded = "".join(_HTML_ESCAPES.get(char, char) for char in encoded)
    return encoded


def dumps(value: Any, *, indent: str | None = "    ", sort_keys: bool = True) -> str:
    parts: list[str] = []
    _encode(value, parts, indent, sort_keys, "\n")
    return "".join(parts)


def _encode(value: Any, parts: list[str], indent: str | None, sort_keys: bool,
            newline: str) -> None:
    if isinstance(value, str):
        parts.append(go_string(value))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int):
        parts.append(str(value))
    elif isinstance(value, float):
        parts.append(json_float(value))
    elif isinstance(value, dict):
        if not value:
            parts.append("{}")
            return
        inner = newline + indent if indent is not None else ""
        separator = ": " if indent is not None else ":"
        parts.append("{")
        for index, key in enumerate(sorted(value) if sort_keys else value):
            parts.append(("," if index else "") + inner + go_string(key) + separator)
            _encode(value[key], parts, indent, sort_keys, inner)
        parts.append((newline if indent is not None else "") + "}")
    elif isinstance(value, list | tuple):
        if not value:
            parts.append("[]")
            return
        inner = newline + indent if indent is not None else ""
        parts.append("[")
        for index, item in enumerate(value):
            parts.append(("," if index else "") + inner)
            _encode(item, parts, indent, sort_keys, inner)
        parts.append((newline if indent is not None else "") + "]")
    else:
        raise TypeError(f"json: unsupported type: {type(value).__name__}")
