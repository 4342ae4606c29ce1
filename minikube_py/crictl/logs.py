"""`crictl logs` (upstream cmd/crictl/logs.go): read the container's CRI log file itself.

    ContainerStatus -> its log path (with -p, the previous attempt's file: <attempt-1>.log)
    -> ReadLogs (minikube_py/cri_logs.py): stdout records to stdout, stderr records to
       stderr; --tail, --since, --limit-bytes, -t timestamps; with -f, follow the file
       until the container is no longer running
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from minikube_py.cri import CRIError, RuntimeService
from minikube_py.cri_logs import LogOptions, read_container_log_streams
from minikube_py.crictl.crictl_config import parse_go_duration, rpc_error
from minikube_py.crictl.errors import CrictlError
from minikube_py.gen.cri import api_pb2

RUNNING_CHECK_INTERVAL = 1.0
"""How often a follower asks whether the container still runs."""


def add_parsers(commands: Any) -> None:
    logs = commands.add_parser("logs", help="Fetch the logs of a container")
    logs.add_argument("id", nargs="?", default="", metavar="CONTAINER-ID")
    logs.add_argument("-f", "--follow", action="store_true", help="Follow log output")
    logs.add_argument("-p", "--previous", action="store_true",
                      help="Print the logs for the previous instance of the container in a "
                           "pod if it exists")
    logs.add_argument("--tail", type=int, default=None,
                      help="Number of lines to show from the end of the logs. Defaults to all")
    logs.add_argument("--limit-bytes", type=int, default=-1,
                      help="Maximum bytes of logs to return. Defaults to no limit")
    logs.add_argument("--since", default="",
                      help="Show logs since timestamp (e.g. 2013-01-02T13:23:37) or relative "
                           "(e.g. 42m for 42 minutes)")
    logs.add_argument("-t", "--timestamps", action="store_true", help="Show timestamps")
    logs.add_argument("-s", "--stream", default="",
                      help="Show specified stream (stdout or stderr). Defaults to both.")
    logs.set_defaults(run=run_logs)


def parse_since(value: str, now: float) -> datetime | None:
    """parseTimestamp: a Go duration back from now, an RFC3339 time, or Unix seconds."""
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return datetime.fromtimestamp(now - parse_go_duration(value), UTC)
    with contextlib.suppress(ValueError):
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    with contextlib.suppress(ValueError):
        return datetime.fromtimestamp(float(value), UTC)
    raise CrictlError(f'invalid --since "{value}": give a duration (42m), an RFC3339 time '
                      "or Unix seconds")


async def run_logs(runtime: RuntimeService, args: argparse.Namespace) -> None:
    """The logs command: check the flags, find the file, copy its lines out."""
    if not args.id:
        raise CrictlError("ID cannot be empty: give a CONTAINER-ID (crictl ps -a lists them)")
    if args.stream not in ("", "stdout", "stderr"):
        raise CrictlError(f'invalid stream "{args.stream}", must be "stdout" or "stderr"')
    if args.tail is not None and args.stream:
        raise CrictlError("--tail and --stream are mutually exclusive")
    since = parse_since(args.since, time.time())
    status = await _status(runtime, args.id)
    path = status.log_path
    if not path:
        raise CrictlError("the container has not set log path")
    if args.previous:
        if status.metadata.attempt == 0:
            raise CrictlError(f"previous terminated container {status.metadata.name} not "
                              "found")
        path = (path[:path.rfind("/") + 1] + str(status.metadata.attempt - 1)
                + path[path.rfind("."):])
    options = LogOptions(
        follow=args.follow,
        tail_lines=args.tail if args.tail is not None and args.tail >= 0 else None,
        since_time=since, timestamps=args.timestamps,
        limit_bytes=args.limit_bytes if args.limit_bytes >= 0 else None,
        stream={"": "All", "stdout": "Stdout", "stderr": "Stderr"}[args.stream])
    running = status.state == api_pb2.CONTAINER_RUNNING and not args.previous
    watch = (asyncio.create_task(_watch_running(runtime, status.id))
             if args.follow and running else None)

    def is_running() -> bool:
        return watch is not None and not watch.done()

    lines = read_container_log_streams(Path(path), options, is_running=is_running)
    try:
        async for stream, line in lines:
            out = sys.stdout.buffer if stream == b"stdout" else sys.stderr.buffer
            out.write(line)
            out.flush()
    except OSError as err:
        raise CrictlError(f"failed to open log file {path}: {err.strerror or err}") from None
    finally:
        await lines.aclose()
        if watch is not None:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch


async def _status(runtime: RuntimeService, container_id: str) -> api_pb2.ContainerStatus:
    try:
        answer = await runtime.container_status(api_pb2.ContainerStatusRequest(
            container_id=container_id))
    except CRIError as err:
        raise CrictlError(f"{rpc_error(err)} (crictl ps -a lists the containers)") from None
    return answer.status


async def _watch_running(runtime: RuntimeService, container_id: str) -> None:
    """Return once the container is no longer running (isContainerRunning)."""
    while True:
        await asyncio.sleep(RUNNING_CHECK_INTERVAL)
        try:
            status = await _status(runtime, container_id)
        except CrictlError:
            return
        if status.state != api_pb2.CONTAINER_RUNNING:
            return
