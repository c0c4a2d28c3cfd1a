"""Deterministic snapshots and a fake poller for layout tests and the SVG snapshots:
live data varies (times, TPS, ports), so pictures are made from fixed data. The fake
implements :class:`~mqcli.tui.poller.Poller`, the protocol the app depends on."""

from __future__ import annotations

from mqcli.ha import HAState
from mqcli.tui.model import (
    DEFAULT_DELAY_LEVELS,
    BrokerRow,
    DelayLevelRow,
    GroupDetail,
    GroupQueueRow,
    GroupRow,
    Member,
    NamesrvHealth,
    QueueRow,
    Snapshot,
    TopicRow,
)
from mqcli.tui.poller import parse_delay_levels
from mqcore.client import Admin
from mqcore.protocol.bodies import MessageQueue

NOW_MS = 1_700_000_000_000
"""2023-11-14 22:13:20 UTC: every time in the sample is relative to it."""


def sample_snapshot() -> Snapshot:
    brokers = [
        BrokerRow("DefaultCluster", "broker-a", 0, "10.0.0.1:10911", version="V4_9_8",
                  boot_ms=NOW_MS - 3 * 3600_000, put_tps=120.5, get_tps=98.0, put_today=86_400,
                  get_today=80_000, disk_ratio=0.42, commit_log_max=73_400_320,
                  ha=HAState("SYNC_MASTER", 73_400_320, connections=1, acked_offset=73_390_000)),
        BrokerRow("DefaultCluster", "broker-a", 1, "10.0.0.2:10911", version="V4_9_8",
                  boot_ms=NOW_MS - 3 * 3600_000, put_tps=0.0, get_tps=0.0,
                  disk_ratio=0.40, commit_log_max=73_390_000, slave_lag_bytes=10_320,
                  ha=HAState("SLAVE", 73_390_000, master_addr="10.0.0.1:10912",
                             master_connected=True, lag_bytes=10_320)),
        BrokerRow("DefaultCluster", "broker-b", 0, "10.0.0.3:10911", up=False,
                  error="broker 10.0.0.3:10911 is unreachable", version="V4_9_8"),
    ]  # fmt: skip
    orders = TopicRow(
        "Orders",
        "normal",
        [QueueRow("Orders", "broker-a", q, 0, 100 + q, NOW_MS - 1000 * q) for q in range(4)],
        put_tps=12.0,
        tps_history=[0, 3, 6, 12, 9, 12, 15, 12],
    )
    payments = TopicRow(
        "Payments", "normal", [QueueRow("Payments", "broker-a", 0, 10, 60, NOW_MS - 5000)]
    )
    retry = TopicRow("%RETRY%billing", "retry", [QueueRow("%RETRY%billing", "broker-a", 0, 0, 3)])
    dlq = TopicRow("%DLQ%billing", "dlq", [QueueRow("%DLQ%billing", "broker-a", 0, 0, 2, NOW_MS)])
    topics = {t.name: t for t in (dlq, retry, orders, payments)}
    groups = {
        "billing": GroupRow("billing", model="CLUSTERING", topics=["%RETRY%billing", "Orders"],
                            queues=5, total_lag=40, lag_history=[10, 20, 40]),
        "shipping": GroupRow("shipping", model="BROADCASTING", topics=["Orders"], queues=4,
                             total_lag=0, lag_history=[5, 0, 0]),
    }  # fmt: skip
    detail = GroupDetail(
        "billing",
        model="CLUSTERING",
        consume_type="CONSUME_PASSIVELY",
        subscriptions={"Orders": "*"},
        members=[Member("10.0.0.9@4711", "10.0.0.9:51234", "PYTHON", 453)],
        queues=[
            GroupQueueRow("Orders", "broker-a", q, 100 + q, 90 + q, NOW_MS - 2000) for q in range(4)
        ],
    )
    table = parse_delay_levels(DEFAULT_DELAY_LEVELS)
    levels = [
        DelayLevelRow(
            "broker-a", i, text, 50 if i in (3, 18) else 0, 60 if i == 3 else 50 if i == 18 else 0
        )
        for i, (text, _) in enumerate(table, start=1)
    ]
    levels[2].next_due_ms = NOW_MS + 4000
    levels[2].delivery_rate = 2.5
    return Snapshot(
        taken_ms=NOW_MS,
        latency_ms=12.0,
        namesrvs=[NamesrvHealth("10.0.0.1:9876", True, 1.5)],
        brokers=brokers,
        topics=topics,
        groups=groups,
        group_detail=detail,
        delay_levels=levels,
    )


class FakeAdmin(Admin):
    """Records the admin calls the app makes for the views; ``fail`` makes them raise.
    Never started: anything else it were asked would fail as an unstarted Admin."""

    def __init__(self) -> None:
        super().__init__("10.0.0.1:9876", instance_name="tui-fake")
        self.calls: list[tuple[str, ...]] = []
        self.fail: str | None = None

    async def delete_topic(self, topic: str, *, cluster: str | None = None) -> None:
        self._record("delete_topic", topic)

    async def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> dict[MessageQueue, int]:
        self._record("reset_offset_by_time", group, topic, str(timestamp_ms))
        return {}

    def _record(self, *call: str) -> None:
        if self.fail:
            raise RuntimeError(self.fail)
        self.calls.append(call)


class FakePoller:
    """Answers every poll with :func:`sample_snapshot` (or what ``snapshots`` yields)."""

    def __init__(self, snapshot: Snapshot | None = None) -> None:
        self.snapshot = snapshot or sample_snapshot()
        self.polls = 0
        self.groups: list[str | None] = []
        """The highlighted group each poll was asked for."""
        self.admin = FakeAdmin()
        self.closed = False

    async def poll(self, *, group: str | None = None, delay_heads: bool = False) -> Snapshot:
        self.polls += 1
        self.groups.append(group)
        return self.snapshot

    async def close(self) -> None:
        self.closed = True


class SequencePoller(FakePoller):
    """Answers the polls with ``snapshots`` in turn, then repeats the last one (a
    cluster whose state changes between refreshes)."""

    def __init__(self, *snapshots: Snapshot) -> None:
        super().__init__(snapshots[0])
        self.snapshots = list(snapshots)

    async def poll(self, *, group: str | None = None, delay_heads: bool = False) -> Snapshot:
        self.polls += 1
        self.groups.append(group)
        return self.snapshots[min(self.polls, len(self.snapshots)) - 1]
