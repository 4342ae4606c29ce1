"""The cost of CEL rules (cel_cost.py): the estimates upstream's cost stability test
(apiextensions-apiserver's celcoststability_test.go, TestCelEstimatedCostStability) pins,
the limits a definition is refused by, and the runtime cost of one call."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api.openapi_schema import cel as cel_rules
from minikube_py.api.openapi_schema import cel_cost
from minikube_py.api.openapi_schema.compiled import compile_schema
from minikube_py.api.openapi_schema.structural import schema_errors
from minikube_py.api.openapi_schema.validation import validate
from minikube_py.api.resources import by_kind
from minikube_py.apiserver.registry.strategies import strategy_for

INT = {"type": "integer"}
NUM = {"type": "number"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
BYTES = {"type": "string", "format": "byte"}
DURATION = {"type": "string", "format": "duration"}
DATE_TIME = {"type": "string", "format": "date-time"}
DATE = {"type": "string", "format": "date"}
INT_OR_STRING = {"x-kubernetes-int-or-string": True}
ROOT = "spec.versions[0].schema.openAPIV3Schema"


def _list(items: dict[str, Any], list_type: str = "atomic") -> dict[str, Any]:
    return {"type": "array", "x-kubernetes-list-type": list_type, "items": items}


def _map(values: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": values}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def _vals(*schemas: dict[str, Any]) -> dict[str, Any]:
    """upstream's schemas(): properties val1, val2, ... of the given schemas."""
    return _object({f"val{n + 1}": s for n, s in enumerate(schemas)})


def _literal(a: str, b: str, literal: str) -> str:
    """upstream's ValsEqualThemselvesAndDataLiteral."""
    return f"{a} == {literal} && {literal} == {a} && {a} == {b}"


LIST_MAP = {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["k"], "items": _object({"k": STR, "v": STR})}

