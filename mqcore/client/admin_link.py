"""How the parts of :class:`~mqcore.client.admin.Admin` reach the cluster: :class:`AdminLink`.

A part (topics, groups and offsets, message lookups, one broker's tables) needs the
admin's client instance while it is started, its timeout, and a few ways to pick brokers
(every master, a cluster's, a topic's). The link is those, built once by the admin and
passed to each part, so no part holds the admin or repeats how brokers are chosen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

from mqcore.client.errors import check_ok
from mqcore.errors import MQClientError
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.bodies import ClusterInfo, TopicRouteData

if TYPE_CHECKING:
    from mqcore.client.instance import ClientInstance
    from mqcore.protocol.headers import CommandHeader

__all__ = ["AdminLink"]

T = TypeVar("T")


class AdminLink:
    """The admin's instance (``instance()``, raising while it is not started) and
    timeout (``timeout()``, read at each call: callers may change it), and the requests
    every part sends through them."""

    def __init__(self, instance: Callable[[], ClientInstance], timeout: Callable[[], float]):
        self.instance = instance
        self.timeout = timeout

    def request(
        self, code: int, header: CommandHeader | None = None, body: bytes = b""
    ) -> RemotingCommand:
        return self.instance().request(code, header, body=body)

    async def call(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        return await self.instance().invoke(addr, request, self.timeout())

    async def call_ok(self, addr: str, request: RemotingCommand) -> RemotingCommand:
        return check_ok(await self.call(addr, request))

    async def ask(
        self, addr: str, code: int, header: CommandHeader | None = None, *,
        timeout: float | None = None,
    ) -> RemotingCommand:  # fmt: skip
        """One request to ``addr``, with the admin's timeout unless ``timeout`` is given
        (the :class:`~mqcore.client.transport.Ask` the parts send through)."""
        instance = self.instance()
        return await instance.invoke(
            addr, instance.request(code, header), timeout or self.timeout()
        )

    @staticmethod
    async def each(addrs: Iterable[str], fn: Callable[[str], Awaitable[T]]) -> list[T]:
        """``fn`` on every distinct address at once, answers in address order."""
        return list(await asyncio.gather(*(fn(a) for a in sorted(set(addrs)))))

    async def cluster_info(self) -> ClusterInfo:
        """GET_BROKER_CLUSTER_INFO: clusters, broker names, addresses by broker id."""
        request = self.request(RequestCode.GET_BROKER_CLUSTER_INFO)
        response = check_ok(await self.instance().invoke_namesrv(request, self.timeout()))
        return ClusterInfo.decode(response.body)

    async def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        """Broker name -> master address, for one cluster or all of them."""
        info = await self.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            known = ", ".join(sorted(info.cluster_addr_table)) or "none"
            raise MQClientError(f"no cluster named {cluster!r} (known: {known})")
        names = (
            info.cluster_addr_table[cluster] if cluster is not None else set(info.broker_addr_table)
        )
        out = {}
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            if data is not None and data.master_addr():
                out[name] = data.master_addr() or ""
        return out

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The name servers' current route (raises TopicRouteNotFoundError)."""
        return await self.instance().get_route(topic, refresh=True)

    async def topic_masters(self, topic: str) -> dict[str, str]:
        """Broker name -> master address of the brokers in ``topic``'s route."""
        route = await self.topic_route(topic)
        return {b.broker_name: b.master_addr() or "" for b in route.broker_datas if b.master_addr()}

    async def route_masters(self, topic: str) -> list[str]:
        """The master addresses of ``topic``'s route, sorted."""
        return sorted(set((await self.topic_masters(topic)).values()))
