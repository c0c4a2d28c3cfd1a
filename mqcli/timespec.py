"""The `--from` / `--to` grammar of `mq consume` and `mq query` (rpk's and kcat's, in one).

=============================  ===============================================
``first`` (start, beginning)   the oldest message still in the queue
``last`` (end, latest)         the end of the queue: only messages to come
``42``                         queue offset 42 (clamped to the queue)
``+N``                         N messages after the first
``-N``                         N messages before the end
``@2026-01-02T10:00``          a local time (ISO 8601; ``Z``/``+02:00`` allowed;
                               RocketMQ's ``2026-01-02#10:00:00:000`` too)
``@1767348000000``             epoch milliseconds (10 digits or fewer: seconds)
``@-1h`` / ``@-1h30m``         a time relative to now (``ms s m h d w``)
``now``                        the current time
=============================  ===============================================

A position is parsed once (:func:`parse_position`) and turned into an offset per queue
(:meth:`Position.offset_in`) or into a time (:meth:`Position.time_ms`). Store times are
only approximately ordered within a queue, so callers doing time ranges still compare
each message's store time with the bounds.
"""

from __future__ import annotations

import enum
import re
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from mqcore.protocol.bodies import MessageQueue

__all__ = ["Kind", "Position", "TimespecError", "parse_duration", "parse_position"]

GRAMMAR = (
    "use first, last, an offset (42), +N (N after the first), -N (N before the end), "
    "a time @2026-01-02T10:00 or @<epoch ms>, a duration @-1h, or now"
)

_FIRST = frozenset({"first", "start", "beginning", "earliest", "oldest", "begin"})
_LAST = frozenset({"last", "end", "latest", "newest"})
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_ROCKETMQ_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})#(\d{2}:\d{2}:\d{2}):(\d{3})$")


class TimespecError(ValueError):
    """A position that does not parse; the message says what is accepted."""


class Kind(enum.Enum):
    FIRST = "first"
    LAST = "last"
    OFFSET = "offset"
    AFTER_FIRST = "after-first"
    BEFORE_LAST = "before-last"
    TIME = "time"


class OffsetAPI(Protocol):
    async def min_offset(self, mq: MessageQueue) -> int: ...

    async def max_offset(self, mq: MessageQueue) -> int: ...

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int: ...


@dataclass(frozen=True, slots=True)
class Position:
    """A parsed position; ``value`` is the offset, N, or epoch ms depending on ``kind``."""

    kind: Kind
    value: int = 0
    text: str = ""

    @property
    def explicit(self) -> bool:
        """Anything but first/last: it overrides a group's committed offsets."""
        return self.kind not in (Kind.FIRST, Kind.LAST)

    @property
    def is_time(self) -> bool:
        return self.kind is Kind.TIME

    def clamp(self, low: int, high: int) -> int:
        """The offset within ``low..high`` for the offset kinds (not TIME)."""
        if self.kind is Kind.FIRST:
            offset = low
        elif self.kind is Kind.LAST:
            offset = high
        elif self.kind is Kind.OFFSET:
            offset = self.value
        elif self.kind is Kind.AFTER_FIRST:
            offset = low + self.value
        elif self.kind is Kind.BEFORE_LAST:
            offset = high - self.value
        else:
            raise ValueError("a time has no offset without asking the broker")
        return min(max(offset, low), high)

    async def offset_in(self, api: OffsetAPI, mq: MessageQueue) -> int:
        """The queue offset this position names in ``mq`` (asks its broker)."""
        low, high = await api.min_offset(mq), await api.max_offset(mq)
        if self.kind is Kind.TIME:
            if high <= low:
                return high
            # The broker answers the nearest message; callers skip older ones.
            return min(max(await api.search_offset(mq, self.value), low), high)
        return self.clamp(low, high)

    def time_ms(self, now_ms: int | None = None) -> int:
        """As a time (for index queries): first = 0, last = now. Offsets raise."""
        if self.kind is Kind.TIME:
            return self.value
        if self.kind is Kind.FIRST:
            return 0
        if self.kind is Kind.LAST:
            return now_ms if now_ms is not None else int(time.time() * 1000)
        raise TimespecError(
            f"{self.text!r} is an offset, but a time is needed here: "
            "use @2026-01-02T10:00, @<epoch ms>, @-1h, first or now"
        )

    def __str__(self) -> str:
        return self.text or self.kind.value


def parse_duration(text: str) -> int:
    """``1h30m`` / ``90s`` / ``250ms`` -> milliseconds (raises TimespecError)."""
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS_MS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise TimespecError(f"bad duration {text!r}: use e.g. 90s, 15m, 1h30m, 2d")
    return int(total)


def _parse_time(body: str, original: str, now_ms: int) -> int:
    if body[:1] and body[0] in "+-":
        sign = -1 if body[0] == "-" else 1
        try:
            return now_ms + sign * parse_duration(body[1:])
        except TimespecError:
            raise TimespecError(
                f"bad relative time {original!r}: use e.g. @-90s, @-15m, @-1h30m, @-2d"
            ) from None
    if body.isdigit():
        number = int(body)
        return number * 1000 if len(body) <= 11 else number
    m = _ROCKETMQ_TIME.match(body)
    if m:
        body = f"{m.group(1)}T{m.group(2)}.{m.group(3)}"
    try:
        when = datetime.fromisoformat(body.replace("Z", "+00:00"))
    except ValueError:
        raise TimespecError(f"bad time {original!r}: {GRAMMAR}") from None
    return int(when.timestamp() * 1000)


def parse_position(text: str, *, now_ms: int | None = None) -> Position:
    """Parse one position of the grammar in the module docstring."""
    raw = text.strip()
    word = raw.lower()
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    if not raw:
        raise TimespecError(f"empty position: {GRAMMAR}")
    if word in _FIRST:
        return Position(Kind.FIRST, 0, raw)
    if word in _LAST:
        return Position(Kind.LAST, 0, raw)
    if word == "now":
        return Position(Kind.TIME, now, raw)
    if raw.isdigit():
        return Position(Kind.OFFSET, int(raw), raw)
    if raw[0] in "+-" and raw[1:].isdigit():
        kind = Kind.AFTER_FIRST if raw[0] == "+" else Kind.BEFORE_LAST
        return Position(kind, int(raw[1:]), raw)
    if raw.startswith("@"):
        return Position(Kind.TIME, _parse_time(raw[1:], raw, now), raw)
    if re.match(r"^\d{4}-\d{2}-\d{2}", raw):
        return Position(Kind.TIME, _parse_time(raw, raw, now), raw)
    raise TimespecError(f"bad position {raw!r}: {GRAMMAR}")
