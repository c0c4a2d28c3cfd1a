"""`mq store inspect|dump|verify|query` on the real RocketMQ 4.9.8 store and on broken copies."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

MqRunner = Callable[..., subprocess.CompletedProcess[str]]


def dump_json(mq: MqRunner, *args: str) -> list[Any]:
    """`mq store dump ARGS --json`, which must succeed: one document per line."""
    done = mq("store", "dump", *args, "--json", check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def _digest(root: Path) -> dict[str, tuple[str, float]]:
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def store_copy(fixture_store: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "store"
    shutil.copytree(fixture_store, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def test_inspect_real_store_json(mq: MqRunner, fixture_store: Path) -> None:
    before = _digest(fixture_store)
    doc = json.loads(mq("store", "inspect", str(fixture_store), "--json", check=True).stdout)
    fixture = {
        q["queue_id"]: q["max_offset"] for q in doc["queues"] if q["topic"] == "FixtureTopic"
    }
    assert fixture == {0: 28, 1: 28, 2: 27, 3: 27}
    assert doc["records"] == 120
    assert doc["records_per_topic"] == {"FixtureTopic": 110, "SCHEDULE_TOPIC_XXXX": 10}
    (group,) = doc["group_offsets"]
    assert (group["group"], group["topic"], group["queue_id"]) == (
        "FixtureGroup",
        "FixtureTopic",
        0,
    )
    assert (group["consumer_offset"], group["lag"]) == (5, 23)
    (level,) = doc["delay_levels"]
    assert (level["level"], level["delivered"], level["max_offset"], level["waiting"]) == (
        3,
        10,
        10,
        0,
    )
    assert doc["index_files"][0]["index_count"] == 240
    assert doc["abnormal_stop"] is False and doc["problems"] == []
    assert _digest(fixture_store) == before, "inspect must not touch the store"


def test_inspect_table_output(mq: MqRunner, fixture_store: Path) -> None:
    out = mq("store", "inspect", "--store", str(fixture_store), check=True).stdout
    assert "FixtureTopic" in out and "FixtureGroup" in out and "clean stop" in out
    assert "Delay levels" in out and "10s" in out
    # In a pipe every section is plain columns under its title: whole names, no box.
    assert "│" not in out and "…" not in out
    assert re.search(r"^TOPIC +QUEUE +MIN +MAX +LAST-STORED$", out, re.M), out
    assert re.search(r"^FixtureTopic +0 +\d+ +\d+ +\d{4}-\d{2}-\d{2} ", out, re.M), out
    boxed = mq("store", "inspect", "--store", str(fixture_store), "-o", "table", check=True)
    assert "│" in boxed.stdout and "FixtureTopic" in boxed.stdout


def test_verify_real_store_is_clean(mq: MqRunner, fixture_store: Path) -> None:
    before = _digest(fixture_store)
    done = mq("store", "verify", str(fixture_store))
    assert done.returncode == 0, done.stderr
    assert "120 records checked · 0 problem(s)" in done.stdout
    assert _digest(fixture_store) == before


def test_query_finds_keys_in_real_index(mq: MqRunner, fixture_store: Path) -> None:
    hit = json.loads(
        mq(
            "store", "query", "FixtureTopic", "k42", "-s", str(fixture_store), "--json", check=True
        ).stdout
    )
    assert hit["keys"] == "k42" and hit["body"] == "body-42" and hit["queueId"] == 2
    lines = mq(
        "store", "query", "FixtureTopic", "dk3", "-s", str(fixture_store), "--json", check=True
    ).stdout.splitlines()
    (delivered,) = [json.loads(x) for x in lines]
    assert (
        delivered["body"] == "delay-body-3"
        and delivered["properties"]["REAL_TOPIC"] == "FixtureTopic"
    )
    sched = json.loads(
        mq(
            "store",
            "query",
            "SCHEDULE_TOPIC_XXXX",
            "dk3",
            "-s",
            str(fixture_store),
            "--json",
            check=True,
        ).stdout
    )
    assert sched["queueId"] == 2 and sched["properties"]["DELAY"] == "3"
    uniq = delivered["uniqKey"]
    assert mq("store", "query", "FixtureTopic", uniq, "-s", str(fixture_store)).returncode == 0
    missing = mq("store", "query", "FixtureTopic", "no-such-key", "-s", str(fixture_store))
    assert missing.returncode == 1 and "0 message(s)" in missing.stderr
    # As `mq query` shows it: in a pipe the wide columns, plain and whole.
    piped = mq("store", "query", "FixtureTopic", "k42", "-s", str(fixture_store), check=True)
    header, row = piped.stdout.splitlines()
    assert header.split()[:3] == ["QUEUE", "OFFSET", "STORE-TIME"] and "MSG-ID" in header
    assert hit["msgId"] in row and row.endswith("body-42") and "1 message(s)" in piped.stderr
    shown = mq("store", "query", "FixtureTopic", "k42", "-s", str(fixture_store), "-o", "json")
    assert json.loads(shown.stdout)["msgId"] == hit["msgId"]


def test_dump_commitlog_bare_name_and_json_fields(mq: MqRunner, fixture_store: Path) -> None:
    records = dump_json(mq, "commitlog", "00000000000000000000", "--store", str(fixture_store))
    assert len(records) == 120
    first = records[0]
    for name in (
        "msgId",
        "topic",
        "queueId",
        "queueOffset",
        "commitLogOffset",
        "storeSize",
        "bodyCRC",
        "flag",
        "sysFlag",
        "bornTimestamp",
        "bornHost",
        "storeTimestamp",
        "storeHost",
        "reconsumeTimes",
        "preparedTransactionOffset",
        "properties",
        "tags",
        "keys",
        "bodyLength",
        "body",
    ):
        assert name in first, name
    assert (
        first["topic"] == "FixtureTopic" and first["body"] == "body-0" and first["tags"] == "TagA"
    )
    assert first["properties"]["idx"] == "0" and first["storeHost"] == "127.0.0.1:10911"
    assert first["msgId"] == "7F00000100002A9F0000000000000000"
    offsets = [r["commitLogOffset"] for r in records]
    assert offsets == sorted(offsets) and offsets[1] == first["storeSize"]


def test_dump_commitlog_filters(mq: MqRunner, fixture_store: Path) -> None:
    path = str(fixture_store / "commitlog" / "00000000000000000000")
    sched = dump_json(mq, "commitlog", path, "--topic", "SCHEDULE_TOPIC_XXXX")
    assert len(sched) == 10
    two = dump_json(mq, "commitlog", path, "--from", "197", "--limit", "2")
    assert [r["commitLogOffset"] for r in two] == [197, 394]
    text = mq("store", "dump", "commitlog", path, "-n", "1", check=True).stdout
    assert "FixtureTopic:0#0" in text and "body-0" in text


def test_dump_consumequeue(mq: MqRunner, fixture_store: Path) -> None:
    rows = dump_json(mq, "consumequeue", "FixtureTopic", "0", "-s", str(fixture_store))
    assert len(rows) == 28
    assert rows[0] == {"queueOffset": 0, "commitLogOffset": 0, "size": 197, "tagsCode": 2598919}
    cq_file = fixture_store / "consumequeue/SCHEDULE_TOPIC_XXXX/2/00000000000000000000"
    file_rows = dump_json(mq, "consumequeue", str(cq_file))
    assert len(file_rows) == 10
    bad = mq("store", "dump", "consumequeue", "NoTopic", "0", "-s", str(fixture_store))
    assert bad.returncode == 1 and "no consume queue NoTopic:0" in bad.stderr


def test_dump_index_and_config(mq: MqRunner, fixture_store: Path) -> None:
    lines = dump_json(mq, "index", "20261129184202721", "-s", str(fixture_store))
    header = lines[0]["header"]
    assert header["indexCount"] == 241 and header["maxHashSlotNum"] == 100
    assert len(lines) == 1 + 240
    cfg = json.loads(
        mq("store", "dump", "config", "consumerOffset", "-s", str(fixture_store), check=True).stdout
    )
    assert cfg == {"offsetTable": {"FixtureTopic@FixtureGroup": {"0": 5}}}
    every = json.loads(mq("store", "dump", "config", "-s", str(fixture_store), check=True).stdout)
    assert set(every) >= {"topics", "consumerOffset", "delayOffset", "subscriptionGroup"}
    assert mq("store", "dump", "config", "nope", "-s", str(fixture_store)).returncode == 1


def _first_record_body_pos() -> int:
    return 84 + 4  # IPv4 hosts: the body follows BODYLEN at 84


def test_verify_finds_crc_and_consume_queue_damage(mq: MqRunner, store_copy: Path) -> None:
    log = store_copy / "commitlog" / "00000000000000000000"
    with log.open("r+b") as f:  # flip one body byte of the first record
        f.seek(_first_record_body_pos())
        b = f.read(1)
        f.seek(_first_record_body_pos())
        f.write(bytes([b[0] ^ 0xFF]))
    cq = store_copy / "consumequeue" / "FixtureTopic" / "1" / "00000000000000000000"
    with cq.open("r+b") as f:  # wrong tag slot on entry 2
        f.seek(2 * 20 + 12)
        f.write(struct.pack(">q", 12345))
    done = mq("store", "verify", str(store_copy), "--json")
    assert done.returncode == 1
    problems = [json.loads(x) for x in done.stdout.splitlines()]
    kinds = {(p["kind"], p["offset"]) for p in problems}
    assert ("commitlog", 0) in kinds
    assert any(p["kind"] == "consumequeue" and "tag slot 12345" in p["message"] for p in problems)


def test_verify_finds_missing_consume_queue_entry_and_checkpoint_ahead(
    mq: MqRunner, store_copy: Path
) -> None:
    cq = store_copy / "consumequeue" / "FixtureTopic" / "3" / "00000000000000000000"
    data = bytearray(cq.read_bytes())
    data[26 * 20 : 27 * 20] = bytes(20)  # drop the last entry (27 entries: 0..26)
    cq.write_bytes(data)
    cp = store_copy / "checkpoint"
    raw = bytearray(cp.read_bytes())
    struct.pack_into(">q", raw, 0, 2**62)
    cp.write_bytes(raw)
    done = mq("store", "verify", str(store_copy))
    assert done.returncode == 1
    assert "has no consume queue entry" in done.stderr
    assert "physicMsgTimestamp" in done.stderr


def test_verify_finds_bad_index_entry(mq: MqRunner, store_copy: Path) -> None:
    idx = store_copy / "index" / "20261129184202721"
    raw = bytearray(idx.read_bytes())
    entry5 = 40 + 100 * 4 + 5 * 20
    struct.pack_into(">q", raw, entry5 + 4, 197)  # point entry 5 at another record
    idx.write_bytes(raw)
    done = mq("store", "verify", str(store_copy))
    assert done.returncode == 1 and "with no key of that hash" in done.stderr


def test_corrupt_commitlog_gives_one_line_error(mq: MqRunner, store_copy: Path) -> None:
    log = store_copy / "commitlog" / "00000000000000000000"
    with log.open("r+b") as f:
        f.seek(197 + 4)  # the second record's magic
        f.write(b"\x00\x00\x00\x01")
    done = mq("store", "dump", "commitlog", str(log))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"{log} at offset 197" in done.stderr and "magic" in done.stderr
    assert "FixtureTopic:0#0" in done.stdout  # what came before is still printed
    debug = mq("--debug", "store", "dump", "commitlog", str(log))
    assert "Traceback" in debug.stderr


def test_garbage_files_never_traceback(mq: MqRunner, tmp_path: Path) -> None:
    root = tmp_path / "junk"
    (root / "commitlog").mkdir(parents=True)
    (root / "commitlog" / "00000000000000000000").write_bytes(b"\xde\xad" * 5000)
    (root / "index").mkdir()
    (root / "index" / "20260101000000000").write_bytes(b"\x01" * 100)
    (root / "config").mkdir()
    (root / "config" / "topics.json").write_text("{not json")
    for args in (
        ("store", "inspect", str(root)),
        ("store", "verify", str(root)),
        ("store", "dump", "commitlog", str(root / "commitlog" / "00000000000000000000")),
        ("store", "dump", "index", str(root / "index" / "20260101000000000")),
        ("store", "dump", "config", "topics", "-s", str(root)),
    ):
        done = mq(*args)
        assert done.returncode == 1, args
        assert "Traceback" not in done.stderr, (args, done.stderr)


def test_not_a_store(mq: MqRunner, tmp_path: Path) -> None:
    done = mq("store", "inspect", str(tmp_path))
    assert done.returncode == 1 and "does not look like a store root" in done.stderr
    done = mq("store", "inspect")  # ~/store does not exist for this HOME
    assert done.returncode == 1 and "not a directory" in done.stderr
