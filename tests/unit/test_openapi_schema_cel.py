"""CEL validation rules (x-kubernetes-validations) as apiextensions-apiserver runs them:
messages, messageExpression, reason, fieldPath, transition rules, ratcheting, runtime
errors, the cost budget and the CRD-time checks, with upstream's strings and paths."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikube_py.api.openapi_schema import cel as cel_rules
from minikube_py.api.openapi_schema.compiled import compile_schema
from minikube_py.api.openapi_schema.structural import schema_errors
from minikube_py.api.openapi_schema.validation import validate

ROOT = "spec.versions[0].schema.openAPIV3Schema"


def _spec(rules: list[dict[str, Any]], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {
        "type": "object", "properties": properties, "x-kubernetes-validations": rules}}}


def _errors(schema: dict[str, Any], spec: dict[str, Any], old: dict[str, Any] | None = None,
            warnings: list[str] | None = None) -> list[str]:
    node = compile_schema(schema)
    return [str(e) for e in validate(node, {"spec": spec},
                                     old=None if old is None else {"spec": old},
                                     warnings=warnings)]


INT = {"type": "integer"}
STR = {"type": "string"}


RULE_CASES = [
    ("message", [{"rule": "self.min <= self.max", "message": "min must not exceed max "}],
     {"min": 3, "max": 1},
     ['spec: Invalid value: "object": min must not exceed max']),
    ("no message: the rule", [{"rule": "self.min <= self.max"}], {"min": 3, "max": 1},
     ['spec: Invalid value: "object": failed rule: self.min <= self.max']),
    ("passing rule", [{"rule": "self.min <= self.max"}], {"min": 1, "max": 3}, []),
    ("messageExpression",
     [{"rule": "self.min <= self.max", "message": "static",
       "messageExpression": "'min ' + string(self.min) + ' exceeds max ' + string(self.max)"}],
     {"min": 3, "max": 1}, ['spec: Invalid value: "object": min 3 exceeds max 1']),
    ("messageExpression failing falls back to message",
     [{"rule": "self.min <= self.max", "message": "static",
       "messageExpression": "self.missing"}],
     {"min": 3, "max": 1}, ['spec: Invalid value: "object": static']),
    ("empty messageExpression result falls back to message",
     [{"rule": "self.min <= self.max", "message": "static", "messageExpression": "'  '"}],
     {"min": 3, "max": 1}, ['spec: Invalid value: "object": static']),
    ("reason Forbidden", [{"rule": "!has(self.x)", "message": "x is gone",
                           "reason": "FieldValueForbidden"}],
     {"x": 1}, ["spec: Forbidden: x is gone"]),
    ("reason Required", [{"rule": "has(self.x)", "message": "x is needed",
                          "reason": "FieldValueRequired"}],
     {}, ["spec: Required value: x is needed"]),
    ("reason Duplicate", [{"rule": "false", "reason": "FieldValueDuplicate"}],
     {}, ['spec: Duplicate value: "object"']),
    ("fieldPath", [{"rule": "self.min <= self.max", "message": "too big",
                    "fieldPath": ".min"}],
     {"min": 3, "max": 1}, ['spec.min: Invalid value: "object": too big']),
    ("fieldPath with a quoted map key",
     [{"rule": "self.min <= self.max", "message": "too big", "fieldPath": "['max']"}],
     {"min": 3, "max": 1}, ['spec.max: Invalid value: "object": too big']),
    ("missing key at run time", [{"rule": "self.x > 0"}], {},
     ['spec: Invalid value: "object": no such key: x evaluating rule: self.x > 0']),
    ("division by zero", [{"rule": "self.min / self.max > 0", "message": "ratio"}],
     {"min": 1, "max": 0},
     ['spec: Invalid value: "object": division by zero evaluating rule: ratio']),
    ("no such overload on dyn", [{"rule": "self.min + self.name == 'x'"}],
     {"min": 1, "name": "a"},
     ["spec: Invalid value: \"object\": 'no such overload': call arguments did not match a "
      "supported operator, function or macro signature for rule: self.min + self.name == 'x'"]),
]


@pytest.mark.parametrize(("rules", "spec", "expected"), [c[1:] for c in RULE_CASES],
                         ids=[c[0] for c in RULE_CASES])
def test_rule_errors(rules: list[dict[str, Any]], spec: dict[str, Any],
                     expected: list[str]) -> None:
    assert _errors(_spec(rules, min=INT, max=INT, x=INT, name=STR), spec) == expected


def test_a_rule_on_a_scalar_sees_the_scalar_as_self() -> None:
    schema = _spec([], name={"type": "string", "x-kubernetes-validations": [
        {"rule": "self.startsWith('ok-')", "message": "must start with ok-"}]})
    assert _errors(schema, {"name": "ok-1"}) == []
    assert _errors(schema, {"name": "bad"}) == [
        'spec.name: Invalid value: "string": must start with ok-']


def test_rules_on_items_and_additional_properties_get_indexed_paths() -> None:
    schema = _spec([], ports={"type": "array", "items": {
        "type": "integer", "x-kubernetes-validations": [{"rule": "self > 1024",
                                                         "message": "privileged"}]}},
        labels={"type": "object", "additionalProperties": {
            "type": "string", "x-kubernetes-validations": [{"rule": "self != ''"}]}})
    assert _errors(schema, {"ports": [8080, 80], "labels": {"a": "", "b": "x"}}) == [
        'spec.ports[1]: Invalid value: "integer": privileged',
        "spec.labels[a]: Invalid value: \"string\": failed rule: self != ''"]


def test_a_root_rule_has_a_nil_path_and_sees_only_name_in_metadata() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [
        {"rule": "self.metadata.name.startsWith('a') && !has(self.metadata.labels)",
         "message": "bad root"}],
        "properties": {"metadata": {"type": "object"}}}
    node = compile_schema(schema)
    assert validate(node, {"metadata": {"name": "abc", "labels": {"x": "y"}}}) == []
    assert [str(e) for e in validate(node, {"metadata": {"name": "b"}})] == [
        '<nil>: Invalid value: "object": bad root']


def test_type_and_enum_errors_keep_the_rules_from_running() -> None:
    schema = _spec([{"rule": "false", "message": "never"}],
                   mode={"type": "string", "enum": ["A"]})
    assert _errors(schema, {"mode": "B"}) == [
        'spec.mode: Unsupported value: "B": supported values: "A"',
        "<nil>: Invalid value: null: some validation rules were not checked because the "
        "object was invalid; correct the existing errors to complete validation"]


# --- transition rules and ratcheting -----------------------------------------------------

IMMUTABLE = _spec([], name={"type": "string", "x-kubernetes-validations": [
    {"rule": "self == oldSelf", "message": "Value is immutable"}]})


def test_a_transition_rule_runs_only_on_update_with_an_old_value() -> None:
    assert _errors(IMMUTABLE, {"name": "a"}) == []
    assert _errors(IMMUTABLE, {"name": "a"}, old={}) == []
    assert _errors(IMMUTABLE, {"name": "a"}, old={"name": "a"}) == []
    assert _errors(IMMUTABLE, {"name": "b"}, old={"name": "a"}) == [
        'spec.name: Invalid value: "string": Value is immutable']


def test_an_atomic_map_does_not_correlate_its_fields() -> None:
    schema = copy.deepcopy(IMMUTABLE)
    schema["properties"]["spec"]["x-kubernetes-map-type"] = "atomic"
    assert _errors(schema, {"name": "b"}, old={"name": "a"}) == []


def test_a_map_list_correlates_items_by_key() -> None:
    schema = _spec([], items={
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "object", "properties": {"k": STR, "v": {
            "type": "string", "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": "v is immutable"}]}}}})
    old = {"items": [{"k": "a", "v": "1"}, {"k": "b", "v": "2"}]}
    assert _errors(schema, {"items": [{"k": "b", "v": "2"}, {"k": "a", "v": "1"}]}, old) == []
    assert _errors(schema, {"items": [{"k": "b", "v": "3"}, {"k": "c", "v": "9"}]}, old) == [
        'spec.items[0].v: Invalid value: "string": v is immutable']


def test_an_optional_old_self_rule_runs_on_create_too() -> None:
    schema = _spec([], n={"type": "integer", "x-kubernetes-validations": [
        {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": True,
         "message": "n may only grow"},
        {"rule": "oldSelf.orValue(0) != 0 || self < 100 // a comment ends the rule",
         "optionalOldSelf": True, "message": "starts below 100"}]})
    assert _errors(schema, {"n": 5}) == []
    assert _errors(schema, {"n": 500}) == ['spec.n: Invalid value: "integer": starts below 100']
    assert _errors(schema, {"n": 500}, old={"n": 4}) == []
    assert _errors(schema, {"n": 3}, old={"n": 4}) == [
        'spec.n: Invalid value: "integer": n may only grow']


RATCHET = _spec([], size={"type": "integer", "x-kubernetes-validations": [
    {"rule": "self <= 10", "message": "at most 10"}]}, other=INT)


def test_an_unchanged_invalid_value_is_ratcheted_into_a_warning() -> None:
    warnings: list[str] = []
    assert _errors(RATCHET, {"size": 20, "other": 2}, old={"size": 20, "other": 1},
                   warnings=warnings) == []
    assert warnings == ['spec.size: Invalid value: "integer": at most 10']


def test_a_changed_or_new_invalid_value_is_not_ratcheted() -> None:
    expected = ['spec.size: Invalid value: "integer": at most 10']
    assert _errors(RATCHET, {"size": 21}, old={"size": 20}) == expected
    assert _errors(RATCHET, {"size": 20}, old={}) == expected
    assert _errors(RATCHET, {"size": 20}) == expected


def test_list_items_ratchet_with_their_nearest_correlated_parent() -> None:
    schema = _spec([], ports={"type": "array", "items": {
        "type": "integer", "x-kubernetes-validations": [{"rule": "self > 1024"}]}})
    warnings: list[str] = []
    assert _errors(schema, {"ports": [80]}, old={"ports": [80]}, warnings=warnings) == []
    assert warnings == ['spec.ports[0]: Invalid value: "integer": failed rule: self > 1024']
    assert _errors(schema, {"ports": [80, 2000]}, old={"ports": [80]}) == [
        'spec.ports[0]: Invalid value: "integer": failed rule: self > 1024']


def test_a_transition_rule_is_never_ratcheted() -> None:
    schema = _spec([{"rule": "self.n >= oldSelf.n", "message": "n may only grow"}], n=INT)
    assert _errors(schema, {"n": 1, "x": 1}, old={"n": 2, "x": 1}) == [
        'spec: Invalid value: "object": n may only grow']


# --- cost budget -----------------------------------------------------------------------


def test_the_per_object_budget_stops_further_rules() -> None:
    schema = _spec([{"rule": "self.min <= self.max"}, {"rule": "self.min >= 0"}],
                   min=INT, max=INT)
    node = compile_schema(schema)
    rule = node.properties["spec"].cel_rules()[0]
    assert rule.cost is not None
    cost = rule.cost.of({"min": 1, "max": 2}) * 3 // 2  # room for one call, not two
    errors = validate(node, {"spec": {"min": 1, "max": 2}}, cost_budget=cost)
    assert [str(e) for e in errors] == [
        'spec: Invalid value: "object": validation failed due to running out of cost '
        "budget, no further validation rules will be run"]
    assert validate(node, {"spec": {"min": 1, "max": 2}}, cost_budget=cost * 2) == []


def test_the_per_call_limit_refuses_one_costly_call() -> None:
    schema = _spec([], items={"type": "array", "items": INT, "x-kubernetes-validations": [
        {"rule": "self.all(x, self.all(y, x + y >= 0))", "message": "sums"}]})
    rule = compile_schema(schema).properties["spec"].properties["items"].cel_rules()[0]
    assert rule.cost is not None
    many = 1000  # a million pairs, each costing more than one
    assert rule.cost.of([1] * many) > cel_rules.PER_CALL_LIMIT
    assert _errors(schema, {"items": [1] * many}) == [
        "spec.items: Invalid value: \"array\": 'operation cancelled: actual cost limit "
        "exceeded': no further validation rules will be run due to call cost exceeds limit "
        "for rule: sums"]
    assert _errors(schema, {"items": [1, 2]}) == []


# --- compiled once per schema ------------------------------------------------------------


def test_rules_compile_once_per_schema_node() -> None:
    node = compile_schema(_spec([{"rule": "self.min <= self.max"}], min=INT, max=INT))
    spec = node.properties["spec"]
    first = spec.cel_rules()
    validate(node, {"spec": {"min": 1, "max": 2}})
    assert spec.cel_rules() is first
    assert first[0].program is not None and first[0].cost is not None
    assert first[0].cost.max_cost > 1


def test_validating_many_objects_compiles_each_rule_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from minikube_py.api.openapi_schema import compiled
    calls: list[str] = []

    def counting(validation: dict[str, Any], node: Any = None,
                 decl: Any = None) -> cel_rules.CompiledRule:
        calls.append(validation["rule"])
        return cel_rules.compile_rule(validation, node, decl)
    monkeypatch.setattr(compiled, "compile_rule", counting)
    rules = [{"rule": f"self.f{i} >= 0"} for i in range(5)]
    node = compile_schema(_spec(rules, **{f"f{i}": INT for i in range(5)}))
    for n in range(20):
        assert validate(node, {"spec": {f"f{i}": n for i in range(5)}}) == []
    assert [str(e) for e in validate(node, {"spec": {"f0": -1}})] == [
        'spec: Invalid value: "object": failed rule: self.f0 >= 0',
        'spec: Invalid value: "object": no such key: f1 evaluating rule: self.f1 >= 0',
        'spec: Invalid value: "object": no such key: f2 evaluating rule: self.f2 >= 0',
        'spec: Invalid value: "object": no such key: f3 evaluating rule: self.f3 >= 0',
        'spec: Invalid value: "object": no such key: f4 evaluating rule: self.f4 >= 0']
    assert sorted(calls) == [r["rule"] for r in rules]


# --- CRD-time checks -----------------------------------------------------------------------


def test_the_fields_of_a_rule_are_checked_with_the_crd() -> None:
    schema = _spec([{"rule": " "}, {"rule": "true", "message": " "},
                    {"rule": "true", "message": "two\nlines"},
                    {"rule": "true &&\n true"}, {"rule": "true", "messageExpression": " "},
                    {"rule": "true", "reason": "Bad"}, {"rule": "true", "fieldPath": ".nope"},
                    {"rule": "true", "fieldPath": ".min\n"}], min=INT)
    at = f"{ROOT}.properties[spec].x-kubernetes-validations"
    assert [str(e) for e in schema_errors(schema, ROOT)] == [
        f"{at}[0].rule: Required value: rule is not specified",
        f'{at}[1].message: Invalid value: " ": message must be non-empty if specified',
        f'{at}[2].message: Invalid value: "two\\nlines": message must not contain line breaks',
        f"{at}[3].message: Required value: message must be specified if rule contains line "
        "breaks",
        f"{at}[4].messageExpression: Required value: messageExpression must be non-empty if "
        "specified",
        f'{at}[5].reason: Unsupported value: "Bad": supported values: "FieldValueDuplicate", '
        '"FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
        f'{at}[6].fieldPath: Invalid value: ".nope": fieldPath must be a valid path',
        f'{at}[7].fieldPath: Invalid value: ".min\\n": fieldPath must not contain line breaks',
        f'{at}[7].fieldPath: Invalid value: ".min\\n": fieldPath must be a valid path']


def test_a_rule_that_does_not_compile_is_refused_with_the_crd() -> None:
    schema = _spec([{"rule": "self.min <="}, {"rule": "1 + 1"},
                    {"rule": "true", "messageExpression": "1"},
                    {"rule": "true", "optionalOldSelf": True}], min=INT)
    errors = [str(e) for e in schema_errors(schema, ROOT)]
    at = f"{ROOT}.properties[spec].x-kubernetes-validations"
    unset = ('Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", '
             "OptionalOldSelf:(*bool)(nil)}")
    assert errors[0].startswith(
        f'{at}[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:"self.min <=", '
        f'Message:"", MessageExpression:"", {unset}: compilation failed: ERROR: <input>:1:')
    assert errors[1:] == [
        f'{at}[1].rule: Invalid value: apiextensions.ValidationRule{{Rule:"1 + 1", '
        f'Message:"", MessageExpression:"", {unset}: cel expression must evaluate to a bool',
        f'{at}[2].messageExpression: Invalid value: apiextensions.ValidationRule{{Rule:"true", '
        f'Message:"", MessageExpression:"1", {unset}: messageExpression must evaluate to a '
        "string",
        f"{at}[3].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used "
        "in rule"]


def test_old_self_is_refused_where_old_values_cannot_be_correlated() -> None:
    immutable = [{"rule": "self == oldSelf"}]
    schema = _spec([], atomic={"type": "array", "maxItems": 10, "items": {
        "type": "string", "maxLength": 10, "x-kubernetes-validations": immutable}},
        keyed={"type": "array", "x-kubernetes-list-type": "map",
               "x-kubernetes-list-map-keys": ["k"], "items": {
                   "type": "object", "required": ["k"], "x-kubernetes-validations": immutable,
                   "properties": {"k": STR}}},
        whole={"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
            "name": {"type": "string", "maxLength": 10,
                     "x-kubernetes-validations": immutable}}},
        labels={"type": "object", "maxProperties": 10, "additionalProperties": {
            "type": "string", "maxLength": 10, "x-kubernetes-validations": immutable}})
    spec = f"{ROOT}.properties[spec]"
    assert [str(e) for e in schema_errors(schema, ROOT)] == [
        f'{spec}.properties[atomic].items.x-kubernetes-validations[0].rule: Invalid value: '
        f'"self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the '
        f"schema within {spec}.properties[atomic]",
        f'{spec}.properties[whole].properties[name].x-kubernetes-validations[0].rule: Invalid '
        f'value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of '
        f"the schema within {spec}.properties[whole]"]


def test_rules_compile_only_when_nothing_at_or_below_their_node_is_refused() -> None:
    schema = _spec([{"rule": "self.min <="}], min={"type": "string", "uniqueItems": True})
    assert [str(e) for e in schema_errors(schema, ROOT)] == [
        f"{ROOT}.properties[spec].properties[min].uniqueItems: Forbidden: uniqueItems cannot "
        "be set to true since the runtime complexity becomes quadratic"]


def test_escape() -> None:
    assert [cel_rules.escape(n) for n in ("namespace", "if", "a-b", "a.b", "a/b", "a__b", "x")] \
        == ["__namespace__", "__if__", "a__dash__b", "a__dot__b", "a__slash__b",
            "a__underscores__b", "x"]


def test_normalize_field_path() -> None:
    node = compile_schema({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"b.c": STR}},
        "m": {"type": "object", "additionalProperties": STR}}})
    assert cel_rules.normalize_field_path(".a['b.c']", node) == ("a.b.c", "")
    assert cel_rules.normalize_field_path(".m.key", node) == ("m[key]", "")
    assert cel_rules.normalize_field_path("a", node) == ("", "expected [ or . but got: a")
    assert cel_rules.normalize_field_path(".a[b]", node) == (
        "", "expected single quoted string but got b")
    assert cel_rules.normalize_field_path(".a.", node) == ("", "unexpected end of JSON path")


def test_rules_see_numbers_as_doubles_and_formatted_strings_as_cel_types() -> None:
    """UnstructuredToVal: a number field is a double even when its JSON is integral;
    duration, date-time, date and byte strings are durations, timestamps and bytes."""
    schema = _spec([
        {"rule": "self.ratio + 0.5 > 1.0", "message": "ratio"},
        {"rule": "self.timeout < duration('1h')", "message": "timeout"},
        {"rule": "self.at > timestamp('2020-01-01T00:00:00Z')", "message": "at"},
        {"rule": "self.day.getFullYear() == 2024", "message": "day"},
        {"rule": "size(self.data) == 3", "message": "data"}],
        ratio={"type": "number"}, timeout={"type": "string", "format": "duration"},
        at={"type": "string", "format": "date-time"}, day={"type": "string", "format": "date"},
        data={"type": "string", "format": "byte"})
    valid = {"ratio": 1, "timeout": "1m30s", "at": "2024-05-01T10:00:00Z", "day": "2024-02-29",
             "data": "YWJj"}
    assert _errors(schema, valid) == []
    assert _errors(schema, {"ratio": 0, "timeout": "2h", "at": "2019-05-01T10:00:00+02:00",
                            "day": "2023-01-01", "data": "YWJjZA=="}) == [
        f'spec: Invalid value: "object": {m}' for m in ("ratio", "timeout", "at", "day", "data")]


def test_duration_parsing() -> None:
    def seconds(text: str) -> float | None:
        parsed = cel_rules._duration(text)
        return None if parsed is None else parsed.ToTimedelta().total_seconds()
    assert [seconds(t) for t in ("1h2m3.5s", "0", "-1s", "1d", "2w", "1ms", "1x", "s", "1s2")] \
        == [3723.5, 0, -1, 86400, 1209600, 0.001, None, None, None]


# --- ratcheting of the OpenAPI checks ------------------------------------------------------

SCHEMA_RATCHET = _spec([], size={"type": "integer", "maximum": 10}, other=INT,
                       items={"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["k"], "items": {
                                  "type": "object", "required": ["k"], "properties": {
                                      "k": STR, "v": {"type": "string", "maxLength": 2}}}},
                       tags={"type": "array", "items": {"type": "string", "maxLength": 2}},
                       meta={"type": "object", "required": ["name"],
                             "properties": {"name": STR, "note": STR}})


def test_an_unchanged_value_that_breaks_the_schema_is_ratcheted() -> None:
    old = {"size": 20, "other": 1, "items": [{"k": "a", "v": "long"}], "tags": ["long"],
           "meta": {"note": "x"}}
    new = copy.deepcopy(old) | {"other": 2, "items": [{"k": "b", "v": "ok"},
                                                      {"k": "a", "v": "long"}]}
    assert _errors(SCHEMA_RATCHET, new, old=old) == []


def test_a_changed_value_that_breaks_the_schema_is_refused() -> None:
    old = {"size": 20, "items": [{"k": "a", "v": "long"}], "tags": ["long"],
           "meta": {"note": "x"}}
    new = {"size": 21, "items": [{"k": "a", "v": "longer"}], "tags": ["long", "x"],
           "meta": {"note": "y"}}
    assert _errors(SCHEMA_RATCHET, new, old=old) == [
        "spec.size: Invalid value: 21: spec.size in body should be less than or equal to 10",
        "spec.items[0].v: Too long: may not be more than 2 bytes",
        "spec.tags[0]: Too long: may not be more than 2 bytes",
        "spec.meta.name: Required value"]
    assert len(_errors(SCHEMA_RATCHET, old)) == 4


@pytest.mark.parametrize(("rule", "undefined"), [
    ("self.z == 100", "<input>:1:5: undefined field 'z'"),
    ("self.x == 1", None),
    ("has(self.q)", "<input>:1:4: undefined field 'q'"),
    ("self.q.r == 1", "<input>:1:5: undefined field 'q'"),
    ("self.m.any.a == ''", None),
    ("self.m.any.b == ''", "<input>:1:11: undefined field 'b'"),
    ("self.l.all(s, s == self.v)", "<input>:1:24: undefined field 'v'"),
    ("{'k': self.w}.size() == 1", "<input>:1:11: undefined field 'w'"),
    ("self.open.anything == 1", None),
    ("self.x > 0 &&\nself.y == 1", "<input>:2:5: undefined field 'y'"),
])
def test_a_rule_selecting_a_field_the_schema_does_not_declare_is_refused(
        rule: str, undefined: str | None) -> None:
    """The type checker's `undefined field` when the CRD is written: on declared
    properties, through maps' values, lists' comprehensions and map literals, never
    below a node that preserves unknown fields."""
    schema = _spec([{"rule": rule, "message": "m"}], x={"type": "integer"},
                   l={"type": "array", "items": {"type": "string"}},
                   m={"type": "object", "additionalProperties": {
                       "type": "object", "properties": {"a": {"type": "string"}}}},
                   open={"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    details = [e.detail for e in schema_errors(schema, ROOT)]
    if undefined is None:
        assert details == []
    else:
        assert len(details) == 1 and f"compilation failed: ERROR: {undefined}" in details[0]


def test_a_rule_at_the_root_may_select_the_type_meta_and_metadata() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [
        {"rule": "self.metadata.name.startsWith('a') && self.kind == 'K' && self.spec.x > 0"},
    ], "properties": {"spec": {"type": "object", "properties": {"x": {"type": "integer"}}}}}
    assert schema_errors(schema, ROOT) == []
    schema["x-kubernetes-validations"][0]["rule"] += " && self.status.y == 1"
    assert ["undefined field 'status'" in e.detail for e in schema_errors(schema, ROOT)] == [True]
