"""The CEL format library (cel_format.py): upstream's format_test.go cases, each evaluated
in the environment rules compile in, and a CRD rule that uses it with its messageExpression,
as format.go's own example writes one."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api.openapi_schema import cel as cel_rules
from minikube_py.api.openapi_schema import cel_cost
from minikube_py.api.openapi_schema.cel_format import CONSTANT_FORMATS, optional_results
from minikube_py.api.openapi_schema.compiled import compile_schema
from minikube_py.api.openapi_schema.validation import validate
from minikube_py.apiserver.auth.admission.policycel import compile_expression


def _eval(expression: str, self_value: Any = None) -> Any:
    program = cel_rules.environment().compile(optional_results(expression))
    return program.eval(data={"self": self_value}).plain_value()


def _optional(expression: str) -> list[str] | None:
    """An optional result as Python: None for optional.none(), else its value."""
    if not _eval(f"({expression}).hasValue()"):
        return None
    value: list[str] = _eval(f"({expression}).value()")
    return value


DNS1123_LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                 "characters or '-', and must start and end with an alphanumeric character "
                 "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1123_SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                     "characters, '-' or '.', and must start and end with an alphanumeric "
                     "character (e.g. 'example.com', regex used for validation is "
                     r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
DNS1035_LABEL = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                 "start with an alphabetic character, and end with an alphanumeric character "
                 "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                 "'[a-z]([-a-z0-9]*[a-z0-9])?')")
QUALIFIED_NAME = ("name part must consist of alphanumeric characters, '-', '_' or '.', and "
                  "must start and end with an alphanumeric character (e.g. 'MyName',  or "
                  "'my.name',  or '123-abc', regex used for validation is "
                  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, "
               "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
               "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
               "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")

# format_test.go's TestFormat: the expression and its value (None: optional.none())
CASES = [
    ('format.dns1123Label().validate("my-label-name")', None),
    ('format.dns1123Subdomain().validate("apiextensions.k8s.io")', None),
    ('format.qualifiedName().validate("apiextensions.k8s.io/v1beta1")', None),
    ('format.dns1123LabelPrefix().validate("my-label-prefix-")', None),
    ('format.dns1123SubdomainPrefix().validate("mysubdomain.prefix.-")', None),
    ('format.dns1035LabelPrefix().validate("my-label-prefix-")', None),
    ('format.uri().validate("http://example.com")', None),
    ('format.uuid().validate("123e4567-e89b-12d3-a456-426614174000")', None),
    ('format.byte().validate("aGVsbG8=")', None),
    ('format.date().validate("2021-01-01")', None),
    ('format.datetime().validate("2021-01-01T00:00:00Z")', None),
    ('format.dns1123Label().validate("contains a space")', [DNS1123_LABEL]),
    ('format.dns1123Subdomain().validate("contains a space")', [DNS1123_SUBDOMAIN]),
    ('format.dns1035Label().validate("contains a space")', [DNS1035_LABEL]),
    ('format.qualifiedName().validate("contains a space")', [QUALIFIED_NAME]),
    ('format.dns1123LabelPrefix().validate("contains a space-")', [DNS1123_LABEL]),
    ('format.dns1123SubdomainPrefix().validate("contains a space-")', [DNS1123_SUBDOMAIN]),
    ('format.dns1035LabelPrefix().validate("contains a space-")', [DNS1035_LABEL]),
    ('format.dns1123Label().validate("my-label-name")', None),
    ('format.dns1123Subdomain().validate("example.com")', None),
    ('format.dns1035Label().validate("my-label-name")', None),
    ('format.qualifiedName().validate("my.name")', None),
    ('format.byte().validate("aGVsbG8")', ["invalid base64"]),
    ('format.date().validate("2020-01-01")', None),
    ('format.date().validate("2020-01-32")', ["invalid date"]),
    ('format.datetime().validate("2020-01-01T00:00:00Z")', None),
    ('format.datetime().validate("2020-01-32T00:00:00Z")', ["invalid datetime"]),
    ('format.labelValue().validate("my-cool-label-Value")', None),
    ('format.labelValue().validate("my-cool-label-Value!!\\n\\n!!!")', [LABEL_VALUE]),
    # not upstream's cases: the uri format's error, and a Format found by name
    ('format.uri().validate("example.com/path")',
     ['parse "example.com/path": invalid URI for request']),
    ('format.named("dns1035Label").value().validate("1abc")', [DNS1035_LABEL]),
]


@pytest.mark.parametrize(("expression", "expected"), CASES, ids=[c[0] for c in CASES])
def test_format_validate(expression: str, expected: list[str] | None) -> None:
    assert _optional(expression) == expected


def test_an_unknown_format_name_is_none() -> None:
    assert _eval('format.named("unknown").hasValue()') is False


@pytest.mark.parametrize("name", sorted(CONSTANT_FORMATS))
def test_each_format_is_found_by_name_and_equals_only_itself(name: str) -> None:
    """format_test.go's loop over ConstantFormats: lookup, and comparison of all pairs."""
    assert _eval(f'format.named("{name}").hasValue()') is True
    assert _eval(f'format.named("{name}").value() == format.{name}()') is True
    for other in CONSTANT_FORMATS:
        if other != name:
            assert _eval(f"format.{name}() == format.{other}()") is False


def test_format_names_fit_upstreams_size_limit() -> None:
    """TestSizeLimit: every name is at most cel.MaxFormatSize (64) characters."""
    assert all(len(name) <= 64 for name in CONSTANT_FORMATS)


def test_string_literals_are_left_alone() -> None:
    assert optional_results("'x.validate(1)' + format.named('a.validate(')") == \
        "'x.validate(1)' + format.named('a.validate(')[?\"format\"]"
    assert _eval('"format.named(\'uri\')" + "x"') == "format.named('uri')x"


def test_a_crd_rule_reports_the_formats_problems_as_its_message() -> None:
    """format.go's example: the rule checks with validate(), the messageExpression joins
    what it found."""
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"host": {"type": "string"}},
        "x-kubernetes-validations": [{
            "rule": "!format.dns1123Label().validate(self.host).hasValue()",
            "messageExpression":
                "format.dns1123Label().validate(self.host).value().join('\\n')"}]}}}
    node = compile_schema(schema)
    assert [str(e) for e in validate(node, {"spec": {"host": "web-1"}})] == []
    assert [str(e) for e in validate(node, {"spec": {"host": "Web_1"}})] == [
        f'spec: Invalid value: "object": {DNS1123_LABEL}']


def test_validate_costs_as_a_regex_over_the_string() -> None:
    """library/cost.go: validate's estimate is the string's size (maxLength * 4 bytes)
    times the traversal factor (0.1), times 128 * 0.25 for the regex: 10 more characters
    cost 4 * 32 more."""
    def estimate(max_length: int) -> int:
        schema = {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": max_length}}}
        program = cel_rules.environment().compile(optional_results(
            "!format.dns1123Label().validate(self.name).hasValue()"))
        return cel_cost.estimate(cel_cost.decode(program), cel_cost.schema_decl(schema, False))

    assert estimate(110) - estimate(100) == 128
    assert estimate(100) - estimate(10) == 9 * 128


def test_policy_expressions_have_the_library_too() -> None:
    """A ValidatingAdmissionPolicy's expressions compile in the same libraries."""
    program, error = compile_expression(
        "!format.dns1123Label().validate(object.metadata.name).hasValue()", "bool")
    assert error == ""
    assert program.eval(data={"object": {"metadata": {"name": "web-1"}}}).value() is True
    assert program.eval(data={"object": {"metadata": {"name": "Web_1"}}}).value() is False
