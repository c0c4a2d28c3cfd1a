"""The captured broker pull bodies decode to the values their README documents."""

from __future__ import annotations

from pathlib import Path

from mqcore.message import decode_records
from mqcore.message.record import body_crc


def test_message_bin(fixture_messages: Path) -> None:
    msgs = decode_records((fixture_messages / "message.bin").read_bytes())
    assert len(msgs) == 1
    m = msgs[0]
    assert m.msg_id == "0ADA91A6000029CC0000006500E59F3E"
    assert m.body == b'{"room":"1","msg":"1"}'
    assert m.topic == "TopicTest"
    assert m.properties == {"TAGS": "TagA"}
    assert m.tags == "TagA"
    assert m.keys == []
    assert m.delay_level == 0
    assert m.queue_offset == 276
    assert m.commit_log_offset == 433806745406
    assert m.born_timestamp == 1442834438803
    assert m.born_host == ("10.62.60.82", 54073)
    assert m.store_timestamp == 1442834438869
    assert m.store_host == ("10.218.145.166", 10700)
    assert m.store_size == 132
    assert m.body_crc == 1438513404 == body_crc(m.body)


def test_message_compress_bin(fixture_messages: Path) -> None:
    msgs = decode_records((fixture_messages / "message_compress.bin").read_bytes())
    assert len(msgs) == 1
    m = msgs[0]
    assert m.msg_id == "0ADA91A6000029CC000000661A586D98"
    assert m.body == b"Hello MetaQ !!!"
    assert m.sys_flag == 1
    assert m.stored_body_length == 23
    assert m.store_size == 125  # echoes TOTALSIZE, as Java's decoder does
    assert m.properties == {"TAGS": "TagA"}
    assert m.born_host == ("10.19.215.16", 53814)


def test_message_compress_without_decompress(fixture_messages: Path) -> None:
    (m,) = decode_records(
        (fixture_messages / "message_compress.bin").read_bytes(), decompress=False
    )
    assert m.body == bytes.fromhex("789cf348cdc9c957f04d2d490c54505454040028880470")


def test_batch_message_bin(fixture_messages: Path) -> None:
    msgs = decode_records((fixture_messages / "batch_message.bin").read_bytes())
    assert [m.msg_id for m in msgs] == [
        "0ADA91A6000029CC000000659560A2AA",
        "0ADA91A6000029CC000000659560D349",
        "0ADA91A6000029CC000000659560D578",
    ]
    assert [m.queue_offset for m in msgs] == [278, 279, 280]
    assert [m.born_timestamp for m in msgs] == [1442835917706, 1442835917699, 1442835917732]
    assert all(m.body == b"Hello MetaQ !!!" and m.body_crc == 1608414268 for m in msgs)


def test_read_body_false(fixture_messages: Path) -> None:
    (m,) = decode_records((fixture_messages / "message.bin").read_bytes(), read_body=False)
    assert m.body == b""
    assert m.msg_id == "0ADA91A6000029CC0000006500E59F3E"
