"""The Kubernetes CEL libraries apiserver adds to the standard environment
(k8s.io/apiserver/pkg/cel/library: lists.go, regex.go, urls.go, ip.go, cidr.go,
quantity.go), as cel-expr-python function declarations with Python implementations: the
functions on plain values here, the typed values (ip(), cidr(), url(), quantity()) in
cel_objects.py.

The format library is in cel_format.py. Not offered: lists' indexOf and lastIndexOf,
whose names the strings extension already declares for strings: cel-expr-python refuses a
second declaration of a name ("function 'indexOf' declared multiple times"), and can add
no overload to an extension's function. cel-expr-python registers one implementation per
runtime kind, so the list functions take and return dyn."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import re2
from cel_expr_python import cel
from google.protobuf import duration_pb2

T = cel.Type
# resource.ParseQuantity: a signed decimal number, then a binary-SI, decimal-SI or
# exponent suffix
_QUANTITY = re.compile(
    r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# a CEL string or bytes literal (raw, triple-quoted, or with escapes), for the source scans
STRING_LITERAL = re.compile(r"""[rR]?("{3}.*?"{3}|'{3}.*?'{3}|"(\\.|[^"\\])*"|'(\\.|[^'\\])*')""",
                            re.DOTALL)


def _parse_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """netip.ParseAddr as the ip library accepts it: no zone, no IPv4-mapped IPv6."""
    if "%" in value:
        return None
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return None
    return address


def is_ip(value: str) -> bool:
    """isIP(string): whether the string is an IPv4 or IPv6 address (ip.go)."""
    return _parse_ip(value) is not None


def is_cidr(value: str) -> bool:
    """isCIDR(string): whether the string is an address/prefix-length (cidr.go)."""
    address, slash, length = value.partition("/")
    if not slash or _parse_ip(address) is None or not length.isdigit() or \
            (len(length) > 1 and length.startswith("0")):
        return False
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return True


def is_url(value: str) -> bool:
    """isURL(string): whether url.ParseRequestURI accepts the string (urls.go): an
    absolute path, or a scheme followed by an authority with a numeric port if any."""
    if not value or any(c in value for c in " \t\n\x7f") or \
            any(ord(c) < 0x20 for c in value):
        return False
    if value.startswith("/"):
        return True
    if not _SCHEME.match(value):
        return False
    rest = value.split(":", 1)[1]
    if rest.startswith("//"):
        authority = rest[2:].split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1]
        host, colon, port = authority.rpartition(":") if not authority.endswith("]") \
            else (authority, "", "")
        if colon and (port and not port.isdigit() or host.count(":") and
                      not host.startswith("[")):
            return False
    return True


def is_quantity(value: str) -> bool:
    """isQuantity(string): whether resource.ParseQuantity accepts the string."""
    return bool(_QUANTITY.match(value))


def _compile_regex(pattern: str) -> Any:
    return re2.compile(pattern)


def find(value: str, pattern: str) -> str:
    """string.find(regex): the first match, or "" (regex.go)."""
    match = _compile_regex(pattern).search(value)
    return match.group(0) if match else ""


def find_all(value: str, pattern: str, limit: int = -1) -> list[str]:
    """string.findAll(regex[, limit]): every match, at most limit if limit >= 0."""
    if limit == 0:
        return []
    found = [m.group(0) for m in _compile_regex(pattern).finditer(value)]
    return found if limit < 0 else found[:limit]


def is_sorted(items: Sequence[Any]) -> bool:
    """list.isSorted(): whether the elements are in ascending order (lists.go)."""
    return all(a <= b for a, b in zip(items, items[1:], strict=False))


def total(items: Sequence[Any]) -> Any:
    """list.sum(): the elements added up; 0 for an empty list."""
    if not items:
        return 0
    result = items[0]
    for item in items[1:]:
        result = result + item
    if isinstance(result, timedelta):
        duration = duration_pb2.Duration()
        duration.FromTimedelta(result)
        return duration
    return result


def _extreme(pick: Callable[..., Any]) -> Callable[[Sequence[Any]], Any]:
    def extreme(items: Sequence[Any]) -> Any:
        if not items:
            raise ValueError("min called on empty list" if pick is min
                             else "max called on empty list")
        return pick(items)
    return extreme


def _overload(name: str, result: Any, params: list[Any], member: bool,
              impl: Callable[..., Any]) -> Any:
    return cel.Overload(name, result, params, member, impl=impl)


def functions() -> list[Any]:
    """Every library function, declared for an environment."""
    decls = [
        cel.FunctionDecl("isIP", [_overload("is_ip_string", T.BOOL, [T.STRING], False, is_ip)]),
        cel.FunctionDecl("isCIDR", [_overload("is_cidr_string", T.BOOL, [T.STRING], False,
                                              is_cidr)]),
        cel.FunctionDecl("isURL", [_overload("is_url_string", T.BOOL, [T.STRING], False,
                                             is_url)]),
        cel.FunctionDecl("isQuantity", [_overload("is_quantity_string", T.BOOL, [T.STRING],
                                                  False, is_quantity)]),
        cel.FunctionDecl("find", [_overload("string_find_string", T.STRING,
                                            [T.STRING, T.STRING], True, find)]),
        cel.FunctionDecl("findAll", [
            _overload("string_find_all_string", T.List(T.STRING), [T.STRING, T.STRING], True,
                      find_all),
            _overload("string_find_all_string_int", T.List(T.STRING),
                      [T.STRING, T.STRING, T.INT], True, find_all)]),
        cel.FunctionDecl("isSorted", [_overload("list_is_sorted_bool", T.BOOL, [T.List(T.DYN)],
                                                True, is_sorted)]),
        cel.FunctionDecl("sum", [_overload("list_sum", T.DYN, [T.List(T.DYN)], True, total)]),
        cel.FunctionDecl("min", [_overload("list_min", T.DYN, [T.List(T.DYN)], True,
                                           _extreme(min))]),
        cel.FunctionDecl("max", [_overload("list_max", T.DYN, [T.List(T.DYN)], True,
                                           _extreme(max))]),
    ]
    return decls
