"""CronJob schedules: parse `spec.schedule` and work out when it fires.

Upstream validates and parses schedules with robfig/cron v3's standard parser
(cron.ParseStandard) and the CronJob controller asks the result for `Next` times
(pkg/controller/cronjob/utils.go). A schedule is five fields:

    field          values   names
    minute         0-59
    hour           0-23
    day of month   1-31
    month          1-12     JAN-DEC
    day of week    0-6      SUN-SAT   (0 is Sunday; 7 is out of range)

Each field is a comma-separated list of `*`, `?` (the same as `*`), `a` or `a-b`, each
with an optional step: `*/15`, `10-40/10`, and `5/15`, which means `5-59/15`. Names are
case-insensitive. Instead of fields, a descriptor: @yearly (@annually), @monthly,
@weekly, @daily (@midnight), @hourly, or `@every <Go duration>` ("@every 1h30m": one
interval after the previous run, in whole seconds, at least one second).

Day of month and day of week combine as in robfig v3: when either field is a wildcard
(`*` or `?` without a step above 1) a day must match both, otherwise either one; so
"0 0 1,15 * MON" runs on the 1st, the 15th and every Monday.

A schedule has no time zone of its own: it runs in the zone of the datetime handed to
`next_after`, which the controller takes from the CronJob's spec.timeZone. The `TZ=` and
`CRON_TZ=` prefixes robfig accepts are refused by `CronSchedule.parse`, as API validation
refuses them on create. The API server's validation calls `parse_standard`, which accepts
and checks a prefix as robfig does and leaves refusing it to the validation rule (a
CronJob whose stored schedule already has one may keep it).
"""

from __future__ import annotations

import json
import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

TZ_IN_SCHEDULE = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
_NEVER_FIRES = "time difference between two schedules is less than 1 second"
_SEARCH_YEARS = 5  # robfig gives up (returns the zero time) after five years
_ONE_MINUTE = timedelta(minutes=1)
_GO_INT = re.compile(r"[+-]?[0-9]+")  # what strconv.Atoi accepts

_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_EVERY = "@every "


class CronSyntaxError(ValueError):
    """A schedule that does not parse; the message is robfig/cron's."""


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int]


_MINUTE = _Bounds(0, 59, {})
_HOUR = _Bounds(0, 23, {})
_DAY_OF_MONTH = _Bounds(1, 31, {})
_MONTH_NAMES = "jan feb mar apr may jun jul aug sep oct nov dec".split()
_MONTH = _Bounds(1, 12, {name: i for i, name in enumerate(_MONTH_NAMES, start=1)})
_WEEKDAY_NAMES = "sun mon tue wed thu fri sat".split()
_DAY_OF_WEEK = _Bounds(0, 6, {name: i for i, name in enumerate(_WEEKDAY_NAMES)})


def _quote(text: str) -> str:
    """Go's %q, close enough."""
    return json.dumps(text, ensure_ascii=False)


def _parse_int(text: str) -> int:
    """mustParseInt: a decimal number (strconv.Atoi), not negative."""
    if not _GO_INT.fullmatch(text):
        detail = f"strconv.Atoi: parsing {_quote(text)}: invalid syntax"
        raise CronSyntaxError(f"failed to parse int from {text}: {detail}")
    number = int(text)
    if number < 0:
        raise CronSyntaxError(f"negative number ({number}) not allowed: {text}")
    return number


def _parse_value(text: str, bounds: _Bounds) -> int:
    """parseIntOrName: a month or weekday name, or a number."""
    named = bounds.names.get(text.lower())
    return named if named is not None else _parse_int(text)


