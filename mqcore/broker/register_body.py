"""REGISTER_BROKER bodies from the broker's topic table.

The table is copied on the event loop (a list of references: microseconds, and the loop
may change the table right after) and encoded wherever the caller likes; a table larger
than :data:`ON_LOOP_MAX` topics is encoded on a worker thread, since JSON for 10,000
topics costs tens of milliseconds that the loop must not spend. Encoding follows the
broker's settings:

- ``compressedRegister``: the zlib body 4.9.8 and RocketMQ 5 name servers inflate;
- ``enableSplitRegistration`` with ``splitRegistrationSize`` (RocketMQ 5): a table of at
  least that many topics goes as several registrations of that many topics each, all
  with the same data version (a name server adds the topics it lacks from each part).

A broker that is not both readable and writable advertises its own permission on every
topic, as RocketMQ does.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from mqcore.common.metadata import PERM_READ, PERM_WRITE, DataVersion, TopicConfig
from mqcore.protocol.bodies.register_compressed import encode_compressed
from mqcore.protocol.bodies.route import RegisterBrokerBody, TopicConfigSerializeWrapper
from mqcore.store.metadata import TopicConfigManager

__all__ = ["ON_LOOP_MAX", "RegisterBody", "TopicTableSnapshot", "encode_bodies", "snapshot"]

ON_LOOP_MAX = 64
"""Topics a body may carry and still be encoded on the event loop (a few hundred µs)."""


@dataclass(frozen=True, slots=True)
class TopicTableSnapshot:
    """What one registration sends: topic configs, their version, the broker's perm."""

    entries: list[TopicConfig]
    data_version: DataVersion
    broker_permission: int

    def __len__(self) -> int:
        return len(self.entries)


@dataclass(frozen=True, slots=True)
class RegisterBody:
    """One REGISTER_BROKER body with the header fields that depend on it."""

    body: bytes
    compressed: bool

    @property
    def crc32(self) -> int:
        """``bodyCrc32`` as 4.9.8 computes it (``UtilAll.crc32``: non-negative int)."""
        return zlib.crc32(self.body) & 0x7FFFFFFF


def snapshot(
    manager: TopicConfigManager, broker_permission: int, topics: Iterable[str] | None = None
) -> TopicTableSnapshot:
    """The whole table, or only ``topics`` (those still present), with the current data
    version: cheap enough for the loop, and immune to changes made after it."""
    table = manager.table
    if topics is None:
        entries = list(table.values())
    else:
        entries = [tc for tc in (table.get(t) for t in topics) if tc is not None]
    version = manager.data_version
    return TopicTableSnapshot(
        entries,
        DataVersion(version.timestamp, version.counter, version.state_version),
        broker_permission,
    )


def _advertised(snap: TopicTableSnapshot) -> dict[str, TopicConfig]:
    perm = snap.broker_permission
    if perm & PERM_READ and perm & PERM_WRITE:
        return {tc.topic_name: tc for tc in snap.entries}
    return {tc.topic_name: dataclasses.replace(tc, perm=perm) for tc in snap.entries}


def encode_bodies(
    snap: TopicTableSnapshot, *, compressed: bool = False, split_size: int | None = None
) -> list[RegisterBody]:
    """The bodies of one registration: one, or ``ceil(n / split_size)`` when the table
    has at least ``split_size`` topics (RocketMQ 5's ``enableSplitRegistration``)."""
    table = _advertised(snap)
    if split_size is not None and split_size > 0 and len(table) >= split_size:
        items = list(table.items())
        parts = [dict(items[i : i + split_size]) for i in range(0, len(items), split_size)]
    else:
        parts = [table]
    out = []
    for part in parts:
        body = RegisterBrokerBody(TopicConfigSerializeWrapper(part, snap.data_version))
        data = encode_compressed(body) if compressed else body.encode()
        out.append(RegisterBody(data, compressed))
    return out
