"""FIFO (order) POP's bookkeeping: ``config/consumerOrderInfo.json`` (RocketMQ 5's
ConsumerOrderInfoManager).

A FIFO pop writes no checkpoint: it hands out messages of a queue from the group's offset
and remembers them here (their offsets, pop time, invisible time); the queue stays blocked
for the group until each is acknowledged or its invisible time is over, and then the same
messages come again, in order, their consumed count raised. An ack moves the group's
offset to the first message still unacknowledged (:meth:`commit_and_next`).

File shape (5.x's): ``{"table":{"<topic>@<group>":{<queueId>:{"popTime":..,"i":..,
"o":[first, diff...],"ot":{offset:nextVisible},"oc":{offset:count},"l":..,"cm":bits,
"a":attemptId}}}}``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from mqcore.common.jsonfields import get_mapping
from mqcore.errors import ConfigError
from mqcore.store.metadata.config_file import ConfigFileManager

__all__ = ["ConsumerOrderInfoManager", "OrderInfo"]

_CLEAN_SPAN_MS = 24 * 3600 * 1000
"""Order info of a queue nobody popped for a day is dropped (5.x's autoClean)."""


def _now() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class OrderInfo:
    pop_time: int
    invisible_time: int
    offset_list: list[int]
    """The first offset, then each other's distance from it (5.x's compact form)."""
    last_consume_timestamp: int
    commit_offset_bit: int = 0
    attempt_id: str | None = None
    offset_next_visible_time: dict[int, int] = field(default_factory=dict)
    offset_consumed_count: dict[int, int] = field(default_factory=dict)

    @staticmethod
    def compact(offsets: list[int]) -> list[int]:
        return [offsets[0], *(o - offsets[0] for o in offsets[1:])]

    def queue_offset(self, index: int) -> int:
        return self.offset_list[0] + (self.offset_list[index] if index else 0)

    def is_acked(self, index: int) -> bool:
        return bool(self.commit_offset_bit >> index & 1)

    def free_time(self) -> int | None:
        """When the last unacknowledged message becomes visible again (the queue is
        free then), None when none is in flight."""
        times = [
            self.offset_next_visible_time.get(
                self.queue_offset(i), self.pop_time + self.invisible_time
            )
            for i in range(len(self.offset_list))
            if not self.is_acked(i)
        ]
        return max(times) if times else None

    def need_block(self, attempt_id: str | None, invisible_time: int, now: int) -> bool:
        """Some message is unacknowledged and still invisible (a retry of the same
        attempt is never blocked by itself)."""
        if not self.offset_list:
            return False
        if self.attempt_id is not None and self.attempt_id == attempt_id:
            return False
        if self.invisible_time <= 0:
            self.invisible_time = invisible_time
        for i in range(len(self.offset_list)):
            if self.is_acked(i):
                continue
            visible = self.offset_next_visible_time.get(
                self.queue_offset(i), self.pop_time + self.invisible_time
            )
            if now < visible:
                return True
        return False

    def next_offset(self) -> int:
        """The first unacknowledged offset, or past the last when all are."""
        for i in range(len(self.offset_list)):
            if not self.is_acked(i):
                return self.queue_offset(i)
        return self.queue_offset(len(self.offset_list) - 1) + 1

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "popTime": self.pop_time,
            "i": self.invisible_time,
            "o": list(self.offset_list),
            "l": self.last_consume_timestamp,
            "cm": self.commit_offset_bit,
        }
        if self.offset_next_visible_time:
            out["ot"] = dict(self.offset_next_visible_time)
        if self.offset_consumed_count:
            out["oc"] = dict(self.offset_consumed_count)
        if self.attempt_id is not None:
            out["a"] = self.attempt_id
        return out

    @classmethod
    def from_json(cls, obj: Any) -> OrderInfo:
        obj = get_mapping(obj)
        try:
            return cls(
                pop_time=int(obj.get("popTime", 0)),
                invisible_time=int(obj.get("i") or 0),
                offset_list=[int(o) for o in obj.get("o") or []],
                last_consume_timestamp=int(obj.get("l", 0)),
                commit_offset_bit=int(obj.get("cm", 0)),
                attempt_id=None if obj.get("a") is None else str(obj["a"]),
                offset_next_visible_time={int(k): int(v) for k, v in (obj.get("ot") or {}).items()},
                offset_consumed_count={int(k): int(v) for k, v in (obj.get("oc") or {}).items()},
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"consumerOrderInfo: bad entry {obj!r}: {exc}") from None


