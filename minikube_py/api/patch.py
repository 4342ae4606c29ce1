"""The three PATCH body types of the API server, as pure functions on JSON dicts.

- `application/json-patch+json`: RFC 6902 operations (`apply_json_patch`),
- `application/merge-patch+json`: RFC 7386 merge patch (`apply_merge_patch`),
- `application/strategic-merge-patch+json`: upstream's strategic merge patch
  (`apply_strategic_merge_patch`, k8s.io/apimachinery/pkg/util/strategicpatch), which is
  what `kubectl apply`, `kubectl patch`, `label`, `annotate`, `scale` and `edit` send.

Strategic merge patch is a merge patch that reads the type's schema: a list whose field
has `patch_strategy` "merge" is merged item by item (by `patch_merge_key`, or as a set of
primitives) instead of being replaced, and the patch may carry directives:

    {"$patch": "replace"}                   in a map: the patch replaces the whole map;
                                            as a list item: the patch replaces the list
    {"$patch": "delete", "name": "x"}       as a list item: remove the item named "x"
    {"$patch": "delete"}                    in a map: empty the map
    "$retainKeys": ["type"]                 drop every key of the map not listed
    "$setElementOrder/containers": [...]    the order of the merged list
    "$deleteFromPrimitiveList/finalizers"   values to remove from a primitive list

None of the functions changes its arguments: each returns a new object.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch
import jsonpointer

from minikube_py.api.schema.types import Field, Type

# Upstream's limit on the operations of one JSON patch (413 above it).
MAX_JSON_PATCH_OPERATIONS = 10000

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
SET_ELEMENT_ORDER = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"

# Upstream's messages for malformed directives (mergepatch.ErrBadPatchFormatFor...).
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"

# The type of a field the schema does not describe: maps merge, lists are replaced.
_UNKNOWN = Type(kind="any")


class PatchError(ValueError):
    """A patch the server cannot apply; the message says why.

    `code` is the HTTP status upstream answers with: 400 Bad Request for a malformed
    document or directive, 422 Unprocessable Entity for a patch that does not fit the
    object (a failed JSON patch `test`, a missing path, a list item without its merge
    key), 413 for a JSON patch with too many operations.
    """

    def __init__(self, message: str, code: int = 422) -> None:
        super().__init__(message)
        self.code = code


JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


def apply_patch(patch_type: str, original: dict, patch: Any, schema: Type | None) -> dict:
    """Apply a PATCH body of the given Content-Type (one of the three above)."""
    if patch_type == JSON_PATCH:
        return apply_json_patch(original, patch)
    if patch_type == MERGE_PATCH:
        return apply_merge_patch(original, patch)
    if patch_type == STRATEGIC_MERGE_PATCH:
        return apply_strategic_merge_patch(original, patch, schema)
    raise PatchError(f"unknown patch type: {patch_type}", 415)


# --- application/json-patch+json (RFC 6902) ------------------------------------------


def apply_json_patch(original: dict, patch: list) -> dict:
    """JSON patch: apply the RFC 6902 operations in order; any failing operation fails all."""
    if not isinstance(patch, list) or not all(isinstance(op, dict) for op in patch):
        raise PatchError("a JSON patch must be a list of operation objects", 400)
    if len(patch) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
            f"got {len(patch)}",
            413,
        )
    result: Any = copy.deepcopy(original)
    for op in patch:
        try:
            result = jsonpatch.JsonPatch([op]).apply(result, in_place=True)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as error:
            raise PatchError(
                f"json patch {op.get('op')} at {_show(op.get('path'))} failed: {error}"
            ) from error
    if not isinstance(result, dict):
        raise PatchError(f"json patch result must be an object, got {_show(result)}")
    return result


# --- application/merge-patch+json (RFC 7386) -----------------------------------------


def apply_merge_patch(original: dict, patch: dict) -> dict:
    """JSON merge patch: null deletes a key, objects merge recursively, the rest replaces."""
    if not isinstance(patch, dict):
        raise PatchError("a merge patch must be a JSON object", 400)
    return _json_merge(copy.deepcopy(original), patch)


def _json_merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _json_merge(result.get(key), value)
    return result


# --- application/strategic-merge-patch+json ------------------------------------------


def apply_strategic_merge_patch(original: dict, patch: dict, schema: Type | None) -> dict:
    """StrategicMergeMapPatch: merge `patch` into `original` as the schema's patch strategies say.

    Without a schema (or below an `any` type) it behaves as a JSON merge patch: maps
    merge and lists are replaced.
    """
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch must be a JSON object", 400)
    return _merge_map(copy.deepcopy(original), copy.deepcopy(patch), schema or _UNKNOWN)


def _merge_map(original: dict, patch: dict, schema: Type) -> dict:
    """mergeMap: merge a patch map into an original map of type `schema`, key by key."""
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == "replace":
            rest = {key: value for key, value in patch.items() if key != DIRECTIVE}
            return _merge_map({}, rest, schema)
        if directive == "delete":
            return {}
        raise PatchError(f"unknown patch type: {_show(directive)} in map: {_show(patch)}")

    patch = dict(patch)
    result = dict(original)
    if RETAIN_KEYS in patch:
        result = _retain_keys(result, patch.pop(RETAIN_KEYS), patch)

    # Lists named by $setElementOrder are merged and sorted first (mergePatchIntoOriginal).
    for key in [key for key in patch if key.startswith(SET_ELEMENT_ORDER)]:
        name = _directive_target(key, SET_ELEMENT_ORDER, BAD_SET_ELEMENT_ORDER)
        order = patch.pop(key)
        changes = patch.pop(name) if patch.get(name) is not None else None
        if name in result or changes is not None:
            result[name] = _merge_in_order(
                result.get(name) or [], changes, order, _field_of(schema, name)
            )

    deletions: dict[str, Any] = {}
    for key, value in patch.items():
        if key.startswith(DELETE_FROM_PRIMITIVE_LIST):
            name = _directive_target(key, DELETE_FROM_PRIMITIVE_LIST, BAD_PRIMITIVE_LIST)
            deletions[name] = value
        elif value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_value(result.get(key), value, _field_of(schema, key))

    for name, values in deletions.items():
        if not isinstance(values, list):
            raise PatchError(BAD_PRIMITIVE_LIST, 400)
        if isinstance(result.get(name), list):
            result[name] = [item for item in result[name] if item not in values]
    return result


def _merge_value(original: Any, patch: Any, field: Field) -> Any:
    """Merge one field: maps merge (unless "replace"), "merge" lists merge, the rest replaces.

    A patch map or list with nothing to merge into is merged into an empty one, which
    drops its nulls and directives.
    """
    strategies = (field.patch_strategy or "").split(",")
    if isinstance(patch, dict):
        base = original if isinstance(original, dict) and "replace" not in strategies else {}
        return _merge_map(base, patch, field.type)
    if isinstance(patch, list) and "merge" in strategies:
        return _merge_list(original if isinstance(original, list) else [], patch, field)
    return patch


def _merge_list(original: list, patch: list, field: Field) -> list:
    """mergeSlice: merge a list with patch strategy "merge", by merge key or as a set."""
    items = original + patch
    if any(isinstance(item, list) for item in items):
        raise PatchError("lists of lists are not supported")
    if not any(isinstance(item, dict) for item in items):
        merged: list = []
        for item in items:
            if item not in merged:
                merged.append(item)
        return _order(merged, patch, original, None)
    if not all(isinstance(item, dict) for item in items):
        raise PatchError(f"list element types are not identical: {_show(items)}")

    merge_key = field.patch_merge_key
    if not merge_key:
        raise PatchError("cannot merge lists of objects without a patch merge key")
    item_type = field.type.items or _UNKNOWN
    kept, updates, replace = list(original), [], False
    for item in patch:
        directive = item.get(DIRECTIVE)
        if DIRECTIVE not in item:
            updates.append(item)
        elif directive == "delete":
            name = _identity(item, merge_key)
            kept = [old for old in kept if _identity(old, merge_key) != name]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(f"unknown patch type: {_show(directive)} in map: {_show(item)}")
    if replace:
        return [_merge_map({}, item, item_type) for item in updates]

    merged = list(kept)
    for item in updates:
        names = [_identity(old, merge_key) for old in merged]
        name = _identity(item, merge_key)
        if name in names:
            position = names.index(name)
            merged[position] = _merge_map(merged[position], item, item_type)
        else:
            merged.append(_merge_map({}, item, item_type))
    return _order(merged, updates, kept, merge_key)


def _merge_in_order(original: Any, patch: Any, order: Any, field: Field) -> list:
    """mergePatchIntoOriginal: merge a list (if the patch has it), then sort it as ordered."""
    if not all(isinstance(value, list) for value in (original, order)):
        raise PatchError(BAD_SET_ELEMENT_ORDER, 400)
    if patch is not None and not isinstance(patch, list):
        raise PatchError(BAD_SET_ELEMENT_ORDER, 400)
    merge_key = field.patch_merge_key
    _check_element_order(patch or [], order, merge_key)
    merged = original if patch is None else _merge_value(original, patch, field)
    return _order(merged, order, original, merge_key)


def _check_element_order(patch: list, order: list, merge_key: str | None) -> None:
    """validatePatchWithSetOrderList: the patch's items appear in `order`, in that order."""
    if not patch or not order:
        return
    names = [_identity(item, merge_key) for item in order]
    position = 0
    for item in patch:
        if isinstance(item, dict) and DIRECTIVE in item:
            continue
        name = _identity(item, merge_key)
        while position < len(names) and names[position] != name:
            position += 1
        if position == len(names):
            raise PatchError(
                f"the order in patch list {_show(patch)} doesn't match "
                f"{SET_ELEMENT_ORDER} list {_show(order)}"
            )
        position += 1


