"""A custom resource's Table: its additionalPrinterColumns (upstream's
pkg/registry/customresource/tableconvertor).

Each column's jsonPath is evaluated against the object and its first result is the
cell: strings as text, other types as their JSON value, a missing value as null. A
definition without columns gets upstream's one: Age, from metadata.creationTimestamp.

A date cell is the value's age ("5m"), as kubectl prints AGE. The paths are the
JSONPath subset printer columns use: fields (`.spec.replicas`,
`.metadata['name']`), indexes (`[0]`, `[*]`) and equality filters
(`.status.conditions[?(@.type=="Ready")].status`).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from minikube_py.api import Obj
from minikube_py.apiserver.endpoints.tables.cells import parse_time, translate_timestamp_since
from minikube_py.apiserver.endpoints.tables.table import NAME, Cells, Printer, column

AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
              "description": "CreationTimestamp is a timestamp representing the server time "
                             "when this object was created. It is not guaranteed to be set "
                             "in happens-before order across separate operations. Clients "
                             "may not set this value. It is represented in RFC3339 form and "
                             "is in UTC.\n\nPopulated by the system. Read-only. Null for "
                             "lists. More info: https://git.k8s.io/community/contributors/"
                             "devel/sig-architecture/api-conventions.md#metadata"}
_STEP = re.compile(
    r"\.([A-Za-z0-9_-]+)"  # .field
    r"|\[(\d+|\*)\]"  # [0], [*]
    r"|\['([^']*)'\]"  # ['field']
    r"|\[\?\(@((?:\.[A-Za-z0-9_-]+)+)\s*==\s*"  # [?(@.path == literal)]
    r"""(?:"([^"]*)"|'([^']*)'|(-?\d+))\)\]""")


def printer(columns: list[Obj]) -> Printer:
    """The Printer of a version's additionalPrinterColumns (Name first)."""
    columns = columns or [AGE_COLUMN]
    definitions = (NAME, *(column(c["name"], c["type"], c.get("description", ""),
                                  priority=c.get("priority", 0), format_=c.get("format", ""))
                           for c in columns))
    paths = [(parse(c["jsonPath"]), c["type"]) for c in columns]

    def cells(obj: Obj, now: datetime) -> Cells:
        row: Cells = [(obj.get("metadata") or {}).get("name", "")]
        for steps, kind in paths:
            found = evaluate(steps, obj)
            if not found or found[0] is None:
                row.append(None)
            elif kind == "string":
                value = found[0]
                row.append(value if isinstance(value, str) else json.dumps(value))
            else:
                row.append(_cell(kind, found[0], now))
        return row

    return Printer(definitions, cells)


def _cell(kind: str, value: Any, now: datetime) -> Any:
    """cellForJSONValue: a value as its column's type shows it; a date as its age."""
    if kind == "date":
        if not isinstance(value, str):
            return None
        return translate_timestamp_since(value, now) if parse_time(value) else "<invalid>"
    if kind == "integer":
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return int(value) if number else None
    if kind == "number":
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return value if number else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    return value


def parse(path: str) -> list[tuple[str, Any]]:
    """The steps of a printer column's path (a `{...}` wrapper allowed)."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    steps: list[tuple[str, Any]] = []
    position = 0
    while position < len(text):
        found = _STEP.match(text, position)
        if found is None:
            return [("invalid", text)]
        field, index, quoted, filter_path, *literals = found.groups()
        if field is not None or quoted is not None:
            steps.append(("field", field if field is not None else quoted))
        elif index is not None:
            steps.append(("index", index))
        else:
            wanted = next((v for v in literals if v is not None), None)
            if literals[2] is not None:
                wanted = int(literals[2])
            steps.append(("filter", (filter_path.strip(".").split("."), wanted)))
        position = found.end()
    return steps


def evaluate(steps: list[tuple[str, Any]], obj: Any) -> list[Any]:
    values = [obj]
    for kind, arg in steps:
        following: list[Any] = []
        for value in values:
            if kind == "field" and isinstance(value, dict) and arg in value:
                following.append(value[arg])
            elif kind == "index" and isinstance(value, list):
                following.extend(value if arg == "*" else value[int(arg):int(arg) + 1])
            elif kind == "filter" and isinstance(value, list):
                keys, wanted = arg
                following.extend(item for item in value if _at(item, keys) == wanted)
        values = following
    return values if steps and steps[0][0] != "invalid" else []


def _at(value: Any, keys: list[str]) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
