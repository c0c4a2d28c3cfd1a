"""HA streams of arbitrary bytes: offsets, frames or HAProtocolError (test_ha_codec.py
covers valid streams split anywhere; this is the hostile side)."""

from __future__ import annotations

import struct

from fuzzing import fuzz, mutated
from hypothesis import given
from hypothesis import strategies as st

from mqcore.protocol.ha import (
    MAX_TRANSFER_BODY,
    TRANSFER_HEADER,
    HAProtocolError,
    ReportReader,
    TransferReader,
)

TRANSFERS = st.lists(
    st.tuples(st.integers(0, 2**62), st.binary(max_size=40)), min_size=1, max_size=4
).map(lambda frames: b"".join(struct.pack(">qi", o, len(b)) + b for o, b in frames))


def chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    out, pos = [], 0
    for cut in cuts:
        out.append(data[pos : pos + cut])
        pos += cut
    return [*out, data[pos:]]


@fuzz(200)
@given(st.one_of(mutated(TRANSFERS), st.binary(max_size=200)), st.lists(st.integers(0, 30)))
def test_transfer_reader(data: bytes, cuts: list[int]) -> None:
    reader = TransferReader()
    try:
        for chunk in chunks(data, cuts):
            for offset, body in reader.feed(chunk):
                assert offset >= 0 and len(body) <= MAX_TRANSFER_BODY
            # Never holds more than one announced frame it is still waiting for.
            assert reader.buffered < TRANSFER_HEADER.size + MAX_TRANSFER_BODY
    except HAProtocolError:
        pass


@fuzz(150)
@given(st.binary(max_size=100), st.lists(st.integers(0, 20)))
def test_report_reader(data: bytes, cuts: list[int]) -> None:
    reader = ReportReader()
    try:
        for chunk in chunks(data, cuts):
            offset = reader.feed(chunk)
            assert offset is None or offset >= 0
    except HAProtocolError:
        pass
