"""Java ``String.hashCode`` semantics, needed for tag codes and index key hashes.

RocketMQ hashes strings as Java does: over UTF-16 code units (a non-BMP character counts
as two surrogate units), with 32-bit wrap-around, read as a signed int.
"""

from __future__ import annotations

from functools import lru_cache

_MASK = 0xFFFFFFFF


@lru_cache(maxsize=4096)
def java_string_hash(value: str) -> int:
    """Signed 32-bit ``String.hashCode`` of ``value``."""
    h = 0
    if value.isascii():
        for ch in value.encode("ascii"):
            h = (31 * h + ch) & _MASK
    else:
        data = value.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(data), 2):
            h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK
    return h - 0x100000000 if h & 0x80000000 else h


def tags_hash_code(tags: str | None) -> int:
    """Consume queue tag slot value for ``tags`` (0 when there is no tag)."""
    if not tags:
        return 0
    return java_string_hash(tags)


def index_key_hash(key: str) -> int:
    """Non-negative key hash used by index files (Java's ``abs`` quirk included)."""
    h = java_string_hash(key)
    if h == -0x80000000:
        return 0
    return abs(h)
