"""Message ids made the fast way equal the plain formula; unique keys stay unique."""

from __future__ import annotations

import struct
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqcore.message.ids import (
    UniqKeyGenerator,
    create_offset_msg_id,
    decode_offset_msg_id,
    decode_uniq_key,
    host_bytes,
)

hosts = st.sampled_from(["127.0.0.1", "10.1.2.3", "::ffff:192.168.0.9", "2001:db8::1"])


@given(hosts, st.integers(0, 65535), st.integers(0, 2**63 - 1))
def test_offset_msg_id_is_the_formula(ip: str, port: int, offset: int) -> None:
    expected = (host_bytes(ip) + struct.pack(">iq", port, offset)).hex().upper()
    assert create_offset_msg_id((ip, port), offset) == expected
    assert decode_offset_msg_id(expected)[1:] == (port, offset)


def test_offset_out_of_range_still_refused() -> None:
    with pytest.raises(struct.error):
        create_offset_msg_id(("127.0.0.1", 1), 2**63)


def test_uniq_key_layout() -> None:
    gen = UniqKeyGenerator(ip=bytes([10, 1, 2, 3]), pid=0x12345)
    first, second = gen.next(), gen.next()
    assert first[:20] == second[:20] and first.startswith("0A0102032345")
    assert int(second[-4:], 16) == int(first[-4:], 16) + 1  # the counter
    assert decode_uniq_key(first)[:2] == ("10.1.2.3", 0x2345)
    assert first == first.upper() and len(first) == 32


def test_uniq_keys_unique_across_threads() -> None:
    gen = UniqKeyGenerator(ip=bytes([10, 1, 2, 3]), pid=1)
    keys: list[str] = []

    def work() -> None:
        keys.extend(gen.next() for _ in range(5000))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 20,000 keys within a few ms of each other: unique by the counter (65,536 values)
    assert len(set(keys)) == len(keys)
