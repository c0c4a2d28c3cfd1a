"""CallerLoop: the blocking facade's loop run in the calling thread, during calls only."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from mqcore.client.sync import CallerLoop


async def _value(v: int, delay: float = 0.0) -> int:
    await asyncio.sleep(delay)
    return v


def test_runs_in_the_calling_thread_and_returns_the_result() -> None:
    loop = CallerLoop()
    try:

        async def where() -> int:
            return threading.get_ident()

        assert loop.run(where()) == threading.get_ident()
        assert loop.run(_value(7)) == 7
    finally:
        loop.stop()


def test_timers_that_fell_due_between_calls_run_at_the_next_call() -> None:
    loop = CallerLoop()
    fired: list[float] = []
    try:

        async def arm() -> None:
            asyncio.get_running_loop().call_later(0.01, lambda: fired.append(time.monotonic()))

        loop.run(arm())
        time.sleep(0.05)
        assert fired == []  # nothing runs between calls
        loop.run(_value(1, 0.001))
        assert len(fired) == 1
    finally:
        loop.stop()


def test_callers_of_several_threads_take_turns() -> None:
    loop = CallerLoop()
    results: list[int] = []

    def call(i: int) -> None:
        results.append(loop.run(_value(i, 0.001)))

    try:
        threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert sorted(results) == list(range(8))
    finally:
        loop.stop()


def test_timeout_cancels_the_call_and_the_loop_stays_usable() -> None:
    loop = CallerLoop()
    try:
        with pytest.raises(TimeoutError):
            loop.run(_value(1, 5), timeout=0.01)
        assert loop.run(_value(2)) == 2
    finally:
        loop.stop()


def test_inside_a_running_loop_it_refuses_instead_of_deadlocking() -> None:
    loop = CallerLoop()

    async def from_async_code() -> None:
        with pytest.raises(RuntimeError, match="inside a running event loop"):
            loop.run(_value(1))

    try:
        asyncio.run(from_async_code())
        assert loop.run(_value(3)) == 3
    finally:
        loop.stop()


def test_stop_cancels_background_tasks_and_closes() -> None:
    loop = CallerLoop()
    cancelled: list[bool] = []

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def spawn() -> None:
        asyncio.get_running_loop().create_task(forever())
        await asyncio.sleep(0)

    loop.run(spawn())
    loop.stop()
    assert cancelled == [True] and loop.loop.is_closed()
    loop.stop()  # idempotent


def test_a_bounded_call_runs_in_one_task() -> None:
    """A call with a timeout runs its coroutine in the one task ``run`` makes, not in a
    second task as ``asyncio.wait_for`` does in 3.11: that task cost every blocking send
    three more passes of the loop (8 instead of 5)."""
    lt = CallerLoop()
    try:

        async def tasks_now() -> int:
            return len(asyncio.all_tasks())

        assert lt.run(tasks_now(), timeout=5) == 1
        assert lt.run(tasks_now()) == 1
    finally:
        lt.stop()
