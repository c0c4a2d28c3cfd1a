"""Sans-IO RocketMQ remoting protocol: commands, frames, codes, typed headers, bodies.

Pure functions and small state machines over bytes; nothing here opens a socket or needs
an event loop (mqcore.remoting does that).
"""

from __future__ import annotations

from mqcore.protocol.codec import (
    DEFAULT_MAX_FRAME,
    NEED_DATA,
    FrameDecoder,
    NeedData,
    encode,
    encode_buffers,
)
from mqcore.protocol.codes import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    MQ_VERSION,
    LanguageCode,
    RequestCode,
    ResponseCode,
    SerializeType,
)
from mqcore.protocol.command import Body, RemotingCommand, next_opaque

__all__ = [
    "DEFAULT_MAX_FRAME",
    "FLAG_ONEWAY",
    "FLAG_RESPONSE",
    "MQ_VERSION",
    "NEED_DATA",
    "Body",
    "FrameDecoder",
    "LanguageCode",
    "NeedData",
    "RemotingCommand",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
    "encode",
    "encode_buffers",
    "next_opaque",
]
