"""The three-way patch of `mkctl apply` (commands/apply.py), field by field."""

from __future__ import annotations

from minikube_py.mkctl.commands.apply import LAST_APPLIED, annotated, three_way_patch


def _pod_spec(*containers: dict) -> dict:
    return {"spec": {"containers": list(containers)}}


def test_a_key_the_last_apply_set_and_the_file_dropped_is_deleted() -> None:
    original = {"data": {"a": "1", "b": "2"}}
    modified = {"data": {"a": "1"}}
    current = {"data": {"a": "1", "b": "2", "c": "set by someone else"}}
    assert three_way_patch(original, modified, current) == {"data": {"b": None}}


def test_fields_the_server_defaulted_are_left_alone() -> None:
    modified = _pod_spec({"name": "web", "image": "nginx"})
    current = _pod_spec({"name": "web", "image": "nginx", "imagePullPolicy": "Always",
                         "terminationMessagePath": "/dev/termination-log"})
    assert three_way_patch(modified, modified, current) == {}


def test_containers_are_merged_by_name_and_removed_with_a_delete_directive() -> None:
    original = _pod_spec({"name": "web", "image": "nginx:1.25"}, {"name": "log", "image": "b"})
    modified = _pod_spec({"name": "web", "image": "nginx:1.27"})
    current = _pod_spec({"name": "web", "image": "nginx:1.25", "imagePullPolicy": "Always"},
                        {"name": "log", "image": "b"})
    assert three_way_patch(original, modified, current) == {"spec": {"containers": [
        {"$patch": "delete", "name": "log"}, {"name": "web", "image": "nginx:1.27"}]}}


def test_a_list_of_values_is_replaced_whole() -> None:
    modified = {"spec": {"args": ["a", "c"]}}
    current = {"spec": {"args": ["a", "b"]}}
    assert three_way_patch(modified, modified, current) == {"spec": {"args": ["a", "c"]}}


def test_the_annotation_holds_the_object_as_compact_sorted_json() -> None:
    obj = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"},
           "data": {"html": "<b>&</b>"}}
    annotation = annotated(obj)["metadata"]["annotations"][LAST_APPLIED]
    assert annotation == ('{"apiVersion":"v1","data":{"html":"\\u003cb\\u003e\\u0026\\u003c/b'
                          '\\u003e"},"kind":"ConfigMap","metadata":{"annotations":{},'
                          '"name":"x"}}\n')
