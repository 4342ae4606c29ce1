"""What a plain (unquoted) YAML scalar means, by go-yaml v2's rules (resolve.go).

kubectl reads and writes YAML with sigs.k8s.io/yaml, which is go-yaml v2 underneath: YAML
1.1, where `yes`, `on`, `~`, `0x1F`, `1e3` and `2026-01-02` are not strings. The emitter
quotes a string exactly when its plain form would resolve to something else, and the
reader gives plain scalars their type, so both need this one function.
"""

from __future__ import annotations

import math
import re
from typing import Any

STR, BOOL, NULL, INT, FLOAT, TIMESTAMP, MERGE = (
    "str", "bool", "null", "int", "float", "timestamp", "merge")

_HINTS = {**dict.fromkeys("+-", "S"), **dict.fromkeys("0123456789", "D"),
          **dict.fromkeys("yYnNtTfFoO~", "M"), ".": "."}

_KNOWN: dict[str, tuple[str, Any]] = {}
for _value, _tag, _spellings in (
        (True, BOOL, "y Y yes Yes YES true True TRUE on On ON"),
        (False, BOOL, "n N no No NO false False FALSE off Off OFF"),
        (None, NULL, "~ null Null NULL"),
        (float("nan"), FLOAT, ".nan .NaN .NAN"),
        (float("inf"), FLOAT, ".inf .Inf .INF +.inf +.Inf +.INF"),
        (float("-inf"), FLOAT, "-.inf -.Inf -.INF"),
        ("<<", MERGE, "<<")):
    for _spelling in _spellings.split():
        _KNOWN[_spelling] = (_tag, _value)
_KNOWN[""] = (NULL, None)

_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")
_BASE60_FLOAT = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:(?:[Tt]([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(\.[0-9]+)?(?:Z|[-+][0-9]{2}:[0-9]{2}))"
    r"|(?: ([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(\.[0-9]+)?))?")
_DIGITS = {"x": "0123456789abcdefABCDEF", "o": "01234567", "b": "01"}
_BASES = {"x": 16, "o": 8, "b": 2}
_INT64 = 1 << 63
_UINT64 = 1 << 64
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def resolve(text: str) -> tuple[str, Any]:
    """resolve("", text): the tag go-yaml gives the plain scalar `text`, and its value."""
    hint = _HINTS.get(text[:1], "N" if not text else None)
    if hint is None:
        return STR, text
    known = _KNOWN.get(text)
    if known is not None:
        return known
    if hint == ".":
        if _DOT_FLOAT.fullmatch(text) and math.isfinite(float(text)):
            return FLOAT, float(text)
    elif hint in "DS":
        if _is_timestamp(text):
            return TIMESTAMP, text
        plain = text.replace("_", "")
        number = _go_parse_int(plain)
        if number is not None and (-_INT64 <= number < _INT64 or (
                plain[0] not in "+-" and number < _UINT64)):
            return INT, number
        # Go's ParseFloat fails with ErrRange where Python gives inf (`39e484`): go-yaml
        # then keeps the text a string
        if _YAML_FLOAT.fullmatch(plain) and math.isfinite(float(plain)):
            return FLOAT, float(plain)
    return STR, text


def is_base60_float(text: str) -> bool:
    """YAML 1.1's sexagesimal floats (`1:20`), which go-yaml still quotes on output."""
    return (text[:1] in "+-0123456789" and text != "" and ":" in text
            and _BASE60_FLOAT.fullmatch(text) is not None)


def _is_timestamp(text: str) -> bool:
    """parseTimestamp: the YYYY-M-D forms time.Parse accepts, with valid ranges."""
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return False
    year, month, day = (int(match.group(index)) for index in (1, 2, 3))
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= month <= 12 or not 1 <= day <= _DAYS[month - 1] - (
            month == 2 and not leap):
        return False
    clock = match.group(4, 5, 6) if match.group(4) else match.group(8, 9, 10)
    if clock[0] is None:
        return True
    hour, minute, second = (int(part) for part in clock)
    return hour < 24 and minute < 60 and second < 60


def _go_parse_int(text: str) -> int | None:
    """Go's strconv.ParseInt/ParseUint with base 0: 0x.., 0o.., 0b.., 0.. octal, decimal."""
    sign, digits = 1, text
    if digits[:1] in ("+", "-"):
        sign, digits = (-1 if digits[0] == "-" else 1), digits[1:]
    base, allowed = 10, "0123456789"
    if len(digits) > 1 and digits[0] == "0":
        prefix = digits[1].lower()
        if prefix in _BASES:
            base, allowed, digits = _BASES[prefix], _DIGITS[prefix], digits[2:]
        else:
            base, allowed, digits = 8, _DIGITS["o"], digits[1:]
    if not digits or any(char not in allowed for char in digits):
        return None
    return sign * int(digits, base)
