"""ScheduleMessageService against a real store and a stub broker: the delay rewrite, due
times, the delivered copy's fields, drops, retries and offset corrections (spec §11)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mqcore.broker import schedule as schedule_mod
from mqcore.broker.append import Appender
from mqcore.broker.schedule import DeliveredMessage, ScheduleMessageService
from mqcore.broker.stats import BrokerStatsManager
from mqcore.message.const import SCHEDULE_TOPIC, SysFlag
from mqcore.message.model import MessageExt
from mqcore.message.record import decode_record
from mqcore.store.message_store import MessageStore
from mqcore.store.metadata import DelayOffsetManager
from mqcore.store.metadata.persister import ConfigPersister
from mqcore.store.results import PutResult, PutStatus
from mqcore.store.store_config import MessageStoreConfig

TABLE = "1s 2s 3s"


class FakeReplication:
    """No slave: these tests never wait for one."""

    enough_in_sync = True

    def is_slave_ok(self, master_put_where: int) -> bool:
        return False

    async def wait_for_slave(self, offset: int, timeout: float) -> bool:
        return False


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ScheduleMessageService]:
    config = MessageStoreConfig(
        store_path_root_dir=str(tmp_path),
        mapped_file_size_commit_log=1024 * 1024,
        mapped_file_size_consume_queue=20 * 100,
        max_hash_slot_num=100,
        max_index_num=400,
        message_delay_level=TABLE,
    )
    store = MessageStore(config)
    store.start()
    offsets = DelayOffsetManager(tmp_path)
    try:
        yield ScheduleMessageService(
            store,
            config,
            offsets,
            appender=Appender(store, config, BrokerStatsManager(), FakeReplication()),
            persister=ConfigPersister(),  # not started: requests are only queued
        )
    finally:
        store.shutdown()


def _msg(topic: str = "T", delay: str | None = "2", **kw: Any) -> MessageExt:
    props = {"TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "U1", "color": "blue"}
    if delay is not None:
        props["DELAY"] = delay
    kw.setdefault("queue_id", 3)
    return MessageExt(
        topic=topic,
        body=b"body",
        flag=7,
        properties=props,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        born_host=("10.0.0.1", 1234),
        store_host=("10.0.0.2", 10911),
        reconsume_times=2,
        **kw,
    )


def _put_delayed(service: ScheduleMessageService, msg: MessageExt) -> PutResult:
    result = service.store.put_messages((service.rewrite_delay(msg),))
    assert result.ok
    return result


def _raw_properties(view: memoryview) -> bytes:
    """The PROPERTIES bytes of an IPv4 v1 record, read straight from the layout."""
    (body_len,) = struct.unpack_from(">i", view, 84)
    p = 88 + body_len
    p += 1 + view[p]
    (length,) = struct.unpack_from(">h", view, p)
    return bytes(view[p + 2 : p + 2 + length])


def _at(monkeypatch: pytest.MonkeyPatch, now_ms: int) -> None:
    monkeypatch.setattr(schedule_mod, "_now_ms", lambda: now_ms)


# -- rewrite ----------------------------------------------------------------------------


def test_rewrite_moves_to_level_queue_with_real_topic(service: ScheduleMessageService) -> None:
    msg = service.rewrite_delay(_msg(delay="2"))
    assert (msg.topic, msg.queue_id) == (SCHEDULE_TOPIC, 1)
    assert msg.properties["REAL_TOPIC"] == "T" and msg.properties["REAL_QID"] == "3"
    assert msg.properties["DELAY"] == "2"


def test_rewrite_clamps_above_max(service: ScheduleMessageService) -> None:
    msg = service.rewrite_delay(_msg(delay="40"))
    assert (msg.topic, msg.queue_id) == (SCHEDULE_TOPIC, 2)
    assert msg.properties["DELAY"] == "3"


@pytest.mark.parametrize("delay", [None, "0", "-1", "x"])
def test_rewrite_leaves_undelayed(service: ScheduleMessageService, delay: str | None) -> None:
    msg = service.rewrite_delay(_msg(delay=delay))
    assert msg.topic == "T" and "REAL_TOPIC" not in msg.properties


@pytest.mark.parametrize(
    ("sys_flag", "delayed"),
    [
        (SysFlag.TRANSACTION_NOT_TYPE, True),
        (SysFlag.TRANSACTION_COMMIT_TYPE, True),
        (SysFlag.TRANSACTION_PREPARED_TYPE, False),
        (SysFlag.TRANSACTION_ROLLBACK_TYPE, False),
    ],
)
def test_rewrite_by_transaction_type(
    service: ScheduleMessageService, sys_flag: int, delayed: bool
) -> None:
    msg = _msg()
    msg.sys_flag = sys_flag
    assert (service.rewrite_delay(msg).topic == SCHEDULE_TOPIC) is delayed


def test_rewrite_skips_deliveries_and_dead_letters(service: ScheduleMessageService) -> None:
    delivered = DeliveredMessage(topic="T", properties={"DELAY": "2"})
    assert service.rewrite_delay(delivered).topic == "T"
    assert service.rewrite_delay(_msg(topic="%DLQ%g")).topic == "%DLQ%g"


# -- delivery ---------------------------------------------------------------------------


async def test_not_delivered_before_due(
    service: ScheduleMessageService, monkeypatch: pytest.MonkeyPatch
) -> None:
    put = _put_delayed(service, _msg(delay="2"))
    _at(monkeypatch, put.store_timestamp + 1999)
    wait = await service.deliver_due(2)
    assert wait == pytest.approx(0.001)
    assert service.offsets.get(2) == 0
    assert service.store.get_max_offset_in_queue("T", 3) == 0


async def test_delivered_copy_keeps_record_and_properties(
    service: ScheduleMessageService, monkeypatch: pytest.MonkeyPatch
) -> None:
    put = _put_delayed(service, _msg(delay="2"))
    _at(monkeypatch, put.store_timestamp + 2000)
    assert await service.deliver_due(2) == schedule_mod._IDLE_WAIT
    assert service.offsets.get(2) == 1
    store = service.store
    got = store.get_messages("T", 3, 0, 10)
    assert len(got.buffers) == 1
    copy = decode_record(got.buffers[0])
    original = store.look_message(put.wrote_offset)
    assert (copy.body, copy.flag, copy.sys_flag) == (b"body", 7, 0)
    assert copy.born_timestamp == original.born_timestamp
    assert (copy.born_host, copy.store_host) == (original.born_host, original.store_host)
    assert copy.reconsume_times == 2
    assert copy.store_timestamp >= put.store_timestamp
    assert _raw_properties(got.buffers[0]) == _raw_properties(store.get_message(put.wrote_offset))
    assert copy.properties["DELAY"] == "2" and copy.properties["REAL_TOPIC"] == "T"
    # the tag slot of the real queue is the tags hash again, so tag filters work
    cq = store.consume_queue("T", 3)
    assert cq is not None and cq.entry(0) == (copy.commit_log_offset, copy.store_size, 2598919)
    assert service.appender.stats.topic_put_snapshot("T").msgs == 1


async def test_clock_gone_back_counts_as_due(
    service: ScheduleMessageService, monkeypatch: pytest.MonkeyPatch
) -> None:
    put = _put_delayed(service, _msg(delay="1"))
    _at(monkeypatch, put.store_timestamp - 5000)  # due is more than one delay ahead
    await service.deliver_due(1)
    assert service.offsets.get(1) == 1


async def test_half_topic_and_missing_real_topic_are_dropped(
    service: ScheduleMessageService, monkeypatch: pytest.MonkeyPatch
) -> None:
    half = _put_delayed(service, _msg(topic="RMQ_SYS_TRANS_HALF_TOPIC", queue_id=0, delay="1"))
    raw = _msg(delay="1")
    raw.topic, raw.queue_id = SCHEDULE_TOPIC, 0  # no REAL_TOPIC/REAL_QID
    assert service.store.put_messages((raw,)).ok
    _at(monkeypatch, half.store_timestamp + 10_000)
    await service.deliver_due(1)
    assert service.offsets.get(1) == 2
    assert service.store.get_max_offset_in_queue("RMQ_SYS_TRANS_HALF_TOPIC", 0) == 0


async def test_failed_put_is_retried_at_the_same_offset(
    service: ScheduleMessageService, monkeypatch: pytest.MonkeyPatch
) -> None:
    put = _put_delayed(service, _msg(delay="1"))
    _at(monkeypatch, put.store_timestamp + 1000)
    real_put = service.store.put_messages
    monkeypatch.setattr(
        service.store, "put_messages", lambda batch: PutResult(PutStatus.OS_PAGECACHE_BUSY)
    )
    assert await service.deliver_due(1) == schedule_mod._RETRY_WAIT
    assert service.offsets.get(1) == 0
    monkeypatch.setattr(service.store, "put_messages", real_put)
    await service.deliver_due(1)
    assert service.offsets.get(1) == 1
    assert service.store.get_max_offset_in_queue("T", 3) == 1


async def test_pass_stops_at_first_entry_not_due(
    service: ScheduleMessageService, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mqcore.store import message_store

    base = 1_800_000_000_000
    for store_ts in (base, base + 100, base + 1000):
        monkeypatch.setattr(message_store, "_now_ms", lambda ts=store_ts: ts)
        _put_delayed(service, _msg(delay="3"))
    _at(monkeypatch, base + 3100)
    assert await service.deliver_due(3) == pytest.approx(0.9)
    assert service.offsets.get(3) == 2
    assert service.store.get_max_offset_in_queue("T", 3) == 2


def test_offsets_out_of_range_are_corrected(service: ScheduleMessageService) -> None:
    _put_delayed(service, _msg(delay="1"))
    service.offsets.update(1, 9)
    service.correct_offsets()
    assert service.offsets.get(1) == 1


def test_runtime_info(service: ScheduleMessageService) -> None:
    put = _put_delayed(service, _msg(delay="2"))
    info = service.runtime_info()
    assert info["scheduleMessageOffset_2"] == "0,1"
    assert info["scheduleMessageOffset_1"] == "0,0"
    assert info["scheduleMessageHeadDue_2"] == str(put.store_timestamp + 2000)
    assert info["scheduleMessageHeadDue_1"] == "-1"
    assert info["scheduleMessageDeliverTps_2"] == "0.0 0.0 0.0"
    assert "scheduleMessageOffset_4" not in info
