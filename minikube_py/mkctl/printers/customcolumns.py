"""`-o custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[*].image`
(kubectl's CustomColumnsPrinter).

Each column is a header and a relaxed JSONPath (`.a.b`, `a.b` or `{.a.b}`); a cell joins
the values found with commas, "<none>" when there are none.
"""

from __future__ import annotations

import re
from typing import Any

from minikube_py.api.gofmt import sprint
from minikube_py.mkctl.printers.jsonpath import JSONPath
from minikube_py.mkctl.printers.table import escape_terminal
from minikube_py.mkctl.printers.tabwriter import TabWriter

_RELAXED = re.compile(r"^\{\.?([^{}]+)\}$|^\.?([^{}]+)$")


class SpecError(Exception):
    pass


def relaxed_jsonpath(expression: str) -> str:
    """RelaxedJSONPathExpression: `.a.b`, `a.b`, `{a.b}` and `{.a.b}` all mean `{.a.b}`."""
    if not expression:
        return expression
    match = _RELAXED.match(expression)
    if match is None:
        raise SpecError("unexpected path string, expected a 'name1.name2' or '.name1.name2' "
                        "or '{name1.name2}' or '{.name1.name2}'")
    return "{.%s}" % (match.group(1) or match.group(2))


def parse_spec(spec: str) -> list[tuple[str, str]]:
    """NewCustomColumnsPrinterFromSpec: the (header, jsonpath template) of each column."""
    if not spec:
        raise SpecError("custom-columns format specified but no custom columns given")
    columns = []
    for part in spec.split(","):
        header, colon, path = part.partition(":")
        if not colon:
            raise SpecError(f"unexpected custom-columns spec: {part}, expected "
                            "<header>:<json-path-expr>")
        columns.append((header, relaxed_jsonpath(path)))
    return columns


class CustomColumnsPrinter:
    def __init__(self, columns: list[tuple[str, str]], no_headers: bool,
                 writer: TabWriter) -> None:
        self.columns = columns
        self.no_headers = no_headers
        self.writer = writer
        self.printed_headers = False

    def print_obj(self, obj: dict[str, Any]) -> None:
        if not self.no_headers and not self.printed_headers:
            self.writer.write_row([header for header, _ in self.columns])
            self.printed_headers = True
        items = obj.get("items") if isinstance(obj.get("items"), list) else [obj]
        for item in items:
            self.writer.write_row([self._cell(template, item) for _, template in self.columns])

    @staticmethod
    def _cell(template: str, item: dict[str, Any]) -> str:
        results = JSONPath(template).find_results(item)
        if not results or not results[0]:
            return "<none>"
        return ",".join(escape_terminal(sprint(value)) for values in results for value in values)
