"""A consumer connection that answers what a broker relays to a client
(CONSUME_MESSAGE_DIRECTLY, GET_CONSUMER_STATUS_FROM_CLIENT, GET_CONSUMER_RUNNING_INFO)
with fixed answers, and records the requests; for the relay tests."""

from __future__ import annotations

import orjson

from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import ConsumerData, HeartbeatData, MessageQueue, SubscriptionData
from mqcore.protocol.bodies.consumer_admin import GetConsumerStatusBody
from mqcore.remoting import Channel, RemotingClient

BROKER_NAME = "broker-a"


class AnsweringConsumer:
    """A consumer connection that answers what the broker relays to it."""

    def __init__(self, addr: str, client_id: str, group: str, topic: str) -> None:
        self.addr, self.client_id, self.group, self.topic = addr, client_id, group, topic
        self.received: list[RemotingCommand] = []
        self.client = RemotingClient()
        self.client.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self._directly)
        self.client.register(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, self._status)
        self.client.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self._running_info)

    def _running_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.received.append(request)
        body = orjson.dumps({"properties": {"PROP_CONSUMER_START_TIMESTAMP": "1"}})
        return RemotingCommand.response_to(request, body=body)

    def _directly(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.received.append(request)
        body = orjson.dumps({"consumeResult": "CR_SUCCESS", "order": False, "spentTimeMills": 3})
        return RemotingCommand.response_to(request, body=body)

    def _status(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.received.append(request)
        mq = MessageQueue(self.topic, BROKER_NAME, 0)
        return RemotingCommand.response_to(
            request, body=GetConsumerStatusBody(message_queue_table={mq: 7}).encode()
        )

    async def heartbeat(self) -> None:
        sub = SubscriptionData(self.topic, "*", sub_version=1)
        data = HeartbeatData(
            self.client_id, [], [ConsumerData(self.group, subscription_data_set=[sub])]
        )
        request = RemotingCommand.request(RequestCode.HEART_BEAT, body=data.encode())
        assert (await self.client.invoke(self.addr, request, 5.0)).code == ResponseCode.SUCCESS

    async def close(self) -> None:
        await self.client.close()
