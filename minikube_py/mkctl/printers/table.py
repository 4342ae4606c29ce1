"""The human-readable output of `get`: the API server's Table, decorated as kubectl does
(cli-runtime's HumanReadablePrinter).

    NAMESPACE   NAME        READY   STATUS    RESTARTS   AGE   LABELS
    default     pod/web-1   1/1     Running   0          5m    app=web

The server computes every cell (AGE included); kubectl only decorates:

1. columns of priority > 0 are shown with `-o wide` only;
2. `-A` adds NAMESPACE first, `-L key` a column per label, `--show-labels` LABELS last,
   all read from each row's object (the metadata the server sends with the row);
3. when several kinds are printed together, NAME becomes `kind/name`;
4. the header is printed once per set of columns, and not at all for an empty table;
5. a cell is cut at its first line break ("...") and terminal escapes are defused.

An answer that is not a Table (a server that cannot make one) is printed with kubectl's
default columns, NAME and AGE, computed here.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import Obj
from minikube_py.api.gofmt import sprint
from minikube_py.mkctl.printers.tabwriter import TabWriter
from minikube_py.mkctl.record import Record

_CELL_BREAKS = "\f\n\r"
EVENT_TYPES = {"ADDED": "ADDED   ", "MODIFIED": "MODIFIED", "DELETED": "DELETED ",
               "ERROR": "ERROR   "}


class PrintOptions(Record):
    """printers.PrintOptions: what kubectl's flags ask of the table."""

    no_headers: bool = False
    wide: bool = False
    with_namespace: bool = False
    with_kind: bool = False
    kind: str = ""  # the GroupKind as Go prints it: "Pod", "Deployment.apps"
    show_labels: bool = False
    column_labels: list[str] = []


def escape_terminal(text: str) -> str:
    """printers.EscapeTerminal: ESC and carriage returns cannot reach the terminal."""
    return text.replace("\x1b", "^[").replace("\r", "\\r")


def format_labels(labels: dict[str, str] | None) -> str:
    """labels.FormatLabels: "a=1,b=2" sorted by key, "<none>" when there are none."""
    if not labels:
        return "<none>"
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def _cell_text(cell: Any) -> str:
    text = cell if isinstance(cell, str) else sprint(cell)
    cut = min((index for index in map(text.find, _CELL_BREAKS) if index >= 0), default=-1)
    if cut >= 0:
        return escape_terminal(text[:cut]) + "..."
    return escape_terminal(text) if "\x1b" in text else text


def _label_headers(column_labels: list[str]) -> list[str]:
    return [label.rsplit("/", 1)[-1].upper() for label in column_labels]


class TablePrinter:
    """Prints Tables (and, failing that, plain objects) to one TabWriter; remembers the
    columns it printed last so a watch's rows do not repeat the header."""

    def __init__(self, options: PrintOptions, writer: TabWriter) -> None:
        self.options = options
        self.writer = writer
        self.last_columns: list[Obj] | None = None
        self.printed_headers = False
        self.printed_default_headers = False

    def print_table(self, table: Obj, event_type: str = "") -> None:
        """HumanReadablePrinter.PrintObj for a Table (a watch event's, with its type)."""
        columns = table.get("columnDefinitions") or []
        rows = table.get("rows") or []
        no_headers = self.options.no_headers
        if self.printed_headers and (not columns or columns == self.last_columns):
            no_headers = True
        if not columns:
            columns = self.last_columns or []
        elif columns != self.last_columns:
            self.last_columns = columns
            self.printed_headers = False
        if rows:
            self.printed_headers = True
        headers, cells = self._decorate(columns, rows)
        if event_type:
            headers = ["EVENT", *headers]
            cells = [[EVENT_TYPES.get(event_type, event_type), *row] for row in cells]
        if not rows:
            return
        if not no_headers:
            self.writer.write_row(headers)
        for row in cells:
            self.writer.write_row(row)

    def _decorate(self, columns: list[Obj], rows: list[Obj]) -> tuple[list[str], list[list[str]]]:
        """decorateTable + printTable: the visible headers and cells of every row."""
        options = self.options
        visible = [index for index, column in enumerate(columns)
                   if options.wide or not column.get("priority")]
        name_column = -1
        if options.with_kind and options.kind:
            name_column = next((index for index, column in enumerate(columns)
                                if column.get("format") == "name"
                                and column.get("type") == "string"), -1)
        headers = [str(columns[index].get("name", "")).upper() for index in visible]
        if options.with_namespace:
            headers.insert(0, "NAMESPACE")
        headers += _label_headers(options.column_labels)
        if options.show_labels:
            headers.append("LABELS")
        kind = options.kind.lower()
        lines = []
        for row in rows:
            row_cells = row.get("cells") or []
            metadata = (row.get("object") or {}).get("metadata") or {}
            line = []
            if options.with_namespace:
                line.append(metadata.get("namespace", ""))
            for index in visible:
                cell = row_cells[index] if index < len(row_cells) else None
                if index == name_column:
                    cell = f"{kind}/{sprint(cell)}"
                line.append("" if cell is None else _cell_text(cell))
            line += self._label_cells(metadata.get("labels"))
            lines.append(line)
        return headers, lines

    def _label_cells(self, labels: dict[str, str] | None) -> list[str]:
        cells = [(labels or {}).get(key, "") for key in self.options.column_labels]
        if self.options.show_labels:
            cells.append(format_labels(labels))
        return cells

    def print_objects(self, objects: list[Obj], event_type: str = "") -> None:
        """The default handler (printObjectMeta) for answers that are not Tables: NAME and
        AGE, with the same decorations."""
        options = self.options
        if not self.printed_default_headers and not options.no_headers:
            headers = ["NAME", "AGE", *_label_headers(options.column_labels)]
            if options.show_labels:
                headers.append("LABELS")
            if options.with_namespace:
                headers.insert(0, "NAMESPACE")
            if event_type:
                headers.insert(0, "EVENT")
            self.writer.write_row(headers)
        self.printed_default_headers = True
        from datetime import UTC, datetime

        now = datetime.now(UTC)
        for obj in objects:
            metadata = obj.get("metadata") or {}
            name = metadata.get("name", "")
            if options.with_kind and options.kind:
                name = f"{options.kind.lower()}/{name}"
            line = [name, _age(metadata.get("creationTimestamp"), now),
                    *self._label_cells(metadata.get("labels"))]
            if options.with_namespace:
                line.insert(0, metadata.get("namespace", ""))
            if event_type:
                line.insert(0, EVENT_TYPES.get(event_type, event_type))
            self.writer.write_row(line)


def _age(timestamp: str | None, now: Any) -> str:
    """translateTimestampSince: "<unknown>" when unset, else the humanized duration."""
    if not timestamp:
        return "<unknown>"
    from datetime import datetime

    from minikube_py.api.duration import human_duration  # only on this rare path

    try:
        created = datetime.fromisoformat(timestamp)
    except ValueError:
        return "<unknown>"
    return human_duration(now - created)
