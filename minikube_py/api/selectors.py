"""Label and field selectors, as upstream's k8s.io/apimachinery/pkg/labels and pkg/fields.

A label selector is an AND of requirements on an object's labels:

    app=web,tier!=db,env in (prod,staging),!legacy,release

It arrives as text (`?labelSelector=` on list and watch) or as a metav1.LabelSelector
dict (`spec.selector` of a Deployment). A field selector is an AND of exact matches on
a few fields the server knows how to read (`spec.nodeName=node-1,status.phase!=Running`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minikube_py.api.validation import (
    go_string_slice,
    validate_label_value,
    validate_qualified_name,
)


class SelectorError(ValueError):
    """A selector that does not parse; the message is upstream's."""


# --- Label selectors --------------------------------------------------------------------

# selection.Operator values. "!" is DoesNotExist; "gt"/"lt" are written ">" and "<".
EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "=", "==", "!="
IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "in", "notin", "exists", "!"
GREATER_THAN, LESS_THAN = "gt", "lt"
_BINARY_OPERATORS = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_GO_INT64 = re.compile(r"[+-]?[0-9]+")


def _go_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None when it would fail."""
    if not _GO_INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _invalid(path: str, shown_value: str, detail: str) -> str:
    """A field.Invalid error as text; a requirement parsed from a string has path "<nil>"."""
    return f"{path}: Invalid value: {shown_value}: {detail}"


def _quote(value: str) -> str:
    """Go's %q, close enough: a double-quoted, escaped string."""
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class Requirement:
    """labels.Requirement: one `key operator values` term of a label selector."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Requirement.Matches: notin and != also match when the label is absent."""
        if self.operator in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if self.operator in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return self.key in labels
        if self.operator == DOES_NOT_EXIST:
            return self.key not in labels
        if self.operator in (GREATER_THAN, LESS_THAN) and self.key in labels:
            have = _go_int64(labels[self.key])
            want = _go_int64(self.values[0]) if len(self.values) == 1 else None
            if have is None or want is None:
                return False
            return have > want if self.operator == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        """Requirement.String: `!k`, `k`, `k=v`, `k!=v`, `k in (a,b)`, `k>1`."""
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator == EXISTS:
            return self.key
        values = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if self.operator in (IN, NOT_IN):
            return f"{self.key} {self.operator} ({values})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(self.operator, self.operator)
        return f"{self.key}{symbol}{values}"


def new_requirement(key: str, operator: str, values: list[str] | tuple[str, ...]) -> Requirement:
    """labels.NewRequirement: check the key, the number of values and each value."""
    errors: list[str] = []
    key_errors = validate_qualified_name(key)
    if key_errors:
        errors.append(_invalid("key", _quote(key), "; ".join(key_errors)))
    shown = go_string_slice(values)
    if operator in (IN, NOT_IN) and not values:
        errors.append(
            _invalid("values", shown, "for 'in', 'notin' operators, values set can't be empty")
        )
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS) and len(values) != 1:
        errors.append(
            _invalid("values", shown, "exact-match compatibility requires one single value")
        )
    elif operator in (EXISTS, DOES_NOT_EXIST) and values:
        errors.append(
            _invalid("values", shown, "values set must be empty for exists and does not exist")
        )
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(values) != 1:
            detail = "for 'Gt', 'Lt' operators, exactly one value is required"
            errors.append(_invalid("values", shown, detail))
        for i, value in enumerate(values):
            if _go_int64(value) is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errors.append(_invalid(f"values[{i}]", _quote(value), detail))
    elif operator not in (*_BINARY_OPERATORS, EXISTS, DOES_NOT_EXIST):
        supported = ", ".join(_quote(op) for op in (*_BINARY_OPERATORS, EXISTS, DOES_NOT_EXIST))
        errors.append(
            f"operator: Unsupported value: {_quote(operator)}: supported values: {supported}"
        )
    for i, value in enumerate(values):
        value_errors = validate_label_value(value)
        if value_errors:
            errors.append(_invalid(f"values[{i}][{key}]", _quote(value), "; ".join(value_errors)))
    unique = list(dict.fromkeys(errors))
    if len(unique) == 1:
        raise SelectorError(unique[0])
    if unique:
        raise SelectorError("[" + ", ".join(unique) + "]")
    return Requirement(key, operator, tuple(values))


@dataclass(frozen=True)
class LabelSelector:
    """labels.Selector: requirements ANDed together, sorted by key.

    No requirements selects everything; `nothing` (from a nil metav1.LabelSelector)
    selects no object at all.
    """

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @classmethod
    def everything(cls) -> LabelSelector:
        return cls()

    @classmethod
    def match_nothing(cls) -> LabelSelector:
        return cls(nothing=True)

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        have = labels or {}
        return all(requirement.matches(have) for requirement in self.requirements)

    def empty(self) -> bool:
        """Selector.Empty: true when the selector does not restrict anything."""
        return not self.nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


