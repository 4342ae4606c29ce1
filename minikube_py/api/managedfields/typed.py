"""Objects read through their schema: field sets, merging, comparing, pruning.

structured-merge-diff's `typed` package. Each function walks a JSON object beside its
schema (`api/schema`), which says how each part is owned and merged:

- an object (a Go struct) or a map is *granular*: each field or key is owned and merged
  on its own, unless the type is atomic (`+structType=atomic`, `+mapType=atomic`, such
  as a LabelSelector), which is owned and replaced as a whole;
- a list is *keyed* (`+listType=map`: items owned and merged by their key fields, such
  as containers by `name`), a *set* (`+listType=set`: primitive items owned one by one)
  or *atomic* (owned and replaced as a whole). Where upstream has no list type, a
  strategic-merge "merge" list counts as keyed by its merge key (or as a set); any other
  list is atomic, as in upstream's schema conversion;
- a scalar is one leaf; a part the schema does not describe (`any`) is a granular map,
  an atomic list or a scalar, by its JSON shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.jsoncopy import json_copy
from minikube_py.api.managedfields.fieldpath import (
    FieldSet,
    Path,
    element_string,
    field_element,
    key_element,
    path_string,
    value_element,
)
from minikube_py.api.schema.types import Field, Type

_UNTYPED = Type(kind="any")
_UNTYPED_FIELD = Field(type=_UNTYPED)
_ABSENT = object()  # a field missing from an object (JSON null is a value)


class SchemaError(ValueError):
    """An applied configuration that does not fit its kind's schema."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path_string(path)}: {message}" if path else message)


@dataclass
class Comparison:
    """What changed from one object to another, as three field sets (typed.Comparison)."""

    added: FieldSet
    modified: FieldSet
    removed: FieldSet

    def without(self, ignored: FieldSet) -> Comparison:
        """The comparison without the fields in `ignored` and below them (FilterFields)."""
        return Comparison(self.added.recursive_difference(ignored),
                          self.modified.recursive_difference(ignored),
                          self.removed.recursive_difference(ignored))


# --- reading the schema --------------------------------------------------------------


def _member(schema: Type, key: str, path: Path, strict: bool) -> tuple[Field, bool]:
    """The field `key` of an object (named: True) or the values of a map (False).

    With `strict`, a key the object does not declare is an error, as upstream's typed
    conversion of an applied configuration finds it.
    """
    if schema.kind == "object":
        found = schema.fields.get(key)
        if found is not None:
            return found, True
        if strict and not schema.preserve_unknown:
            raise SchemaError((*path, field_element(key)), "field not declared in schema")
        return _UNTYPED_FIELD, False
    if schema.kind == "map" and schema.items is not None:
        return Field(type=schema.items), False
    return _UNTYPED_FIELD, False


def _is_map(schema: Type, value: Any) -> bool:
    return schema.kind in ("object", "map") or (schema.kind == "any" and isinstance(value, dict))


def _is_list(schema: Type, value: Any) -> bool:
    return schema.kind == "array" or (schema.kind == "any" and isinstance(value, list))


def _list_type(field: Field | None) -> tuple[str, tuple[str, ...]]:
    """("map", keys), ("set", ()) or ("atomic", ()): how a list field is owned and merged."""
    if field is None:
        return "atomic", ()
    if field.list_type == "map" and field.list_map_keys:
        return "map", field.list_map_keys
    if field.list_type in ("set", "atomic"):
        return field.list_type, ()
    if "merge" in (field.patch_strategy or "").split(","):
        return ("map", (field.patch_merge_key,)) if field.patch_merge_key else ("set", ())
    return "atomic", ()


def _item_element(item: Any, field: Field, strict: bool) -> str:
    """The path element naming one item of a keyed list or a set.

    A key field the item omits takes its schema default (a port's protocol is "TCP");
    without one, `strict` makes it an error (ValueError) and otherwise it is left out.
    """
    kind, keys = _list_type(field)
    if kind == "set" or not isinstance(item, dict):
        if kind == "map" and strict:
            raise ValueError(f"expected map, got {_show(item)}")
        return value_element(item)
    item_type = field.type.items or _UNTYPED
    values: dict[str, Any] = {}
    for name in keys:
        if item.get(name) is not None:
            values[name] = item[name]
            continue
        key_field = item_type.fields.get(name) if item_type.kind == "object" else None
        if key_field is not None and key_field.default is not None:
            values[name] = key_field.default
        elif strict:
            raise ValueError(f'associative list with keys has an element that omits key '
                             f'field "{name}" (and doesn\'t have default value)')
    return key_element(values)


