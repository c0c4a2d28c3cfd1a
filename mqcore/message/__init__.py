"""Messages: the model, property and record codecs, and message ids."""

from __future__ import annotations

from mqcore.message.const import SysFlag
from mqcore.message.ids import (
    create_offset_msg_id,
    create_uniq_key,
    decode_offset_msg_id,
    decode_uniq_key,
)
from mqcore.message.model import HostAddr, Message, MessageExt
from mqcore.message.properties import decode_properties, encode_properties
from mqcore.message.record import (
    DispatchRequest,
    decode_dispatch,
    decode_record,
    decode_records,
    encode_record,
    patch_record,
)

__all__ = [
    "DispatchRequest",
    "HostAddr",
    "Message",
    "MessageExt",
    "SysFlag",
    "create_offset_msg_id",
    "create_uniq_key",
    "decode_dispatch",
    "decode_offset_msg_id",
    "decode_properties",
    "decode_record",
    "decode_records",
    "decode_uniq_key",
    "encode_properties",
    "encode_record",
    "patch_record",
]
