"""The three-way patch `mkctl apply` sends (mkctl/strategic.py), on a Deployment's
schema: the directives upstream's CreateThreeWayMergePatch writes for each kind of change.
The end-to-end check against the real kubectl is in tests/test_mkctl_write.py."""

from __future__ import annotations

from minikube_py.api.schema.registry import schema_for
from minikube_py.mkctl.strategic import three_way_patch

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
