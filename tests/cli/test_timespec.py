"""The --from/--to grammar: every form, the offsets it names, and its errors."""

from __future__ import annotations

from datetime import datetime

import pytest

from mqcli.timespec import Kind, Position, TimespecError, parse_duration, parse_position
from mqcore.protocol.bodies import MessageQueue

NOW = 1_767_348_000_000  # 2026-01-02T10:00:00Z


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("first", Kind.FIRST, 0),
        ("Beginning", Kind.FIRST, 0),
        ("start", Kind.FIRST, 0),
        ("last", Kind.LAST, 0),
        ("end", Kind.LAST, 0),
        ("42", Kind.OFFSET, 42),
        ("+3", Kind.AFTER_FIRST, 3),
        ("-5", Kind.BEFORE_LAST, 5),
        ("now", Kind.TIME, NOW),
        ("@-1h", Kind.TIME, NOW - 3_600_000),
        ("@-1h30m", Kind.TIME, NOW - 5_400_000),
        ("@+90s", Kind.TIME, NOW + 90_000),
        ("@-250ms", Kind.TIME, NOW - 250),
        ("@1767348000000", Kind.TIME, 1_767_348_000_000),
        ("@1767348000", Kind.TIME, 1_767_348_000_000),
        ("@2026-01-02T10:00Z", Kind.TIME, NOW),
        ("@2026-01-02T12:00:00+02:00", Kind.TIME, NOW),
    ],
)
def test_forms(text: str, kind: Kind, value: int) -> None:
    pos = parse_position(text, now_ms=NOW)
    assert (pos.kind, pos.value) == (kind, value)
    assert str(pos) == text


def test_local_times_and_rocketmq_format() -> None:
    local = int(datetime(2026, 1, 2, 10, 0).timestamp() * 1000)
    assert parse_position("@2026-01-02T10:00").value == local
    assert parse_position("2026-01-02 10:00").value == local
    assert parse_position("@2026-01-02#10:00:00:000").value == local
    assert parse_position("@2026-01-02").value == int(datetime(2026, 1, 2).timestamp() * 1000)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty position"),
        ("soon", "bad position 'soon'"),
        ("-", "bad position"),
        ("+x", "bad position"),
        ("@tomorrow", "bad time '@tomorrow'"),
        ("@-1x", "bad relative time '@-1x'"),
        ("@2026-13-40", "bad time"),
        ("@", "bad time '@'"),
    ],
)
def test_errors_say_what_is_accepted(text: str, needle: str) -> None:
    with pytest.raises(TimespecError) as err:
        parse_position(text)
    assert needle in str(err.value)


def test_clamp_and_explicit() -> None:
    assert parse_position("first").clamp(3, 10) == 3
    assert parse_position("last").clamp(3, 10) == 10
    assert parse_position("5").clamp(3, 10) == 5
    assert parse_position("50").clamp(3, 10) == 10
    assert parse_position("+2").clamp(3, 10) == 5
    assert parse_position("-2").clamp(3, 10) == 8
    assert parse_position("-20").clamp(3, 10) == 3
    assert not parse_position("first").explicit and not parse_position("last").explicit
    assert parse_position("7").explicit and parse_position("@-1h").explicit


def test_time_ms_for_index_queries() -> None:
    assert parse_position("first").time_ms(NOW) == 0
    assert parse_position("last").time_ms(NOW) == NOW
    assert parse_position("@-1m", now_ms=NOW).time_ms() == NOW - 60_000
    with pytest.raises(TimespecError, match="is an offset, but a time is needed"):
        parse_position("42").time_ms()


def test_parse_duration() -> None:
    assert parse_duration("2d") == 172_800_000
    assert parse_duration("1.5s") == 1500
    for bad in ("", "1", "h", "1h 2m", "1y"):
        with pytest.raises(TimespecError):
            parse_duration(bad)


class FakeAPI:
    async def min_offset(self, mq: MessageQueue) -> int:
        return 2

    async def max_offset(self, mq: MessageQueue) -> int:
        return 12

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return timestamp_ms // 1000


async def test_offset_in_asks_the_broker() -> None:
    mq = MessageQueue("T", "b", 0)
    api = FakeAPI()
    assert await parse_position("-3").offset_in(api, mq) == 9
    assert await Position(Kind.TIME, 7_000).offset_in(api, mq) == 7
    assert await Position(Kind.TIME, 99_000).offset_in(api, mq) == 12
