"""What the table-style benchmarks share: the run's header, the markdown table, and main().

Each benchmark supplies `measure(args) -> list of rows` (metric, value, target, result);
`run_benchmark` parses --quick/--no-append (plus the benchmark's own options), prints the
table and appends it to benchmarks/RESULTS.md with the date, CPU count and commit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.apiserver import BenchmarkError, git_commit, progress

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "RESULTS.md"
Row = tuple[str, str, str, str]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def markdown(title: str, script: str, quick: bool, rows: list[Row], note: str = "",
             load: float | None = None) -> str:
    """The run as a RESULTS.md section: a header line of facts, then the table."""
    load = os.getloadavg()[0] if load is None else load
    lines = [f"## {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}: {title}, "
             f"{'quick' if quick else 'full'} run", "",
             f"nproc {os.cpu_count()}; Python {platform.python_version()}; commit "
             f"{git_commit(REPO) or 'unknown'}; 1-minute load average at start {load:.2f}"
             f"{'; ' + note if note else ''}. `benchmarks/{script}`.", "",
             "| metric | value | target | result |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def run_benchmark(description: str, title: str, script: str,
                  measure: Callable[[argparse.Namespace], Awaitable[list[Row]]], *,
                  add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
                  note: Callable[[argparse.Namespace], str] | None = None) -> None:
    """main() of a benchmark: options, the measurement, the table printed and appended."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    parser.add_argument("--no-append", action="store_true",
                        help=f"do not append the results to {RESULTS.relative_to(REPO)}")
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    try:
        rows = asyncio.run(measure(args))
    except BenchmarkError as err:
        sys.exit(f"benchmark failed: {err}")
    text = markdown(title, script, args.quick, rows, note(args) if note else "", load)
    print(text)
    if not args.no_append:
        with RESULTS.open("a") as results:
            results.write("\n" + text)
        progress(f"appended to {RESULTS}")
