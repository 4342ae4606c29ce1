"""JSONPath templates parsed into nodes, as client-go's util/jsonpath parser.go and
node.go do: text, and actions in braces made of fields, array indexes and slices,
filters, wildcards, recursive descent, unions, and the identifiers `range` and `end`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


class JSONPathError(Exception):
    pass


# -- nodes (node.go) ------------------------------------------------------------------------

@dataclass
class ListNode:
    nodes: list[Any] = field(default_factory=list)


@dataclass
class TextNode:
    text: str


@dataclass
class FieldNode:
    value: str


@dataclass
class ParamsEntry:
    value: int = 0
    known: bool = False
    derived: bool = False


@dataclass
class ArrayNode:
    params: list[ParamsEntry]


@dataclass
class FilterNode:
    left: ListNode
    right: ListNode
    operator: str


@dataclass
class IntNode:
    value: int


@dataclass
class FloatNode:
    value: float


@dataclass
class BoolNode:
    value: bool


@dataclass
class WildcardNode:
    pass


@dataclass
class RecursiveNode:
    pass


@dataclass
class UnionNode:
    nodes: list[ListNode]


@dataclass
class IdentifierNode:
    name: str


# -- the parser (parser.go) -------------------------------------------------------------------

_DICT_KEY = re.compile(r"^'([^']*)'$")
_SLICE = re.compile(r"^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$")
_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$")


def _is_terminator(char: str) -> bool:
    return char in " \t\r\n" or char in ("", ".", ",", "[", "]", "$", "@", "{", "}")


def _is_alphanumeric(char: str) -> bool:
    return char == "_" or char.isalpha() or char.isdigit()


class Parser:
    def __init__(self) -> None:
        self.root = ListNode()
        self.input = ""
        self.pos = 0
        self.start = 0

    def parse(self, text: str) -> ListNode:
        self.input, self.root, self.pos, self.start = text, ListNode(), 0, 0
        self._parse_text(self.root)
        return self.root

    def _consume(self) -> str:
        value = self.input[self.start:self.pos]
        self.start = self.pos
        return value

    def _next(self) -> str:
        if self.pos >= len(self.input):
            self.pos += 1  # so that backup() after the end is a no-op, as Go's width 0
            return ""
        char = self.input[self.pos]
        self.pos += 1
        return char

    def _backup(self) -> None:
        self.pos -= 1

    def _peek(self) -> str:
        return self.input[self.pos] if self.pos < len(self.input) else ""

    def _parse_text(self, cur: ListNode) -> None:
        while True:
            if self.input.startswith("{", self.pos):
                if self.pos > self.start:
                    cur.nodes.append(TextNode(self._consume()))
                self._parse_left_delim(cur)
                return
            if self.pos >= len(self.input):
                break
            self.pos += 1
        if self.pos > self.start:
            cur.nodes.append(TextNode(self._consume()))

    def _parse_left_delim(self, cur: ListNode) -> None:
        self.pos += 1
        self._consume()
        node = ListNode()
        cur.nodes.append(node)
        self._parse_inside_action(node)

    def _parse_inside_action(self, cur: ListNode) -> None:
        while True:
            rest = self.input[self.pos:]
            if rest.startswith("}"):
                self.pos += 1
                self._consume()
                self._parse_text(self.root)
                return
            if rest.startswith("[?("):
                self._parse_filter(cur)
                continue
            if rest.startswith(".."):
                if cur.nodes and isinstance(cur.nodes[-1], RecursiveNode):
                    raise JSONPathError("invalid multiple recursive descent")
                self.pos += 2
                self._consume()
                cur.nodes.append(RecursiveNode())
                if _is_alphanumeric(self._peek()) and self._peek():
                    self._parse_field(cur)
                continue
            char = self._next()
            if char == "" or char in "\r\n":
                raise JSONPathError("unclosed action")
            if char == " " or char in "@$":
                self._consume()
            elif char == "[":
                self._parse_array(cur)
            elif char in "\"'":
                self._parse_quote(cur, char)
            elif char == ".":
                self._parse_field(cur)
            elif char in "+-" or char.isdigit():
                self._backup()
                self._parse_number(cur)
            elif _is_alphanumeric(char):
                self._backup()
                self._parse_identifier(cur)
            else:
                raise JSONPathError(
                    f"unrecognized character in action: U+{ord(char):04X} '{char}'")

    def _parse_identifier(self, cur: ListNode) -> None:
        while not _is_terminator(self._next()):
            pass
        self._backup()
        value = self._consume()
        cur.nodes.append(BoolNode(value == "true") if value in ("true", "false")
                         else IdentifierNode(value))

    def _parse_number(self, cur: ListNode) -> None:
        if self._peek() in ("+", "-"):
            self._next()
        while True:
            char = self._next()
            if char != "." and not char.isdigit():
                self._backup()
                break
        value = self._consume()
        try:
            cur.nodes.append(IntNode(int(value)))
            return
        except ValueError:
            pass
        try:
            cur.nodes.append(FloatNode(float(value)))
        except ValueError:
            raise JSONPathError(f"cannot parse number {value}") from None

    def _parse_array(self, cur: ListNode) -> None:
        while True:
            char = self._next()
            if char in ("", "\n"):
                raise JSONPathError("unterminated array")
            if char == "]":
                break
        text = self._consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            union = [_parse_action(f"[{part.strip(' ')}]") for part in parts]
            cur.nodes.append(UnionNode(union))
            return
        key = _DICT_KEY.match(text)
        if key:
            cur.nodes.extend(_parse_action(f".{key.group(1)}").nodes)
            return
        match = _SLICE.match(text)
        if match is None:
            raise JSONPathError(f"invalid array index {text}")
        groups = list(match.groups())
        params = [ParamsEntry(), ParamsEntry(), ParamsEntry()]
        for index in range(3):
            value = groups[index] or ""
            if value:
                if index > 0:
                    value = value[1:]
                if index > 0 and value == "":
                    params[index].known = False
                else:
                    try:
                        params[index].value = int(value)
                    except ValueError:
                        raise JSONPathError(f"array index {value} is not a number") from None
                    params[index].known = True
            elif index == 1:
                params[1] = ParamsEntry(params[0].value + 1, True, True)
        cur.nodes.append(ArrayNode(params))

    def _parse_filter(self, cur: ListNode) -> None:
        self.pos += 3
        self._consume()
        begin = end = False
        pair = ""
        while True:
            char = self._next()
            if char in ("", "\n"):
                raise JSONPathError("unterminated filter")
            if char in "\"'":
                if not begin:
                    begin, pair = True, char
                    continue
                if self.input[self.pos - 2] != "\\" and char == pair:
                    end = True
            elif char == ")" and begin == end:
                break
        if self._next() != "]":
            raise JSONPathError("unclosed array expect ]")
        text = self._consume()[:-2]
        match = _FILTER.match(text)
        if match is None:
            cur.nodes.append(FilterNode(_parse_action(text), ListNode(), "exists"))
        else:
            cur.nodes.append(FilterNode(_parse_action(match.group(1)),
                                        _parse_action(match.group(3)), match.group(2)))

    def _parse_quote(self, cur: ListNode, end: str) -> None:
        while True:
            char = self._next()
            if char in ("", "\n"):
                raise JSONPathError("unterminated quoted string")
            if char == end and self.input[self.pos - 2] != "\\":
                break
        value = self._consume()
        cur.nodes.append(TextNode(_unquote(value)))

    def _parse_field(self, cur: ListNode) -> None:
        self._consume()
        while True:
            char = self._next()
            if char == "\\":
                self._next()
            elif _is_terminator(char):
                self._backup()
                break
        value = self._consume()
        cur.nodes.append(WildcardNode() if value == "*" else FieldNode(value.replace("\\", "")))


def _parse_action(text: str) -> ListNode:
    """parseAction: a fragment parsed as the inside of one action."""
    root = Parser().parse("{" + text + "}")
    return root.nodes[0]


def _unquote(quoted: str) -> str:
    """UnquoteExtend: a '...' or "..." literal with Go's escapes."""
    body = quoted[1:-1]
    if "\\" not in body:
        return body
    try:
        return body.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError as error:
        raise JSONPathError(f"unquote string {quoted} error {error}") from None
