"""Timeouts: a wait bounded in time still ends cancelled when a cancel lands just as the
awaited thing completes.

Python 3.11's asyncio.wait_for returns the result instead when both come in the same loop
iteration, so a cancelled component loop runs on (this once hung a CI run). The project
bounds its waits with `async with asyncio.timeout(...)` (and lifecycle.wait_for_event);
each form it uses is raced here, with wait_for as the control that shows the race is real.
"""

from __future__ import annotations

import ast
import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from minikube_py.lifecycle import wait_for_event

PACKAGE = Path(__file__).resolve().parents[2] / "minikube_py"

Wait = Callable[[asyncio.Future[str]], Awaitable[object]]


async def timeout_await(done: asyncio.Future[str]) -> object:
    async with asyncio.timeout(5):
        return await done


async def timeout_shield(done: asyncio.Future[str]) -> object:
    async with asyncio.timeout(5):
        return await asyncio.shield(done)


async def timeout_gather(done: asyncio.Future[str]) -> object:
    async with asyncio.timeout(5):
        return await asyncio.gather(done)


async def timeout_task(done: asyncio.Future[str]) -> object:
    async def inner() -> str:
        return await done
    async with asyncio.timeout(5):
        return await asyncio.ensure_future(inner())


async def event_wait(done: asyncio.Future[str]) -> object:
    event = asyncio.Event()
    done.add_done_callback(lambda _: event.set())
    return await wait_for_event(event, 5)


async def wait_for(done: asyncio.Future[str]) -> object:
    return await asyncio.wait_for(done, 5)  # the control: the form the project left


@pytest.mark.parametrize("wait", [
    timeout_await, timeout_shield, timeout_gather, timeout_task, event_wait,
    pytest.param(wait_for, marks=pytest.mark.xfail(
        sys.version_info < (3, 12), strict=True,
        reason="Python 3.11's wait_for returns the result and drops the cancel")),
])
async def test_a_cancel_as_the_awaited_thing_completes_is_not_lost(wait: Wait) -> None:
    """The awaited future completes and the waiting task is cancelled in the same loop
    iteration: the waiter must end cancelled, never return."""
    for _ in range(20):
        done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        waiter = asyncio.create_task(wait(done))
        for _ in range(3):  # let it reach its await (a task or event adds a hop)
            await asyncio.sleep(0)
        assert not waiter.done()
        done.set_result("answer")
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter


@pytest.mark.parametrize("wait", [timeout_await, timeout_gather, timeout_task])
async def test_the_timeout_still_fires_and_returns_in_time(wait: Wait) -> None:
    """The same forms, bounded at 0.05 s: TimeoutError, and a result when it comes first."""
    async def short(done: asyncio.Future[str]) -> object:
        async with asyncio.timeout(0.05):
            return await wait(done)
    loop = asyncio.get_running_loop()
    with pytest.raises(TimeoutError):
        await short(loop.create_future())
    answered: asyncio.Future[str] = loop.create_future()
    loop.call_soon(answered.set_result, "answer")
    assert await short(answered) in ("answer", ["answer"])


def wait_for_calls(path: Path) -> list[int]:
    """Lines of a source file that call or import asyncio.wait_for."""
    tree = ast.parse(path.read_text(), str(path))
    lines = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr == "wait_for"
                and isinstance(node.value, ast.Name) and node.value.id == "asyncio"):
            lines.append(node.lineno)
        elif (isinstance(node, ast.ImportFrom) and node.module == "asyncio"
              and any(alias.name == "wait_for" for alias in node.names)):
            lines.append(node.lineno)
    return lines


def test_no_asyncio_wait_for_in_minikube_py() -> None:
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}"
             for path in sorted(PACKAGE.rglob("*.py"))
             if "gen" not in path.parts and "wait_for" in path.read_text()
             for line in wait_for_calls(path)]
    assert found == [], "use `async with asyncio.timeout(...)`, not asyncio.wait_for"


def test_the_lint_sees_a_call_and_an_import(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text("import asyncio\nfrom asyncio import wait_for\n"
                      "# asyncio.wait_for in a comment is fine\n"
                      "async def f(x):\n    return await asyncio.wait_for(x, 1)\n")
    assert wait_for_calls(source) == [2, 5]
