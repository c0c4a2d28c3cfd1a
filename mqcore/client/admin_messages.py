"""Finding and reading messages, :class:`MessageLookup`, a part of
:class:`~mqcore.client.admin.Admin` (``admin.messages``, its methods also on the admin).

By key or unique key (the index on every master of the topic), by store time (each
queue bounded by SEARCH_OFFSET_BY_TIMESTAMP and pulled), by offset msg id, and the
queue-level reads tools build on (a topic's queues, min/max/search offsets, a pull that
commits nothing). Results from several brokers are merged oldest first and capped in
total, not per broker.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from mqcore.client.api import PULL_TIMEOUT, PullResult, PullStatus
from mqcore.errors import MessageIdError, MQClientError
from mqcore.message import MessageExt
from mqcore.protocol.bodies import MessageQueue
from mqcore.protocol.headers import PullMessageRequestHeader
from mqcore.protocol.headers.consume import PullSysFlag

if TYPE_CHECKING:
    from mqcore.client.admin_link import AdminLink

__all__ = ["END_OF_TIME", "TOOLS_GROUP", "MessageLookup"]

TOOLS_GROUP = "TOOLS_CONSUMER"  # RocketMQ's MixAll.TOOLS_CONSUMER_GROUP, for admin pulls
END_OF_TIME = 2**63 - 1
_PULL_BATCH = 32


class MessageLookup:
    """Message lookups and queue reads, sent through the admin's ``link``."""

    def __init__(self, link: AdminLink) -> None:
        self._link = link

    async def query_by_key(
        self,
        topic: str,
        key: str,
        *,
        max_num: int = 64,
        begin_ms: int = 0,
        end_ms: int = END_OF_TIME,
    ) -> list[MessageExt]:
        """Messages of ``topic`` whose KEYS include ``key`` (index lookup on every master),
        oldest first, at most ``max_num`` in total."""
        return await self._query(topic, key, max_num, begin_ms, end_ms, unique=False)

    async def query_by_unique_key(
        self, topic: str, key: str, *, begin_ms: int = 0, end_ms: int = END_OF_TIME
    ) -> list[MessageExt]:
        """Messages whose UNIQ_KEY (the producer's msg id) is ``key`` (retries share it)."""
        return await self._query(topic, key, 32, begin_ms, end_ms, unique=True)

    async def _query(
        self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int, *, unique: bool
    ) -> list[MessageExt]:
        api = self._link.instance().api
        masters = await self._link.topic_masters(topic)
        found = await self._link.each(
            masters.values(),
            lambda a: api.query_message(
                a,
                topic,
                key,
                max_num,
                begin_ms,
                end_ms,
                unique_key=unique,
                timeout=self._link.timeout() * 3,
            ),
        )
        seen: set[tuple[tuple[str, int], int]] = set()
        out: list[MessageExt] = []
        for msg in sorted((m for batch in found for m in batch), key=lambda m: m.store_timestamp):
            # the index matches key hashes: re-check the real key
            real = msg.unique_key == key if unique else key in msg.keys
            ident = (msg.store_host, msg.commit_log_offset)
            if real and msg.topic == topic and ident not in seen:
                seen.add(ident)
                out.append(msg)
        return out[:max_num]

    async def query_by_time(
        self, topic: str, begin_ms: int, end_ms: int, *, max_num: int = 64
    ) -> list[MessageExt]:
        """Messages of ``topic`` stored in ``begin_ms..end_ms`` (both inclusive), oldest
        first, at most ``max_num`` in total across all brokers.

        Per queue of every broker, SEARCH_OFFSET_BY_TIMESTAMP bounds the range to pull,
        asked one millisecond outside the window on each side: mq answers the first
        message stored at or after the time, 4.9.8 the *nearest* one (any of several
        stored in that millisecond), so asking for ``begin_ms``/``end_ms`` themselves
        could start after, or stop before, messages stored in the window's first or last
        millisecond. Each message's store time is checked; at most ``max_num`` are kept
        per queue, as the merged total is capped anyway.
        """
        if max_num <= 0 or end_ms < begin_ms:
            return []
        api = self._link.instance().api
        queues = await self._link.instance().subscribe_queues(topic, refresh=True)

        async def one(mq: MessageQueue) -> list[MessageExt]:
            start = await api.search_offset(mq, max(0, begin_ms - 1), self._link.timeout())
            stop = (
                await api.search_offset(mq, min(END_OF_TIME, end_ms + 1), self._link.timeout()) + 1
            )
            found: list[MessageExt] = []
            while start < stop and len(found) < max_num:
                batch = min(_PULL_BATCH, stop - start)
                result = await self.read_queue(mq, start, batch, timeout=self._link.timeout())
                if result.status is not PullStatus.FOUND or result.next_begin_offset <= start:
                    break
                found += [
                    m for m in result.messages
                    if m.queue_offset < stop and begin_ms <= m.store_timestamp <= end_ms
                ]  # fmt: skip
                start = result.next_begin_offset
            return found

        batches = await asyncio.gather(*(one(mq) for mq in queues))
        # Equal store times (a millisecond holds many) go by broker, queue and offset, so the
        # same window gives the same list, and a lower max_num a prefix of it.
        merged = sorted(
            (m for b in batches for m in b),
            key=lambda m: (m.store_timestamp, m.store_host, m.queue_id, m.queue_offset),
        )
        return merged[:max_num]

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """VIEW_MESSAGE_BY_ID at the broker the offset msg id names."""
        return await self._link.instance().api.view_message_by_id(offset_msg_id)

    async def find_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """By offset msg id, else (with ``topic``) by unique key, as ``mqadmin queryMsgById``."""
        try:
            return await self.view_message(msg_id)
        except (MessageIdError, MQClientError) as exc:
            if topic is None:
                raise
            found = await self.query_by_unique_key(topic, msg_id)
            if not found:
                raise MQClientError(f"no message {msg_id} in topic {topic}") from exc
            return found[0]

    async def topic_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic`` in the name servers' current route (raises
        TopicRouteNotFoundError)."""
        return await self._link.instance().subscribe_queues(topic, refresh=True)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self._link.instance().api.min_offset(mq)

    async def max_offset(self, mq: MessageQueue) -> int:
        """The next offset to be written in ``mq``."""
        return await self._link.instance().api.max_offset(mq)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self._link.instance().api.search_offset(mq, timestamp_ms)

    async def read_queue(
        self,
        mq: MessageQueue,
        offset: int,
        max_nums: int = 32,
        *,
        timeout: float = PULL_TIMEOUT,
        wait: float = 0.0,
        expression: str = "*",
    ) -> PullResult:
        """Messages of ``mq`` from ``offset`` (tags matching ``expression``), pulled as
        TOOLS_CONSUMER: reading them commits nothing and creates no group. With ``wait``
        the broker holds the pull up to that many seconds for a new message (long
        polling), so a reader that follows a queue does not spin."""
        return await self._link.instance().api.pull(
            mq, group=TOOLS_GROUP, offset=offset, max_nums=max_nums, expression=expression,
            suspend=wait > 0, suspend_timeout=wait, timeout=max(timeout, wait + 5.0),
        )  # fmt: skip

    async def peek(
        self, addr: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[MessageExt]:
        """Messages of one queue at ``addr`` from ``offset``, pulled as TOOLS_CONSUMER (no
        offset committed, no long poll), so reading them consumes nothing."""
        header = PullMessageRequestHeader(
            consumer_group=TOOLS_GROUP, topic=topic, queue_id=queue_id, queue_offset=offset,
            max_msg_nums=max_nums, sys_flag=PullSysFlag.SUBSCRIPTION, commit_offset=0,
            suspend_timeout_millis=0, sub_version=0, subscription="*", expression_type="TAG",
        )  # fmt: skip
        api = self._link.instance().api
        return (await api.pull_message(addr, header, self._link.timeout())).messages
