"""CommitLog: BLANK end-of-file rule, one-copy batches, strict record checks, reads."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from mqcore.errors import CorruptRecordError
from mqcore.message.const import BLANK_MAGIC_CODE
from mqcore.message.record import DispatchRequest, decode_record, encode_record
from mqcore.store.commitlog import CommitLog, check_message

FILE = 4096


def _record(body: bytes, topic: str = "T", tags: str = "TagA") -> bytearray:
    return encode_record(topic=topic, body=body, properties={"TAGS": tags}, queue_id=1)


def _append(cl: CommitLog, rec: bytearray, ts: int = 1000) -> int:
    mf, phy = cl.reserve(len(rec))
    struct.pack_into(">qq", rec, 20, 0, phy)
    cl.commit(mf, rec, ts)
    return phy


def test_blank_written_when_record_plus_8_does_not_fit(tmp_path: Path) -> None:
    cl = CommitLog(tmp_path, FILE)
    rec = _record(b"x" * 900)
    size = len(rec)
    offsets = [_append(cl, bytearray(rec)) for _ in range(5)]
    per_file = (FILE - 8) // size  # L + 8 <= R must hold for every record
    assert offsets[per_file] == FILE  # rolled to the second file
    first = cl.queue.files[0]
    blank_at = per_file * size
    total, magic = struct.unpack_from(">ii", first.view, blank_at)
    assert magic == BLANK_MAGIC_CODE and total == FILE - blank_at
    assert [r.commit_log_offset for r in cl.scan(0)] == offsets
    cl.close()


def test_record_ending_exactly_8_bytes_before_file_end_stays(tmp_path: Path) -> None:
    cl = CommitLog(tmp_path, FILE)
    probe = _record(b"")
    body = b"y" * (FILE - 8 - len(probe))
    rec = _record(body)
    assert len(rec) + 8 == FILE
    assert _append(cl, rec) == 0
    assert _append(cl, _record(b"next")) == FILE
    cl.close()


def test_scan_check_crc_and_get_message(tmp_path: Path) -> None:
    cl = CommitLog(tmp_path, FILE)
    phy = _append(cl, _record(b"hello"))
    view = cl.get_message(phy)
    assert decode_record(view).body == b"hello"
    req = cl.check_at(phy, check_crc=True)
    assert isinstance(req, DispatchRequest) and req.topic == "T" and req.queue_id == 1
    # flip a body byte: CRC check must catch it, with file path and offset
    mf = cl.queue.files[0]
    body_pos = bytes(view).index(b"hello")
    mf.mm[body_pos] ^= 0xFF
    with pytest.raises(CorruptRecordError) as ei:
        cl.check_at(phy, check_crc=True)
    assert ei.value.path == str(mf.path) and ei.value.offset == phy
    assert list(cl.scan(0, check_crc=True, strict=False)) == []
    with pytest.raises(CorruptRecordError):
        cl.get_message(12345)
    cl.close()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: struct.pack_into(">i", b, 4, 0x12345678),  # bad magic
        lambda b: struct.pack_into(">i", b, 0, 10**6),  # size past the end
        lambda b: struct.pack_into(">i", b, 0, struct.unpack_from(">i", b, 0)[0] - 1),
    ],
)
def test_check_message_rejects_bad_records(mutate: object) -> None:
    rec = bytearray(_record(b"body")) + bytes(64)
    mutate(rec)  # type: ignore[operator]
    with pytest.raises(CorruptRecordError) as ei:
        check_message(memoryview(rec), 0, check_crc=False, path="f", base_offset=100)
    assert ei.value.offset == 100


def test_zeros_end_the_data() -> None:
    assert check_message(memoryview(bytes(64)), 0, check_crc=True) is None


def test_batch_goes_whole_to_next_file(tmp_path: Path) -> None:
    cl = CommitLog(tmp_path, FILE)
    _append(cl, _record(b"a" * 3000))
    batch = bytearray(_record(b"b" * 400)) + bytearray(_record(b"c" * 400))
    mf, phy = cl.reserve(len(batch))
    assert phy == FILE  # 3000 + 2 * ~450 + 8 > 4096: the whole batch rolls
    cl.commit(mf, batch, 1)
    cl.close()


def test_schedule_topic_tag_slot_is_deliver_time() -> None:
    rec = encode_record(
        topic="SCHEDULE_TOPIC_XXXX",
        body=b"d",
        properties={"DELAY": "3", "TAGS": "T"},
        store_timestamp=1_700_000_000_000,
    )
    table = {1: 1000, 2: 5000, 3: 10000}
    req = check_message(memoryview(rec), 0, check_crc=True, delay_table=table)
    assert isinstance(req, DispatchRequest)
    assert req.tags_code == 1_700_000_010_000
    big = encode_record(
        topic="SCHEDULE_TOPIC_XXXX", body=b"d", properties={"DELAY": "99"}, store_timestamp=5
    )
    req = check_message(memoryview(big), 0, check_crc=True, delay_table={1: 1000, 2: 5000})
    assert isinstance(req, DispatchRequest) and req.tags_code == 5005  # clamped to last level
