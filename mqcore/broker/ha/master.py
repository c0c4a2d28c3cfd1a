"""`HAService`: a master streams its commit log to slaves (RocketMQ 4.x ``HAService``).

Each slave connection has a reader (its reports: where to start, then acknowledgements)
and a writer (raw commit log bytes from where the slave stands, at most
``haTransferBatchSize`` per transfer and never across a file boundary; a zero-size
heartbeat after ``haSendHeartbeatInterval`` of silence). The highest offset any slave
acknowledged is ``push2slave_max_offset``; SYNC_MASTER sends wait on it.

As in RocketMQ 4.9.8: a slave reporting 0 gets the master's last file from its start
(not the whole history); a later report past the master's end closes the connection; an
offset the master no longer holds gets heartbeats only; a connection silent for
``haHousekeepingInterval`` is closed. Each connection fails alone: garbage, a lying
offset or a reader that never drains affect only their own connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from mqcore.common.aio import cancel_and_wait, wait_event
from mqcore.protocol.ha import HAProtocolError, ReportReader, encode_transfer_header
from mqcore.remoting.tls import ServerTls, TlsListener
from mqcore.store.commitlog import CommitLog
from mqcore.store.store_config import MessageStoreConfig

__all__ = ["HAConnection", "HAService"]

log = logging.getLogger("mq.broker.ha")

_READ_CHUNK = 64 * 1024
_WRITE_HIGH_WATER = 4 * 1024 * 1024


class HAService:
    """The master's replication endpoint on ``haListenPort``."""

    def __init__(
        self,
        commit_log: CommitLog,
        config: MessageStoreConfig,
        *,
        host: str,
        tls: ServerTls | None = None,
        identities: bool = False,
    ) -> None:
        """``tls``: the broker's ``tls.server.mode`` also governs this port.
        ``identities``: controller mode, where slaves name themselves (their broker id)
        so the in-sync set can be kept."""
        self.identities = identities
        self._in_sync_ids: set[int] | None = None
        self._joining: set[int] = set()
        self._reported = asyncio.Event()
        self._fenced = False
        self._commit_log = commit_log
        self._config = config
        self._host = host
        self._tls = tls
        self._server: asyncio.Server | TlsListener | None = None
        self.port = 0
        self.connections: set[HAConnection] = set()
        self.push2slave_max_offset = 0
        """The highest commit log offset a slave has acknowledged."""
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    async def start(self, port: int) -> None:
        self._fenced = False
        if self._tls is not None:
            self._server = TlsListener(
                lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(), self._accept),
                self._host,
                port,
                self._tls,
            )
            await self._server.start()
        else:
            self._server = await asyncio.start_server(
                self._accept, self._host, port, reuse_address=True
            )
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("HA service listening on %s:%d", self._host, self.port)

    async def close(self) -> None:
        self.fence()
        if self._server is not None:
            self._server.close()
            self._server = None
        for conn in list(self.connections):
            await conn.close()
        self._waiters.clear()

    def fence(self) -> None:
        """This broker stops being master: nothing is replicated from now on, so every
        send still waiting is answered as not replicated (FLUSH_SLAVE_TIMEOUT), never
        acknowledged. (Answering them by the rule of another role, such as "any slave
        holds it" once the in-sync set is cleared, acknowledged messages that the new
        master never had.)"""
        self._fenced = True
        for _, fut in self._waiters:
            if not fut.done():
                fut.set_result(None)

    @property
    def in_sync_ids(self) -> set[int] | None:
        """Controller mode: the in-sync set the controller accepted (this master's id
        included); None elsewhere."""
        return self._in_sync_ids

    @in_sync_ids.setter
    def in_sync_ids(self, ids: set[int] | None) -> None:
        self._in_sync_ids = ids
        self._wake_waiters()  # a smaller set may be all acknowledged already

    @property
    def joining(self) -> set[int]:
        """Slaves this master is adding to its in-sync set: from :meth:`begin_join` until
        the controller has answered, every acknowledgement waits for them too."""
        return set(self._joining)

    def begin_join(self, ids: set[int]) -> int:
        """Count ``ids`` as in sync from now on and give the offset they must hold first.

        Every message acknowledged before this call ends at or below the returned offset
        (this log's end now); every one after it waits for ``ids`` as well. So a joiner
        that holds that offset holds every acknowledged message, and may be elected
        master without losing one (RocketMQ 5 keeps the proposed set as the one acks
        wait for while an ALTER_SYNC_STATE_SET is under way, and lets a slave join only
        at the confirm offset)."""
        self._joining = set(ids)
        return self._commit_log.max_offset

    def leave_join(self, ids: set[int]) -> None:
        """``ids`` were never proposed after all: acknowledgements stop waiting for them."""
        self._joining -= ids
        self._wake_waiters()

    def end_join(self) -> None:
        """The controller answered (or nothing was proposed): ``in_sync_ids`` alone
        says again whom acknowledgements wait for."""
        self._joining = set()
        self._wake_waiters()

    def holding(self, ids: set[int], offset: int) -> set[int]:
        """Of ``ids``, the connected slaves that acknowledged ``offset`` (and not past
        this log's end, which proves nothing)."""
        end = self._commit_log.max_offset
        return {
            c.slave_id
            for c in self.connections
            if c.slave_id in ids and offset <= c.ack_offset <= end
        }

    async def wait_holding(self, ids: set[int], offset: int, timeout: float) -> set[int]:
        """Those of ``ids`` that acknowledged ``offset`` within ``timeout`` seconds."""
        deadline = asyncio.get_running_loop().time() + timeout
        while (held := self.holding(ids, offset)) != ids:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return held
            self._reported.clear()
            await wait_event(self._reported, left)
        return held

    @property
    def listening(self) -> bool:
        """Between :meth:`start` and :meth:`close` (while the broker is a master)."""
        return self._server is not None

    # -- what the send path asks --------------------------------------------------------
    @property
    def connection_count(self) -> int:
        return len(self.connections)

    @property
    def alone_in_sync(self) -> bool:
        """Controller mode with no other replica in sync: a SYNC_MASTER answers at once,
        as RocketMQ 5 does while the in-sync set holds at least ``minInSyncReplicas``
        (the master counts)."""
        return (
            self.in_sync_ids is not None
            and not self._joining
            and len(self.in_sync_ids) <= 1
            and self._config.min_in_sync_replicas <= 1
        )

    @property
    def enough_in_sync(self) -> bool:
        """Controller mode: the in-sync set (joiners counted) holds at least
        ``minInSyncReplicas`` replicas, this master included; always true elsewhere."""
        ids = self._in_sync_ids
        return ids is None or len(ids | self._joining) >= self._config.min_in_sync_replicas

    def is_slave_ok(self, master_put_where: int) -> bool:
        """A slave is connected and not more than ``haSlaveFallbehindMax`` behind."""
        if self.alone_in_sync:
            return True
        behind = master_put_where - self.push2slave_max_offset
        return bool(self.connections) and behind < self._config.ha_slave_fallbehind_max

    async def wait_for_slave(self, offset: int, timeout: float) -> bool:
        """True once a slave has acknowledged ``offset``; False after ``timeout``."""
        if self.replicated(offset):
            return True
        if self._fenced:
            return False
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (offset, fut)
        self._waiters.append(entry)
        self.notify_data()
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            pass
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(entry)
        return self.replicated(offset)  # as of now: a fence since the wake-up counts

    def notify_data(self) -> None:
        """New bytes in the commit log: wake every writer waiting for them."""
        for conn in self.connections:
            conn.data_ready.set()

    # -- connections --------------------------------------------------------------------
    def in_sync_slaves(self, now_ms: int, max_lag_ms: int) -> set[int]:
        """Broker ids of the named slaves that held this log's end within ``max_lag_ms``
        (``haMaxTimeSlaveNotCatchup``): the replicas the in-sync set may hold."""
        return {
            conn.slave_id
            for conn in self.connections
            if conn.slave_id is not None
            and conn.caught_up_ms is not None
            and now_ms - conn.caught_up_ms <= max_lag_ms
        }

    def replicated(self, offset: int) -> bool:
        """Is ``offset`` as replicated as a SYNC_MASTER answer needs? A slave has it; with
        ``allAckInSyncStateSet`` in controller mode, every replica of the in-sync set
        has it (RocketMQ 5's GroupTransferService), so any of them elected master holds
        every acknowledged message."""
        if self._fenced:
            return False
        if self.alone_in_sync:
            return True
        if self._in_sync_ids is None and self.identities:
            return False  # controller mode, and not (or no longer) master
        if self._in_sync_ids is None or not self._config.all_ack_in_sync_state_set:
            return self.push2slave_max_offset >= offset
        ids = self._in_sync_ids | self._joining
        # the master holds it too; never fewer than minInSyncReplicas copies
        held = len(self.holding(ids, offset))
        return 1 + held >= max(len(ids), self._config.min_in_sync_replicas)

    def acknowledged(self, offset: int) -> None:
        self._reported.set()
        if offset <= self.push2slave_max_offset and not self._config.all_ack_in_sync_state_set:
            return
        self.push2slave_max_offset = max(self.push2slave_max_offset, offset)
        self._wake_waiters()

    def _wake_waiters(self) -> None:
        for want, fut in self._waiters:
            if not fut.done() and self.replicated(want):
                fut.set_result(None)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = HAConnection(self, self._commit_log, self._config, reader, writer)
        self.connections.add(conn)
        log.info("slave connected from %s", conn.peer)
        try:
            await conn.serve()
        finally:
            self.connections.discard(conn)
            await conn.close()
            log.info("slave %s disconnected", conn.peer)


