"""The Table machinery: column definitions, the Printer type, and building one Table.

Upstream splits this between `pkg/printers/tablegenerator.go` (a handler per kind:
columns plus a print function, and GenerateTable) and the apiserver's default
TableConvertor (`staging/src/k8s.io/apiserver/pkg/registry/rest/table.go`), used for
kinds without a handler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from minikube_py.api import Obj
from minikube_py.apiserver.endpoints.tables.cells import name_of, parse_time

Column = dict[str, Any]
Cells = list[Any]


def column(
    name: str, type_: str, description: str, *, priority: int = 0, format_: str = ""
) -> Column:
    """A TableColumnDefinition (every field is always on the wire, as upstream)."""
    return {
        "name": name,
        "type": type_,
        "format": format_,
        "description": description,
        "priority": priority,
    }


NAME = column("Name", "string", "Name must be unique within a namespace.", format_="name")
AGE = column(
    "Age",
    "string",
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created.",
)
CREATED_AT = column("Created At", "date", AGE["description"])
CONTAINERS = column("Containers", "string", "Names of each container in the template.", priority=1)
IMAGES = column(
    "Images", "string", "Images referenced by each container in the template.", priority=1
)


def selector_column(description: str) -> Column:
    """The wide Selector column; each kind words its description differently."""
    return column("Selector", "string", description, priority=1)


@dataclass(frozen=True)
class Printer:
    """One kind's columns and the function that fills them for one object."""

    columns: tuple[Column, ...]
    cells: Callable[[Obj, datetime], Cells]
    row_conditions: Callable[[Obj], list[Obj]] | None = None


DEFAULT_COLUMNS = (NAME, CREATED_AT)


def print_default(obj: Obj, now: datetime) -> Cells:
    """The apiserver's default table: the name and creationTimestamp in RFC3339 UTC."""
    created = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
    if created is None:
        created_at = "0001-01-01T00:00:00Z"  # Go's zero time
    else:
        created_at = created.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return [name_of(obj), created_at]


DEFAULT_PRINTER = Printer(DEFAULT_COLUMNS, print_default)


def row_object(obj: Obj, include_object: str) -> Obj | None:
    """A row's `object`, per the includeObject table option (None, Metadata, Object)."""
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def generate_table(
    printer: Printer,
    objs: list[Obj],
    *,
    now: datetime,
    include_object: str,
    list_metadata: dict[str, Any] | None,
) -> dict[str, Any]:
    """GenerateTable: one row per object, cells and row conditions from `printer`."""
    rows = []
    for obj in objs:
        row: dict[str, Any] = {"cells": printer.cells(obj, now)}
        conditions = printer.row_conditions(obj) if printer.row_conditions else []
        if conditions:
            row["conditions"] = conditions
        row["object"] = row_object(obj, include_object)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata or {},
        "columnDefinitions": [dict(definition) for definition in printer.columns],
        "rows": rows,
    }
