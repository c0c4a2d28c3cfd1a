"""`LoopLagMonitor`: how late a server's event loop runs what is due, so no stall goes
unseen.

A broker or a name server serves every connection on one asyncio loop. Anything that
holds the loop (a large table encoded on it, a blocking call) delays every client by as
much, and nothing else shows it: requests time out and the log is silent. The monitor
asks the loop to wake it every ``interval`` seconds and records how late it woke. A
stall is seen when it ends, up to one interval short (the part of the stall that fell
inside the monitor's own sleep was not late).

What is kept: the largest lag of every 10-second slot for the last 10 minutes, from
which the largest of the last minute, of the last 10 minutes and of each of those
minutes are read; the latest lag; how many stalls passed the warning threshold. A
stall past the threshold is logged as a WARNING at most once per 10 s (the others are
counted into the next line), so a loop that stalls all the time does not flood the log.

:class:`LoopLagFigures` is what a reader gets; its :meth:`~LoopLagFigures.runtime_info`
and :meth:`~LoopLagFigures.from_runtime_info` are the ``loopLag*`` keys of the broker's
GET_BROKER_RUNTIME_INFO (``mq``'s own keys; a RocketMQ broker has none), so the broker
writes and the tools read them in one place.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mqcore.common.aio import cancel_and_wait

__all__ = [
    "DEFAULT_INTERVAL",
    "DEFAULT_WARN_MS",
    "HISTORY_MINUTES",
    "LoopLagFigures",
    "LoopLagMonitor",
]

log = logging.getLogger("mq.loop")

DEFAULT_INTERVAL = 0.1
"""Seconds between two wake-ups: 10 a second cost nothing and see a stall of 100 ms."""
DEFAULT_WARN_MS = 200.0
"""A stall this long is logged: a client's request waited a fifth of a second for it."""
WARN_EVERY_SECONDS = 10.0
"""At most one stall warning this often; the stalls in between are counted into it."""
SLOT_SECONDS = 10
"""The history's resolution: the largest lag of each 10-second slot is kept."""
HISTORY_MINUTES = 10
_SLOTS_PER_MINUTE = 60 // SLOT_SECONDS

_KEYS = {
    "last_ms": "loopLagMs",
    "max_ms_last_minute": "loopLagMaxMsLastMinute",
    "max_ms": "loopLagMaxMs",
    "per_minute_ms": "loopLagMaxMsPerMinute",
    "stalls": "loopStallCount",
}


@dataclass(frozen=True, slots=True)
class LoopLagFigures:
    """What the monitor saw, in milliseconds."""

    last_ms: float
    """The lag of the latest wake-up."""
    max_ms_last_minute: float
    """The largest lag of the last minute (in 10-second steps: 50 to 60 s back)."""
    max_ms: float
    """The largest lag of the last 10 minutes."""
    per_minute_ms: tuple[float, ...]
    """The largest lag of each of the last 10 minutes, oldest first (the last is the
    minute under way; 0 for a minute before the monitor started)."""
    stalls: int
    """Lags past the warning threshold since the monitor started."""

    def runtime_info(self) -> dict[str, str]:
        """The ``loopLag*`` keys of GET_BROKER_RUNTIME_INFO (whole milliseconds)."""
        return {
            _KEYS["last_ms"]: str(round(self.last_ms)),
            _KEYS["max_ms_last_minute"]: str(round(self.max_ms_last_minute)),
            _KEYS["max_ms"]: str(round(self.max_ms)),
            _KEYS["per_minute_ms"]: ",".join(str(round(v)) for v in self.per_minute_ms),
            _KEYS["stalls"]: str(self.stalls),
        }

    @classmethod
    def from_runtime_info(cls, info: Mapping[str, str]) -> LoopLagFigures | None:
        """The figures a broker's runtime info holds; None when it has none (RocketMQ,
        an older ``mq``) or they do not parse."""
        try:
            per_minute = info.get(_KEYS["per_minute_ms"], "")
            return cls(
                last_ms=float(info[_KEYS["last_ms"]]),
                max_ms_last_minute=float(info[_KEYS["max_ms_last_minute"]]),
                max_ms=float(info[_KEYS["max_ms"]]),
                per_minute_ms=tuple(float(v) for v in per_minute.split(",") if v),
                stalls=int(info.get(_KEYS["stalls"], "0")),
            )
        except (KeyError, ValueError):
            return None

    def to_json(self) -> dict[str, object]:
        """For ``--json`` output: the same figures, camelCase as the runtime keys."""
        return {
            "lastMs": self.last_ms,
            "maxMsLastMinute": self.max_ms_last_minute,
            "maxMs": self.max_ms,
            "maxMsPerMinute": list(self.per_minute_ms),
            "stalls": self.stalls,
        }


