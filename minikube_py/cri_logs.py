"""Container logs: read the CRI log files containerd writes (upstream k8s.io/cri-client/
pkg/logs, once the kubelet's kuberuntime/logs): shared, as upstream's, by the kubelet's
/containerLogs and crictl's logs.

containerd writes one record per line of container output into
`<logs root>/<namespace>_<pod>_<uid>/<container>/<restart count>.log`:

    2026-11-22T04:00:00.123456789Z stdout F hello world
    2026-11-22T04:00:01.000000001Z stderr P a very long line is split into a parti
    2026-11-22T04:00:01.000000002Z stderr F al record and a final one

`read_container_log` turns such a file into what `kubectl logs` prints: records joined
into lines (P = partial, continued by the next record of the same stream up to an F),
filtered by stream and time, optionally prefixed with their timestamp, cut to the last N
lines or to a number of bytes, and, with follow, kept open while the container runs.
The request's side of it, the query parameters of `kubectl logs`, is
`api/podlogoptions.py: PodLogOptions`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import BinaryIO

from minikube_py.api.podlogoptions import STREAMS, PodLogOptions

log = logging.getLogger(__name__)

# How often a follower looks for new records (upstream waits on fsnotify instead).
POLL_INTERVAL = 0.1
# Bytes read at a time, forwards and when searching backwards for the tail.
BLOCK_SIZE = 64 * 1024


@dataclass(frozen=True)
class LogOptions:
    """What to read from a log file (upstream's kuberuntime/logs.LogOptions)."""

    follow: bool = False
    tail_lines: int | None = None  # None: every line
    since_time: datetime | None = None  # timezone-aware; older lines are skipped
    timestamps: bool = False
    limit_bytes: int | None = None  # None: no limit
    stream: str = "All"  # "All", "Stdout" or "Stderr"


def log_options(options: PodLogOptions, now: datetime) -> LogOptions:
    """NewLogOptions: what to read, with sinceSeconds turned into a time."""
    since = options.since_time
    if options.since_seconds is not None:
        since = now - timedelta(seconds=options.since_seconds)
    return LogOptions(follow=options.follow, tail_lines=options.tail_lines, since_time=since,
                      timestamps=options.timestamps, limit_bytes=options.limit_bytes,
                      stream=options.stream or "All")


@dataclass
class LogRecord:
    """One line of a CRI log file (upstream's logMessage)."""

    timestamp: str  # as written, RFC3339 with up to nine fractional digits
    time: datetime
    stream: bytes  # b"stdout" or b"stderr"
    partial: bool  # tag P: the line continues in the next record of this stream
    content: bytes  # without the record's newline


def container_log_path(logs_root: Path, namespace: str, pod: str, uid: str, container: str,
                       restart_count: int) -> Path:
    """Where a container instance's log lives (upstream's /var/log/pods layout)."""
    return logs_root / f"{namespace}_{pod}_{uid}" / container / f"{restart_count}.log"


def parse_cri_log(line: bytes) -> LogRecord:
    """parseCRILog: split `<time> <stream> <tag> <content>`; ValueError if malformed."""
    fields = line.rstrip(b"\n").split(b" ", 3)
    if len(fields) < 3:
        raise ValueError(f"not a CRI log record: {line[:80]!r}")
    stamp, stream, tags = fields[0], fields[1], fields[2]
    if stream not in (b"stdout", b"stderr"):
        raise ValueError(f"unexpected stream type {stream.decode(errors='replace')!r}")
    text = stamp.decode("ascii", errors="replace")
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"timestamp without a time zone: {text!r}")
    partial = tags.split(b":", 1)[0] == b"P"  # further tags may follow ':' (forward compat)
    return LogRecord(text, moment, stream, partial, fields[3] if len(fields) > 3 else b"")


def fixed_nanos(timestamp: str) -> str:
    """Upstream's RFC3339NanoFixed: always nine fractional digits, the zone kept as written."""
    zone_at = len(timestamp) - 1 if timestamp.endswith("Z") else len(timestamp) - 6
    clock, zone = timestamp[:zone_at], timestamp[zone_at:]
    seconds, _, fraction = clock.partition(".")
    return f"{seconds}.{fraction[:9].ljust(9, '0')}{zone}"


def find_tail_start(file: BinaryIO, lines: int, streams: tuple[bytes, ...]) -> int:
    """The offset where the last `lines` log lines begin, found by reading backwards.

    A log line ends with an F record, so the last N lines start right after the
    (N+1)-th last F record of a wanted stream (upstream's tail.FindTailLineStartIndex
    counts records; counting whole lines keeps a long line from being cut in two).
    """
    position = file.seek(0, os.SEEK_END)
    pending = b""  # file[position:...], records not yet counted
    seen = 0
    while True:
        while True:
            # The newline before the last record ends the record in front of it.
            cut = pending.rfind(b"\n", 0, len(pending) - 1)
            if cut < 0:
                break
            record_end = position + len(pending)
            record, pending = pending[cut + 1:], pending[:cut + 1]
            if _ends_line(record, streams):
                seen += 1
                if seen > lines:
                    return record_end
        if position == 0:
            # `pending` is now the file's first record.
            if _ends_line(pending, streams) and seen + 1 > lines:
                return len(pending)
            return 0
        size = min(BLOCK_SIZE, position)
        position -= size
        file.seek(position)
        pending = file.read(size) + pending


