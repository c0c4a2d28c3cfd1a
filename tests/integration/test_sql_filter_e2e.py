"""The seed example end to end: a push consumer with ``score > 98`` through a real name
server and broker with ``enablePropertyFilter=true`` gets exactly the numeric scores
above 98 (the broker filters; strings that are not numbers and a missing property never
match)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcore.client import Admin, Producer, PushConsumer, make_message
from mqcore.client.consume_service import ConsumeContext, ConsumeOrderlyStatus
from mqcore.client.rebalance import ConsumeFromWhere, MessageSelector
from mqcore.message import MessageExt
from tests.support.inproc import LiveCluster
from tests.support.polling import until

pytestmark = pytest.mark.timeout(60)

SCORES: list[str | None] = ["99", "98", "100", "98.5", "abc", None, "150"]
SENTINEL = "1000"


async def test_score_above_98_gets_exactly_the_numbers_above(tmp_path: Path) -> None:
    cluster = await LiveCluster(tmp_path).start("broker-a")
    consumer: PushConsumer | None = None
    try:
        cluster.brokers["broker-a"].config.enable_property_filter = True
        async with Admin(cluster.addr) as admin:
            await admin.create_topic("Scores", queues=1)  # one queue: the order holds
        await cluster.wait_route("Scores")
        async with Producer("p-scores", cluster.addr) as producer:
            # the sentinel goes last: once it is in, everything before it was decided
            for i, score in enumerate([*SCORES, SENTINEL]):
                props = {"score": score} if score is not None else {}
                await producer.send(make_message("Scores", f"m{i}", properties=props))
        got: list[str | None] = []

        def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeOrderlyStatus:
            got.extend(m.properties.get("score") for m in msgs)
            return ConsumeOrderlyStatus.SUCCESS

        consumer = PushConsumer(
            "g-scores", namesrv=cluster.addr, consume_from_where=ConsumeFromWhere.FIRST,
            instance_name="scores",
        )  # fmt: skip
        consumer.subscribe("Scores", MessageSelector.by_sql("score > 98"))
        consumer.register_listener(listener, orderly=True)  # in queue order
        await consumer.start()
        await until(lambda: SENTINEL in got, what="the sentinel message")
        assert got == ["99", "100", "150", SENTINEL]
    finally:
        if consumer is not None:
            await consumer.shutdown()
        await cluster.stop()
