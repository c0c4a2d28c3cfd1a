"""The sample requests the codec benchmarks time, so their figures are of the same bytes."""

from __future__ import annotations

from mqcore.protocol.headers import SendMessageRequestHeader

__all__ = ["SEND"]

SEND = SendMessageRequestHeader(
    producer_group="pg",
    topic="TopicTest",
    default_topic="TBW102",
    default_topic_queue_nums=4,
    queue_id=1,
    sys_flag=0,
    born_timestamp=1_700_000_000_000,
    flag=0,
    properties="KEYS\x01k1\x02UNIQ_KEY\x01C0A8010A30394C7B5B1C0C3C6F2A0000\x02WAIT\x01true"
    "\x02TAGS\x01TagA",
    reconsume_times=0,
    unit_mode=False,
    batch=False,
    bname="broker-a",
)
"""A SEND_MESSAGE header as a Java producer fills it (keys, unique key, tag)."""
