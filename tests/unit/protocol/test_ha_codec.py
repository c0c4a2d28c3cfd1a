"""The HA wire readers take bytes as TCP delivers them and refuse what no peer sends."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqcore.protocol.ha import (
    MAX_TRANSFER_BODY,
    HAProtocolError,
    ReportReader,
    TransferReader,
    encode_identity,
    encode_report,
    encode_transfer_header,
)


def test_reports_the_newest_complete_offset() -> None:
    reader = ReportReader()
    data = encode_report(10) + encode_report(20) + encode_report(30)[:5]
    assert reader.feed(data) == 20  # several at once are one acknowledgement
    assert reader.feed(encode_report(30)[5:]) == 30  # the split one completes
    assert reader.feed(b"") is None


def test_a_negative_report_is_refused() -> None:
    with pytest.raises(HAProtocolError):
        ReportReader().feed(encode_report(-1))


@given(
    frames=st.lists(
        st.tuples(st.integers(0, 2**62), st.binary(max_size=300)), min_size=1, max_size=8
    ),
    cuts=st.lists(st.integers(1, 50), max_size=20),
)
def test_transfers_survive_any_split(frames: list[tuple[int, bytes]], cuts: list[int]) -> None:
    stream = b"".join(encode_transfer_header(o, len(b)) + b for o, b in frames)
    reader = TransferReader()
    got: list[tuple[int, bytes]] = []
    pos = 0
    for cut in cuts:
        got += reader.feed(stream[pos : pos + cut])
        pos += cut
    got += reader.feed(stream[pos:])
    assert got == frames
    assert reader.buffered == 0


@pytest.mark.parametrize(
    "header",
    [encode_transfer_header(-5, 0), encode_transfer_header(0, MAX_TRANSFER_BODY + 1)],
)
def test_a_broken_transfer_header_is_refused(header: bytes) -> None:
    with pytest.raises(HAProtocolError):
        TransferReader().feed(header)


def test_a_slave_names_itself_only_where_identities_are_taken() -> None:
    data = encode_identity(3) + encode_report(0) + encode_report(4096)
    reader = ReportReader(identities=True)
    assert reader.feed(data[:5]) is None and reader.identity is None
    assert reader.feed(data[5:]) == 4096 and reader.identity == 3  # not lost in the batch
    assert ReportReader(identities=True).feed(encode_identity(0)) is None
    with pytest.raises(HAProtocolError):
        ReportReader().feed(encode_identity(3))  # a 4.x master: a negative report is an error
    twice = ReportReader(identities=True)
    twice.feed(encode_identity(1))
    with pytest.raises(HAProtocolError):
        twice.feed(encode_identity(2))
    with pytest.raises(ValueError):
        encode_identity(-1)
