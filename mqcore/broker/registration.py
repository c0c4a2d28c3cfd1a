"""`Registration`: when a broker registers with its name servers, and with what.

Every ``registerNameServerPeriod`` the whole topic table (forced when ``forceRegister``,
as in 4.9.8; otherwise only to name servers whose data version differs). After a change
that routes depend on, soon and coalesced: a burst of changes is one registration. A
change to some topics (created or updated) sends only those topics, as 4.9.8's
``registerIncrementBrokerData``: its cost does not grow with the table. Other changes
(a deletion, a permission, a role change) send the whole table. The first registration,
at start, is made by the controller itself (4.9.8 returns from start() only once the
name servers route to the broker).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

from mqcore.common.aio import wait_event

__all__ = ["Registration"]

log = logging.getLogger("mq.broker")


class Registration:
    """Coalesced registration requests and the loop that serves them."""

    def __init__(self, period_ms: int, *, force_register: bool = True) -> None:
        self.period_ms = period_ms
        self.force_register = force_register
        """Whether the periodic registration skips the data-version check."""
        self._wanted: asyncio.Event | None = None
        self._full = False
        self._force = False
        self._topics: dict[str, None] = {}  # ordered set of changed topics

    def arm(self) -> None:
        """Keep requests from now on (the broker's start, just before its first
        registration: a change made right after must not wait for the period)."""
        self._wanted = asyncio.Event()
        self._full = False  # the start registers the whole table itself
        self._force = True  # but the first whole registration after it skips no one

    def request(self, force: bool = True) -> None:
        """Register the whole table with every name server soon (``force``: even where
        the data version has not changed)."""
        if self._wanted is None:
            return  # not started: the first registration is at start
        self._full = True
        self._force = self._force or force
        self._wanted.set()

    def request_topics(self, topics: Iterable[str]) -> None:
        """Register ``topics`` (created or changed) soon, without the rest of the table."""
        if self._wanted is None:
            return
        for topic in topics:
            self._topics[topic] = None
        self._wanted.set()

    async def run(
        self,
        register: Callable[[bool], Awaitable[object]],
        register_topics: Callable[[list[str]], Awaitable[bool]] | None = None,
    ) -> None:
        """Until cancelled: ``register(force)`` for the whole table (when asked, and
        every period) or ``register_topics(names)`` for changed topics alone. When an
        increment fails somewhere (False), the next periodic registration is forced."""
        if self._wanted is None:
            self.arm()
        wanted = self._wanted
        assert wanted is not None
        try:
            while True:
                asked = await wait_event(wanted, self.period_ms / 1000)
                wanted.clear()
                try:
                    await self._serve(asked, register, register_topics)
                except Exception:
                    log.exception("registering with the name servers failed")
        finally:
            self._wanted = None

    async def _serve(
        self,
        asked: bool,
        register: Callable[[bool], Awaitable[object]],
        register_topics: Callable[[list[str]], Awaitable[bool]] | None,
    ) -> None:
        if not asked or self._full or register_topics is None:
            force = self._force or (not asked and self.force_register)
            self._full, self._force, self._topics = False, False, {}
            await register(force)
            return
        names, self._topics = list(self._topics), {}
        if names and not await register_topics(names):
            self._force = True  # the next registration sends the whole table everywhere
