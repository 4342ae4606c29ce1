"""Reading and defaulting API objects held as JSON dicts, null-safe.

A field of a Go type is either a pointer (absent or null means unset) or a value (its
zero value, "" or 0 or false, means unset too); `set_default` and `set_default_if_zero`
default each kind as upstream's defaulters do. The readers skip what has the wrong
shape, so a hook never trips over a list where it expects a dict.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj


def as_dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def items_of(obj: Obj, name: str) -> list[tuple[int, Obj]]:
    """The dict items of the list `obj[name]`, with their indexes (others are skipped).

    Validation asks this of every optional list of every object written, most of them
    absent: an absent list costs one lookup."""
    value = obj.get(name)
    if not value or not isinstance(value, list):
        return []
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)]


def text(value: Any) -> str:
    """A field meant to hold a string, as one ("" when unset)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def defaulted_dict(obj: Obj, name: str) -> Obj:
    """`obj[name]` to default fields into: a new empty dict when it is missing or not a dict."""
    value = obj.get(name)
    if not isinstance(value, dict):
        value = obj[name] = {}
    return value


def set_default(obj: Obj, name: str, value: Any) -> None:
    """Default a Go pointer field: only an absent or null field is unset."""
    if obj.get(name) is None:
        obj[name] = value


def set_default_if_zero(obj: Obj, name: str, value: Any) -> None:
    """Default a Go value field: its zero value ("", 0, false) means unset as well."""
    if not obj.get(name):
        obj[name] = value
