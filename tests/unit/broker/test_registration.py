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


class Calls:
    """What a Registration asked for: ("all", force) or ("topics", names)."""

    def __init__(self, increments_succeed: bool = True) -> None:
        self.made: list[tuple[str, object]] = []
        self.event = asyncio.Event()
        self.increments_succeed = increments_succeed

    async def register(self, force: bool) -> None:
        self.made.append(("all", force))
        self.event.set()

    async def register_topics(self, names: list[str]) -> bool:
        self.made.append(("topics", names))
        self.event.set()
        return self.increments_succeed

    async def next(self) -> tuple[str, object]:
        await asyncio.wait_for(self.event.wait(), 5)
        self.event.clear()
        return self.made[-1]


async def running(registration: Registration, calls: Calls) -> asyncio.Task[None]:
    task = asyncio.create_task(registration.run(calls.register, calls.register_topics))
    await asyncio.sleep(0)
    return task


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_changed_topics_are_registered_alone_and_coalesced() -> None:
    registration = Registration(period_ms=60_000)
    registration.arm()
    calls = Calls()
    registration.request_topics(["A"])
    registration.request_topics(["B", "A"])  # before the loop runs: one registration
    task = await running(registration, calls)
    try:
        assert await calls.next() == ("topics", ["A", "B"])
        registration.request(force=False)  # a deletion: the whole table
        assert await calls.next() == ("all", True)  # the first after start is forced
        registration.request_topics(["C"])
        registration.request()  # the whole table covers C too
        assert await calls.next() == ("all", True)
    finally:
        await stop(task)
    assert calls.made == [("topics", ["A", "B"]), ("all", True), ("all", True)]


async def test_the_period_follows_force_register() -> None:
    for force_register in (True, False):
        registration = Registration(period_ms=200, force_register=force_register)
        registration.arm()
        registration.request()  # the first whole registration after start: forced
        calls = Calls()
        task = await running(registration, calls)
        try:
            assert await calls.next() == ("all", True)
            assert await calls.next() == ("all", force_register)  # the period's
        finally:
            await stop(task)


async def test_after_a_failed_increment_the_period_is_forced() -> None:
    registration = Registration(period_ms=300, force_register=False)
    registration.arm()
    registration.request()
    calls = Calls(increments_succeed=False)
    task = await running(registration, calls)
    try:
        assert await calls.next() == ("all", True)
        registration.request_topics(["Lost"])
        assert await calls.next() == ("topics", ["Lost"])
        assert await calls.next() == ("all", True)  # no data-version check this time
    finally:
        await stop(task)
