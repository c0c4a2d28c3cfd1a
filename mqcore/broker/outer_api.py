"""`BrokerOuterAPI`: the broker's calls to the name servers (RocketMQ ``BrokerOuterAPI``).

REGISTER_BROKER goes to every name server at once (one slow or dead name server delays
nobody); the body is a ``RegisterBrokerBody`` carrying topic configs and the table's data
version, with the CRC32 the name server checks (bodies: :mod:`mqcore.broker.register_body`,
encoded once per registration, off the loop when large). A non-forced registration first
asks QUERY_DATA_VERSION and skips name servers that already have the current version.

After a change to some topics only those topics are sent (4.9.8's
``registerIncrementBrokerData``): a name server adds or updates the topics of a body and
keeps the others. That holds only while it still knows this broker, so an increment goes
only over the connection on which a whole table was last registered there; a name server
reached over a new connection (it restarted, or closed ours and forgot us) gets the whole
table instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from mqcore.broker.register_body import (
    ON_LOOP_MAX,
    RegisterBody,
    TopicTableSnapshot,
    encode_bodies,
    snapshot,
)
from mqcore.errors import MQError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.route import MASTER_ID, KVTable
from mqcore.protocol.headers import (
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
)
from mqcore.remoting import Channel, RemotingClient
from mqcore.remoting.tls import client_context_from_config

if TYPE_CHECKING:
    from mqcore.broker.config import BrokerConfig
    from mqcore.broker.topics import TopicService

__all__ = ["BrokerOuterAPI"]

log = logging.getLogger("mq.broker.register")


class BrokerOuterAPI:
    """Registration with every configured name server; failures are logged, not raised.

    The addresses are asked at each registration: the ports are known once the broker
    listens. ``on_registered(master_addr, ha_server_addr)`` gets a slave's answer."""

    def __init__(
        self,
        config: BrokerConfig,
        topics: TopicService,
        *,
        broker_addr: Callable[[], str],
        ha_addr: Callable[[], str],
        on_registered: Callable[[str | None, str | None], None],
    ) -> None:
        self.config = config
        self.topics = topics
        self.broker_addr = broker_addr
        self.ha_addr = ha_addr
        self.on_registered = on_registered
        self.client = RemotingClient(ssl_context=client_context_from_config(config))
        self.last_results: dict[str, bool] = {}
        """Name server -> whether the last registration there succeeded."""
        self._full_over: dict[str, Channel] = {}
        """Name server -> the connection its last whole-table registration went over."""

    @property
    def timeout(self) -> float:
        return self.config.register_broker_timeout_mills / 1000

    # -- the whole table ------------------------------------------------------------------

    def _snapshot(self, topics: list[str] | None = None) -> TopicTableSnapshot:
        return snapshot(self.topics.manager, self.config.broker_permission, topics)

    async def _encode(self, snap: TopicTableSnapshot, *, split: bool) -> list[RegisterBody]:
        """Bodies of ``snap``; a large table is encoded on a worker thread."""
        config = self.config
        split_size = (
            config.split_registration_size if split and config.enable_split_registration else None
        )
        if len(snap) <= ON_LOOP_MAX:
            return encode_bodies(snap, compressed=config.compressed_register, split_size=split_size)
        return await asyncio.to_thread(
            encode_bodies, snap, compressed=config.compressed_register, split_size=split_size
        )

    async def register_all(self, *, force: bool = True) -> dict[str, bool]:
        """Register the whole table at every name server concurrently; name server ->
        success. Unless ``force``, name servers holding the current version are skipped."""
        addrs = self.config.namesrv_addrs
        if not addrs:
            return {}
        snap = self._snapshot()
        bodies: asyncio.Future[list[RegisterBody]] | None = None

        def shared_bodies() -> asyncio.Future[list[RegisterBody]]:
            nonlocal bodies
            if bodies is None:  # encoded once, for the first name server that needs it
                bodies = asyncio.ensure_future(self._encode(snap, split=True))
            return bodies

        async def one(addr: str) -> bool:
            try:
                if not force and not await self._changed_at(addr):
                    return True
            except (MQError, OSError) as exc:
                log.warning("query data version at name server %s failed: %s", addr, exc)
                return False
            return await self._register_full(addr, await shared_bodies())

        results = await asyncio.gather(*(one(a) for a in addrs))
        self.last_results = dict(zip(addrs, results, strict=True))
        return self.last_results

    async def _register_full(self, addr: str, bodies: list[RegisterBody]) -> bool:
        """Send ``bodies`` (the parts of one whole-table registration) in order."""
        try:
            channel = await self.client.channel(addr)
        except (MQError, OSError) as exc:
            log.warning("register broker at name server %s failed: %s", addr, exc)
            return False
        for body in bodies:
            if not await self._send(addr, body):
                self._full_over.pop(addr, None)
                return False
        self._full_over[addr] = channel
        return True

    # -- changed topics alone -------------------------------------------------------------

    async def register_topics(self, topics: list[str]) -> bool:
        """Register ``topics`` alone (with the current data version) at every name server
        that holds this broker's table from this connection, the whole table at the
        others. True when every name server accepted."""
        addrs = self.config.namesrv_addrs
        if not addrs:
            return True
        snap = self._snapshot(topics)
        increment = await self._encode(snap, split=False)

        async def one(addr: str) -> bool:
            try:
                channel = await self.client.channel(addr)
            except (MQError, OSError) as exc:
                log.warning("register broker at name server %s failed: %s", addr, exc)
                return False
            if self._full_over.get(addr) is not channel:
                full = await self._encode(self._snapshot(), split=True)
                return await self._register_full(addr, full)
            return await self._send(addr, increment[0])

        results = await asyncio.gather(*(one(a) for a in addrs))
        self.last_results = dict(zip(addrs, results, strict=True))
        return all(results)

    # -- one request ----------------------------------------------------------------------

    def _register_request(self, body: RegisterBody) -> RemotingCommand:
        config = self.config
        header = RegisterBrokerRequestHeader(
            broker_name=config.broker_name,
            broker_addr=self.broker_addr(),
            cluster_name=config.broker_cluster_name,
            ha_server_addr=self.ha_addr(),
            broker_id=config.broker_id,
            compressed=body.compressed,
            body_crc32=body.crc32,
        )
        return RemotingCommand.request(
            RequestCode.REGISTER_BROKER, header.to_ext_fields(), body.body
        )

    async def _send(self, addr: str, body: RegisterBody) -> bool:
        """One REGISTER_BROKER; a slave learns its master from the answer."""
        try:
            response = await self.client.invoke(addr, self._register_request(body), self.timeout)
        except (MQError, OSError) as exc:
            log.warning("register broker at name server %s failed: %s", addr, exc)
            return False
        if response.code != ResponseCode.SUCCESS:
            log.warning(
                "name server %s refused registration: %s %s", addr, response.code, response.remark
            )
            return False
        log.debug("registered at name server %s", addr)
        if self.config.broker_id != MASTER_ID:
            answer = RegisterBrokerResponseHeader.from_command(response)
            self.on_registered(answer.master_addr, answer.ha_server_addr)
        return True

    async def _runtime_info(self, broker_addr: str, key: str) -> str | None:
        request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
        response = await self.client.invoke(broker_addr, request, self.timeout)
        if response.code != ResponseCode.SUCCESS or not response.body:
            return None
        return KVTable.decode(response.body).table.get(key)

    async def commit_log_end(self, broker_addr: str) -> int | None:
        """``commitLogMaxOffset`` of another broker (a slave asks its master)."""
        value = await self._runtime_info(broker_addr, "commitLogMaxOffset")
        return int(value) if value and value.isdigit() else None

    async def ha_server_addr(self, broker_addr: str) -> str | None:
        """Where a master serves replication (mq's ``haServerAddr`` runtime key): a slave
        told its master by a controller asks the master itself, not the name server."""
        return await self._runtime_info(broker_addr, "haServerAddr")

    async def _changed_at(self, addr: str) -> bool:
        """QUERY_DATA_VERSION: does ``addr`` hold an older topic table than ours?"""
        config = self.config
        header = QueryDataVersionRequestHeader(
            broker_name=config.broker_name,
            broker_addr=self.broker_addr(),
            cluster_name=config.broker_cluster_name,
            broker_id=config.broker_id,
        )
        body = self.topics.manager.data_version.encode()
        request = RemotingCommand.request(
            RequestCode.QUERY_DATA_VERSION, header.to_ext_fields(), body
        )
        response = await self.client.invoke(addr, request, self.timeout)
        if response.code != ResponseCode.SUCCESS:
            return True
        return QueryDataVersionResponseHeader.from_command(response).changed

    async def unregister_all(self) -> None:
        """UNREGISTER_BROKER at every name server (at shutdown; failures only logged)."""
        config = self.config
        header = UnregisterBrokerRequestHeader(
            broker_name=config.broker_name,
            broker_addr=self.broker_addr(),
            cluster_name=config.broker_cluster_name,
            broker_id=config.broker_id,
        )

        async def one(addr: str) -> None:
            request = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header.to_ext_fields())
            try:
                await self.client.invoke(addr, request, self.timeout)
            except (MQError, OSError) as exc:
                log.warning("unregister at name server %s failed: %s", addr, exc)

        await asyncio.gather(*(one(a) for a in config.namesrv_addrs))

    async def close(self) -> None:
        await self.client.close()
