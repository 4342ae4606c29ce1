"""Reading CRI-format container logs: joining, filters, tail, limits and follow."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from minikube_py import cri_logs
from minikube_py.api.podlogoptions import PodLogOptions
from minikube_py.cri_logs import (
    LogOptions,
    container_log_path,
    find_tail_start,
    fixed_nanos,
    log_options,
    read_container_log,
    read_container_log_streams,
)

T0 = datetime(2026, 11, 22, 4, 0, 0, tzinfo=UTC)


def stamp(seconds: float) -> str:
    """An RFC3339Nano timestamp `seconds` after T0, as containerd writes it."""
    moment = T0 + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"


def record(seconds: float, text: str, stream: str = "stdout", tag: str = "F") -> str:
    return f"{stamp(seconds)} {stream} {tag} {text}\n"


def write(path: Path, *records: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as file:
        file.write("".join(records))
    return path


async def read(path: Path, options: LogOptions | None = None) -> list[str]:
    lines = read_container_log(path, options or LogOptions(), is_running=lambda: False)
    return [line.decode() async for line in lines]


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    return write(tmp_path / "0.log",
                 record(0, "one"),
                 record(1, "two", "stderr"),
                 record(2, "thr", tag="P"), record(2.5, "ee"),
                 record(3, "four", "stderr"),
                 record(4, "five"))


async def test_full_records_are_lines_in_file_order(log_file: Path) -> None:
    assert await read(log_file) == ["one\n", "two\n", "three\n", "four\n", "five\n"]


async def test_partial_records_join_only_with_records_of_their_own_stream(tmp_path: Path
                                                                          ) -> None:
    path = write(tmp_path / "0.log",
                 record(0, "a very ", tag="P"),
                 record(1, "interleaved", "stderr"),
                 record(2, "long ", tag="P"),
                 record(3, "line"))
    assert await read(path) == ["interleaved\n", "a very long line\n"]


async def test_each_line_comes_with_its_stream_even_when_left_unfinished(
        tmp_path: Path) -> None:
    path = write(tmp_path / "0.log",
                 record(0, "out"),
                 record(1, "err ", "stderr", tag="P"),
                 record(2, "joined", "stderr"),
                 record(3, "cut ", "stderr", tag="P"))
    lines = read_container_log_streams(path, LogOptions(), is_running=lambda: False)
    assert [(stream, line) async for stream, line in lines] == [
        (b"stdout", b"out\n"), (b"stderr", b"err joined\n"), (b"stderr", b"cut ")]


async def test_a_record_tag_may_carry_further_flags(tmp_path: Path) -> None:
    path = write(tmp_path / "0.log", record(0, "part-", tag="P:x"), record(1, "whole", tag="F:x"))
    assert await read(path) == ["part-whole\n"]


@pytest.mark.parametrize(("stream", "expected"), [
    ("All", ["one\n", "two\n", "three\n", "four\n", "five\n"]),
    ("Stdout", ["one\n", "three\n", "five\n"]),
    ("Stderr", ["two\n", "four\n"]),
])
async def test_stream_option_selects_stdout_or_stderr(log_file: Path, stream: str,
                                                      expected: list[str]) -> None:
    assert await read(log_file, LogOptions(stream=stream)) == expected


async def test_timestamps_prefix_each_line_with_its_first_records_time(log_file: Path) -> None:
    lines = await read(log_file, LogOptions(timestamps=True))
    assert lines[0] == f"{stamp(0)} one\n"
    assert lines[2] == f"{stamp(2)} three\n"  # the joined line keeps its first record's time


@pytest.mark.parametrize(("written", "printed"), [
    ("2026-11-22T04:00:00.123456789Z", "2026-11-22T04:00:00.123456789Z"),
    ("2026-11-22T04:00:00.5Z", "2026-11-22T04:00:00.500000000Z"),
    ("2026-11-22T04:00:00Z", "2026-11-22T04:00:00.000000000Z"),
    ("2026-11-22T05:00:00.25+01:00", "2026-11-22T05:00:00.250000000+01:00"),
])
def test_timestamps_are_printed_with_nine_fractional_digits(written: str, printed: str) -> None:
    assert fixed_nanos(written) == printed


@pytest.mark.parametrize(("tail", "expected"), [
    (0, []),
    (1, ["five\n"]),
    (3, ["three\n", "four\n", "five\n"]),  # the joined line counts once
    (5, ["one\n", "two\n", "three\n", "four\n", "five\n"]),
    (50, ["one\n", "two\n", "three\n", "four\n", "five\n"]),
])
async def test_tail_lines_returns_the_last_lines(log_file: Path, tail: int,
                                                 expected: list[str]) -> None:
    assert await read(log_file, LogOptions(tail_lines=tail)) == expected


async def test_tail_lines_counts_only_the_selected_stream(log_file: Path) -> None:
    assert await read(log_file, LogOptions(tail_lines=1, stream="Stderr")) == ["four\n"]


def test_tail_search_reads_backwards_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cri_logs, "BLOCK_SIZE", 16)  # far shorter than one record
    data = "".join(record(i, f"line {i}") for i in range(100)).encode()
    file = io.BytesIO(data)
    start = find_tail_start(file, 3, (b"stdout", b"stderr"))
    assert data[start:].decode() == "".join(record(i, f"line {i}") for i in (97, 98, 99))
    assert find_tail_start(file, 100, (b"stdout",)) == 0
    assert find_tail_start(file, 0, (b"stdout",)) == len(data)


async def test_since_time_skips_older_lines(log_file: Path) -> None:
    options = LogOptions(since_time=T0 + timedelta(seconds=2))
    assert await read(log_file, options) == ["three\n", "four\n", "five\n"]


@pytest.mark.parametrize(("limit", "expected"), [
    (1, ["o"]),
    (4, ["one\n"]),
    (6, ["one\n", "tw"]),
    (1000, ["one\n", "two\n", "three\n", "four\n", "five\n"]),
])
async def test_limit_bytes_cuts_the_output_at_that_many_bytes(log_file: Path, limit: int,
                                                              expected: list[str]) -> None:
    assert await read(log_file, LogOptions(limit_bytes=limit)) == expected


async def test_limit_bytes_counts_the_timestamp_prefix(log_file: Path) -> None:
    lines = await read(log_file, LogOptions(timestamps=True, limit_bytes=10))
    assert lines == [stamp(0)[:10]]


async def test_malformed_records_are_skipped(tmp_path: Path) -> None:
    path = write(tmp_path / "0.log", "garbage\n", "2026-11-22T04:00:00Z stdin F x\n",
                 "not-a-time stdout F x\n", record(1, "good"))
    assert await read(path) == ["good\n"]


async def test_a_last_record_without_newline_is_still_read(tmp_path: Path) -> None:
    path = write(tmp_path / "0.log", record(0, "one"), record(1, "two").rstrip("\n"))
    assert await read(path) == ["one\n", "two\n"]


async def test_an_unfinished_partial_line_is_returned_as_is_at_the_end(tmp_path: Path) -> None:
    path = write(tmp_path / "0.log", record(0, "one"), record(1, "progress 50%", tag="P"))
    assert await read(path) == ["one\n", "progress 50%"]


async def test_a_missing_file_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        await read(tmp_path / "missing.log")


async def next_line(lines: object, timeout: float = 5.0) -> str:
    async with asyncio.timeout(timeout):
        line = await anext(lines)  # type: ignore[call-overload]
    return line.decode()


async def test_follow_picks_up_appended_lines_and_ends_when_the_container_stops(
        tmp_path: Path) -> None:
    path = write(tmp_path / "0.log", record(0, "first"))
    running, looks = True, 0

    def is_running() -> bool:  # asked once per read of the file
        nonlocal looks
        looks += 1
        return running

    lines = read_container_log(path, LogOptions(follow=True), is_running=is_running)
    try:
        assert await next_line(lines) == "first\n"
        write(path, record(1, "sec", tag="P"))
        write(path, record(2, "ond"))
        assert await next_line(lines) == "second\n"
        write(path, f"{stamp(3)} stdout F half a rec")  # containerd is mid-write
        reading = asyncio.create_task(next_line(lines))
        before = looks
        async with asyncio.timeout(5):  # it read the half record, and looked again
            while looks < before + 2:
                await asyncio.sleep(0.001)
        assert not reading.done()
        write(path, "ord\n", record(4, "last words"))
        running = False
        assert await reading == "half a record\n"
        assert await next_line(lines) == "last words\n"
        with pytest.raises(StopAsyncIteration):
            await next_line(lines)
    finally:
        await lines.aclose()


async def test_follow_with_tail_starts_at_the_tail_and_keeps_reading(log_file: Path) -> None:
    running = True
    lines = read_container_log(log_file, LogOptions(follow=True, tail_lines=1),
                               is_running=lambda: running)
    try:
        assert await next_line(lines) == "five\n"
        write(log_file, record(5, "six"))
        assert await next_line(lines) == "six\n"
        running = False
        with pytest.raises(StopAsyncIteration):
            await next_line(lines)
    finally:
        await lines.aclose()


def test_container_log_path_follows_upstreams_pod_log_layout() -> None:
    path = container_log_path(Path("/var/log/pods"), "default", "web", "1234", "app", 2)
    assert path == Path("/var/log/pods/default_web_1234/app/2.log")


# -- PodLogOptions: the query of a logs request -------------------------------------------

def test_pod_log_options_decode_the_query() -> None:
    options = PodLogOptions.from_query({
        "container": "app", "follow": "true", "previous": "1", "timestamps": "",
        "tailLines": "10", "limitBytes": "100", "sinceTime": "2026-11-22T04:00:00Z"})
    assert options == PodLogOptions(container="app", follow=True, previous=True,
                                    timestamps=True, tail_lines=10, limit_bytes=100,
                                    since_time=T0)
    assert options.validate() == []


@pytest.mark.parametrize("value", ["false", "False", "0"])
def test_only_false_and_zero_turn_a_flag_off(value: str) -> None:
    assert PodLogOptions.from_query({"follow": value}).follow is False


@pytest.mark.parametrize(("query", "reason"), [
    ({"tailLines": "ten"}, 'tailLines: Invalid value: "ten": must be an integer'),
    ({"limitBytes": "1.5"}, 'limitBytes: Invalid value: "1.5": must be an integer'),
    ({"sinceTime": "yesterday"}, 'sinceTime: Invalid value: "yesterday": must be an RFC3339'),
])
def test_pod_log_options_reject_values_that_do_not_parse(query: dict[str, str],
                                                         reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        PodLogOptions.from_query(query)


@pytest.mark.parametrize(("query", "problem"), [
    ({"tailLines": "-1"}, "tailLines: Invalid value: -1: must be greater than or equal to 0"),
    ({"limitBytes": "0"}, "limitBytes: Invalid value: 0: must be greater than 0"),
    ({"sinceSeconds": "0"}, "sinceSeconds: Invalid value: 0: must be greater than 0"),
    ({"sinceSeconds": "5", "sinceTime": "2026-11-22T04:00:00Z"},
     "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"),
    ({"stream": "Stdin"}, 'stream: Unsupported value: "Stdin": supported values: "All", '
                          '"Stdout", "Stderr"'),
    ({"stream": "Stdout", "tailLines": "1"},
     "Forbidden: `tailLines` and specific `stream` are mutually exclusive for now"),
])
def test_pod_log_options_validate_like_upstream(query: dict[str, str], problem: str) -> None:
    assert [str(p) for p in PodLogOptions.from_query(query).validate()] == [problem]


def test_pod_log_options_forward_to_the_kubelet_without_the_container() -> None:
    options = PodLogOptions(container="app", follow=True, timestamps=True, since_seconds=60,
                            tail_lines=0, stream="Stderr")
    assert options.to_query() == {"follow": "true", "timestamps": "true",
                                  "sinceSeconds": "60", "tailLines": "0", "stream": "Stderr"}
    assert PodLogOptions.from_query(options.to_query()) == PodLogOptions(
        follow=True, timestamps=True, since_seconds=60, tail_lines=0, stream="Stderr")


def test_since_seconds_becomes_a_time_relative_to_now() -> None:
    options = log_options(PodLogOptions(since_seconds=30, tail_lines=5), T0)
    assert options == LogOptions(since_time=T0 - timedelta(seconds=30), tail_lines=5)
