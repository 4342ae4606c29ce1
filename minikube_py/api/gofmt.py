"""How Go prints numbers and values, where kubectl's output depends on it.

    format_float(1e6, "g") == "1e+06"      strconv.FormatFloat(f, 'g', -1, 64), also %v
    json_float(1e21) == "1e+21"            encoding/json's float64 encoding
    sprint({"a": [1, 2.5]}) == "map[a:[1 2.5]]"   fmt.Sprint of a JSON-decoded value
    go_syntax({"a": 1}) == 'map[string]interface {}{"a":1}'   %#v, as kubectl's
                                           jsonpath errors show the object
    format_duration(32.0) == "32s"         time.Duration.String

Go and Python both print the shortest digits that read back as the same float; they differ
in where the exponent starts and how it is spelled, which is all this module decides.
"""

from __future__ import annotations

from typing import Any


def _shortest(value: float) -> tuple[str, int]:
    """The shortest digits of a positive finite float, and the position of the decimal
    point: value == 0.DIGITS x 10**point."""
    mantissa, _, exponent = repr(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    stripped = digits.lstrip("0")
    point = len(whole) + int(exponent or 0) - (len(digits) - len(stripped))
    return stripped.rstrip("0") or "0", point


def format_float(value: float, fmt: str) -> str:
    """strconv.FormatFloat(value, fmt, -1, 64) for fmt in "e", "f", "g"."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if value < 0 or (value == 0 and str(value).startswith("-")) else ""
    if value == 0:
        return sign + ("0e+00" if fmt == "e" else "0")
    digits, point = _shortest(abs(value))
    exponent = point - 1
    if fmt == "g":
        fmt = "e" if exponent < -4 or exponent >= 6 else "f"
    if fmt == "e":
        text = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{text}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def json_float(value: float) -> str:
    """encoding/json's float64: plain digits, an exponent only beyond [1e-6, 1e21)."""
    if value != 0 and not 1e-6 <= abs(value) < 1e21:
        text = format_float(value, "e")
        mantissa, _, exponent = text.partition("e")
        if exponent.startswith("-0"):
            exponent = "-" + exponent[2:]
        return f"{mantissa}e{exponent}"
    return format_float(value, "f")


def sprint(value: Any) -> str:
    """fmt.Sprint (%v) of a value decoded from JSON, as kubectl prints table cells."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value, "g")
    if value is None:
        return "<nil>"
    if isinstance(value, list):
        return "[" + " ".join(sprint(item) for item in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{sprint(value[key])}" for key in sorted(value)) + "]"
    return str(value)


_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                  "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def quote(text: str) -> str:
    """strconv.Quote: a Go string literal, printable characters kept as they are."""
    out = []
    for char in text:
        if char in _QUOTE_ESCAPES:
            out.append(_QUOTE_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def go_syntax(value: Any) -> str:
    """fmt's %#v of a value decoded from JSON into interface{}."""
    if isinstance(value, dict):
        inner = ", ".join(f"{quote(key)}:{go_syntax(value[key])}" for key in sorted(value))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_syntax(item) for item in value) + "}"
    if isinstance(value, str):
        return quote(value)
    if value is None:
        return "interface {}(nil)"
    return sprint(value)


def format_duration(seconds: float) -> str:
    """time.Duration.String: "32s", "1m0s", "1h2m3.5s", "500ms"."""
    if seconds == 0:
        return "0s"
    sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
    if seconds < 1:
        for unit, size in (("ms", 1e-3), ("\u00b5s", 1e-6), ("ns", 1e-9)):
            if seconds >= size:
                return f"{sign}{format_float(round(seconds / size, 9), 'f')}{unit}"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{format_float(round(secs, 9), 'f')}s"
    if hours or minutes:
        text = f"{int(minutes)}m{text}"
    if hours:
        text = f"{int(hours)}h{text}"
    return sign + text
