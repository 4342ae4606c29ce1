"""Record: a small mutable data class, for the objects a command builds on every run.

    class Overrides(Record):
        namespace: str = ""
        groups: list[str] = []       # a fresh copy for each instance

    Overrides(namespace="web").replace(namespace="db")

The class attributes are the fields and their defaults; the constructor takes any of them
by keyword. `dataclasses` would do the same, but importing it (it imports `inspect`)
costs about 10 ms here, a tenth of a whole `mkctl get`.
"""

from __future__ import annotations

import copy
from typing import Any, Self


class Record:
    def __init__(self, **values: Any) -> None:
        cls = type(self)
        for name in _fields(cls):
            if name in values:
                setattr(self, name, values.pop(name))
            else:
                default = getattr(cls, name)
                if isinstance(default, list | dict | set):
                    setattr(self, name, copy.copy(default))
        if values:
            raise TypeError(f"{cls.__name__} has no field {', '.join(values)}")

    def replace(self, **changes: Any) -> Self:
        """A shallow copy with some fields changed."""
        changed = copy.copy(self)
        for name, value in changes.items():
            if name not in _fields(type(self)):
                raise TypeError(f"{type(self).__name__} has no field {name}")
            setattr(changed, name, value)
        return changed

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, name) == getattr(other, name) for name in _fields(type(self)))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _fields(type(self)))
        return f"{type(self).__name__}({shown})"


def _fields(cls: type) -> list[str]:
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        names += [name for name in klass.__dict__.get("__annotations__") or {}
                  if name not in names]
    return names
