"""Server-side apply's pure logic: field sets in FieldsV1, merging by schema, conflicts,
pruning what a manager stopped applying, and the managedFields entries.

The expected FieldsV1 shapes are upstream's (structured-merge-diff ToFieldSet and
Set.ToJSON, as `kubectl get -o yaml --show-managed-fields` prints them).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from minikube_py.api import Obj
from minikube_py.api.managedfields import Conflicts, FieldManager, SchemaError
from minikube_py.api.managedfields.fieldpath import FieldSet, key_element, path_string
from minikube_py.api.managedfields.managed import (
    Managed,
    cap_update_managers,
    conflict_causes,
    conflict_message,
    decode,
    encode,
    manager_identifier,
)
from minikube_py.api.managedfields.merge import MissingVersion, VersionedSet
from minikube_py.api.managedfields.merge import apply as merge_apply
from minikube_py.api.managedfields.typed import compare, merge, to_field_set
from minikube_py.api.schema import schema_for
from minikube_py.api.schema.types import Field, Type

DEPLOYMENT = schema_for("apps", "v1", "Deployment")
CONFIG_MAP = schema_for("", "v1", "ConfigMap")
SERVICE = schema_for("", "v1", "Service")
STATUS_RESET = {"": FieldSet.of(("f:status",)),
                "status": FieldSet.of(("f:metadata",), ("f:spec",))}
T = TypeVar("T")


def run(call: Coroutine[Any, Any, T]) -> T:
    """A field manager's write, run to its end (it awaits only conversions)."""
    return asyncio.run(call)


def deployment(replicas: int = 2, image: str = "nginx:1.25", labels: Obj | None = None) -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": labels if labels is not None else {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": image,
                                         "ports": [{"containerPort": 80}]}]},
            },
        },
    }


def configmap(data: Obj, labels: Obj | None = None) -> Obj:
    metadata: Obj = {"name": "cfg"}
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def deployments() -> FieldManager:
    return FieldManager(DEPLOYMENT, "apps/v1", STATUS_RESET)


def configmaps() -> FieldManager:
    return FieldManager(CONFIG_MAP, "v1", {})


def entries_of(obj: Obj) -> dict[tuple[str, str], Obj]:
    """managedFields by (manager, operation)."""
    return {(e["manager"], e["operation"]): e for e in obj["metadata"]["managedFields"]}


# --- FieldsV1 --------------------------------------------------------------------------


def test_applied_deployment_owns_its_leaves_list_items_and_atomic_selector() -> None:
    fields = to_field_set(deployment(), DEPLOYMENT).to_fields_v1()

    assert fields == {
        "f:apiVersion": {},
        "f:kind": {},
        "f:metadata": {"f:labels": {"f:app": {}}, "f:name": {}},
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:containers": {'k:{"name":"nginx"}': {
                    ".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {
                        ".": {}, "f:containerPort": {}}},
                }}},
            },
        },
    }


def test_fields_v1_keys_are_sorted_as_upstream_writes_them() -> None:
    fields = to_field_set(configmap({"b": "2", "a": "1"}, {"z": "1"}), CONFIG_MAP)

    assert list(fields.to_fields_v1()) == ["f:apiVersion", "f:data", "f:kind", "f:metadata"]
    assert list(fields.to_fields_v1()["f:data"]) == ["f:a", "f:b"]


def test_set_items_are_owned_by_value_and_empty_maps_as_leaves() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "cfg", "finalizers": ["b.io/x", "a.io/y"], "annotations": {}}}

    fields = to_field_set(obj, CONFIG_MAP).to_fields_v1()

    assert fields["f:metadata"] == {"f:annotations": {}, "f:finalizers": {
        'v:"a.io/y"': {}, 'v:"b.io/x"': {}}, "f:name": {}}


def test_field_sets_round_trip_through_fields_v1() -> None:
    fields = to_field_set(deployment(), DEPLOYMENT)

    assert FieldSet.from_fields_v1(json.loads(json.dumps(fields.to_fields_v1()))) == fields


def test_paths_print_as_in_upstream_conflict_messages() -> None:
    container = key_element({"name": "nginx"})
    port = key_element({"protocol": "TCP", "containerPort": 80})
    path = ("f:spec", "f:template", "f:spec", "f:containers", container, "f:ports", port)

    assert path_string(path) == (
        '.spec.template.spec.containers[name="nginx"].ports[containerPort=80,protocol="TCP"]')
    assert path_string(("f:metadata", "f:finalizers", 'v:"a.io/x"')) == (
        '.metadata.finalizers[="a.io/x"]')


def test_unknown_field_in_an_applied_configuration_is_a_schema_error() -> None:
    config = deployment()
    config["spec"]["replica"] = 3

    with pytest.raises(SchemaError, match=r"^\.spec\.replica: field not declared in schema$"):
        to_field_set(config, DEPLOYMENT)


