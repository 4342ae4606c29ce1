"""The typed values of the Kubernetes CEL libraries: net.IP and net.CIDR (ip.go, cidr.go),
URL (urls.go) and Quantity (quantity.go), with their functions.

cel-expr-python cannot carry a Python object as an opaque CEL value, so each value is a
one-key map holding its canonical form ({"__ip__": "10.0.0.1"}); equal values are equal
maps, and the methods are declared on maps. What differs from upstream: type() of such a
value is map, and a plain map with that one key would be taken for one."""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from cel_expr_python import cel

from .cel_library import _SCHEME, _parse_ip, is_url

T = cel.Type
OBJECT = T.Map(T.STRING, T.DYN)
_IP, _CIDR, _URL, _QUANTITY = "__ip__", "__cidr__", "__url__", "__quantity__"
_INT64 = (-(2**63), 2**63 - 1)
_SUFFIXES = {"": 1, "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _field(value: dict[str, Any], key: str, kind: str) -> str:
    if not isinstance(value, dict) or key not in value:
        raise ValueError(f"no such overload: expected {kind}")
    text: str = value[key]
    return text


# --- net.IP ------------------------------------------------------------------------------


def ip(text: str) -> dict[str, str]:
    """ip(string): the address, refused as upstream refuses it."""
    address = _parse_ip(text)
    if address is None:
        raise ValueError(f'IP Address "{text}" parse error during conversion from string')
    return {_IP: str(address)}


def _address(value: dict[str, Any]) -> Address:
    return ipaddress.ip_address(_field(value, _IP, "net.IP"))


def is_canonical(text: str) -> bool:
    """ip.isCanonical(string): whether the string is the address's canonical form."""
    return ip(text)[_IP] == text


def family(value: dict[str, Any]) -> int:
    """IP.family(): 4 or 6."""
    return _address(value).version


def is_unspecified(value: dict[str, Any]) -> bool:
    return _address(value).is_unspecified


def is_loopback(value: dict[str, Any]) -> bool:
    return _address(value).is_loopback


def is_link_local_multicast(value: dict[str, Any]) -> bool:
    """Go's net.IP.IsLinkLocalMulticast: 224.0.0.0/24 or ff02::/16 (any flags)."""
    address = _address(value)
    if address.version == 4:
        return address in ipaddress.IPv4Network("224.0.0.0/24")
    packed = address.packed
    return packed[0] == 0xFF and packed[1] & 0x0F == 0x02


def is_link_local_unicast(value: dict[str, Any]) -> bool:
    """Go's IsLinkLocalUnicast: 169.254.0.0/16 or fe80::/10."""
    address = _address(value)
    return address.is_link_local


def is_global_unicast(value: dict[str, Any]) -> bool:
    """Go's IsGlobalUnicast: not unspecified, loopback, multicast, link-local unicast or
    the IPv4 broadcast address."""
    address = _address(value)
    return not (address.is_unspecified or address.is_loopback or address.is_multicast or
                address.is_link_local or address == ipaddress.IPv4Address("255.255.255.255"))


# --- net.CIDR ----------------------------------------------------------------------------


def cidr(text: str) -> dict[str, str]:
    """cidr(string): the prefix as given (address and length), refused as upstream does."""
    address, slash, length = text.partition("/")
    parsed = _parse_ip(address)
    if not slash or parsed is None or not length.isdigit() or \
            int(length) > parsed.max_prefixlen or (len(length) > 1 and length[0] == "0"):
        raise ValueError(f'network address "{text}" parse error during conversion from string')
    return {_CIDR: f"{parsed}/{int(length)}"}


def _network(value: dict[str, Any]) -> tuple[Address, Network]:
    text = _field(value, _CIDR, "net.CIDR")
    address, _, _ = text.partition("/")
    return ipaddress.ip_address(address), ipaddress.ip_network(text, strict=False)


def contains_ip(value: dict[str, Any], other: Any) -> bool:
    """CIDR.containsIP(IP or string)."""
    address = _address(other) if isinstance(other, dict) else _address(ip(other))
    network = _network(value)[1]
    return address.version == network.version and address in network


def contains_cidr(value: dict[str, Any], other: Any) -> bool:
    """CIDR.containsCIDR(CIDR or string)."""
    inner = _network(other if isinstance(other, dict) else cidr(other))[1]
    outer = _network(value)[1]
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def cidr_ip(value: dict[str, Any]) -> dict[str, str]:
    """CIDR.ip(): the address as given, not masked."""
    return {_IP: str(_network(value)[0])}


def masked(value: dict[str, Any]) -> dict[str, str]:
    """CIDR.masked(): the prefix with the host bits cleared."""
    return {_CIDR: str(_network(value)[1])}


def prefix_length(value: dict[str, Any]) -> int:
    return _network(value)[1].prefixlen


# --- URL ---------------------------------------------------------------------------------


def url(text: str) -> dict[str, str]:
    """url(string): a URL url.ParseRequestURI accepts."""
    if not is_url(text):
        raise ValueError(f"URL parse error during conversion from string: {text}")
    return {_URL: text}


def _split(value: dict[str, Any]) -> urllib.parse.SplitResult:
    text = _field(value, _URL, "URL")
    if not _SCHEME.match(text):
        return urllib.parse.SplitResult("", "", text.split("?", 1)[0],
                                        text.split("?", 1)[1] if "?" in text else "", "")
    return urllib.parse.urlsplit(text, allow_fragments=False)


def get_scheme(value: dict[str, Any]) -> str:
    return _split(value).scheme


def get_host(value: dict[str, Any]) -> str:
    """URL.getHost(): host and port as written, IPv6 in brackets."""
    return _split(value).netloc.rsplit("@", 1)[-1]


def get_hostname(value: dict[str, Any]) -> str:
    """URL.getHostname(): the host without port or brackets."""
    host = get_host(value)
    if host.startswith("["):
        return host[1:host.index("]")]
    return host.rsplit(":", 1)[0] if ":" in host else host


def get_port(value: dict[str, Any]) -> str:
    host = get_host(value)
    after = host[host.index("]") + 1:] if host.startswith("[") else host
    return after.rsplit(":", 1)[1] if ":" in after else ""


def get_escaped_path(value: dict[str, Any]) -> str:
    return urllib.parse.quote(urllib.parse.unquote(_split(value).path), safe="/:@!$&'()*+,;=")


def get_query(value: dict[str, Any]) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(_split(value).query, keep_blank_values=True)


# --- Quantity ----------------------------------------------------------------------------


def _parse_quantity(text: str) -> Fraction:
    body = text.strip()
    sign = -1 if body.startswith("-") else 1
    body = body.lstrip("+-")
    end = 0
    while end < len(body) and (body[end].isdigit() or body[end] == "."):
        end += 1
    number, suffix = body[:end], body[end:]
    if not number or number == "." or number.count(".") > 1:
        raise ValueError(f"quantities must match the regular expression "
                         f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text}")
    value = Fraction(number)
    if suffix in _SUFFIXES:
        value *= _SUFFIXES[suffix]
    elif suffix[:1] in "eE" and suffix[1:].lstrip("+-").isdigit():
        value *= Fraction(10) ** int(suffix[1:])
    else:
        raise ValueError(f"unable to parse quantity's suffix: {text}")
    return sign * value


def quantity(text: str) -> dict[str, str]:
    """quantity(string): the quantity, held as its exact value."""
    return {_QUANTITY: str(_parse_quantity(text))}


def _value(value: Any) -> Fraction:
    if isinstance(value, int):
        return Fraction(value)
    return Fraction(_field(value, _QUANTITY, "Quantity"))


def sign(value: dict[str, Any]) -> int:
    number = _value(value)
    return (number > 0) - (number < 0)


def is_integer(value: dict[str, Any]) -> bool:
    """Quantity.isInteger(): whether asInteger() would succeed."""
    number = _value(value)
    return number.denominator == 1 and _INT64[0] <= number <= _INT64[1]


def as_integer(value: dict[str, Any]) -> int:
    if not is_integer(value):
        raise ValueError("cannot convert value to integer")
    return int(_value(value))


def as_approximate_float(value: dict[str, Any]) -> float:
    return float(_value(value))


def add(value: dict[str, Any], other: Any) -> dict[str, str]:
    return {_QUANTITY: str(_value(value) + _value(other))}


def sub(value: dict[str, Any], other: Any) -> dict[str, str]:
    return {_QUANTITY: str(_value(value) - _value(other))}


def compare_to(value: dict[str, Any], other: dict[str, Any]) -> int:
    left, right = _value(value), _value(other)
    return (left > right) - (left < right)


def _member(name: str, result: Any, params: list[Any],
            impl: Callable[..., Any]) -> Any:
    return cel.Overload(name, result, params, True, impl=impl)


def _global(name: str, result: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return cel.Overload(name, result, params, False, impl=impl)


def functions() -> list[Any]:
    """The declarations of the typed values' functions."""
    def method(name: str, result: Any, impl: Callable[..., Any]) -> Any:
        return cel.FunctionDecl(name, [_member(f"object_{name}", result, [OBJECT], impl)])
    return [
        cel.FunctionDecl("ip", [_global("string_to_ip", OBJECT, [T.STRING], ip),
                                _member("cidr_ip", OBJECT, [OBJECT], cidr_ip)]),
        cel.FunctionDecl("ip.isCanonical", [_global("ip_is_canonical", T.BOOL, [T.STRING],
                                                    is_canonical)]),
        method("family", T.INT, family),
        method("isUnspecified", T.BOOL, is_unspecified),
        method("isLoopback", T.BOOL, is_loopback),
        method("isLinkLocalMulticast", T.BOOL, is_link_local_multicast),
        method("isLinkLocalUnicast", T.BOOL, is_link_local_unicast),
        method("isGlobalUnicast", T.BOOL, is_global_unicast),
        cel.FunctionDecl("cidr", [_global("string_to_cidr", OBJECT, [T.STRING], cidr)]),
        cel.FunctionDecl("containsIP", [
            _member("cidr_contains_ip_string", T.BOOL, [OBJECT, T.STRING], contains_ip),
            _member("cidr_contains_ip_ip", T.BOOL, [OBJECT, OBJECT], contains_ip)]),
        cel.FunctionDecl("containsCIDR", [
            _member("cidr_contains_cidr_string", T.BOOL, [OBJECT, T.STRING], contains_cidr),
            _member("cidr_contains_cidr", T.BOOL, [OBJECT, OBJECT], contains_cidr)]),
        method("masked", OBJECT, masked),
        method("prefixLength", T.INT, prefix_length),
        cel.FunctionDecl("url", [_global("string_to_url", OBJECT, [T.STRING], url)]),
        method("getScheme", T.STRING, get_scheme),
        method("getHost", T.STRING, get_host),
        method("getHostname", T.STRING, get_hostname),
        method("getPort", T.STRING, get_port),
        method("getEscapedPath", T.STRING, get_escaped_path),
        method("getQuery", T.Map(T.STRING, T.List(T.STRING)), get_query),
        cel.FunctionDecl("quantity", [_global("string_to_quantity", OBJECT, [T.STRING],
                                              quantity)]),
        method("sign", T.INT, sign),
        method("isInteger", T.BOOL, is_integer),
        method("asInteger", T.INT, as_integer),
        method("asApproximateFloat", T.DOUBLE, as_approximate_float),
        cel.FunctionDecl("add", [_member("quantity_add", OBJECT, [OBJECT, OBJECT], add),
                                 _member("quantity_add_int", OBJECT, [OBJECT, T.INT], add)]),
        cel.FunctionDecl("sub", [_member("quantity_sub", OBJECT, [OBJECT, OBJECT], sub),
                                 _member("quantity_sub_int", OBJECT, [OBJECT, T.INT], sub)]),
        cel.FunctionDecl("compareTo", [_member("quantity_compare_to", T.INT, [OBJECT, OBJECT],
                                               compare_to)]),
        cel.FunctionDecl("isGreaterThan", [_member(
            "quantity_is_greater_than", T.BOOL, [OBJECT, OBJECT],
            lambda a, b: compare_to(a, b) > 0)]),
        cel.FunctionDecl("isLessThan", [_member(
            "quantity_is_less_than", T.BOOL, [OBJECT, OBJECT],
            lambda a, b: compare_to(a, b) < 0)]),
    ]
