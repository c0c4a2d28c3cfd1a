"""The metrics endpoint: scrapes are answered from a thread while the figures are read
on the event loop, and a taken port fails the start with the address in the message."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator

import pytest

from mqcore.errors import ConfigError
from mqcore.metrics.families import MetricSet
from mqcore.metrics.http import GcPause, LoopCollector, MetricsHttpServer
from tests.support.metrics import parse, scrape_text, value


class Figures:
    """Collection steps that note the thread they ran on."""

    def __init__(self) -> None:
        self.threads: list[int] = []
        self.topics = {f"T{i}": i for i in range(1000)}

    def steps(self, metrics: MetricSet) -> Iterator[None]:
        self.threads.append(threading.get_ident())
        family = metrics.counter("rocketmq_messages_in_total", "in", ("topic",))
        for topic, count in self.topics.items():
            family.add(count, topic)
            yield


async def test_scrape_reads_on_the_loop_and_renders_in_a_thread() -> None:
    figures = Figures()
    server = MetricsHttpServer("127.0.0.1", 0, LoopCollector(figures.steps, {"node_id": "b"}))
    server.serve()
    try:
        assert server.running and server.port > 0
        text = await asyncio.to_thread(scrape_text, server.url)
    finally:
        await server.stop()
    samples = parse(text)
    assert value(samples, "rocketmq_messages_in_total", topic="T7", node_id="b") == 7
    assert figures.threads == [threading.get_ident()]  # the loop's thread, not the server's
    assert not server.running


async def test_collect_on_the_loop_thread_runs_at_once() -> None:
    figures = Figures()
    collector = LoopCollector(figures.steps, {}, asyncio.get_running_loop())
    # would deadlock if it waited for the loop; each family is freed once passed
    assert [len(family.samples) for family in collector.collect()] == [1000]


async def test_a_taken_port_fails_the_bind() -> None:
    first = MetricsHttpServer("127.0.0.1", 0, LoopCollector(Figures().steps, {}))
    first.bind()
    try:
        second = MetricsHttpServer("127.0.0.1", first.port, LoopCollector(Figures().steps, {}))
        with pytest.raises(ConfigError, match=f"cannot serve metrics on 127.0.0.1:{first.port}"):
            second.bind()
    finally:
        first.close()


def test_gc_pauses_nest_and_restore_what_was() -> None:
    pause = GcPause()
    assert gc.isenabled()
    with pause:
        with pause:
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer scrape still runs
    assert gc.isenabled()
    gc.disable()
    try:
        with pause:
            pass
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()
