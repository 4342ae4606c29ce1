"""Logging as upstream's components do it (klog): `-v N`, and one line format everywhere.

    I1124 14:05:01.123456    4242 scheduler.py:310] "Attempting to schedule pod" pod="default/web-1"

The first letter is the severity (I, W, E), then the date and time, the process id, the
file and line that logged, and the message with its key="value" pairs (klog's structured
form, `kv(...)` below). `-v N` shows the messages of verbosity N and below, as with
upstream's `klog.V(N)`: V(2) is what a cluster runs with, each decision of each component
(a pod bound, a sync with what it changed), V(4) each step, V(5) and more the detail
(per-plugin scores). `log_v(log, 2, ...)` logs at verbosity 2.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from types import TracebackType
from typing import Any

_SEVERITY = {logging.DEBUG: "I", logging.INFO: "I", logging.WARNING: "W",
             logging.ERROR: "E", logging.CRITICAL: "F"}


def level_of(verbosity: int) -> int:
    """The Python logging level of klog verbosity V(n): V(0) is INFO, V(4) is DEBUG."""
    return max(1, logging.INFO - round(2.5 * verbosity))


def log_v(logger: logging.Logger, verbosity: int, message: str, **pairs: Any) -> None:
    """klog.V(verbosity).InfoS(message, key, value, ...)."""
    level = level_of(verbosity)
    if logger.isEnabledFor(level):
        logger.log(level, "%s", kv(message, **pairs), stacklevel=2)


def kv(message: str, **pairs: Any) -> str:
    """A structured message: "Message" key="value" key2=3."""
    parts = [f'"{message}"']
    for key, value in pairs.items():
        parts.append(f"{key}={value}" if isinstance(value, (int, float)) and not isinstance(
            value, bool) else f'{key}="{value}"')
    return " ".join(parts)


class KlogFormatter(logging.Formatter):
    """Lines in klog's header format (see the module docstring). A message of several
    lines (a traceback) carries the header on each, so that every line of a log reads
    as klog's and a grep for a severity finds them all."""

    def format(self, record: logging.LogRecord) -> str:
        seconds = time.localtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        head = (f"{_SEVERITY.get(record.levelno, 'I')}{time.strftime('%m%d %H:%M:%S', seconds)}"
                f".{micros:06d} {record.process:7d} {record.filename}:{record.lineno}] ")
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        if "\n" not in text:
            return head + text
        return "\n".join(head + line for line in text.splitlines())


def add_verbosity_flag(parser: argparse.ArgumentParser) -> None:
    """`-v N` / `--v N`, as upstream's components take it."""
    parser.add_argument("-v", "--v", dest="v", type=int, default=0,
                        help="log verbosity (klog's): 2 shows each decision, 4 each step")


def setup_logging(verbosity: int, level: int | None = None) -> None:
    """Log to stderr in klog's format at `verbosity` (or at the Python `level` given).

    Whatever else a process would print to stderr goes through it too: warnings from
    libraries (W lines, `warnings.warn`), and the traceback of an exception nobody caught,
    in the main thread, another thread, or a destructor (E lines)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KlogFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level_of(verbosity) if level is None else level)
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught
    threading.excepthook = lambda failure: _log_uncaught(
        failure.exc_type, failure.exc_value or failure.exc_type(), failure.exc_traceback)
    sys.unraisablehook = _log_unraisable


def _log_uncaught(kind: type[BaseException], error: BaseException,
                  trace: TracebackType | None) -> None:
    """An exception nobody caught: one E line and its traceback, each line a klog line."""
    logging.getLogger("minikube_py").error("Unhandled error", exc_info=(kind, error, trace))


def _log_unraisable(unraisable: Any) -> None:
    """An exception Python could not raise (in a destructor, a finalizer)."""
    logging.getLogger("minikube_py").error(
        "%s: %r", unraisable.err_msg or "Exception ignored in", unraisable.object,
        exc_info=(unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback))
