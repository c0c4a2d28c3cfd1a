"""SIGKILL a SYNC_FLUSH writer at random moments; every acknowledged message survives.

A child process appends with SYNC_FLUSH and prints each acknowledged offset (after the
group commit covering it). The test kills it with SIGKILL after a random number of
acknowledgements, restarts it (abnormal recovery) for several rounds, then checks every
acknowledged message, the consume queues' consistency and that nothing lies past the
recovered end.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from mqcore.common.javahash import tags_hash_code
from mqcore.message.record import DispatchRequest, decode_record
from mqcore.store import MessageStore

REPO = Path(__file__).resolve().parents[3]

CHILD = """
import sys
from mqcore.message.model import MessageExt
from mqcore.store import FlushDiskType, MessageStore, MessageStoreConfig, PutStatus

root, round_no = sys.argv[1], int(sys.argv[2])
cfg = MessageStoreConfig(
    store_path_root_dir=root,
    mapped_file_size_commit_log=32 * 1024,
    mapped_file_size_consume_queue=50 * 20,
    max_hash_slot_num=64,
    max_index_num=128,
    max_message_size=8 * 1024,
    flush_disk_type=FlushDiskType.SYNC_FLUSH,
    flush_interval_consume_queue=20,
)
store = MessageStore(cfg)
store.start()
rep = store.recovery_report
print(f"RECOVERED {rep.abnormal} {store.max_phy_offset}", flush=True)
seq = 0
while True:
    q = seq % 3
    body = (f"r{round_no}-s{seq}-" * (1 + seq % 9)).encode()
    msg = MessageExt(
        topic="CrashTopic", body=body, queue_id=q,
        properties={"TAGS": f"T{seq % 5}", "KEYS": f"r{round_no}s{seq}"},
        born_host=("127.0.0.1", 1), store_host=("127.0.0.1", 10911),
    )
    res = store.put_message(msg)
    if res.wait(10) is PutStatus.PUT_OK:
        print(f"ACK {round_no} {seq} {res.wrote_offset} {q} {res.queue_offset}", flush=True)
    seq += 1
"""

ROUNDS = 5


def _run_round(root: Path, round_no: int, rng: random.Random) -> tuple[str, list[tuple[int, ...]]]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), str(round_no)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    acks: list[tuple[int, ...]] = []
    try:
        assert proc.stdout is not None
        header = proc.stdout.readline().strip()
        assert header.startswith("RECOVERED"), header
        want = rng.randint(30, 400)
        deadline = time.monotonic() + 20
        while len(acks) < want and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            parts = line.split()
            assert parts[0] == "ACK", line
            acks.append(tuple(int(x) for x in parts[1:]))
        proc.send_signal(signal.SIGKILL)
        # the child may have printed more acks before it died: keep them too
        rest, _ = proc.communicate(timeout=10)
        for line in rest.splitlines():
            parts = line.split()
            if len(parts) == 6 and parts[0] == "ACK":
                acks.append(tuple(int(x) for x in parts[1:]))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert acks, "child acknowledged nothing"
    return header, acks


def test_sigkill_rounds_lose_no_acknowledged_message(tmp_path: Path) -> None:
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    all_acks: list[tuple[int, ...]] = []
    for round_no in range(ROUNDS):
        header, acks = _run_round(tmp_path, round_no, rng)
        if round_no:
            abnormal, end = header.split()[1:]
            assert abnormal == "True"  # SIGKILL left the abort file
            assert all(a[2] < int(end) for a in all_acks)
        all_acks.extend(acks)
    assert (tmp_path / "abort").exists()
    _verify(tmp_path, all_acks)


def _verify(root: Path, acks: list[tuple[int, ...]]) -> None:
    from storetest_util import small_config

    cfg = small_config(
        root,
        mapped_file_size_commit_log=32 * 1024,
        mapped_file_size_consume_queue=50 * 20,
        max_hash_slot_num=64,
        max_index_num=128,
        max_message_size=8 * 1024,
    )
    store = MessageStore(cfg)
    store.start()
    try:
        assert store.recovery_report is not None and store.recovery_report.abnormal
        for round_no, seq, phy, q, qo in acks:
            msg = decode_record(store.get_message(phy), check_crc=True)
            assert msg.body == (f"r{round_no}-s{seq}-" * (1 + seq % 9)).encode()
            assert (msg.queue_id, msg.queue_offset) == (q, qo)
            got = store.get_messages("CrashTopic", q, qo, 1)
            assert got.buffers and bytes(got.buffers[0]) == bytes(store.get_message(phy))
        assert store.query_by_key("CrashTopic", f"r0s{acks[0][1]}").phy_offsets
        # consume queues: dense, every entry points at its own record
        end = store.max_phy_offset
        for q in range(3):
            cq = store.consume_queue("CrashTopic", q)
            assert cq is not None
            expected_qo = 0
            for qo, phy, size, tags in cq.iter_entries():
                assert qo == expected_qo
                expected_qo += 1
                req = store.commit_log.check_at(phy, check_crc=True)
                assert isinstance(req, DispatchRequest)
                assert (req.topic, req.queue_id, req.queue_offset, req.size) == (
                    "CrashTopic",
                    q,
                    qo,
                    size,
                )
                seq = int(decode_record(store.get_message(phy)).body.split(b"-")[1][1:])
                assert tags == tags_hash_code(f"T{seq % 5}")
                assert phy + size <= end
            assert expected_qo == store.get_max_offset_in_queue("CrashTopic", q)
        # nothing past the recovered end: scan ends there, the rest of the file is zeros
        scanned = list(store.commit_log.scan(store.min_phy_offset, check_crc=True))
        assert store.commit_log.last_scan_end == end
        assert len(scanned) == sum(store.get_max_offset_in_queue("CrashTopic", q) for q in range(3))
        last = store.commit_log.queue.last_file
        assert last is not None
        assert not any(last.view[end - last.file_from_offset :])
        assert sorted(p.name for p in (root / "commitlog").iterdir())[-1] == last.path.name
    finally:
        store.shutdown()
