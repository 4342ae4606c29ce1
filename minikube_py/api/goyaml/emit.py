"""YAML exactly as kubectl writes it: sigs.k8s.io/yaml.Marshal, i.e. go-yaml v2's emitter.

    dump({"kind": "Pod", "metadata": {"name": "web", "labels": {}}})
    ->  kind: Pod
        metadata:
          labels: {}
          name: web

The rules that make kubectl's YAML recognisable, each from go-yaml v2 (encode.go,
emitterc.go, sorter.go), the C libyaml emitter ported to Go:

- mapping keys in go-yaml's "natural" order: runs of digits compare as numbers
  (`a2` < `a10`) and a letter sorts after any non-letter;
- two-space indentation, with a sequence under a key not indented (`- ` under `key:`);
- a string is quoted (`"..."`) when its plain form would read back as something else
  (`"true"`, `"1"`, `""`, a timestamp); a string with a newline is a literal block (`|`);
  a string plain style cannot hold (`: `, a leading `*`, ...) is single-quoted, and one
  with characters YAML cannot show raw (tabs, control characters) double-quoted with escapes;
- long plain and quoted strings are folded at a space once past column 80;
- empty mappings and sequences are written `{}` and `[]`;
- a string holding a character JSON leaves raw but YAML may not contain (DEL, the C1
  controls, U+FFFE, U+FFFF) fails the whole output, as sigs.k8s.io/yaml re-reads the JSON
  with go-yaml before writing it: "yaml: control characters are not allowed".

The emitter below keeps libyaml's state (column, indent, whether the last character
written was whitespace or indentation) and its functions' names, so each step can be
compared with emitterc.go.
"""

from __future__ import annotations

import re
from functools import cmp_to_key
from typing import Any

from minikube_py.api.gofmt import format_float
from minikube_py.api.goyaml.resolve import STR, is_base60_float, resolve

BEST_INDENT = 2
BEST_WIDTH = 80

PLAIN, SINGLE_QUOTED, DOUBLE_QUOTED, LITERAL = "plain", "single", "double", "literal"

_BREAKS = "\r\n\x85\u2028\u2029"
# A string made only of these, starting with a letter or digit, needs no analysis: every
# style is allowed for it (no indicators, spaces, breaks or special characters).
_SIMPLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
_NOT_READABLE = re.compile("[\x7f-\x84\x86-\x9f\ufffe\uffff]")
_ESCAPES = {0x00: "0", 0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f",
            0x0D: "r", 0x1B: "e", 0x22: '"', 0x5C: "\\", 0x85: "N", 0xA0: "_",
            0x2028: "L", 0x2029: "P"}


class YAMLError(Exception):
    pass


def dump(value: Any) -> str:
    """yaml.Marshal of a JSON-like value (dicts, lists, str, int, float, bool, None)."""
    emitter = _Emitter()
    emitter.emit_node(value, root=True)
    emitter.write_indent()  # document end
    return "".join(emitter.out)


def _printable(char: str) -> bool:
    code = ord(char)
    return (code == 0x0A or 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF
            or (0xE000 <= code <= 0xFFFD and code != 0xFEFF))


def _key_less(a: str, b: str) -> bool:
    """sorter.go's keyList.Less for two string keys."""
    for i in range(min(len(a), len(b))):
        ca, cb = a[i], b[i]
        if ca == cb:
            continue
        a_letter, b_letter = ca.isalpha(), cb.isalpha()
        if a_letter and b_letter:
            return ca < cb
        if a_letter or b_letter:
            return b_letter
        a_number = b_number = 0
        if ca == "0" or cb == "0":
            j = i - 1
            while j >= 0 and a[j].isdecimal():
                if a[j] != "0":
                    a_number = b_number = 1
                    break
                j -= 1
        a_end = i
        while a_end < len(a) and a[a_end].isdecimal():
            a_number = a_number * 10 + ord(a[a_end]) - 48
            a_end += 1
        b_end = i
        while b_end < len(b) and b[b_end].isdecimal():
            b_number = b_number * 10 + ord(b[b_end]) - 48
            b_end += 1
        if a_number != b_number:
            return a_number < b_number
        if a_end != b_end:
            return a_end < b_end
        return ca < cb
    return len(a) < len(b)