# (case name, schema, {rule: upstream's estimated cost})
STABILITY = [
    ("integers", _vals(INT, INT, INT, INT, INT, INT), {
        _literal("self.val1", "self.val2", "9223372036854775807"): 8,
        "self.val1 == self.val6": 4, "type(self.val1) == int": 4,
        "self.val3 + 1 == 2147483647 + 1": 5}),
    ("numbers", _vals(NUM, NUM, NUM, NUM, NUM, NUM, NUM), {
        "self.val7 == 1.0": 2, "type(self.val7) == double": 4}),
    ("numeric comparisons", _vals(INT, NUM, NUM, NUM, NUM, NUM, NUM), {
        "double(self.val1) < self.val4": 6, "self.val1 < int(self.val4)": 6,
        "double(5) < 10.0": 2, "double(self.val1) < 10.0": 4}),
    ("unicode strings", _vals(STR, STR), {
        _literal("self.val1", "self.val2", "'Rook takes 👑'"): 314585,
        "self.val1.startsWith('Rook')": 3, "!self.val1.startsWith('knight')": 4,
        "self.val1.matches('^[^0-9]*$')": 943721, "!self.val1.matches('^[0-9]*$')": 629149,
        "type(self.val1) == string": 4, "size(self.val1) == 12": 4,
        "self.val1.indexOf('o') == 1": 314576,
        "self.val1.replace(' ', 'x') == 'Rookxtakesx👑'": 629150,
        "self.val1.split(' ') == ['Rook', 'takes', '👑']": 629159,
        "self.val1.substring(5) == 'takes 👑'": 314576,
        "self.val1.substring(4, 10).trim() == 'takes'": 629149,
        "self.val1.upperAscii() == 'ROOK TAKES 👑'": 314577,
        "self.val1.lowerAscii() == self.val1.lowerAscii()": 943723}),
    ("conversions", _vals(INT, NUM, NUM, NUM, BOOL, STR, BYTES, STR, DURATION, STR, DATE_TIME,
                          STR, DATE), {
        "int(self.val2) == self.val1": 5, "double(self.val1) == self.val2": 5,
        "bytes(self.val6) == self.val7": 629150, "string(self.val1) == self.val6": 314578,
        "string(self.val4) == '10.5'": 4, "string(self.val7) == self.val6": 629150,
        "duration(self.val8) == self.val9": 6, "timestamp(self.val10) == self.val11": 6,
        "string(self.val11) == self.val10": 314578}),
    ("lists", _vals(_list(INT), _list(INT)), {
        _literal("self.val1", "self.val2", "[1, 2, 3]"): 157317,
        "1 in self.val1": 1572865, "self.val2[0] in self.val1": 1572868,
        "!(0 in self.val1)": 1572866, "self.val1 + self.val2 == [1, 2, 3, 1, 2, 3]": 16,
        "self.val1 + [4, 5] == [1, 2, 3, 4, 5]": 24, "has(self.val1)": 1,
        "has(self.val1) && has(self.val2)": 2, "!has(self.val1)": 2,
        "self.val1.all(k, size(self.val1) > 0)": 11010044,
        "self.val1.exists_one(k, self.val1 == [2])": 23592949,
        "!self.val1.exists_one(k, size(self.val1) > 0)": 9437183,
        "size(self.val1) == 2": 4,
        "size(self.val1.filter(k, size(self.val1) > 1)) == 1": 26738686}),
    ("listSets", _vals(_list(STR, "set"), _list(STR, "set")), {
        "self.val1 == ['c', 'b', 'a']": 13, "self.val1 == self.val2": 104862,
        "'a' in self.val1": 1048577, "self.val1.all(k, size(self.val1) > 0)": 7340028,
        "self.val1.exists_one(k, self.val1 == ['a'])": 15728629}),
    ("maps", _vals(_map(STR), _map(STR)), {
        "self.val1 == self.val2": 39326, "'k1' in self.val1": 3, "!('k3' in self.val1)": 4,
        "self.val1 == {'k1': 'a', 'k2': 'b'}": 33,
        "self.val1.all(k, size(self.val1) > 0)": 2752508,
        "self.val1.exists_one(k, size(self.val1) > 0)": 2359294,
        "size(self.val1.filter(k, size(self.val1) > 1)) == 1": 6684670}),
    ("listMaps", _object({"objs": _list(LIST_MAP)}), {
        "self.objs[0] == self.objs[1]": 104864,
        "self.objs[0] + self.objs[2] == self.objs[2]": 104868,
        "self.objs[0] == [self.objs[0][0], self.objs[0][1]]": 22,
        "size(self.objs[0] + [self.objs[3][0]]) == 3": 20,
        "self.objs[0].all(k, size(self.objs[0]) > 0)": 8388604,
        "size(self.objs[0]) == 2": 5}),
    ("objects", _object({"objs": _list(_object({"f1": STR, "f2": STR}))}), {
        "self.objs[0] == self.objs[1]": 6}),
    ("object access", _object({
        "a": _object({"b": INT, "c": INT, "d": {**INT, "nullable": True}}),
        "a1": _object({"b1": _object({"c1": INT}), "d2": _object({"e2": INT})})}), {
        "has(self.a.b)": 2, "has(self.a1.b1.c1)": 3,
        "!(has(self.a1.d2) && has(self.a1.d2.e2))": 6, "!has(self.a1.d2)": 3,
        "has(self.a)": 1}),
    ("list access", _object({"array": _list(INT)}), {
        "2 in self.array": 1572865, "self.array.all(e, e > 0)": 7864318,
        "self.array.exists(e, e > 2)": 9437181, "self.array.exists_one(e, e > 4)": 6291456,
        "!self.array.exists_one(e, e == 2)": 4718594,
        "size(self.array.filter(e, e%2 == 0)) == 3": 25165823,
        "self.array.map(e, e * 20).filter(e, e > 50).exists(e, e == 60)": 53477367,
        "size(self.array) == 8": 4}),
    ("typemeta and objectmeta access specified", _object({
        "kind": STR, "apiVersion": STR,
        "metadata": _object({"name": STR, "generateName": STR})}), {
        "self.kind == 'Pod'": 3, "self.metadata.name == 'foo'": 4,
        "self.metadata.generateName == 'pickItForMe'": 5}),
    ("embedded object", _object({"embedded": {
        "type": "object", "x-kubernetes-embedded-resource": True}}), {
        "self.embedded.kind == 'Pod'": 4,
        "self.embedded.metadata.generateName == 'pickItForMe'": 6}),
    ("embedded object with preserve unknown", _object({"embedded": {
        "type": "object", "x-kubernetes-embedded-resource": True,
        "x-kubernetes-preserve-unknown-fields": True}}), {
        "self.embedded.metadata.name == 'foo'": 5, "has(self.embedded)": 1}),
    ("string in intOrString", _object({"something": INT_OR_STRING}), {
        "type(self.something) == int ? self.something == 1 : self.something == '25%'": 7,
        "type(self.something) == string && self.something == '25%'": 7,
        "self.something == '25%'": 3, "self.something != 1": 3,
        "self.something == 1 || self.something == '25%'": 6,
        "self.something != ['anything']": 13}),
]


