"""Ordered messages and the two message models from ali-ons (npm ``ali-ons@3``, the
pure-JS RocketMQ 4.x client) against an in-process mq name server and broker.

* ordered: ali-ons sends with ``msg.shardingKey`` (since 3.12: the queue is
  ``md5(key)[0:4] % queue count``, see ``producer/topic_publish_info.js``), so each key's
  messages share one queue and get increasing queue offsets. Read back in send order per
  key by an ali-ons push consumer and by our orderly PushConsumer, which locks every queue
  at the broker (LOCK_BATCH_MQ); ali-ons also reads our producer's ``select_by_hash``
  stream in order. ali-ons 3.12.0 bug: a key whose hash picks queue 0 is not
  pinned (``queueId = queueIds[queueIndex] || ''`` turns queue 0 into ``''`` and
  ``if (queueId && mq.queueId !== queueId)`` then lets any queue through), so such a key's
  messages go round-robin; the keys here avoid queue 0.
* ali-ons has NO orderly consumer: ``lib/protocol/request_code.js`` defines
  ``LOCK_BATCH_MQ = 41`` and nothing in the package sends it (``ProcessQueue.locked`` is
  never set). Its push consumer works one message at a time per queue
  (``parallelConsumeLimit: 1``), in queue-offset order, but unlocked: two consumers of a
  group may overlap on a queue while a rebalance moves it. The tests with an ali-ons
  consumer therefore check the order and that the broker holds no lock for its group.
* broadcasting: ``isBroadcast: true``. Two ali-ons consumers of one group each receive
  every message; their offsets stay on the client (``persistent: true`` writes
  ``$HOME/.rocketmq_offsets_node/<clientId>/<group>/offsets.json``) and never reach the
  broker: its consumer offset table has no entry for the group, as on RocketMQ 4.9.8 (a
  broadcasting pull carries no commit flag and the client never sends
  UPDATE_CONSUMER_OFFSET). A clustering ali-ons consumer beside them does leave an entry,
  so the check can see one.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from interop_support import alions_env, registered, run_json_lines
from test_alions_special import NodeConsumer, node_consumer

from mqcore.client import (
    Admin,
    ConsumeContext,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    MessageExt,
    Producer,
    PushConsumer,
    make_message,
)
from mqcore.client.producer import select_by_hash
from mqcore.errors import MQBrokerError
from mqcore.protocol import ResponseCode
from mqcore.protocol.bodies import ConsumerConnection
from tests.support.inproc import BROKER_NAME, running_broker, running_namesrv
from tests.support.polling import until

pytestmark = pytest.mark.interop

SCRIPT = Path(__file__).with_name("alions_order.js")
QUEUES = 4
# ali-ons 3.12.0 cannot pin a key to queue 0 (see the module docstring): none of these is.
KEYS = ["order-a", "order-b", "order-c", "order-e", "order-g"]
PER_KEY = 8


def alions_queue(key: str, queues: int = QUEUES) -> int:
    """The queue ali-ons 3.12 sends a sharding key to (first 4 md5 bytes, big-endian)."""
    return int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "big") % queues


async def produce_sharded(alions_dir: Path, namesrv: str, topic: str) -> list[dict[str, Any]]:
    sent = await run_json_lines(
        ["node", str(SCRIPT)],
        "produce-sharded",
        namesrv,
        topic,
        ",".join(KEYS),
        str(PER_KEY),
        env=alions_env(alions_dir),
        timeout=30,
    )
    assert [s["status"] for s in sent] == ["SEND_OK"] * len(KEYS) * PER_KEY
    for s in sent:  # ali-ons reports the broker's answer header: strings
        s["queueId"], s["queueOffset"] = int(s["queueId"]), int(s["queueOffset"])
    for key in KEYS:
        mine = [s for s in sent if s["key"] == key]
        assert [s["seq"] for s in mine] == list(range(PER_KEY))
        assert {s["queueId"] for s in mine} == {alions_queue(key)}, key
        offsets = [s["queueOffset"] for s in mine]
        assert offsets == sorted(offsets) and len(set(offsets)) == PER_KEY, (key, offsets)
    return sent


def test_keys_share_queues() -> None:
    """The order tests interleave keys within queues (more keys than the queues they use)
    and avoid queue 0, which ali-ons does not pin."""
    queues = {alions_queue(k) for k in KEYS}
    assert 1 < len(queues) < len(KEYS) and 0 not in queues


SentAt = dict[tuple[str, int], tuple[int, int]]
"""(key, seq) -> (queue id, queue offset) as the producer was told."""


async def alions_reads_in_order(
    tmp_path: Path,
    alions_dir: Path,
    topic: str,
    produce: Callable[[str], Awaitable[SentAt]],
    *,
    sharding_key: bool,
) -> None:
    """An ali-ons push consumer gets every key's messages in send order, each at the queue
    and offset the producer was told; the broker never holds a lock for its group."""
    group = f"{topic}-ons-cg"
    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, ns.listen_address) as broker,
    ):
        async with Admin(namesrv=ns.listen_address) as admin:
            await registered(admin)
            await admin.create_topic(topic, queues=QUEUES)
        total = len(KEYS) * PER_KEY
        args = ("consume", ns.listen_address, topic, group, "clustering", "ord")
        async with node_consumer(alions_dir, *args, script=SCRIPT) as ons:
            await ons.until(lambda: any("ready" in line for line in ons.lines), 15, "ready")
            # produced while the consumer is pulling: the keys arrive over several pulls
            sent_at = await produce(ns.listen_address)
            await ons.until(lambda: len(ons.messages) >= total, 20, f"{total} messages")
            # ali-ons consumed without ever locking a queue
            assert group not in broker.locks.table
        assert [e for e in ons.lines if "error" in e] == []
        by_key: dict[str, list[int]] = collections.defaultdict(list)
        for m in ons.messages:
            key, seq = m["body"].rsplit(":", 1)
            assert m["shardingKey"] == (key if sharding_key else None)
            assert (m["queueId"], m["queueOffset"]) == sent_at[(key, int(seq))]
            by_key[key].append(int(seq))
        assert dict(by_key) == {key: list(range(PER_KEY)) for key in KEYS}


async def test_alions_sharding_key_order_to_alions_consumer(
    tmp_path: Path, alions_dir: Path
) -> None:
    async def produce(namesrv: str) -> SentAt:
        sent = await produce_sharded(alions_dir, namesrv, "OnsOrder")
        return {(s["key"], s["seq"]): (s["queueId"], s["queueOffset"]) for s in sent}

    await alions_reads_in_order(tmp_path, alions_dir, "OnsOrder", produce, sharding_key=True)


async def test_mq_selector_order_to_alions_consumer(tmp_path: Path, alions_dir: Path) -> None:
    async def produce(namesrv: str) -> SentAt:
        sent_at: SentAt = {}
        async with Producer("py-order-pg", namesrv=namesrv) as producer:
            for seq in range(PER_KEY):
                for key in KEYS:
                    msg = make_message("OnsOrderIn", f"{key}:{seq}", tags="O", keys=key)
                    r = await producer.send(msg, selector=select_by_hash, arg=key)
                    assert r.ok
                    sent_at[(key, seq)] = (r.message_queue.queue_id, r.queue_offset)
        # the selector spread the keys, so queues interleave and differ between keys
        assert len({qid for qid, _ in sent_at.values()}) > 1
        return sent_at

    await alions_reads_in_order(tmp_path, alions_dir, "OnsOrderIn", produce, sharding_key=False)


async def test_alions_sharding_key_order_to_mq_orderly_consumer(
    tmp_path: Path, alions_dir: Path
) -> None:
    group, topic = "py-order-cg", "OnsOrderPy"
    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, ns.listen_address) as broker,
    ):
        async with Admin(namesrv=ns.listen_address) as admin:
            await registered(admin)
            await admin.create_topic(topic, queues=QUEUES)
        sent = await produce_sharded(alions_dir, ns.listen_address, topic)
        by_key: dict[str, list[int]] = collections.defaultdict(list)
        queue_of: dict[str, set[int]] = collections.defaultdict(set)

        async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeOrderlyStatus:
            for msg in msgs:
                key, seq = msg.body.decode().rsplit(":", 1)
                by_key[key].append(int(seq))
                queue_of[key].add(msg.queue_id)
            return ConsumeOrderlyStatus.SUCCESS

        consumer = PushConsumer(
            group, namesrv=ns.listen_address, consume_from_where=ConsumeFromWhere.FIRST
        )
        consumer.subscribe(topic, "*")
        consumer.register_listener(listener, orderly=True)
        async with consumer:
            await until(lambda: sum(map(len, by_key.values())) >= len(sent), 15, "all sent")
            locks = broker.locks.table.get(group, {})
            assert {(mq.broker_name, mq.queue_id) for mq in locks if mq.topic == topic} == {
                (BROKER_NAME, q) for q in range(QUEUES)
            }
            assert {e.client_id for e in locks.values()} == {consumer.client_id}
        assert dict(by_key) == {key: list(range(PER_KEY)) for key in KEYS}
        assert dict(queue_of) == {key: {alions_queue(key)} for key in KEYS}
        assert group not in broker.locks.table  # unlocked at shutdown


async def members_online(admin: Admin, group: str, count: int) -> ConsumerConnection:
    """Poll GET_CONSUMER_CONNECTION_LIST (with a deadline) until ``count`` members."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 15
    while True:
        try:
            conn = await admin.consumer_connections(group)
        except MQBrokerError as exc:  # CONSUMER_NOT_ONLINE until the first heartbeat
            assert exc.code == ResponseCode.CONSUMER_NOT_ONLINE, exc
        else:
            if len(conn.connection_set) >= count:
                return conn
        assert loop.time() < deadline, f"{group} never had {count} members"
        await asyncio.sleep(0.1)


