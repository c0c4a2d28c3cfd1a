"""Java doubles in bodies: what decodes can be sent on unchanged, even beyond a double's
range (found by the body fuzzer: ``"consumeTps": "1E310"`` decoded to infinity, was sent on
as ``null`` and read back as 0)."""

from __future__ import annotations

import pytest

from mqcore.protocol.bodies.base import BodyError
from mqcore.protocol.bodies.consumer_admin import BrokerStatsItem
from mqcore.protocol.bodies.stats import ConsumeStats


@pytest.mark.parametrize("tps", ['"1E310"', "1e400", '"-1E310"', '"NaN"', "null"])
def test_a_double_out_of_range_reads_as_zero_and_stays_so(tps: str) -> None:
    body = ConsumeStats.decode(f'{{"consumeTps": {tps}, "offsetTable": {{}}}}'.encode())
    assert body.consume_tps == 0.0
    assert ConsumeStats.decode(body.encode()).encode() == body.encode()


def test_numbers_and_numeric_text_are_read_as_java_does() -> None:
    assert ConsumeStats.decode(b'{"consumeTps": "2.5"}').consume_tps == 2.5
    assert ConsumeStats.decode(b'{"consumeTps": 7}').consume_tps == 7.0
    item = BrokerStatsItem.from_json({"sum": 3, "tps": "1E999", "avgpt": 0.5})
    assert (item.sum, item.tps, item.avgpt) == (3, 0.0, 0.5)


def test_text_that_is_no_number_is_a_body_error() -> None:
    with pytest.raises(BodyError):
        ConsumeStats.decode(b'{"consumeTps": "fast"}')
