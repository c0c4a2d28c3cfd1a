"""RebalanceImpl against fake routes and brokers: shares, joins and leaves, broadcasting,
orderly locks, consume-from-where; subscriptions and the client-side tag check."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from mqcore.client.allocate import (
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
)
from mqcore.client.offset_store import RemoteBrokerOffsetStore
from mqcore.client.process_queue import ProcessQueue, QueueEvent
from mqcore.client.rebalance import (
    ConsumeFromWhere,
    MessageModel,
    MessageSelector,
    RebalanceImpl,
    build_subscription,
    compute_pull_from_where,
    filter_by_tags,
    resolve_strategy,
    timestamp_ms,
)
from mqcore.common.javahash import java_string_hash
from mqcore.errors import MQClientError
from mqcore.message import MessageExt
from mqcore.protocol.bodies import MessageQueue


def queues(topic: str, n: int, broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


class GroupBrokerState:
    """Routes, group membership and a broker lock table shared by several fake clients."""

    def __init__(self) -> None:
        self.routes: dict[str, list[MessageQueue]] = {}
        self.members: list[str] = []
        self.locks: dict[MessageQueue, str] = {}
        self.offsets: dict[MessageQueue, int] = {}
        self.max_offsets: dict[MessageQueue, int] = {}


class FakeAPI:
    def __init__(self, cluster: GroupBrokerState, client_id: str) -> None:
        self.cluster = cluster
        self.client_id = client_id
        self.fail_lock = False

    async def topic_queues(self, topic: str) -> list[MessageQueue]:
        if topic not in self.cluster.routes:
            raise MQClientError(f"no route for {topic}")
        return list(self.cluster.routes[topic])

    async def consumer_ids(self, topic: str, group: str) -> list[str]:
        return list(self.cluster.members)

    async def lock_batch(
        self, group: str, broker_name: str, mqs: set[MessageQueue]
    ) -> set[MessageQueue]:
        if self.fail_lock:
            raise MQClientError("broker down")
        granted = set()
        for mq in mqs:
            if self.cluster.locks.setdefault(mq, self.client_id) == self.client_id:
                granted.add(mq)
        return granted

    async def unlock_batch(self, group: str, broker_name: str, mqs: set[MessageQueue]) -> None:
        for mq in mqs:
            if self.cluster.locks.get(mq) == self.client_id:
                del self.cluster.locks[mq]

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int | None:
        return self.cluster.offsets.get(mq)

    async def update_consumer_offset(
        self, group: str, mq: MessageQueue, offset: int, *, oneway: bool = True
    ) -> None:
        self.cluster.offsets[mq] = offset

    async def max_offset(self, mq: MessageQueue) -> int:
        return self.cluster.max_offsets.get(mq, 0)

    async def min_offset(self, mq: MessageQueue) -> int:
        return 2

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return timestamp_ms // 1000


class Owner:
    def __init__(self) -> None:
        self.started: list[MessageQueue] = []
        self.removed: list[MessageQueue] = []
        self.changes: list[tuple[str, set[MessageQueue]]] = []
        self.refuse_start: set[MessageQueue] = set()
        self.keep: set[MessageQueue] = set()

    async def start_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        if mq in self.refuse_start:
            return False
        pq.fire(QueueEvent.START)
        self.started.append(mq)
        return True

    async def remove_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        assert pq.dropped
        if mq in self.keep:
            return False
        self.removed.append(mq)
        return True

    def assignment_changed(self, topic: str, mine: set[MessageQueue]) -> None:
        self.changes.append((topic, mine))


def member(
    cluster: GroupBrokerState, cid: str, model: MessageModel = MessageModel.CLUSTERING, **kw: object
) -> tuple[RebalanceImpl, Owner, FakeAPI]:
    api = FakeAPI(cluster, cid)
    owner = Owner()
    impl = RebalanceImpl("g", api, owner, message_model=model, **kw)  # type: ignore[arg-type]
    impl.subscriptions["T"] = build_subscription("T", "*")
    return impl, owner, api


async def test_members_share_disjointly_and_follow_joins_and_leaves() -> None:
    cluster = GroupBrokerState()
    cluster.routes["T"] = queues("T", 8)
    cluster.members = ["c1", "c2"]
    a, owner_a, _ = member(cluster, "c1")
    b, _, _ = member(cluster, "c2")
    assert await a.do_rebalance() and await b.do_rebalance()
    assert set(a.process_queues).isdisjoint(b.process_queues)
    assert set(a.process_queues) | set(b.process_queues) == set(cluster.routes["T"])
    assert [q.queue_id for q in a.queues_of("T")] == [0, 1, 2, 3]
    assert not await a.do_rebalance()  # nothing changed

    cluster.members = ["c1", "c2", "c3"]
    c, _, _ = member(cluster, "c3")
    for impl in (a, b, c):
        await impl.do_rebalance()
    owned = [set(x.process_queues) for x in (a, b, c)]
    assert sum(len(o) for o in owned) == 8 and set().union(*owned) == set(cluster.routes["T"])
    assert [q.queue_id for q in a.queues_of("T")] == [0, 1, 2]
    assert owner_a.removed == [MessageQueue("T", "broker-a", 3)]
    assert owner_a.changes[-1] == ("T", set(a.process_queues))

    cluster.members = ["c1"]
    await a.do_rebalance()
    assert len(a.process_queues) == 8


async def test_broadcasting_takes_every_queue() -> None:
    cluster = GroupBrokerState()
    cluster.routes["T"] = queues("T", 3) + queues("T", 2, "broker-b")
    a, _, _ = member(cluster, "c1", MessageModel.BROADCASTING)
    b, _, _ = member(cluster, "c2", MessageModel.BROADCASTING)
    await a.do_rebalance()
    await b.do_rebalance()
    assert set(a.process_queues) == set(b.process_queues) == set(cluster.routes["T"])


async def test_strategy_and_unsubscribe_and_missing_route() -> None:
    cluster = GroupBrokerState()
    cluster.routes["T"] = queues("T", 4)
    cluster.members = ["c1", "c2"]
    a, owner, _ = member(cluster, "c1", strategy=AllocateMessageQueueAveragelyByCircle())
    a.subscriptions["NoRoute"] = build_subscription("NoRoute", "*")
    await a.do_rebalance()  # the missing route is logged, T still rebalanced
    assert [q.queue_id for q in a.queues_of("T")] == [0, 2]
    del a.subscriptions["T"]
    assert await a.do_rebalance()
    assert a.process_queues == {} and len(owner.removed) == 2


async def test_no_members_yet_changes_nothing() -> None:
    cluster = GroupBrokerState()
    cluster.routes["T"] = queues("T", 4)
    a, _, _ = member(cluster, "c1")
    assert not await a.do_rebalance()
    assert a.process_queues == {}


async def test_refused_start_retried_and_dropped_queue_readded() -> None:
    cluster = GroupBrokerState()
    cluster.routes["T"] = queues("T", 2)
    cluster.members = ["c1"]
    a, owner, _ = member(cluster, "c1")
    q0, q1 = cluster.routes["T"]
    owner.refuse_start = {q1}
    await a.do_rebalance()
    assert set(a.process_queues) == {q0}
    owner.refuse_start = set()
    await a.do_rebalance()
    assert set(a.process_queues) == {q0, q1}
    # A pull loop drops its queue (offset moved): the next rebalance starts it afresh.
    old = a.process_queues[q0]
    old.drop()
    await a.do_rebalance()
    assert a.process_queues[q0] is not old and not a.process_queues[q0].dropped


async def test_orderly_locks_before_pulling_and_releases() -> None:
    cluster = GroupBrokerState()
    cluster.routes["T"] = queues("T", 2)
    cluster.members = ["c1", "c2"]
    a, _, _ = member(cluster, "c1", orderly=True)
    b, owner_b, _ = member(cluster, "c2", orderly=True)
    q0, q1 = cluster.routes["T"]
    cluster.locks[q1] = "c1"  # c1 still holds what is now c2's queue
    await a.do_rebalance()
    await b.do_rebalance()
    assert set(a.process_queues) == {q0} and a.process_queues[q0].locked
    assert b.process_queues == {}  # q1 locked by c1: not pulled yet
    await a.unlock(q1)
    await b.do_rebalance()
    assert b.process_queues[q1].locked and cluster.locks[q1] == "c2"

    # Lock refresh: a queue taken away at the broker stops being "locked" locally.
    cluster.locks[q0] = "intruder"
    await a.lock_all()
    assert not a.process_queues[q0].locked
    del cluster.locks[q0]
    await a.lock_all()
    assert a.process_queues[q0].locked

    await b.unlock_all()
    assert q1 not in cluster.locks and not b.process_queues[q1].locked
    # A busy orderly queue stays in the table until the owner can release it.
    owner_b.keep = {q1}
    cluster.members = ["c1"]
    await b.do_rebalance()
    assert q1 in b.process_queues and b.process_queues[q1].dropped


async def test_lock_failure_means_not_locked() -> None:
    cluster = GroupBrokerState()
    cluster.routes["T"] = queues("T", 1)
    cluster.members = ["c1"]
    a, _, api = member(cluster, "c1", orderly=True)
    api.fail_lock = True
    await a.do_rebalance()
    assert a.process_queues == {}
    await a.lock_all()  # logged


async def test_drop_all() -> None:
    cluster = GroupBrokerState()
    cluster.routes["T"] = queues("T", 3)
    a, owner, _ = member(cluster, "c1", MessageModel.BROADCASTING)
    await a.do_rebalance()
    pqs = list(a.process_queues.values())
    await a.drop_all()
    assert a.process_queues == {} and all(pq.dropped for pq in pqs) and len(owner.removed) == 3


@pytest.mark.parametrize(
    ("where", "topic", "expected"),
    [
        (ConsumeFromWhere.LAST, "T", 50),
        (ConsumeFromWhere.FIRST, "T", 2),
        (ConsumeFromWhere.TIMESTAMP, "T", 1234),
        (ConsumeFromWhere.LAST, "%RETRY%g", 0),
        (ConsumeFromWhere.FIRST, "%RETRY%g", 0),
        (ConsumeFromWhere.TIMESTAMP, "%RETRY%g", 50),
    ],
)
async def test_compute_pull_from_where(where: ConsumeFromWhere, topic: str, expected: int) -> None:
    cluster = GroupBrokerState()
    api = FakeAPI(cluster, "c1")
    mq = MessageQueue(topic, "broker-a", 0)
    cluster.max_offsets[mq] = 50
    store = RemoteBrokerOffsetStore("g", api)
    assert await compute_pull_from_where(mq, store, api, where, 1_234_000) == expected
    cluster.offsets[mq] = 17  # a committed offset always wins
    assert await compute_pull_from_where(mq, store, api, where, 1_234_000) == 17


def test_build_subscription() -> None:
    sub = build_subscription("T", " TagA ||TagB|| ")
    assert sub.tags_set == {"TagA", "TagB"}
    assert sub.code_set == {java_string_hash("TagA"), java_string_hash("TagB")}
    assert sub.expression_type == "TAG" and sub.sub_version > 1_600_000_000_000
    assert build_subscription("T", None).sub_string == "*"
    assert build_subscription("T", "*").tags_set == set()
    sql = build_subscription("T", MessageSelector.by_sql("a > 5"))
    assert (sql.expression_type, sql.sub_string, sql.tags_set) == ("SQL92", "a > 5", set())
    with pytest.raises(ValueError):
        build_subscription("T", "||")
    with pytest.raises(ValueError):
        build_subscription("T", MessageSelector.by_sql(" "))


def test_filter_by_tags() -> None:
    msgs = [MessageExt(topic="T", queue_offset=i) for i in range(3)]
    msgs[0].tags = "TagA"
    msgs[1].tags = "TagC"
    assert filter_by_tags(msgs, build_subscription("T", "TagA || TagB")) == [msgs[0]]
    assert filter_by_tags(msgs, build_subscription("T", "*")) == msgs
    assert filter_by_tags(msgs, build_subscription("T", MessageSelector.by_sql("x=1"))) == msgs


def test_timestamp_and_strategy_helpers() -> None:
    when = dt.datetime(2026, 1, 2, 10, 0, tzinfo=dt.UTC)
    assert timestamp_ms(when) == 1767348000000
    assert timestamp_ms(1234) == 1234
    assert abs(timestamp_ms(None) - (time.time() - 1800) * 1000) < 5000
    assert isinstance(resolve_strategy(None), AllocateMessageQueueAveragely)
    assert resolve_strategy("avg_by_circle").name == "AVG_BY_CIRCLE"
    circle = AllocateMessageQueueAveragelyByCircle()
    assert resolve_strategy(circle) is circle
    with pytest.raises(ValueError):
        resolve_strategy("nope")
