"""The field manager of one kind: server-side apply, and who-changed-what on other writes.

Upstream's managedfields.FieldManager with its default wrappers (versionCheck, capManagers,
buildManagerInfo, managedFieldsUpdater, stripMeta around the structured merge). The API
server calls it on every write of the kind:

    apply(live, config, manager, force, subresource)    PATCH application/apply-patch+yaml
    update(live, new, manager, subresource)             create, PUT, other patches, /scale

One deliberate difference from upstream: `update` records nothing for an object that has
no managedFields yet. Upstream tracks every object from its creation; here tracking starts
with the first apply, so the hot create/update path of objects never applied stays as
cheap as before (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from minikube_py.api import Obj, meta
from minikube_py.api.jsoncopy import json_copy
from minikube_py.api.managedfields import managed as entries
from minikube_py.api.managedfields import merge
from minikube_py.api.managedfields.fieldpath import FieldSet
from minikube_py.api.managedfields.managed import APPLY, UPDATE, Managed
from minikube_py.api.managedfields.merge import VersionedSet
from minikube_py.api.schema.types import Type

# managedFieldsUpdater's name for the write in progress, merged into its manager after.
CURRENT_OPERATION = "current-operation"


class FieldManager:
    """Field ownership for one kind at one apiVersion.

    `reset_fields` maps a subresource ("" for the main resource) to the fields that its
    writes reset (the strategy's GetResetFields); nobody owns those through it. Nobody
    owns `unowned` through any write: fields the server keeps for itself. `schema` may
    be a function that builds the kind's Type, called on the first write that needs it.
    """

    def __init__(self, schema: Type | Callable[[], Type] | None, api_version: str,
                 reset_fields: Mapping[str, FieldSet], unowned: FieldSet | None = None,
                 converter: merge.VersionConverter | None = None) -> None:
        self._schema = schema
        # a kind served in several versions: other managers' sets are read in theirs
        self.converter = converter
        self.api_version = api_version
        self.reset_fields = reset_fields
        self.unowned = unowned or FieldSet()
        self._ignored_by: dict[str, FieldSet] = {}

    @property
    def schema(self) -> Type | None:
        if callable(self._schema):
            self._schema = self._schema()
        return self._schema

    def _ignored(self, subresource: str) -> FieldSet:
        ignored = self._ignored_by.get(subresource)
        if ignored is None:
            reset = self.reset_fields.get(subresource) or FieldSet()
            ignored = self._ignored_by[subresource] = reset.union(self.unowned)
        return ignored

    async def apply(self, live: Obj | None, config: Obj, manager: str, force: bool,
                    subresource: str = "") -> Obj:
        """Apply: `config` merged into `live` (None: create), with managedFields updated.

        Raises merge.Conflicts and typed.SchemaError; the caller has checked that config
        names this kind and carries no managedFields.
        """
        live_obj = _without_managed_fields(live) if live is not None else {}
        try:
            managed = entries.decode(((live or {}).get("metadata") or {}).get("managedFields"))
        except ValueError:
            managed = Managed()
        identifier = entries.manager_identifier(manager, APPLY, self.api_version, subresource)
        new, fields = await merge.apply(live_obj, config, self.api_version, managed.fields,
                                        identifier, force, self.schema,
                                        self._ignored(subresource), self.converter)
        managed.fields = fields
        if new is None:
            new = json_copy(live_obj)
        else:
            managed.times[identifier] = meta.rfc3339(meta.now())
        entries.strip_meta(managed, identifier)
        _set_managed_fields(new, managed)
        return new

    async def update(self, live: Obj | None, new: Obj, manager: str, subresource: str = ""
                     ) -> None:
        """Update: record in `new`'s managedFields what this write changed, and by whom.

        The base is the managedFields the client sent, if any (a client may edit them;
        `[{}]` clears them), else the live object's; writes through a subresource always
        keep the live object's. Without a base the object stays untracked.
        """
        metadata = new.get("metadata")
        if not isinstance(metadata, dict):
            return
        sent = metadata.pop("managedFields", None)
        live_entries = ((live or {}).get("metadata") or {}).get("managedFields")
        if not sent and not live_entries:
            return
        managed = self._base(sent, live_entries, subresource)
        if not managed.fields:
            return
        identifier = entries.manager_identifier(
            manager or "unknown", UPDATE, self.api_version, subresource)
        fields = await merge.update(_without_managed_fields(live) if live else {}, new,
                                    self.api_version, managed.fields, CURRENT_OPERATION,
                                    self.schema, self._ignored(subresource), self.converter)
        managed.fields = fields
        entries.strip_meta(managed, CURRENT_OPERATION)
        taken = fields.pop(CURRENT_OPERATION, None)
        if taken is not None:
            previous = fields.get(identifier)
            owned = taken.fields.union(previous.fields) if previous else taken.fields
            fields[identifier] = VersionedSet(owned, self.api_version, False)
            managed.times[identifier] = meta.rfc3339(meta.now())
        entries.cap_update_managers(managed)
        _set_managed_fields(new, managed)

    @staticmethod
    def _base(sent: Any, live_entries: Any, subresource: str) -> Managed:
        """decodeLiveOrNew: which managedFields the write starts from."""
        if not subresource and entries.is_reset(sent):
            return Managed()
        if not subresource and sent:
            try:
                managed = entries.decode(sent)
            except ValueError:
                managed = Managed()
            if managed.fields:
                return managed
        try:
            return entries.decode(live_entries)
        except ValueError:
            return Managed()


def _without_managed_fields(obj: Obj) -> Obj:
    """A shallow copy of `obj` whose metadata lacks managedFields."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or "managedFields" not in metadata:
        return obj
    return {**obj, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}


def _set_managed_fields(obj: Obj, managed: Managed) -> None:
    """Write the entries as the last field of metadata (where upstream's JSON has it)."""
    metadata = meta.metadata(obj)
    metadata.pop("managedFields", None)
    if managed.fields:
        metadata["managedFields"] = entries.encode(managed)
