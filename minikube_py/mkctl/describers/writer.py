"""kubectl describe's output machinery (describe.go: PrefixWriter, tabbedString).

A describer writes lines with `write(level, text)`: the text after `level` times two
spaces, tabs separating the cells that line up. The whole description then goes through
Go's text/tabwriter as tabbedString configures it (no minimum width, 2 spaces of
padding), so "Name:\\tweb" and "Namespace:\\tdefault" come out aligned.
"""

from __future__ import annotations

import io
from datetime import datetime

from minikube_py.mkctl.printers.table import escape_terminal
from minikube_py.mkctl.printers.tabwriter import TabWriter

LEVEL_0, LEVEL_1, LEVEL_2, LEVEL_3, LEVEL_4 = range(5)


class PrefixWriter:
    """Text indented by level, gathered for one pass through the tabwriter."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._done = io.StringIO()  # what earlier flushes aligned

    def write(self, level: int, text: str) -> None:
        """Write: the text after the level's indentation, escape characters and carriage
        returns made visible (printers.WriteEscaped)."""
        self._parts.append(escape_terminal("  " * level + text))

    def write_line(self, text: str) -> None:
        """WriteLine: the text and a newline, without indentation."""
        self._parts.append(escape_terminal(text + "\n"))

    def flush(self) -> None:
        """Flush: align what was written so far on its own; later lines start new
        columns (DescribeEvents does it before its table)."""
        writer = TabWriter(self._done, min_width=0, padding=2, remember_widths=False)
        lines = "".join(self._parts).split("\n")
        for line in lines[:-1]:
            writer.write_row(line.split("\t"))
        writer.flush()
        self._parts = [lines[-1]] if lines[-1] else []

    def raw(self) -> str:
        """The text as written, tabs kept (what a describer hands to a caller that
        prints it without a tabwriter, as `rollout history --revision` does)."""
        return self._done.getvalue() + "".join(self._parts)

    def tabbed(self) -> str:
        """tabbedString: the text with its tab-separated cells aligned."""
        self.flush()
        return self._done.getvalue() + "".join(self._parts)


def rfc1123z(timestamp: str | None) -> str:
    """time.RFC1123Z in the local time zone, as Go formats a metav1.Time; Go's zero time
    for a missing one."""
    if not timestamp:
        return "Mon, 01 Jan 0001 00:00:00 +0000"
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone()
    return moment.strftime("%a, %d %b %Y %H:%M:%S %z")
