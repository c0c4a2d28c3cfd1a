"""Message lookups (RocketMQ's QueryMessageProcessor): QUERY_MESSAGE by key through the
index and VIEW_MESSAGE_BY_ID by commit-log offset (spec §9.3, store-format §6, §8.5).

Both answer with raw stored records, which clients decode themselves. The records are
copied out of the mapped commit log: a lookup is rare and small (at most 64 records), and
a copy cannot be invalidated by file cleanup while the transport still holds it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mqcore.broker.processor import reply
from mqcore.errors import CorruptRecordError, StoreError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from mqcore.remoting import Channel, Processor

if TYPE_CHECKING:
    from mqcore.broker.context import BrokerContext
    from mqcore.store.message_store import MessageStore
    from mqcore.store.store_config import MessageStoreConfig

__all__ = ["QueryProcessor", "handlers"]

log = logging.getLogger("mq.broker.query")


class QueryProcessor:
    def __init__(self, store: MessageStore, store_config: MessageStoreConfig) -> None:
        self.store = store
        self.store_config = store_config

    def query_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = QueryMessageRequestHeader.from_command(request)
        max_num = header.max_num
        if header.unique_key_query:
            # A unique key (UNIQ_KEY) names one message, maybe stored a few times.
            max_num = self.store_config.default_query_max_num
        result = self.store.query_by_key(
            header.topic,
            header.key,
            max(0, max_num),
            header.begin_timestamp,
            header.end_timestamp,
        )
        response_header = QueryMessageResponseHeader(
            result.index_last_update_timestamp, result.index_last_update_phyoffset
        )
        if not result.buffers:
            return reply(
                request,
                ResponseCode.QUERY_NOT_FOUND,
                "can not find message, maybe time range not correct",
                response_header,
            )
        return reply(request, header=response_header, body=b"".join(result.buffers))

    def view_message_by_id(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = ViewMessageRequestHeader.from_command(request)
        try:
            if header.offset < 0:
                raise CorruptRecordError("negative offset")
            record = bytes(self.store.get_message(header.offset))
        except StoreError:  # CorruptRecordError included: nothing stored there
            return reply(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"can not find message by the offset, {header.offset}",
            )
        return reply(request, body=record)


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    proc = QueryProcessor(ctx.store, ctx.store_config)
    return {
        RequestCode.QUERY_MESSAGE: proc.query_message,
        RequestCode.VIEW_MESSAGE_BY_ID: proc.view_message_by_id,
    }