def _selector(requirements: list[Requirement]) -> LabelSelector:
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


# Tokens of the label selector lexer; identifiers are everything else.
_WHITESPACE = " \t\r\n"
_SPECIAL = "=!(),><"
_TWO_CHAR_TOKENS = ("!=", "==")
_KEYWORDS = (IN, NOT_IN)
_END = ""  # the end-of-string token's literal


@dataclass(frozen=True)
class _Token:
    kind: str  # "id", "end", or the operator/punctuation literal itself ("in", "(", ...)
    literal: str


def _lex(text: str) -> list[_Token]:
    """Lexer.Lex, repeated: split a selector into identifiers, keywords and symbols."""
    tokens: list[_Token] = []
    i = 0
    while True:
        while i < len(text) and text[i] in _WHITESPACE:
            i += 1
        if i == len(text):
            tokens.append(_Token("end", _END))
            return tokens
        if text[i] in _SPECIAL:
            symbol = text[i : i + 2] if text[i : i + 2] in _TWO_CHAR_TOKENS else text[i]
            tokens.append(_Token(symbol, symbol))
            i += len(symbol)
            continue
        start = i
        while i < len(text) and text[i] not in _SPECIAL and text[i] not in _WHITESPACE:
            i += 1
        word = text[start:i]
        tokens.append(_Token(word if word in _KEYWORDS else "id", word))


