"""Reading from slaves.

* Failover with real broker processes: a master of ``broker-a`` is killed while a push and
  a pull consumer of ours have a backlog; they finish it at the slave (brokerId 1) and
  commit their offsets there; a producer goes on to ``broker-b``; the master comes back
  and the consumers return to it. Duplicates are counted and printed (at-least-once).
* ``suggestWhichBrokerId`` in-process: a master whose readers all count as behind memory
  (``accessMessageInMemoryMaxRatio=0``) with ``slaveReadEnable`` sends our consumer to the
  slave, which sends it back; every message is consumed once, part of them at the slave.

Every wait is a poll with a deadline; nothing sleeps to synchronise.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import time
from pathlib import Path

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.client.admin import Admin
from mqcore.client.consume_service import ConsumeContext, ConsumeStatus
from mqcore.client.instance import ClientConfig
from mqcore.client.lite_pull_consumer import LitePullConsumer
from mqcore.client.producer import Producer, make_message
from mqcore.client.push_consumer import PushConsumer
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.message import MessageExt
from mqcore.protocol import ResponseCode
from mqcore.store.metadata import ConsumerOffsetManager
from tests.support import until as until_every_10ms
from tests.support.clients import RawBrokerClient
from tests.support.inproc import running_ha_pair
from tests.support.processes import BrokerProcess, start_broker, start_namesrv

until = functools.partial(until_every_10ms, interval=0.05)
"""The predicates here ask the brokers over the network: every 50 ms is often enough."""

pytestmark = pytest.mark.timeout(300)

TOPIC = "HaFailover"
QUEUES = 4
PUSH_GROUP = "ha-push"
PULL_GROUP = "ha-pull"
FAST = {"registerNameServerPeriod": "2000"}
"""Brokers re-register every 2 s so a slave learns its master's new address quickly."""


