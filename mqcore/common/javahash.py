"""Java ``String.hashCode`` semantics, needed for tag codes and index key hashes.

RocketMQ hashes strings as Java does: over UTF-16 code units (a non-BMP character counts
as two surrogate units), with 32-bit wrap-around, read as a signed int.

The functions below are the reference; ``_javahash.pyx`` is their compiled twin, taken at
import when built (see :mod:`mqcore.common.core`): the index hashes a new unique key per
message, where the cache below never hits and the Python loop was the cost.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final

from mqcore.common.core import load

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


_pure_hash = java_string_hash  # what the pure functions below call, whichever core runs


def tags_hash_code(tags: str | None) -> int:
    """Consume queue tag slot value for ``tags`` (0 when there is no tag)."""
    if not tags:
        return 0
    return _pure_hash(tags)


def index_key_hash(key: str) -> int:
    """Non-negative key hash used by index files (Java's ``abs`` quirk included)."""
    h = _pure_hash(key)
    if h == -0x80000000:
        return 0
    return abs(h)


PURE: Final[dict[str, Callable[..., Any]]] = {
    "java_string_hash": java_string_hash,
    "tags_hash_code": tags_hash_code,
    "index_key_hash": index_key_hash,
}
"""The pure functions, kept for the parity tests whichever core runs."""

_compiled = load("mqcore.common._javahash")
if _compiled is not None:
    java_string_hash = _compiled.java_string_hash
    tags_hash_code = _compiled.tags_hash_code
    index_key_hash = _compiled.index_key_hash
