"""The dashboard's pure parts: delay tables, rates, lookups' parsing, body rendering."""

from __future__ import annotations

import pytest

from mqcli.ha import ha_state
from mqcli.tui.lookup import body_text, hex_dump, parse_query, parse_time
from mqcli.tui.model import History, QueueRow, TopicRow, topic_kind
from mqcli.tui.poller import ClusterPoller, parse_delay_levels
from mqcli.tui.widgets.delay_levels import due_text
from mqcli.tui.widgets.lag_sparkline import spark, trend

NOW = 1_700_000_000_000


def test_delay_levels_parse_rocketmq_syntax() -> None:
    assert parse_delay_levels("1s 5m 2h 1d bad") == [
        ("1s", 1000), ("5m", 300_000), ("2h", 7_200_000), ("1d", 86_400_000),
    ]  # fmt: skip


def test_topic_kinds() -> None:
    assert topic_kind("%RETRY%g") == "retry"
    assert topic_kind("%DLQ%g") == "dlq"
    assert topic_kind("SCHEDULE_TOPIC_XXXX") == "system"
    assert topic_kind("DefaultCluster", frozenset({"DefaultCluster"})) == "system"
    assert topic_kind("Orders") == "normal"


def test_put_tps_comes_from_max_offset_deltas_between_polls() -> None:
    clock = iter([100.0, 102.0])
    poller = ClusterPoller("127.0.0.1:1", clock=lambda: next(clock))

    def topics(max_offset: int) -> dict[str, TopicRow]:
        from mqcli.tui.model import BrokerRow
        from mqcli.tui.poller import BrokerData

        data = BrokerData(BrokerRow("c", "b", 0, "a:1"), topics={"T": (6, 1)})
        data.stats[("T", 0)] = QueueRow("T", "b", 0, 0, max_offset)
        return poller._topics([data], frozenset(), poller.clock())

    assert topics(10)["T"].put_tps == 0.0
    second = topics(30)["T"]
    assert second.put_tps == 10.0 and second.tps_history == [0.0, 10.0]


def test_history_forgets_vanished_keys() -> None:
    h = History(length=3)
    for v in (1, 2, 3, 4):
        h.add("a", v)
    h.add("b", 1)
    assert h.get("a") == [2, 3, 4]
    h.retain({"a"})
    assert h.get("b") == []


def test_time_and_query_parsing() -> None:
    assert parse_time("now", NOW) == NOW
    assert parse_time("-10m", NOW) == NOW - 600_000
    assert parse_time("1234", NOW) == 1234
    with pytest.raises(ValueError):
        parse_time("yesterday", NOW)
    q = parse_query("Orders", "time:-1h..-30m", NOW)
    assert (q.mode, q.begin_ms, q.end_ms) == ("time", NOW - 3_600_000, NOW - 1_800_000)
    assert parse_query("Orders", "order-1", NOW).mode == "key"
    assert parse_query("", "id:0A0000", NOW).value == "0A0000"
    with pytest.raises(ValueError):
        parse_query("", "key:k", NOW)


def test_bodies_render_as_text_or_hex() -> None:
    assert body_text("héllo\n".encode()) == "héllo\n"
    assert body_text(b"\x00\x01") is None
    assert hex_dump(b"AB\x00") == "00000000  41 42 00" + " " * 40 + " AB."


def test_sparkline_trend_and_due_texts() -> None:
    assert spark([]) == "" and spark([0, 0]) == "▁▁" and spark([1, 8])[-1] == "█"
    assert trend([1, 2]).plain == "↑" and trend([2, 1]).plain == "↓"
    assert due_text(None, NOW) == "-"
    assert due_text(NOW + 65_000, NOW).startswith("in 1m05s")
    assert due_text(NOW - 3000, NOW).startswith("overdue 3s")


