"""wait_event keeps a cancellation that arrives in the loop pass that sets the event
(``asyncio.wait_for`` drops it on Python 3.11, and a service loop then never stops)."""

from __future__ import annotations

import asyncio

import pytest

from mqcore.common.aio import cancel_and_wait, wait_event


async def test_a_service_loop_stops_when_cancelled_as_its_event_is_set() -> None:
    event = asyncio.Event()
    rounds = 0

    async def service() -> None:
        nonlocal rounds
        while True:
            await wait_event(event, 30)
            event.clear()
            rounds += 1

    task = asyncio.create_task(service())
    await asyncio.sleep(0)  # the service waits on the event
    event.set()
    task.cancel()  # in the same pass: the event's waiter finishes first
    await asyncio.wait_for(cancel_and_wait([task]), 2)
    assert task.cancelled() and rounds == 0


async def test_wait_event_says_whether_it_was_set() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    event.set()
    assert await wait_event(event, 5) is True


@pytest.mark.parametrize("timeout", [0.0, -1.0])
async def test_no_time_left_is_a_timeout(timeout: float) -> None:
    assert await wait_event(asyncio.Event(), timeout) is False
