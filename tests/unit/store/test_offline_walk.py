"""The offline walk of the commit log (`mq store verify|dump`): the commit log's own scan
one file at a time, so a damaged file is reported and the next file is still read."""

from __future__ import annotations

import struct
from pathlib import Path

from mqcore.errors import CorruptRecordError
from mqcore.message import encode_record, patch_record
from mqcore.message.record import encode_blank
from mqcore.store.offline import OfflineStore

FILE_SIZE = 4096


def _file(base: int, bodies: list[bytes], *, queue_offset: int) -> bytes:
    out = bytearray()
    for i, body in enumerate(bodies):
        rec = encode_record(topic="T", body=body, properties={"TAGS": "a"})
        patch_record(
            rec, 0, queue_offset=queue_offset + i, physical_offset=base + len(out),
            store_timestamp=1000 + queue_offset + i,
        )  # fmt: skip
        out += rec
    blank = FILE_SIZE - len(out)  # a BLANK record ends a full file, as the broker writes
    out += encode_blank(blank).ljust(blank, b"\0")
    return bytes(out)


def _store(root: Path, damage_first: bool) -> tuple[list[int], list[int]]:
    log = root / "commitlog"
    log.mkdir(parents=True)
    first = bytearray(_file(0, [b"a0", b"a1", b"a2"], queue_offset=0))
    second = _file(FILE_SIZE, [b"b0", b"b1"], queue_offset=3)
    sizes = [struct.unpack_from(">i", first, 0)[0]]
    sizes.append(struct.unpack_from(">i", first, sizes[0])[0])
    if damage_first:
        struct.pack_into(">i", first, sizes[0] + sizes[1] + 4, 0x12345678)  # third's magic
    (log / f"{0:020d}").write_bytes(first)
    (log / f"{FILE_SIZE:020d}").write_bytes(second)
    offsets_first = [0, sizes[0], sizes[0] + sizes[1]]
    size_b0 = struct.unpack_from(">i", second, 0)[0]
    return offsets_first, [FILE_SIZE, FILE_SIZE + size_b0]


def test_every_record_of_every_file_in_order(tmp_path: Path) -> None:
    first, second = _store(tmp_path, damage_first=False)
    with OfflineStore(tmp_path) as store:
        walked = list(store.walk_commit_log(check_crc=True))
        assert [offset for offset, _ in walked] == first + second
        records = [r for _, r in walked if not isinstance(r, CorruptRecordError)]
        assert [(r.topic, r.queue_offset) for r in records] == [("T", i) for i in range(5)]
        scan = store.scan()
        assert scan.records == 5 and scan.corruption is None
        assert list(store.walk_commit_log(from_offset=second[1])) == walked[-1:]


def test_a_damaged_file_is_reported_and_the_next_file_still_read(tmp_path: Path) -> None:
    first, second = _store(tmp_path, damage_first=True)
    with OfflineStore(tmp_path) as store:
        walked = list(store.walk_commit_log())
    offsets = [offset for offset, _ in walked]
    assert offsets == [first[0], first[1], first[2], *second]
    error = walked[2][1]
    assert isinstance(error, CorruptRecordError) and error.offset == first[2]
    assert "bad magic code 0x12345678" in str(error)
    assert all(not isinstance(r, CorruptRecordError) for _, r in walked[3:])