def _parse_range(expr: str, bounds: _Bounds) -> tuple[set[int], bool]:
    """getRange: `*`, `a` or `a-b`, then an optional `/step`; also says if it is a wildcard."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    wildcard = low_and_high[0] in ("*", "?")
    if wildcard:
        start, end = bounds.low, bounds.high
    else:
        start = _parse_value(low_and_high[0], bounds)
        if len(low_and_high) > 2:
            raise CronSyntaxError(f"too many hyphens: {expr}")
        end = _parse_value(low_and_high[1], bounds) if len(low_and_high) == 2 else start
    if len(range_and_step) > 2:
        raise CronSyntaxError(f"too many slashes: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _parse_int(range_and_step[1])
        if len(low_and_high) == 1:
            end = bounds.high  # "a/n" means "a-max/n"
        wildcard = wildcard and step <= 1  # "*/2" restricts the field
    if start < bounds.low:
        raise CronSyntaxError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronSyntaxError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronSyntaxError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronSyntaxError(f"step of range should be a positive number: {expr}")
    return set(range(start, end + 1, step)), wildcard


def _parse_field(field: str, bounds: _Bounds) -> tuple[frozenset[int], bool]:
    """getField: the union of comma-separated ranges (empty items are skipped, as in Go)."""
    values: set[int] = set()
    wildcard = False
    for expr in field.split(","):
        if expr:
            more, star = _parse_range(expr, bounds)
            values |= more
            wildcard = wildcard or star
    return frozenset(values), wildcard


_DURATION_UNITS = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,  # U+00B5 micro sign
    "μs": 10**3,  # U+03BC Greek mu
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def _parse_go_duration(text: str) -> int:
    """time.ParseDuration, in nanoseconds: "90s", "1h30m", "1.5h", with an optional sign."""
    invalid = ValueError(f"time: invalid duration {_quote(text)}")
    sign = -1 if text.startswith("-") else 1
    rest = text[1:] if text[:1] in ("+", "-") else text
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    while rest:
        part = _DURATION_PART.match(rest)
        assert part is not None  # every group is optional
        whole, fraction, unit = part.groups()
        if not whole and not fraction:
            raise invalid
        if not unit:
            raise ValueError(f"time: missing unit in duration {_quote(text)}")
        if unit not in _DURATION_UNITS:
            raise ValueError(f"time: unknown unit {_quote(unit)} in duration {_quote(text)}")
        scale = _DURATION_UNITS[unit]
        total += int(whole or 0) * scale
        if fraction:
            total += int(fraction) * scale // 10 ** len(fraction)
        rest = rest[part.end() :]
    if total > 2**63 - 1:
        raise invalid
    return sign * total


@dataclass(frozen=True)
class CronSchedule:
    """A parsed schedule (robfig's SpecSchedule, or ConstantDelaySchedule for @every)."""

    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days_of_month: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    days_of_week: frozenset[int] = frozenset()  # 0 is Sunday
    any_day_of_month: bool = False  # the day-of-month field is a wildcard
    any_day_of_week: bool = False
    every: timedelta | None = None  # @every: a fixed interval, and the fields are unused

    @classmethod
    def parse(cls, text: str) -> CronSchedule:
        """cron.ParseStandard: five fields, or a descriptor; CronSyntaxError otherwise."""
        if not text:
            raise CronSyntaxError("empty spec string")
        if text.startswith(("TZ=", "CRON_TZ=")):
            raise CronSyntaxError(TZ_IN_SCHEDULE)
        return cls._parse_spec(text)

    @classmethod
    def _parse_spec(cls, text: str) -> CronSchedule:
        """A descriptor or five fields: what robfig parses after a time zone prefix."""
        if text.startswith(_EVERY):
            try:
                nanoseconds = _parse_go_duration(text[len(_EVERY) :])
            except ValueError as error:
                raise CronSyntaxError(f"failed to parse duration {text}: {error}") from None
            return cls(every=timedelta(seconds=max(nanoseconds, 10**9) // 10**9))
        if text.startswith("@"):
            if text not in _DESCRIPTORS:
                raise CronSyntaxError(f"unrecognized descriptor: {text}")
            text = _DESCRIPTORS[text]
        fields = text.split()
        if len(fields) != 5:
            shown = " ".join(fields)
            raise CronSyntaxError(f"expected exactly 5 fields, found {len(fields)}: [{shown}]")
        minutes, _ = _parse_field(fields[0], _MINUTE)
        hours, _ = _parse_field(fields[1], _HOUR)
        days_of_month, any_day_of_month = _parse_field(fields[2], _DAY_OF_MONTH)
        months, _ = _parse_field(fields[3], _MONTH)
        days_of_week, any_day_of_week = _parse_field(fields[4], _DAY_OF_WEEK)
        return cls(
            minutes, hours, days_of_month, months, days_of_week, any_day_of_month, any_day_of_week
        )

    def next_after(self, moment: datetime) -> datetime | None:
        """Schedule.Next: the first time the schedule fires strictly after `moment`, in
        moment's time zone (second 0); None if it does not fire within five years, as
        "0 0 30 2 *" never does.

        The fields are matched against the wall clock of that zone. Around daylight
        saving time this approximates robfig: a wall-clock time the clocks jump over does
        not fire that day (as in robfig); one they pass twice fires once, the first time
        (robfig fires twice).
        """
        if moment.tzinfo is None:
            raise ValueError("next_after needs a timezone-aware datetime")
        if self.every is not None:
            start = moment.astimezone(UTC).replace(microsecond=0)
            return (start + self.every).astimezone(moment.tzinfo)
        wall = moment.replace(tzinfo=None, second=0, microsecond=0) + _ONE_MINUTE
        last_year = wall.year + _SEARCH_YEARS
        while (match := self._first_match(wall, last_year)) is not None:
            candidate = match.replace(tzinfo=moment.tzinfo, fold=0)
            if _exists(candidate) and candidate.timestamp() > moment.timestamp():
                return candidate
            wall = match + _ONE_MINUTE
        return None

    def _first_match(self, wall: datetime, last_year: int) -> datetime | None:
        """The first wall-clock minute at or after `wall` that all the fields allow.

        Whenever a field does not match, move to the start of its next value and check
        every field again (a new day may be in a new month).
        """
        while wall.year <= last_year:
            if wall.month not in self.months:
                wall = datetime(wall.year + wall.month // 12, wall.month % 12 + 1, 1)
            elif not self._day_matches(wall):
                wall = datetime(wall.year, wall.month, wall.day) + timedelta(days=1)
            elif wall.hour not in self.hours:
                wall = wall.replace(minute=0) + timedelta(hours=1)
            elif wall.minute not in self.minutes:
                wall += _ONE_MINUTE
            else:
                return wall
        return None

    def _day_matches(self, day: datetime) -> bool:
        """dayMatches: both day fields must match if one is a wildcard, else either."""
        in_month = day.day in self.days_of_month
        in_week = day.isoweekday() % 7 in self.days_of_week
        if self.any_day_of_month or self.any_day_of_week:
            return in_month and in_week
        return in_month or in_week


def _exists(moment: datetime) -> bool:
    """False for a wall-clock time skipped by a daylight-saving jump (02:30 on the spring
    day in most of Europe and North America): it does not survive a round trip to UTC.
    """
    back = moment.astimezone(UTC).astimezone(moment.tzinfo)
    return back.replace(tzinfo=None) == moment.replace(tzinfo=None)


def parse_standard(text: str) -> CronSchedule:
    """cron.ParseStandard as API validation calls it: like CronSchedule.parse, but a
    `TZ=<zone>` or `CRON_TZ=<zone>` prefix naming a known time zone is accepted."""
    if not text:
        raise CronSyntaxError("empty spec string")
    if text.startswith(("TZ=", "CRON_TZ=")):
        head, _, text = text.partition(" ")
        time_zone = head.partition("=")[2]
        try:
            zoneinfo.ZoneInfo(time_zone)
        except (ValueError, OSError, zoneinfo.ZoneInfoNotFoundError) as error:
            raise CronSyntaxError(
                f"provided bad location {time_zone}: unknown time zone {time_zone}"
            ) from error
        text = text.strip()
    return CronSchedule._parse_spec(text)


def most_recent_schedule_time(
    schedule: CronSchedule, earliest: datetime, now: datetime
) -> tuple[datetime | None, int]:
    """mostRecentScheduleTime: the latest time the schedule fired in (earliest, now], or
    None, and about how many times it fired there.

    `earliest` is the CronJob's status.lastScheduleTime (else its creationTimestamp),
    moved up to now - startingDeadlineSeconds when that is later; the schedule runs in
    earliest's time zone. The count is upstream's estimate: the time since the first run
    over the gap between the first two runs, plus one. Upstream warns TooManyMissedTimes
    above 100 and leaves the decision to its caller, as this does. A schedule that can
    never fire ("0 0 31 2 *") raises ValueError with upstream's message.

    Upstream looks for the latest run only in the last gap or so before now, and finds
    nothing when later gaps are longer than the first (for "30 10,11,12 * * 1-5" last
    run on Thursday 10:30, at Friday 16:30 it returns no time); this widens the search
    until it finds the run (Friday 12:30).
    """
    first = schedule.next_after(earliest)
    if first is None:
        raise ValueError(_NEVER_FIRES)
    if now.timestamp() < first.timestamp():
        return None, 0
    second = schedule.next_after(first)
    if second is None:
        raise ValueError(_NEVER_FIRES)
    if now.timestamp() < second.timestamp():
        return first, 1
    gap = round(second.timestamp() - first.timestamp())
    count = int(now.timestamp() - first.timestamp()) // gap + 1
    # Search forward from a run `steps_back` gaps before the estimated last one (upstream
    # starts two back, which keeps @every runs on their chain), doubling until found.
    steps_back = 2
    while True:
        steps = count - steps_back
        start = earliest
        if steps >= 0:
            start = (first.astimezone(UTC) + timedelta(seconds=steps * gap)).astimezone(
                earliest.tzinfo
            )
        latest = None
        run = schedule.next_after(start)
        while run is not None and run.timestamp() <= now.timestamp():
            latest, run = run, schedule.next_after(run)
        if latest is not None:
            return latest, count
        steps_back *= 2
