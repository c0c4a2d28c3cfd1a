"""QUERY_MESSAGE and VIEW_MESSAGE_BY_ID against a real in-process broker."""

from __future__ import annotations

from pathlib import Path

from mqcore.message import decode_records
from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.headers import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from tests.support.clients import TestClient, put
from tests.support.inproc import running_broker

FOREVER = 2**63 - 1


def query_fields(
    topic: str, key: str, max_num: int = 32, begin: int = 0, end: int = FOREVER, **kw: bool
) -> dict[str, str]:
    return QueryMessageRequestHeader(topic, key, max_num, begin, end, **kw).to_ext_fields()


async def test_query_by_key_and_unique_key(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        hits = [put(broker, "TopicQ", i % 2, keys=f"order-1 other-{i}") for i in range(3)]
        put(broker, "TopicQ", keys="order-2")
        put(broker, "TopicOther", keys="order-1")
        uniq = put(broker, "TopicQ", uniq="7F0000013079AAAA000000000000BEEF")
        client = TestClient(broker.broker_addr, "tool")
        try:
            resp = await client.invoke(RequestCode.QUERY_MESSAGE, query_fields("TopicQ", "order-1"))
            assert resp.code == ResponseCode.SUCCESS
            header = QueryMessageResponseHeader.from_command(resp)
            assert header.index_last_update_phyoffset > 0
            assert header.index_last_update_timestamp > 0
            found = decode_records(resp.body)
            assert sorted(m.commit_log_offset for m in found) == sorted(
                m.commit_log_offset for m in hits
            )
            assert {m.topic for m in found} == {"TopicQ"}
            # the body is the raw records, byte for byte
            raw = {bytes(broker.store.get_message(m.commit_log_offset)) for m in hits}
            assert len(resp.body) == sum(len(r) for r in raw)
            assert all(r in bytes(resp.body) for r in raw)

            # maxNum limits the answer
            resp = await client.invoke(
                RequestCode.QUERY_MESSAGE, query_fields("TopicQ", "order-1", max_num=1)
            )
            assert len(decode_records(resp.body)) == 1

            # a time range before the messages finds nothing
            resp = await client.invoke(
                RequestCode.QUERY_MESSAGE, query_fields("TopicQ", "order-1", 32, 0, 1000)
            )
            assert resp.code == ResponseCode.QUERY_NOT_FOUND
            assert resp.remark == "can not find message, maybe time range not correct"
            assert "indexLastUpdatePhyoffset" in resp.ext_fields

            # _UNIQUE_KEY_QUERY: the unique key index, maxNum from the broker's config
            fields = query_fields(
                "TopicQ", "7F0000013079AAAA000000000000BEEF", max_num=0, unique_key_query=True
            )
            assert fields["_UNIQUE_KEY_QUERY"] == "true"
            resp = await client.invoke(RequestCode.QUERY_MESSAGE, fields)
            assert resp.code == ResponseCode.SUCCESS
            (msg,) = decode_records(resp.body)
            assert msg.commit_log_offset == uniq.commit_log_offset
            assert msg.properties["UNIQ_KEY"] == "7F0000013079AAAA000000000000BEEF"

            # a missing required field
            resp = await client.invoke(RequestCode.QUERY_MESSAGE, {"topic": "TopicQ"})
            assert resp.code == ResponseCode.SYSTEM_ERROR and "key" in (resp.remark or "")
        finally:
            await client.close()


async def test_view_message_by_offset(tmp_path: Path) -> None:
    async with running_broker(tmp_path) as broker:
        msgs = [put(broker, "TopicV", body=f"body-{i}".encode()) for i in range(3)]
        client = TestClient(broker.broker_addr, "tool")
        try:
            for m in msgs:
                fields = ViewMessageRequestHeader(m.commit_log_offset).to_ext_fields()
                resp = await client.invoke(RequestCode.VIEW_MESSAGE_BY_ID, fields)
                assert resp.code == ResponseCode.SUCCESS
                assert bytes(resp.body) == bytes(broker.store.get_message(m.commit_log_offset))
                (decoded,) = decode_records(resp.body)
                assert decoded.body == m.body and decoded.msg_id == m.msg_id
            for bad in (-5, 7, msgs[-1].commit_log_offset + 10_000_000):
                fields = ViewMessageRequestHeader(bad).to_ext_fields()
                resp = await client.invoke(RequestCode.VIEW_MESSAGE_BY_ID, fields)
                assert resp.code == ResponseCode.SYSTEM_ERROR
                assert resp.remark == f"can not find message by the offset, {bad}"
            resp = await client.invoke(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": "x"})
            assert resp.code == ResponseCode.SYSTEM_ERROR
        finally:
            await client.close()
