"""Recalling a timer message (RocketMQ 5's ``Producer.recallMessage``): RECALL_MESSAGE to
the master the handle names.

The handle (a send's ``recall_handle``) is URL-safe base64 of ``"v1 <topic> <brokerName>
<time> <msgId>"``; the broker that parked the message is the one to ask, through the
name server's view of its master.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

from mqcore.client.errors import check_ok
from mqcore.errors import MQClientError
from mqcore.protocol import RequestCode
from mqcore.protocol.headers.recall import (
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
)

if TYPE_CHECKING:
    from mqcore.client.admin import Admin

__all__ = ["recall_handle_broker", "recall_message"]


def recall_handle_broker(handle: str) -> str:
    """The broker name a v1 handle carries; MQClientError when it is not one."""
    try:
        items = base64.urlsafe_b64decode(handle.encode()).decode().split(" ")
    except (binascii.Error, UnicodeError, ValueError):
        items = []
    if len(items) < 5 or items[0] != "v1":
        raise MQClientError(f"not a recall handle: {handle!r}")
    return items[2]


async def recall_message(
    admin: Admin, topic: str, handle: str, *, producer_group: str | None = None
) -> str:
    """Recall the timer message of ``handle`` in ``topic``; the recalled message's id.
    Raises MQClientError (bad handle, no such broker) or MQBrokerError (refused)."""
    broker = recall_handle_broker(handle)
    addr = (await admin.masters_of(broker_name=broker))[broker]
    header = RecallMessageRequestHeader(
        topic=topic, recall_handle=handle, producer_group=producer_group
    )
    request = admin.instance.request(RequestCode.RECALL_MESSAGE, header)
    response = check_ok(await admin.instance.invoke(addr, request, admin.timeout))
    return RecallMessageResponseHeader.from_command(response).msg_id