def _order(merged: list, patch: list, server: list, merge_key: str | None) -> list:
    """normalizeElementOrder: items the patch names come in the patch's order; each item
    only the server has keeps its place before the patch items it preceded on the server."""
    patch_names = [_identity(item, merge_key) for item in patch]
    server_names = [_identity(item, merge_key) for item in server]

    def server_rank(item: Any) -> int:
        name = _identity(item, merge_key)
        return server_names.index(name) if name in server_names else len(server_names)

    ours = [item for item in merged if _identity(item, merge_key) in patch_names]
    ours.sort(key=lambda item: patch_names.index(_identity(item, merge_key)))
    theirs = [item for item in merged if _identity(item, merge_key) not in patch_names]
    theirs.sort(key=server_rank)

    result: list = []
    i = j = 0
    while i < len(theirs) and j < len(ours):
        rank = server_rank(ours[j])
        if rank < len(server_names) and server_rank(theirs[i]) < rank:
            result.append(theirs[i])
            i += 1
        else:
            result.append(ours[j])
            j += 1
    return result + theirs[i:] + ours[j:]


def _retain_keys(original: dict, keep: Any, patch: dict) -> dict:
    """applyRetainKeysDirective: keep only the listed keys; the patch may set no others."""
    if not isinstance(keep, list):
        raise PatchError(f"{BAD_RETAIN_KEYS}: {RETAIN_KEYS} must be a list", 400)
    for key, value in patch.items():
        is_directive = key.startswith((SET_ELEMENT_ORDER, DELETE_FROM_PRIMITIVE_LIST))
        if value is not None and not is_directive and key not in keep:
            raise PatchError(
                f"{BAD_RETAIN_KEYS}: the patch sets {_show(key)}, "
                f"which {RETAIN_KEYS} {_show(keep)} does not list",
                400,
            )
    return {key: value for key, value in original.items() if key in keep}


def _field_of(schema: Type, key: str) -> Field:
    """LookupPatchMetadata: the field `key` of an object, or the values of a map."""
    if schema.kind == "object" and key in schema.fields:
        return schema.fields[key]
    if schema.kind == "map" and schema.items is not None:
        return Field(type=schema.items)
    return Field(type=_UNKNOWN)


def _identity(item: Any, merge_key: str | None) -> Any:
    """What names a list item: its merge key's value, or the item itself for primitives."""
    if merge_key is None:
        return item
    if not isinstance(item, dict) or merge_key not in item:
        raise PatchError(f"map: {_show(item)} does not contain declared merge key: {merge_key}")
    return item[merge_key]


def _directive_target(key: str, prefix: str, error: str) -> str:
    """The field a parallel-list directive is about: "$setElementOrder/ports" -> "ports"."""
    head, _, target = key.partition("/")
    if head != prefix or not target:
        raise PatchError(f"{error}: {_show(key)}", 400)
    return target


def _show(value: Any) -> str:
    return json.dumps(value, default=str)
