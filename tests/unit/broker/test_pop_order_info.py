"""FIFO POP's order info (RocketMQ 5's ConsumerOrderInfoManager): blocking, acks moving
the group's offset to the first unacknowledged message, consumed counts across pops,
and ``config/consumerOrderInfo.json`` written and read back."""

from __future__ import annotations

import time
from pathlib import Path

from mqcore.broker.pop.order_info import ConsumerOrderInfoManager
from mqcore.protocol.extra_info import order_count_key, parse_order_count_info


def now() -> int:
    return int(time.time() * 1000)


def test_acks_move_the_offset_to_the_first_unacknowledged(tmp_path: Path) -> None:
    m = ConsumerOrderInfoManager(tmp_path)
    pop_time = now()
    m.update(None, "T", "g", 0, pop_time, 60_000, [5, 6, 8])
    assert m.check_block(None, "T", "g", 0, 60_000)
    assert m.commit_and_next("T", "g", 0, 6, pop_time) == 5  # 5 is still in flight
    assert m.commit_and_next("T", "g", 0, 5, pop_time) == 8
    assert m.commit_and_next("T", "g", 0, 7, pop_time) == -1  # not handed out
    assert m.commit_and_next("T", "g", 0, 8, pop_time - 1) == -2  # an older pop's ack
    assert m.commit_and_next("T", "g", 0, 8, pop_time) == 9
    assert not m.check_block(None, "T", "g", 0, 60_000)


def test_a_pop_again_counts_and_the_same_attempt_is_not_blocked(tmp_path: Path) -> None:
    m = ConsumerOrderInfoManager(tmp_path)
    m.update("a1", "T", "g", 0, now(), 60_000, [0, 1])
    assert not m.check_block("a1", "T", "g", 0, 60_000)  # a retry of the same attempt
    m.update_next_visible_time("T", "g", 0, 0, m.table["T@g"][0].pop_time, now() - 1)
    m.update_next_visible_time("T", "g", 0, 1, m.table["T@g"][0].pop_time, now() - 1)
    assert not m.check_block("a2", "T", "g", 0, 60_000)
    counts, least = m.update("a2", "T", "g", 0, now(), 60_000, [0, 1, 2])
    assert counts == {0: 1, 1: 1} and least == 0  # 2 is new
    counts, least = m.update("a3", "T", "g", 0, now(), 60_000, [0, 1, 2])
    assert counts == {0: 2, 1: 2, 2: 1} and least == 1


def test_the_file_round_trips(tmp_path: Path) -> None:
    m = ConsumerOrderInfoManager(tmp_path)
    pop_time = now()
    m.update("a", "T", "g", 3, pop_time, 1000, [7, 9])
    m.commit_and_next("T", "g", 3, 7, pop_time)
    m.update_next_visible_time("T", "g", 3, 9, pop_time, pop_time + 5)
    m.persist()
    assert (tmp_path / "config" / "consumerOrderInfo.json").exists()
    back = ConsumerOrderInfoManager(tmp_path)
    back.load()
    assert back.table == m.table


def test_order_count_info_text() -> None:
    text = "0 qo1%7 2;0 1 1"
    parsed = parse_order_count_info(text)
    assert parsed[order_count_key("T", 1, 7)] == 2
    assert parsed["0@1"] == 1
