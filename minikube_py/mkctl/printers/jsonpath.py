"""JSONPath templates as kubectl evaluates them (k8s.io/client-go/util/jsonpath).

    {.items[*].metadata.name}                     field access, wildcards, slices [1:3]
    {range .items[*]}{.metadata.name}{"\\n"}{end}   iteration, with literal text
    {.items[?(@.status.phase=="Running")].metadata.name}    filters: == != < > <= >=
    {..image}                                     recursive descent
    {.spec['containers','initContainers']}        unions

A template is text with actions in braces; each action yields a list of values, printed
separated by spaces, maps and lists as compact JSON. Missing keys yield nothing
(`AllowMissingKeys`, kubectl's default). The parser and the evaluator follow the Go
code's structure, so an expression reads here as it does in parser.go and jsonpath.go.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from minikube_py.mkctl.gofmt import sprint
from minikube_py.mkctl.printers import gojson


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


# -- evaluation (jsonpath.go) -----------------------------------------------------------------

class JSONPath:
    """One parsed template; `execute` renders it against a JSON-like value."""

    def __init__(self, template: str, *, allow_missing_keys: bool = True,
                 output_json: bool = False) -> None:
        self.root = Parser().parse(template)
        self.allow_missing_keys = allow_missing_keys
        self.output_json = output_json
        self.begin_range = self.in_range = self.end_range = 0
        self.last_end_node: Any = None

    def execute(self, data: Any) -> str:
        return "".join(self.print_results(results) for results in self.find_results(data))

    def find_results(self, data: Any, nodes: list[Any] | None = None) -> list[list[Any]]:
        nodes = self.root.nodes if nodes is None else nodes
        current = [data]
        full: list[list[Any]] = []
        i = 0
        while i < len(nodes):
            node = nodes[i]
            results = self._walk(current, node)
            if 0 < self.end_range <= self.in_range:
                self.end_range -= 1
                self.last_end_node = node
                break
            if self.begin_range > 0:
                self.begin_range -= 1
                self.in_range += 1
                for value in results or [None]:
                    nested = self.find_results(value, nodes[i + 1:])
                    if results:
                        full.extend(nested)
                self.in_range -= 1
                for k in range(i + 1, len(nodes)):
                    if nodes[k] is self.last_end_node:
                        i = k
                        break
                i += 1
                continue
            full.append(results)
            i += 1
        return full

    def print_results(self, results: list[Any]) -> str:
        if self.output_json:
            return gojson.dumps(results) + "\n"
        texts = []
        for value in results:
            if isinstance(value, dict | list):
                texts.append(gojson.dumps(value, indent=None))
            elif value is None:
                texts.append("null")
            else:
                texts.append(sprint(value))
        return " ".join(texts)

    def _walk(self, values: list[Any], node: Any) -> list[Any]:
        if isinstance(node, ListNode):
            for child in node.nodes:
                values = self._walk(values, child)
            return values
        if isinstance(node, TextNode):
            return [node.text]
        if isinstance(node, FieldNode):
            return self._eval_field(values, node)
        if isinstance(node, ArrayNode):
            return self._eval_array(values, node)
        if isinstance(node, FilterNode):
            return self._eval_filter(values, node)
        if isinstance(node, IntNode | FloatNode | BoolNode):
            return [node.value for _ in values]
        if isinstance(node, WildcardNode):
            return [child for value in values if value is not None
                    for child in _children(value)]
        if isinstance(node, RecursiveNode):
            return self._eval_recursive(values)
        if isinstance(node, UnionNode):
            return [result for child in node.nodes for result in self._walk(values, child)]
        if isinstance(node, IdentifierNode):
            return self._eval_identifier(values, node)
        raise JSONPathError(f"unexpected Node {node}")

    def _eval_identifier(self, values: list[Any], node: IdentifierNode) -> list[Any]:
        if node.name == "range":
            self.begin_range += 1
            return values
        if node.name == "end":
            if self.in_range > 0:
                self.end_range += 1
                return []
            raise JSONPathError("not in range, nothing to end")
        raise JSONPathError(f"unrecognized identifier {node.name}")

    def _eval_field(self, values: list[Any], node: FieldNode) -> list[Any]:
        results = []
        for value in values:
            if isinstance(value, dict) and node.value in value:
                results.append(value[node.value])
        if not results and values and not self.allow_missing_keys:
            raise JSONPathError(f"{node.value} is not found")
        return results

    def _eval_array(self, values: list[Any], node: ArrayNode) -> list[Any]:
        results: list[Any] = []
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                raise JSONPathError(f"{_go_type(value)} is not array or slice")
            start, end, step = (ParamsEntry(p.value, p.known, p.derived) for p in node.params)
            length = len(value)
            if not start.known:
                start.value = 0
            if start.value < 0:
                start.value += length
            if not end.known:
                end.value = length
            if end.value < 0 or (end.value == 0 and end.derived):
                end.value += length
            if end.value == start.value:
                return results
            if start.value >= length or start.value < 0:
                raise JSONPathError(
                    f"array index out of bounds: index {start.value}, length {length}")
            if end.value > length or end.value < 0:
                raise JSONPathError(
                    f"array index out of bounds: index {end.value - 1}, length {length}")
            if start.value > end.value:
                raise JSONPathError(f"starting index {start.value} is greater than ending "
                                    f"index {end.value}")
            stride = 1
            if step.known:
                if step.value <= 0:
                    raise JSONPathError("step must be > 0")
                stride = step.value
            results.extend(value[start.value:end.value:stride])
        return results

    def _eval_recursive(self, values: list[Any]) -> list[Any]:
        results: list[Any] = []
        for value in values:
            if value is None:
                continue
            children = _children(value)
            if children:
                results.append(value)
                results.extend(self._eval_recursive(children))
        return results

    def _eval_filter(self, values: list[Any], node: FilterNode) -> list[Any]:
        results = []
        for value in values:
            if not isinstance(value, list):
                raise JSONPathError(
                    f"{sprint(value)} is not array or slice and cannot be filtered")
            for item in value:
                lefts = self._walk([item], node.left)
                if node.operator == "exists":
                    if lefts:
                        results.append(item)
                    continue
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise JSONPathError("can only compare one element at a time")
                rights = self._walk([item], node.right)
                if not rights:
                    continue
                if len(rights) > 1:
                    raise JSONPathError("can only compare one element at a time")
                if _compare(lefts[0], rights[0], node.operator):
                    results.append(item)
        return results


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return list(value.encode())
    return []


def _go_type(value: Any) -> str:
    if isinstance(value, dict):
        return "map[string]interface {}"
    return {str: "string", bool: "bool", int: "int64", float: "float64"}.get(
        type(value), "interface {}")


def _compare(left: Any, right: Any, operator: str) -> bool:
    """text/template's eq/ne/lt/le/gt/ge: values of one basic kind only."""
    def kind(value: Any) -> str:
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, int):
            return "int"
        if isinstance(value, float):
            return "float"
        if isinstance(value, str):
            return "string"
        return "other"

    left_kind, right_kind = kind(left), kind(right)
    if left_kind != right_kind or left_kind == "other":
        raise JSONPathError("incompatible types for comparison")
    if operator == "==":
        return left == right
    if operator == "!=":
        return left != right
    if left_kind == "bool":
        raise JSONPathError("invalid type for comparison")
    operations = {"<": left < right, ">": left > right, "<=": left <= right,
                  ">=": left >= right}
    if operator not in operations:
        raise JSONPathError(f"unrecognized filter operator {operator}")
    return operations[operator]
