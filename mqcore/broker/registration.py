"""`Registration`: when a broker registers with its name servers.

Every ``registerNameServerPeriod`` and soon after a change that routes depend on (a topic
created or changed, a permission, a role change), coalesced: a burst of changes is one
registration. The first one, at start, is made by the controller itself (4.9.8 returns
from start() only once the name servers route to the broker).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from mqcore.common.aio import wait_event

__all__ = ["Registration"]

log = logging.getLogger("mq.broker")


class Registration:
    """Coalesced registration requests and the loop that serves them."""

    def __init__(self, period_ms: int) -> None:
        self.period_ms = period_ms
        self._wanted: asyncio.Event | None = None
        self._force = False

    def arm(self) -> None:
        """Keep requests from now on (the broker's start, just before its first
        registration: a change made right after must not wait for the period)."""
        self._wanted = asyncio.Event()
        self._force = True

    def request(self, force: bool = True) -> None:
        """Register with every name server soon (``force``: even if nothing changed)."""
        if self._wanted is None:
            return  # not started: the first registration is at start
        self._force = self._force or force
        self._wanted.set()

    async def run(self, register: Callable[[bool], Awaitable[object]]) -> None:
        """Until cancelled: ``register(force)`` when asked, and every period."""
        if self._wanted is None:
            self.arm()
        wanted = self._wanted
        assert wanted is not None
        try:
            while True:
                await wait_event(wanted, self.period_ms / 1000)
                wanted.clear()
                force, self._force = self._force, True
                try:
                    await register(force)
                except Exception:
                    log.exception("registering with the name servers failed")
        finally:
            self._wanted = None
