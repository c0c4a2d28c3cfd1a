"""`mq`'s push consumer answers the requests a broker relays to it from tools:
CONSUME_MESSAGE_DIRECTLY (mqadmin consumeMessage, the dashboard's resend) runs its
listener on the message and reports 4.9.8's CMResult; GET_CONSUMER_STATUS_FROM_CLIENT
(through INVOKE_BROKER_TO_GET_CONSUMER_STATUS) reports the offsets it holds;
GET_CONSUMER_RUNNING_INFO (mqadmin consumerStatus) its ConsumerRunningInfo."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mqcore.client import (
    Admin,
    ConsumeFromWhere,
    ConsumeStatus,
    LitePullConsumer,
    Producer,
    PushConsumer,
    make_message,
)
from mqcore.client.consume_service import ConsumeContext
from mqcore.errors import MQBrokerError
from mqcore.message import MessageExt
from mqcore.protocol.bodies import MessageQueue
from mqcore.protocol.bodies.running_info import (
    PROP_CLIENT_VERSION,
    PROP_CONSUME_ORDERLY,
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_NAMESERVER_ADDR,
)
from tests.support.inproc import BROKER_NAME, running_broker, running_namesrv
from tests.support.polling import until

pytestmark = pytest.mark.timeout(60)


async def test_consume_directly_and_consumer_status(tmp_path: Path) -> None:
    seen: list[tuple[str, bytes]] = []
    mode = {"answer": "ok"}

    def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        seen.extend((m.topic, bytes(m.body)) for m in msgs)
        if mode["answer"] == "raise":
            raise RuntimeError("listener broke")
        if mode["answer"] == "later":
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    async with running_namesrv(tmp_path) as ns:
        addr = f"127.0.0.1:{ns.port}"
        async with running_broker(tmp_path, addr) as broker:
            await until(lambda: bool(ns.routes.live_broker_addrs()), what="registration")
            async with Admin(addr) as admin, Producer("direct-pg", addr) as producer:
                await admin.create_topic("Direct", queues=1)
                sent = await producer.send(make_message("Direct", b"direct-body"))
                consumer = PushConsumer(
                    "direct-cg", namesrv=addr, consume_from_where=ConsumeFromWhere.FIRST
                )
                consumer.subscribe("Direct", "*")
                consumer.register_listener(listener)
                await consumer.start()
                try:
                    await until(lambda: len(seen) == 1, timeout=20, what="first delivery")
                    client_id = consumer.instance.client_id
                    answers = {}
                    for answer in ("ok", "later", "raise"):
                        mode["answer"] = answer
                        answers[answer] = await admin.consume_message_directly(
                            broker.broker_addr, "direct-cg", client_id, sent.offset_msg_id
                        )
                    queue = MessageQueue("Direct", BROKER_NAME, 0)
                    await until(lambda: consumer.position(queue) == 1, what="offset")
                    status = await admin.consumer_status("direct-cg", "Direct")
                finally:
                    await consumer.shutdown()
    assert seen == [("Direct", b"direct-body")] * 4
    assert answers["ok"]["consumeResult"] == "CR_SUCCESS"
    assert answers["ok"]["order"] is False and answers["ok"]["autoCommit"] is True
    assert answers["later"]["consumeResult"] == "CR_LATER"
    assert answers["raise"]["consumeResult"] == "CR_THROW_EXCEPTION"
    assert "listener broke" in answers["raise"]["remark"]
    assert list(status) == [client_id]
    assert [(mq.topic, offset) for mq, offset in status[client_id].items()] == [("Direct", 1)]


async def test_running_info_as_an_admin_reads_it(tmp_path: Path) -> None:
    """GET_CONSUMER_RUNNING_INFO through the broker: the push consumer's settings (the
    keys mqadmin consumerStatus parses), subscriptions, each held queue, per-topic rates,
    and with jstack its threads and tasks; a lite pull consumer answers too."""
    release = asyncio.Event()

    async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
        if bytes(msgs[0].body) == b"hold":
            await release.wait()  # a listener busy in the background: the stack shows it
        return ConsumeStatus.CONSUME_SUCCESS

    async with running_namesrv(tmp_path) as ns:
        addr = f"127.0.0.1:{ns.port}"
        async with running_broker(tmp_path, addr):
            await until(lambda: bool(ns.routes.live_broker_addrs()), what="registration")
            async with Admin(addr) as admin, Producer("info-pg", addr) as producer:
                await admin.create_topic("Info", queues=2)
                for i in range(10):
                    await producer.send(make_message("Info", f"m{i}".encode()))
                consumer = PushConsumer(
                    "info-cg", namesrv=addr, consume_from_where=ConsumeFromWhere.FIRST
                )
                consumer.subscribe("Info", "*")
                consumer.register_listener(listener)
                puller = LitePullConsumer("info-pull-cg", namesrv=addr)
                puller.subscribe("Info", "*")
                await consumer.start()
                await puller.start()
                try:
                    consumed = lambda: consumer.stats.status("Info").consume_ok_tps > 0  # noqa: E731
                    await until(consumed, timeout=20, what="consumption")
                    await producer.send(make_message("Info", b"hold"))
                    await until(
                        lambda: any(pq.msg_count for pq in consumer._held_queues().values()),
                        timeout=20,
                        what="a held message",
                    )
                    cid = consumer.instance.client_id
                    plain = await admin.consumer_running_info("info-cg", cid)
                    stacked = await admin.consumer_running_info("info-cg", cid, jstack=True)
                    pull_cid = puller.instance.client_id
                    pulled = await admin.consumer_running_info("info-pull-cg", pull_cid)
                    with pytest.raises(MQBrokerError, match="not online"):
                        await admin.consumer_running_info("info-cg", "nobody@1")
                finally:
                    release.set()
                    await consumer.shutdown()
                    await puller.shutdown()
    props = plain.properties
    assert props[PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
    assert props[PROP_CONSUME_ORDERLY] == "false" and props[PROP_CLIENT_VERSION] == "V4_9_8"
    assert int(props[PROP_CONSUMER_START_TIMESTAMP]) > 0  # mqadmin parses it as a long
    assert props["consumerGroup"] == "info-cg" and props[PROP_NAMESERVER_ADDR] == addr
    assert {s.topic for s in plain.subscription_set} == {"Info", "%RETRY%info-cg"}
    queues = {mq.queue_id: pq for mq, pq in plain.mq_table.items() if mq.topic == "Info"}
    assert sorted(queues) == [0, 1]
    assert sum(pq.commit_offset for pq in queues.values()) >= 10
    assert sum(pq.cached_msg_count for pq in queues.values()) == 1  # the held one
    assert all(pq.last_pull_timestamp > 0 and not pq.dropped for pq in queues.values())
    figures = plain.status_table["Info"]
    assert figures.consume_ok_tps > 0 and figures.pull_tps > 0 and figures.pull_rt > 0
    assert plain.jstack is None
    assert stacked.jstack is not None and '"MainThread"' in stacked.jstack
    assert "release.wait()" in stacked.jstack  # where the busy listener waits
    assert pulled.properties[PROP_CONSUME_TYPE] == "CONSUME_ACTIVELY"
    assert {mq.topic for mq in pulled.mq_table} == {"Info"}
