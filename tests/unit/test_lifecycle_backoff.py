"""Lifecycle hooks (exec, httpGet, sleep) and the exponential back-off of crash loops and pulls."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from minikube_py.api import Obj
from minikube_py.kubelet.backoff import Backoff
from minikube_py.kubelet.lifecycle import run_lifecycle_handler

POD = {"metadata": {"name": "web", "namespace": "default", "uid": "u-1"}}
CONTAINER = {"name": "app", "ports": [{"name": "admin", "containerPort": 1}]}
WHERE = 'for Container "app" in Pod "web_default(u-1)"'
SEEN = web.AppKey("seen", list)


def scripted_exec(exit_code: int, output: str, calls: list[tuple[str, list[str], float]]):
    async def exec_sync(container_id: str, command: list[str],
                        timeout: float) -> tuple[int, str]:
        calls.append((container_id, command, timeout))
        return exit_code, output
    return exec_sync


async def run(handler: Obj, *, pod_ip: str = "127.0.0.1", container: Obj = CONTAINER,
              exit_code: int = 0, output: str = "") -> str | None:
    return await run_lifecycle_handler(handler, POD, container, "c-1", pod_ip=pod_ip,
                                       exec_sync=scripted_exec(exit_code, output, []))


# -- exec ---------------------------------------------------------------------------------

async def test_exec_hook_runs_in_the_container_without_a_timeout() -> None:
    calls: list[tuple[str, list[str], float]] = []
    handler = {"exec": {"command": ["sh", "-c", "touch /ready"]}}
    assert await run_lifecycle_handler(handler, POD, CONTAINER, "c-1", pod_ip="",
                                       exec_sync=scripted_exec(0, "", calls)) is None
    assert calls == [("c-1", ["sh", "-c", "touch /ready"], 0.0)]


async def test_failed_exec_hook_message_names_command_container_and_pod() -> None:
    message = await run({"exec": {"command": ["sh", "-c", "exit 3"]}}, exit_code=3,
                        output="boom")
    assert message == (f"Exec lifecycle hook ([sh -c exit 3]) {WHERE} failed - error: "
                       "command 'sh -c exit 3' exited with 3: boom, message: \"boom\"")


# -- httpGet ------------------------------------------------------------------------------

@pytest.fixture
async def hook_server() -> AsyncIterator[tuple[int, list[web.Request]]]:
    """A server that records every request; /broken answers 500."""
    async def record(request: web.Request) -> web.Response:
        request.app[SEEN].append(request)
        return web.Response(status=500 if request.path == "/broken" else 200)

    app = web.Application()
    app[SEEN] = []
    app.router.add_get("/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner.addresses[0][1], app[SEEN]
    finally:
        await runner.cleanup()


async def test_http_hook_gets_the_path_on_the_pod_ip(
        hook_server: tuple[int, list[web.Request]]) -> None:
    port, seen = hook_server
    handler = {"httpGet": {"path": "/started", "port": port,
                           "httpHeaders": [{"name": "X-Hook", "value": "postStart"}]}}
    assert await run(handler) is None
    assert [r.path for r in seen] == ["/started"]
    assert seen[0].headers["User-Agent"] == "kube-lifecycle/1.37"
    assert seen[0].headers["X-Hook"] == "postStart"


async def test_http_hook_counts_any_answer_as_delivered(
        hook_server: tuple[int, list[web.Request]]) -> None:
    port, seen = hook_server
    assert await run({"httpGet": {"path": "/broken", "port": port}}) is None
    assert len(seen) == 1


async def test_http_hook_that_cannot_connect_fails_with_go_error_text() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    message = await run({"httpGet": {"path": "/stop", "port": port}})
    assert message == (f"HTTP lifecycle hook (/stop) {WHERE} failed - error: "
                       f'Get "http://127.0.0.1:{port}/stop": dial tcp 127.0.0.1:{port}: '
                       "connect: connection refused")


@pytest.mark.parametrize(("action", "pod_ip", "error"), [
    ({"path": "/x", "port": "metrics"}, "127.0.0.1",
     'strconv.Atoi: parsing "metrics": invalid syntax'),
    ({"path": "/x", "port": 80}, "", "failed to find networking container: the pod has no IP"),
])
async def test_http_hook_that_cannot_be_sent_fails(action: Obj, pod_ip: str, error: str) -> None:
    assert await run({"httpGet": action}, pod_ip=pod_ip) == \
        f"HTTP lifecycle hook (/x) {WHERE} failed - error: {error}"


# -- sleep and the rest -------------------------------------------------------------------

async def test_sleep_hook_waits_then_succeeds() -> None:
    loop = asyncio.get_running_loop()
    began = loop.time()
    assert await run({"sleep": {"seconds": 0.05}}) is None
    assert loop.time() - began >= 0.05


async def test_sleep_hook_is_cut_short_by_the_callers_deadline() -> None:
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await run({"sleep": {"seconds": 30}})


async def test_a_handler_without_an_action_cannot_run() -> None:
    assert await run({}) == "Cannot run handler: invalid handler: {}"


# -- Backoff ------------------------------------------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.now = 5_000.0

    def __call__(self) -> float:
        return self.now


def test_backoff_doubles_from_initial_up_to_maximum() -> None:
    backoff = Backoff(10, 300, clock=Clock())
    assert [backoff.next("k") for _ in range(7)] == [10, 20, 40, 80, 160, 300, 300]
    assert backoff.current("k") == 300
    assert backoff.current("other") == 0


def test_a_key_is_in_backoff_until_its_delay_has_passed() -> None:
    clock = Clock()
    backoff = Backoff(10, 300, clock=clock)
    assert not backoff.is_in_backoff("k")
    backoff.next("k")
    clock.now += 4
    assert backoff.is_in_backoff("k")
    assert backoff.remaining("k") == 6
    clock.now += 6
    assert not backoff.is_in_backoff("k")
    assert backoff.remaining("k") == 0


def test_reset_forgets_the_key() -> None:
    backoff = Backoff(10, 300, clock=Clock())
    backoff.next("k")
    backoff.next("k")
    backoff.reset("k")
    assert not backoff.is_in_backoff("k")
    assert backoff.next("k") == 10


def test_a_failure_long_after_the_last_starts_over() -> None:
    clock = Clock()
    backoff = Backoff(10, 300, clock=clock)
    for _ in range(4):
        backoff.next("k")
    clock.now += 601  # more than twice the maximum
    assert backoff.next("k") == 10


def test_backoff_since_counts_from_the_event_time() -> None:
    clock = Clock()
    backoff = Backoff(10, 300, clock=clock)
    backoff.next("k")
    backoff.next("k")  # 20 s
    finished_at = clock.now + 100
    clock.now = finished_at + 5
    assert backoff.is_in_backoff("k", since=finished_at)
    assert backoff.remaining("k", since=finished_at) == 15
    clock.now = finished_at + 20
    assert not backoff.is_in_backoff("k", since=finished_at)


@pytest.mark.parametrize(("ran_for", "waits", "next_delay"), [(60, True, 40), (601, False, 10)])
def test_crash_loop_backoff_starts_over_after_ten_minutes_of_running(
        ran_for: float, waits: bool, next_delay: float) -> None:
    clock = Clock()
    backoff = Backoff(10, 300, clock=clock, reset_after=600)
    backoff.next("app")
    backoff.next("app")  # restarted twice: the next restart waits 20 s after the crash
    finished_at = clock.now + ran_for
    clock.now = finished_at + 1
    assert backoff.is_in_backoff("app", since=finished_at) is waits
    assert backoff.next("app", event_time=finished_at) == next_delay


def test_gc_drops_keys_not_seen_for_twice_the_maximum() -> None:
    clock = Clock()
    backoff = Backoff(10, 300, clock=clock)
    backoff.next("old")
    clock.now += 500
    backoff.next("recent")
    clock.now += 101
    backoff.gc()
    assert backoff.current("old") == 0
    assert backoff.current("recent") == 10
