"""Apply and update with field ownership: structured-merge-diff's merge.Updater.

Every manager owns a set of fields (`ManagedFields`: manager -> `VersionedSet`).

    apply(live, config, manager):   config's fields become the manager's whole set;
        merge config into live -> prune what the manager applied last time and nobody
        owns any more -> compare live with the result: a field another manager owns
        that this apply adds or changes is a *conflict* (refused unless forced; forced,
        the other manager loses it).
    update(live, new, manager):     a write that is not an apply: the manager gains
        the fields it added or changed, and the others lose them (never a conflict).

In both, a field the write removed is removed from every set. Fields in `ignored`
(the strategy's reset fields: status on the main resource, everything else on /status)
are neither owned nor compared.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from minikube_py.api import Obj
from minikube_py.api.managedfields.fieldpath import FieldSet, Path
from minikube_py.api.managedfields.typed import Comparison, compare, merge, prune, to_field_set
from minikube_py.api.schema.types import Type


@dataclass(frozen=True)
class VersionedSet:
    """The fields one manager owns, the apiVersion they were written in, and whether they
    came from an apply (its set is replaced on each apply) or from updates."""

    fields: FieldSet
    api_version: str
    applied: bool


ManagedFields = dict[str, VersionedSet]


@dataclass(frozen=True)
class Conflict:
    """A field the applier would change that `manager` owns."""

    manager: str
    path: Path


class Conflicts(Exception):
    """The conflicts that refused an apply, by manager identifier, then path."""

    def __init__(self, conflicts: list[Conflict]) -> None:
        super().__init__(f"{len(conflicts)} conflict(s)")
        self.conflicts = conflicts

    @classmethod
    def from_managers(cls, sets: dict[str, FieldSet]) -> Conflicts:
        return cls([Conflict(manager, path)
                    for manager in sorted(sets) for path in sets[manager].paths()])


def apply(live: Obj, config: Obj, version: str, managers: ManagedFields, manager: str,
          force: bool, schema: Type | None, ignored: FieldSet) -> tuple[Obj | None,
                                                                        ManagedFields]:
    """Apply: the new object (None if nothing changed) and the new ownership.

    Raises SchemaError for a configuration that does not fit the schema and Conflicts
    for fields other managers own with other values (unless `force`).
    """
    applied = to_field_set(config, schema).recursive_difference(ignored)
    merged = merge(live, config, schema)
    last = managers.get(manager)
    managers = {**managers, manager: VersionedSet(applied, version, True)}
    if last is not None and not last.fields.empty():
        owned = FieldSet()
        for entry in managers.values():
            owned = owned.union(entry.fields)
        merged = prune(merged, schema, last.fields, owned)
    managers, _ = _update(live, merged, schema, ignored, managers, manager, force)
    return (None if merged == live else merged), managers


def update(live: Obj, new: Obj, version: str, managers: ManagedFields, manager: str,
           schema: Type | None, ignored: FieldSet) -> ManagedFields:
    """Update: the ownership after a write of `new` over `live` by `manager`."""
    managers, comparison = _update(live, new, schema, ignored, managers, manager, force=True)
    previous = managers.get(manager)
    fields = (previous.fields if previous else FieldSet()).difference(comparison.removed)
    fields = fields.union(comparison.modified).union(comparison.added)
    fields = fields.recursive_difference(ignored)
    managers = {name: entry for name, entry in managers.items() if name != manager}
    if not fields.empty():
        managers[manager] = VersionedSet(fields, version, False)
    return managers


def _update(live: Obj, new: Obj, schema: Type | None, ignored: FieldSet,
            managers: ManagedFields, workflow: str, force: bool
            ) -> tuple[ManagedFields, Comparison]:
    """What every other manager keeps when `workflow` writes `new` over `live`.

    A field of theirs that the write adds or modifies is a conflict: an error unless
    `force`, else taken from them. A field the write removed is no one's any more.
    """
    comparison = compare(live, new, schema).without(ignored)
    changed = comparison.modified.union(comparison.added)
    conflicts = {}
    for manager, entry in managers.items():
        if manager != workflow:
            clash = entry.fields.intersection(changed)
            if not clash.empty():
                conflicts[manager] = clash
    if conflicts and not force:
        raise Conflicts.from_managers(conflicts)
    result: ManagedFields = {}
    for manager, entry in managers.items():
        fields = entry.fields
        if manager != workflow:
            if manager in conflicts:
                fields = fields.difference(conflicts[manager])
            fields = fields.difference(comparison.removed)
        if not fields.empty():
            result[manager] = dataclasses.replace(entry, fields=fields)
    return result, comparison