class LoopLagMonitor:
    """Measures the lag of the running loop (:meth:`run`) and keeps the figures.

    :meth:`record` is the whole bookkeeping and takes the time it is told, so it is
    tested with a made-up clock; :meth:`run` only sleeps and measures."""

    def __init__(
        self,
        *,
        interval: float = DEFAULT_INTERVAL,
        warn_ms: float = DEFAULT_WARN_MS,
        clock: Callable[[], float] = time.monotonic,
        server: str = "server",
        logger: logging.Logger = log,
    ) -> None:
        """``server`` names the process in the warning ("broker broker-a", "name
        server")."""
        if interval <= 0:
            raise ValueError(f"interval must be > 0, got {interval}")
        self.interval = interval
        self.warn_ms = warn_ms
        self.server = server
        self._clock = clock
        self._log = logger
        self._slots: deque[tuple[int, float]] = deque(maxlen=HISTORY_MINUTES * _SLOTS_PER_MINUTE)
        """``(slot number, largest lag ms)``, oldest first; slot = clock // SLOT_SECONDS."""
        self.last_ms = 0.0
        self.samples = 0
        """Lags recorded so far."""
        self.stalls = 0
        self._warned_at: float | None = None
        self._unwarned = 0
        self._unwarned_max = 0.0
        self._task: asyncio.Task[None] | None = None

    # -- bookkeeping ------------------------------------------------------------------------

    def record(self, lag_ms: float, now: float) -> None:
        """One measured lag at ``now`` (seconds on the monitor's clock)."""
        lag_ms = max(0.0, lag_ms)
        self.last_ms = lag_ms
        self.samples += 1
        slot = int(now // SLOT_SECONDS)
        if self._slots and self._slots[-1][0] == slot:
            if lag_ms > self._slots[-1][1]:
                self._slots[-1] = (slot, lag_ms)
        else:
            self._slots.append((slot, lag_ms))
        if lag_ms >= self.warn_ms:
            self.stalls += 1
            self._warn(lag_ms, now)

    def _warn(self, lag_ms: float, now: float) -> None:
        if self._warned_at is not None and now - self._warned_at < WARN_EVERY_SECONDS:
            self._unwarned += 1
            self._unwarned_max = max(self._unwarned_max, lag_ms)
            return
        more = ""
        if self._unwarned:
            more = (
                f"; {self._unwarned} more over {self.warn_ms:.0f} ms since the last "
                f"warning, the longest {self._unwarned_max:.0f} ms"
            )
        self._log.warning(
            "%s: the event loop stalled for %.0f ms (every request waited as long)%s",
            self.server,
            lag_ms,
            more,
        )
        self._warned_at, self._unwarned, self._unwarned_max = now, 0, 0.0

    def figures(self, now: float | None = None) -> LoopLagFigures:
        """The figures as of ``now`` (the monitor's clock by default)."""
        now = self._clock() if now is None else now
        current = int(now // SLOT_SECONDS)
        minute = current // _SLOTS_PER_MINUTE
        per_minute = [0.0] * HISTORY_MINUTES
        last_minute = 0.0
        for slot, lag in self._slots:
            if slot > current - _SLOTS_PER_MINUTE:
                last_minute = max(last_minute, lag)
            index = HISTORY_MINUTES - 1 - (minute - slot // _SLOTS_PER_MINUTE)
            if 0 <= index < HISTORY_MINUTES:
                per_minute[index] = max(per_minute[index], lag)
        return LoopLagFigures(
            last_ms=self.last_ms,
            max_ms_last_minute=last_minute,
            max_ms=max(per_minute),
            per_minute_ms=tuple(per_minute),
            stalls=self.stalls,
        )

    def runtime_info(self) -> dict[str, str]:
        return self.figures().runtime_info()

    # -- measuring --------------------------------------------------------------------------

    async def run(self) -> None:
        """Wake every ``interval`` and record how late, until cancelled."""
        clock = self._clock
        while True:
            due = clock() + self.interval
            await asyncio.sleep(self.interval)
            now = clock()
            self.record((now - due) * 1000, now)

    def start(self) -> None:
        """Measure the running loop in a task of its own (until :meth:`stop`)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name="loop-lag-monitor")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait([task])