_KEY_ORDER = cmp_to_key(lambda a, b: -1 if _key_less(a, b) else (1 if _key_less(b, a) else 0))


def sorted_keys(mapping: dict[str, Any]) -> list[str]:
    """A mapping's keys in go-yaml's order."""
    return sorted(mapping, key=_KEY_ORDER)


class _Scalar:
    """yaml_emitter_analyze_scalar's findings about one string."""

    __slots__ = ("value", "multiline", "block_plain_allowed", "single_quoted_allowed",
                 "block_allowed")

    def __init__(self, value: str) -> None:
        if _NOT_READABLE.search(value):
            raise YAMLError("yaml: control characters are not allowed")
        self.value = value
        if not value:
            self.multiline, self.block_plain_allowed = False, True
            self.single_quoted_allowed, self.block_allowed = True, False
            return
        if _SIMPLE.fullmatch(value) and not value.startswith(("---", "...")):
            self.multiline = False
            self.block_plain_allowed = self.single_quoted_allowed = self.block_allowed = True
            return
        self._analyze(value)

    def _analyze(self, value: str) -> None:
        # (flow_indicators and flow_plain_allowed are left out: nothing here is written in
        # flow style but empty collections.)
        block_indicators = line_breaks = special_characters = False
        leading_space = leading_break = trailing_space = trailing_break = False
        break_space = space_break = previous_space = previous_break = False
        if value.startswith(("---", "...")):
            block_indicators = True
        preceded_by_whitespace = True
        last = len(value) - 1
        for i, char in enumerate(value):
            followed_by_whitespace = i == last or value[i + 1] in " \t"
            if i == 0:
                if char in "#,[]{}&*!|>'\"%@`" or (char in "?:-" and followed_by_whitespace):
                    block_indicators = True
            elif (char == ":" and followed_by_whitespace) or (
                    char == "#" and preceded_by_whitespace):
                block_indicators = True
            if not _printable(char):
                special_characters = True
            if char == " ":
                leading_space = leading_space or i == 0
                trailing_space = trailing_space or i == last
                break_space = break_space or previous_break
                previous_space, previous_break = True, False
            elif char in _BREAKS:
                line_breaks = True
                leading_break = leading_break or i == 0
                trailing_break = trailing_break or i == last
                space_break = space_break or previous_space
                previous_space, previous_break = False, True
            else:
                previous_space = previous_break = False
            preceded_by_whitespace = char in " \t" or char in _BREAKS or char == "\0"
        self.multiline = line_breaks
        self.block_plain_allowed = self.single_quoted_allowed = self.block_allowed = True
        if leading_space or leading_break or trailing_space or trailing_break:
            self.block_plain_allowed = False
        if trailing_space:
            self.block_allowed = False
        if break_space:
            self.block_plain_allowed = self.single_quoted_allowed = False
        if space_break or special_characters:
            self.block_plain_allowed = self.single_quoted_allowed = self.block_allowed = False
        if line_breaks or block_indicators:
            self.block_plain_allowed = False


def _string_style(text: str) -> str:
    """encoder.stringv: the style go-yaml asks for; the emitter may still change it."""
    if "\n" in text:
        return LITERAL
    tag, _ = resolve(text)
    if tag == STR and not is_base60_float(text):
        return PLAIN
    return DOUBLE_QUOTED


