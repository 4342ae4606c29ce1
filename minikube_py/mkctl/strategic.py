"""The three-way strategic merge patch of `apply` (kubectl's CreateThreeWayMergePatch).

Three documents: `original` (the last applied configuration), `modified` (the file as it
is now) and `current` (the live object). The patch sent is the union of two diffs:

    deletions = diff(original -> modified), deletions only:
                what the file said before and no longer says, removed;
    delta     = diff(current  -> modified), changes and additions only:
                what the file says that the live object does not (yet) hold.

Fields the server set and the file never mentioned are in neither, so they stay.

How a field is diffed depends on its patch strategy, read from the type's schema
(minikube_py/api/schema, upstream's struct tags):
- a map is diffed key by key (a key gone becomes `null`), unless its strategy is
  "replace";
- a list with strategy "merge" is diffed item by item: items of objects by their merge
  key (a gone item becomes `{"$patch": "delete", key: value}`), primitives as a set (gone
  values go in the parallel list `$deleteFromPrimitiveList/<field>`); the list's order in
  the file is sent as `$setElementOrder/<field>` whenever its content or order changes;
- a map whose strategy includes "retainKeys" (a Deployment's strategy, a volume) lists
  its keys in `$retainKeys`, so the server drops the keys the file no longer has even
  when they were never applied (switching a volume from emptyDir to configMap);
- every other list, and every value of another type, is replaced whole when it differs.

Without a schema (a custom resource) every map is diffed key by key and every list is
replaced: a JSON merge patch, as kubectl sends for types it has no struct for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.schema.types import Field, Type

RETAIN_KEYS = "$retainKeys"
SET_ELEMENT_ORDER = "$setElementOrder/"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/"
UNKNOWN = Type(kind="any")


@dataclass(frozen=True)
class Options:
    """Which parts of a diff to keep (upstream's DiffOptions)."""

    changes: bool = True  # additions and changed values
    deletions: bool = True  # what `modified` no longer has
    set_order: bool = True  # $setElementOrder for merged lists
    retain_keys: bool = False  # this map's field has the retainKeys strategy


def three_way_patch(original: Obj | None, modified: Obj, current: Obj,
                    schema: Type | None) -> Obj:
    """The patch that takes `current` to `modified`, deleting what `original` had."""
    schema = schema or UNKNOWN
    delta = diff_maps(current, modified, schema, Options(deletions=False))
    deletions = diff_maps(original or {}, modified, schema, Options(changes=False))
    return merge_patches(deletions, delta, schema)


def field_of(schema: Type, key: str) -> Field:
    """The schema of `key` in a map of type `schema` (unknown keys have no strategy)."""
    if schema.kind == "object" and key in schema.fields:
        return schema.fields[key]
    if schema.kind == "map" and schema.items is not None:
        return Field(type=schema.items)
    return Field(type=UNKNOWN)


def strategies(field: Field) -> tuple[str, bool]:
    """(the strategy besides retainKeys, whether retainKeys is one of them)."""
    parts = [part for part in (field.patch_strategy or "").split(",") if part]
    return next((part for part in parts if part != "retainKeys"), ""), "retainKeys" in parts


def diff_maps(original: Obj, modified: Obj, schema: Type, options: Options) -> Obj:
    patch: Obj = {}
    for key, new in modified.items():
        if key not in original:
            if options.changes:
                patch[key] = new
            continue
        old = original[key]
        if isinstance(old, dict) and isinstance(new, dict):
            _diff_map_field(key, old, new, field_of(schema, key), patch, options)
        elif isinstance(old, list) and isinstance(new, list):
            _diff_list_field(key, old, new, field_of(schema, key), patch, options)
        elif options.changes and _differs(old, new):
            patch[key] = new
    if options.deletions:
        patch.update({key: None for key in original if key not in modified})
    if options.retain_keys:
        kept = sorted(key for key, value in modified.items() if value is not None)
        dropped = any(value is not None and key not in modified
                      for key, value in original.items())
        if kept and (patch or dropped):
            patch[RETAIN_KEYS] = kept
    return patch


def _differs(old: Any, new: Any) -> bool:
    """Two JSON values differ (numbers compare as numbers, as after Go's decoding; a
    boolean is never a number)."""
    if isinstance(old, bool) or isinstance(new, bool):
        return type(old) is not type(new) or old != new
    if isinstance(old, int | float) and isinstance(new, int | float):
        return old != new
    return type(old) is not type(new) or old != new


def _diff_map_field(key: str, old: Obj, new: Obj, field: Field, patch: Obj,
                    options: Options) -> None:
    strategy, retain = strategies(field)
    if strategy == "replace":
        if options.changes and old != new:
            patch[key] = new
        return
    inner = diff_maps(old, new, field.type, replace(options, retain_keys=retain))
    if inner:
        patch[key] = inner


def _diff_list_field(key: str, old: list, new: list, field: Field, patch: Obj,
                     options: Options) -> None:
    strategy, retain = strategies(field)
    if strategy != "merge":
        if options.changes and old != new:
            patch[key] = new
        return
    if not old:
        if new and options.changes:
            patch[key] = new
        return
    if any(isinstance(item, dict) for item in old + new):
        merge_key = field.patch_merge_key or ""
        items_type = field.type.items or UNKNOWN
        changed = _diff_lists_of_maps(old, new, merge_key, items_type,
                                      replace(options, retain_keys=retain))
        if changed:
            patch[key] = changed
        same_order = [item.get(merge_key) for item in old] == [
            item.get(merge_key) for item in new]
        if new and options.set_order and (
                (options.changes and (changed or not same_order))
                or (options.deletions and changed)):
            patch[SET_ELEMENT_ORDER + key] = [{merge_key: item.get(merge_key)} for item in new]
        return
    added = [item for item in _unique(new) if item not in old] if options.changes else []
    gone = [item for item in _unique(old) if item not in new] if options.deletions else []
    if added:
        patch[key] = added
    if gone:
        patch[DELETE_FROM_PRIMITIVE_LIST + key] = gone
    if new and options.set_order and ((options.deletions and gone)
                                      or (options.changes and old != new)):
        patch[SET_ELEMENT_ORDER + key] = new


def _diff_lists_of_maps(old: list, new: list, merge_key: str, items_type: Type,
                        options: Options) -> list:
    """Changed and added items in the file's order, then the deletions."""
    before = {item.get(merge_key): item for item in old if isinstance(item, dict)}
    after = {item.get(merge_key) for item in new if isinstance(item, dict)}
    changed: list = []
    for item in new:
        name = item.get(merge_key)
        if name not in before:
            if options.changes:
                changed.append(item)
            continue
        inner = diff_maps(before[name], item, items_type, options)
        if inner:
            changed.append({**inner, merge_key: name})
    if options.deletions:
        changed += [{merge_key: name, "$patch": "delete"} for name in before
                    if name not in after]
    return changed


def _unique(items: list) -> list:
    seen: list = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def merge_patches(deletions: Obj, delta: Obj, schema: Type) -> Obj:
    """The two diffs as one patch: the delta merged into the deletions."""
    merged = dict(deletions)
    for key, value in delta.items():
        if key not in merged or key.startswith("$"):
            merged[key] = value
        elif isinstance(value, dict) and isinstance(merged[key], dict):
            merged[key] = merge_patches(merged[key], value, field_of(schema, key).type)
        elif isinstance(value, list) and isinstance(merged[key], list):
            merged[key] = _merge_patch_lists(merged[key], value, field_of(schema, key))
        else:
            merged[key] = value
    return merged


def _merge_patch_lists(deleted: list, changed: list, field: Field) -> list:
    merge_key = field.patch_merge_key
    if strategies(field)[0] != "merge":
        return changed
    if not merge_key:  # a set of primitives
        return [*deleted, *(item for item in changed if item not in deleted)]
    merged = list(deleted)
    names = [_name(item, merge_key) for item in merged]
    for item in changed:
        name = _name(item, merge_key)
        if name in names and "$patch" not in merged[names.index(name)]:
            position = names.index(name)
            merged[position] = merge_patches(merged[position], item,
                                             field.type.items or UNKNOWN)
        else:
            merged.append(item)
            names.append(name)
    # The order, as the server will check it against $setElementOrder: the delta's items
    # in the delta's order, the others (deletions last) slotted in where the deletions
    # list had them.
    order = [_name(item, merge_key) for item in changed]
    in_delta = sorted((item for item in merged if _name(item, merge_key) in order),
                      key=lambda item: order.index(_name(item, merge_key)))
    others = [item for item in merged if _name(item, merge_key) not in order]
    others = ([item for item in others if "$patch" not in item]
              + [item for item in others if "$patch" in item])
    return _interleave(others, in_delta, [_name(item, merge_key) for item in deleted],
                       merge_key)


def _name(item: Any, merge_key: str) -> Any:
    return item.get(merge_key) if isinstance(item, dict) else item


def _interleave(left: list, right: list, order: list, merge_key: str) -> list:
    """Both lists, each kept in its own order; an item of `left` goes first only when
    both it and the next of `right` appear in `order` and it comes earlier there."""
    out: list = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            out.append(left[i])
            i += 1
            continue
        if i < len(left):
            a, b = _name(left[i], merge_key), _name(right[j], merge_key)
            if a in order and b in order and order.index(a) < order.index(b):
                out.append(left[i])
                i += 1
                continue
        out.append(right[j])
        j += 1
    return out
