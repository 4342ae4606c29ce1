"""The informer's local cache: objects by key, plus indexes (client-go's cache.Indexer).

Keys are `namespace/name` (just `name` for cluster-scoped objects), as upstream's
MetaNamespaceKeyFunc. An *index function* maps an object to the index values it is
filed under; `by_index("namespace", "default")` then answers from a dict instead of a
scan. Controllers read only from here ("listers"), never from the API server directly.

Objects in the store are shared: treat them as read-only and deep-copy before changing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from minikube_py.api import Obj

IndexFunc = Callable[[Obj], list[str]]

NAMESPACE_INDEX = "namespace"
NODE_NAME_INDEX = "spec.nodeName"
OWNER_UID_INDEX = "ownerUID"


def object_key(obj: Obj) -> str:
    """MetaNamespaceKeyFunc: `namespace/name`, or `name` for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name', '')}" if namespace else meta.get("name", "")


def split_key(key: str) -> tuple[str, str]:
    """SplitMetaNamespaceKey: (namespace, name); namespace is "" for cluster-scoped keys."""
    namespace, _, name = key.rpartition("/")
    return namespace, name


def index_by_namespace(obj: Obj) -> list[str]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if namespace else []


def index_by_node_name(obj: Obj) -> list[str]:
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


def index_by_owner_uid(obj: Obj) -> list[str]:
    owners = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [owner["uid"] for owner in owners if owner.get("uid")]


STANDARD_INDEXERS: dict[str, IndexFunc] = {
    NAMESPACE_INDEX: index_by_namespace,
    NODE_NAME_INDEX: index_by_node_name,
    OWNER_UID_INDEX: index_by_owner_uid,
}


class Indexer:
    """A key -> object map that keeps every registered index up to date."""

    def __init__(self, indexers: dict[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or STANDARD_INDEXERS)
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        """Register more indexes (allowed at any time; existing objects are indexed)."""
        for name, func in indexers.items():
            if name in self._indexers:
                continue
            self._indexers[name] = func
            self._indices[name] = {}
            for key, obj in self._items.items():
                self._file(name, key, obj)

    def _file(self, index: str, key: str, obj: Obj) -> None:
        for value in self._indexers[index](obj):
            self._indices[index].setdefault(value, set()).add(key)

    def _unfile(self, index: str, key: str, obj: Obj) -> None:
        values = self._indices[index]
        for value in self._indexers[index](obj):
            keys = values.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del values[value]

    def put(self, obj: Obj) -> Obj | None:
        """Add or replace an object; returns the object it replaced, if any."""
        key = object_key(obj)
        old = self._items.get(key)
        for index in self._indexers:
            if old is not None:
                self._unfile(index, key, old)
            self._file(index, key, obj)
        self._items[key] = obj
        return old

    def remove(self, key: str) -> Obj | None:
        old = self._items.pop(key, None)
        if old is not None:
            for index in self._indexers:
                self._unfile(index, key, old)
        return old

    def replace(self, objects: Iterable[Obj]) -> None:
        """Swap the whole content for a fresh list (after a relist)."""
        self._items = {}
        self._indices = {name: {} for name in self._indexers}
        for obj in objects:
            self.put(obj)

    def get(self, key: str) -> Obj | None:
        return self._items.get(key)

    def get_by_name(self, namespace: str, name: str) -> Obj | None:
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def keys(self) -> list[str]:
        return list(self._items)

    def list(self, namespace: str | None = None) -> list[Obj]:
        """Every object, or those of one namespace (through the namespace index)."""
        if namespace is None:
            return list(self._items.values())
        return self.by_index(NAMESPACE_INDEX, namespace)

    def by_index(self, index: str, value: str) -> list[Obj]:
        keys = self._indices[index].get(value, ())
        return [self._items[key] for key in keys]

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items
