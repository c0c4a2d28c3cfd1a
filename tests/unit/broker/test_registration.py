"""When a broker registers: a change made right after start is not left for the period."""

from __future__ import annotations

import asyncio

from mqcore.broker.registration import Registration


async def test_a_request_between_arming_and_the_loop_is_kept() -> None:
    registration = Registration(period_ms=60_000)
    registration.request()  # before arming: the start's own registration covers it
    registration.arm()
    registration.request(force=False)  # right after start, before the loop first runs
    calls: list[bool] = []
    done = asyncio.Event()

    async def register(force: bool) -> None:
        calls.append(force)
        done.set()

    task = asyncio.create_task(registration.run(register))
    try:
        await asyncio.wait_for(done.wait(), 5)  # not the 60 s period
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert calls == [True]  # armed forced: the first run after start always registers
