"""Label and field selectors parse, match and print as upstream's labels and fields."""

from __future__ import annotations

import pytest

from minikube_py.api.selectors import (
    FieldSelector,
    LabelSelector,
    Requirement,
    SelectorError,
    label_selector_from_dict,
    label_selector_to_string,
    parse_field_selector,
    parse_label_selector,
)

# --- label selectors from text ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "requirements"),
    [
        ("", ()),
        ("app=web", (Requirement("app", "=", ("web",)),)),
        ("app==web", (Requirement("app", "==", ("web",)),)),
        ("app!=web", (Requirement("app", "!=", ("web",)),)),
        ("app=", (Requirement("app", "=", ("",)),)),
        ("env in (b,a)", (Requirement("env", "in", ("a", "b")),)),
        ("env notin (a)", (Requirement("env", "notin", ("a",)),)),
        ("release", (Requirement("release", "exists"),)),
        ("!legacy", (Requirement("legacy", "!"),)),
        ("x>1", (Requirement("x", "gt", ("1",)),)),
        ("x<1", (Requirement("x", "lt", ("1",)),)),
        ("\rx", (Requirement("x", "exists"),)),
        ("x in ()", (Requirement("x", "in", ("",)),)),
        ("x in (abc,)", (Requirement("x", "in", ("", "abc")),)),
        ("x notin (abc,,def)", (Requirement("x", "notin", ("", "abc", "def")),)),
        ("foo  in\t (abc)", (Requirement("foo", "in", ("abc",)),)),
        ("x  notin\n\t(abc, def )", (Requirement("x", "notin", ("abc", "def")),)),
        ("notin=in", (Requirement("notin", "=", ("in",)),)),
        ("k in (in,notin)", (Requirement("k", "in", ("in", "notin")),)),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            (Requirement("0.1.2.domain/99", "notin", ("10.10.100.1", "tick.tack.clock")),),
        ),
        (
            "x,y in (a)",
            (Requirement("x", "exists"), Requirement("y", "in", ("a",))),
        ),
    ],
)
def test_parse_label_selector_builds_requirements(
    text: str, requirements: tuple[Requirement, ...]
) -> None:
    assert parse_label_selector(text).requirements == requirements


def test_parsed_requirements_are_sorted_by_key() -> None:
    selector = parse_label_selector("tier!=db,app=web,!legacy,env in (a,b),release")
    assert [r.key for r in selector.requirements] == ["app", "env", "legacy", "release", "tier"]
    assert str(selector) == "app=web,env in (a,b),!legacy,release,tier!=db"


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x= ,z= ", "x=,z="),
        ("x>1,z<5", "x>1,z<5"),
        ("z notin (),x in (def,abc)", "x in (abc,def),z notin ()"),
        ("a=x,x=a", "a=x,x=a"),
        ("x=a,a=x", "a=x,x=a"),
    ],
)
def test_label_selector_string_is_canonical(text: str, canonical: str) -> None:
    assert str(parse_label_selector(text)) == canonical