class Received:
    """Bodies seen by one consumer, with how often each was seen."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()

    def add(self, msgs: list[MessageExt]) -> None:
        self.counts.update(m.body.decode() for m in msgs)

    def has(self, bodies: set[str]) -> bool:
        return bodies <= self.counts.keys()

    @property
    def duplicates(self) -> int:
        return sum(n - 1 for n in self.counts.values())


async def queue_ends(addr: str) -> dict[int, int]:
    async with RawBrokerClient(addr) as client:
        return {q: await client.max_offset(TOPIC, q) for q in range(QUEUES)}


async def committed(addr: str, group: str) -> dict[int, int | None]:
    async with RawBrokerClient(addr) as client:
        return {q: (await client.query_offset(group, TOPIC, q))[1] for q in range(QUEUES)}


async def slave_serves_topic(addr: str) -> bool:
    async with RawBrokerClient(addr) as client:
        r = await client.pull(TOPIC, 0, 0, group="probe")
        return r.code != ResponseCode.TOPIC_NOT_EXIST


async def produce(producer: Producer, tag: str, count: int) -> dict[str, str]:
    """Send ``count`` messages; body -> the broker name that stored it."""
    out = {}
    for i in range(count):
        body = f"{tag}-{i}"
        result = await producer.send(make_message(TOPIC, body))
        assert result.ok, result
        out[body] = result.message_queue.broker_name
    return out


async def test_consumers_and_producers_fail_over_and_come_back(tmp_path: Path) -> None:
    namesrv = start_namesrv(tmp_path / "ns")
    ns = namesrv.addr
    procs: list[BrokerProcess] = []

    def broker(workdir: str, name: str, **props: str) -> BrokerProcess:
        proc = start_broker(tmp_path / workdir, ns, name=name, **{**FAST, **props})
        procs.append(proc)
        return proc

    config = ClientConfig(
        client_ip="127.0.0.1", poll_name_server_interval=1.0, persist_consumer_offset_interval=1.0
    )
    try:
        master = broker("a-master", "broker-a")
        slave = broker("a-slave", "broker-a", brokerId="1", brokerRole="SLAVE")
        broker("b-master", "broker-b")
        async with Admin(namesrv=ns, client_config=config) as admin:
            await until(lambda: _route_ready(admin), 30, "broker-a (master, slave), broker-b")
            await admin.create_topic(TOPIC, queues=QUEUES)
        await until(lambda: slave_serves_topic(slave.addr), 30, "the slave copied the topic")

        gate = asyncio.Event()
        gate.set()
        pushed, polled = Received(), Received()

        async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> ConsumeStatus:
            await gate.wait()
            pushed.add(msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        push = PushConsumer(
            PUSH_GROUP,
            namesrv=ns,
            consume_from_where=ConsumeFromWhere.FIRST,
            pull_batch_size=4,
            pull_threshold_for_queue=8,
            instance_name="ha-push",
            client_config=config,
        )
        push.subscribe(TOPIC, "*")
        push.register_listener(listener)
        lite = LitePullConsumer(
            PULL_GROUP,
            namesrv=ns,
            consume_from_where=ConsumeFromWhere.FIRST,
            auto_commit_interval=1.0,
            pull_batch_size=4,
            pull_threshold_for_queue=8,
            instance_name="ha-pull",
            client_config=config,
        )
        lite.subscribe(TOPIC, "*")
        polling = True

        async def poll_loop() -> None:
            while True:
                if polling:
                    polled.add(await lite.poll(0.2))
                else:
                    await asyncio.sleep(0.05)

        producer = Producer(
            "ha-producer", namesrv=ns, instance_name="ha-prod", client_config=config
        )
        await producer.start()
        await push.start()
        await lite.start()
        poller = asyncio.create_task(poll_loop())
        try:
            # 1. Both brokers up: everything is consumed.
            sent = await produce(producer, "one", 80)
            assert set(sent.values()) == {"broker-a", "broker-b"}
            await until(lambda: pushed.has(set(sent)) and polled.has(set(sent)), 60, "phase 1")

            # 2. Consumers stall; a backlog builds up, larger than they prefetch.
            gate.clear()
            polling = False
            backlog = await produce(producer, "two", 240)
            on_a = {b for b, name in backlog.items() if name == "broker-a"}
            assert len(on_a) > QUEUES * 8 * 2
            master_ends = await queue_ends(master.addr)
            await until(lambda: _equal(queue_ends(slave.addr), master_ends), 60, "slave caught up")

            # 3. The master dies; consumers finish the backlog at the slave.
            master.kill()
            gate.set()
            polling = True
            everything = set(sent) | set(backlog)
            await until(
                lambda: pushed.has(everything) and polled.has(everything), 90, "backlog at slave"
            )
            # A producer goes on to broker-b.
            during = await produce(producer, "three", 60)
            assert set(during.values()) == {"broker-b"}
            everything |= set(during)
            await until(lambda: pushed.has(everything) and polled.has(everything), 60, "phase 3")
            # Offsets of broker-a's queues are committed at the slave, and stay there.
            slave_ends = await queue_ends(slave.addr)
            for group in (PUSH_GROUP, PULL_GROUP):
                await until(
                    lambda g=group: _equal(committed(slave.addr, g), slave_ends),
                    30,
                    f"{group}'s offsets at the slave",
                )
            await until(
                lambda: _offsets_in_file(slave.store, slave_ends), 30, "slave persisted offsets"
            )

            # 4. The master is back (same store): consumers and producers return to it.
            master = start_broker(
                tmp_path / "a-master", ns, name="broker-a", store=master.store, **FAST
            )
            procs.append(master)
            after = await _produce_until_broker_a(producer)
            everything |= set(after)
            await until(lambda: pushed.has(everything) and polled.has(everything), 90, "phase 4")
            ends = await queue_ends(master.addr)
            for group in (PUSH_GROUP, PULL_GROUP):
                await until(
                    lambda g=group: _equal(committed(master.addr, g), ends),
                    30,
                    f"{group}'s offsets at the returned master",
                )
            await until(lambda: _equal(queue_ends(slave.addr), ends), 60, "slave resumed")
        finally:
            poller.cancel()
            await asyncio.gather(poller, return_exceptions=True)
            await lite.shutdown()
            await push.shutdown()
            await producer.shutdown()

        total = len(everything)
        print(
            f"\nHA failover: {total} messages; duplicates push={pushed.duplicates}"
            f" pull={polled.duplicates}"
        )
        # At-least-once: duplicates are allowed, but not a replay of the backlog.
        assert pushed.duplicates < len(backlog) // 4
        assert polled.duplicates < len(backlog) // 4
    finally:
        for proc in procs:
            proc.kill()
        namesrv.stop()


async def _route_ready(admin: Admin) -> bool:
    info = await admin.cluster_info()
    brokers = info.broker_addr_table
    a, b = brokers.get("broker-a"), brokers.get("broker-b")
    return bool(a and b and set(a.broker_addrs) == {0, 1} and 0 in b.broker_addrs)


async def _equal(actual: object, expected: object) -> bool:
    if asyncio.iscoroutine(actual):
        actual = await actual
    return actual == expected


def _offsets_in_file(store: Path, ends: dict[int, int]) -> bool:
    path = store / "config" / "consumerOffset.json"
    if not path.exists():
        return False
    manager = ConsumerOffsetManager(store, readonly=True)
    manager.load()
    return all(manager.query_all(group, TOPIC) == ends for group in (PUSH_GROUP, PULL_GROUP))


async def _produce_until_broker_a(producer: Producer) -> dict[str, str]:
    """Send until one lands on broker-a again (its route is back), then 40 more."""
    out: dict[str, str] = {}
    deadline = time.monotonic() + 60
    i = 0
    while "broker-a" not in out.values():
        assert time.monotonic() < deadline, "the producer never returned to broker-a"
        out.update(await produce(producer, f"four{i}", 1))
        i += 1
        await asyncio.sleep(0.05)
    out.update(await produce(producer, "five", 40))
    return out


async def test_a_consumer_follows_the_suggestion_to_the_slave_and_back(tmp_path: Path) -> None:
    behind = {"access_message_in_memory_max_ratio": 0}
    async with running_ha_pair(tmp_path, master_store=behind, slave_read_enable=True) as (
        namesrv,
        master,
        slave,
    ):
        ns = namesrv.listen_address
        config = ClientConfig(client_ip="127.0.0.1", poll_name_server_interval=1.0)
        async with Admin(namesrv=ns, client_config=config) as admin:
            await until(lambda: _pair_routed(admin), 30, "master and slave routed")
            await admin.create_topic(TOPIC, queues=2)
        async with Producer("hint-pg", namesrv=ns, client_config=config) as producer:
            sent = await produce(producer, "hint", 60)
        await until(
            lambda: slave.store.max_phy_offset == master.store.max_phy_offset, 30, "replicated"
        )
        assert slave.slave_sync is not None
        await slave.slave_sync.sync_all()  # the topic now, not at the next 10 s tick
        assert slave.topics.select(TOPIC) is not None

        lite = LitePullConsumer(
            "hint-cg",
            namesrv=ns,
            consume_from_where=ConsumeFromWhere.FIRST,
            pull_batch_size=2,
            client_config=config,
        )
        lite.subscribe(TOPIC, "*")
        got = Received()
        async with lite:
            while not got.has(set(sent)):
                batch = await lite.poll(5.0)
                assert batch, f"nothing more after {sum(got.counts.values())} messages"
                got.add(batch)
        assert got.duplicates == 0
        at_master, at_slave = served(master, "hint-cg"), served(slave, "hint-cg")
        # Each found pull at the master suggests the slave (1); the slave, in memory,
        # suggests the group's brokerId (0): both served part of the messages.
        assert at_master > 0 and at_slave > 0
        assert at_master + at_slave >= len(sent)


def served(broker: BrokerController, group: str) -> int:
    """Messages ``broker`` returned to ``group``'s pulls of the topic."""
    item = broker.stats.group_get.get(f"{TOPIC}@{group}")
    return 0 if item is None else item.msgs


async def _pair_routed(admin: Admin) -> bool:
    a = (await admin.cluster_info()).broker_addr_table.get("broker-a")
    return bool(a and set(a.broker_addrs) == {0, 1})
