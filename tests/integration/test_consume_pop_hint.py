"""`mq consume --pop` against a broker that does not serve POP (as RocketMQ 4.x): the
error says to drop --pop."""

from __future__ import annotations

import asyncio

import pytest

from mqcli.commands.consume_pop import PopSpec, auto_decider, pop_consume
from mqcli.commands.consume_sink import Sink
from mqcore.errors import MQBrokerError
from mqcore.protocol import RequestCode, ResponseCode
from tests.support.inproc import LiveCluster

pytestmark = pytest.mark.cluster(topics={"Old": 1})


async def test_a_broker_without_pop_gets_a_hint(cluster: LiveCluster) -> None:
    for server in cluster.broker.servers:  # what a 4.x broker answers to POP_MESSAGE
        server.dispatcher._processors.pop(RequestCode.POP_MESSAGE)
    sink = Sink("json", None, "utf-8", 1, show_result=False, quiet=True)
    spec = PopSpec("Old", "g-old", follow=False)
    with pytest.raises(MQBrokerError) as raised:
        await pop_consume(cluster.addr, spec, sink, asyncio.Event(), auto_decider(0.0))
    assert raised.value.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert raised.value.hint is not None and "drop --pop" in raised.value.hint
