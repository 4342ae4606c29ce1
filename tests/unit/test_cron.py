"""CronJob schedules parse and fire like robfig/cron v3's standard parser."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from minikube_py.api.cron import (
    TZ_IN_SCHEDULE,
    CronSchedule,
    CronSyntaxError,
    most_recent_schedule_time,
)

NEW_YORK = ZoneInfo("America/New_York")


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# --- parsing ----------------------------------------------------------------------------

ALL_MINUTES = set(range(60))
ALL_HOURS = set(range(24))
ALL_DAYS = set(range(1, 32))
ALL_MONTHS = set(range(1, 13))
ALL_WEEKDAYS = set(range(7))


def fields(schedule: CronSchedule) -> tuple[object, ...]:
    """minutes, hours, days of month, months, days of week, and which day field is a `*`."""
    return (
        schedule.minutes,
        schedule.hours,
        schedule.days_of_month,
        schedule.months,
        schedule.days_of_week,
        schedule.any_day_of_month,
        schedule.any_day_of_week,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("* * * * *", (ALL_MINUTES, ALL_HOURS, ALL_DAYS, ALL_MONTHS, ALL_WEEKDAYS, True, True)),
        ("*/15 0 1 1 0", ({0, 15, 30, 45}, {0}, {1}, {1}, {0}, False, False)),
        (
            "5/20 1-3 1,15 * *",
            ({5, 25, 45}, {1, 2, 3}, {1, 15}, ALL_MONTHS, ALL_WEEKDAYS, False, True),
        ),
        (
            "10-40/10 6-16/4 ? Jan,JUL mon-FRI",
            ({10, 20, 30, 40}, {6, 10, 14}, ALL_DAYS, {1, 7}, {1, 2, 3, 4, 5}, True, False),
        ),
        # A step above 1 makes `*` a restriction (robfig v3, issue #70); `*/1` does not.
        ("0 0 */10 * */1", ({0}, {0}, {1, 11, 21, 31}, ALL_MONTHS, ALL_WEEKDAYS, False, True)),
        # Fields split like Go's strings.Fields; an empty item in a list is skipped.
        ("  0   12 1,,2 * *\t", ({0}, {12}, {1, 2}, ALL_MONTHS, ALL_WEEKDAYS, False, True)),
        ("@hourly", fields(CronSchedule.parse("0 * * * *"))),
        ("@daily", fields(CronSchedule.parse("0 0 * * *"))),
        ("@midnight", fields(CronSchedule.parse("0 0 * * *"))),
        ("@weekly", fields(CronSchedule.parse("0 0 * * 0"))),
        ("@monthly", fields(CronSchedule.parse("0 0 1 * *"))),
        ("@yearly", fields(CronSchedule.parse("0 0 1 1 *"))),
        ("@annually", fields(CronSchedule.parse("0 0 1 1 *"))),
    ],
)
def test_parse_reads_every_field(text: str, expected: tuple[object, ...]) -> None:
    schedule = CronSchedule.parse(text)
    assert fields(schedule) == expected
    assert schedule.every is None


@pytest.mark.parametrize(
    ("text", "interval"),
    [
        ("@every 1h30m", timedelta(hours=1, minutes=30)),
        ("@every 90s", timedelta(seconds=90)),
        ("@every 1.5s", timedelta(seconds=1)),  # whole seconds only
        ("@every 300ms", timedelta(seconds=1)),  # and at least one
        ("@every -5m", timedelta(seconds=1)),
    ],
)
def test_parse_every_keeps_whole_seconds_of_at_least_one(text: str, interval: timedelta) -> None:
    assert CronSchedule.parse(text).every == interval


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty spec string"),
        ("xyz", "expected exactly 5 fields, found 1: [xyz]"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("0 * * * * *", "expected exactly 5 fields, found 6: [0 * * * * *]"),
        ("60 0 * * *", "end of range (60) above maximum (59): 60"),
        ("0 24 * * *", "end of range (24) above maximum (23): 24"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * 13 *", "end of range (13) above maximum (12): 13"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),  # Sunday is 0 only
        ("59-2 * * * *", "beginning of range (59) beyond end of range (2): 59-2"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("0-0-0 * * * *", "too many hyphens: 0-0-0"),
        ("*/5/5 * * * *", "too many slashes: */5/5"),
        ("0 0 * * XY", 'failed to parse int from XY: strconv.Atoi: parsing "XY": invalid syntax'),
        ("-5 * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
        ("@unrecognized", "unrecognized descriptor: @unrecognized"),
        ("@every Xm", 'failed to parse duration @every Xm: time: invalid duration "Xm"'),
        ("@every 1d", (
            'failed to parse duration @every 1d: time: unknown unit "d" in duration "1d"'
        )),
        ("@every 10", 'failed to parse duration @every 10: time: missing unit in duration "10"'),
        ("TZ=UTC 0 * * * *", TZ_IN_SCHEDULE),
        ("CRON_TZ=Europe/Paris 0 3 * * *", TZ_IN_SCHEDULE),
    ],
)
def test_parse_rejects_bad_schedules_with_robfig_message(text: str, message: str) -> None:
    with pytest.raises(CronSyntaxError) as raised:
        CronSchedule.parse(text)
    assert str(raised.value) == message


# --- next_after -------------------------------------------------------------------------


# robfig TestNext, five fields instead of six, in UTC.
@pytest.mark.parametrize(
    ("moment", "spec", "expected"),
    [
        ("2012-07-09 14:45", "0/15 * * * *", "2012-07-09 15:00"),
        ("2012-07-09 14:59", "0/15 * * * *", "2012-07-09 15:00"),
        ("2012-07-09 14:59:59", "0/15 * * * *", "2012-07-09 15:00"),
        ("2012-07-09 15:45", "20-35/15 * * * *", "2012-07-09 16:20"),
        ("2012-07-09 23:46", "*/15 * * * *", "2012-07-10 00:00"),
        ("2012-07-09 23:45", "20-35/15 * * * *", "2012-07-10 00:20"),
        ("2012-07-09 23:35", "20-35/15 1/2 * * *", "2012-07-10 01:20"),
        ("2012-07-09 23:35", "20-35/15 10-12 * * *", "2012-07-10 10:20"),
        ("2012-07-09 23:35", "20-35/15 1/2 */2 * *", "2012-07-11 01:20"),
        ("2012-07-09 23:35", "20-35/15 * 9-20 Jul *", "2012-07-10 00:20"),
        ("2012-07-09 23:35", "0 0 9 Apr-Oct ?", "2012-08-09 00:00"),
        ("2012-07-09 23:35", "0 0 */5 Apr,Aug,Oct Mon", "2012-08-01 00:00"),
        ("2012-07-09 23:35", "0 0 */5 Oct Mon", "2012-10-01 00:00"),
        ("2012-07-09 23:35", "0 0 * Feb Mon", "2013-02-04 00:00"),
        ("2012-07-09 23:35", "0 0 * Feb Mon/2", "2013-02-01 00:00"),
        ("2012-12-31 23:59:45", "* * * * *", "2013-01-01 00:00"),
        ("2012-07-09 23:35", "0 0 29 Feb ?", "2016-02-29 00:00"),
    ],
)
def test_next_after_finds_the_next_run(moment: str, spec: str, expected: str) -> None:
    assert CronSchedule.parse(spec).next_after(utc(moment)) == utc(expected)


# robfig TestActivation: does the schedule fire at exactly this minute?
@pytest.mark.parametrize(
    ("moment", "spec", "fires"),
    [
        ("2012-07-09 15:00", "0/15 * * * *", True),
        ("2012-07-09 15:45", "0/15 * * * *", True),
        ("2012-07-09 15:40", "0/15 * * * *", False),
        ("2012-07-09 15:50", "5/15 * * * *", True),
        ("2012-07-15 15:00", "0/15 * * Jul *", True),
        ("2012-07-15 15:00", "0/15 * * Jun *", False),
        ("2012-07-15 08:30", "30 08 ? Jul Sun", True),
        ("2012-07-16 08:30", "30 08 ? Jul Sun", False),
        ("2012-07-09 15:00", "@hourly", True),
        ("2012-07-09 15:04", "@hourly", False),
        ("2012-07-09 00:00", "@daily", True),
        ("2012-07-09 00:00", "@weekly", False),
        ("2012-07-08 00:00", "@weekly", True),
        ("2012-07-01 00:00", "@monthly", True),
        # Both day fields restricted: either one may match.
        ("2012-07-15 00:00", "* * 1,15 * Sun", True),
        ("2012-06-15 00:00", "* * 1,15 * Sun", True),
        ("2012-08-01 00:00", "* * 1,15 * Sun", True),
        ("2012-07-15 00:00", "* * */10 * Sun", True),
        # One of them a wildcard: both must match.
        ("2012-07-15 00:00", "* * * * Mon", False),
        ("2012-07-09 00:00", "* * 1,15 * *", False),
        ("2012-07-15 00:00", "* * 1,15 * *", True),
        ("2012-07-15 00:00", "* * ? * Sun", True),
    ],
)
def test_schedule_fires_on_matching_minutes(moment: str, spec: str, fires: bool) -> None:
    at = utc(moment)
    assert (CronSchedule.parse(spec).next_after(at - timedelta(seconds=1)) == at) is fires


def test_next_after_is_strictly_after_and_on_the_minute() -> None:
    schedule = CronSchedule.parse("*/5 * * * *")
    assert schedule.next_after(utc("2024-01-01 10:05")) == utc("2024-01-01 10:10")
    assert schedule.next_after(utc("2024-01-01 10:05:59.5")) == utc("2024-01-01 10:10")


@pytest.mark.parametrize("spec", ["0 0 30 Feb ?", "0 0 31 Apr ?", "59 23 31 2 *"])
def test_next_after_gives_none_for_a_schedule_that_never_fires(spec: str) -> None:
    assert CronSchedule.parse(spec).next_after(utc("2012-07-09 23:35")) is None


def test_next_after_runs_in_the_zone_of_its_argument() -> None:
    tokyo = datetime(2016, 1, 3, 13, 9, 3, tzinfo=ZoneInfo("Asia/Tokyo"))
    assert CronSchedule.parse("14 14 * * *").next_after(tokyo) == tokyo.replace(
        hour=14, minute=14, second=0
    )


def test_next_after_needs_an_aware_datetime() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        CronSchedule.parse("* * * * *").next_after(datetime(2024, 1, 1))


def new_york(text: str, fold: int = 0) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=NEW_YORK, fold=fold)


# robfig TestNext's America/New_York cases (2012: spring forward 11 Mar, fall back 4 Nov).
@pytest.mark.parametrize(
    ("moment", "spec", "expected"),
    [
        # 02:30 does not exist on 11 March: that day is skipped, as robfig v3 does.
        (new_york("2012-03-11 00:00"), "30 2 11 Mar ?", new_york("2013-03-11 02:30")),
        (new_york("2012-03-11 00:00"), "0 2 * * *", new_york("2012-03-12 02:00")),
        (new_york("2012-03-11 01:00"), "0 * * * *", new_york("2012-03-11 03:00")),
        (new_york("2012-03-11 01:00"), "0 1 * * *", new_york("2012-03-12 01:00")),
        (new_york("2012-11-04 00:00"), "30 2 04 Nov ?", new_york("2012-11-04 02:30")),
        (new_york("2012-11-04 00:00"), "0 * * * *", new_york("2012-11-04 01:00")),
        (new_york("2012-11-04 00:00"), "0 3 * * *", new_york("2012-11-04 03:00")),
        # The repeated hour fires once, at its first pass (robfig fires at both passes).
        (new_york("2012-11-04 01:00"), "0 * * * *", new_york("2012-11-04 02:00")),
        (new_york("2012-11-04 01:00", fold=1), "0 * * * *", new_york("2012-11-04 02:00")),
        (new_york("2012-11-04 01:20", fold=1), "*/15 * * * *", new_york("2012-11-04 02:00")),
        (new_york("2012-11-04 00:00"), "0 1 * * *", new_york("2012-11-04 01:00")),
        (new_york("2012-11-04 01:00"), "0 1 * * *", new_york("2012-11-05 01:00")),
    ],
)
def test_next_after_across_daylight_saving_changes(
    moment: datetime, spec: str, expected: datetime
) -> None:
    found = CronSchedule.parse(spec).next_after(moment)
    assert found is not None
    assert found.timestamp() == expected.timestamp()
    assert found.utcoffset() == expected.utcoffset()


def test_every_adds_its_interval_in_real_time_dropping_fractions_of_a_second() -> None:
    schedule = CronSchedule.parse("@every 1h")
    assert schedule.next_after(utc("2024-01-01 10:00:30.75")) == utc("2024-01-01 11:00:30")
    # 01:30 EDT + 1h is 01:30 EST on the fall-back night, not 02:30.
    found = schedule.next_after(new_york("2012-11-04 01:30"))
    assert found is not None
    assert found.timestamp() == new_york("2012-11-04 01:30", fold=1).timestamp()


# --- most_recent_schedule_time ----------------------------------------------------------

TOP = utc("2016-05-19 10:00")  # a Thursday; upstream's topOfTheHour()


def after(**delta: float) -> datetime:
    return TOP + timedelta(**delta)


# upstream TestMostRecentScheduleTime (earliest is already the value the controller picks).
@pytest.mark.parametrize(
    ("spec", "earliest", "now", "expected", "count"),
    [
        ("0 * * * *", TOP, after(seconds=30), None, 0),  # now before next schedule
        ("0 * * * *", TOP, after(minutes=61), after(minutes=60), 1),  # just after
        ("0 * * * *", after(seconds=10), after(minutes=301), after(minutes=300), 5),  # missed 5
        ("30 6-16/4 * * 1-5", after(minutes=30), after(hours=24, minutes=31),
         after(hours=24, minutes=30), 2),  # complex schedule
        ("30 6-16/4 * * 1-5", after(minutes=30), after(hours=96, minutes=31),
         after(hours=96, minutes=30), 6),  # longer gaps later, over a weekend
        ("30 6-16/4 * * 1-5", TOP, after(hours=24, minutes=31), after(hours=24, minutes=30), 7),
        ("@every 1h", after(minutes=1), after(days=7), after(days=6, hours=23, minutes=1), 167),
        ("*/5 * * * *", after(minutes=30), after(minutes=31), None, 0),
        ("*/5 * * * *", after(minutes=31), after(minutes=32), None, 0),
    ],
)
def test_most_recent_schedule_time_like_upstream(
    spec: str, earliest: datetime, now: datetime, expected: datetime | None, count: int
) -> None:
    schedule = CronSchedule.parse(spec)
    assert most_recent_schedule_time(schedule, earliest, now) == (expected, count)


def test_most_recent_schedule_time_finds_runs_that_upstream_skips() -> None:
    # Upstream's "another complex schedule" case returns no time: its search starts an hour
    # before now (Friday 16:30) and misses Friday's 10:30, 11:30 and 12:30 runs.
    schedule = CronSchedule.parse("30 10,11,12 * * 1-5")
    latest, count = most_recent_schedule_time(
        schedule, after(minutes=30), after(hours=30, minutes=30)
    )
    assert latest == after(hours=26, minutes=30)  # Friday 12:30
    assert count == 30  # upstream's estimate from the one-hour first gap


def test_most_recent_schedule_time_counts_more_than_a_hundred_missed_runs() -> None:
    latest, count = most_recent_schedule_time(
        CronSchedule.parse("* * * * *"), TOP, after(hours=3, seconds=30)
    )
    assert latest == after(hours=3)
    assert count == 180


def test_most_recent_schedule_time_rejects_a_schedule_that_never_fires() -> None:
    with pytest.raises(ValueError, match="less than 1 second"):
        most_recent_schedule_time(CronSchedule.parse("59 23 31 2 *"), TOP, after(hours=1))


def test_a_tz_prefix_naming_a_directory_is_a_bad_location() -> None:
    from minikube_py.api.cron import parse_standard
    with pytest.raises(CronSyntaxError, match="provided bad location Europe"):
        parse_standard("TZ=Europe * * * * *")
