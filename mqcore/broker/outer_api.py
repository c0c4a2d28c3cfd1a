"""`BrokerOuterAPI`: the broker's calls to the name servers (RocketMQ ``BrokerOuterAPI``).

REGISTER_BROKER goes to every name server at once (one slow or dead name server delays
nobody); the body is a ``RegisterBrokerBody`` carrying the topic table and its data
version, with the CRC32 the name server checks. A non-forced registration first asks
QUERY_DATA_VERSION and skips name servers that already have the current version.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from mqcore.errors import MQError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.route import MASTER_ID, KVTable, RegisterBrokerBody
from mqcore.protocol.headers import (
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
)
from mqcore.remoting import RemotingClient
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

    @property
    def timeout(self) -> float:
        return self.config.register_broker_timeout_mills / 1000

    async def register_all(self, *, force: bool = True) -> dict[str, bool]:
        """Register at every name server concurrently; name server -> success."""
        addrs = self.config.namesrv_addrs
        if not addrs:
            return {}
        results = await asyncio.gather(*(self._register_one(a, force) for a in addrs))
        self.last_results = dict(zip(addrs, results, strict=True))
        return self.last_results

    def _register_request(self) -> RemotingCommand:
        config = self.config
        body = RegisterBrokerBody(self.topics.serialize_wrapper()).encode()
        header = RegisterBrokerRequestHeader(
            broker_name=config.broker_name,
            broker_addr=self.broker_addr(),
            cluster_name=config.broker_cluster_name,
            ha_server_addr=self.ha_addr(),
            broker_id=config.broker_id,
            compressed=False,
            body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
        )
        return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext_fields(), body)

    async def _register_one(self, addr: str, force: bool) -> bool:
        try:
            if not force and not await self._changed_at(addr):
                return True
            response = await self.client.invoke(addr, self._register_request(), self.timeout)
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
        body = self.topics.serialize_wrapper().data_version.encode()
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
