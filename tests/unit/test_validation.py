"""Generic field validation: name formats, metadata, selectors and small field rules."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api.validation import (
    FieldError,
    validate_annotations,
    validate_dns1035_label,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_immutable,
    validate_int_or_percent,
    validate_label_selector,
    validate_label_value,
    validate_labels,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
    validate_port_number,
    validate_qualified_name,
    validate_quantity,
)

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    r"used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def messages(errors: list[FieldError]) -> list[str]:
    return [str(e) for e in errors]


# --- name formats -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["a", "ab", "a-b", "0", "a.b", "a1.b2", "my-app.example.com", "a" * 253]
)
def test_valid_dns1123_subdomains(value: str) -> None:
    assert validate_dns1123_subdomain(value) == []


@pytest.mark.parametrize("value", ["", "A", "a_b", "-a", "a-", "a..b", ".a", "a.", "a\n"])
def test_invalid_dns1123_subdomains_get_upstream_message(value: str) -> None:
    assert validate_dns1123_subdomain(value) == [SUBDOMAIN_MSG]


def test_dns1123_subdomain_is_at_most_253_characters() -> None:
    assert validate_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


def test_dns1123_label_rules() -> None:
    assert validate_dns1123_label("my-name") == []
    assert validate_dns1123_label("a.b") == ["must not contain dots"]
    assert validate_dns1123_label("My_Name") == [LABEL_MSG]
    assert validate_dns1123_label("a" * 64) == ["must be no more than 63 characters"]


def test_dns1035_label_must_start_with_a_letter() -> None:
    assert validate_dns1035_label("web-1") == []
    assert validate_dns1035_label("1web") == [DNS1035_MSG]
    assert validate_dns1035_label("a" * 64) == ["must be no more than 63 characters"]


@pytest.mark.parametrize(
    "value",
    [
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "1234",
        "simple/simple",
        "a.b/C_d",
        "a/" + "b" * 63,
        "b" * 63,
        "d" * 253 + "/n",
    ],
)
def test_valid_qualified_names(value: str) -> None:
    assert validate_qualified_name(value) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ["name part must be non-empty", NAME_PART_MSG]),
        ("a b", [NAME_PART_MSG]),
        ("-a", [NAME_PART_MSG]),
        ("/a", ["prefix part must be non-empty"]),
        ("a/", ["name part must be non-empty", NAME_PART_MSG]),
        ("Example.com/a", ["prefix part " + SUBDOMAIN_MSG]),
        ("a" * 64, ["name part must be no more than 63 bytes"]),
        ("a/" + "b" * 64, ["name part must be no more than 63 bytes"]),
        ("d" * 254 + "/n", ["prefix part must be no more than 253 bytes"]),
    ],
)
def test_invalid_qualified_names(value: str, expected: list[str]) -> None:
    assert validate_qualified_name(value) == expected


def test_qualified_name_with_two_slashes_is_one_message() -> None:
    [message] = validate_qualified_name("a/b/c")
    assert message.startswith("a valid label key must consist of alphanumeric characters")
    assert message.endswith(
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    )


@pytest.mark.parametrize("value", ["", "v", "V1.2_3-x", "a" * 63])
def test_valid_label_values(value: str) -> None:
    assert validate_label_value(value) == []


def test_invalid_label_values() -> None:
    assert validate_label_value("bad value") == [LABEL_VALUE_MSG]
    assert validate_label_value("a" * 64) == ["must be no more than 63 bytes"]


# --- labels and annotations -------------------------------------------------------------


def test_validate_labels_reports_keys_and_values_under_the_map_path() -> None:
    errors = validate_labels({"a b": "ok", "ok": "c!"}, "metadata.labels")
    assert messages(errors) == [
        f'metadata.labels: Invalid value: "a b": {NAME_PART_MSG}',
        f'metadata.labels: Invalid value: "c!": {LABEL_VALUE_MSG}',
    ]


@pytest.mark.parametrize("labels", [["a"], "a=b", {"a": 1}, {"a": None}])
def test_validate_labels_reports_wrong_json_types_as_field_errors(labels: Any) -> None:
    [error] = validate_labels(labels, "metadata.labels")
    assert error.type == "TypeInvalid"
    assert error.field == "metadata.labels"


def test_annotation_keys_are_case_insensitive_qualified_names() -> None:
    assert validate_annotations({"Example.COM/Some-Key": "any value at all!"}, "a") == []
    assert messages(validate_annotations({"a b": "x"}, "a")) == [
        f'a: Invalid value: "a b": {NAME_PART_MSG}'
    ]


def test_annotations_may_total_at_most_256_kib() -> None:
    assert validate_annotations({"k": "v" * (262144 - 1)}, "metadata.annotations") == []
    errors = validate_annotations({"k": "v" * 262144}, "metadata.annotations")
    assert messages(errors) == ["metadata.annotations: Too long: must have at most 262144 bytes"]


# --- object metadata on create -----------------------------------------------------------


def test_valid_namespaced_metadata() -> None:
    meta = {
        "name": "web",
        "namespace": "default",
        "labels": {"app": "web"},
        "annotations": {"example.com/note": "hi"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "rs",
                "uid": "u1",
                "controller": True,
            }
        ],
        "finalizers": ["example.com/cleanup"],
        "generation": 1,
    }
    assert validate_object_meta(meta, namespaced=True) == []


def test_name_or_generate_name_is_required() -> None:
    assert messages(validate_object_meta({"namespace": "ns"}, namespaced=True)) == [
        "metadata.name: Required value: name or generateName is required"
    ]
    assert messages(validate_object_meta(None, namespaced=False)) == [
        "metadata.name: Required value: name or generateName is required"
    ]


def test_name_is_checked_with_the_kinds_name_rule() -> None:
    meta = {"name": "Web", "namespace": "ns"}
    assert messages(validate_object_meta(meta, namespaced=True)) == [
        f'metadata.name: Invalid value: "Web": {SUBDOMAIN_MSG}'
    ]
    meta = {"name": "1web", "namespace": "ns"}
    errors = validate_object_meta(meta, namespaced=True, name_validator=validate_dns1035_label)
    assert messages(errors) == [f'metadata.name: Invalid value: "1web": {DNS1035_MSG}']


def test_generate_name_may_end_with_a_dash() -> None:
    meta = {"generateName": "web-", "name": "web-x7k2p", "namespace": "ns"}
    assert validate_object_meta(meta, namespaced=True) == []
    meta = {"generateName": "Web-", "name": "web-x7k2p", "namespace": "ns"}
    [error] = validate_object_meta(meta, namespaced=True)
    assert error.field == "metadata.generateName"


def test_namespace_required_for_namespaced_and_forbidden_for_cluster_scoped() -> None:
    assert messages(validate_object_meta({"name": "web"}, namespaced=True)) == [
        "metadata.namespace: Required value"
    ]
    assert messages(validate_object_meta({"name": "n1", "namespace": "ns"}, namespaced=False)) == [
        "metadata.namespace: Forbidden: not allowed on this type"
    ]
    errors = validate_object_meta({"name": "web", "namespace": "a.b"}, namespaced=True)
    assert messages(errors) == ['metadata.namespace: Invalid value: "a.b": must not contain dots']


def test_generation_may_not_be_negative() -> None:
    errors = validate_object_meta({"name": "n", "generation": -1}, namespaced=False)
    assert messages(errors) == [
        "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_owner_references_need_api_version_kind_name_and_uid() -> None:
    meta = {"name": "n", "ownerReferences": [{"apiVersion": "apps/", "kind": "", "uid": "u"}]}
    assert messages(validate_object_meta(meta, namespaced=False)) == [
        'metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
        'metadata.ownerReferences.name: Invalid value: "": must not be empty',
    ]


def test_events_cannot_own_objects() -> None:
    ref = {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}
    [error] = validate_object_meta({"name": "n", "ownerReferences": [ref]}, namespaced=False)
    assert error.detail == "/v1, Kind=Event is disallowed from being an owner"


def test_at_most_one_owner_reference_is_the_controller() -> None:
    refs = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "a",
            "uid": "1",
            "controller": True,
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "b",
            "uid": "2",
            "controller": True,
        },
    ]
    [error] = validate_object_meta({"name": "n", "ownerReferences": refs}, namespaced=False)
    assert error.field == "metadata.ownerReferences"
    assert error.detail == (
        'Only one reference can have Controller set to true. Found "true" in references for '
        "ReplicaSet/a and ReplicaSet/b"
    )


def test_finalizers_are_qualified_names_and_orphan_excludes_foreground() -> None:
    errors = validate_object_meta({"name": "n", "finalizers": ["bad name"]}, namespaced=False)
    assert messages(errors) == [f'metadata.finalizers: Invalid value: "bad name": {NAME_PART_MSG}']
    errors = validate_object_meta(
        {"name": "n", "finalizers": ["orphan", "foregroundDeletion"]}, namespaced=False
    )
    assert [e.detail for e in errors] == [
        "finalizer orphan and foregroundDeletion cannot be both set"
    ]


@pytest.mark.parametrize(
    ("meta", "field"),
    [
        ("not-a-dict", "metadata"),
        ({"name": 5}, "metadata.name"),
        ({"name": "n", "labels": ["a"]}, "metadata.labels"),
        ({"name": "n", "annotations": {"a": 1}}, "metadata.annotations"),
        ({"name": "n", "ownerReferences": {}}, "metadata.ownerReferences"),
        ({"name": "n", "ownerReferences": ["x"]}, "metadata.ownerReferences"),
        (
            {"name": "n", "ownerReferences": [{"apiVersion": 1}]},
            "metadata.ownerReferences.apiVersion",
        ),
        ({"name": "n", "finalizers": "x"}, "metadata.finalizers"),
        ({"name": "n", "finalizers": [1]}, "metadata.finalizers"),
        ({"name": "n", "generation": "1"}, "metadata.generation"),
    ],
)
def test_object_meta_of_the_wrong_json_type_is_a_field_error(meta: Any, field: str) -> None:
    errors = validate_object_meta(meta, namespaced=False)
    assert [(e.type, e.field) for e in errors] == [("TypeInvalid", field)]


# --- object metadata on update -----------------------------------------------------------

OLD_META = {
    "name": "web",
    "namespace": "default",
    "uid": "u1",
    "resourceVersion": "5",
    "creationTimestamp": "2024-01-01T00:00:00Z",
    "generation": 2,
}


def test_unchanged_metadata_update_is_valid() -> None:
    new = dict(OLD_META, labels={"app": "web"})
    assert validate_object_meta_update(new, OLD_META) == []


@pytest.mark.parametrize("key", ["name", "namespace", "uid", "creationTimestamp"])
def test_identity_fields_are_immutable(key: str) -> None:
    new = dict(OLD_META, **{key: "changed"})
    assert messages(validate_object_meta_update(new, OLD_META)) == [
        f'metadata.{key}: Invalid value: "changed": field is immutable'
    ]


def test_update_requires_resource_version_and_never_decrements_generation() -> None:
    new = dict(OLD_META, resourceVersion="", generation=1)
    assert messages(validate_object_meta_update(new, OLD_META)) == [
        'metadata.resourceVersion: Invalid value: "": must be specified for an update',
        "metadata.generation: Invalid value: 1: must not be decremented",
    ]


def test_update_validates_new_labels() -> None:
    new = dict(OLD_META, labels={"app": "bad value"})
    assert messages(validate_object_meta_update(new, OLD_META)) == [
        f'metadata.labels: Invalid value: "bad value": {LABEL_VALUE_MSG}'
    ]


def test_object_being_deleted_cannot_gain_finalizers() -> None:
    old = dict(OLD_META, deletionTimestamp="2024-01-02T00:00:00Z", finalizers=["a.io/x"])
    new = dict(old, finalizers=["a.io/x", "b.io/y", "a.io/z"])
    assert messages(validate_object_meta_update(new, old)) == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being "
        'deleted, found new finalizers []string{"a.io/z", "b.io/y"}'
    ]
    assert validate_object_meta_update(dict(old, finalizers=[]), old) == []


# --- label selectors ---------------------------------------------------------------------


def test_valid_label_selector() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["fe"]},
            {"key": "canary", "operator": "DoesNotExist"},
        ],
    }
    assert validate_label_selector(selector, "spec.selector") == []
    assert validate_label_selector(None, "spec.selector") == []


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (
            {"key": "a", "operator": "In"},
            "spec.selector.matchExpressions[0].values: Required value: "
            "must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            {"key": "a", "operator": "NotIn", "values": []},
            "spec.selector.matchExpressions[0].values: Required value: "
            "must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            {"key": "a", "operator": "Exists", "values": ["x"]},
            "spec.selector.matchExpressions[0].values: Forbidden: "
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            {"key": "a", "operator": "Equals", "values": ["x"]},
            'spec.selector.matchExpressions[0].operator: Invalid value: "Equals": '
            "not a valid selector operator",
        ),
        (
            {"key": "a b", "operator": "Exists"},
            f'spec.selector.matchExpressions[0].key: Invalid value: "a b": {NAME_PART_MSG}',
        ),
        (
            {"key": "a", "operator": "In", "values": ["ok", "not ok"]},
            'spec.selector.matchExpressions[0].values[1]: Invalid value: "not ok": '
            + LABEL_VALUE_MSG,
        ),
    ],
)
def test_invalid_match_expressions(expression: dict[str, Any], expected: str) -> None:
    errors = validate_label_selector({"matchExpressions": [expression]}, "spec.selector")
    assert messages(errors) == [expected]


@pytest.mark.parametrize(
    "selector",
    [
        "app=web",
        {"matchLabels": "app"},
        {"matchExpressions": {}},
        {"matchExpressions": ["x"]},
        {"matchExpressions": [{"key": 1, "operator": "Exists"}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
    ],
)
def test_label_selector_of_the_wrong_json_type_is_a_field_error(selector: Any) -> None:
    [error] = validate_label_selector(selector, "spec.selector")
    assert error.type == "TypeInvalid"


# --- small field rules -------------------------------------------------------------------


def test_validate_immutable() -> None:
    assert validate_immutable({"a": 1}, {"a": 1}, "spec.selector") == []
    assert messages(validate_immutable("b", "a", "spec.x")) == [
        'spec.x: Invalid value: "b": field is immutable'
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, []),
        (3, []),
        (-1, ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]),
        ("1", ['spec.replicas: Invalid value: "1": must be of type integer']),
        (True, ["spec.replicas: Invalid value: true: must be of type integer"]),
        (1.5, ["spec.replicas: Invalid value: 1.5: must be of type integer"]),
    ],
)
def test_validate_nonnegative(value: Any, expected: list[str]) -> None:
    assert messages(validate_nonnegative(value, "spec.replicas")) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, []),
        (65535, []),
        (0, ["p: Invalid value: 0: must be between 1 and 65535, inclusive"]),
        (65536, ["p: Invalid value: 65536: must be between 1 and 65535, inclusive"]),
        ("80", ['p: Invalid value: "80": must be of type integer']),
    ],
)
def test_validate_port_number(value: Any, expected: list[str]) -> None:
    assert messages(validate_port_number(value, "p")) == expected


@pytest.mark.parametrize("value", ["500m", "1Gi", "1e3", 2, 0.5, None])
def test_valid_quantities(value: Any) -> None:
    assert validate_quantity(value, "resources.requests.cpu") == []


@pytest.mark.parametrize("value", ["1 Gi", "abc", "1i", True, [1]])
def test_invalid_quantities(value: Any) -> None:
    [error] = validate_quantity(value, "resources.requests.cpu")
    assert error.type == "Invalid"
    assert error.field == "resources.requests.cpu"


def test_invalid_quantity_carries_upstream_parse_message() -> None:
    [error] = validate_quantity("abc", "q")
    assert error.detail == (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, []),
        (2, []),
        ("25%", []),
        ("0%", []),
        (-1, ["s: Invalid value: -1: must be greater than or equal to 0"]),
        (
            "25",
            [
                's: Invalid value: "25": a valid percent string must be a numeric string followed '
                "by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
            ],
        ),
        (1.5, ["s: Invalid value: 1.5: must be an integer or percentage (e.g '5%')"]),
        (None, ["s: Invalid value: null: must be an integer or percentage (e.g '5%')"]),
    ],
)
def test_validate_int_or_percent(value: Any, expected: list[str]) -> None:
    assert messages(validate_int_or_percent(value, "s")) == expected
