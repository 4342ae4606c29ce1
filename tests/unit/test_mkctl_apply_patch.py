"""The three-way patch `mkctl apply` sends (mkctl/strategic.py), field by field, on the
kinds' schemas: the directives upstream's CreateThreeWayMergePatch writes for each kind of
change. The end-to-end check against the real kubectl is in tests/test_mkctl_write.py."""

from __future__ import annotations

from minikube_py.api.schema.registry import schema_for
from minikube_py.mkctl.commands.apply import LAST_APPLIED, annotated
from minikube_py.mkctl.strategic import three_way_patch

CONFIG_MAP = schema_for("", "v1", "ConfigMap")
POD = schema_for("", "v1", "Pod")
DEPLOYMENT = schema_for("apps", "v1", "Deployment")


def deployment(containers: list[dict], **spec: object) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {**spec, "template": {"spec": {"containers": containers}}}}


def test_an_unchanged_file_sends_nothing_and_server_defaults_stay() -> None:
    applied = deployment([{"name": "a", "image": "x"}])
    live = deployment([{"name": "a", "image": "x", "imagePullPolicy": "IfNotPresent"}],
                      replicas=1)
    assert three_way_patch(applied, applied, live, DEPLOYMENT) == {}


def test_a_reordered_list_with_an_item_removed_and_one_added() -> None:
    before = deployment([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])
    after = deployment([{"name": "c", "image": "z"}, {"name": "a", "image": "x"}])
    patch = three_way_patch(before, after, before, DEPLOYMENT)
    assert patch == {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "z"}, {"name": "b", "$patch": "delete"}],
        "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}]}}}}


def test_a_strategy_whose_type_changes_retains_only_the_keys_in_the_file() -> None:
    before = deployment([], strategy={"type": "RollingUpdate",
                                      "rollingUpdate": {"maxSurge": 1}})
    after = deployment([], strategy={"type": "Recreate"})
    patch = three_way_patch(before, after, before, DEPLOYMENT)
    assert patch["spec"]["strategy"] == {"type": "Recreate", "rollingUpdate": None,
                                         "$retainKeys": ["type"]}


def test_a_removed_finalizer_goes_in_the_parallel_deletion_list() -> None:
    before = {**deployment([]), "metadata": {"name": "web", "finalizers": ["a", "b"]}}
    after = {**deployment([]), "metadata": {"name": "web", "finalizers": ["b"]}}
    patch = three_way_patch(before, after, before, DEPLOYMENT)
    assert patch["metadata"] == {"$deleteFromPrimitiveList/finalizers": ["a"],
                                 "$setElementOrder/finalizers": ["b"]}


def test_a_custom_resource_gets_a_merge_patch_with_lists_replaced() -> None:
    before = {"spec": {"items": [1, 2], "keep": {"a": 1, "b": 2}}}
    after = {"spec": {"items": [2], "keep": {"a": 1}}}
    assert three_way_patch(before, after, before, None) == {
        "spec": {"items": [2], "keep": {"b": None}}}


def _pod_spec(*containers: dict) -> dict:
    return {"spec": {"containers": list(containers)}}


def test_a_key_the_last_apply_set_and_the_file_dropped_is_deleted() -> None:
    original = {"data": {"a": "1", "b": "2"}}
    modified = {"data": {"a": "1"}}
    current = {"data": {"a": "1", "b": "2", "c": "set by someone else"}}
    assert three_way_patch(original, modified, current, CONFIG_MAP) == {"data": {"b": None}}


def test_fields_the_server_defaulted_are_left_alone() -> None:
    modified = _pod_spec({"name": "web", "image": "nginx"})
    current = _pod_spec({"name": "web", "image": "nginx", "imagePullPolicy": "Always",
                         "terminationMessagePath": "/dev/termination-log"})
    assert three_way_patch(modified, modified, current, POD) == {}


def test_containers_are_merged_by_name_and_removed_with_a_delete_directive() -> None:
    original = _pod_spec({"name": "web", "image": "nginx:1.25"}, {"name": "log", "image": "b"})
    modified = _pod_spec({"name": "web", "image": "nginx:1.27"})
    current = _pod_spec({"name": "web", "image": "nginx:1.25", "imagePullPolicy": "Always"},
                        {"name": "log", "image": "b"})
    assert three_way_patch(original, modified, current, POD) == {"spec": {
        "containers": [{"name": "web", "image": "nginx:1.27"},
                       {"name": "log", "$patch": "delete"}],
        "$setElementOrder/containers": [{"name": "web"}]}}


def test_a_list_of_values_is_replaced_whole() -> None:
    modified = {"spec": {"containers": [{"name": "a", "args": ["a", "c"]}]}}
    current = {"spec": {"containers": [{"name": "a", "args": ["a", "b"]}]}}
    assert three_way_patch(modified, modified, current, POD) == {"spec": {
        "containers": [{"name": "a", "args": ["a", "c"]}],
        "$setElementOrder/containers": [{"name": "a"}]}}


def test_the_annotation_holds_the_object_as_compact_sorted_json() -> None:
    obj = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"},
           "data": {"html": "<b>&</b>"}}
    annotation = annotated(obj)["metadata"]["annotations"][LAST_APPLIED]
    assert annotation == ('{"apiVersion":"v1","data":{"html":"\\u003cb\\u003e\\u0026\\u003c/b'
                          '\\u003e"},"kind":"ConfigMap","metadata":{"annotations":{},'
                          '"name":"x"}}\n')
