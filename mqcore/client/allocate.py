"""Queue allocation strategies for clustering consumers (RocketMQ's AllocateMessageQueue*).

Every member of a consumer group runs the same strategy over the same sorted inputs
(all queues of a topic, all client ids of the group) and takes its own share, so no
coordinator is needed. Members in other languages must agree, so the arithmetic (and the
consistent-hash ring's MD5 keys) follow RocketMQ 4.x exactly: a Python consumer can share
a group with Java consumers.

Each strategy is ``allocate(group, current_cid, mq_all, cid_all) -> list[MessageQueue]``;
inputs need not be sorted (they are sorted here, as RocketMQ's RebalanceImpl does).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from mqcore.protocol.bodies.base import MessageQueue

__all__ = [
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueByMachineRoomNearby",
    "AllocateMessageQueueConsistentHash",
    "AllocateStrategy",
    "strategy_by_name",
]


class AllocateStrategy(Protocol):
    name: str

    def allocate(
        self,
        group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]: ...


def _prepare(
    current_cid: str, mq_all: Iterable[MessageQueue], cid_all: Iterable[str]
) -> tuple[list[MessageQueue], list[str], int] | None:
    mqs = sorted(set(mq_all))
    cids = sorted(set(cid_all))
    if not current_cid or not mqs or current_cid not in cids:
        return None
    return mqs, cids, cids.index(current_cid)


class _SortedAllocate:
    """Strategies that share RocketMQ's preamble: sort and dedupe both inputs, and give
    nothing to a client that is not (yet) a member or when there are no queues."""

    name = ""

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        prepared = _prepare(current_cid, mq_all, cid_all)
        if prepared is None:
            return []
        mqs, cids, index = prepared
        return self._share(group, current_cid, mqs, cids, index)

    def _share(
        self, group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str], index: int
    ) -> list[MessageQueue]:
        raise NotImplementedError


class AllocateMessageQueueAveragely(_SortedAllocate):
    """Contiguous blocks; the first ``len(mqs) % len(cids)`` members get one extra."""

    name = "AVG"

    def _share(
        self, group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str], index: int
    ) -> list[MessageQueue]:
        n, m = len(mqs), len(cids)
        mod = n % m
        if n <= m:
            average = 1
        elif mod > 0 and index < mod:
            average = n // m + 1
        else:
            average = n // m
        start = index * average if mod > 0 and index < mod else index * average + mod
        count = min(average, n - start)
        return [mqs[(start + i) % n] for i in range(max(0, count))]


class AllocateMessageQueueAveragelyByCircle(_SortedAllocate):
    """Round robin: member ``i`` takes queues ``i, i + m, i + 2m, ...``."""

    name = "AVG_BY_CIRCLE"

    def _share(
        self, group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str], index: int
    ) -> list[MessageQueue]:
        return mqs[index :: len(cids)]


class AllocateMessageQueueByConfig:
    """A fixed list of queues, whatever the group looks like."""

    name = "CONFIG"

    def __init__(self, queues: Iterable[MessageQueue]) -> None:
        self.queues = list(queues)

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return list(self.queues)


class AllocateMessageQueueByMachineRoom(_SortedAllocate):
    """Only queues of brokers named ``<idc>@<name>`` in ``consumer_idcs``, shared in blocks
    with the remainder handed out one each."""

    name = "MACHINE_ROOM"

    def __init__(self, consumer_idcs: Iterable[str]) -> None:
        self.consumer_idcs = set(consumer_idcs)

    def _share(
        self, group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str], index: int
    ) -> list[MessageQueue]:
        pre = [mq for mq in mqs if mq.broker_name.split("@")[0] in self.consumer_idcs]
        mod, rem = divmod(len(pre), len(cids))
        result = pre[mod * index : mod * index + mod]
        if rem > index:
            result.append(pre[index + mod * len(cids)])
        return result


MachineRoomResolver = Callable[[str], str]
"""Maps a broker name or a client id to its machine room."""


class AllocateMessageQueueByMachineRoomNearby(_SortedAllocate):
    """Queues go to consumers in their own machine room (by ``delegate``); queues of rooms
    without consumers are shared by everybody."""

    name = "MACHINE_ROOM_NEARBY"

    def __init__(
        self,
        delegate: AllocateStrategy,
        broker_room: MachineRoomResolver,
        consumer_room: MachineRoomResolver,
    ) -> None:
        self.delegate = delegate
        self.broker_room = broker_room
        self.consumer_room = consumer_room

    def _share(
        self, group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str], index: int
    ) -> list[MessageQueue]:
        mqs_by_room: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            mqs_by_room.setdefault(self.broker_room(mq.broker_name), []).append(mq)
        cids_by_room: dict[str, list[str]] = {}
        for cid in cids:
            cids_by_room.setdefault(self.consumer_room(cid), []).append(cid)
        result: list[MessageQueue] = []
        my_room = self.consumer_room(current_cid)
        if my_room in mqs_by_room and my_room in cids_by_room:
            result += self.delegate.allocate(
                group, current_cid, mqs_by_room[my_room], cids_by_room[my_room]
            )
        for room, room_mqs in mqs_by_room.items():
            if room not in cids_by_room:
                result += self.delegate.allocate(group, current_cid, room_mqs, cids)
        return result


def _md5_hash(key: str) -> int:
    """RocketMQ's ``ConsistentHashRouter.MD5Hash``: the digest's first four bytes."""
    digest = hashlib.md5(key.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:4], "big")


def _java_mq_string(mq: MessageQueue) -> str:
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


class AllocateMessageQueueConsistentHash(_SortedAllocate):
    """A hash ring of ``virtual_nodes`` replicas per client; a queue belongs to the first
    node clockwise from its hash. Few queues move when members come and go."""

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_nodes: int = 10) -> None:
        if virtual_nodes < 0:
            raise ValueError("virtual_nodes must be >= 0")
        self.virtual_nodes = virtual_nodes

    def _share(
        self, group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str], index: int
    ) -> list[MessageQueue]:
        ring: dict[int, str] = {}
        for cid in cids:
            for i in range(self.virtual_nodes):
                ring[_md5_hash(f"{cid}-{i}")] = cid
        keys = sorted(ring)
        if not keys:
            return []
        result = []
        for mq in mqs:
            pos = bisect.bisect_left(keys, _md5_hash(_java_mq_string(mq)))
            owner = ring[keys[pos if pos < len(keys) else 0]]
            if owner == current_cid:
                result.append(mq)
        return result


def strategy_by_name(name: str) -> AllocateStrategy:
    """Strategies usable without extra parameters, by their RocketMQ short names."""
    table: dict[str, Callable[[], AllocateStrategy]] = {
        "AVG": AllocateMessageQueueAveragely,
        "AVG_BY_CIRCLE": AllocateMessageQueueAveragelyByCircle,
        "CONSISTENT_HASH": AllocateMessageQueueConsistentHash,
    }
    try:
        return table[name.upper()]()
    except KeyError:
        raise ValueError(
            f"unknown allocation strategy {name!r}; choose one of {', '.join(table)}"
        ) from None