def test_a_keyed_item_without_its_key_and_no_default_is_a_schema_error() -> None:
    config = deployment()
    config["spec"]["template"]["spec"]["containers"][0].pop("name")

    with pytest.raises(SchemaError, match='element 0: associative list with keys has an '
                                          'element that omits key field "name"'):
        to_field_set(config, DEPLOYMENT)


def test_duplicate_keys_in_an_applied_list_are_a_schema_error() -> None:
    config = deployment()
    containers = config["spec"]["template"]["spec"]["containers"]
    containers.append(copy.deepcopy(containers[0]))

    with pytest.raises(SchemaError, match=r'duplicate entries for key \[name="nginx"\]'):
        to_field_set(config, DEPLOYMENT)


# --- merging by schema -----------------------------------------------------------------


def test_merge_joins_maps_and_keyed_lists_and_replaces_atomic_parts() -> None:
    live = deployment()
    live["metadata"]["labels"]["team"] = "a"
    live["spec"]["selector"] = {"matchLabels": {"app": "web", "old": "x"}}
    live["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "b"})
    config = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"selector": {"matchLabels": {"app": "web"}},
                       "template": {"spec": {"containers": [{"name": "nginx",
                                                             "image": "nginx:1.26"}]}}}}

    merged = merge(live, config, DEPLOYMENT)

    assert merged["metadata"]["labels"] == {"app": "web", "team": "a"}
    assert merged["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    containers = merged["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("nginx", "nginx:1.26"), ("sidecar", "b")]
    assert containers[0]["ports"] == [{"containerPort": 80}]
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"


def test_merge_matches_items_by_defaulted_keys() -> None:
    live = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}]}}
    config = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
              "spec": {"ports": [{"port": 80, "name": "http"}]}}

    merged = merge(live, config, SERVICE)

    assert merged["spec"]["ports"] == [
        {"port": 80, "protocol": "TCP", "targetPort": 8080, "name": "http"}]


def test_compare_reports_added_modified_and_removed_fields() -> None:
    old = configmap({"a": "1", "b": "2"})
    new = configmap({"a": "changed", "c": "3"}, {"app": "x"})

    changes = compare(old, new, CONFIG_MAP)

    assert sorted(changes.added.paths()) == [
        ("f:data", "f:c"), ("f:metadata", "f:labels"), ("f:metadata", "f:labels", "f:app")]
    assert list(changes.modified.paths()) == [("f:data", "f:a")]
    assert list(changes.removed.paths()) == [("f:data", "f:b")]


# --- apply: ownership, conflicts, pruning ----------------------------------------------


