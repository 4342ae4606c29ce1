"""CRD structural schemas: structural checks, validation, defaulting and pruning, each
with the messages and field paths upstream's apiextensions-apiserver prints."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikube_py.api.openapi_schema.compiled import compile_schema
from minikube_py.api.openapi_schema.defaulting import apply_defaults
from minikube_py.api.openapi_schema.pruning import prune, unknown_field_errors
from minikube_py.api.openapi_schema.structural import schema_errors
from minikube_py.api.openapi_schema.validation import validate

ROOT = "spec.versions[0].schema.openAPIV3Schema"


def _obj(**spec: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object", "properties": spec}}}


# --- structural checks ----------------------------------------------------------------

STRUCTURAL_CASES = [
    ("untyped field", {"type": "object", "properties": {"spec": {}}},
     [f"{ROOT}.properties[spec].type: Required value: must not be empty for specified "
      "object fields"]),
    ("untyped root", {"properties": {"spec": {"type": "object"}}},
     [f"{ROOT}.type: Required value: must not be empty at the root"]),
    ("root not an object", {"type": "string"},
     [f"{ROOT}.type: Invalid value: \"string\": must be object at the root"]),
    ("array without items", _obj(ports={"type": "array"}),
     [f"{ROOT}.properties[spec].properties[ports].items: Required value: must be specified"]),
    ("untyped items", _obj(ports={"type": "array", "items": {}}),
     [f"{ROOT}.properties[spec].properties[ports].items.type: Required value: must not be "
      "empty for specified array items"]),
    ("$ref", _obj(x={"type": "string", "$ref": "#/definitions/x"}),
     [f"{ROOT}.properties[spec].properties[x].$ref: Forbidden: $ref is not supported"]),
    ("properties with additionalProperties",
     _obj(x={"type": "object", "properties": {"a": {"type": "string"}},
             "additionalProperties": False}),
     [f"{ROOT}.properties[spec].properties[x].additionalProperties: Forbidden: "
      "additionalProperties and properties are mutual exclusive"]),
    ("uniqueItems", _obj(x={"type": "array", "items": {"type": "string"},
                            "uniqueItems": True}),
     [f"{ROOT}.properties[spec].properties[x].uniqueItems: Forbidden: uniqueItems cannot be "
      "set to true since the runtime complexity becomes quadratic"]),
    ("type null", _obj(x={"type": "null"}),
     [f"{ROOT}.properties[spec].properties[x].type: Forbidden: type cannot be set to null, "
      "use nullable as an alternative"]),
    ("preserve false", _obj(x={"type": "object", "x-kubernetes-preserve-unknown-fields": False}),
     [f"{ROOT}.properties[spec].properties[x].x-kubernetes-preserve-unknown-fields: Invalid "
      "value: false: must be true or undefined"]),
    ("type in anyOf", _obj(x={"type": "string", "anyOf": [{"type": "string"}]}),
     [f"{ROOT}.properties[spec].properties[x].anyOf[0].type: Forbidden: must be empty to be "
      "structural"]),
    ("list-map without keys", _obj(x={"type": "array", "x-kubernetes-list-type": "map",
                                      "items": {"type": "object"}}),
     [f"{ROOT}.properties[spec].properties[x].x-kubernetes-list-map-keys: Required value: "
      "must not be empty if x-kubernetes-list-type is map"]),
    ("bad list type", _obj(x={"type": "array", "x-kubernetes-list-type": "bag",
                              "items": {"type": "string"}}),
     [f"{ROOT}.properties[spec].properties[x].x-kubernetes-list-type: Unsupported value: "
      '"bag": supported values: "atomic", "set", "map"']),
    ("embedded not an object", _obj(x={"x-kubernetes-embedded-resource": True,
                                       "x-kubernetes-preserve-unknown-fields": True}),
     [f"{ROOT}.properties[spec].properties[x].type: Required value: must be object if "
      "x-kubernetes-embedded-resource is true"]),
    ("metadata beyond name", {"type": "object", "properties": {"metadata": {
        "type": "object", "properties": {"labels": {"type": "object"}}}}},
     [f"{ROOT}.properties[metadata].properties[labels]: Forbidden: must not be specified"]),
    ("structural: preserve, int-or-string, embedded",
     _obj(any={"x-kubernetes-preserve-unknown-fields": True},
          port={"x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}]},
          template={"type": "object", "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True}),
     []),
]


@pytest.mark.parametrize(("schema", "expected"), [c[1:] for c in STRUCTURAL_CASES],
                         ids=[c[0] for c in STRUCTURAL_CASES])
def test_structural_checks(schema: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in schema_errors(schema, ROOT)] == expected


# --- validation -----------------------------------------------------------------------

SPEC = {
    "type": "object",
    "properties": {"spec": {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "minLength": 3, "maxLength": 8,
                     "pattern": "^[a-z]+$"},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number", "exclusiveMaximum": True, "maximum": 1.5,
                      "multipleOf": 0.5},
            "size": {"type": "string", "enum": ["small", "large"]},
            "note": {"type": "string", "nullable": True},
            "level": {"type": "number", "enum": [1.0, 2.5]},
            "id": {"type": "string", "format": "uuid"},
            "ip": {"type": "string", "format": "ipv4"},
            "port": {"x-kubernetes-int-or-string": True},
            "tags": {"type": "array", "maxItems": 2, "minItems": 1,
                     "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {
                          "name": {"type": "string"}, "port": {"type": "integer"}}}},
            "labels": {"type": "object", "maxProperties": 1,
                       "additionalProperties": {"type": "string"}},
            "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                         "x-kubernetes-preserve-unknown-fields": True},
        }}},
}
NODE = compile_schema(SPEC)

VALIDATION_CASES = [
    ("valid", {"name": "web", "replicas": 3, "note": None, "port": "http",
               "template": {"apiVersion": "v1", "kind": "Pod"}}, []),
    ("wrong type", {"name": "web", "replicas": "string"},
     ['spec.replicas: Invalid value: "string": spec.replicas in body must be of type '
      'integer: "string"']),
    ("missing required", {}, ["spec.name: Required value"]),
    ("enum", {"name": "web", "size": "huge"},
     ['spec.size: Unsupported value: "huge": supported values: "small", "large"']),
    ("enum is typed", {"name": "web", "size": True, "level": 1.0},
     ['spec.size: Invalid value: "boolean": spec.size in body must be of type string: '
      '"boolean"',
      'spec.size: Unsupported value: true: supported values: "small", "large"']),
    ("null not nullable", {"name": None},
     ['spec.name: Invalid value: "null": spec.name in body must be of type string: "null"']),
    ("string limits", {"name": "ab"},
     ['spec.name: Invalid value: "ab": spec.name in body should be at least 3 chars long']),
    ("too long and pattern", {"name": "abcdefghiJ"},
     ["spec.name: Too long: may not be more than 8 bytes",
      "spec.name: Invalid value: \"abcdefghiJ\": spec.name in body should match '^[a-z]+$'"]),
    ("minimum", {"name": "web", "replicas": 0},
     ["spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or "
      "equal to 1"]),
    ("maximum", {"name": "web", "replicas": 11},
     ["spec.replicas: Invalid value: 11: spec.replicas in body should be less than or "
      "equal to 10"]),
    ("exclusive maximum", {"name": "web", "ratio": 1.5},
     ["spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5"]),
    ("multipleOf", {"name": "web", "ratio": 0.7},
     ["spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5"]),
    ("format", {"name": "web", "id": "abc", "ip": "1.2.3"},
     ['spec.id: Invalid value: "abc": spec.id in body must be of type uuid: "abc"',
      'spec.ip: Invalid value: "1.2.3": spec.ip in body must be of type ipv4: "1.2.3"']),
    ("int-or-string", {"name": "web", "port": True},
     ['spec.port: Invalid value: "boolean": spec.port in body must be of type '
      'integer,string: "boolean"']),
    ("items", {"name": "web", "tags": ["a", 1]},
     ['spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type '
      'string: "integer"']),
    ("maxItems and set duplicates", {"name": "web", "tags": ["a", "b", "a"]},
     ["spec.tags: Too many: 3: must have at most 2 items",
      'spec.tags[2]: Duplicate value: "a"']),
    ("minItems", {"name": "web", "tags": []},
     ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]),
    ("list-map keys", {"name": "web", "ports": [{"name": "a", "port": 1},
                                                {"name": "a", "port": 2}]},
     ['spec.ports[1]: Duplicate value: {"name":"a"}']),
    ("additionalProperties", {"name": "web", "labels": {"a": 1, "b": "x"}},
     ["spec.labels: Too many: 2: must have at most 1 items",
      'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type '
      'string: "integer"']),
    ("embedded metadata", {"name": "web", "template": {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a/b",
                                                         "labels": {"k": "-bad-"}}}},
     ["spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'",
      'spec.template.metadata.labels: Invalid value: "-bad-": a valid label must be an empty '
      "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
      "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
      "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]),
    ("embedded resource", {"name": "web", "template": {"kind": "Not_Valid"}},
     ["spec.template.apiVersion: Required value: must not be empty",
      'spec.template.kind: Invalid value: "Not_Valid": may have mixed case, but should '
      "otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters "
      "or '-', start with an alphabetic character, and end with an alphanumeric character "
      "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
      "'[a-z]([-a-z0-9]*[a-z0-9])?')"]),
]


@pytest.mark.parametrize(("spec", "expected"), [c[1:] for c in VALIDATION_CASES],
                         ids=[c[0] for c in VALIDATION_CASES])
def test_validation_errors(spec: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in validate(NODE, {"spec": spec})] == expected


def test_a_validation_error_is_a_status_cause() -> None:
    [error] = validate(NODE, {"spec": {"name": "web", "size": "huge"}})
    assert error.cause() == {"reason": "FieldValueNotSupported", "field": "spec.size",
                             "message": 'Unsupported value: "huge": supported values: '
                                        '"small", "large"'}


# --- defaulting -----------------------------------------------------------------------

DEFAULTS = compile_schema({"type": "object", "properties": {"spec": {
    "type": "object", "default": {},
    "properties": {
        "replicas": {"type": "integer", "default": 1},
        "note": {"type": "string", "nullable": True, "default": "n"},
        "mode": {"type": "string", "default": "auto"},
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "protocol": {"type": "string", "default": "TCP"}}}},
        "limits": {"type": "object", "additionalProperties": {
            "type": "object", "properties": {"unit": {"type": "string", "default": "Mi"}}}},
    }}}})


def test_defaults_fill_missing_fields_items_and_map_values() -> None:
    obj: dict[str, Any] = {"spec": {"ports": [{}, {"protocol": "UDP"}],
                                    "limits": {"memory": {}}}}
    apply_defaults(DEFAULTS, obj)
    assert obj == {"spec": {"replicas": 1, "note": "n", "mode": "auto",
                            "ports": [{"protocol": "TCP"}, {"protocol": "UDP"}],
                            "limits": {"memory": {"unit": "Mi"}}}}


def test_defaults_replace_null_unless_nullable_and_default_the_default() -> None:
    obj: dict[str, Any] = {"spec": {"note": None, "mode": None}}
    apply_defaults(DEFAULTS, obj)
    assert obj["spec"]["note"] is None and obj["spec"]["mode"] == "auto"
    empty: dict[str, Any] = {}
    apply_defaults(DEFAULTS, empty)
    assert empty == {"spec": {"replicas": 1, "note": "n", "mode": "auto"}}


def test_each_object_gets_its_own_copy_of_a_default() -> None:
    node = compile_schema({"type": "object", "properties": {
        "spec": {"type": "object", "default": {"list": []}}}})
    first: dict[str, Any] = {}
    second: dict[str, Any] = {}
    apply_defaults(node, first)
    apply_defaults(node, second)
    first["spec"]["list"].append(1)
    assert second == {"spec": {"list": []}}


# --- pruning --------------------------------------------------------------------------

PRUNE = compile_schema({"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "name": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "a": {"type": "string"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"known": {"type": "object", "properties": {
                     "k": {"type": "string"}}}}},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "properties": {"spec": {"type": "object"}}},
    }}}})


def test_pruning_drops_unknown_fields_and_reports_their_paths() -> None:
    obj = {"apiVersion": "x/v1", "kind": "X",
           "metadata": {"name": "a", "labels": {"k": "v"}, "bogus": 1},
           "extra": 1,
           "spec": {"name": "n", "foo": {"bar": 1},
                    "items": [{"a": "x", "b": 2}],
                    "labels": {"any": "kept"},
                    "free": {"anything": {"deep": 1}, "known": {"k": "v", "junk": 1}},
                    "template": {"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": "p", "nope": 1},
                                 "spec": {"x": 1}, "status": {}}}}
    pruned = prune(obj, PRUNE)
    assert pruned == ["extra", "metadata.bogus", "spec.foo", "spec.free.known.junk",
                      "spec.items[0].b", "spec.template.metadata.nope",
                      "spec.template.spec.x", "spec.template.status"]
    assert obj == {"apiVersion": "x/v1", "kind": "X",
                   "metadata": {"name": "a", "labels": {"k": "v"}},
                   "spec": {"name": "n", "items": [{"a": "x"}], "labels": {"any": "kept"},
                            "free": {"anything": {"deep": 1}, "known": {"k": "v"}},
                            "template": {"apiVersion": "v1", "kind": "Pod",
                                         "metadata": {"name": "p"}, "spec": {}}}}
    assert unknown_field_errors(pruned[:1]) == ['unknown field "extra"']


def test_pruning_keeps_a_known_object_untouched() -> None:
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
           "spec": {"name": "n", "items": [{"a": "x"}]}}
    before = copy.deepcopy(obj)
    assert prune(obj, PRUNE) == []
    assert obj == before
