"""Unknown fields dropped from an object, in place, and their paths reported
(pruning/algorithm.go's PruneWithOptions with ReturnPruned): upstream warns about them
for fieldValidation=Warn and rejects them for Strict as `unknown field "spec.foo"`."""

from __future__ import annotations

from typing import Any

from .compiled import Node

# the fields of metav1.ObjectMeta: any other key of an embedded resource's metadata goes
OBJECT_META_FIELDS = frozenset((
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields"))
_META_FIELDS = ("apiVersion", "kind", "metadata")


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def prune(value: Any, node: Node | None, is_resource_root: bool = True) -> list[str]:
    """Drop every field the schema does not know; return their paths, sorted."""
    pruned: list[str] = []
    _prune(value, node, "", pruned, is_resource_root)
    return sorted(pruned)


def unknown_field_errors(pruned: list[str]) -> list[str]:
    """The Strict field validation errors (and Warn warnings) for pruned paths."""
    return [f'unknown field "{path}"' for path in pruned]


def _prune_metadata(value: Any, path: str, pruned: list[str]) -> None:
    if isinstance(value, dict):
        for key in [k for k in value if k not in OBJECT_META_FIELDS]:
            del value[key]
            pruned.append(_child(path, key))


def _prune(value: Any, node: Node | None, path: str, pruned: list[str],
           embedded: bool = False) -> None:
    embedded = embedded or (node is not None and node.embedded)
    if node is not None and node.preserve_unknown:
        _skip_prune(value, node, path, pruned, embedded)
        return
    if isinstance(value, dict):
        if node is None:
            pruned.extend(_child(path, key) for key in value)
            value.clear()
            return
        for key in list(value):
            item = value[key]
            if embedded and key in _META_FIELDS:
                if key == "metadata":
                    _prune_metadata(item, _child(path, key), pruned)
                sub = node.properties.get(key)
                if sub is not None and key != "metadata":
                    _prune(item, sub, _child(path, key), pruned)
                continue
            sub = node.properties.get(key) or node.additional
            if sub is not None:
                _prune(item, sub, _child(path, key), pruned)
            elif node.prunes:
                del value[key]
                pruned.append(_child(path, key))
    elif isinstance(value, list):
        items = node.items if node is not None else None
        for index, item in enumerate(value):
            _prune(item, items, f"{path}[{index}]", pruned)


def _skip_prune(value: Any, node: Node, path: str, pruned: list[str], embedded: bool) -> None:
    """Under x-kubernetes-preserve-unknown-fields: keep unknown fields, prune known ones."""
    if isinstance(value, dict):
        for key, item in value.items():
            if embedded and key in _META_FIELDS:
                if key == "metadata":
                    _prune_metadata(item, _child(path, key), pruned)
                continue
            sub = node.properties.get(key) or node.additional
            if sub is not None:
                _prune(item, sub, _child(path, key), pruned)
    elif isinstance(value, list) and node.items is not None:
        items = node.items
        for index, item in enumerate(value):
            _skip_prune(item, items, f"{path}[{index}]", pruned, items.embedded)
