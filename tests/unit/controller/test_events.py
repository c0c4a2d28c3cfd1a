"""Events are what the Raft log carries: they round-trip through their encoding, and
anything else is refused with EventDecodeError, never a crash elsewhere."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqcore.controller.events import (
    AlterSyncStateSet,
    ApplyBrokerId,
    CleanBrokerData,
    ElectMaster,
    Event,
    EventDecodeError,
    UpdateBrokerAddress,
    decode_events,
    encode_events,
)
from mqcore.controller.state import ReplicasState

ids = st.integers(min_value=-(2**63), max_value=2**63 - 1)
ints = st.integers(min_value=0, max_value=2**31 - 1)
text = st.text(max_size=20)
events: st.SearchStrategy[Event] = st.one_of(
    st.builds(ApplyBrokerId, text, text, ids, text, text),
    st.builds(UpdateBrokerAddress, text, text, ids, text),
    st.builds(ElectMaster, text, st.one_of(st.none(), ids), ints),
    st.builds(AlterSyncStateSet, text, st.lists(ids).map(tuple), ints, ints),
    st.builds(CleanBrokerData, text, st.lists(ids).map(tuple)),
)


@given(st.lists(events, max_size=8))
def test_events_round_trip(batch: list[Event]) -> None:
    assert decode_events(encode_events(batch)) == batch


def test_the_encoding_is_compact_and_readable() -> None:
    encoded = encode_events([ElectMaster("broker-a", 2, 1)])
    assert encoded == b'[["elect-master",["broker-a",2,1]]]'


@given(st.binary(max_size=64))
def test_arbitrary_bytes_never_crash_the_decoder(data: bytes) -> None:
    try:
        decode_events(data)
    except EventDecodeError:
        pass


@pytest.mark.parametrize(
    "data",
    [
        b"{}",
        b"[1]",
        b'[["nope",[]]]',
        b'[["elect-master",["a",1]]]',
        b'[["elect-master",["a","1",1]]]',
        b'[["elect-master",["a",true,1]]]',
        b'[["alter-sync-state-set",["a",["1"],1,1]]]',
        b'[["clean-broker-data",[1,[]]]]',
    ],
)
def test_malformed_entries_are_named(data: bytes) -> None:
    with pytest.raises(EventDecodeError):
        decode_events(data)


def test_a_malformed_snapshot_is_refused() -> None:
    with pytest.raises(EventDecodeError):
        ReplicasState.from_snapshot(b'[{"brokerName": "a"}]')