def local_offsets(home: Path, group: str) -> dict[str, int]:
    """The offsets a broadcasting ali-ons consumer persisted under ``home``."""
    [path] = (home / ".rocketmq_offsets_node").glob(f"*/{group}/offsets.json")
    table: dict[str, int] = json.loads(path.read_text())["offsetTable"]
    return table


async def test_alions_broadcasting_offsets_stay_local(tmp_path: Path, alions_dir: Path) -> None:
    group, control, topic = "ons-bcast-cg", "ons-cluster-cg", "OnsBcast"
    homes = {name: tmp_path / f"home-{name}" for name in ("a", "b", "c")}
    async with (
        running_namesrv(tmp_path) as ns,
        running_broker(tmp_path, ns.listen_address) as broker,
    ):
        async with Admin(namesrv=ns.listen_address) as admin:
            await registered(admin)
            await admin.create_topic(topic, queues=QUEUES)

            def start(name: str, grp: str, model: str) -> Any:
                homes[name].mkdir()
                return node_consumer(
                    alions_dir,
                    "consume",
                    ns.listen_address,
                    topic,
                    grp,
                    model,
                    f"bc-{name}",
                    script=SCRIPT,
                    env={"HOME": str(homes[name])},
                )

            async with (
                start("a", group, "broadcasting") as one,
                start("b", group, "broadcasting") as two,
                start("c", control, "clustering") as clustered,
            ):
                members: list[NodeConsumer] = [one, two]
                # both are members of the one group before anything is sent
                conn = await members_online(admin, group, 2)
                assert conn.message_model == "BROADCASTING"
                async with Producer("py-bcast-pg", namesrv=ns.listen_address) as producer:
                    for i in range(12):
                        await producer.send(make_message(topic, f"b{i}", tags="B"))
                expected = sorted(f"b{i}" for i in range(12))
                for ons in (*members, clustered):
                    await ons.until(lambda o=ons: len(o.messages) >= 12, 20, "every message")
        for ons in (*members, clustered):
            assert sorted(m["body"] for m in ons.messages) == expected
            assert [e for e in ons.lines if "error" in e] == []
        max_offsets = {q: broker.store.get_max_offset_in_queue(topic, q) for q in range(QUEUES)}
        assert sum(max_offsets.values()) == 12
        for name in ("a", "b"):
            assert local_offsets(homes[name], group) == {
                f'[topic="{topic}", brokerName="{BROKER_NAME}", queueId="{q}"]': off
                for q, off in max_offsets.items()
            }
        offsets = broker.offsets
        assert offsets.topics_by_group(group) == set()
        assert offsets.query_all(control, topic) == max_offsets
