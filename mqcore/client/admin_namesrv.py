"""Name-server admin operations, :class:`NamesrvAdmin`, a part of
:class:`~mqcore.client.admin.Admin` (``admin.name_servers``, its methods also on the
admin): a broker's write permission (mqadmin wipeWritePerm / addWritePerm, how an
operator drains a broker before maintenance) and the KV config store (updateKvConfig,
deleteKvConfig, updateOrderConf).

Changes go to every name server the admin knows, as mqadmin sends them; reads ask the
name servers in turn until one answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqcore.client.errors import check_ok
from mqcore.errors import MQClientError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import ClusterInfo, KVTable, TopicList
from mqcore.protocol.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from mqcore.client.transport import Ask, ClientTransport
    from mqcore.protocol.headers import CommandHeader

__all__ = ["NamesrvAdmin"]


class NamesrvAdmin:
    """Requests to the name servers of ``transport()`` (the admin's connections while it
    is started), each sent with ``ask`` (the admin's request and timeout)."""

    def __init__(self, ask: Ask, transport: Callable[[], ClientTransport]) -> None:
        self._ask = ask
        self._transport = transport

    async def _each_namesrv(
        self, code: int, header: CommandHeader | None = None
    ) -> dict[str, RemotingCommand]:
        """The request to every name server, one after the other (as mqadmin); name
        server address -> its answer. Raises MQBrokerError on the first refusal."""
        out: dict[str, RemotingCommand] = {}
        for addr in self._transport().namesrv_addrs:
            out[addr] = check_ok(await self._ask(addr, code, header))
        if not out:
            raise MQClientError("no name server address is configured")
        return out

    async def _first_namesrv(
        self, code: int, header: CommandHeader, *, missing: int | None = None
    ) -> RemotingCommand | None:
        """The first name server's answer; None when every one answers ``missing``."""
        last: RemotingCommand | None = None
        for addr in self._transport().namesrv_addrs:
            last = await self._ask(addr, code, header)
            if last.code == ResponseCode.SUCCESS:
                return last
            if last.code != missing:
                check_ok(last)
        if last is None:
            raise MQClientError("no name server address is configured")
        return None

    @property
    def namesrv_addrs(self) -> list[str]:
        """The name servers this admin asks, in their configured order."""
        return list(self._transport().namesrv_addrs)

    async def cluster_info_from(self, addr: str) -> ClusterInfo:
        """GET_BROKER_CLUSTER_INFO from the name server at ``addr`` alone (no fail-over,
        as a dashboard checking each one's health asks). Any failure closes the channel,
        so the next ask connects afresh instead of waiting on a dead connection."""
        try:
            response = check_ok(await self._ask(addr, RequestCode.GET_BROKER_CLUSTER_INFO))
            return ClusterInfo.decode(response.body)
        except Exception:
            self._transport().remoting.close_channel(addr)
            raise

    # -- write permission ---------------------------------------------------------------

    async def wipe_write_perm(self, broker_name: str) -> dict[str, int]:
        """WIPE_WRITE_PERM_OF_BROKER on every name server: ``broker_name`` stops getting
        sends (routes lose its write bit) while its consumers drain it. Name server ->
        how many topics it changed (0: it did not know the broker)."""
        header = WipeWritePermOfBrokerRequestHeader(broker_name)
        answers = await self._each_namesrv(RequestCode.WIPE_WRITE_PERM_OF_BROKER, header)
        return {
            addr: WipeWritePermOfBrokerResponseHeader.from_command(r).wipe_topic_count
            for addr, r in answers.items()
        }

    async def add_write_perm(self, broker_name: str) -> dict[str, int]:
        """ADD_WRITE_PERM_OF_BROKER on every name server: undoes :meth:`wipe_write_perm`
        (until the broker's next registration restores its own permission anyway)."""
        header = AddWritePermOfBrokerRequestHeader(broker_name)
        answers = await self._each_namesrv(RequestCode.ADD_WRITE_PERM_OF_BROKER, header)
        return {
            addr: AddWritePermOfBrokerResponseHeader.from_command(r).add_topic_count
            for addr, r in answers.items()
        }

    async def topics_by_cluster(self, cluster: str) -> set[str]:
        """GET_TOPICS_BY_CLUSTER: the topics the brokers of ``cluster`` registered."""
        header = GetTopicsByClusterRequestHeader(cluster)
        response = await self._first_namesrv(RequestCode.GET_TOPICS_BY_CLUSTER, header)
        return TopicList.decode(response.body).topic_list if response is not None else set()

    # -- KV config ----------------------------------------------------------------------

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        """PUT_KV_CONFIG on every name server (e.g. namespace ORDER_TOPIC_CONFIG)."""
        header = PutKVConfigRequestHeader(namespace, key, value)
        await self._each_namesrv(RequestCode.PUT_KV_CONFIG, header)

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        """DELETE_KV_CONFIG on every name server (deleting what is not there is fine)."""
        header = DeleteKVConfigRequestHeader(namespace, key)
        await self._each_namesrv(RequestCode.DELETE_KV_CONFIG, header)

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        """GET_KV_CONFIG: the value, or None when no name server has it."""
        header = GetKVConfigRequestHeader(namespace, key)
        response = await self._first_namesrv(
            RequestCode.GET_KV_CONFIG, header, missing=ResponseCode.QUERY_NOT_FOUND
        )
        return None if response is None else GetKVConfigResponseHeader.from_command(response).value

    async def kv_list(self, namespace: str) -> dict[str, str]:
        """GET_KVLIST_BY_NAMESPACE: every key of ``namespace`` ({} when it has none)."""
        header = GetKVListByNamespaceRequestHeader(namespace)
        response = await self._first_namesrv(
            RequestCode.GET_KVLIST_BY_NAMESPACE, header, missing=ResponseCode.QUERY_NOT_FOUND
        )
        return {} if response is None else dict(KVTable.decode(response.body).table)
