"""Ctrl-C and SIGTERM for every mode of `mq consume`: the first asks the command to stop
cleanly (offsets committed, unprinted messages given back), a second exits at once."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

from mqcli.output import err_console

__all__ = ["install_stop"]


def install_stop(stop: asyncio.Event, hits: list[int]) -> Callable[[], None]:
    """SIGINT/SIGTERM set ``stop`` (clean commit); a second Ctrl-C exits at once."""
    loop = asyncio.get_running_loop()

    def handler() -> None:
        hits[0] += 1
        if hits[0] > 1:
            err_console.print("interrupted again: exiting without committing")
            raise SystemExit(130)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, handler)

    def remove() -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)

    return remove