class _Emitter:
    def __init__(self) -> None:
        self.out: list[str] = []
        self.column = 0
        self.indent = -1
        self.indents: list[int] = []
        self.whitespace = True
        self.indention = True
        self.mapping_context = False
        self.simple_key_context = False

    # -- the output buffer (put, put_break, write) --

    def put(self, text: str) -> None:
        self.out.append(text)
        self.column += len(text)

    def put_break(self) -> None:
        self.out.append("\n")
        self.column = 0

    def write_indent(self) -> None:
        indent = max(self.indent, 0)
        if not self.indention or self.column > indent or (
                self.column == indent and not self.whitespace):
            self.put_break()
        if self.column < indent:
            self.put(" " * (indent - self.column))
        self.whitespace = self.indention = True

    def write_indicator(self, indicator: str, need_whitespace: bool, is_whitespace: bool,
                        is_indention: bool) -> None:
        if need_whitespace and not self.whitespace:
            self.put(" ")
        self.put(indicator)
        self.whitespace = is_whitespace
        self.indention = self.indention and is_indention

    def increase_indent(self, flow: bool, indentless: bool) -> None:
        self.indents.append(self.indent)
        if self.indent < 0:
            self.indent = BEST_INDENT if flow else 0
        elif not indentless:
            self.indent += BEST_INDENT

    # -- nodes --

    def emit_node(self, value: Any, *, root: bool = False, sequence: bool = False,
                  mapping: bool = False, simple_key: bool = False) -> None:
        self.mapping_context = mapping
        self.simple_key_context = simple_key
        if isinstance(value, dict):
            if value:
                self.emit_block_mapping(value)
            else:
                self.emit_empty_flow("{", "}")
        elif isinstance(value, list):
            if value:
                self.emit_block_sequence(value)
            else:
                self.emit_empty_flow("[", "]")
        elif isinstance(value, str):
            self.emit_scalar(_Scalar(value), _string_style(value))
        elif value is None:
            self.emit_scalar(_Scalar("null"), PLAIN)
        elif isinstance(value, bool):
            self.emit_scalar(_Scalar("true" if value else "false"), PLAIN)
        elif isinstance(value, int):
            self.emit_scalar(_Scalar(str(value)), PLAIN)
        elif isinstance(value, float):
            text = format_float(value, "g")
            text = {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(text, text)
            self.emit_scalar(_Scalar(text), PLAIN)
        else:
            raise TypeError(f"cannot marshal type: {type(value).__name__}")

    def emit_empty_flow(self, start: str, end: str) -> None:
        """An empty mapping or sequence: `{}` / `[]` (flow style, as libyaml chooses)."""
        self.write_indicator(start, True, True, False)
        self.write_indicator(end, False, False, False)

    def emit_block_sequence(self, items: list[Any]) -> None:
        self.increase_indent(False, self.mapping_context and not self.indention)
        for item in items:
            self.write_indent()
            self.write_indicator("-", True, False, True)
            self.emit_node(item, sequence=True)
        self.indent = self.indents.pop()

    def emit_block_mapping(self, mapping: dict[str, Any]) -> None:
        self.increase_indent(False, False)
        for key in sorted_keys(mapping):
            self.write_indent()
            scalar = _Scalar(key)
            if not scalar.multiline and len(key.encode()) <= 128:  # check_simple_key
                self.mapping_context, self.simple_key_context = True, True
                self.emit_scalar(scalar, _string_style(key))
                self.write_indicator(":", False, False, False)
            else:
                self.write_indicator("?", True, False, True)
                self.mapping_context, self.simple_key_context = True, False
                self.emit_scalar(scalar, _string_style(key))
                self.write_indent()
                self.write_indicator(":", True, False, True)
            self.emit_node(mapping[key], mapping=True)
        self.indent = self.indents.pop()

    def emit_scalar(self, scalar: _Scalar, style: str) -> None:
        style = self.select_scalar_style(scalar, style)
        self.increase_indent(True, False)
        allow_breaks = not self.simple_key_context
        if style == PLAIN:
            self.write_plain(scalar.value, allow_breaks)
        elif style == SINGLE_QUOTED:
            self.write_single_quoted(scalar.value, allow_breaks)
        elif style == DOUBLE_QUOTED:
            self.write_double_quoted(scalar.value, allow_breaks)
        else:
            self.write_literal(scalar.value)
        self.indent = self.indents.pop()

    def select_scalar_style(self, scalar: _Scalar, style: str) -> str:
        if self.simple_key_context and scalar.multiline:
            style = DOUBLE_QUOTED
        if style == PLAIN and (not scalar.block_plain_allowed or (
                not scalar.value and self.simple_key_context)):
            style = SINGLE_QUOTED
        if style == SINGLE_QUOTED and not scalar.single_quoted_allowed:
            style = DOUBLE_QUOTED
        if style == LITERAL and (not scalar.block_allowed or self.simple_key_context):
            style = DOUBLE_QUOTED
        return style

    # -- scalar writers --

    def write_plain(self, value: str, allow_breaks: bool) -> None:
        if not self.whitespace:
            self.put(" ")
        last_space = value.rfind(" ")
        if not allow_breaks or last_space < 0 or self.column + last_space <= BEST_WIDTH:
            self.put(value)  # no space past the width: nothing to fold
        else:
            spaces = False
            for i, char in enumerate(value):
                if char == " ":
                    if (not spaces and self.column > BEST_WIDTH
                            and i + 1 < len(value) and value[i + 1] != " "):
                        self.write_indent()
                    else:
                        self.put(char)
                    spaces = True
                else:
                    self.put(char)
                    self.indention = spaces = False
        self.whitespace = self.indention = False

    def write_single_quoted(self, value: str, allow_breaks: bool) -> None:
        self.write_indicator("'", True, False, False)
        spaces = breaks = False
        last = len(value) - 1
        for i, char in enumerate(value):
            if char == " ":
                if (allow_breaks and not spaces and self.column > BEST_WIDTH and 0 < i < last
                        and value[i + 1] != " "):
                    self.write_indent()
                else:
                    self.put(char)
                spaces = True
            elif char in _BREAKS:
                if not breaks and char == "\n":
                    self.put_break()
                self.write_break(char)
                self.indention = breaks = True
            else:
                if breaks:
                    self.write_indent()
                self.put("''" if char == "'" else char)
                self.indention = spaces = breaks = False
        self.write_indicator("'", False, False, False)
        self.whitespace = self.indention = False

    def write_double_quoted(self, value: str, allow_breaks: bool) -> None:
        self.write_indicator('"', True, False, False)
        starts_with_bom = value.startswith("\ufeff")
        spaces = False
        last = len(value) - 1
        i = 0
        while i <= last:
            char = value[i]
            if (starts_with_bom or not _printable(char) or char in _BREAKS
                    or char in '"\\'):
                code = ord(char)
                if code in _ESCAPES:
                    self.put("\\" + _ESCAPES[code])
                elif code <= 0xFF:
                    self.put(f"\\x{code:02X}")
                elif code <= 0xFFFF:
                    self.put(f"\\u{code:04X}")
                else:
                    self.put(f"\\U{code:08X}")
                spaces = False
            elif char == " ":
                if allow_breaks and not spaces and self.column > BEST_WIDTH and 0 < i < last:
                    self.write_indent()
                    if value[i + 1] == " ":
                        self.put("\\")
                else:
                    self.put(char)
                spaces = True
            else:
                self.put(char)
                spaces = False
            i += 1
        self.write_indicator('"', False, False, False)
        self.whitespace = self.indention = False

    def write_literal(self, value: str) -> None:
        self.write_indicator("|", True, False, False)
        if value and (value[0] == " " or value[0] in _BREAKS):
            self.write_indicator(str(BEST_INDENT), False, False, False)
        if not value or value[-1] not in _BREAKS:
            self.write_indicator("-", False, False, False)
        elif len(value) == 1 or value[-2] in _BREAKS:
            self.write_indicator("+", False, False, False)
        self.put_break()
        self.indention = self.whitespace = True
        breaks = True
        for char in value:
            if char in _BREAKS:
                self.write_break(char)
                self.indention = breaks = True
            else:
                if breaks:
                    self.write_indent()
                self.put(char)
                self.indention = breaks = False

    def write_break(self, char: str) -> None:
        if char == "\n":
            self.put_break()
        else:
            self.out.append(char)
            self.column = 0
