"""wait_event keeps a cancellation that arrives in the loop pass that sets the event
(``asyncio.wait_for`` drops it on Python 3.11, and a service loop then never stops)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from mqcore.common.aio import cancel_and_wait, run_all, run_in_slices, wait_event


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


async def test_run_in_slices_gives_the_loop_back_once_per_budget() -> None:
    """Steps run until the budget is spent, then the loop gets a turn: here each step
    costs 1 ms of a made-up clock against a 2.5 ms budget, so every third step yields."""
    now = [0.0]
    done: list[int] = []
    other_ran: list[int] = []

    def steps() -> Iterator[None]:
        for n in range(9):
            now[0] += 0.001
            done.append(n)
            yield

    async def other() -> None:
        while len(done) < 9:
            other_ran.append(len(done))
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    await asyncio.sleep(0)
    given_back = await run_in_slices(steps(), 0.0025, clock=lambda: now[0])
    await task
    assert given_back == 3
    assert other_ran == [0, 3, 6]  # the other task ran between the slices


def test_run_all_runs_every_step() -> None:
    seen: list[int] = []

    def steps() -> Iterator[None]:
        for n in range(5):
            seen.append(n)
            yield

    run_all(steps())
    assert seen == [0, 1, 2, 3, 4]