def _ends_line(record: bytes, streams: tuple[bytes, ...]) -> bool:
    fields = record.split(b" ", 3)
    return len(fields) >= 3 and fields[1] in streams and fields[2].split(b":", 1)[0] == b"F"


class _LineAssembler:
    """Joins records into lines and applies since, timestamps and limitBytes (upstream's
    logWriter). `add` returns the finished line, if any; `done` is set once the byte
    limit is reached."""

    def __init__(self, options: LogOptions) -> None:
        self.options = options
        self.streams = STREAMS[options.stream]
        self.remaining = options.limit_bytes
        self.done = False
        # Per stream: the first record of an unfinished line and the content so far.
        self._partial: dict[bytes, tuple[LogRecord, bytearray]] = {}

    def add(self, record: LogRecord) -> bytes | None:
        """Take one record; return a whole line when this record finishes one."""
        if record.stream not in self.streams:
            return None
        started = self._partial.get(record.stream)
        if record.partial:
            if started is None:
                self._partial[record.stream] = (record, bytearray(record.content))
            else:
                started[1].extend(record.content)
            return None
        if started is None:
            return self._emit(record, record.content + b"\n")
        del self._partial[record.stream]
        return self._emit(started[0], bytes(started[1] + record.content) + b"\n")

    def flush(self) -> list[tuple[bytes, bytes]]:
        """Lines left unfinished when the log ends, as they are (without a newline), each
        with its stream."""
        unfinished = [(first.stream, self._emit(first, bytes(content))) for first, content
                      in sorted(self._partial.values(), key=lambda item: item[0].time)]
        self._partial.clear()
        return [(stream, line) for stream, line in unfinished if line]

    def _emit(self, first: LogRecord, text: bytes) -> bytes | None:
        since = self.options.since_time
        if self.done or (since is not None and first.time < since):
            return None
        if self.options.timestamps:
            text = fixed_nanos(first.timestamp).encode() + b" " + text
        if self.remaining is not None:
            text = text[:self.remaining]
            self.remaining -= len(text)
            self.done = self.remaining <= 0
        return text


async def read_container_log(path: Path, options: LogOptions, *,
                             is_running: Callable[[], bool]) -> AsyncIterator[bytes]:
    """ReadLogs: yield the log's lines as kubectl prints them (both streams in one)."""
    lines = read_container_log_streams(path, options, is_running=is_running)
    try:
        async for _, line in lines:
            yield line
    finally:
        await lines.aclose()


async def read_container_log_streams(path: Path, options: LogOptions, *,
                                     is_running: Callable[[], bool]
                                     ) -> AsyncIterator[tuple[bytes, bytes]]:
    """ReadLogs: yield the log's lines, each with its stream (b"stdout" or b"stderr"),
    so that a caller can write each where it came from, as crictl does.

    Without follow, reads to the end of the file. With follow, keeps polling the file
    while `is_running()` is true, and ends once the container has stopped and every
    record it wrote has been read. Raises OSError when the file cannot be opened.
    """
    assembler = _LineAssembler(options)
    file = await asyncio.to_thread(open, path, "rb")
    try:
        if options.tail_lines is not None:
            start = await asyncio.to_thread(
                find_tail_start, file, options.tail_lines, assembler.streams)
            file.seek(start)
        # Without follow, a tail ends after its N lines even if the file grows meanwhile.
        lines_left = options.tail_lines if not options.follow else None
        if lines_left == 0:
            return
        carry = b""  # a record whose newline has not been written yet
        while True:
            running = options.follow and is_running()
            block = await asyncio.to_thread(file.read, BLOCK_SIZE)
            if block:
                records = (carry + block).split(b"\n")
                carry = records.pop()
            elif carry and not running:
                records, carry = [carry], b""  # the file ends without a newline
            else:
                if not running:
                    break
                await asyncio.sleep(POLL_INTERVAL)
                continue
            for raw in records:
                try:
                    record = parse_cri_log(raw)
                except ValueError as err:
                    log.debug("skipping a malformed record in %s: %s", path, err)
                    continue
                if lines_left is not None and not record.partial:
                    if record.stream in assembler.streams:
                        lines_left -= 1
                line = assembler.add(record)
                if line:
                    yield record.stream, line
                if assembler.done or lines_left == 0:
                    return
        for stream, line in assembler.flush():
            yield stream, line
    finally:
        file.close()
