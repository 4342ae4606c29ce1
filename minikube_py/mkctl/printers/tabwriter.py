"""Aligned columns as kubectl makes them: liggitt/tabwriter (Go's text/tabwriter plus
RememberWidths), configured as cli-runtime's GetNewTabWriter does; or, with
`remember_widths=False`, Go's plain text/tabwriter as `kubectl describe` configures it
(no minimum width, 2 spaces of padding).

A cell is as wide as its longest text plus 3 spaces of padding, and never narrower than
6; the last cell of a line is not padded. Consecutive lines with a cell in the same
column form a block aligned together. With RememberWidths a column never narrows after a
flush, which keeps the rows of `get -w` aligned with the rows printed before them.
"""

from __future__ import annotations

from typing import TextIO

MIN_WIDTH = 6
PADDING = 3


class TabWriter:
    def __init__(self, out: TextIO, *, min_width: int = MIN_WIDTH, padding: int = PADDING,
                 remember_widths: bool = True) -> None:
        self.out = out
        self.min_width = min_width
        self.padding = padding
        self.remember_widths = remember_widths
        self.lines: list[list[str]] = []
        self.remembered: list[int] = []
        self.written = 0  # characters written so far (kubectl's trackingWriterWrapper)
        self.separator_pending = False  # a blank line before the next output (two tables)

    def write_row(self, cells: list[str]) -> None:
        """One line: what `strings.Join(cells, "\\t") + "\\n"` writes to a Go tabwriter."""
        self.lines.append(cells)

    def write_text(self, text: str) -> None:
        """Tab-separated text, one or more lines each ending in a newline."""
        for line in text.splitlines():
            self.lines.append(line.split("\t"))

    def forget_widths(self) -> None:
        """SetRememberedWidths(nil): the next table starts its columns afresh."""
        self.remembered = []

    def flush(self) -> None:
        if self.lines:
            pieces: list[str] = ["\n"] if self.separator_pending else []
            self.separator_pending = False
            self._format(pieces, 0, len(self.lines), [])
            text = "".join(pieces)
            self.out.write(text)
            self.written += len(text)
            self.lines = []

    def _format(self, pieces: list[str], line0: int, line1: int, widths: list[int]) -> None:
        """Go's Writer.format: find the blocks of lines that have a cell in the next
        column, size that column per block, and recurse for the columns to its right."""
        column = len(widths)
        this = line0
        while this < line1:
            if column >= len(self.lines[this]) - 1:
                this += 1
                continue
            self._write_lines(pieces, line0, this, widths)
            line0 = this
            width = self.min_width
            while this < line1 and column < len(self.lines[this]) - 1:
                width = max(width, len(self.lines[this][column]) + self.padding)
                this += 1
            width = self._remember(column, widths, width)
            self._format(pieces, line0, this, [*widths, width])
            line0 = this
            this += 1
        self._write_lines(pieces, line0, line1, widths)

    def _remember(self, column: int, widths: list[int], width: int) -> int:
        if not self.remember_widths:
            return width
        if len(self.remembered) < column:
            self.remembered.extend(widths[len(self.remembered):])
        if len(self.remembered) == column:
            self.remembered.append(width)
        elif self.remembered[column] > width:
            width = self.remembered[column]
        else:
            self.remembered[column] = width
        return width

    def _write_lines(self, pieces: list[str], line0: int, line1: int, widths: list[int]
                     ) -> None:
        for line in self.lines[line0:line1]:
            for index, cell in enumerate(line):
                pieces.append(cell)
                if index < len(widths):
                    pieces.append(" " * (widths[index] - len(cell)))
            pieces.append("\n")
