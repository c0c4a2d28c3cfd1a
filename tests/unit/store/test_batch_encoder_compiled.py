"""The compiled batch encoder (``_batch_encoder.pyx``) equals the pure reference.

Regular batches are prepared and encoded by the twin itself into the same PreparedBatch
and the same bytes; anything else (a message the store refuses, odd values) goes to the
pure functions, so the errors are theirs, word for word.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.message.const import SysFlag
from mqcore.message.model import MessageExt
from mqcore.message.record import decode_records
from mqcore.store import batch_encoder as pure_module
from tests.support.compiled import compiled_twin, outcome

pure_prepare = pure_module.PURE["prepare"]
pure_encode = pure_module.PURE["encode"]
Pair = tuple[Callable[..., Any], Callable[..., Any]]


def never(*args: object) -> object:
    raise AssertionError("a regular batch was handed to the pure twin")


@pytest.fixture(scope="module")
def module() -> ModuleType:
    return compiled_twin("mqcore.store._batch_encoder")


@pytest.fixture(scope="module")
def twin(module: ModuleType) -> Pair:
    pair: Pair = module.encoders(pure_prepare, pure_encode, pure_module.PreparedBatch)
    return pair


@pytest.fixture(scope="module")
def alone(module: ModuleType) -> Pair:
    pair: Pair = module.encoders(never, never, pure_module.PreparedBatch)
    return pair


hosts = st.sampled_from([("127.0.0.1", 0), ("10.0.0.1", 10911), ("::1", 9876)])
text = st.text(
    st.characters(exclude_characters="\x01\x02", exclude_categories=("Cs",)), min_size=1, max_size=8
)
properties = st.dictionaries(text, text | st.none(), max_size=4)


@st.composite
def messages(draw: Any, topic: str = "TopicTest", queue_id: int = 3) -> MessageExt:
    return MessageExt(
        topic=topic,
        body=draw(st.binary(max_size=64)),
        flag=draw(st.integers(-(2**31), 2**31 - 1)),
        properties=draw(properties),
        queue_id=queue_id,
        sys_flag=draw(st.sampled_from([0, 1, 4, 8, 12, 0x30])),
        born_timestamp=draw(st.integers(0, 2**63 - 1)),
        born_host=draw(hosts),
        store_host=draw(hosts),
        reconsume_times=draw(st.integers(0, 16)),
        prepared_transaction_offset=draw(st.integers(0, 2**40)),
    )


@settings(max_examples=150, deadline=None)
@given(
    st.lists(messages(), min_size=1, max_size=5),
    st.integers(0, 2**40),
    st.integers(0, 2**40),
    st.integers(0, 2**62),
)
def test_compiled_encoder_equals_the_pure_one(
    alone: Pair, batch: list[MessageExt], phy: int, queue_offset: int, store_ts: int
) -> None:
    prepare, encode = alone  # regular batches: the pure twin is never called
    prepared = prepare(batch, 4 << 20)
    assert prepared == pure_prepare(batch, 4 << 20)
    assert encode(prepared, phy, queue_offset, store_ts) == pure_encode(
        prepared, phy, queue_offset, store_ts
    )
    data = encode(prepared, phy, queue_offset, store_ts)[0]
    decoded = decode_records(data, decompress=False)
    assert [m.body for m in decoded] == [m.body for m in batch]
    assert [m.store_timestamp for m in decoded] == [store_ts] * len(batch)


def odd_batches() -> list[list[MessageExt]]:
    def msg(**fields: Any) -> MessageExt:
        base: dict[str, Any] = {"topic": "T", "body": b"b", "queue_id": 1, "properties": {}}
        return MessageExt(**(base | fields))

    return [
        [msg(topic="")],  # refused: empty topic
        [msg(topic="t" * 128)],
        [msg(), msg(queue_id=2)],  # one batch, one queue
        [msg(), msg(topic="U")],
        [msg(body=b"x" * 101)],  # over max_body
        [msg(properties={"k": "v" * 40_000})],  # PROPERTIES_SIZE_EXCEEDED
        [msg(properties={"k": 5})],  # a value that is not text: formatted as the pure does
        [msg(properties={"k": "\ud800"})],  # no UTF-8 form
        [msg(properties=None)],
        [msg(born_host=("not an ip", 1))],
        [msg(flag=2**31)],  # fits no i32: the pure encode's struct error
        [msg(sys_flag=True)],
        [msg(born_timestamp=1.5)],
        [msg(body="text")],
        [msg(body=bytearray(b"ba")), msg(body=memoryview(b"mv"))],
        [msg(body=memoryview(b"abcdefgh").cast("i"))],  # len() counts items, not bytes
        [],
    ]


@pytest.mark.parametrize("batch", odd_batches())
def test_odd_batches_give_what_the_pure_twin_gives(twin: Pair, batch: list[MessageExt]) -> None:
    prepare, encode = twin
    expected = outcome(pure_prepare, batch, 100)
    assert outcome(prepare, batch, 100) == expected
    if expected[0] == "ok":
        prepared = expected[1]
        for args in ((prepared, 1000, 5, 99), (prepared, -1, 5, 99), (prepared, 0, 0, 2**64)):
            assert outcome(encode, *args) == outcome(pure_encode, *args)


def test_transactional_records_take_no_queue_offset(alone: Pair) -> None:
    prepare, encode = alone
    batch = [
        MessageExt(topic="T", body=b"1", queue_id=0, sys_flag=SysFlag.TRANSACTION_PREPARED_TYPE),
        MessageExt(topic="T", body=b"2", queue_id=0),
        MessageExt(topic="T", body=b"3", queue_id=0, sys_flag=SysFlag.TRANSACTION_ROLLBACK_TYPE),
    ]
    prepared = prepare(batch, 100)
    got = encode(prepared, 0, 7, 1)
    assert got == pure_encode(prepared, 0, 7, 1)
    assert got[2] == [-1, 7, -1] and got[3] == 8
