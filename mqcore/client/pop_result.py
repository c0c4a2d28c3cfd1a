"""The messages of a POP_MESSAGE answer, each with its receipt (what 5.x's
``MQClientAPIImpl.processPopResponse`` and the proxy's local ``popMessage`` do).

A broker answers a pop with the raw records and, in its header, where the pop started in
each queue, which offsets it took and (FIFO) how often each was handed out before. The
receipt of a message (``POP_CK``, :class:`~mqcore.protocol.extra_info.ExtraInfo`) is
built from those, unless the broker put one in the message itself (a revived retry).
Both pop clients use this: :class:`~mqcore.client.simple_consumer.SimpleConsumer` over
remoting and the gRPC access point in process, so a receipt means the same to both.
"""

from __future__ import annotations

from mqcore.client.pull_decode import decode_pulled
from mqcore.errors import MQClientError
from mqcore.message.model import MessageExt
from mqcore.protocol import RemotingCommand
from mqcore.protocol.extra_info import (
    PROPERTY_FIRST_POP_TIME,
    PROPERTY_POP_CK,
    ExtraInfo,
    order_count_key,
    parse_msg_offset_info,
    parse_order_count_info,
    parse_start_offset_info,
    retry_mark,
    start_offset_key,
)
from mqcore.protocol.headers.pop import PopMessageResponseHeader

__all__ = ["popped_messages"]


def popped_messages(response: RemotingCommand, topic: str, broker_name: str) -> list[MessageExt]:
    """The messages of a successful POP_MESSAGE answer of ``broker_name`` for ``topic``,
    each with its receipt, its first pop time and (FIFO) its delivery count; their topic
    is ``topic`` even when read from its retry topic. MQClientError when the answer's
    offsets do not name what came (a broker bug: never acknowledge under wrong receipts)."""
    head = PopMessageResponseHeader.from_command(response)
    messages = decode_pulled(response.body, topic).messages
    starts = parse_start_offset_info(head.start_offset_info)
    counts = parse_order_count_info(head.order_count_info)
    for msg in messages:
        props = msg.properties
        if PROPERTY_POP_CK not in props:
            start = starts.get(start_offset_key(msg.topic, msg.queue_id), msg.queue_offset)
            props[PROPERTY_POP_CK] = ExtraInfo(
                ck_queue_offset=start,
                pop_time=head.pop_time,
                invisible_time=head.invisible_time,
                revive_qid=head.revive_qid,
                retry=retry_mark(msg.topic),
                broker_name=broker_name,
                queue_id=msg.queue_id,
                queue_offset=msg.queue_offset,
            ).encode()
        if counts:  # FIFO: how often each was handed out before
            key = order_count_key(msg.topic, msg.queue_id, msg.queue_offset)
            count = counts.get(key, counts.get(start_offset_key(msg.topic, msg.queue_id)))
            if count:
                msg.reconsume_times = count
        props.setdefault(PROPERTY_FIRST_POP_TIME, str(head.pop_time))
        msg.topic = topic
    _check_offsets(head, messages)
    return messages


def _check_offsets(head: PopMessageResponseHeader, messages: list[MessageExt]) -> None:
    listed = parse_msg_offset_info(head.msg_offset_info)
    count = sum(len(v) for v in listed.values())
    if listed and count != len(messages):
        raise MQClientError(f"the POP answer lists {count} offsets for {len(messages)} messages")
