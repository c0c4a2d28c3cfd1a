"""Requests to the POP processors, called in-process as another access point would, and
what a client reads back from their answers (shared by the POP processor tests)."""

from __future__ import annotations

import time
from typing import Any, cast

from mqcore.broker.controller import BrokerController
from mqcore.broker.processor import ack, pop
from mqcore.message.record import decode_record
from mqcore.protocol import RemotingCommand
from mqcore.protocol.extra_info import ExtraInfo, parse_start_offset_info
from mqcore.protocol.headers.pop import (
    AckMessageRequestHeader,
    ConsumeInitMode,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from mqcore.remoting import Processor

__all__ = ["GROUP", "HOUR_MS", "ack_fields", "call", "pop_fields", "receipts"]

GROUP = "g"
HOUR_MS = 3_600_000


def table(broker: BrokerController) -> dict[int, Processor]:
    return {**pop.handlers(broker.context), **ack.handlers(broker.context)}


async def call(
    broker: BrokerController, code: int, fields: dict[str, str], body: bytes = b""
) -> RemotingCommand:
    handler = table(broker)[code]
    answer: Any = handler(cast(Any, None), RemotingCommand.request(code, fields, body))
    if not isinstance(answer, RemotingCommand):
        answer = await answer
    assert isinstance(answer, RemotingCommand)
    return answer


def pop_fields(max_nums: int = 32, queue_id: int = -1, **changes: Any) -> dict[str, str]:
    values: dict[str, Any] = {
        "consumer_group": GROUP,
        "topic": "T",
        "queue_id": queue_id,
        "max_msg_nums": max_nums,
        "invisible_time": 1000,
        "poll_time": 0,
        "born_time": int(time.time() * 1000),
        "init_mode": ConsumeInitMode.MIN,
        **changes,
    }
    return PopMessageRequestHeader(**values).to_ext_fields()


def receipts(answer: RemotingCommand) -> list[tuple[ExtraInfo, bytes]]:
    """Each popped message's receipt as a client builds it, and its body."""
    head = PopMessageResponseHeader.from_command(answer)
    starts = parse_start_offset_info(head.start_offset_info)
    out = []
    pos = 0
    while pos < len(answer.body):
        msg = decode_record(answer.body, pos)
        pos += msg.store_size
        info = ExtraInfo(
            starts[f"0@{msg.queue_id}"],
            head.pop_time,
            head.invisible_time,
            head.revive_qid,
            "0",
            "broker-a",
            msg.queue_id,
            msg.queue_offset,
        )
        out.append((info, msg.body))
    return out


def ack_fields(info: ExtraInfo, topic: str = "T") -> dict[str, str]:
    assert info.queue_offset is not None
    return AckMessageRequestHeader(
        GROUP, topic, info.queue_id, info.encode(), info.queue_offset
    ).to_ext_fields()