@pytest.mark.parametrize(("schema", "rule", "expected"), [
    (schema, rule, cost) for _, schema, rules in STABILITY for rule, cost in rules.items()],
    ids=[f"{name}: {rule}" for name, _, rules in STABILITY for rule in rules])
def test_the_estimate_is_upstreams(schema: dict[str, Any], rule: str, expected: int) -> None:
    checked = cel_cost.decode(cel_rules.environment().compile(rule))
    assert cel_cost.estimate(checked, cel_cost.schema_decl(schema, False)) == expected


def test_bounds_derive_from_the_request_size_unless_declared() -> None:
    unbounded = cel_cost.schema_decl(_list(STR), False)
    assert unbounded is not None and unbounded.max_elements == (3 * 1024 * 1024 - 2) // 3
    bounded = cel_cost.schema_decl({**_list({**STR, "maxLength": 5}), "maxItems": 7}, False)
    assert bounded is not None and bounded.max_elements == 7
    assert bounded.elem is not None and bounded.elem.max_elements == 20  # 4 bytes a rune
    required = cel_cost.schema_decl({**_object({"name": STR}), "required": ["name"]}, False)
    assert required is not None and required.min_size == 2 + len("name") + 2 + 4


# --- when a definition is written ------------------------------------------------------


def test_a_rule_over_the_per_expression_limit_is_refused_with_upstreams_words() -> None:
    # crd_validation_rules.go's case: a rule on an unbounded list within an unbounded list
    schema = _object({"spec": _object({"x": {"type": "array", "items": {
        "type": "array", "items": STR,
        "x-kubernetes-validations": [{"rule": "self.all(s, s == 'string constant')"}]}}})})
    at = f"{ROOT}.properties[spec].properties[x].items.x-kubernetes-validations[0].rule"
    hint = ("(try simplifying the rule, or adding maxItems, maxProperties, and maxLength "
            "where arrays, maps, and strings are declared)")
    assert [str(e) for e in schema_errors(schema, ROOT)] == [
        f"{at}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x "
        f"{hint}",
        f"{at}: Forbidden: contributed to estimated rule cost total exceeding cost limit for "
        "entire OpenAPIv3 schema",
        f"{ROOT}: Forbidden: x-kubernetes-validations estimated rule cost total for entire "
        f"OpenAPIv3 schema exceeds budget by factor of more than 100x {hint}"]


def test_declared_bounds_bring_the_same_rule_within_the_limit() -> None:
    schema = _object({"spec": _object({"x": {"type": "array", "maxItems": 10, "items": {
        "type": "array", "maxItems": 10, "items": {**STR, "maxLength": 64},
        "x-kubernetes-validations": [{"rule": "self.all(s, s == 'string constant')"}]}}})})
    assert schema_errors(schema, ROOT) == []


def test_a_message_expression_over_the_limit_is_refused() -> None:
    schema = _object({"f": {**_list(STR), "x-kubernetes-validations": [
        {"rule": "true", "messageExpression": "string(self[0]) + string(self[1])"}]}})
    errors = [str(e) for e in schema_errors(schema, ROOT)]
    at = f"{ROOT}.properties[f].x-kubernetes-validations[0].messageExpression"
    assert errors[0].startswith(f"{at}: Forbidden: estimated messageExpression cost exceeds "
                                "budget by factor of more than 100x")
    # and with it the schema's total: the expression that made it up, then the total
    assert errors[1:] == [
        f"{at}: Forbidden: contributed to estimated rule cost total exceeding cost limit for "
        "entire OpenAPIv3 schema",
        f"{ROOT}: Forbidden: x-kubernetes-validations estimated rule cost total for entire "
        "OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the "
        "rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and "
        "strings are declared)"]


def test_rules_within_the_limit_each_can_exceed_the_schemas_total() -> None:
    # each rule costs about 7.9 million (under 10 million), thirteen of them over 100 million
    properties = {f"a{n:02}": {**_list(INT), "x-kubernetes-validations": [
        {"rule": "self.all(e, e > 0)"}]} for n in range(13)}
    errors = [str(e) for e in schema_errors(_object(properties), ROOT)]
    contributed = [e for e in errors if "contributed to estimated rule cost total" in e]
    assert len(contributed) == 4  # the four most expensive
    assert all(e.startswith(f"{ROOT}.properties[a") for e in contributed)
    assert errors[-1].startswith(
        f"{ROOT}: Forbidden: x-kubernetes-validations estimated rule cost total for entire "
        "OpenAPIv3 schema exceeds budget by factor of 1.0")
    assert len(errors) == 5
    del properties["a12"]
    assert schema_errors(_object(properties), ROOT) == []