def _show(value: Any) -> str:
    """The JSON type of a value, for messages: map, list, string, number, bool, null."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {dict: "map", list: "list", str: "string"}.get(type(value), "null")


# --- ToFieldSet: the fields an applied configuration sets -----------------------------


def to_field_set(obj: Obj, schema: Type | None) -> FieldSet:
    """ToFieldSet: every field, list item and map entry the configuration sets.

    This is what its manager owns after an apply: leaves (scalars, atomic lists and
    maps), each item of a keyed list or set (which is why items carry `"."` in FieldsV1),
    and each entry of a map; a struct field is owned only through its leaves, unless it
    is null or `{}`. Raises SchemaError where the configuration does not fit the schema.
    """
    out = FieldSet()
    _collect(obj, schema or _UNTYPED, None, (), out)
    return out


def _collect(value: Any, schema: Type, field: Field | None, path: Path, out: FieldSet) -> None:
    if value is None:
        return
    if _is_map(schema, value):
        if not isinstance(value, dict):
            raise SchemaError(path, f"expected map, got {_show(value)}")
        if schema.map_type == "atomic":
            out.insert(path)
            return
        for key, item in value.items():
            child, named = _member(schema, key, path, strict=True)
            child_path = (*path, field_element(key))
            _collect(item, child.type, child, child_path, out)
            if item is None or item == {} or not named:
                out.insert(child_path)
        return
    if _is_list(schema, value):
        if not isinstance(value, list):
            raise SchemaError(path, f"expected list, got {_show(value)}")
        if field is None or _list_type(field)[0] == "atomic":
            out.insert(path)
            return
        item_type = field.type.items or _UNTYPED
        seen: set[str] = set()
        for index, item in enumerate(value):
            try:
                element = _item_element(item, field, strict=True)
            except ValueError as err:
                raise SchemaError(path, f"element {index}: {err}") from None
            if element in seen:
                raise SchemaError(path, f"duplicate entries for key {element_string(element)}")
            seen.add(element)
            _collect(item, item_type, None, (*path, element), out)
            out.insert((*path, element))
        return
    if isinstance(value, (dict, list)) and schema.kind != "any":
        raise SchemaError(path, f"expected {schema.kind}, got {_show(value)}")
    out.insert(path)


# --- Merge: the applied configuration over the live object ----------------------------


def merge(live: Obj, config: Obj, schema: Type | None) -> Obj:
    """Merge: `config` laid over `live` as the schema says; neither argument changes.

    Granular maps merge key by key, keyed lists and sets item by item (items only the
    live object has keep their place), and the rest is replaced by the configuration's
    value. A null in the configuration clears the field.
    """
    merged = _merge(json_copy(live), config, schema or _UNTYPED, None)
    return merged if isinstance(merged, dict) else {}


def _merge(lhs: Any, rhs: Any, schema: Type, field: Field | None) -> Any:
    if rhs is None:
        return None
    if isinstance(rhs, dict) and _is_map(schema, rhs) and schema.map_type != "atomic":
        out = dict(lhs) if isinstance(lhs, dict) else {}
        for key, value in rhs.items():
            child, _ = _member(schema, key, (), strict=False)
            merged = _merge(out.get(key), value, child.type, child)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        return out
    if isinstance(rhs, list) and field is not None and _list_type(field)[0] != "atomic":
        return _merge_list(lhs if isinstance(lhs, list) else [], rhs, field)
    return json_copy(rhs) if isinstance(rhs, (dict, list)) else rhs


def _merge_list(lhs: list, rhs: list, field: Field) -> list:
    """Items of both are merged, in the configuration's order; an item only the live
    list has stays before the first shared item that followed it there."""
    item_type = field.type.items or _UNTYPED
    left = [(_item_element(item, field, strict=False), item) for item in lhs]
    right = [(_item_element(item, field, strict=False), item) for item in rhs]
    in_right = {element for element, _ in right}
    first_left: dict[str, tuple[int, Any]] = {}
    for position, (element, item) in enumerate(left):
        first_left.setdefault(element, (position, item))
    only_left = [(position, item) for position, (element, item) in enumerate(left)
                 if element not in in_right]
    out: list = []
    waiting = 0
    for element, item in right:
        if element in first_left:
            position, live_item = first_left[element]
            while waiting < len(only_left) and only_left[waiting][0] < position:
                out.append(only_left[waiting][1])
                waiting += 1
            out.append(_merge(live_item, item, item_type, None))
        else:
            out.append(_merge(None, item, item_type, None))
    out.extend(item for _, item in only_left[waiting:])
    return out


# --- Compare: what one write changed --------------------------------------------------


def compare(old: Obj, new: Obj, schema: Type | None) -> Comparison:
    """Compare: the fields `new` adds, modifies and removes relative to `old`.

    Leaves are compared by value. A map, struct or list item that appears (or goes) is
    itself added (or removed) along with what it holds.
    """
    result = Comparison(FieldSet(), FieldSet(), FieldSet())
    _compare(old, new, schema or _UNTYPED, None, (), result)
    return result


def _compare(lhs: Any, rhs: Any, schema: Type, field: Field | None, path: Path,
             out: Comparison) -> None:
    present = rhs if rhs is not _ABSENT else lhs
    filled = _filled(lhs) or _filled(rhs)  # both empty: a leaf, keeping {} apart from absent
    if _both(lhs, rhs, dict) and _is_map(schema, present) and schema.map_type != "atomic" \
            and filled:
        left = lhs if isinstance(lhs, dict) else {}
        right = rhs if isinstance(rhs, dict) else {}
        for key in [*left, *(key for key in right if key not in left)]:
            child, _ = _member(schema, key, path, strict=False)
            _compare(left.get(key, _ABSENT), right.get(key, _ABSENT), child.type, child,
                     (*path, field_element(key)), out)
    elif _both(lhs, rhs, list) and field is not None and _list_type(field)[0] != "atomic" \
            and filled:
        left = _items(lhs, field)
        right = _items(rhs, field)
        item_type = field.type.items or _UNTYPED
        for element in [*left, *(element for element in right if element not in left)]:
            _compare(left.get(element, _ABSENT), right.get(element, _ABSENT), item_type, None,
                     (*path, element), out)
    else:
        if lhs is _ABSENT:
            out.added.insert(path)
        elif rhs is _ABSENT:
            out.removed.insert(path)
        elif lhs != rhs:
            out.modified.insert(path)
        return
    if lhs is _ABSENT:
        out.added.insert(path)
    elif rhs is _ABSENT:
        out.removed.insert(path)


def _both(lhs: Any, rhs: Any, kind: type) -> bool:
    """Both sides are of JSON type `kind`, or absent (not both absent)."""
    return all(side is _ABSENT or isinstance(side, kind) for side in (lhs, rhs))


def _filled(value: Any) -> bool:
    return value is not _ABSENT and bool(value)


def _items(value: Any, field: Field) -> dict[str, Any]:
    """A list's items by their path element (the first of duplicates)."""
    if not isinstance(value, list):
        return {}
    items: dict[str, Any] = {}
    for item in value:
        items.setdefault(_item_element(item, field, strict=False), item)
    return items


