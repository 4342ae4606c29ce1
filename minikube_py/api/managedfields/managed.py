"""`metadata.managedFields`: the ownership sets as stored in the object.

Upstream's k8s.io/apimachinery/pkg/util/managedfields/internal (managedfields.go,
buildmanagerinfo.go, stripmeta.go, capmanagers.go, conflict.go). One entry per manager:

    {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1",
     "time": "2026-05-01T10:00:00Z", "fieldsType": "FieldsV1",
     "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"}

Inside, a manager is named by its *identifier*: the entry without time and fields, as
JSON. An applier's identifier leaves the apiVersion out (it stays the same manager when it
applies another version); an updater's keeps it, as does the subresource it wrote through.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from minikube_py.api.managedfields.fieldpath import FieldSet, field_element, path_string
from minikube_py.api.managedfields.merge import Conflicts, ManagedFields, VersionedSet

APPLY = "Apply"
UPDATE = "Update"
FIELDS_V1 = "FieldsV1"

# DefaultMaxUpdateManagers: older update entries are merged into "ancient-changes".
MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"

# stripMetaManager: fields no manager owns, whoever writes them.
STRIP_SET = FieldSet.of(
    (field_element("apiVersion"),),
    (field_element("kind"),),
    (field_element("metadata"),),
    *((field_element("metadata"), field_element(name)) for name in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
        "generation", "managedFields", "resourceVersion")),
)


@dataclass
class Managed:
    """The decoded managedFields: each manager's set, and when each last changed."""

    fields: ManagedFields = field(default_factory=dict)
    times: dict[str, str | None] = field(default_factory=dict)


def manager_identifier(manager: str, operation: str, api_version: str, subresource: str) -> str:
    """BuildManagerIdentifier: the entry without time and fields, as JSON."""
    entry = {"manager": manager or "unknown", "operation": operation}
    if operation == UPDATE and api_version:
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return json.dumps(entry, separators=(",", ":"))


def is_reset(entries: Any) -> bool:
    """isResetManagedFields: `managedFields: [{}]` asks to clear them."""
    return entries == [{}]


def decode(entries: Any) -> Managed:
    """DecodeManagedFields; ValueError if an entry is not one upstream would accept."""
    managed = Managed()
    if entries is None:
        return managed
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"managed fields entry {index} is not an object")
        operation = entry.get("operation")
        if operation not in (APPLY, UPDATE):
            raise ValueError("operation must be `Apply` or `Update`")
        if not entry.get("apiVersion"):
            raise ValueError("apiVersion must not be empty")
        if entry.get("fieldsType") != FIELDS_V1:
            raise ValueError(f"invalid fieldsType in managed fields entry {index}")
        identifier = manager_identifier(str(entry.get("manager", "")), operation,
                                        entry["apiVersion"], entry.get("subresource", ""))
        if identifier in managed.fields:
            raise ValueError(f"duplicate entries for manager {identifier}")
        managed.fields[identifier] = VersionedSet(
            FieldSet.from_fields_v1(entry.get("fieldsV1") or {}), entry["apiVersion"],
            operation == APPLY)
        managed.times[identifier] = entry.get("time")
    return managed


def encode(managed: Managed) -> list[dict[str, Any]]:
    """EncodeObjectManagedFields: one entry per manager, Apply entries first, then by
    time, manager, apiVersion and subresource."""
    entries = []
    for identifier, versioned in managed.fields.items():
        named = json.loads(identifier)
        entry: dict[str, Any] = {"manager": named["manager"], "operation": named["operation"],
                                 "apiVersion": versioned.api_version}
        if managed.times.get(identifier):
            entry["time"] = managed.times[identifier]
        entry["fieldsType"] = FIELDS_V1
        entry["fieldsV1"] = versioned.fields.to_fields_v1()
        if named.get("subresource"):
            entry["subresource"] = named["subresource"]
        entries.append(entry)
    return sorted(entries, key=lambda e: (
        e["operation"], _seconds(e.get("time")), e["manager"], e["apiVersion"],
        e.get("subresource", "")))


def _seconds(time: str | None) -> float:
    if not time:
        return 0
    try:
        return datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0


def strip_meta(managed: Managed, manager: str) -> None:
    """stripMetaManager: a manager never owns apiVersion, kind, or the server-set metadata."""
    versioned = managed.fields.get(manager)
    if versioned is None:
        return
    fields = versioned.fields.difference(STRIP_SET)
    if fields.empty():
        del managed.fields[manager]
    else:
        managed.fields[manager] = VersionedSet(fields, versioned.api_version, versioned.applied)


def cap_update_managers(managed: Managed) -> None:
    """capManagersManager: beyond ten update entries, the oldest are merged, per
    apiVersion, into one entry of the manager "ancient-changes"."""
    updaters = [name for name, versioned in managed.fields.items() if not versioned.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda name: (int(_seconds(managed.times.get(name))), name))
    first_of_version: dict[str, str] = {}
    count = len(updaters)
    for name in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        versioned = managed.fields[name]
        version = versioned.api_version
        bucket = manager_identifier(ANCIENT_CHANGES, UPDATE, version, "")
        if version not in first_of_version:
            first_of_version[version] = name
            continue
        if bucket not in managed.fields:
            managed.fields[bucket] = managed.fields.pop(first_of_version[version])
        merged = versioned.fields.union(managed.fields[bucket].fields)
        managed.fields[bucket] = VersionedSet(merged, version, False)
        del managed.fields[name]
        managed.times[bucket] = managed.times.get(name)
        count -= 1


def print_manager(identifier: str) -> str:
    """How a conflict message names a manager: "kubectl-scale" using apps/v1, or just
    "kubectl" for an applier; with the subresource it wrote through, if any."""
    named = json.loads(identifier)
    text = json.dumps(named["manager"], ensure_ascii=False)
    if named.get("subresource"):
        text += f" with subresource {json.dumps(named['subresource'], ensure_ascii=False)}"
    if named["operation"] == UPDATE:
        text += f" using {named.get('apiVersion', '')}"
    return text


def conflict_message(conflicts: Conflicts) -> str:
    """getConflictMessage: "Apply failed with 1 conflict: conflict with ...: .spec.replicas",
    or several grouped by manager."""
    found = conflicts.conflicts
    if len(found) == 1:
        return (f"Apply failed with 1 conflict: conflict with "
                f"{print_manager(found[0].manager)}: {path_string(found[0].path)}")
    lines = []
    for manager in sorted({conflict.manager for conflict in found}):
        lines.append(f"conflicts with {print_manager(manager)}:")
        lines.extend(f"- {path_string(c.path)}" for c in found if c.manager == manager)
    return f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)


def conflict_causes(conflicts: Conflicts) -> list[dict[str, str]]:
    """One FieldManagerConflict cause per conflicting field (NewConflictError)."""
    return [{"reason": "FieldManagerConflict",
             "message": f"conflict with {print_manager(c.manager)}",
             "field": path_string(c.path)} for c in conflicts.conflicts]
