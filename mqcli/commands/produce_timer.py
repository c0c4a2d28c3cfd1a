"""`mq produce --deliver-at TIME` / `--delay-for DURATION`: RocketMQ 5 timer messages.

``--deliver-at`` becomes ``TIMER_DELIVER_MS`` (one instant for every message of the
run); ``--delay-for`` becomes ``TIMER_DELAY_MS`` (each message waits that long from its
arrival at the broker, so ``--count 1000 --delay-for 90s`` spreads as the sends do).
A 5.x broker (and mq) parks such a message in its timer wheel; a time already past is
delivered at once. TIME is the grammar of ``--from``'s times without the ``@``:
``2026-01-02T10:00`` (local time; ``Z``/``+02:00`` allowed), an epoch in ms, ``+90s``
(from now), or a clock time today ``10:30`` / ``10:30:15`` (tomorrow when already past).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from mqcli.timespec import TimespecError, parse_duration, parse_position

__all__ = ["timer_properties"]

_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")


def _deliver_at(text: str, now_ms: int) -> int:
    raw = text.strip()
    m = _CLOCK.match(raw)
    if m:
        now = datetime.fromtimestamp(now_ms / 1000)
        hour, minute, second = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        try:
            when = now.replace(hour=hour, minute=minute, second=second, microsecond=0)
        except ValueError:
            raise TimespecError(f"bad clock time {raw!r}: use HH:MM or HH:MM:SS") from None
        if when <= now:
            when += timedelta(days=1)
        return int(when.timestamp() * 1000)
    try:
        return parse_position(raw if raw.startswith("@") else "@" + raw, now_ms=now_ms).value
    except TimespecError:
        raise TimespecError(
            f"bad --deliver-at {raw!r}: use 2026-01-02T10:00, 10:30, +90s or epoch ms"
        ) from None


def timer_properties(deliver_at: str | None, delay_for: str | None, now_ms: int) -> dict[str, str]:
    """The timer property a run's messages carry (raises TimespecError)."""
    if deliver_at is not None and delay_for is not None:
        raise TimespecError("give --deliver-at or --delay-for, not both")
    if deliver_at is not None:
        return {"TIMER_DELIVER_MS": str(_deliver_at(deliver_at, now_ms))}
    if delay_for is not None:
        text = delay_for.strip()
        ms = int(text) * 1000 if text.isdigit() else parse_duration(text)
        return {"TIMER_DELAY_MS": str(ms)}
    return {}
