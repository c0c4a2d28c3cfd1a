"""MQClientAPI request helpers over fake brokers: pull statuses, offsets, id lookups."""

from __future__ import annotations

import pytest
from client_fakes import NAMESRV, InMemoryCluster

from mqcore.client.api import PullStatus, parse_tags
from mqcore.client.instance import ClientInstance
from mqcore.client.producer import Producer, make_message
from mqcore.errors import MessageIdError
from mqcore.protocol.bodies import MessageQueue


def test_parse_tags() -> None:
    assert parse_tags("*") == parse_tags("") == parse_tags(None) == frozenset()
    assert parse_tags("A || B ||  ") == {"A", "B"}


async def test_pull_filters_tags_and_sets_min_max(cluster: InMemoryCluster) -> None:
    async with Producer("pg", namesrv=NAMESRV, client_config=cluster.config()) as p:
        for i, tag in enumerate("ABAB"):
            await p.send(make_message("T", f"m{i}", tags=tag))
        api = p.instance.api
        mq = MessageQueue("T", "broker-a", 0)
        result = await api.pull(mq, group="g", offset=0, expression="A", suspend=False)
        assert result.status is PullStatus.FOUND and result.next_begin_offset == 4
        assert [m.body for m in result.messages] == [b"m0", b"m2"]
        assert result.messages[0].properties["MAX_OFFSET"] == "4"
        empty = await api.pull(mq, group="g", offset=4, suspend=False)
        assert empty.status is PullStatus.NO_NEW_MSG and not empty.messages
        assert api.pull_from_which_node[mq] == 0


async def test_consumer_offsets_and_max_offset(cluster: InMemoryCluster) -> None:
    inst = ClientInstance(NAMESRV, config=cluster.config())
    try:
        await inst.update_route("T")
        mq = MessageQueue("T", "broker-a", 0)
        assert await inst.api.query_consumer_offset("g", mq) is None  # code 22
        await inst.api.update_consumer_offset("g", mq, 3, oneway=False)
        assert await inst.api.query_consumer_offset("g", mq) == 3
        assert await inst.api.max_offset(mq) == 0
        assert await inst.api.topic_queues("T") == [mq]
    finally:
        await inst.shutdown()


async def test_unique_key_is_not_taken_for_an_offset_msg_id(cluster: InMemoryCluster) -> None:
    inst = ClientInstance(NAMESRV, config=cluster.config())
    try:
        with pytest.raises(MessageIdError, match="unique key"):
            await inst.api.view_message_by_id("0A00000148B718B4AAC2000000000000")
        with pytest.raises(MessageIdError):
            await inst.api.view_message_by_id("not-hex")
    finally:
        await inst.shutdown()