async def test_poller_reads_role_ha_state_and_slave_lag_from_runtime_tables() -> None:
    """`mq` brokers' HA keys are read; RocketMQ's table (no role, no HA keys) gives the
    role from the broker id and "-", and a slave's lag is computed either way."""
    from mqcli.tui.model import BrokerRow
    from mqcli.tui.poller import BrokerData
    from mqcore.client import Admin
    from mqcore.common.metadata import SubscriptionGroupConfig, TopicConfig
    from mqcore.errors import MQError

    tables = {
        "mq-m:1": {"commitLogMaxOffset": "5000", "brokerRole": "SYNC_MASTER",
                   "haConnectionCount": "1", "haPush2SlaveMaxOffset": "4000",
                   "storeProblems": "7"},
        "mq-s:1": {"commitLogMaxOffset": "4000", "brokerRole": "SLAVE",
                   "haMasterAddress": "mq-m:2", "haMasterConnected": "true",
                   "loopLagMs": "1", "loopLagMaxMsLastMinute": "340", "loopLagMaxMs": "340",
                   "loopLagMaxMsPerMinute": "0,0,0,0,0,0,0,0,0,340", "loopStallCount": "1"},
        "rmq-m:1": {"commitLogMaxOffset": "700"},
        "rmq-s:1": {"commitLogMaxOffset": "100"},
    }  # fmt: skip

    class Tables(Admin):
        """Runtime tables by address, empty topic/offset/group tables, nothing else."""

        async def broker_runtime_info(self, addr: str) -> dict[str, str]:
            return tables[addr]

        async def broker_topic_configs(self, addr: str) -> dict[str, TopicConfig]:
            return {}

        async def broker_consumer_offsets(self, addr: str) -> dict[str, dict[int, int]]:
            return {}

        async def broker_subscription_groups(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
            return {}

        async def broker_config(self, addr: str) -> dict[str, str]:
            raise MQError("not served here")

    poller = ClusterPoller("127.0.0.1:1")
    poller.admin = Tables("127.0.0.1:1")
    rows = [
        BrokerRow("c", "mq", 0, "mq-m:1"), BrokerRow("c", "mq", 1, "mq-s:1"),
        BrokerRow("c", "rmq", 0, "rmq-m:1"), BrokerRow("c", "rmq", 1, "rmq-s:1"),
    ]  # fmt: skip
    results: list[BrokerData] = [await poller._broker(r) for r in rows]
    poller._slave_lag(results)
    mq_m, mq_s, rmq_m, rmq_s = (r.row for r in results)
    assert all(r.up for r in (mq_m, mq_s, rmq_m, rmq_s)), [r.error for r in rows]
    assert mq_m.ha is not None and mq_m.ha.summary() == "1 slave"
    assert mq_m.role_text == "sync master" and mq_m.slave_lag_bytes is None
    assert mq_s.ha is not None and mq_s.ha.master_addr == "mq-m:2"
    assert mq_s.ha.summary() == "connected" and mq_s.slave_lag_bytes == 1000
    assert rmq_m.role_text == "master" and rmq_m.ha is not None and rmq_m.ha.summary() == "-"
    assert rmq_s.ha is not None and rmq_s.ha.summary() == "-" and rmq_s.slave_lag_bytes == 600
    # damage recovery worked around shows in the broker's state cell
    from mqcli.tui.screens.cluster import FULL_COLUMNS, ClusterScreen

    keys = [k for k, _ in FULL_COLUMNS]
    state = keys.index("state")
    assert (mq_m.store_problems, rmq_m.store_problems) == (7, 0)
    assert str(ClusterScreen._cells(mq_m, 0, keys)[state]) == "up, 7 damaged"
    assert str(ClusterScreen._cells(rmq_m, 0, keys)[state]) == "up"
    # the loop's largest stall of the last minute: mq brokers say, RocketMQ's do not
    assert (mq_s.loop_lag_ms, rmq_s.loop_lag_ms) == (340, None)


def test_poller_reads_whether_a_slave_is_in_its_masters_in_sync_set() -> None:
    """Controller mode: a slave's IN-SYNC comes from its master's syncStateSet (its own
    report says nothing current), matched on its controllerBrokerId and the epoch."""
    from mqcli.tui.model import BrokerRow
    from mqcli.tui.poller import BrokerData

    def data(bid: int, runtime: dict[str, str]) -> BrokerData:
        row = BrokerRow("c", "broker-a", bid, f"h:{bid}")
        row.ha = ha_state(runtime, bid)
        return BrokerData(row, runtime)

    epoch = {"masterEpoch": "4", "masterBrokerId": "2"}
    master = data(0, {"brokerRole": "SYNC_MASTER", "controllerBrokerId": "2",
                      "syncStateSet": "1,2", **epoch})  # fmt: skip
    in_set = data(1, {"brokerRole": "SLAVE", "controllerBrokerId": "1", **epoch})
    out_of_set = data(3, {"brokerRole": "SLAVE", "controllerBrokerId": "3", **epoch})
    ClusterPoller._slave_lag([master, in_set, out_of_set])
    assert master.row.ha is not None and master.row.ha.in_sync_text == "1,2"
    assert master.row.ha.epoch_text == "4"
    assert in_set.row.ha is not None and in_set.row.ha.in_sync is True
    assert out_of_set.row.ha is not None and out_of_set.row.ha.in_sync_text == "no"
