"""Arbitrary bytes in any store file give problems or CorruptRecordError, nothing else."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqcore.errors import MQError
from mqcore.message import encode_record, patch_record
from mqcore.store.offline import OfflineStore
from mqcore.store.summary import summarize
from mqcore.store.verify import verify_store


def _valid_prefix() -> bytes:
    out = bytearray()
    for i in range(3):
        rec = encode_record(topic="T", body=b"b%d" % i, properties={"TAGS": "a", "KEYS": "k"})
        patch_record(rec, 0, queue_offset=i, physical_offset=len(out), store_timestamp=1000 + i)
        out += rec
    return bytes(out)


@given(
    log_tail=st.binary(max_size=600),
    cq=st.binary(max_size=200),
    index=st.binary(min_size=0, max_size=600),
    keep_valid=st.booleans(),
)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_store_files(log_tail: bytes, cq: bytes, index: bytes, keep_valid: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "commitlog").mkdir()
        data = (_valid_prefix() if keep_valid else b"") + log_tail
        (root / "commitlog" / "00000000000000000000").write_bytes(data.ljust(4096, b"\0")[:4096])
        qdir = root / "consumequeue" / "T" / "0"
        qdir.mkdir(parents=True)
        (qdir / "00000000000000000000").write_bytes(cq[: len(cq) - len(cq) % 20].ljust(200, b"\0"))
        (root / "index").mkdir()
        (root / "index" / "20260101000000000").write_bytes(index)
        (root / "checkpoint").write_bytes(log_tail[:4096])
        try:
            with OfflineStore(root) as store:
                summarize(store)
                list(verify_store(store))
                store.query_key("T", "k")
        except MQError:
            pass