@pytest.mark.parametrize(
    ("text", "labels", "matches"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y", {"x": "z"}, False),
        ("x=z", {}, False),
        ("x==y", {"x": "y"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x!=y", {}, True),
        ("app=", {"app": ""}, True),
        ("app=", {}, False),
        ("x", {"x": "z"}, True),
        ("x", {"y": "z"}, False),
        ("!x", {"y": "z"}, True),
        ("!x", {"x": "z"}, False),
        ("x in (a,b)", {"x": "b"}, True),
        ("x in (a,b)", {"x": "c"}, False),
        ("x in (a,b)", {}, False),
        ("x notin (a,b)", {"x": "c"}, True),
        ("x notin (a,b)", {"x": "a"}, False),
        ("x notin (a,b)", {}, True),
        ("x>1", {"x": "2"}, True),
        ("x>1", {"x": "0"}, False),
        ("x>1", {"x": "v2"}, False),
        ("x<1", {"x": "0"}, True),
        ("x<1", {}, False),
        ("foo=bar,baz=blah", {"foo": "bar", "baz": "blah"}, True),
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
    ],
)
def test_label_selector_matches(text: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_label_selector(text).matches(labels) is matches


def test_label_selector_treats_missing_labels_as_empty() -> None:
    assert parse_label_selector("!app").matches(None)
    assert not parse_label_selector("app").matches(None)


def test_only_the_empty_selector_is_empty() -> None:
    assert parse_label_selector("").empty()
    assert not parse_label_selector("a").empty()


INVALID_KEY_DETAIL = (
    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
    "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
    "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("app in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("=x", "found '=', expected: !, identifier, or 'end of string'"),
        (
            "a b",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("app=bad value", "found 'value', expected: ',' or 'end of string'"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
        ("x notin (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("x,", "found '', expected: identifier after ','"),
        ("a,,b", "found ',', expected: identifier after ','"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("x=(", "unable to parse requirement: found '(', expected: identifier"),
        (
            "x<a",
            'unable to parse requirement: values[0]: Invalid value: "a": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "a/b/c=d",
            f'unable to parse requirement: <nil>: Invalid value: "a/b/c": {INVALID_KEY_DETAIL}',
        ),
        (
            "k=" + "v" * 64,
            f'unable to parse requirement: values[0][k]: Invalid value: "{"v" * 64}": '
            "must be no more than 63 bytes",
        ),
    ],
)
def test_parse_label_selector_rejects_bad_syntax_with_upstream_message(
    text: str, message: str
) -> None:
    with pytest.raises(SelectorError) as err:
        parse_label_selector(text)
    assert str(err.value) == message


def test_parse_label_selector_rejects_invalid_label_values() -> None:
    with pytest.raises(SelectorError, match=r'values\[0\]\[x\]: Invalid value: "a\|\|y"'):
        parse_label_selector("x=a||y=b")


# --- label selectors from metav1.LabelSelector ------------------------------------------


@pytest.mark.parametrize(
    ("expression", "labels", "matches"),
    [
        ({"key": "tier", "operator": "In", "values": ["fe", "be"]}, {"tier": "be"}, True),
        ({"key": "tier", "operator": "In", "values": ["fe", "be"]}, {"tier": "db"}, False),
        ({"key": "tier", "operator": "NotIn", "values": ["db"]}, {"tier": "fe"}, True),
        ({"key": "tier", "operator": "NotIn", "values": ["db"]}, {}, True),
        ({"key": "tier", "operator": "NotIn", "values": ["db"]}, {"tier": "db"}, False),
        ({"key": "tier", "operator": "Exists"}, {"tier": ""}, True),
        ({"key": "tier", "operator": "Exists"}, {}, False),
        ({"key": "tier", "operator": "DoesNotExist"}, {}, True),
        ({"key": "tier", "operator": "DoesNotExist"}, {"tier": "fe"}, False),
    ],
)
def test_match_expressions_with_each_operator(
    expression: dict[str, object], labels: dict[str, str], matches: bool
) -> None:
    selector = label_selector_from_dict({"matchExpressions": [expression]})
    assert selector.matches(labels) is matches


def test_match_labels_and_expressions_are_anded() -> None:
    selector = label_selector_from_dict(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}],
        }
    )
    assert selector.matches({"app": "web", "tier": "fe"})
    assert not selector.matches({"app": "web", "tier": "be"})
    assert not selector.matches({"tier": "fe"})


def test_nil_label_selector_matches_nothing_and_empty_matches_everything() -> None:
    nothing = label_selector_from_dict(None)
    assert not nothing.matches({})
    assert not nothing.matches({"app": "web"})
    assert not nothing.empty()
    everything = label_selector_from_dict({})
    assert everything.matches({"app": "web"})
    assert everything.empty()
    assert label_selector_from_dict({"matchLabels": {}, "matchExpressions": []}).empty()
    assert LabelSelector.match_nothing() == nothing
    assert LabelSelector.everything() == everything


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]},
            '"Equals" is not a valid pod selector operator',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            "values: Invalid value: []string{}: for 'in', 'notin' operators, "
            "values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            'values: Invalid value: []string{"x"}: '
            "values set must be empty for exists and does not exist",
        ),
        (
            {"matchLabels": {"a/b/c": "d"}},
            f'key: Invalid value: "a/b/c": {INVALID_KEY_DETAIL}',
        ),
    ],
)
def test_label_selector_from_dict_rejects_invalid_selectors(
    selector: dict[str, object], message: str
) -> None:
    with pytest.raises(SelectorError) as err:
        label_selector_from_dict(selector)
    assert str(err.value) == message


