"""The Kubernetes CEL library functions (cel_library.py), each evaluated through the CEL
environment rules compile in, with upstream's results."""

from __future__ import annotations

from typing import Any

import pytest

from minikube_py.api.openapi_schema import cel as cel_rules


def _eval(expression: str, self_value: Any = None) -> Any:
    result = cel_rules.environment().compile(expression).eval(data={"self": self_value})
    return result.plain_value()


CASES = [
    # ip.go
    ("isIP('10.0.0.1')", True),
    ("isIP('2001:db8::1')", True),
    ("isIP('010.0.0.1')", False),
    ("isIP('::ffff:1.2.3.4')", False),
    ("isIP('fe80::1%eth0')", False),
    ("isIP('example.com')", False),
    # cidr.go
    ("isCIDR('10.0.0.0/8')", True),
    ("isCIDR('10.0.0.1/8')", True),
    ("isCIDR('2001:db8::/32')", True),
    ("isCIDR('10.0.0.0/33')", False),
    ("isCIDR('10.0.0.0')", False),
    ("isCIDR('10.0.0.0/08')", False),
    # urls.go
    ("isURL('https://example.com:8443/path?q=1')", True),
    ("isURL('/absolute/path')", True),
    ("isURL('relative/path')", False),
    ("isURL('https://example.com:port/')", False),
    ("isURL('')", False),
    # quantity.go
    ("isQuantity('1.5Gi')", True),
    ("isQuantity('100m')", True),
    ("isQuantity('1e3')", True),
    ("isQuantity('-2')", True),
    ("isQuantity('1.5GiB')", False),
    ("isQuantity('abc')", False),
    # regex.go
    ("'abc 123 def 456'.find('[0-9]+')", "123"),
    ("'abc'.find('[0-9]+')", ""),
    ("'abc 123 def 456'.findAll('[0-9]+')", ["123", "456"]),
    ("'abc 123 def 456'.findAll('[0-9]+', 1)", ["123"]),
    ("'abc 123 def 456'.findAll('[0-9]+', 0)", []),
    ("'ABC'.find('(?i)b')", "B"),
    # lists.go
    ("[1, 2, 2, 3].isSorted()", True),
    ("['b', 'a'].isSorted()", False),
    ("[].isSorted()", True),
    ("[1, 2, 3].sum()", 6),
    ("[1.5, 2.5].sum()", 4.0),
    ("[].sum()", 0),
    ("[duration('1s'), duration('1m')].sum() == duration('61s')", True),
    ("[3, 1, 2].min()", 1),
    ("['b', 'c', 'a'].max()", "c"),
    # the strings extension upstream enables too
    ("'a/b'.split('/')[0]", "a"),
    ("'*.example.com'.substring(2)", "example.com"),
    ("'ABC'.lowerAscii()", "abc"),
]


@pytest.mark.parametrize(("expression", "expected"), CASES, ids=[c[0] for c in CASES])
def test_library_function(expression: str, expected: Any) -> None:
    assert _eval(expression) == expected


def test_library_functions_on_dyn_self() -> None:
    """Rules see self as dyn: the functions resolve on the run-time value."""
    assert _eval("self.all(h, !isIP(h))", ["a.example.com"]) is True
    assert _eval("self.ports.sum() < 100 && self.ports.isSorted()", {"ports": [1, 2]}) is True


def test_min_of_an_empty_list_is_an_error() -> None:
    result = cel_rules.environment().compile("[].min()").eval(data={"self": None})
    assert "min called on empty list" in str(result.value())


def test_re2_flags_anywhere_in_the_pattern() -> None:
    """matches() is RE2's, as cel-go's: a flag group after ^ is valid (GRPCRoute's rule)."""
    assert _eval(r"self.matches('^(?i)\\.?[a-z_][a-z_0-9]*$')", "Foo_1") is True
