"""A name server and brokers that answer only what `mq cluster list` and `mq broker status`
ask (the cluster table and each broker's runtime table), with tables the test writes.

Real brokers cannot be made to report a given HA state (a slave 1 MiB behind, a master
that lost its slave) or to leave out the keys `mq` adds, as RocketMQ 4.9.8 does; these
speak the real remoting protocol on 127.0.0.1 port 0, in a thread of the test process,
so `mq` runs against them as a subprocess just as against a real cluster.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies.route import BrokerData, ClusterInfo, KVTable
from mqcore.remoting import Channel, Processor, RemotingServer

DOWN = "127.0.0.1:1"
"""An address nothing listens on: a broker that is registered but dead."""


@dataclass
class StatusBroker:
    name: str
    broker_id: int
    runtime: dict[str, str] | None
    """The GET_BROKER_RUNTIME_INFO table; None: the broker is down."""
    cluster: str = "DefaultCluster"
    addr: str = DOWN


@dataclass
class StatusCluster:
    namesrv: str
    brokers: list[StatusBroker] = field(default_factory=list)

    def addr(self, name: str, broker_id: int) -> str:
        return next(b.addr for b in self.brokers if (b.name, b.broker_id) == (name, broker_id))


def runtime(commit_log_max: int, **mq_keys: str) -> dict[str, str]:
    """A runtime table as RocketMQ 4.9.8 answers it (the keys the CLI reads), plus the
    HA keys only `mq` brokers add, given as keyword arguments."""
    return {
        "brokerVersionDesc": "V4_9_8",
        "bootTimestamp": "1700000000000",
        "putTps": "1.0 1.0 1.0",
        "getTransferedTps": "0.0 0.0 0.0",
        "msgPutTotalTodayNow": "10",
        "msgGetTotalTodayNow": "5",
        "msgPutTotalTodayMorning": "0",
        "msgGetTotalTodayMorning": "0",
        "commitLogDiskRatio": "0.25",
        "commitLogMinOffset": "0",
        "commitLogMaxOffset": str(commit_log_max),
        "dispatchBehindBytes": "0",
        **mq_keys,
    }


def _answer(body: bytes) -> Processor:
    def processor(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=body)

    return processor


@contextmanager
def serve_status_tables(*brokers: StatusBroker) -> Iterator[StatusCluster]:
    """Serve ``brokers`` (those with a runtime table get a port) and a name server that
    lists all of them; stopped at the end of the ``with``."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="status-tables", daemon=True)
    thread.start()
    servers: list[RemotingServer] = []

    async def start() -> StatusCluster:
        for broker in brokers:
            if broker.runtime is None:
                continue
            server = RemotingServer(host="127.0.0.1", port=0)
            server.register(
                RequestCode.GET_BROKER_RUNTIME_INFO, _answer(KVTable(broker.runtime).encode())
            )
            await server.start()
            servers.append(server)
            broker.addr = f"127.0.0.1:{server.port}"
        info = ClusterInfo()
        for broker in brokers:
            data = info.broker_addr_table.setdefault(
                broker.name, BrokerData(broker.cluster, broker.name)
            )
            data.broker_addrs[broker.broker_id] = broker.addr
            info.cluster_addr_table.setdefault(broker.cluster, set()).add(broker.name)
        namesrv = RemotingServer(host="127.0.0.1", port=0)
        namesrv.register(RequestCode.GET_BROKER_CLUSTER_INFO, _answer(info.encode()))
        await namesrv.start()
        servers.append(namesrv)
        return StatusCluster(f"127.0.0.1:{namesrv.port}", list(brokers))

    async def stop() -> None:
        for server in servers:
            await server.close()

    try:
        yield asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
