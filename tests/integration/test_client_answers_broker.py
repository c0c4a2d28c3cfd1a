"""`mq`'s push consumer answers the requests a broker relays to it from tools:
CONSUME_MESSAGE_DIRECTLY (mqadmin consumeMessage, the dashboard's resend) runs its
listener on the message and reports 4.9.8's CMResult; GET_CONSUMER_STATUS_FROM_CLIENT
(through INVOKE_BROKER_TO_GET_CONSUMER_STATUS) reports the offsets it holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcore.client import (
    Admin,
    ConsumeFromWhere,
    ConsumeStatus,
    Producer,
    PushConsumer,
    make_message,
)
from mqcore.client.consume_service import ConsumeContext
from mqcore.message import MessageExt
from mqcore.protocol.bodies import MessageQueue
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
