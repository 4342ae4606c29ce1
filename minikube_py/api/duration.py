"""Durations for humans: the "5s", "3m10s", "2d1h" strings kubectl shows in AGE columns,
and the Go durations ("30s", "1m30s", "500ms") that upstream's flags take.

Upstream: `k8s.io/apimachinery/pkg/util/duration` (HumanDuration, ShortHumanDuration).
Both tolerate up to two seconds of clock skew: a duration just below zero reads "0s",
anything further in the future reads "<invalid>".
"""

from __future__ import annotations

import argparse
import re
from datetime import timedelta

_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3,
                   "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """time.ParseDuration, in seconds; None when Go would refuse it."""
    sign, rest = 1.0, text
    if rest[:1] in ("+", "-"):
        sign, rest = (-1.0 if rest[0] == "-" else 1.0), rest[1:]
    if rest == "0":
        return 0.0
    total, position = 0.0, 0
    while position < len(rest):
        match = _DURATION_PART.match(rest, position)
        if match is None or match.group(1) in ("", "."):
            return None
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    return sign * total if rest else None


def flag_duration(text: str) -> float:
    """A duration flag, in seconds: Go's form as upstream's components take it (`40s`,
    `1m30s`, `500ms`, `0`), or a plain number of seconds. An argparse type."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (examples: 40s, 1m30s, "
                                         "500ms)")
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String() (`1m0s`, `1h0m0s`, `10s`, `500ms`), as a component
    shows its durations in /configz."""
    if seconds == 0:
        return "0s"
    if abs(seconds) < 1:
        return f"{seconds * 1000:g}ms"
    sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:g}s"
    if hours or minutes:
        text = f"{int(minutes)}m" + text
    if hours:
        text = f"{int(hours)}h" + text
    return sign + text


_SECOND = 1_000_000  # the unit of everything below: microseconds, timedelta's resolution
_MINUTE = 60 * _SECOND
_HOUR = 60 * _MINUTE
_DAY = 24 * _HOUR
_YEAR = 365 * _DAY


def _microseconds(d: timedelta) -> int:
    return d // timedelta(microseconds=1)


def _whole_seconds(microseconds: int) -> int:
    """Seconds truncated toward zero, as Go's `int(d.Seconds())` (-1.5s is -1, not -2)."""
    if microseconds < 0:
        return -(-microseconds // _SECOND)
    return microseconds // _SECOND


def _negative(seconds: int) -> str:
    """A duration below zero: "0s" within the tolerated clock skew (-1s), else "<invalid>"."""
    return "0s" if seconds == -1 else "<invalid>"


def _two_units(count: int, unit: str, rest: int, rest_unit: str) -> str:
    """Two units, as in "3m10s"; just "3m" when the rest is zero."""
    return f"{count}{unit}{rest}{rest_unit}" if rest else f"{count}{unit}"


def human_duration(d: timedelta) -> str:
    """HumanDuration: ~2-3 significant figures ("119s", "3m10s", "7h59m", "2d1h", "2y1d")."""
    us = _microseconds(d)
    seconds = _whole_seconds(us)
    if seconds < 0:
        return _negative(seconds)
    if seconds < 2 * 60:
        return f"{seconds}s"
    minutes = us // _MINUTE
    if minutes < 10:
        return _two_units(minutes, "m", seconds % 60, "s")
    if minutes < 3 * 60:
        return f"{minutes}m"
    hours = us // _HOUR
    if hours < 8:
        return _two_units(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 8 * 24:
        return _two_units(days, "d", hours % 24, "h")
    if hours < 2 * 365 * 24:
        return f"{days}d"
    years = days // 365
    if hours < 8 * 365 * 24:
        return _two_units(years, "y", days % 365, "d")
    return f"{years}y"



def short_human_duration(d: timedelta) -> str:
    """ShortHumanDuration: one unit ("59s", "5m", "23h", "3d", "2y"), as `kubeadm token
    list` shows a token's TTL."""
    us = _microseconds(d)
    seconds = _whole_seconds(us)
    if seconds < 0:
        return _negative(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if (minutes := us // _MINUTE) < 60:
        return f"{minutes}m"
    if (hours := us // _HOUR) < 24:
        return f"{hours}h"
    if hours < 365 * 24:
        return f"{hours // 24}d"
    return f"{hours // (365 * 24)}y"
