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

from typing import Any

from minikube_py.api.gofmt import sprint
from minikube_py.mkctl.printers import gojson
from minikube_py.mkctl.printers.jsonpath.parser import (
    ArrayNode,
    BoolNode,
    FieldNode,
    FilterNode,
    FloatNode,
    IdentifierNode,
    IntNode,
    JSONPathError,
    ListNode,
    ParamsEntry,
    Parser,
    RecursiveNode,
    TextNode,
    UnionNode,
    WildcardNode,
)

__all__ = ["JSONPath", "JSONPathError"]


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