@pytest.mark.parametrize(
    "selector",
    [
        [],
        {"matchLabels": ["a"]},
        {"matchLabels": {"a": 1}},
        {"matchExpressions": "a"},
        {"matchExpressions": ["a"]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]},
    ],
)
def test_label_selector_from_dict_rejects_wrong_json_types(selector: object) -> None:
    with pytest.raises(SelectorError):
        label_selector_from_dict(selector)  # type: ignore[arg-type]


def test_label_selector_to_string_as_in_scale_status() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["fe", "be"]},
            {"key": "canary", "operator": "DoesNotExist"},
        ],
    }
    assert label_selector_to_string(selector) == "app=web,!canary,tier in (be,fe)"
    assert label_selector_to_string({}) == ""


# --- field selectors --------------------------------------------------------------------


def test_field_selector_with_empty_value_matches_unbound_pods() -> None:
    selector = parse_field_selector("spec.nodeName=")
    assert selector.matches({"spec.nodeName": ""})
    assert selector.matches({})
    assert not selector.matches({"spec.nodeName": "node-1"})


@pytest.mark.parametrize(
    ("text", "fields", "matches"),
    [
        ("status.phase!=Running", {"status.phase": "Pending"}, True),
        ("status.phase!=Running", {"status.phase": "Running"}, False),
        ("metadata.name==web", {"metadata.name": "web"}, True),
        (
            "spec.nodeName=n1,status.phase!=Failed",
            {"spec.nodeName": "n1", "status.phase": "Running"},
            True,
        ),
        (
            "spec.nodeName=n1,status.phase!=Failed",
            {"spec.nodeName": "n1", "status.phase": "Failed"},
            False,
        ),
        ("", {"anything": "x"}, True),
    ],
)
def test_field_selector_matches(text: str, fields: dict[str, str], matches: bool) -> None:
    assert parse_field_selector(text).matches(fields) is matches


def test_field_selector_terms_are_sorted_and_report_their_fields() -> None:
    selector = parse_field_selector("status.phase!=Running,spec.nodeName=")
    assert selector.requirements == (
        ("spec.nodeName", "=", ""),
        ("status.phase", "!=", "Running"),
    )
    assert selector.fields() == {"spec.nodeName", "status.phase"}
    assert str(selector) == "spec.nodeName=,status.phase!=Running"
    assert not selector.empty()
    assert parse_field_selector("").empty()
    assert FieldSelector().empty()


def test_field_selector_values_unescape_backslash_comma_and_equals() -> None:
    selector = parse_field_selector(r"metadata.name=a\,b\=c\\d,spec.x==y")
    assert selector.requirements == (
        ("metadata.name", "=", "a,b=c\\d"),
        ("spec.x", "==", "y"),
    )
    assert str(selector) == r"metadata.name=a\,b\=c\\d,spec.x=y"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("spec.nodeName", "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'"),
        ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        (r"a=b\x", r"invalid field selector: invalid escape sequence: \x"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_parse_field_selector_rejects_bad_terms(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        parse_field_selector(text)
    assert str(err.value) == message
