"""Socket-free cluster for client unit tests: the real name-server processor plus fake
brokers on an :class:`InMemoryNetwork`.

A :class:`FakeBroker` stores what producers send per queue (records encoded as a broker
would), answers pulls from them, and records heartbeats and unregistrations. Knobs:
``fail_code`` (answer sends with that code), ``delay`` (seconds before answering sends),
``suggest`` (the pulls' ``suggestWhichBrokerId``), :meth:`InMemoryCluster.add_slave` (a
broker id 1 of the same name), :meth:`InMemoryCluster.stop_broker` (nothing serves its address
any more) and :meth:`InMemoryCluster.unregister` (the name server forgets one node).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

from mqcore.client.instance import ClientConfig
from mqcore.message import create_offset_msg_id, encode_record
from mqcore.message.record import decode_batch_body
from mqcore.namesrv.config import NamesrvConfig
from mqcore.namesrv.kvconfig import KVConfigManager
from mqcore.namesrv.processor import NamesrvProcessor
from mqcore.namesrv.routeinfo import RouteInfoManager
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import (
    DataVersion,
    HeartbeatData,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from mqcore.protocol.headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    decode_send_message_header,
)
from mqcore.remoting import Channel, InMemoryNetwork, InMemoryRemotingClient, RequestDispatcher

NAMESRV = "127.0.0.1:9876"


@dataclass
class StoredMessage:
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    flag: int
    body: bytes
    properties: str
    record: bytes


@dataclass
class FakeBroker:
    name: str
    addr: str
    cluster: str = "DefaultCluster"
    queues: dict[tuple[str, int], list[StoredMessage]] = field(default_factory=dict)
    heartbeats: list[HeartbeatData] = field(default_factory=list)
    unregistered: list[UnregisterClientRequestHeader] = field(default_factory=list)
    offsets: dict[tuple[str, str, int], int] = field(default_factory=dict)
    requests: list[RemotingCommand] = field(default_factory=list)
    fail_code: int | None = None
    delay: float = 0.0
    suggest: int = 0
    pulls: list[PullMessageRequestHeader] = field(default_factory=list)
    channels: list[Channel] = field(default_factory=list)
    _phy: int = 0

    def dispatcher(self) -> RequestDispatcher:
        d = RequestDispatcher()
        d.register(RequestCode.SEND_MESSAGE_V2, self.on_send)
        d.register(RequestCode.SEND_BATCH_MESSAGE, self.on_send)
        d.register(RequestCode.HEART_BEAT, self.on_heartbeat)
        d.register(RequestCode.UNREGISTER_CLIENT, self.on_unregister)
        d.register(RequestCode.PULL_MESSAGE, self.on_pull)
        d.register(RequestCode.QUERY_CONSUMER_OFFSET, self.on_query_offset)
        d.register(RequestCode.UPDATE_CONSUMER_OFFSET, self.on_update_offset)
        d.register(RequestCode.GET_MAX_OFFSET, self.on_max_offset)
        return d

    def messages(self, topic: str) -> list[StoredMessage]:
        return [m for (t, _), q in sorted(self.queues.items()) if t == topic for m in q]

    def _store(
        self, topic: str, qid: int, body: bytes, props: str, sys_flag: int, flag: int
    ) -> StoredMessage:
        queue = self.queues.setdefault((topic, qid), [])
        host, port = self.addr.split(":")
        record = bytes(
            encode_record(
                topic=topic,
                body=body,
                properties=props.encode(),
                queue_id=qid,
                flag=flag,
                sys_flag=sys_flag,
                store_host=(host, int(port)),
                queue_offset=len(queue),
                physical_offset=self._phy,
                store_timestamp=int(time.time() * 1000),
            )
        )
        msg = StoredMessage(topic, qid, len(queue), self._phy, sys_flag, flag, body, props, record)
        self._phy += len(record)
        queue.append(msg)
        return msg

    async def on_send(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.requests.append(request)
        if channel not in self.channels:
            self.channels.append(channel)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail_code is not None:
            return RemotingCommand.response_to(request, self.fail_code, "injected failure")
        header = decode_send_message_header(request)
        qid = header.queue_id
        if header.batch:
            stored = [
                self._store(header.topic, qid, body, _props(props), header.sys_flag, flag)
                for flag, body, props in decode_batch_body(request.body)
            ]
        else:
            stored = [
                self._store(
                    header.topic,
                    qid,
                    bytes(request.body),
                    header.properties or "",
                    header.sys_flag,
                    header.flag,
                )
            ]
        host, port = self.addr.split(":")
        ids = ",".join(create_offset_msg_id((host, int(port)), m.commit_log_offset) for m in stored)
        resp = SendMessageResponseHeader(
            msg_id=ids, queue_id=qid, queue_offset=stored[0].queue_offset
        )
        return RemotingCommand.response_to(request, 0, ext_fields=resp.to_ext_fields())

    def on_heartbeat(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.heartbeats.append(HeartbeatData.decode(request.body))
        if channel not in self.channels:
            self.channels.append(channel)
        return RemotingCommand.response_to(request, 0)

    def on_unregister(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.unregistered.append(UnregisterClientRequestHeader.from_command(request))
        return RemotingCommand.response_to(request, 0)

    def on_pull(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = PullMessageRequestHeader.from_command(request)
        self.pulls.append(h)
        queue = self.queues.get((h.topic, h.queue_id), [])
        found = queue[h.queue_offset : h.queue_offset + h.max_msg_nums]
        code = ResponseCode.SUCCESS if found else ResponseCode.PULL_NOT_FOUND
        resp = PullMessageResponseHeader(self.suggest, h.queue_offset + len(found), 0, len(queue))
        return RemotingCommand.response_to(
            request, code, ext_fields=resp.to_ext_fields(), body=b"".join(m.record for m in found)
        )

    def on_query_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = QueryConsumerOffsetRequestHeader.from_command(request)
        offset = self.offsets.get((h.consumer_group, h.topic, h.queue_id))
        if offset is None:
            return RemotingCommand.response_to(request, ResponseCode.QUERY_NOT_FOUND, "Not found")
        return RemotingCommand.response_to(
            request, 0, ext_fields=QueryConsumerOffsetResponseHeader(offset).to_ext_fields()
        )

    def on_update_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = UpdateConsumerOffsetRequestHeader.from_command(request)
        self.offsets[(h.consumer_group, h.topic, h.queue_id)] = h.commit_offset
        return RemotingCommand.response_to(request, 0)

    def on_max_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = GetMaxOffsetRequestHeader.from_command(request)
        n = len(self.queues.get((h.topic, h.queue_id), []))
        return RemotingCommand.response_to(
            request, 0, ext_fields=GetMaxOffsetResponseHeader(n).to_ext_fields()
        )


def _props(props: dict[str, str]) -> str:
    from mqcore.message.properties import encode_properties

    return encode_properties(props).decode()


class InMemoryCluster:
    """One real name-server processor and any number of fake brokers, in memory."""

    def __init__(self, tmp: Path, *, namesrv: str = NAMESRV) -> None:
        self.network = InMemoryNetwork()
        self.namesrv = namesrv
        self.routes = RouteInfoManager(time.monotonic)
        self.brokers: dict[str, FakeBroker] = {}
        self.slaves: dict[str, FakeBroker] = {}
        dispatcher = RequestDispatcher()
        NamesrvProcessor(
            NamesrvConfig(kv_config_path=str(tmp / "kv.json")),
            self.routes,
            KVConfigManager(tmp / "kv.json"),
        ).register_to(dispatcher)
        self.network.serve(namesrv, dispatcher)
        self._version = 0

    def add_broker(
        self,
        name: str,
        addr: str,
        topics: dict[str, int],
        *,
        broker_class: type[FakeBroker] = FakeBroker,
    ) -> FakeBroker:
        broker = broker_class(name, addr)
        self.brokers[name] = broker
        self.network.serve(addr, broker.dispatcher())
        self.register(name, topics)
        return broker

    def register(self, name: str, topics: dict[str, int], perm: int = 6) -> None:
        broker = self.brokers[name]
        self._version += 1
        table = {t: TopicConfig(t, n, n, perm=perm) for t, n in topics.items()}
        self.routes.register_broker(
            broker.cluster,
            broker.addr,
            name,
            0,
            broker.addr,
            TopicConfigSerializeWrapper(table, DataVersion(1_700_000_000_000, self._version)),
        )

    def add_slave(self, name: str, addr: str) -> FakeBroker:
        """Broker id 1 of ``name``: registers (no queues, as a slave) and serves ``addr``."""
        slave = FakeBroker(name, addr)
        self.slaves[name] = slave
        self.network.serve(addr, slave.dispatcher())
        self.routes.register_broker(slave.cluster, addr, name, 1, addr, None)
        return slave

    def unregister(self, name: str, broker_id: int = 0) -> None:
        """The name server forgets one node of ``name`` (as when its connection closes)."""
        node = self.brokers[name] if broker_id == 0 else self.slaves[name]
        self.routes.unregister_broker(node.cluster, node.addr, name, broker_id)

    def stop_broker(self, name: str) -> None:
        """Connections to the broker fail from now on (existing ones are closed)."""
        broker = self.brokers[name]
        self.network.stop(broker.addr)
        for ch in broker.channels:
            ch.close()

    def config(self, **kw: object) -> ClientConfig:
        network = self.network

        def factory(d: RequestDispatcher) -> InMemoryRemotingClient:
            return InMemoryRemotingClient(network, d)

        return ClientConfig(client_ip="10.0.0.1", remoting_factory=factory, **kw)  # type: ignore[arg-type]
