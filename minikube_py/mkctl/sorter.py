"""`get --sort-by`: rows of a server Table, or objects, ordered by one field (kubectl's
get/sorter.go).

    --sort-by=.spec.replicas   the relaxed JSONPath, made `{.spec.replicas}`
    each row's embedded object (the Table is asked for with includeObject=Object) or each
    object gives the field's first value; one missing it sorts first
    values compare as kubectl's isLess compares decoded JSON: integers with integers,
    floats with floats, strings as quantities when both are one, else in natural order
    (digit runs by number); anything else is an unsortable type

The sort is Go's sort.Sort; for the lengths a CLI lists, its insertion sort keeps equal
values in their order, as Python's stable sort does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.quantity import QuantityError, parse_quantity
from minikube_py.mkctl.errors import MkctlError
from minikube_py.mkctl.printers.customcolumns import SpecError, relaxed_jsonpath
from minikube_py.mkctl.printers.jsonpath import JSONPath, JSONPathError

_MISSING = object()


def sort_field(sort_by: str) -> str:
    """NewRuntimeSorter's field: the relaxed expression, or the flag as given."""
    try:
        return relaxed_jsonpath(sort_by)
    except SpecError:
        return sort_by


def natural_less(left: str, right: str) -> bool:
    """sortorder.NaturalLess: digits before other characters, digit runs compared as
    numbers (then by fewer leading zeros), other bytes lexicographically."""
    a, b = left.encode(), right.encode()
    i = j = 0
    while i < len(a) and j < len(b):
        digit_a, digit_b = a[i:i + 1].isdigit(), b[j:j + 1].isdigit()
        if digit_a != digit_b:
            return digit_a
        if not digit_a:
            if a[i] != b[j]:
                return a[i] < b[j]
            i, j = i + 1, j + 1
            continue
        while i < len(a) and a[i:i + 1] == b"0":
            i += 1
        while j < len(b) and b[j:j + 1] == b"0":
            j += 1
        start_a, start_b = i, j
        while i < len(a) and a[i:i + 1].isdigit():
            i += 1
        while j < len(b) and b[j:j + 1].isdigit():
            j += 1
        if i - start_a != j - start_b:
            return i - start_a < j - start_b
        if a[start_a:i] != b[start_b:j]:
            return a[start_a:i] < b[start_b:j]
        if start_a != start_b:
            return start_a < start_b
    return len(a) < len(b)


def _go_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    return type(value).__name__


def is_less(left: Any, right: Any, field: str) -> bool:
    """isLess on two decoded JSON values (reflect.Interface): nil first; same-typed
    numbers; strings as quantities or naturally; an error for anything else."""
    if left is None or right is None:
        return left is None and right is not None
    if isinstance(left, str):
        if isinstance(right, str):
            try:
                return parse_quantity(left) < parse_quantity(right)
            except QuantityError:
                return natural_less(left, right)
    elif isinstance(left, bool) or isinstance(left, (dict, list)):
        raise _unsortable(field, f"unsortable type: {_go_type(left)}")
    elif type(left) is type(right) and isinstance(left, (int, float)):
        return left < right
    raise _unsortable(field, "unsortable interface: interface")


def _unsortable(field: str, detail: str) -> MkctlError:
    return MkctlError(f"Field {field} in *v1.Table is an unsortable type: interface, "
                      f"err: {detail}")


def _sorted(items: list[Any], of: Callable[[Any], Any], sort_by: str, *,
            none_found: str = "error") -> list[Any]:
    """The items ordered by the field's first value in `of(item)`. When no item has the
    field: an error, or (`none_found="drop"`) no items."""
    field = sort_field(sort_by)
    try:
        parser = JSONPath(field)
    except JSONPathError as error:
        raise MkctlError(f"sorting error: {error}") from None
    values = []
    for item in items:
        found = parser.find_results(of(item))
        values.append(found[0][0] if found and found[0] else _MISSING)
    if items and all(v is _MISSING for v in values):
        if none_found == "drop":
            return []
        raise MkctlError(f'couldn\'t find any field with path "{field}" in the list of objects')

    def compare(a: tuple[int, Any], b: tuple[int, Any]) -> int:
        return -1 if _less(a[1], b[1]) else 1 if _less(b[1], a[1]) else 0

    def _less(a: Any, b: Any) -> bool:
        if a is _MISSING:
            return True
        if b is _MISSING:
            return False
        return is_less(a, b, field)

    order = sorted(enumerate(values), key=functools.cmp_to_key(compare))
    return [items[index] for index, _ in order]


def sort_table(table: Obj, sort_by: str) -> None:
    """The one Table kubectl got: its rows by the field of each row's embedded object;
    none of them when no row's object has the field (kubectl prints no row then)."""
    rows = table.get("rows") or []
    table["rows"] = _sorted(rows, lambda row: row.get("object") or {}, sort_by,
                            none_found="drop")


def sort_objects(objects: list[Obj], sort_by: str) -> list[Obj]:
    """SortObjects: several objects by the field (one object, or none, stays as it is)."""
    if len(objects) <= 1:
        return objects
    return _sorted(objects, lambda obj: obj, sort_by)
