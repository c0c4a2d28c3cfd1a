"""PUSH_REPLY_MESSAGE_TO_CLIENT (326): a broker hands a reply to the requesting client.

Field names and nullability are 4.9.8's ``ReplyMessageRequestHeader``: the send header's
fields under their long names, plus where the reply came from and when it was stored.
``bornHost``/``storeHost`` are ``ip:port`` strings.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.protocol.headers.base import CommandHeader, JavaInt

__all__ = ["ReplyMessageRequestHeader"]


@dataclass(frozen=True, slots=True)
class ReplyMessageRequestHeader(CommandHeader):
    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: JavaInt
    queue_id: JavaInt
    sys_flag: JavaInt
    born_timestamp: int
    flag: JavaInt
    born_host: str
    store_host: str
    store_timestamp: int
    properties: str | None = None
    reconsume_times: JavaInt | None = None
    unit_mode: bool = False
