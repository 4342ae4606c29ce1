"""Specification of the three PATCH types: JSON patch, JSON merge patch, strategic merge patch."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from minikube_py.api.patch import (
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from minikube_py.api.schema.types import Field, Type

# --- hand-built schemas, with upstream's patch strategies -------------------------------


def _obj(**fields: Field | Type) -> Type:
    """An object type; a bare Type stands for a Field without patch strategy."""
    return Type(
        "object",
        fields={k: v if isinstance(v, Field) else Field(v) for k, v in fields.items()},
    )


def _list(items: Type, strategy: str | None = None, key: str | None = None) -> Field:
    return Field(Type("array", items=items), patch_strategy=strategy, patch_merge_key=key)


STRING = Type("string")
INTEGER = Type("integer")
STRING_MAP = Type("map", items=STRING)

OBJECT_META = _obj(
    name=STRING,
    namespace=STRING,
    labels=STRING_MAP,
    annotations=STRING_MAP,
    finalizers=_list(STRING, "merge"),
)
CONTAINER = _obj(
    name=STRING,
    image=STRING,
    args=_list(STRING),
    ports=_list(
        _obj(containerPort=INTEGER, name=STRING, protocol=STRING), "merge", "containerPort"
    ),
    env=_list(_obj(name=STRING, value=STRING), "merge", "name"),
    volumeMounts=_list(_obj(name=STRING, mountPath=STRING), "merge", "mountPath"),
    resources=Type("any"),
)
VOLUME = _obj(
    name=STRING,
    emptyDir=_obj(medium=STRING),
    configMap=_obj(name=STRING),
)
TOLERATION = _obj(key=STRING, operator=STRING, value=STRING, effect=STRING)
POD_SPEC = _obj(
    containers=_list(CONTAINER, "merge", "name"),
    volumes=_list(VOLUME, "merge,retainKeys", "name"),
    tolerations=_list(TOLERATION),
    nodeSelector=STRING_MAP,
)
POD = _obj(apiVersion=STRING, kind=STRING, metadata=OBJECT_META, spec=POD_SPEC)

DEPLOYMENT_STRATEGY = _obj(
    type=STRING,
    rollingUpdate=_obj(maxSurge=Type("int-or-string"), maxUnavailable=Type("int-or-string")),
)
DEPLOYMENT = _obj(
    apiVersion=STRING,
    kind=STRING,
    metadata=OBJECT_META,
    spec=_obj(
        replicas=INTEGER,
        strategy=Field(DEPLOYMENT_STRATEGY, patch_strategy="retainKeys"),
        template=_obj(metadata=OBJECT_META, spec=POD_SPEC),
    ),
)


def _pod(**spec: Any) -> dict:
    return {"metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}}, "spec": spec}


def _names(items: list[dict]) -> list[str]:
    return [item["name"] for item in items]


# --- application/merge-patch+json ------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "patch", "expected"),
    [
        pytest.param({"a": 1, "b": 2}, {"a": None}, {"b": 2}, id="null-deletes-a-key"),
        pytest.param({"a": 1}, {"zzz": None}, {"a": 1}, id="null-for-a-missing-key-is-ignored"),
        pytest.param(
            {"m": {"x": 1, "y": {"z": 1, "w": 2}}},
            {"m": {"y": {"w": None, "v": 3}}},
            {"m": {"x": 1, "y": {"z": 1, "v": 3}}},
            id="objects-merge-recursively",
        ),
        pytest.param({"l": [1, 2, 3]}, {"l": [4]}, {"l": [4]}, id="lists-are-replaced"),
        pytest.param({"a": {"b": 1}}, {"a": "s"}, {"a": "s"}, id="scalar-replaces-object"),
        pytest.param({"a": "s"}, {"a": {"b": 1, "c": None}}, {"a": {"b": 1}}, id="new-object"),
    ],
)
def test_merge_patch(original: dict, patch: dict, expected: dict) -> None:
    assert apply_merge_patch(original, patch) == expected


def test_merge_patch_must_be_an_object() -> None:
    with pytest.raises(PatchError) as error:
        apply_merge_patch({"a": 1}, [{"op": "add"}])  # type: ignore[arg-type]
    assert error.value.code == 400


def test_merge_patch_does_not_mutate_inputs_or_share_them_with_the_result() -> None:
    original = {"metadata": {"labels": {"a": "1"}}, "spec": {"l": [1]}}
    patch = {"metadata": {"labels": {"b": "2"}}, "spec": {"m": [2]}}
    before = copy.deepcopy((original, patch))
    result = apply_merge_patch(original, patch)
    result["spec"]["l"].append(9)
    result["spec"]["m"].append(9)
    assert (original, patch) == before


# --- application/json-patch+json -------------------------------------------------------

DOC = {"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": 1, "l": [1]}}


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        pytest.param(
            [{"op": "add", "path": "/metadata/labels/tier", "value": "front"}],
            {**DOC, "metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}}},
            id="add",
        ),
        pytest.param(
            [{"op": "remove", "path": "/metadata/labels"}],
            {**DOC, "metadata": {"name": "web"}},
            id="remove",
        ),
        pytest.param(
            [
                {"op": "test", "path": "/spec/replicas", "value": 1},
                {"op": "replace", "path": "/spec/replicas", "value": 3},
            ],
            {**DOC, "spec": {"replicas": 3, "l": [1]}},
            id="test-then-replace",
        ),
        pytest.param(
            [{"op": "add", "path": "/spec/l/-", "value": 2}],
            {**DOC, "spec": {"replicas": 1, "l": [1, 2]}},
            id="append-to-list",
        ),
    ],
)
def test_json_patch_applies_operations(patch: list, expected: dict) -> None:
    assert apply_json_patch(DOC, patch) == expected


@pytest.mark.parametrize(
    ("patch", "message", "code"),
    [
        pytest.param(
            [{"op": "remove", "path": "/spec/missing"}], "remove", 422, id="remove-missing-path"
        ),
        pytest.param(
            [{"op": "replace", "path": "/spec/missing", "value": 1}],
            "replace",
            422,
            id="replace-missing-path",
        ),
        pytest.param(
            [{"op": "add", "path": "/nope/deeper", "value": 1}],
            "/nope",
            422,
            id="add-under-nothing",
        ),
        pytest.param(
            [{"op": "test", "path": "/spec/replicas", "value": 2}],
            "is not equal to tested value",
            422,
            id="test-fails",
        ),
        pytest.param([{"op": "frobnicate", "path": "/spec"}], "frobnicate", 422, id="bad-op"),
        pytest.param([{"op": "replace", "path": "", "value": [1]}], "object", 422, id="not-object"),
        pytest.param({"op": "add"}, "list of operation", 400, id="not-a-list"),
        pytest.param(
            [{"op": "test", "path": "/spec/replicas", "value": 1}] * 10001,
            "maximum operations",
            413,
            id="too-many-operations",
        ),
    ],
)
def test_json_patch_errors(patch: Any, message: str, code: int) -> None:
    with pytest.raises(PatchError, match=message) as error:
        apply_json_patch(DOC, patch)
    assert error.value.code == code


def test_failed_json_patch_changes_nothing() -> None:
    original = copy.deepcopy(DOC)
    with pytest.raises(PatchError):
        apply_json_patch(
            original,
            [
                {"op": "replace", "path": "/spec/replicas", "value": 5},
                {"op": "test", "path": "/spec/replicas", "value": 1},
            ],
        )
    assert original == DOC


# --- application/strategic-merge-patch+json: the merge rules ---------------------------


def _container(name: str, **fields: Any) -> dict:
    return {"name": name, **fields}


MOUNT_D = {"mountPath": "/d", "name": "a"}

SMP_CASES = [
    pytest.param(
        _pod(containers=[_container("web", image="nginx:1"), _container("log", image="fluent")]),
        {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}},
        _pod(containers=[_container("web", image="nginx:2"), _container("log", image="fluent")]),
        id="image-change-keeps-other-containers",
    ),
    pytest.param(
        _pod(containers=[_container("web", image="nginx:1")]),
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "web"}, {"name": "log"}],
                "containers": [{"name": "log", "image": "fluent"}],
            }
        },
        _pod(containers=[_container("web", image="nginx:1"), _container("log", image="fluent")]),
        id="new-container-is-appended-where-set-element-order-puts-it",
    ),
    pytest.param(
        _pod(containers=[_container("web", image="nginx:1")]),
        {"spec": {"containers": [{"name": "log", "image": "fluent"}]}},
        _pod(containers=[_container("log", image="fluent"), _container("web", image="nginx:1")]),
        id="new-container-without-set-element-order-goes-first-as-upstream",
    ),
    pytest.param(
        _pod(containers=[_container("web"), _container("log"), _container("mon")]),
        {"spec": {"containers": [{"name": "log", "$patch": "delete"}]}},
        _pod(containers=[_container("web"), _container("mon")]),
        id="patch-delete-removes-one-container",
    ),
    pytest.param(
        _pod(containers=[_container("web", image="a"), _container("log")]),
        {"spec": {"containers": [{"name": "new", "image": "b"}, {"$patch": "replace"}]}},
        _pod(containers=[_container("new", image="b")]),
        id="patch-replace-replaces-a-merge-list",
    ),
    pytest.param(
        _pod(nodeSelector={"disk": "hdd", "zone": "a"}),
        {"spec": {"nodeSelector": {"$patch": "replace", "disk": "ssd"}}},
        _pod(nodeSelector={"disk": "ssd"}),
        id="patch-replace-replaces-a-map",
    ),
    pytest.param(
        _pod(nodeSelector={"disk": "hdd", "zone": "a"}),
        {"spec": {"nodeSelector": {"$patch": "delete"}}},
        _pod(nodeSelector={}),
        id="patch-delete-empties-a-map",
    ),
    pytest.param(
        _pod(containers=[_container("web", env=[{"name": "A", "value": "1"}, {"name": "B"}])]),
        {"spec": {"containers": [{"name": "web", "env": [{"name": "B", "value": "2"}]}]}},
        _pod(
            containers=[
                _container("web", env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
            ]
        ),
        id="env-entries-merge-by-name",
    ),
    pytest.param(
        _pod(containers=[_container("web", ports=[{"containerPort": 80, "protocol": "TCP"}])]),
        {"spec": {"containers": [{"name": "web", "ports": [{"containerPort": 80, "name": "h"}]}]}},
        _pod(
            containers=[
                _container("web", ports=[{"containerPort": 80, "protocol": "TCP", "name": "h"}])
            ]
        ),
        id="ports-merge-by-container-port",
    ),
    pytest.param(
        _pod(
            containers=[_container("web", volumeMounts=[MOUNT_D, {"mountPath": "/e", "name": "b"}])]
        ),
        {
            "spec": {
                "containers": [{"name": "web", "volumeMounts": [{"mountPath": "/e", "name": "c"}]}]
            }
        },
        _pod(
            containers=[_container("web", volumeMounts=[MOUNT_D, {"mountPath": "/e", "name": "c"}])]
        ),
        id="volume-mounts-merge-by-mount-path",
    ),
    pytest.param(
        _pod(containers=[_container("web", args=["a", "b"])]),
        {"spec": {"containers": [{"name": "web", "args": ["c"]}]}},
        _pod(containers=[_container("web", args=["c"])]),
        id="list-without-strategy-is-replaced",
    ),
    pytest.param(
        _pod(tolerations=[{"key": "a", "operator": "Exists"}, {"key": "b"}]),
        {"spec": {"tolerations": [{"key": "c"}]}},
        _pod(tolerations=[{"key": "c"}]),
        id="tolerations-are-replaced-as-upstream-has-no-strategy-for-them",
    ),
    pytest.param(
        _pod(),
        {"metadata": {"labels": {"tier": None, "new": "x"}}},
        {"metadata": {"name": "web", "labels": {"app": "web", "new": "x"}}, "spec": {}},
        id="null-deletes-a-label",
    ),
    pytest.param(
        {"metadata": {"finalizers": ["a", "b"]}},
        {"metadata": {"finalizers": ["b", "c"]}},
        {"metadata": {"finalizers": ["a", "b", "c"]}},
        id="primitive-merge-list-is-a-set",
    ),
    pytest.param(
        {"metadata": {"finalizers": ["a", "b", "c"]}},
        {
            "metadata": {
                "$setElementOrder/finalizers": ["a", "c"],
                "$deleteFromPrimitiveList/finalizers": ["b"],
            }
        },
        {"metadata": {"finalizers": ["a", "c"]}},
        id="delete-from-primitive-list",
    ),
    pytest.param(
        _pod(volumes=[{"name": "data", "emptyDir": {}}, {"name": "other", "emptyDir": {}}]),
        {
            "spec": {
                "volumes": [
                    {
                        "$retainKeys": ["configMap", "name"],
                        "name": "data",
                        "configMap": {"name": "c"},
                    }
                ]
            }
        },
        _pod(
            volumes=[
                {"name": "data", "configMap": {"name": "c"}},
                {"name": "other", "emptyDir": {}},
            ]
        ),
        id="retain-keys-switches-a-volume-source",
    ),
    pytest.param(
        _pod(),
        {"spec": {"volumes": [{"$retainKeys": ["emptyDir", "name"], "name": "v", "emptyDir": {}}]}},
        _pod(volumes=[{"name": "v", "emptyDir": {}}]),
        id="directives-are-dropped-where-there-is-nothing-to-merge-into",
    ),
    pytest.param(
        _pod(containers=[_container("web", resources={"limits": {"cpu": "1"}, "l": [1, 2]})]),
        {
            "spec": {
                "containers": [{"name": "web", "resources": {"limits": {"mem": "1Gi"}, "l": [3]}}]
            }
        },
        _pod(
            containers=[
                _container("web", resources={"limits": {"cpu": "1", "mem": "1Gi"}, "l": [3]})
            ]
        ),
        id="any-typed-field-merges-like-json-merge-patch",
    ),
    pytest.param(
        _pod(extra={"m": {"x": 1}, "l": [{"name": "a"}]}),
        {"spec": {"extra": {"m": {"y": 2}, "l": [{"name": "b"}]}}},
        _pod(extra={"m": {"x": 1, "y": 2}, "l": [{"name": "b"}]}),
        id="field-unknown-to-the-schema-merges-like-json-merge-patch",
    ),
]


@pytest.mark.parametrize(("original", "patch", "expected"), SMP_CASES)
def test_strategic_merge_patch(original: dict, patch: dict, expected: dict) -> None:
    assert apply_strategic_merge_patch(original, patch, POD) == expected


def test_strategic_merge_patch_without_schema_is_a_json_merge_patch() -> None:
    original = {"spec": {"containers": [{"name": "a"}, {"name": "b"}], "m": {"x": 1, "y": 2}}}
    patch = {"spec": {"containers": [{"name": "c"}], "m": {"y": None, "z": 3}}}
    assert apply_strategic_merge_patch(original, patch, None) == apply_merge_patch(original, patch)


def test_retain_keys_switches_deployment_strategy_to_recreate() -> None:
    deployment = {
        "spec": {
            "replicas": 2,
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
        }
    }
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    result = apply_strategic_merge_patch(deployment, patch, DEPLOYMENT)
    assert result == {"spec": {"replicas": 2, "strategy": {"type": "Recreate"}}}


def test_retain_keys_field_merges_normally_without_the_directive() -> None:
    deployment = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"rollingUpdate": {"maxUnavailable": 0}}}}
    result = apply_strategic_merge_patch(deployment, patch, DEPLOYMENT)
    assert result["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }


# --- ordering of merged lists (upstream's normalizeElementOrder rules) -----------------


@pytest.mark.parametrize(
    ("live", "patch", "expected"),
    [
        pytest.param(
            [{"name": "1", "other": "a"}, {"name": "2"}],
            {
                "$setElementOrder/containers": [
                    {"name": "4"},
                    {"name": "1"},
                    {"name": "2"},
                    {"name": "3"},
                ],
                "containers": [{"name": "4"}, {"name": "3"}],
            },
            ["4", "1", "2", "3"],
            id="set-element-order-places-new-items",
        ),
        pytest.param(
            [{"name": "a"}, {"name": "b"}, {"name": "x"}],
            {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
                "containers": [{"name": "c"}],
            },
            ["a", "b", "c", "x"],
            id="server-only-items-go-after-the-patch-items-they-followed",
        ),
        pytest.param(
            [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}]},
            ["c", "a", "b"],
            id="set-element-order-alone-reorders",
        ),
        pytest.param(
            [{"name": "1"}, {"name": "2"}, {"name": "3"}],
            {"containers": [{"name": "3", "image": "x"}, {"name": "1", "image": "y"}]},
            ["2", "3", "1"],
            id="without-set-element-order-the-patch-order-wins",
        ),
        pytest.param(
            [{"name": "web"}, {"name": "log"}, {"name": "mon"}],
            {
                "$setElementOrder/containers": [{"name": "mon"}, {"name": "web"}],
                "containers": [{"name": "log", "$patch": "delete"}],
            },
            ["mon", "web"],
            id="deleted-item-with-set-element-order",
        ),
    ],
)
def test_merged_list_order(live: list, patch: dict, expected: list) -> None:
    result = apply_strategic_merge_patch(_pod(containers=live), {"spec": patch}, POD)
    assert _names(result["spec"]["containers"]) == expected


def test_set_element_order_of_ports_uses_their_merge_key() -> None:
    live = _pod(
        containers=[_container("web", ports=[{"containerPort": 80}, {"containerPort": 443}])]
    )
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "$setElementOrder/ports": [{"containerPort": 443}, {"containerPort": 80}],
                    "ports": [{"containerPort": 80, "name": "http"}],
                }
            ]
        }
    }
    result = apply_strategic_merge_patch(live, patch, POD)
    assert result["spec"]["containers"][0]["ports"] == [
        {"containerPort": 443},
        {"containerPort": 80, "name": "http"},
    ]


def test_null_list_next_to_set_element_order_deletes_the_list() -> None:
    live = _pod(containers=[_container("web")])
    patch = {"spec": {"$setElementOrder/containers": [], "containers": None}}
    assert "containers" not in apply_strategic_merge_patch(live, patch, POD)["spec"]


def test_set_element_order_keeps_the_contents_of_live_items() -> None:
    live = _pod(containers=[_container("1", image="one"), _container("2", image="two")])
    patch = {"spec": {"$setElementOrder/containers": [{"name": "2"}, {"name": "1"}]}}
    result = apply_strategic_merge_patch(live, patch, POD)
    assert result["spec"]["containers"] == [
        _container("2", image="two"),
        _container("1", image="one"),
    ]


# --- the patch kubectl apply sends -----------------------------------------------------


def test_kubectl_apply_patch_changes_image_and_removes_label() -> None:
    """`kubectl apply` after changing the image and dropping label x from the manifest."""
    last_applied = "kubectl.kubernetes.io/last-applied-configuration"
    container = {"name": "web", "image": "nginx:1.25"}
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web", "x": "1"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
    }
    new_manifest = copy.deepcopy(manifest)
    del new_manifest["metadata"]["labels"]["x"]
    new_manifest["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"
    live = copy.deepcopy(manifest)
    live["metadata"].update(
        namespace="default",
        annotations={last_applied: json.dumps(manifest), "deployment.kubernetes.io/revision": "1"},
    )
    live["spec"]["template"]["spec"]["containers"] = [
        {**container, "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/t"},
        {"name": "sidecar", "image": "proxy:1"},
    ]
    patch = {
        "metadata": {
            "annotations": {last_applied: json.dumps(new_manifest)},
            "labels": {"x": None},
        },
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "web"}],
                    "containers": [{"image": "nginx:1.26", "name": "web"}],
                }
            }
        },
    }

    result = apply_strategic_merge_patch(live, patch, DEPLOYMENT)

    assert result["metadata"] == {
        "name": "web",
        "namespace": "default",
        "labels": {"app": "web"},
        "annotations": {
            last_applied: json.dumps(new_manifest),
            "deployment.kubernetes.io/revision": "1",
        },
    }
    assert result["spec"]["replicas"] == 1
    assert result["spec"]["template"]["spec"]["containers"] == [
        {
            "name": "web",
            "image": "nginx:1.26",
            "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/t",
        },
        {"name": "sidecar", "image": "proxy:1"},
    ]


# --- invalid patches ------------------------------------------------------------------

LIVE = _pod(
    containers=[_container("web", image="nginx")],
    nodeSelector={"disk": "ssd"},
)


@pytest.mark.parametrize(
    ("patch", "message", "code"),
    [
        pytest.param(
            {"spec": {"nodeSelector": {"$patch": "bogus"}}}, "unknown patch type", 422, id="map"
        ),
        pytest.param(
            {"spec": {"nodeSelector": {"$patch": "merge"}}},
            "unknown patch type",
            422,
            id="merge-directive-in-a-map",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "web", "$patch": "bogus"}]}},
            "unknown patch type",
            422,
            id="list-item",
        ),
        pytest.param(
            {"spec": {"containers": [{"$patch": "merge"}]}},
            "merging lists cannot yet be specified",
            422,
            id="merge-directive-in-a-list",
        ),
        pytest.param(
            {"spec": {"containers": [{"image": "x"}]}},
            "does not contain declared merge key: name",
            422,
            id="item-without-merge-key",
        ),
        pytest.param(
            {"spec": {"containers": [{"$patch": "delete"}]}},
            "does not contain declared merge key: name",
            422,
            id="delete-without-merge-key",
        ),
        pytest.param(
            {"spec": {"$retainKeys": "containers"}},
            "invalid patch format of retainKeys",
            400,
            id="retain-keys-not-a-list",
        ),
        pytest.param(
            {"spec": {"$retainKeys": ["containers"], "nodeSelector": {"a": "b"}}},
            "invalid patch format of retainKeys",
            400,
            id="patch-sets-a-key-retain-keys-does-not-list",
        ),
        pytest.param(
            {"spec": {"$setElementOrder/containers": {"name": "web"}}},
            "invalid patch format of setElementOrder list",
            400,
            id="set-element-order-not-a-list",
        ),
        pytest.param(
            {
                "spec": {
                    "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                    "containers": [{"name": "b"}, {"name": "a"}],
                }
            },
            "doesn't match",
            422,
            id="patch-list-out-of-set-element-order",
        ),
        pytest.param(
            {"spec": {"$setElementOrder": [{"name": "a"}]}},
            "invalid patch format of setElementOrder list",
            400,
            id="set-element-order-without-field",
        ),
        pytest.param(
            {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}},
            "invalid patch format of primitive list",
            400,
            id="delete-from-primitive-list-not-a-list",
        ),
    ],
)
def test_invalid_strategic_merge_patch(patch: dict, message: str, code: int) -> None:
    with pytest.raises(PatchError, match=message) as error:
        apply_strategic_merge_patch(LIVE, patch, POD)
    assert error.value.code == code


def test_strategic_merge_patch_must_be_an_object() -> None:
    with pytest.raises(PatchError) as error:
        apply_strategic_merge_patch(LIVE, [], POD)  # type: ignore[arg-type]
    assert error.value.code == 400


def test_strategic_merge_patch_does_not_mutate_inputs_or_share_them_with_the_result() -> None:
    original = _pod(
        containers=[_container("web", env=[{"name": "A"}]), _container("log")],
        volumes=[{"name": "v", "emptyDir": {}}],
    )
    patch = {
        "metadata": {"labels": {"tier": None}, "finalizers": ["f"]},
        "spec": {
            "$setElementOrder/containers": [{"name": "log"}, {"name": "web"}],
            "containers": [{"name": "web", "env": [{"name": "B"}], "args": ["x"]}],
            "volumes": [{"$retainKeys": ["name"], "name": "v"}],
        },
    }
    before = copy.deepcopy((original, patch))
    result = apply_strategic_merge_patch(original, patch, POD)
    assert (original, patch) == before

    result["spec"]["containers"][1]["args"].append("y")
    result["spec"]["containers"][1]["env"].append({"name": "C"})
    result["metadata"]["labels"]["new"] = "1"
    assert (original, patch) == before
