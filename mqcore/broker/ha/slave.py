"""`HAClient`: a slave copies its master's commit log (RocketMQ 4.x ``HAClient``).

The slave connects to the master's HA address, reports its commit log end, and appends
every transfer byte for byte at the offset the master gives, so its files equal the
master's; the store then dispatches the new records into consume queues and the index.
It reports its new end after every append, and every ``haSendHeartbeatInterval``.

A transfer that does not start where this log ends (while the log is not empty) closes
the connection, as in 4.9.8. Unlike 4.9.8 the report goes out as soon as the connection
is up (4.9.8 waits one heartbeat interval), a master silent for
``haHousekeepingInterval`` is dropped (a dead host sends no FIN), and a slave found ahead
of its master at connect time is truncated to the master's end before replicating, so
it never appends the master's new bytes after records the master no longer has (the
dropped records are saved aside: they may have been acknowledged under SYNC_MASTER).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable

from mqcore.common.aio import cancel_and_wait, wait_event
from mqcore.errors import StoreError
from mqcore.protocol.ha import HAProtocolError, TransferReader, encode_identity, encode_report
from mqcore.store.message_store import MessageStore
from mqcore.store.store_config import MessageStoreConfig

__all__ = ["HAClient"]

log = logging.getLogger("mq.broker.ha")

_READ_CHUNK = 1024 * 1024
_CONNECT_TIMEOUT = 3.0
_RETRY_DELAY = 1.0

MasterEnd = Callable[[], Awaitable[int | None]]
"""Asks the master (over remoting) where its commit log ends; None when unknown."""


class HAClient:
    """Keeps one connection to the master's HA port while the broker runs."""

    def __init__(
        self,
        store: MessageStore,
        config: MessageStoreConfig,
        *,
        master_end: MasterEnd | None = None,
        ssl_context: ssl.SSLContext | None = None,
        identity: Callable[[], int | None] | None = None,
    ) -> None:
        """``ssl_context``: replicate over TLS (the broker's ``tls.enable``)."""
        self._store = store
        self._ssl_context = ssl_context
        self._config = config
        self._master_end = master_end
        self._identity = identity
        """Controller mode: this broker's id, named to the master first on a connection."""
        self.master_address: str | None = config.ha_master_address
        self.connected = False
        self.reported_offset = 0
        self._address_changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="ha-client")

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])
            self._task = None

    @property
    def running(self) -> bool:
        """Between :meth:`start` and :meth:`close` (while the broker is a slave)."""
        return self._task is not None

    def update_master_address(self, address: str | None) -> None:
        """From the name server's registration answer (unless ``haMasterAddress`` is set)."""
        if address and address != self.master_address:
            log.info("HA master address %s -> %s", self.master_address, address)
            self.master_address = address
            self._address_changed.set()

    async def _run(self) -> None:
        while True:
            address = self.master_address
            self._address_changed.clear()
            if not address:
                await self._address_changed.wait()
                continue
            await self._follow(address)
            if self.master_address == address:
                await wait_event(self._address_changed, _RETRY_DELAY)

    async def _follow(self, address: str) -> None:
        """One session with the master at ``address``, ended at once when another master
        is named: a connection to a deposed master must not go on acknowledging what it
        writes (it can stay open for a whole ``haHousekeepingInterval`` when that master
        was cut off the network, and resume when the network heals)."""
        session = asyncio.create_task(self._session(address), name="ha-session")
        changed = asyncio.create_task(self._address_changed.wait(), name="ha-master-changed")
        try:
            await asyncio.wait({session, changed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait([session, changed])
            self.connected = False
        if not session.cancelled() and (exc := session.exception()) is not None:
            if not isinstance(exc, (OSError, TimeoutError, HAProtocolError, StoreError)):
                raise exc
            log.warning("replication from master %s stopped: %s", address, exc)
        elif session.cancelled():
            log.info("replication from %s stopped: the master is %s", address, self.master_address)

    async def _session(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        await self._truncate_if_ahead()
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, int(port), ssl=self._ssl_context), _CONNECT_TIMEOUT
        )
        try:
            self.connected = True
            log.info("replicating from master %s at offset %d", address, self._store_end())
            await self._replicate(reader, writer)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _truncate_if_ahead(self) -> None:
        if self._master_end is None:
            return
        try:
            master_end = await self._master_end()
        except Exception as exc:
            log.info("could not ask the master where its commit log ends: %s", exc)
            return
        mine = self._store_end()
        if master_end is not None and 0 < master_end < mine:
            saved = self._store.truncate_replica(master_end)
            log.warning(
                "this slave held %d bytes its master does not (master ends at %d, slave "
                "at %d): truncated to the master; the dropped records are kept in %s",
                mine - master_end,
                master_end,
                mine,
                saved,
            )

    def _store_end(self) -> int:
        return self._store.max_phy_offset

    async def _replicate(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heartbeat = self._config.ha_send_heartbeat_interval / 1000
        silence = self._config.ha_housekeeping_interval / 1000
        frames = TransferReader()
        broker_id = self._identity() if self._identity is not None else None
        if broker_id is not None:
            writer.write(encode_identity(broker_id))
        self._report(writer, self._store_end())
        beat = asyncio.create_task(self._heartbeat(writer, heartbeat), name="ha-heartbeat")
        try:
            while True:
                data = await asyncio.wait_for(reader.read(_READ_CHUNK), silence)
                if not data:
                    raise OSError("master closed the connection")
                for offset, body in frames.feed(data):
                    end = self._store_end()
                    if end != 0 and end != offset:
                        raise HAProtocolError(
                            f"master sent offset {offset}, this commit log ends at {end}"
                        )
                    if body:
                        self._store.append_replicated(offset, body)
                end = self._store_end()
                if end > self.reported_offset:
                    # acknowledge first (a SYNC_MASTER send waits for it), then dispatch
                    self._report(writer, end)
                self._store.dispatch_replicated()
                await writer.drain()
        finally:
            await cancel_and_wait([beat])

    def _report(self, writer: asyncio.StreamWriter, offset: int) -> None:
        writer.write(encode_report(offset))
        self.reported_offset = offset

    async def _heartbeat(self, writer: asyncio.StreamWriter, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            self._report(writer, self._store_end())
