"""lifecycle.wait_for_event: the one way the components' loops sleep until woken."""

from __future__ import annotations

import asyncio
import time

import pytest

from minikube_py.lifecycle import wait_for_event


async def test_it_says_whether_the_event_came_before_the_timeout() -> None:
    event = asyncio.Event()
    started = time.monotonic()
    assert await wait_for_event(event, 0.05) is False
    assert time.monotonic() - started >= 0.05
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await wait_for_event(event, 5) is True
    assert await wait_for_event(event, None) is True  # already set: at once


async def test_a_cancel_ends_the_wait_even_as_the_event_comes() -> None:
    """The cancel and the wake-up land in the same loop iteration; the waiting task must
    still end cancelled (asyncio.wait_for on Python 3.11 could return instead)."""
    for _ in range(50):
        event = asyncio.Event()
        task = asyncio.create_task(wait_for_event(event, 5))
        await asyncio.sleep(0)
        event.set()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
