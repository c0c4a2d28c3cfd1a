"""``infer_geometry`` visits only the slot counts that can fit (every fifth), yet finds
what the exhaustive scan finds: checked against that scan on small files."""

from __future__ import annotations

import struct

from fuzzing import fuzz
from hypothesis import given
from hypothesis import strategies as st

from mqcore.errors import CorruptRecordError
from mqcore.store.index_file import _geometry_fits, infer_geometry


def exhaustive(data: bytes) -> tuple[int, int] | None:
    """The scan over every slot count that infer_geometry used to make."""
    index_count = max(struct.unpack_from(">i", data, 36)[0], 1)
    body = len(data) - 40
    found = []
    for slots in range(body // 4, 0, -1):
        rest = body - slots * 4
        if rest % 20 or rest // 20 < max(index_count, 2):
            continue
        if index_count <= 1 or _geometry_fits(data, slots, index_count):
            found.append((slots, rest // 20))
            if index_count <= 1 or len(found) > 1:
                break
    return found[0] if len(found) == 1 else None


@fuzz(300)
@given(st.binary(min_size=40, max_size=1200), st.integers(-3, 60))
def test_infer_geometry_matches_the_exhaustive_scan(data: bytes, index_count: int) -> None:
    data = data[:36] + struct.pack(">i", index_count) + data[40:]
    try:
        got: tuple[int, int] | None = infer_geometry(data)
    except CorruptRecordError:
        got = None
    assert got == exhaustive(data)
