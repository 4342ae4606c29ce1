"""crictl's one error root, and its warnings (upstream logs both with logrus)."""

from __future__ import annotations

import sys
import time

_STARTED = time.monotonic()


class CrictlError(Exception):
    """A command failed: the message is the one line crictl prints; `code` is its exit
    status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def elapsed() -> int:
    """Whole seconds since crictl started, as logrus stamps its lines ([0000])."""
    return int(time.monotonic() - _STARTED)


def warn(message: str) -> None:
    """A warning on stderr, as logrus prints one: WARN[0000] message."""
    print(f"WARN[{elapsed():04d}] {message}", file=sys.stderr)
