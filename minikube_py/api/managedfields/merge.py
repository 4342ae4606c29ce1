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

A kind served in several versions (a custom resource) passes a `VersionConverter`: each
manager's set stays in the apiVersion it was written in, and the write is compared (and
the applier's last set pruned) in that version, with the old and new objects converted
to it, as upstream's Updater does. A manager whose version the kind no longer has is
dropped. Without a converter every set is read in the write's own version.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

from minikube_py.api import Obj
from minikube_py.api.jsoncopy import json_copy
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


class MissingVersion(Exception):
    """The kind has no such apiVersion (any more): IsMissingVersionError."""


class VersionConverter(Protocol):
    """The object in another apiVersion of its kind, and that version's schema
    (upstream's merge.Converter with the type converter's models of every version).
    Both raise MissingVersion for a version the kind does not have."""

    def schema(self, api_version: str) -> Type | None: ...

    async def convert(self, obj: Obj, api_version: str) -> Obj: ...


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


async def apply(live: Obj, config: Obj, version: str, managers: ManagedFields, manager: str,
                force: bool, schema: Type | None, ignored: FieldSet,
                converter: VersionConverter | None = None
                ) -> tuple[Obj | None, ManagedFields]:
    """Apply: the new object (None if nothing changed) and the new ownership.

    Raises SchemaError for a configuration that does not fit the schema and Conflicts
    for fields other managers own with other values (unless `force`).
    """
    applied = to_field_set(config, schema).recursive_difference(ignored)
    merged = merge(live, config, schema)
    last = managers.get(manager)
    managers = {**managers, manager: VersionedSet(applied, version, True)}
    if last is not None and not last.fields.empty():
        if converter is None or all(entry.api_version == version
                                    for entry in (last, *managers.values())):
            owned = FieldSet()
            for entry in managers.values():
                owned = owned.union(entry.fields)
            merged = prune(merged, schema, last.fields, owned)
        else:
            merged = await _prune_across_versions(merged, version, managers, last, converter)
    managers, _ = await _update(live, merged, version, schema, ignored, managers, manager,
                                force, converter)
    return (None if merged == live else merged), managers


async def update(live: Obj, new: Obj, version: str, managers: ManagedFields, manager: str,
                 schema: Type | None, ignored: FieldSet,
                 converter: VersionConverter | None = None) -> ManagedFields:
    """Update: the ownership after a write of `new` over `live` by `manager`."""
    managers, comparison = await _update(live, new, version, schema, ignored, managers,
                                         manager, True, converter)
    previous = managers.get(manager)
    fields = (previous.fields if previous else FieldSet()).difference(comparison.removed)
    fields = fields.union(comparison.modified).union(comparison.added)
    fields = fields.recursive_difference(ignored)
    managers = {name: entry for name, entry in managers.items() if name != manager}
    if not fields.empty():
        managers[manager] = VersionedSet(fields, version, False)
    return managers


async def _prune_across_versions(merged: Obj, version: str, managers: ManagedFields,
                                 last: VersionedSet, converter: VersionConverter) -> Obj:
    """Updater.prune when the applier's last set, or another manager's, is of another
    version than this apply: in the last set's version everything it held is removed;
    then in each version managers own fields in (that one first), what they own is put
    back; then what the removal took and the last set did not hold (addBackDanglingItems).
    The result in this apply's version."""
    try:
        last_schema = converter.schema(last.api_version)
        merged_last = await converter.convert(merged, last.api_version)
    except MissingVersion:
        return merged
    at_version: dict[str, FieldSet] = {}
    for entry in managers.values():
        at_version[entry.api_version] = at_version.get(entry.api_version, FieldSet()).union(
            entry.fields)
    pruned = _remove(merged_last, last_schema, last.fields)
    converted = merged_last
    for name in sorted(at_version, key=lambda name: name != last.api_version):
        try:
            schema = converter.schema(name)
            converted = await converter.convert(converted, name)
            pruned = await converter.convert(pruned, name)
        except MissingVersion:
            continue
        removed = to_field_set(converted, schema).difference(
            to_field_set(pruned, schema)).difference(at_version[name])
        pruned = _remove(converted, schema, removed)
    pruned = await converter.convert(pruned, last.api_version)
    dangling = to_field_set(merged_last, last_schema).difference(
        to_field_set(pruned, last_schema)).intersection(last.fields)
    return await converter.convert(_remove(merged_last, last_schema, dangling), version)


def _remove(obj: Obj, schema: Type | None, removed: FieldSet) -> Obj:
    """A copy of `obj` without the fields, items and entries in `removed` (RemoveItems):
    a struct goes only when nothing below it stays."""
    kept = to_field_set(obj, schema).difference(removed)
    return prune(json_copy(obj), schema, removed, kept)


async def _update(live: Obj, new: Obj, version: str, schema: Type | None, ignored: FieldSet,
                  managers: ManagedFields, workflow: str, force: bool,
                  converter: VersionConverter | None) -> tuple[ManagedFields, Comparison]:
    """What every other manager keeps when `workflow` writes `new` over `live`.

    A field of theirs that the write adds or modifies (in their version) is a conflict:
    an error unless `force`, else taken from them. A field the write removed is no one's
    any more.
    """
    comparison = compare(live, new, schema).without(ignored)
    comparisons: dict[str, Comparison | None] = {version: comparison}
    conflicts = {}
    for manager, entry in managers.items():
        if manager == workflow:
            continue
        theirs = await _comparison_in(entry.api_version, comparisons, live, new, ignored,
                                      converter)
        if theirs is None:
            continue
        clash = entry.fields.intersection(theirs.modified.union(theirs.added))
        if not clash.empty():
            conflicts[manager] = clash
    if conflicts and not force:
        raise Conflicts.from_managers(conflicts)
    result: ManagedFields = {}
    for manager, entry in managers.items():
        fields = entry.fields
        if manager != workflow:
            theirs = comparisons.get(entry.api_version, comparison)
            if theirs is None:  # a version the kind no longer has: upstream drops it
                continue
            if manager in conflicts:
                fields = fields.difference(conflicts[manager])
            fields = fields.difference(theirs.removed)
        if not fields.empty():
            result[manager] = dataclasses.replace(entry, fields=fields)
    return result, comparison


async def _comparison_in(api_version: str, comparisons: dict[str, Comparison | None],
                         live: Obj, new: Obj, ignored: FieldSet,
                         converter: VersionConverter | None) -> Comparison | None:
    """The write compared in `api_version` (None: the kind has no such version), kept in
    `comparisons`; without a converter, the write's own comparison."""
    if api_version in comparisons:
        return comparisons[api_version]
    first = next(iter(comparisons.values()))
    if converter is None:
        return first
    try:
        schema = converter.schema(api_version)
        old = await converter.convert(live, api_version) if live else live
        converted = await converter.convert(new, api_version)
    except MissingVersion:
        comparisons[api_version] = None
        return None
    comparisons[api_version] = compare(old, converted, schema).without(ignored)
    return comparisons[api_version]
