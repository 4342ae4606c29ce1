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
    # ip.go's and cidr.go's typed values
    ("ip('10.0.0.1').family()", 4),
    ("ip('2001:db8::1').family()", 6),
    ("ip.isCanonical('2001:db8::1')", True),
    ("ip.isCanonical('2001:DB8::1')", False),
    ("ip('10.0.0.1') == ip('10.0.0.1')", True),
    ("ip('127.0.0.1').isLoopback()", True),
    ("ip('0.0.0.0').isUnspecified()", True),
    ("ip('169.254.1.1').isLinkLocalUnicast()", True),
    ("ip('fe80::1').isLinkLocalUnicast()", True),
    ("ip('224.0.0.1').isLinkLocalMulticast()", True),
    ("ip('ff02::1').isLinkLocalMulticast()", True),
    ("ip('8.8.8.8').isGlobalUnicast()", True),
    ("ip('10.0.0.1').isGlobalUnicast()", True),
    ("ip('255.255.255.255').isGlobalUnicast()", False),
    ("cidr('10.0.0.0/8').containsIP('10.1.2.3')", True),
    ("cidr('10.0.0.0/8').containsIP(ip('11.1.2.3'))", False),
    ("cidr('10.0.0.0/8').containsIP('::1')", False),
    ("cidr('10.0.0.0/8').containsCIDR('10.2.0.0/16')", True),
    ("cidr('10.0.0.0/16').containsCIDR(cidr('10.0.0.0/8'))", False),
    ("cidr('10.1.2.3/8').ip() == ip('10.1.2.3')", True),
    ("cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')", True),
    ("cidr('2001:db8::/32').prefixLength()", 32),
    # urls.go's URL
    ("url('https://user@example.com:8443/a%20b?x=1').getScheme()", "https"),
    ("url('https://user@example.com:8443/a%20b?x=1').getHost()", "example.com:8443"),
    ("url('https://example.com:8443/').getHostname()", "example.com"),
    ("url('https://[::1]:80/').getHostname()", "::1"),
    ("url('https://[::1]:80/').getPort()", "80"),
    ("url('https://example.com/').getPort()", ""),
    ("url('https://example.com/a%20b').getEscapedPath()", "/a%20b"),
    ("url('/path?x=1&x=2&y=').getQuery()", {"x": ["1", "2"], "y": [""]}),
    # quantity.go's Quantity
    ("quantity('1Gi').isGreaterThan(quantity('1G'))", True),
    ("quantity('1k').isLessThan(quantity('999'))", False),
    ("quantity('1k') == quantity('1000')", True),
    ("quantity('1').compareTo(quantity('2'))", -1),
    ("quantity('500m').add(quantity('1500m')).asInteger()", 2),
    ("quantity('1Mi').sub(24).asInteger()", 1048552),
    ("quantity('1.5').isInteger()", False),
    ("quantity('1.5').asApproximateFloat()", 1.5),
    ("quantity('-2').sign()", -1),
    ("quantity('1e3').asInteger()", 1000),
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


ERRORS = [
    ("[].min()", "min called on empty list"),
    ("ip('10.0.0.256')", 'IP Address "10.0.0.256" parse error during conversion from string'),
    ("cidr('10.0.0.0/33')",
     'network address "10.0.0.0/33" parse error during conversion from string'),
    ("url('relative')", "URL parse error during conversion from string: relative"),
    ("quantity('1.5').asInteger()", "cannot convert value to integer"),
    ("quantity('1x')", "unable to parse quantity's suffix: 1x"),
]


@pytest.mark.parametrize(("expression", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_library_errors(expression: str, message: str) -> None:
    result = cel_rules.environment().compile(expression).eval(data={"self": None})
    assert str(result.value()).endswith(message)


def test_re2_flags_anywhere_in_the_pattern() -> None:
    """matches() is RE2's, as cel-go's: a flag group after ^ is valid (GRPCRoute's rule)."""
    assert _eval(r"self.matches('^(?i)\\.?[a-z_][a-z_0-9]*$')", "Foo_1") is True
