"""Property encoding rules and message id codecs."""

from __future__ import annotations

import time

import pytest

from mqcore.errors import MessageIdError
from mqcore.message import (
    Message,
    create_offset_msg_id,
    decode_offset_msg_id,
    decode_properties,
    decode_uniq_key,
    encode_properties,
)
from mqcore.message.ids import UniqKeyGenerator


def test_java_writer_has_no_trailing_separator() -> None:
    assert encode_properties({"TAGS": "a", "KEYS": "k"}) == b"TAGS\x01a\x02KEYS\x01k"
    assert encode_properties({"A": None, "B": "1"}) == b"B\x011"  # type: ignore[dict-item]
    assert encode_properties({}) == b""


def test_reader_follows_java() -> None:
    assert decode_properties(b"TAGS\x01TagA\x02") == {"TAGS": "TagA"}
    assert decode_properties(b"\x02\x02A\x01\x02B\x01v\x02\x01x") == {"B": "v"}
    assert decode_properties("名\x01值".encode()) == {"名": "值"}


def test_message_helpers() -> None:
    m = Message("T", b"b")
    m.tags = "TagA"
    m.keys = ["k1", "k2"]
    m.delay_level = 3
    m.properties["color"] = "red"
    assert m.properties["KEYS"] == "k1 k2" and m.keys == ["k1", "k2"]
    assert m.delay_level == 3 and m.user_properties == {"color": "red"}
    m.delay_level = 0
    m.tags = None
    assert "DELAY" not in m.properties and m.tags is None
    assert m.wait_store_msg_ok


def test_offset_msg_id_examples() -> None:
    assert create_offset_msg_id(("127.0.0.1", 10911), 398) == "7F00000100002A9F000000000000018E"
    assert decode_offset_msg_id("0ADA91A6000029CC0000006504009B6F") == (
        "10.218.145.166",
        10700,
        433858845551,
    )
    v6 = create_offset_msg_id(("2001:db8::1", 10911), 5)
    assert len(v6) == 56 and decode_offset_msg_id(v6) == ("2001:db8::1", 10911, 5)


@pytest.mark.parametrize("bad", ["xyz", "00", "0ADA91A6000029CC00000065", ""])
def test_bad_offset_msg_id(bad: str) -> None:
    with pytest.raises(MessageIdError):
        decode_offset_msg_id(bad)


def test_uniq_keys_are_unique_and_decode() -> None:
    gen = UniqKeyGenerator(ip=bytes([10, 1, 2, 3]), pid=0x12345)
    keys = [gen.next() for _ in range(1000)]
    assert len(set(keys)) == 1000 and all(len(k) == 32 for k in keys)
    ip, pid, born = decode_uniq_key(keys[0])
    assert ip == "10.1.2.3" and pid == 0x2345
    assert abs(born - time.time() * 1000) < 5000


def test_real_uniq_key_decodes() -> None:
    ip, pid, _ = decode_uniq_key("7F00000130795FFD2B27943091090000")
    assert (ip, pid) == ("127.0.0.1", 12409)
    with pytest.raises(MessageIdError):
        decode_uniq_key("nothex")
