"""ReputService: one dispatch per loop pass, held pulls woken from what arrived."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from mqcore.broker.reput import ReputService
from mqcore.store.dispatcher import Arrival


class FakeStore:
    def __init__(self, arrivals: list[Arrival], fail: int = 0) -> None:
        self.on_append: Callable[[], None] | None = None
        self.arrivals = arrivals
        self.fail = fail
        self.passes = 0

    def dispatch_pending(self) -> list[Arrival]:
        self.passes += 1
        if self.fail:
            self.fail -= 1
            raise OSError(28, "No space left on device")
        out, self.arrivals = self.arrivals, []
        return out


class FakePolls:
    def __init__(self, waiting: set[tuple[str, int]]) -> None:
        self.waiting = waiting
        self.notified: list[tuple[str, int, int, int | None]] = []

    def has_waiters(self, topic: str, queue_id: int) -> bool:
        return (topic, queue_id) in self.waiting

    def notify_message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None
    ) -> None:
        self.notified.append((topic, queue_id, max_offset, tags_code))


def _service(store: FakeStore, polls: FakePolls) -> ReputService:
    service = ReputService(store, polls)  # type: ignore[arg-type]
    service.start(asyncio.get_running_loop())
    return service


async def _next_pass() -> None:
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def test_puts_of_one_pass_share_one_dispatch_that_wakes_waiting_queues() -> None:
    store = FakeStore([Arrival("T", 0, 3, None), Arrival("T", 1, 1, 42)])
    polls = FakePolls({("T", 1)})
    _service(store, polls)
    assert store.on_append is not None
    order: list[str] = []
    for _ in range(3):
        store.on_append()
    # An answer queued after the appends (as Channel.send queues its write) goes first.
    asyncio.get_running_loop().call_soon(lambda: order.append(f"answer, {store.passes} passes"))
    assert store.passes == 0
    await _next_pass()
    await _next_pass()
    assert store.passes == 1 and order == ["answer, 0 passes"]
    assert polls.notified == [("T", 1, 1, 42)]  # queue 0 had nobody waiting


async def test_a_failed_dispatch_is_retried() -> None:
    store = FakeStore([Arrival("T", 0, 1, 7)], fail=1)
    polls = FakePolls({("T", 0)})
    service = _service(store, polls)
    service.wake()
    deadline = asyncio.get_running_loop().time() + 5
    while not polls.notified and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    assert store.passes == 2 and polls.notified == [("T", 0, 1, 7)]


async def test_a_wake_from_another_thread_reaches_the_loop() -> None:
    store = FakeStore([Arrival("T", 0, 1, None)])
    polls = FakePolls({("T", 0)})
    service = _service(store, polls)
    thread = threading.Thread(target=service.wake)
    thread.start()
    thread.join()
    deadline = asyncio.get_running_loop().time() + 5
    while store.passes == 0 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    assert store.passes == 1 and polls.notified == [("T", 0, 1, None)]


async def test_stop_runs_a_last_pass_and_hands_dispatch_back_to_the_puts() -> None:
    store = FakeStore([Arrival("T", 0, 1, None)])
    polls: Any = FakePolls(set())
    service = _service(store, polls)
    service.stop()
    assert store.on_append is None and store.passes == 1