def test_first_apply_makes_the_manager_own_what_it_applied() -> None:
    created = run(configmaps().apply(None, configmap({"a": "1"}, {"app": "x"}), "tool", False))

    assert created["data"] == {"a": "1"}
    [entry] = created["metadata"]["managedFields"]
    assert {k: entry[k] for k in ("manager", "operation", "apiVersion", "fieldsType")} == {
        "manager": "tool", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1"}
    assert entry["fieldsV1"] == {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
    assert entry["time"].endswith("Z")
    assert "subresource" not in entry


def test_applying_the_same_configuration_again_changes_nothing() -> None:
    manager = configmaps()
    first = run(manager.apply(None, configmap({"a": "1"}), "tool", False))

    assert run(manager.apply(first, configmap({"a": "1"}), "tool", False)) == first


def test_another_manager_with_a_different_value_conflicts() -> None:
    manager = configmaps()
    live = run(manager.apply(None, configmap({"a": "1", "b": "2"}), "alice", False))

    with pytest.raises(Conflicts) as raised:
        run(manager.apply(live, configmap({"a": "changed", "b": "other"}), "bob", False))

    identifier = manager_identifier("alice", "Apply", "v1", "")
    assert [(c.manager, c.path) for c in raised.value.conflicts] == [
        (identifier, ("f:data", "f:a")), (identifier, ("f:data", "f:b"))]
    assert conflict_message(raised.value) == (
        'Apply failed with 2 conflicts: conflicts with "alice":\n- .data.a\n- .data.b')
    assert conflict_causes(raised.value)[0] == {
        "reason": "FieldManagerConflict", "message": 'conflict with "alice"',
        "field": ".data.a"}


def test_conflict_with_an_updater_names_its_version_and_subresource() -> None:
    manager = deployments()
    live = run(manager.apply(None, deployment(replicas=2), "kubectl", False))
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 5
    run(manager.update(live, scaled, "kubectl", "scale"))

    with pytest.raises(Conflicts) as raised:
        run(manager.apply(scaled, deployment(replicas=3), "kubectl", False))

    assert conflict_message(raised.value) == (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
        "using apps/v1: .spec.replicas")


def test_the_same_value_is_shared_ownership_not_a_conflict() -> None:
    manager = configmaps()
    live = run(manager.apply(None, configmap({"a": "1"}), "alice", False))

    shared = run(manager.apply(live, configmap({"a": "1"}), "bob", False))

    owners = entries_of(shared)
    assert owners[("alice", "Apply")]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert owners[("bob", "Apply")]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_force_takes_the_fields_from_the_other_manager() -> None:
    manager = configmaps()
    live = run(manager.apply(None, configmap({"a": "1", "b": "2"}), "alice", False))

    forced = run(manager.apply(live, configmap({"a": "mine"}), "bob", True))

    assert forced["data"] == {"a": "mine", "b": "2"}
    owners = entries_of(forced)
    assert owners[("alice", "Apply")]["fieldsV1"] == {"f:data": {"f:b": {}}}
    assert owners[("bob", "Apply")]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_a_field_the_manager_stops_applying_is_removed() -> None:
    manager = configmaps()
    live = run(manager.apply(None, configmap({"a": "1", "b": "2"}, {"app": "x", "tier": "y"}),
                         "tool", False))

    applied = run(manager.apply(live, configmap({"a": "1"}, {"app": "x"}), "tool", False))

    assert applied["data"] == {"a": "1"}
    assert applied["metadata"]["labels"] == {"app": "x"}
    assert entries_of(applied)[("tool", "Apply")]["fieldsV1"] == {
        "f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}


def test_a_field_another_manager_also_owns_is_kept_when_one_stops_applying_it() -> None:
    manager = configmaps()
    live = run(manager.apply(None, configmap({"a": "1", "b": "2"}), "alice", False))
    live = run(manager.apply(live, configmap({"b": "2"}), "bob", False))

    applied = run(manager.apply(live, configmap({"a": "1"}), "alice", False))

    assert applied["data"] == {"a": "1", "b": "2"}


def test_a_container_the_manager_stops_applying_is_removed_whole() -> None:
    manager = deployments()
    two = deployment()
    two["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "b"})
    live = run(manager.apply(None, two, "tool", False))

    applied = run(manager.apply(live, deployment(), "tool", False))

    assert [c["name"] for c in applied["spec"]["template"]["spec"]["containers"]] == ["nginx"]


def test_fields_nobody_owns_are_left_alone() -> None:
    manager = configmaps()
    live = run(manager.apply(None, configmap({"a": "1"}), "tool", False))
    live["data"]["untracked"] = "kept"

    applied = run(manager.apply(live, configmap({"a": "2"}), "tool", False))

    assert applied["data"] == {"a": "2", "untracked": "kept"}


def test_apply_to_the_main_resource_does_not_own_status() -> None:
    config = deployment()
    config["status"] = {"replicas": 9}

    created = run(deployments().apply(None, config, "tool", False))

    assert "f:status" not in created["metadata"]["managedFields"][0]["fieldsV1"]


# --- updates: tracked only once an object has managedFields ----------------------------


def test_an_update_of_an_object_never_applied_records_nothing() -> None:
    live = configmap({"a": "1"})
    new = configmap({"a": "2"})

    run(configmaps().update(live, new, "kubectl-edit"))
    run(configmaps().update(None, live, "kubectl-create"))

    assert "managedFields" not in new["metadata"]
    assert "managedFields" not in live["metadata"]


def test_an_update_takes_the_fields_it_changes_from_the_applier() -> None:
    manager = configmaps()
    live = run(manager.apply(None, configmap({"a": "1", "b": "2"}), "tool", False))
    new = copy.deepcopy(live)
    new["data"]["a"] = "edited"
    del new["metadata"]["managedFields"]  # a client that does not send them keeps them

    run(manager.update(live, new, "kubectl-edit"))

    owners = entries_of(new)
    assert owners[("tool", "Apply")]["fieldsV1"] == {"f:data": {"f:b": {}}}
    update = owners[("kubectl-edit", "Update")]
    assert update["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert update["apiVersion"] == "v1"
    assert [e["operation"] for e in new["metadata"]["managedFields"]] == ["Apply", "Update"]


def test_an_update_that_removes_a_field_removes_it_from_every_manager() -> None:
    manager = configmaps()
    live = run(manager.apply(None, configmap({"a": "1", "b": "2"}), "tool", False))
    new = copy.deepcopy(live)
    del new["data"]["b"]

    run(manager.update(live, new, "editor"))

    assert entries_of(new)[("tool", "Apply")]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert ("editor", "Update") not in entries_of(new)


def test_managed_fields_reset_by_writing_one_empty_entry() -> None:
    manager = configmaps()
    live = run(manager.apply(None, configmap({"a": "1"}), "tool", False))
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"] = [{}]

    run(manager.update(live, new, "editor"))

    assert "managedFields" not in new["metadata"]


def test_a_status_write_keeps_the_live_managed_fields_and_owns_only_status() -> None:
    manager = deployments()
    live = run(manager.apply(None, deployment(), "tool", False))
    new = copy.deepcopy(live)
    new["status"] = {"replicas": 2}
    new["metadata"]["managedFields"] = [{}]

    run(manager.update(live, new, "controller", "status"))

    update = entries_of(new)[("controller", "Update")]
    assert update["fieldsV1"] == {"f:status": {".": {}, "f:replicas": {}}}
    assert update["subresource"] == "status"


# --- the managedFields entries ---------------------------------------------------------


def test_entries_decode_and_encode_back_unchanged() -> None:
    stored = [
        {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1",
         "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
         "time": "2026-01-02T00:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:paused": {}}}, "subresource": "scale"},
    ]

    assert encode(decode(stored)) == stored


@pytest.mark.parametrize("entries", [
    [{"manager": "a", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}],
    [{"manager": "a", "operation": "Apply", "fieldsType": "FieldsV1"}],
    [{"manager": "a", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV2"}],
    [{"manager": "a", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
      "fieldsV1": {"x:y": {}}}],
])
def test_entries_upstream_would_refuse_do_not_decode(entries: list[Obj]) -> None:
    with pytest.raises(ValueError):
        decode(entries)


def test_more_than_ten_updaters_merge_the_oldest_into_ancient_changes() -> None:
    managed = Managed()
    for number in range(12):
        name = manager_identifier(f"m{number:02}", "Update", "v1", "")
        managed.fields[name] = VersionedSet(FieldSet.of(("f:data", f"f:k{number}")), "v1",
                                            False)
        managed.times[name] = f"2026-01-01T00:00:{number:02}Z"

    cap_update_managers(managed)

    managers = [json.loads(name)["manager"] for name in managed.fields]
    assert len(managers) == 10
    assert "ancient-changes" in managers and "m02" not in managers and "m03" in managers
    bucket = managed.fields[manager_identifier("ancient-changes", "Update", "v1", "")]
    assert bucket.fields == FieldSet.of(("f:data", "f:k0"), ("f:data", "f:k1"),
                                        ("f:data", "f:k2"))


class RenamingVersions:
    """Two versions of a CronTab-like kind: v1 keeps `spec.hostPort`, v2 the same value
    as `spec.address`; v0 is a version the kind no longer has."""

    TYPES = {version: Type(kind="object", fields={
        "apiVersion": Field(Type(kind="string")), "kind": Field(Type(kind="string")),
        "spec": Field(Type(kind="object", fields={name: Field(Type(kind="string"))}))})
        for version, name in (("g/v1", "hostPort"), ("g/v2", "address"))}

    def schema(self, api_version: str) -> Type:
        if api_version not in self.TYPES:
            raise MissingVersion(api_version)
        return self.TYPES[api_version]

    async def convert(self, obj: Obj, api_version: str) -> Obj:
        self.schema(api_version)
        spec = dict(obj.get("spec") or {})
        if api_version == "g/v2" and "hostPort" in spec:
            spec["address"] = spec.pop("hostPort")
        if api_version == "g/v1" and "address" in spec:
            spec["hostPort"] = spec.pop("address")
        return {**obj, "apiVersion": api_version, "spec": spec}


def test_a_write_is_compared_in_each_managers_version_and_unknown_versions_are_dropped(
        ) -> None:
    versions = RenamingVersions()
    live = {"apiVersion": "g/v2", "kind": "K", "spec": {"address": "a:1"}}
    owners = {"v1-owner": VersionedSet(FieldSet.of(("f:spec", "f:hostPort")), "g/v1", True),
              "gone": VersionedSet(FieldSet.of(("f:spec", "f:other")), "g/v0", True)}
    config = {"apiVersion": "g/v2", "kind": "K", "spec": {"address": "b:2"}}
    with pytest.raises(Conflicts) as refused:
        run(merge_apply(live, config, "g/v2", owners, "v2-applier", False,
                        versions.TYPES["g/v2"], FieldSet(), versions))
    assert [(conflict.manager, path_string(conflict.path))
            for conflict in refused.value.conflicts] == [("v1-owner", ".spec.hostPort")]
    new, after = run(merge_apply(live, config, "g/v2", owners, "v2-applier", True,
                                 versions.TYPES["g/v2"], FieldSet(), versions))
    assert new == config
    assert sorted(after) == ["v2-applier"]  # v1-owner lost its field; v0 is no more
