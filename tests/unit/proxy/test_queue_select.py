"""Which queue a gRPC send goes to: Guava's consistent hash, bit for bit."""

from __future__ import annotations

import pytest

from mqcore.common.javahash import java_string_hash
from mqcore.proxy.queue_select import QueueSelector, consistent_hash

# Computed with Guava 32.1.3's Hashing.consistentHash (what RocketMQ 5's proxy calls).
GUAVA = [
    ((-5, 4), 0), ((-4, 4), 2), ((-3, 4), 1), ((-2, 4), 3), ((-1, 4), 2),
    ((0, 4), 0), ((1, 4), 0), ((2, 4), 3), ((3, 4), 3), ((4, 4), 1),
    ((5, 4), 1), ((6, 4), 2), ((7, 4), 0), ((8, 4), 0), ((9, 4), 2),
    ((java_string_hash("1"), 8), 3), ((java_string_hash("2"), 8), 2),
    ((java_string_hash("order-42"), 16), 10), ((-123456789, 1000), 502),
]  # fmt: skip


@pytest.mark.parametrize(("args", "bucket"), GUAVA)
def test_consistent_hash_is_guavas(args: tuple[int, int], bucket: int) -> None:
    assert consistent_hash(*args) == bucket


def test_consistent_hash_moves_few_keys_when_a_bucket_is_added() -> None:
    moved = sum(consistent_hash(k, 10) != consistent_hash(k, 11) for k in range(10_000))
    assert 600 < moved < 1200  # about 1/11 of the keys


def test_consistent_hash_refuses_no_bucket() -> None:
    with pytest.raises(ValueError):
        consistent_hash(1, 0)


def test_a_message_group_keeps_its_queue_and_others_go_round_robin() -> None:
    selector = QueueSelector()
    assert {selector.select(4, "g1") for _ in range(5)} == {
        consistent_hash(java_string_hash("g1"), 4)
    }
    assert sorted(selector.select(4, "") for _ in range(8)) == [0, 0, 1, 1, 2, 2, 3, 3]
    with pytest.raises(ValueError):
        selector.select(0, "")
