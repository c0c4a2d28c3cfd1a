"""`mq produce --delay LEVEL`, checked before anything is sent.

A broker (4.9.8 and mq alike) sends a delay level above its highest at that highest level
without a word, so ``--delay 99`` would quietly mean two hours. Levels up to
:data:`DEFAULT_LEVELS` are every broker's (RocketMQ's default ``messageDelayLevel``); a
higher one is looked up in the masters' own ``messageDelayLevel`` (GET_BROKER_CONFIG),
and refused with the levels there are when some master does not have it.
"""

from __future__ import annotations

from collections.abc import Sequence

from mqcli.commands.admin_util import admin_session
from mqcli.output import fail

__all__ = ["DEFAULT_LEVELS", "check_delay_level", "levels_text"]

DEFAULT_LEVELS = (
    "1s", "5s", "10s", "30s", "1m", "2m", "3m", "4m", "5m", "6m", "7m", "8m", "9m", "10m",
    "20m", "30m", "1h", "2h",
)  # fmt: skip
"""RocketMQ's default ``messageDelayLevel``: level 1 is 1 s, level 18 two hours."""


def levels_text(levels: Sequence[str]) -> str:
    """``1=1s 2=5s ... 18=2h``."""
    return " ".join(f"{n}={delay}" for n, delay in enumerate(levels, 1))


async def check_delay_level(namesrv: str, level: int) -> None:
    """End the command with one line when a master of the cluster has no delay
    ``level`` (levels up to 18 are not looked up: every broker has them)."""
    if level <= len(DEFAULT_LEVELS):
        return
    async with admin_session(namesrv) as admin:
        masters = await admin.masters_of()
        for name, addr in sorted(masters.items()):
            config = await admin.broker_config(addr)
            levels = config.get("messageDelayLevel", " ".join(DEFAULT_LEVELS)).split()
            if level > len(levels):
                fail(
                    f"--delay {level}: broker {name} has {len(levels)} delay levels "
                    f"({levels_text(levels)}) and would send it at level {len(levels)}",
                    code=2,
                    hint=f"give a level from 1 to {len(levels)}, or 0 for no delay",
                )
