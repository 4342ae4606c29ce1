"""controllers/history.py: the snapshots and names of ControllerRevisions (pure parts)."""

from __future__ import annotations

from minikube_py.controllers import history

OWNER = {"apiVersion": "apps/v1", "kind": "StatefulSet",
         "metadata": {"name": "web", "namespace": "ns", "uid": "u-1",
                      "annotations": {"kubernetes.io/change-cause": "image 1.28"}},
         "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def test_a_snapshot_replaces_the_template_and_sorts_its_keys_as_go_does() -> None:
    data = history.snapshot(OWNER)
    assert data == {"spec": {"template": {**OWNER["spec"]["template"], "$patch": "replace"}}}
    assert list(data["spec"]["template"]) == ["$patch", "metadata", "spec"]
    assert history.template_of({"data": data}) == OWNER["spec"]["template"]
    assert "$patch" not in OWNER["spec"]["template"]  # the owner is left as it was


def test_go_json_is_compact_sorted_and_escapes_html() -> None:
    assert history.go_json({"b": "<a&b>", "a": [1, {"d": 1, "c": 2}]}) == (
        b'{"a":[1,{"c":2,"d":1}],"b":"\\u003ca\\u0026b\\u003e"}')


def test_the_hash_follows_the_data_and_the_collision_count() -> None:
    data = history.snapshot(OWNER)
    assert history.hash_data(data, 0) == history.hash_data(history.snapshot(OWNER), 0)
    assert history.hash_data(data, 0) != history.hash_data(data, 1)
    assert history.hash_data(data, None) != history.hash_data({"spec": {}}, None)


def test_a_new_revision_is_owned_labelled_annotated_and_named_by_its_hash() -> None:
    revision = history.new_revision(OWNER, 4, "abc12", history.HASH_LABEL)
    assert revision["metadata"]["name"] == "web-abc12"
    assert revision["metadata"]["labels"] == {"app": "web", history.HASH_LABEL: "abc12"}
    assert revision["metadata"]["annotations"] == OWNER["metadata"]["annotations"]
    assert revision["metadata"]["ownerReferences"] == [{
        "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u-1",
        "controller": True, "blockOwnerDeletion": True}]
    assert revision["revision"] == 4 and revision["data"] == history.snapshot(OWNER)
    assert history.revision_name("x" * 300, "h") == "x" * 223 + "-h"


def test_revisions_sort_by_number_then_age_then_name() -> None:
    def revision(name: str, number: int, created: str) -> dict[str, object]:
        return {"metadata": {"name": name, "creationTimestamp": created}, "revision": number}

    revisions = [revision("c", 2, "2026-01-01T00:00:00Z"), revision("b", 1, "2026-01-02T00:00:00Z"),
                 revision("a", 1, "2026-01-02T00:00:00Z"), revision("d", 1, "2026-01-01T00:00:00Z")]
    assert [r["metadata"]["name"] for r in history.sort_revisions(revisions)] == [
        "d", "a", "b", "c"]
    assert history.next_number(revisions) == 3 and history.next_number([]) == 1
