"""The format library (k8s.io/apiserver/pkg/cel/library/format.go): Kubernetes' named
string formats, for rules and messageExpressions such as
`!format.dns1123Label().validate(self.name).hasValue()`.

- `format.named(name)` is the Format of that name, or optional.none() for an unknown one;
- `format.dns1123Label()`, `format.uri()` and the rest are each Format by name;
- `<Format>.validate(string)` is optional.none() when the string is valid, else the
  optional of its problems, in apimachinery's words (validation.IsDNS1123Label...).

A Format is a one-key map ({"__format__": "dns1123Label"}), as the other typed values in
cel_objects.py are. cel-expr-python cannot return an optional from a Python function (it
fails with "Unimplemented type"), so `format.named` and `validate` return a map, empty
where upstream answers optional.none() and of one key otherwise, and
`optional_results` puts an optional index (`[?"format"]`, `[?"errors"]`) after each call
of them in the expression's source before it compiles: the index of that map is the
optional upstream's function returns."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from cel_expr_python import cel

from minikube_py.api.validation import (
    mask_trailing_dash,
    validate_dns1035_label,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_label_value,
    validate_qualified_name,
)

from .cel_library import STRING_LITERAL, is_url
from .formats import FORMATS

T = cel.Type
OBJECT = T.Map(T.STRING, T.DYN)
_FORMAT = "__format__"
_NAMED, _ERRORS = "format", "errors"
# a call whose result upstream types as an optional: the Format lookup and validate()
_OPTIONAL_CALL = re.compile(r"(?<![\w.])format\s*\.\s*named\s*\(|\.\s*validate\s*\(")


def request_uri_error(value: str) -> list[str]:
    """format.uri(): url.ParseRequestURI's error (`parse "x": invalid URI for request`);
    a refusal other than a control character or an empty string is worded as the
    commonest one, a relative reference."""
    if is_url(value):
        return []
    if not value:
        return ['parse "": empty url']
    quoted = json.dumps(value, ensure_ascii=False)
    if any(ord(c) < 0x20 or c == "\x7f" for c in value):
        return [f"parse {quoted}: net/url: invalid control character in URL"]
    return [f"parse {quoted}: invalid URI for request"]


def _strfmt(name: str, problem: str) -> Callable[[str], list[str]]:
    """A format of kube-openapi's strfmt registry, with the one problem upstream says."""
    check = FORMATS[name]
    return lambda value: [] if check(value) else [problem]


# ConstantFormats: each name and what its validate() reports
CONSTANT_FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": validate_dns1123_label,
    "dns1123Subdomain": validate_dns1123_subdomain,
    "dns1035Label": validate_dns1035_label,
    "qualifiedName": validate_qualified_name,
    # a prefix (generateName) is checked as the name it begins: "web-" as "wea"
    "dns1123LabelPrefix": lambda value: validate_dns1123_label(mask_trailing_dash(value)),
    "dns1123SubdomainPrefix":
        lambda value: validate_dns1123_subdomain(mask_trailing_dash(value)),
    "dns1035LabelPrefix": lambda value: validate_dns1035_label(mask_trailing_dash(value)),
    "labelValue": validate_label_value,
    "uri": request_uri_error,
    "uuid": _strfmt("uuid", "does not match the UUID format"),
    "byte": _strfmt("byte", "invalid base64"),
    "date": _strfmt("date", "invalid date"),
    "datetime": _strfmt("datetime", "invalid datetime"),
}


def named(name: str) -> dict[str, dict[str, str]]:
    """format.named(string): the Format under the key `format`, or nothing."""
    return {_NAMED: {_FORMAT: name}} if name in CONSTANT_FORMATS else {}


def validate(fmt: dict[str, Any], value: str) -> dict[str, list[str]]:
    """Format.validate(string): the problems under the key `errors`, or nothing."""
    if not isinstance(fmt, dict) or fmt.get(_FORMAT) not in CONSTANT_FORMATS:
        raise ValueError("no such overload: expected Format")
    problems = CONSTANT_FORMATS[fmt[_FORMAT]](value)
    return {_ERRORS: problems} if problems else {}


def _closing_paren(masked: str, opening: int) -> int:
    """The index of the parenthesis that closes the one at `opening`, or -1."""
    depth = 0
    for index in range(opening, len(masked)):
        if masked[index] == "(":
            depth += 1
        elif masked[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    return -1


def optional_results(expression: str) -> str:
    """The source with `[?"format"]` after each `format.named(...)` and `[?"errors"]`
    after each `.validate(...)` outside string literals, so that both are optionals."""
    masked = STRING_LITERAL.sub(lambda m: " " * len(m.group(0)), expression)
    insertions: list[tuple[int, str]] = []
    for match in _OPTIONAL_CALL.finditer(masked):
        closing = _closing_paren(masked, match.end() - 1)
        if closing >= 0:
            key = _ERRORS if match.group(0).startswith(".") else _NAMED
            insertions.append((closing + 1, f'[?"{key}"]'))
    for position, suffix in sorted(insertions, reverse=True):
        expression = expression[:position] + suffix + expression[position:]
    return expression


def functions() -> list[Any]:
    """The library's declarations: format.named, a function per Format, validate."""
    def constant(name: str) -> Callable[[], dict[str, str]]:
        return lambda: {_FORMAT: name}

    decls = [
        cel.FunctionDecl("format.named", [cel.Overload(
            "format_named", T.Map(T.STRING, OBJECT), [T.STRING], False, impl=named)]),
        cel.FunctionDecl("validate", [cel.Overload(
            "format_validate", T.Map(T.STRING, T.List(T.STRING)), [OBJECT, T.STRING], True,
            impl=validate)]),
    ]
    decls += [cel.FunctionDecl(f"format.{name}", [cel.Overload(
        f"format_{name}", OBJECT, [], False, impl=constant(name))])
        for name in CONSTANT_FORMATS]
    return decls