# --- Prune: what a manager stopped applying -------------------------------------------


def prune(obj: Obj, schema: Type | None, last: FieldSet, owned: FieldSet) -> Obj:
    """Remove, in place, what `last` held and `owned` no longer does; returns `obj`.

    `last` is what the manager applied before, `owned` what every manager owns now
    (its new configuration included). A removed field, list item or map entry goes with
    everything below it. A struct field counts as owned while anything below it is
    (EnsureNamedFieldsAreMembers), so `spec` stays while any of it is applied.
    """
    _prune(obj, schema or _UNTYPED, None, last, owned)
    return obj


def _owns(fields: FieldSet, element: str, named: bool) -> bool:
    return element in fields.members or (named and element in fields.children)


def _prune(value: Any, schema: Type, field: Field | None, last: FieldSet,
           owned: FieldSet) -> None:
    if isinstance(value, dict) and _is_map(schema, value) and schema.map_type != "atomic":
        for key in list(value):
            element = field_element(key)
            if element not in last.members and element not in last.children:
                continue
            child, named = _member(schema, key, (), strict=False)
            if _owns(last, element, named) and not _owns(owned, element, named):
                del value[key]
            elif element in last.children:
                _prune(value[key], child.type, child, last.children[element],
                       owned.child(element))
    elif isinstance(value, list) and field is not None and _list_type(field)[0] != "atomic":
        item_type = field.type.items or _UNTYPED
        kept = []
        for item in value:
            element = _item_element(item, field, strict=False)
            if _owns(last, element, False) and not _owns(owned, element, False):
                continue
            if element in last.children:
                _prune(item, item_type, None, last.children[element], owned.child(element))
            kept.append(item)
        value[:] = kept