class _Parser:
    """labels.Parser: recursive descent over the tokens, with upstream's error messages.

    Where values are expected, the keywords `in` and `notin` are plain identifiers
    (so `notin=in` is a valid selector).
    """

    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.position = 0

    def lookahead(self, values: bool = True) -> _Token:
        token = self.tokens[self.position]
        if values and token.kind in _KEYWORDS:
            return _Token("id", token.literal)
        return token

    def consume(self, values: bool = True) -> _Token:
        token = self.lookahead(values)
        self.position += 1
        return token

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            token = self.lookahead()
            if token.kind == "end":
                return requirements
            if token.kind not in ("id", "!"):
                raise SelectorError(
                    f"found '{token.literal}', expected: !, identifier, or 'end of string'"
                )
            try:
                requirements.append(self.parse_requirement())
            except SelectorError as err:
                raise SelectorError(f"unable to parse requirement: {err}") from None
            token = self.consume()
            if token.kind == "end":
                return requirements
            if token.kind != ",":
                raise SelectorError(f"found '{token.literal}', expected: ',' or 'end of string'")
            following = self.lookahead()
            if following.kind not in ("id", "!"):
                raise SelectorError(f"found '{following.literal}', expected: identifier after ','")

    def parse_requirement(self) -> Requirement:
        key, operator = self.parse_key_and_infer_operator()
        if operator in (EXISTS, DOES_NOT_EXIST):
            return new_requirement(key, operator, [])
        operator = self.parse_operator()
        values = self.parse_values() if operator in (IN, NOT_IN) else self.parse_exact_value()
        return new_requirement(key, operator, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        """`!key` is DoesNotExist; a bare `key` before `,` or the end is Exists."""
        operator = ""
        token = self.consume()
        if token.kind == "!":
            operator = DOES_NOT_EXIST
            token = self.consume()
        if token.kind != "id":
            raise SelectorError(f"found '{token.literal}', expected: identifier")
        key_errors = validate_qualified_name(token.literal)
        if key_errors:
            raise SelectorError(_invalid("<nil>", _quote(token.literal), "; ".join(key_errors)))
        if not operator and self.lookahead().kind in ("end", ","):
            operator = EXISTS
        return token.literal, operator

    def parse_operator(self) -> str:
        token = self.consume(values=False)
        operators = {"in": IN, "notin": NOT_IN, "=": EQUALS, "==": DOUBLE_EQUALS}
        operators |= {"!=": NOT_EQUALS, ">": GREATER_THAN, "<": LESS_THAN}
        if token.kind not in operators:
            expected = ", ".join(_BINARY_OPERATORS)
            raise SelectorError(f"found '{token.literal}', expected: {expected}")
        return operators[token.kind]

    def parse_values(self) -> set[str]:
        """`(a,b,c)`; empty entries, as in `()` or `(a,)`, are the empty value."""
        token = self.consume()
        if token.kind != "(":
            raise SelectorError(f"found '{token.literal}' expected: '('")
        token = self.lookahead()
        if token.kind == ")":
            self.consume()
            return {""}
        if token.kind not in ("id", ","):
            raise SelectorError(f"found '{token.literal}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            token = self.consume()
            if token.kind == "id":
                values.add(token.literal)
                following = self.lookahead()
                if following.kind == ")":
                    self.consume()
                    return values
                if following.kind != ",":
                    raise SelectorError(f"found '{following.literal}', expected: ',' or ')'")
            elif token.kind == ",":
                following = self.lookahead()
                if not values or following.kind in (",", ")"):
                    values.add("")
                if following.kind == ")":
                    self.consume()
                    return values
            else:
                raise SelectorError(f"found '{token.literal}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        """The one value after `=`, `==`, `!=`, `>` or `<`; nothing there is the empty value."""
        if self.lookahead().kind in ("end", ","):
            return {""}
        token = self.consume()
        if token.kind != "id":
            raise SelectorError(f"found '{token.literal}', expected: identifier")
        return {token.literal}


def parse_label_selector(text: str) -> LabelSelector:
    """labels.Parse: "app=web,tier!=db,env in (a,b),!legacy,release"; "" selects everything."""
    return _selector(_Parser(text).parse())


_EXPRESSION_OPERATORS = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}


def label_selector_from_dict(selector: dict[str, Any] | None) -> LabelSelector:
    """metav1.LabelSelectorAsSelector: nil selects nothing, {} selects everything."""
    if selector is None:
        return LabelSelector.match_nothing()
    if not isinstance(selector, dict):
        raise SelectorError("a label selector must be an object")
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, dict) or not isinstance(expressions, list):
        raise SelectorError("matchLabels must be an object and matchExpressions an array")
    requirements: list[Requirement] = []
    for key, value in match_labels.items():
        if not isinstance(value, str):
            raise SelectorError(f"matchLabels[{key}] must be a string")
        requirements.append(new_requirement(key, EQUALS, [value]))
    for expression in expressions:
        if not isinstance(expression, dict):
            raise SelectorError("each of matchExpressions must be an object")
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = expression.get("values") or []
        if not isinstance(key, str) or not isinstance(values, list):
            raise SelectorError("matchExpressions key must be a string and values an array")
        if not all(isinstance(v, str) for v in values):
            raise SelectorError("matchExpressions values must be strings")
        if operator not in _EXPRESSION_OPERATORS:
            raise SelectorError(f"{_quote(str(operator))} is not a valid pod selector operator")
        requirements.append(new_requirement(key, _EXPRESSION_OPERATORS[operator], values))
    return _selector(requirements)


def label_selector_to_string(selector: dict[str, Any] | None) -> str:
    """A metav1.LabelSelector as selector text ("app=web,tier in (fe)"), as in scale status."""
    return str(label_selector_from_dict(selector))


# --- Field selectors --------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSelector:
    """fields.Selector: (field, operator, value) terms ANDed; a missing field reads as ""."""

    requirements: tuple[tuple[str, str, str], ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        for field, operator, value in self.requirements:
            wants_equal = operator != "!="
            if (fields.get(field, "") == value) != wants_equal:
                return False
        return True

    def empty(self) -> bool:
        return not self.requirements

    def fields(self) -> set[str]:
        """The field names used, for the server to check it supports each one."""
        return {field for field, _, _ in self.requirements}

    def __str__(self) -> str:
        return ",".join(
            f"{field}{'!=' if operator == '!=' else '='}{escape_field_value(value)}"
            for field, operator, value in self.requirements
        )


def escape_field_value(value: str) -> str:
    """fields.EscapeValue: backslash-escape `\\`, `,` and `=` in a field selector value."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(value: str) -> str:
    """fields.UnescapeValue: undo escapes; a bare `,` or `=` in a value is an error."""
    out: list[str] = []
    escaped = False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{char}")
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            # Upstream prints the character with %v, which for a Go rune is its code point.
            raise SelectorError(
                f"invalid field selector: unescaped character in value: {ord(char)}"
            )
        else:
            out.append(char)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not backslash-escaped (escapes are kept for later)."""
    terms: list[str] = []
    start, escaped = 0, False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def parse_field_selector(text: str) -> FieldSelector:
    """fields.ParseSelector: "spec.nodeName=,status.phase!=Running" (terms sorted)."""
    requirements: list[tuple[str, str, str]] = []
    for term in sorted(_split_terms(text)):
        if not term:
            continue
        for i in range(len(term)):
            operator = next((op for op in ("!=", "==", "=") if term.startswith(op, i)), None)
            if operator:
                field, value = term[:i], term[i + len(operator) :]
                requirements.append((field, operator, _unescape_field_value(value)))
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
    return FieldSelector(tuple(requirements))
