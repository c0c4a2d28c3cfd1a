"""The store's batch encoder writes exactly the bytes of the reference record codec."""

from __future__ import annotations

from pathlib import Path

import pytest
from storetest_util import make_msg, open_store

from mqcore.message.model import MessageExt
from mqcore.message.record import decode_record, encode_record
from mqcore.store import batch_encoder
from mqcore.store.checkpoint import StoreCheckpoint
from tests.support import until_sync


@pytest.mark.parametrize(
    ("born", "store"),
    [
        (("127.0.0.1", 50000), ("10.0.0.1", 10911)),
        (("::1", 50000), ("10.0.0.1", 10911)),
        (("127.0.0.1", 1), ("2001:db8::1", 10911)),
        (("::ffff:192.168.1.2", 7), ("fe80::2", 10911)),
    ],
)
def test_batch_encoder_matches_reference_codec(
    born: tuple[str, int], store: tuple[str, int]
) -> None:
    msgs = [
        MessageExt(
            topic="TopicA",
            body=f"body-{i}".encode() * (i + 1),
            flag=i,
            properties={"TAGS": "T", "KEYS": f"k{i}"} if i % 2 else {},
            queue_id=3,
            sys_flag=0x8 if i == 2 else 0,
            born_timestamp=1_700_000_000_000 + i,
            born_host=born,
            store_host=store,
            reconsume_times=i,
            prepared_transaction_offset=99 if i == 2 else 0,
        )
        for i in range(4)
    ]
    prepared = batch_encoder.prepare(msgs, 1 << 20)
    data, offsets, qoffsets, nxt = batch_encoder.encode(prepared, 5000, 40, 1_800_000_000_000)
    assert nxt == 44 and qoffsets == [40, 41, 42, 43]
    assert len(data) == prepared.total
    expected = b"".join(
        encode_record(
            topic=m.topic,
            body=m.body,
            properties=m.properties,
            queue_id=m.queue_id,
            flag=m.flag,
            sys_flag=m.sys_flag,
            born_timestamp=m.born_timestamp,
            born_host=m.born_host,
            store_host=m.store_host,
            store_timestamp=1_800_000_000_000,
            queue_offset=40 + i,
            physical_offset=offsets[i],
            reconsume_times=m.reconsume_times,
            prepared_transaction_offset=m.prepared_transaction_offset,
        )
        for i, m in enumerate(msgs)
    )
    assert data == expected
    decoded = decode_record(data, offsets[1] - 5000, check_crc=True)
    assert decoded.born_host[1] == born[1] and decoded.queue_offset == 41


def test_prepared_records_take_no_queue_offset() -> None:
    msgs = [make_msg(sys_flag=0x4), make_msg(), make_msg(sys_flag=0xC), make_msg()]
    prepared = batch_encoder.prepare(msgs, 1 << 20)
    _data, _offs, qoffsets, nxt = batch_encoder.encode(prepared, 0, 7, 1)
    assert qoffsets == [-1, 7, -1, 8] and nxt == 9


def test_ipv6_hosts_round_trip_through_the_store(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        msg = make_msg(body=b"v6")
        msg.born_host = ("2001:db8::7", 4000)
        res = store.put_message(msg)
        got = store.get_messages("TopicA", 0, 0, 1)
        back = decode_record(got.buffers[0], check_crc=True)
        assert back.born_host == ("2001:db8::7", 4000) and back.sys_flag & 0x10
        assert back.commit_log_offset == res.wrote_offset
    finally:
        store.shutdown()


def test_async_flush_thread_and_checkpoint(tmp_path: Path) -> None:
    store = open_store(tmp_path, flush_commit_log_least_pages=0)
    try:
        res = store.put_message(make_msg())
        until_sync(
            lambda: store.commit_log.flushed_where >= store.max_phy_offset,
            5,
            "background flush did not happen",
            interval=0.01,
        )
        until_sync(
            lambda: StoreCheckpoint(tmp_path / "checkpoint", readonly=True).logics_msg_timestamp,
            5,
            "checkpoint not written",
            interval=0.01,
        )
    finally:
        store.shutdown()
    cp = StoreCheckpoint(tmp_path / "checkpoint", readonly=True)
    assert cp.physic_msg_timestamp == cp.logics_msg_timestamp == res.store_timestamp
