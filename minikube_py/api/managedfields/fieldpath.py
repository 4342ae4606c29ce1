"""Field sets: which fields of an object one manager owns (structured-merge-diff's fieldpath).

A *path* names one field of an object, one step (a *path element*) at a time. Elements are
written as upstream writes them in `metadata.managedFields[].fieldsV1`:

    "f:spec"                            the field `spec` of an object, or the key of a map
    'k:{"name":"nginx"}'                the item of a keyed list (listType=map) whose keys
                                        have these values (JSON, keys sorted)
    'v:"example.com/finalizer"'         the item of a set (listType=set) with this value

so `("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"nginx"}', "f:image")`
is the image of the container named nginx. A `FieldSet` is a tree of such paths. A node
can be in the set itself (a *member*) and also have members below it: FieldsV1 writes the
first as `"f:x": {}` and marks the second case with `".": {}`:

    {"f:metadata": {"f:labels": {"f:app": {}}},           metadata.labels.app is owned;
     "f:spec": {"f:containers": {                          the nginx item itself and its
         'k:{"name":"nginx"}': {".": {}, "f:image": {}}}}}  image are owned
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

Path = tuple[str, ...]

FIELD, KEY, VALUE, INDEX = "f:", "k:", "v:", "i:"
_KINDS = (FIELD, KEY, VALUE, INDEX)


def field_element(name: str) -> str:
    """The element of a field of an object or a key of a map: "f:replicas"."""
    return FIELD + name


def key_element(keys: dict[str, Any]) -> str:
    """The element of a keyed list's item: 'k:{"containerPort":80,"protocol":"TCP"}'."""
    return KEY + _json(dict(sorted(keys.items())))


def value_element(value: Any) -> str:
    """The element of a set's item: 'v:"example.com/finalizer"'."""
    return VALUE + _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def element_string(element: str) -> str:
    """How upstream prints one element in messages: .image, [name="nginx"], [="x"]."""
    kind, body = element[:2], element[2:]
    if kind == FIELD:
        return "." + body
    if kind == KEY:
        keys = json.loads(body)
        return "[" + ",".join(f"{name}={_go_string(value)}" for name, value in keys.items()) + "]"
    if kind == VALUE:
        return f"[={_go_string(json.loads(body))}]"
    return f"[{body}]"


def path_string(path: Path) -> str:
    """A path as upstream prints it: .spec.template.spec.containers[name="nginx"].image"""
    return "".join(element_string(element) for element in path)


def _go_string(value: Any) -> str:
    """value.ToString: strings quoted, numbers and booleans bare, null as null."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def element_order(element: str) -> tuple:
    """PathElement.Compare: fields by name, then keyed items by their keys, then set items
    by value; this is the order of FieldsV1 objects."""
    kind, body = element[:2], element[2:]
    if kind == FIELD:
        return (0, body)
    if kind == KEY:
        return (1, [(name, _value_order(value)) for name, value in json.loads(body).items()])
    if kind == VALUE:
        return (2, _value_order(json.loads(body)))
    return (3, int(body) if body.isdigit() else 0)


def _value_order(value: Any) -> tuple:
    """value.Compare: numbers, then strings, booleans, lists, maps, null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, _json(value))
    if isinstance(value, dict):
        return (4, _json(value))
    return (5, 0)


class FieldSet:
    """A set of paths, as a tree: `members` end here, `children` go on below.

    Invariant: no child is empty. Operations return new sets and never change their
    arguments.
    """

    __slots__ = ("children", "members")

    def __init__(self) -> None:
        self.members: set[str] = set()
        self.children: dict[str, FieldSet] = {}

    @classmethod
    def of(cls, *paths: Path) -> FieldSet:
        """A set of the given paths."""
        result = cls()
        for path in paths:
            result.insert(path)
        return result

    def insert(self, path: Path) -> None:
        """Add one path (in place; for building a set)."""
        node = self
        for element in path[:-1]:
            node = node.children.setdefault(element, FieldSet())
        node.members.add(path[-1])

    def has(self, path: Path) -> bool:
        node: FieldSet | None = self
        for element in path[:-1]:
            node = node.children.get(element)
            if node is None:
                return False
        return path[-1] in node.members

    def child(self, element: str) -> FieldSet:
        """The paths below `element`, without it (empty when there are none)."""
        return self.children.get(element) or _EMPTY

    def empty(self) -> bool:
        return not self.members and not self.children

    def union(self, other: FieldSet) -> FieldSet:
        result = FieldSet()
        result.members = self.members | other.members
        for element in self.children.keys() | other.children.keys():
            result.children[element] = self.child(element).union(other.child(element))
        return result

    def intersection(self, other: FieldSet) -> FieldSet:
        result = FieldSet()
        result.members = self.members & other.members
        for element in self.children.keys() & other.children.keys():
            both = self.children[element].intersection(other.children[element])
            if not both.empty():
                result.children[element] = both
        return result

    def difference(self, other: FieldSet) -> FieldSet:
        """The paths of this set that are not in `other` (exactly those paths)."""
        result = FieldSet()
        result.members = self.members - other.members
        for element, below in self.children.items():
            rest = below.difference(other.child(element))
            if not rest.empty():
                result.children[element] = rest
        return result

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """The paths of this set that are neither in `other` nor below one of its members."""
        result = FieldSet()
        result.members = self.members - other.members
        for element, below in self.children.items():
            if element in other.members:
                continue
            rest = below.recursive_difference(other.child(element))
            if not rest.empty():
                result.children[element] = rest
        return result

    def paths(self) -> Iterator[Path]:
        """Every path of the set, in FieldsV1 order (a node before the paths below it)."""
        for element in sorted(self.members | self.children.keys(), key=element_order):
            if element in self.members:
                yield (element,)
            if element in self.children:
                for below in self.children[element].paths():
                    yield (element, *below)

    def to_fields_v1(self) -> dict[str, Any]:
        """The set as FieldsV1 JSON, in upstream's order."""
        out: dict[str, Any] = {}
        for element in sorted(self.members | self.children.keys(), key=element_order):
            below = self.children.get(element)
            if below is None:
                out[element] = {}
            elif element in self.members:
                out[element] = {".": {}, **below.to_fields_v1()}
            else:
                out[element] = below.to_fields_v1()
        return out

    @classmethod
    def from_fields_v1(cls, data: Any) -> FieldSet:
        """Read FieldsV1 JSON; ValueError if it is not FieldsV1."""
        if not isinstance(data, dict):
            raise ValueError(f"FieldsV1 must be an object, got {_json(data)}")
        result = cls()
        for element, below in data.items():
            if element == ".":
                continue
            if element[:2] not in _KINDS:
                raise ValueError(f"unknown path element {element!r}")
            if not isinstance(below, dict):
                raise ValueError(f"the value of {element!r} must be an object")
            if not below or "." in below:
                result.members.add(element)
            rest = cls.from_fields_v1(below)
            if not rest.empty():
                result.children[element] = rest
        return result

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSet):
            return NotImplemented
        return self.members == other.members and self.children == other.children

    def __repr__(self) -> str:
        return f"FieldSet({self.to_fields_v1()!r})"


_EMPTY = FieldSet()