class HAConnection:
    """One slave: its reports in, the commit log out."""

    def __init__(
        self,
        service: HAService,
        commit_log: CommitLog,
        config: MessageStoreConfig,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self._service = service
        self._commit_log = commit_log
        self._config = config
        self._reader = reader
        self._writer = writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.request_offset = -1
        """Where the slave stood when it connected (-1: it has not said yet)."""
        self.ack_offset = -1
        self.slave_id: int | None = None
        """The broker id the slave named (controller mode)."""
        self.caught_up_ms: int | None = None
        """When the slave last acknowledged all this log held at its previous report (as
        RocketMQ 5 compares with the master's end at its last transfer): under steady
        load a slave that keeps up stays caught up."""
        self._watermark: int | None = None
        self.next_transfer = -1
        self.data_ready = asyncio.Event()
        self._requested = asyncio.Event()
        self._closed = False
        writer.transport.set_write_buffer_limits(high=_WRITE_HIGH_WATER)

    async def serve(self) -> None:
        """Until the slave goes, breaks the protocol or falls silent."""
        write = asyncio.create_task(self._write_loop(), name=f"ha-write-{self.peer}")
        try:
            await self._read_loop(write)
        finally:
            await cancel_and_wait([write])

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()

    async def _read_loop(self, write: asyncio.Task[None]) -> None:
        reports = ReportReader(identities=self._service.identities)
        silence = self._config.ha_housekeeping_interval / 1000
        while not write.done():
            read = asyncio.ensure_future(self._reader.read(_READ_CHUNK))
            done, _ = await asyncio.wait(
                {read, write}, timeout=silence, return_when=asyncio.FIRST_COMPLETED
            )
            if read not in done:
                read.cancel()
                if not done:
                    log.warning("slave %s silent for %.0f s: closing", self.peer, silence)
                return
            data = read.result()
            if not data:
                return
            try:
                offset = reports.feed(data)
            except HAProtocolError as exc:
                log.warning("slave %s: %s; closing", self.peer, exc)
                return
            if reports.identity is not None and self.slave_id is None:
                self.slave_id = reports.identity
                log.info("slave %s is broker id %d", self.peer, self.slave_id)
            if offset is None:
                continue
            end = self._commit_log.max_offset
            if offset >= end or (self._watermark is not None and offset >= self._watermark):
                self.caught_up_ms = time.time_ns() // 1_000_000
            self._watermark = end
            if self.request_offset < 0:
                self.request_offset = offset
                self._requested.set()
                log.info("slave %s requests the commit log from %d", self.peer, offset)
            elif offset > self._commit_log.max_offset:
                log.warning(
                    "slave %s reports %d, past this commit log's end %d: closing",
                    self.peer,
                    offset,
                    self._commit_log.max_offset,
                )
                return
            self.ack_offset = offset
            if offset <= self._commit_log.max_offset:
                # Past our end (a first report may be, as 4.9.8 allows) proves nothing: it
                # must not let SYNC_MASTER sends through.
                self._service.acknowledged(offset)

    async def _write_loop(self) -> None:
        await self._requested.wait()
        size = self._config.mapped_file_size_commit_log
        if self.request_offset == 0:
            end = self._commit_log.max_offset
            self.next_transfer = end - end % size
        else:
            self.next_transfer = self.request_offset
        log.info("transferring to slave %s from %d", self.peer, self.next_transfer)
        loop = asyncio.get_running_loop()
        heartbeat = self._config.ha_send_heartbeat_interval / 1000
        batch = self._config.ha_transfer_batch_size
        last_write = loop.time()
        warned_gone = False
        while True:
            self.data_ready.clear()
            data = self._commit_log.read_for_transfer(self.next_transfer, batch)
            if data is not None:
                # A copy: a buffered view would pin the map of a file cleanup may delete.
                self._writer.write(encode_transfer_header(self.next_transfer, len(data)) + data)
                self.next_transfer += len(data)
                last_write = loop.time()
                await self._writer.drain()
                continue
            if not warned_gone and self.next_transfer < self._commit_log.min_offset:
                warned_gone = True
                log.warning(
                    "slave %s wants offset %d, no longer held (commit log starts at %d)",
                    self.peer,
                    self.next_transfer,
                    self._commit_log.min_offset,
                )
            idle = loop.time() - last_write
            if idle >= heartbeat:
                self._writer.write(encode_transfer_header(self.next_transfer, 0))
                last_write = loop.time()
                await self._writer.drain()
                continue
            await wait_event(self.data_ready, heartbeat - idle)
