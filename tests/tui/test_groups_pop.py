"""The groups view of a group that consumes by POP: in-flight and invisible counts per
queue and in total; a group that does not pop keeps its columns (the committed SVGs)."""

from __future__ import annotations

import dataclasses

import pytest
from pilot_support import poll
from textual.widgets import Static
from tui_fakes import FakePoller, sample_snapshot

from mqcli.tui.app import MQApp
from mqcli.tui.model import Snapshot
from mqcli.tui.poller import ClusterPoller
from mqcli.tui.widgets.live_table import LiveTable
from mqcore.client import QueueProgress
from mqcore.protocol.bodies import MessageQueue


def popping_snapshot() -> Snapshot:
    """The sample, billing's queues 0 and 1 popped from (3 and 1 in flight, 2 and 0 of
    them invisible); queues 2 and 3 never were."""
    snap: Snapshot = sample_snapshot()
    detail = snap.group_detail
    assert detail is not None
    counts: list[tuple[int | None, int | None]] = [(3, 2), (1, 0), (None, None), (None, None)]
    detail.queues = [
        dataclasses.replace(q, in_flight=n, invisible=m)
        for q, (n, m) in zip(detail.queues, counts, strict=True)
    ]
    return snap


def _labels(table: LiveTable) -> list[str]:
    return [str(c.label) for c in table.columns.values()]


@pytest.mark.parametrize("width", [80, 200])
async def test_a_pop_group_shows_in_flight_and_invisible(width: int) -> None:
    app = MQApp("10.0.0.1:9876", refresh=0, poller=FakePoller(popping_snapshot()), view="groups")
    async with app.run_test(size=(width, 50)) as pilot:
        await poll(pilot)
        queues = app.screen.query_one("#group-queues", LiveTable)
        labels = _labels(queues)
        in_flight = labels.index("IN FLIGHT")
        assert labels[in_flight - 1] == "LAG"
        cells = [queues.get_row(f"Orders/broker-a/{q}") for q in range(4)]
        assert [c[in_flight] for c in cells] == ["3", "1", "-", "-"]
        if width < 120:
            assert "INVISIBLE" not in labels  # no room: the total says it
        else:
            assert [c[labels.index("INVISIBLE")] for c in cells] == ["2", "0", "-", "-"]
        info = str(app.screen.query_one("#group-info", Static).render())
        assert "POP: 4 in flight, 2 invisible" in info


async def test_a_group_that_does_not_pop_has_no_pop_columns() -> None:
    app = MQApp("10.0.0.1:9876", refresh=0, poller=FakePoller(sample_snapshot()), view="groups")
    async with app.run_test(size=(200, 50)) as pilot:
        await poll(pilot)
        labels = _labels(app.screen.query_one("#group-queues", LiveTable))
        assert "IN FLIGHT" not in labels and "INVISIBLE" not in labels
        assert "POP:" not in str(app.screen.query_one("#group-info", Static).render())


async def test_the_poller_carries_the_brokers_pop_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """What GET_CONSUME_STATS says of a queue (QueueProgress) reaches the view's rows."""
    poller = ClusterPoller("10.0.0.1:9876")
    mq = MessageQueue("Orders", "broker-a", 0)
    progress = [QueueProgress(mq, 10, 7, 0, in_flight=2, invisible=1)]

    async def consume_progress(group: str) -> list[QueueProgress]:
        return progress

    async def consumer_connections(group: str) -> object:
        from mqcore.errors import MQBrokerError
        from mqcore.protocol import ResponseCode

        raise MQBrokerError(ResponseCode.CONSUMER_NOT_ONLINE, "not online")

    monkeypatch.setattr(poller.admin, "consume_progress", consume_progress)
    monkeypatch.setattr(poller.admin, "consumer_connections", consumer_connections)
    detail = await poller._group_detail("workers")
    [row] = detail.queues
    assert (row.in_flight, row.invisible, row.consumer_offset) == (2, 1, 7)
    assert detail.popping and detail.model == "offline"