class ConsumerOrderInfoManager(ConfigFileManager):
    """``table``: ``topic@group`` -> queue id -> :class:`OrderInfo`."""

    FILE_NAME = "consumerOrderInfo.json"

    table: dict[str, dict[int, OrderInfo]]

    def _reset(self) -> None:
        self.table = {}

    def _decode(self, obj: Any) -> None:
        table: dict[str, dict[int, OrderInfo]] = {}
        for key, queues in get_mapping(get_mapping(obj), "table").items():
            table[str(key)] = {
                int(qid): OrderInfo.from_json(info) for qid, info in get_mapping(queues).items()
            }
        self.table = table

    def to_json(self) -> dict[str, Any]:
        now = _now()
        return {
            "table": {
                key: {
                    qid: info.to_json()
                    for qid, info in queues.items()
                    if now - info.last_consume_timestamp <= _CLEAN_SPAN_MS
                }
                for key, queues in self.table.items()
            }
        }

    def _get(self, topic: str, group: str, queue_id: int) -> OrderInfo | None:
        return self.table.get(f"{topic}@{group}", {}).get(queue_id)

    def check_block(
        self, attempt_id: str | None, topic: str, group: str, queue_id: int, invisible: int
    ) -> bool:
        info = self._get(topic, group, queue_id)
        return info is not None and info.need_block(attempt_id, invisible, _now())

    def next_free_time(self, topic: str, group: str) -> int | None:
        """The earliest time a queue of ``topic`` the group has in flight is free again."""
        now = _now()
        times = [
            t
            for info in self.table.get(f"{topic}@{group}", {}).values()
            if (t := info.free_time()) is not None and t > now
        ]
        return min(times) if times else None

    def update(
        self,
        attempt_id: str | None,
        topic: str,
        group: str,
        queue_id: int,
        pop_time: int,
        invisible_time: int,
        offsets: list[int],
    ) -> tuple[dict[int, int], int]:
        """Remember a FIFO pop of ``offsets``; returns each offset's consumed count before
        this pop (those above 0) and the queue's minimum (5.x's orderCountInfo)."""
        queues = self.table.setdefault(f"{topic}@{group}", {})
        old = queues.get(queue_id)
        info = OrderInfo(
            pop_time, invisible_time, OrderInfo.compact(offsets), _now(), 0, attempt_id
        )
        if old is not None:
            if old.attempt_id is not None and old.attempt_id == attempt_id:
                info.offset_consumed_count = old.offset_consumed_count
            else:
                before = {old.queue_offset(i) for i in range(len(old.offset_list))}
                info.offset_consumed_count = {
                    o: old.offset_consumed_count.get(o, 0) + 1 for o in offsets if o in before
                }
        with self._lock:
            queues[queue_id] = info
        counts = info.offset_consumed_count
        least = min(counts.values()) if counts and len(counts) == len(offsets) else 0
        return dict(counts), least

    def commit_and_next(
        self, topic: str, group: str, queue_id: int, queue_offset: int, pop_time: int
    ) -> int:
        """Mark ``queue_offset`` acknowledged: the group's next offset (>= 0), -1 for an
        offset this queue did not hand out, -2 for an ack of an older pop."""
        info = self._get(topic, group, queue_id)
        if info is None:
            return queue_offset + 1
        if not info.offset_list:
            return -1
        if pop_time != info.pop_time:
            return -2
        for i in range(len(info.offset_list)):
            if info.queue_offset(i) == queue_offset:
                info.commit_offset_bit |= 1 << i
                info.last_consume_timestamp = _now()
                return info.next_offset()
        return -1

    def update_next_visible_time(
        self, topic: str, group: str, queue_id: int, queue_offset: int, pop_time: int, at: int
    ) -> bool:
        info = self._get(topic, group, queue_id)
        if info is None or info.pop_time != pop_time:
            return False
        info.offset_next_visible_time[queue_offset] = at
        return True

    def clear_block(self, topic: str, group: str, queue_id: int) -> None:
        self.table.get(f"{topic}@{group}", {}).pop(queue_id, None)
