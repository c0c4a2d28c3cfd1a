"""The order Java's ``HashMap`` iterates message properties in.

Where 4.9.8's broker rewrites a message (delay to ``SCHEDULE_TOPIC_XXXX``, a half
message, a check copy, an op message) it serializes the property map again with
``MessageDecoder.messageProperties2String``, i.e. in ``HashMap`` iteration order: by
bucket ``(h ^ h >>> 16) & (n - 1)`` of the key's ``String.hashCode`` (n = 16, doubled
past 3/4 full), and in insertion order inside a bucket. Writing those records in the
same order makes them byte for byte what 4.9.8 stores.
"""

from __future__ import annotations

from collections.abc import Mapping

from mqcore.common.javahash import java_string_hash
from mqcore.message.const import PROPERTY_WAIT_STORE_MSG_OK

__all__ = ["hash_map_order", "rewrite_properties"]


def _bucket(key: str, size: int) -> int:
    h = java_string_hash(key) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (size - 1)


def hash_map_order(props: Mapping[str, str]) -> dict[str, str]:
    """``props`` (in insertion order) as a fresh dict in ``HashMap`` iteration order."""
    size = 16
    while len(props) > size * 3 // 4:
        size *= 2
    keys = sorted(props, key=lambda k: _bucket(k, size))  # stable: insertion order kept
    return {k: props[k] for k in keys}


def rewrite_properties(props: dict[str, str], added: Mapping[str, str]) -> None:
    """In place, what a 4.9.8 rewrite of a sent message writes: ``WAIT`` put again last
    (SendMessageProcessor drops it from the text and puts it back), then ``added``, the
    whole map serialized in ``HashMap`` order."""
    wait = props.pop(PROPERTY_WAIT_STORE_MSG_OK, None)
    if wait is not None:
        props[PROPERTY_WAIT_STORE_MSG_OK] = wait
    props.update(added)
    ordered = hash_map_order(props)
    props.clear()
    props.update(ordered)