def test_the_factor_reads_as_upstreams() -> None:
    limit = cel_cost.STATIC_ESTIMATED_COST_LIMIT
    assert "by factor of 1.200000x" in cel_cost.cost_error_message("c", limit * 12 // 10, limit)
    assert "by factor of 2.5x" in cel_cost.cost_error_message("c", limit * 5 // 2, limit)
    assert "by factor of more than 100x" in cel_cost.cost_error_message("c", limit * 101,
                                                                         limit)


# --- when a value is validated ---------------------------------------------------------

LARGE = _object({"spec": _object({
    "largeArray": {"type": "array", "maxItems": 725, "items": INT},
    "x": INT}),
})
NESTED = "self.largeArray.all(x, self.largeArray.all(y, y == x))"


def _spec_rule(schema: dict[str, Any], rule: str) -> cel_rules.CompiledRule:
    schema = {**schema, "properties": {**schema["properties"], "spec": {
        **schema["properties"]["spec"], "x-kubernetes-validations": [{"rule": rule}]}}}
    return compile_schema(schema).properties["spec"].cel_rules()[0]


def test_a_call_costs_by_the_values_own_sizes() -> None:
    rule = _spec_rule(LARGE, NESTED)
    assert rule.cost is not None
    assert rule.cost.max_cost == 2632478  # the estimate: within the per-expression limit
    small, large = rule.cost.of({"largeArray": [2, 2]}), rule.cost.of(
        {"largeArray": [20] * 725})
    assert small < 100
    assert large > cel_rules.PER_CALL_LIMIT
    assert rule.cost.of({"x": 1}) < 10  # no list: no iterations


def test_a_rule_without_sizes_costs_the_same_on_every_value() -> None:
    rule = _spec_rule(LARGE, "self.x > 0")
    assert rule.cost is not None
    assert rule.cost.of({"x": 1}) == rule.cost.of({"x": 1, "largeArray": [1] * 700}) == 3


def test_the_725_element_list_is_refused_for_its_call_cost() -> None:
    schema = {**LARGE, "properties": {"spec": {**LARGE["properties"]["spec"],
                                               "x-kubernetes-validations": [{"rule": NESTED}]}}}
    node = compile_schema(schema)
    # (cel-expr-python stops any evaluation at 10,000 iterations, whatever it costs)
    assert validate(node, {"spec": {"largeArray": [20] * 90}}) == []
    assert [str(e) for e in validate(node, {"spec": {"largeArray": [20] * 725}})] == [
        "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': "
        "no further validation rules will be run due to call cost exceeds limit for rule: "
        f"{NESTED}"]


# --- an update that leaves a schema as it was -------------------------------------------

COSTLY = _object({"val1": {**_list(INT), "x-kubernetes-validations": [
    {"rule": "self.exists_one(k, self == [2])"}]}})  # over 10 million, under 100 million


def test_an_unchanged_schema_is_not_held_to_the_per_expression_limit_again() -> None:
    errors = [str(e) for e in schema_errors(COSTLY, ROOT)]
    assert len(errors) == 1 and "estimated rule cost exceeds budget by factor of" in errors[0]
    assert schema_errors(COSTLY, ROOT, suppress_per_expression_cost=True) == []


def test_a_definitions_update_suppresses_it_for_the_versions_it_leaves_alone() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                              "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": COSTLY}}],
                    "conversion": {"strategy": "None"}},
           "status": {"storedVersions": ["v1"]}}
    resource = by_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    assert resource is not None
    strategy = strategy_for(resource)
    assert any("exceeds budget" in str(e) for e in strategy.validate(crd))
    assert strategy.validate_update(crd, crd) == []
    changed = {**crd, "spec": {**crd["spec"], "versions": [{
        **crd["spec"]["versions"][0], "schema": {"openAPIV3Schema": {
            **COSTLY, "description": "changed"}}}]}}
    assert any("exceeds budget" in str(e) for e in strategy.validate_update(changed, crd))
