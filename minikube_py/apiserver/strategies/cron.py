"""Cron schedules as a CronJob's `spec.schedule` accepts them (robfig/cron v3 ParseStandard).

Five fields (minute hour day-of-month month day-of-week), each a comma list of `*`,
`N`, `N-M` and `/step`, with month and weekday names; or a descriptor: `@hourly`,
`@daily`/`@midnight`, `@weekly`, `@monthly`, `@yearly`/`@annually`, `@every 1h30m`.
Errors carry the parser's own messages, which the API server returns unchanged.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass


class ScheduleError(ValueError):
    """A schedule that does not parse; the message is what upstream reports."""


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: tuple[str, ...] = ()  # names[i] stands for low + i


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS = (
    _Bounds(0, 59),  # minute
    _Bounds(0, 23),  # hour
    _Bounds(1, 31),  # day of month
    _Bounds(1, 12, _MONTHS),  # month
    _Bounds(0, 6, _WEEKDAYS),  # day of week
)
_FIELD_NAMES = ("minutes", "hours", "days_of_month", "months", "days_of_week")
# The fields each descriptor pins to their first value; the others allow every value.
_PINNED_FIELDS = {
    "@yearly": ("minutes", "hours", "days_of_month", "months"),
    "@annually": ("minutes", "hours", "days_of_month", "months"),
    "@monthly": ("minutes", "hours", "days_of_month"),
    "@weekly": ("minutes", "hours", "days_of_week"),
    "@daily": ("minutes", "hours"),
    "@midnight": ("minutes", "hours"),
    "@hourly": ("minutes",),
}
_GO_DURATION = re.compile(r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+|[-+]?0")


@dataclass(frozen=True)
class Schedule:
    """The times a schedule fires: allowed values per field, or a fixed interval."""

    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days_of_month: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    days_of_week: frozenset[int] = frozenset()
    every: str = ""  # a Go duration for `@every`
    time_zone: str = ""  # from a `TZ=` or `CRON_TZ=` prefix


def parse_schedule(spec: str) -> Schedule:
    """cron.ParseStandard."""
    if not spec:
        raise ScheduleError("empty spec string")
    time_zone = ""
    if spec.startswith(("TZ=", "CRON_TZ=")):
        head, _, rest = spec.partition(" ")
        time_zone = head.partition("=")[2]
        try:
            zoneinfo.ZoneInfo(time_zone)
        except (ValueError, zoneinfo.ZoneInfoNotFoundError) as error:
            raise ScheduleError(
                f"provided bad location {time_zone}: unknown time zone {time_zone}"
            ) from error
        spec = rest.strip()
    if spec.startswith("@"):
        return _parse_descriptor(spec, time_zone)
    fields = spec.split()
    if len(fields) != len(_FIELDS):
        raise ScheduleError(
            f"expected exactly {len(_FIELDS)} fields, found {len(fields)}: [{' '.join(fields)}]"
        )
    values = [_parse_field(field, bounds) for field, bounds in zip(fields, _FIELDS, strict=True)]
    return Schedule(*values, time_zone=time_zone)


def _parse_descriptor(spec: str, time_zone: str) -> Schedule:
    pinned = _PINNED_FIELDS.get(spec)
    if pinned is not None:
        values = {
            name: frozenset({bounds.low} if name in pinned else range(bounds.low, bounds.high + 1))
            for name, bounds in zip(_FIELD_NAMES, _FIELDS, strict=True)
        }
        return Schedule(**values, time_zone=time_zone)
    if spec.startswith("@every "):
        duration = spec.removeprefix("@every ")
        if not _GO_DURATION.fullmatch(duration):
            raise ScheduleError(
                f'failed to parse duration {spec}: time: invalid duration "{duration}"'
            )
        return Schedule(every=duration, time_zone=time_zone)
    raise ScheduleError(f"unrecognized descriptor: {spec}")


def _parse_field(field: str, bounds: _Bounds) -> frozenset[int]:
    """A comma-separated list of ranges."""
    values: set[int] = set()
    for expression in (part for part in field.split(",") if part):
        values |= _parse_range(expression, bounds)
    return frozenset(values)


def _parse_range(expression: str, bounds: _Bounds) -> set[int]:
    """`*`, `?`, `N`, `N-M`, each optionally followed by `/step`."""
    range_and_step = expression.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
    else:
        start = _parse_int_or_name(low_and_high[0], bounds)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _parse_int_or_name(low_and_high[1], bounds)
        else:
            raise ScheduleError(f"too many hyphens: {expression}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _parse_int(range_and_step[1])
        if len(low_and_high) == 1:
            end = bounds.high  # `N/step` means `N-max/step`
    else:
        raise ScheduleError(f"too many slashes: {expression}")
    if start < bounds.low:
        raise ScheduleError(
            f"beginning of range ({start}) below minimum ({bounds.low}): {expression}"
        )
    if end > bounds.high:
        raise ScheduleError(f"end of range ({end}) above maximum ({bounds.high}): {expression}")
    if start > end:
        raise ScheduleError(
            f"beginning of range ({start}) beyond end of range ({end}): {expression}"
        )
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expression}")
    return set(range(start, end + 1, step))


def _parse_int_or_name(text: str, bounds: _Bounds) -> int:
    if text.lower() in bounds.names:
        return bounds.low + bounds.names.index(text.lower())
    return _parse_int(text)


def _parse_int(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ScheduleError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
        )
    number = int(text)
    if number < 0:
        raise ScheduleError(f"negative number ({number}) not allowed: {text}")
    return number
