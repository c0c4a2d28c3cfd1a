"""`mq broker` end to end: send, pull, tag filtering, long polling, offsets, bad requests.

One real broker process (with a real name server) serves the whole module; each test
uses its own topics, so tests do not see each other's messages.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from mqcore.message.ids import decode_offset_msg_id
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.bodies import TopicRouteData
from mqcore.protocol.headers import GetRouteInfoRequestHeader
from mqcore.remoting import RemotingClient
from tests.support.clients import PullResult, RawBrokerClient, send_header
from tests.support.cluster import Cluster
from tests.support.polling import until
from tests.support.processes import BrokerProcess

pytestmark = pytest.mark.process_cluster(
    maxMessageSize=str(64 * 1024), enablePropertyFilter="true", clean_exit=True
)


@pytest.fixture
def broker(process_cluster: Cluster) -> BrokerProcess:
    return process_cluster.broker_processes[0]


@pytest.fixture
async def client(broker: BrokerProcess) -> AsyncIterator[RawBrokerClient]:
    async with RawBrokerClient(broker.addr) as c:
        yield c


def fast_addr(addr: str) -> str:
    host, port = addr.rsplit(":", 1)
    return f"{host}:{int(port) - 2}"


async def test_send_and_pull_single_messages(
    client: RawBrokerClient, broker: BrokerProcess
) -> None:
    sent = []
    for i in range(5):
        r = await client.send("SendPull", f"msg-{i}".encode(), tags="TagA", keys=f"key-{i}")
        assert r.code == ResponseCode.SUCCESS, r.remark
        h = send_header(r)
        assert (h.queue_id, h.queue_offset) == (0, i)
        assert r.ext_fields["MSG_REGION"] == "DefaultRegion" and r.ext_fields["TRACE_ON"] == "true"
        ip, port, _ = decode_offset_msg_id(h.msg_id)
        assert f"{ip}:{port}" == broker.addr
        sent.append(h.msg_id)
    result = await client.pull("SendPull", 0, 0)
    assert result.code == ResponseCode.SUCCESS and result.remark == "FOUND"
    assert [m.body for m in result.messages] == [f"msg-{i}".encode() for i in range(5)]
    assert (result.next_begin_offset, result.min_offset, result.max_offset) == (5, 0, 5)
    first = result.messages[0]
    assert first.tags == "TagA" and first.keys == ["key-0"]
    assert first.properties["CLUSTER"] == "DefaultCluster"
    assert "WAIT" not in first.properties and first.unique_key
    assert [m.msg_id for m in result.messages] == sent
    # The auto-created topic got min(client 4, TBW102 8) queues.
    assert (await client.send("SendPull", b"x", queue_id=3)).code == ResponseCode.SUCCESS
    r = await client.send("SendPull", b"x", queue_id=4)
    assert r.code == ResponseCode.SYSTEM_ERROR and "queueId[4] is illegal" in (r.remark or "")
    # Pull limits: maxMsgNums, and offsets past the end.
    r2 = await client.pull("SendPull", 0, 1, max_nums=2)
    assert [m.body for m in r2.messages] == [b"msg-1", b"msg-2"] and r2.next_begin_offset == 3
    assert (await client.pull("SendPull", 0, 5)).code == ResponseCode.PULL_NOT_FOUND
    moved = await client.pull("SendPull", 0, 50)
    # RocketMQ's getMessage: past the end of a queue whose min offset is 0 -> back to 0.
    assert moved.code == ResponseCode.PULL_OFFSET_MOVED and moved.next_begin_offset == 0
    empty = await client.pull("SendPull", 1, 0)
    assert empty.code == ResponseCode.PULL_NOT_FOUND and empty.next_begin_offset == 0
    assert (await client.pull("SendPull", 1, 7)).code == ResponseCode.PULL_OFFSET_MOVED


async def test_batch_send_and_pull(client: RawBrokerClient) -> None:
    bodies = [f"batch-{i}".encode() * 10 for i in range(32)]
    r = await client.send_batch("BatchTopic", bodies, tags="B", queue_id=1)
    assert r.code == ResponseCode.SUCCESS, r.remark
    h = send_header(r)
    assert h.queue_id == 1 and h.queue_offset == 0
    ids = h.msg_id.split(",")
    assert len(ids) == 32
    r = await client.send_batch("BatchTopic", [b"more"], queue_id=1)
    assert send_header(r).queue_offset == 32
    msgs = await client.pull_all("BatchTopic", 1)
    assert [m.body for m in msgs] == [*bodies, b"more"]
    assert [m.queue_offset for m in msgs] == list(range(33))
    assert [m.msg_id for m in msgs[:32]] == ids
    assert msgs[0].properties["WAIT"] == "true" and msgs[0].properties["CLUSTER"]


async def test_send_answer_carries_the_stored_unique_key(client: RawBrokerClient) -> None:
    # No UNIQ_KEY sent (as ali-ons): the broker makes one, stores it and answers it.
    r = await client.send("UniqKey", b"no-key", queue_id=2)
    assert r.code == ResponseCode.SUCCESS, r.remark
    generated = r.ext_fields["uniqKey"]
    assert generated and send_header(r).queue_offset == 0  # the header still decodes
    r = await client.send("UniqKey", b"own-key", queue_id=2, properties={"UNIQ_KEY": "C0FFEE"})
    assert r.ext_fields["uniqKey"] == "C0FFEE"
    msgs = await client.pull_all("UniqKey", 2)
    assert [m.unique_key for m in msgs] == [generated, "C0FFEE"]
    # A batch without keys gets none (as a 4.9.8 broker): the field is left out.
    r = await client.send_batch("UniqKey", [b"b0", b"b1"], queue_id=2)
    assert r.code == ResponseCode.SUCCESS and "uniqKey" not in r.ext_fields


async def test_tag_filtering(client: RawBrokerClient) -> None:
    for i in range(12):
        tag = ("TagA", "TagB", "TagC")[i % 3]
        assert (await client.send("Tagged", f"{tag}-{i}".encode(), tags=tag)).code == 0
    a_or_c = await client.pull("Tagged", 0, 0, subscription="TagA || TagC")
    assert [m.tags for m in a_or_c.messages] == ["TagA", "TagC"] * 4
    assert a_or_c.next_begin_offset == 12
    only_b = await client.pull("Tagged", 0, 0, subscription="TagB", max_nums=2)
    assert [m.body for m in only_b.messages] == [b"TagB-1", b"TagB-4"]
    assert only_b.next_begin_offset == 5
    none = await client.pull("Tagged", 0, 0, subscription="Nope")
    assert none.code == ResponseCode.PULL_RETRY_IMMEDIATELY and none.next_begin_offset == 12
    star = await client.pull("Tagged", 0, 0, subscription="*")
    assert len(star.messages) == 12


async def test_sql92_filtering_on_properties(client: RawBrokerClient) -> None:
    for i in range(10):
        r = await client.send("Sql", f"m{i}".encode(), tags="T", properties={"a": str(i)})
        assert r.code == 0
    hits = await client.pull(
        "Sql", 0, 0, subscription="a >= 7 AND TAGS = 'T'", expression_type="SQL92"
    )
    assert [m.body for m in hits.messages] == [b"m7", b"m8", b"m9"]
    bad = await client.pull("Sql", 0, 0, subscription="a >>> 1", expression_type="SQL92")
    assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_long_polling_answers_soon_after_a_send(
    client: RawBrokerClient, broker: BrokerProcess
) -> None:
    assert (await client.send("LongPoll", b"first")).code == 0
    async with RawBrokerClient(broker.addr) as producer:
        # A held pull answers promptly once a matching message lands.
        started = time.monotonic()

        async def pull_wanted(offset: int) -> PullResult:
            """As a consumer pulls: when the pull came after only unmatched messages (the
            sends below race it on another connection) the broker answers
            PULL_RETRY_IMMEDIATELY with where to go on, instead of holding it."""
            while True:
                result = await client.pull(
                    "LongPoll", 0, offset, suspend_ms=20_000, subscription="Wanted", timeout=30
                )
                if result.code != ResponseCode.PULL_RETRY_IMMEDIATELY:
                    return result
                assert result.next_begin_offset > offset, result
                offset = result.next_begin_offset

        held = asyncio.create_task(pull_wanted(1))
        deadline = time.monotonic() + 15
        while not held.done() and time.monotonic() < deadline:
            # Unmatched tags do not answer the hold; keep sending until the hold is in place.
            assert (await producer.send("LongPoll", b"other", tags="Other")).code == 0
            assert (await producer.send("LongPoll", b"wanted", tags="Wanted")).code == 0
            await asyncio.wait({held}, timeout=0.2)
        result = await asyncio.wait_for(held, 15)
        assert time.monotonic() - started < 15  # well before the 20 s hold would end
        assert result.code == ResponseCode.SUCCESS
        assert result.messages[0].body == b"wanted"
        # With nothing arriving it answers PULL_NOT_FOUND after the hold time, not before.
        end = await client.max_offset("LongPoll", 0)
        started = time.monotonic()
        nothing = await client.pull("LongPoll", 0, end, suspend_ms=600, timeout=10)
        elapsed = time.monotonic() - started
        assert nothing.code == ResponseCode.PULL_NOT_FOUND and nothing.next_begin_offset == end
        assert 0.5 <= elapsed < 10  # the 0.6 s hold, with room for a loaded machine


async def test_many_held_pulls_each_answered_once(
    client: RawBrokerClient, broker: BrokerProcess
) -> None:
    async with RawBrokerClient(broker.addr) as producer:
        assert (await producer.send("ManyHeld", b"zero")).code == 0
        pulls = [
            asyncio.create_task(client.pull("ManyHeld", 0, 1, suspend_ms=15_000, timeout=30))
            for _ in range(20)
        ]
        deadline = time.monotonic() + 10
        while not all(p.done() for p in pulls) and time.monotonic() < deadline:
            assert (await producer.send("ManyHeld", b"wake")).code == 0
            await asyncio.wait(pulls, timeout=0.2, return_when=asyncio.ALL_COMPLETED)
        results = await asyncio.wait_for(asyncio.gather(*pulls), 5)
        assert all(r.code == ResponseCode.SUCCESS for r in results)


async def test_offsets_commit_query_and_piggyback(client: RawBrokerClient) -> None:
    assert (await client.send("Offsets", b"a")).code == 0
    # No offset yet on a young queue: 4.9.8 answers 0 (the trap in spec 8.5).
    assert await client.query_offset("fresh-group", "Offsets", 0) == (0, 0)
    assert await client.update_offset("g-off", "Offsets", 0, 1) == ResponseCode.SUCCESS
    assert await client.query_offset("g-off", "Offsets", 0) == (0, 1)
    await client.pull("Offsets", 0, 0, group="g-pig", commit_offset=7)
    assert await client.query_offset("g-pig", "Offsets", 0) == (0, 7)
    assert await client.max_offset("Offsets", 0) == 1


async def test_vip_port_serves_send_but_not_pull(broker: BrokerProcess) -> None:
    async with RawBrokerClient(fast_addr(broker.addr)) as fast:
        r = await fast.send("ViaVip", b"vip")
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert decode_offset_msg_id(send_header(r).msg_id)[1] == int(broker.addr.rsplit(":")[1])
        pull = await fast.pull("ViaVip", 0, 0)
        assert pull.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    async with RawBrokerClient(broker.addr) as main:
        assert [m.body for m in await main.pull_all("ViaVip", 0)] == [b"vip"]


async def test_bad_requests_get_codes_and_the_broker_keeps_serving(
    client: RawBrokerClient, broker: BrokerProcess
) -> None:
    async with RawBrokerClient(broker.addr) as other:
        assert (await other.send("Healthy", b"before")).code == 0

        bad_topic = await client.send("bad topic!", b"x")
        assert bad_topic.code == ResponseCode.SYSTEM_ERROR and "illegal" in (bad_topic.remark or "")
        too_long = await client.send("T" * 128, b"x")
        assert too_long.code == ResponseCode.SYSTEM_ERROR and "127" in (too_long.remark or "")
        forbidden = await client.send("SCHEDULE_TOPIC_XXXX", b"x")
        assert forbidden.code == ResponseCode.NO_PERMISSION
        oversized = await client.send("Healthy", b"x" * (64 * 1024 + 1))
        assert oversized.code == ResponseCode.MESSAGE_ILLEGAL
        delayed_batch = await client.send_batch("Healthy", [b"a"], batch_properties={"DELAY": "3"})
        assert delayed_batch.code == ResponseCode.MESSAGE_ILLEGAL
        garbage_batch = client.batch_request("Healthy", [b"a", b"b"])
        garbage_batch = RemotingCommand.request(
            garbage_batch.code, garbage_batch.ext_fields, bytes(garbage_batch.body)[:-3]
        )
        assert (await client.invoke(garbage_batch)).code == ResponseCode.MESSAGE_ILLEGAL
        no_header = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"b": "Healthy"}, b"x")
        r = await client.invoke(no_header)
        assert r.code == ResponseCode.SYSTEM_ERROR and r.remark
        bad_pull = RemotingCommand.request(RequestCode.PULL_MESSAGE, {"topic": "Healthy"})
        assert (await client.invoke(bad_pull)).code == ResponseCode.SYSTEM_ERROR
        unknown_topic = await client.pull("NoSuchTopic", 0, 0)
        assert unknown_topic.code == ResponseCode.TOPIC_NOT_EXIST
        bad_queue = await client.pull("Healthy", 99, 0)
        assert bad_queue.code == ResponseCode.SYSTEM_ERROR
        no_sub = await client.pull("Healthy", 0, 0, subscription=None, group="unregistered")
        assert no_sub.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
        unknown_code = await client.invoke(RemotingCommand.request(9999))
        assert unknown_code.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

        # Nothing partial was written; everyone is still served.
        assert (await other.send("Healthy", b"after")).code == 0
        assert [m.body for m in await other.pull_all("Healthy", 0)] == [b"before", b"after"]


async def test_route_at_the_name_server_lists_auto_created_topics(
    process_cluster: Cluster, broker: BrokerProcess, client: RawBrokerClient
) -> None:
    assert (await client.send("Routed", b"x")).code == 0
    async with RemotingClient() as rc:
        answers: list[RemotingCommand] = []

        async def routed() -> bool:
            request = RemotingCommand.request(
                RequestCode.GET_ROUTEINFO_BY_TOPIC,
                GetRouteInfoRequestHeader("Routed").to_ext_fields(),
            )
            answers.append(await rc.invoke(process_cluster.namesrv, request))
            return answers[-1].code == ResponseCode.SUCCESS

        await until(routed, 10, lambda: f"route of Routed: {answers[-1].remark}", interval=0.05)
        r = answers[-1]
        route = TopicRouteData.decode(r.body)
        assert route.broker_datas[0].broker_addrs == {0: broker.addr}
        assert route.queue_datas[0].write_queue_nums == 4
