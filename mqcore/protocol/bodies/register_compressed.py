"""The compressed form of ``RegisterBrokerBody`` (REGISTER_BROKER with ``compressed=true``).

A broker with ``compressedRegister=true`` sends its topic table as zlib (Java's
``DeflaterOutputStream``, best compression) over a binary layout instead of JSON, which
makes a 10,000-topic registration a few tens of KiB instead of about 2 MiB::

    int32 length, DataVersion JSON
    int32 count, then count x (int32 length, "topic readQueues writeQueues perm filterType")
    int32 length, filterServerList JSON
    (brokers of version >= V5_0_0 only) int32 count, count x (int32 length, mapping JSON)

Integers are big-endian. Topic lines keep only what 4.9.8's ``TopicConfig.encode`` writes
(topicSysFlag and order are lost, as in RocketMQ); RocketMQ 5 appends the attributes as a
sixth field, which is read and ignored. The static-topic mappings of 5.x brokers are
skipped: mq has no static topics.
"""

from __future__ import annotations

import struct
import zlib

import orjson

from mqcore.common.metadata import DataVersion, TopicConfig, TopicFilterType
from mqcore.errors import ConfigError
from mqcore.protocol.bodies.base import BodyError, as_list, as_str, decode_json
from mqcore.protocol.bodies.route import RegisterBrokerBody, TopicConfigSerializeWrapper

__all__ = ["MAX_INFLATED", "V5_0_0", "decode_compressed", "encode_compressed"]

V5_0_0 = 413
"""``MQVersion.Version.V5_0_0.ordinal()``: from here on the body ends with mappings."""

MAX_INFLATED = 256 * 1024 * 1024
"""Largest decompressed body accepted: a broker's table fits many times over, and a
hostile body cannot make the name server inflate without bound."""

_INT = struct.Struct(">i")


def _topic_line(tc: TopicConfig) -> bytes:
    return (
        f"{tc.topic_name} {tc.read_queue_nums} {tc.write_queue_nums} {tc.perm} "
        f"{tc.topic_filter_type}"
    ).encode()


def encode_compressed(body: RegisterBrokerBody) -> bytes:
    """The zlib body 4.9.8's ``RegisterBrokerBody.encode(true)`` writes (no mappings)."""
    wrapper = body.topic_config_serialize_wrapper
    parts: list[bytes] = []

    def chunk(data: bytes) -> None:
        parts.append(_INT.pack(len(data)))
        parts.append(data)

    chunk(orjson.dumps(wrapper.data_version.to_json()))
    parts.append(_INT.pack(len(wrapper.topic_config_table)))
    for tc in wrapper.topic_config_table.values():
        chunk(_topic_line(tc))
    chunk(orjson.dumps(list(body.filter_server_list)))
    return zlib.compress(b"".join(parts), 9)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def int32(self) -> int:
        if self.remaining() < 4:
            raise BodyError("compressed RegisterBrokerBody ends inside a length")
        (value,) = _INT.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def chunk(self) -> bytes:
        length = self.int32()
        if length < 0 or length > self.remaining():
            raise BodyError(f"compressed RegisterBrokerBody: bad length {length}")
        begin = self.pos
        self.pos += length
        return self.data[begin : self.pos]


def _topic_config(line: bytes) -> TopicConfig:
    try:
        fields = line.decode().split(" ")
        if len(fields) < 5:
            raise ValueError(f"{len(fields)} fields")
        return TopicConfig(
            fields[0],
            read_queue_nums=int(fields[1]),
            write_queue_nums=int(fields[2]),
            perm=int(fields[3]),
            topic_filter_type=TopicFilterType(fields[4]),
        )
    except ValueError as exc:  # UnicodeDecodeError is one
        raise BodyError(f"compressed RegisterBrokerBody: bad topic {line[:200]!r}: {exc}") from None


def _inflate(data: bytes) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, MAX_INFLATED)
    except zlib.error as exc:
        raise BodyError(f"compressed RegisterBrokerBody is not zlib data: {exc}") from None
    if inflater.unconsumed_tail:
        raise BodyError(f"compressed RegisterBrokerBody inflates beyond {MAX_INFLATED} bytes")
    return out


def decode_compressed(data: bytes, version: int) -> RegisterBrokerBody:
    """Read what :func:`encode_compressed` (or a 4.x/5.x Java broker) wrote; ``version``
    is the request's. Raises :class:`BodyError` on anything else."""
    try:
        return _decode(_Reader(_inflate(data)), version)
    except ConfigError as exc:  # a DataVersion that is not an object
        raise BodyError(f"compressed RegisterBrokerBody: {exc}") from None


def _decode(reader: _Reader, version: int) -> RegisterBrokerBody:
    data_version = DataVersion.from_json(decode_json(reader.chunk()))
    count = reader.int32()
    if count < 0:
        raise BodyError(f"compressed RegisterBrokerBody: bad topic count {count}")
    table: dict[str, TopicConfig] = {}
    for _ in range(count):
        tc = _topic_config(reader.chunk())
        table[tc.topic_name] = tc
    filter_servers = [as_str(s) for s in as_list(decode_json(reader.chunk()))]
    if version >= V5_0_0 and reader.remaining():
        for _ in range(reader.int32()):  # static-topic mappings: mq has none to keep
            reader.chunk()
    return RegisterBrokerBody(TopicConfigSerializeWrapper(table, data_version), filter_servers)
