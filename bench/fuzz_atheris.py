"""Coverage-guided fuzzing of every decoder that reads untrusted bytes (atheris/libFuzzer).

The bounded hypothesis runs in ``tests/fuzz`` are the suite's; this is the long run
outside it. Each target feeds the fuzzer's bytes to one decoder and accepts only that
decoder's documented error; any other exception is a finding: it is printed once per
(type, place), its input is saved under ``--crash-dir``, and fuzzing goes on. A hang
(``-timeout``) or memory blow-up (``-rss_limit_mb``) stops the run, as libFuzzer does.

    pip install atheris            # a wheel for CPython 3.11 on x86-64 Linux
    python bench/fuzz_atheris.py --target frames --seconds 150
    python bench/fuzz_atheris.py --list

Seeds (valid frames, bodies, records, files, expressions) are written into a fresh
corpus directory, so mutation starts from input that gets past the first length check.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys
import tempfile
import time
import traceback
import zlib
from collections.abc import Callable
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["mqcore"]):
    from mqcore.broker.config import BrokerConfig
    from mqcore.common.metadata import JsonModel
    from mqcore.common.properties import parse_properties
    from mqcore.errors import (
        ConfigError,
        CorruptRecordError,
        FilterSyntaxError,
        RemoteProtocolError,
        StoreError,
    )
    from mqcore.filter import compile_sql
    from mqcore.message.const import SysFlag
    from mqcore.message.properties import decode_properties
    from mqcore.message.record import (
        decode_batch_body,
        decode_record,
        decode_records,
        encode_batch_body,
        encode_record,
    )
    from mqcore.namesrv.config import NamesrvConfig
    from mqcore.protocol import (
        NEED_DATA,
        FrameDecoder,
        RemotingCommand,
        SerializeType,
        bodies,
        encode,
        headers,
    )
    from mqcore.protocol.ha import HAProtocolError, ReportReader, TransferReader
    from mqcore.store.consume_queue import ENTRY, ConsumeQueue
    from mqcore.store.index_file import IndexFile
    from mqcore.store.store_config import MessageStoreConfig

Target = Callable[[bytes], None]

BODY_CLASSES: list[type[JsonModel]] = sorted(
    (
        cls
        for name in bodies.__all__
        if isinstance(cls := getattr(bodies, name), type)
        and issubclass(cls, JsonModel)
        and cls is not bodies.RemotingBody
    ),
    key=lambda cls: (cls is not bodies.HeartbeatData, cls.__name__),
)
HEADER_CLASSES = sorted(
    (
        cls
        for name in headers.__all__
        if isinstance(cls := getattr(headers, name), type)
        and issubclass(cls, headers.CommandHeader)
        and cls is not headers.CommandHeader
    ),
    key=lambda cls: cls.__name__,
)


def frames(data: bytes) -> None:
    """The first byte cuts the input into two chunks: frames that span reads."""
    decoder = FrameDecoder(64 * 1024)
    cut = data[0] if data else 0
    try:
        for chunk in (data[1 : 1 + cut], data[1 + cut :]):
            if chunk:  # b"" is end of stream
                decoder.receive_data(chunk)
            while decoder.next_command() is not NEED_DATA:
                pass
        decoder.receive_data(b"")
        while decoder.next_command() is not NEED_DATA:
            pass
    except RemoteProtocolError:
        pass


def typed_headers(data: bytes) -> None:
    """A binary header's ext fields read as every typed header (HeaderError only)."""
    decoder = FrameDecoder()
    decoder.receive_data(data)
    try:
        cmd = decoder.next_command()
    except RemoteProtocolError:
        return
    if cmd is NEED_DATA:
        return
    for cls in HEADER_CLASSES:
        try:
            cls.from_ext_fields(cmd.ext_fields)
        except headers.HeaderError:
            pass


def json_bodies(data: bytes) -> None:
    """The first byte picks the body class (the heartbeat is 0)."""
    if not data:
        return
    cls = BODY_CLASSES[data[0] % len(BODY_CLASSES)]
    error = bodies.BodyError if issubclass(cls, bodies.RemotingBody) else ConfigError
    try:
        body = cls.decode(data[1:])
    except error:
        return
    cls.decode(body.encode())  # what decodes must encode and decode again


def records(data: bytes) -> None:
    for strict in (True, False):
        try:
            decode_record(data, strict=strict, check_crc=strict)
        except CorruptRecordError:
            pass
    decode_records(data)
    for part in (data, data[len(data) // 2 :]):
        try:
            decode_batch_body(part)
        except CorruptRecordError:
            pass
        try:
            decode_properties(part)
        except CorruptRecordError:
            pass


_TMP = Path(tempfile.mkdtemp(prefix="mq-fuzz-"))


def store_files(data: bytes) -> None:
    """First byte even: a consume queue file of 200 bytes; odd: an index file."""
    if not data:
        return
    if data[0] % 2 == 0:
        qdir = _TMP / "cq" / "T" / "0"
        qdir.mkdir(parents=True, exist_ok=True)
        for old in qdir.iterdir():
            old.unlink()
        (qdir / "00000000000000000000").write_bytes(data[1:201])
        if len(data) > 201:
            (qdir / "00000000000000000200").write_bytes(data[201:401])
        cq = ConsumeQueue("T", 0, _TMP / "cq", 200, readonly=True)
        try:
            cq.load()
            cq.recover()
            cq.correct_min_offset(data[0])
            cq.entry(data[0] % 12)
            cq.offset_by_time(data[0], lambda phy, size: phy)
            for _ in cq.iter_entries(limit=40):
                pass
        except StoreError:
            pass
        finally:
            cq.close()
        return
    path = _TMP / "20260101000000000"
    path.write_bytes(data[1:])
    try:
        geometry = (8, 16) if data[0] % 4 == 1 else (None, None)
        f = IndexFile.open(path, *geometry)
    except StoreError:
        return
    try:
        for entry in f.iter_entries():
            f.entry(entry.index_no)
        f.query("T#a", 32, 0, 2**62)
    finally:
        f.close()


def sql92(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    expression, _, props = text.partition("\n\n")
    try:
        selector = compile_sql(expression)
    except FilterSyntaxError:
        return
    pairs = dict(line.partition("=")[::2] for line in props.splitlines())
    result = selector.evaluate(pairs)
    assert result in (True, False)


def ha(data: bytes) -> None:
    """The same bytes as slave reports and as master transfers, cut where byte 0 says."""
    cut = data[0] if data else 0
    report, transfer = ReportReader(), TransferReader()
    for chunk in (data[1 : 1 + cut], data[1 + cut :]):
        try:
            report.feed(chunk)
        except HAProtocolError:
            report = ReportReader()
        try:
            transfer.feed(chunk)
        except HAProtocolError:
            transfer = TransferReader()


def broker_conf(data: bytes) -> None:
    props = parse_properties(data.decode("utf-8", "replace"))
    for cls in (BrokerConfig, MessageStoreConfig, NamesrvConfig):
        try:
            cls.from_properties(props)
        except ConfigError:
            pass
    path = _TMP / "broker.conf"
    path.write_bytes(data)
    try:
        MessageStoreConfig.from_properties(path)
    except ConfigError:
        pass


TARGETS: dict[str, Target] = {
    "frames": frames,
    "headers": typed_headers,
    "bodies": json_bodies,
    "records": records,
    "store_files": store_files,
    "sql92": sql92,
    "ha": ha,
    "broker_conf": broker_conf,
}


def seeds(name: str) -> list[bytes]:
    """Valid input for each target: mutation starts past the first length check."""
    if name in ("frames", "headers"):
        ext = {"topic": "T", "queueId": "3", "consumerGroup": "g", "a": "pg", "b": "T"}
        return [
            encode(RemotingCommand.request(34, ext, b"{}", serialize_type=kind, opaque=1))
            for kind in SerializeType
        ] + [encode(RemotingCommand.request(310, {"d": "4", "e": "1"}, b"body", opaque=2))]
    if name == "bodies":
        out = []
        for i, cls in enumerate(BODY_CLASSES):
            try:
                sample = cls.from_json({})
            except Exception:
                continue
            out.append(bytes([i]) + sample.encode())
        hb = {
            "clientID": "c",
            "producerDataSet": [{"groupName": "p"}],
            "consumerDataSet": [
                {"groupName": "g", "subscriptionDataSet": [{"topic": "T", "codeSet": [1]}]}
            ],
        }
        out.append(b"\0" + json.dumps(hb).encode())
        out.append(bytes([BODY_CLASSES.index(bodies.BrokerData)]) + b'{"brokerAddrs":{0:"a"}}')
        return out
    if name == "records":
        rec = encode_record(topic="T", body=b"hello", properties={"TAGS": "a", "KEYS": "k"})
        zipped = encode_record(
            topic="T", body=zlib.compress(b"x" * 100), sys_flag=SysFlag.COMPRESSED_FLAG
        )
        v6 = encode_record(topic="T", body=b"b", born_host=("::1", 1), store_host=("::1", 2))
        batch = encode_batch_body([(0, b"a", {"K": "v"}), (1, b"bb", {})])
        return [bytes(rec), bytes(rec + zipped), bytes(v6), batch]
    if name == "store_files":
        cq = b"".join(ENTRY.pack(i * 100, 100, i) for i in range(10))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "20260101000000000"
            f = IndexFile.create(path, 8, 16)
            for i in range(5):
                f.put_key("T#a" if i % 2 else "T#b", i * 100, 1_700_000_000_000 + i)
            f.close()
            index = path.read_bytes()
        return [b"\0" + cq, b"\0" + cq + cq, b"\1" + index, b"\3" + index]
    if name == "sql92":
        return [
            b"a > 5 AND b = 'x'\n\na=7\nb=x",
            b"TAGS IN ('a', 'b') OR (c BETWEEN 1 AND 3)\n\nTAGS=a",
            b"NOT (a IS NULL) AND d <> 1.5\n\na=1\nd=2.5",
        ]
    if name == "ha":
        head = struct.pack(">qi", 0, 5) + b"hello"
        return [b"\x06" + struct.pack(">q", 42) + head, b"\x10" + head + struct.pack(">qi", 5, 0)]
    if name == "broker_conf":
        return [
            b"brokerClusterName=c\nbrokerName=b\nbrokerId=0\nlistenPort=10911\n"
            b"deleteWhen=04\nfileReservedTime=48\nbrokerRole=ASYNC_MASTER\n"
            b"flushDiskType=ASYNC_FLUSH\nmessageDelayLevel=1s 5s 2m\n"
            b"mapedFileSizeCommitLog=1073741824\nhaListenPort=10912\n"
            b"diskSpaceWarningLevelRatio=0.9\nbrokerIP2=\n",
        ]
    return []


class Findings:
    """Unexpected exceptions, once per (type, innermost mqcore frame), inputs saved."""

    def __init__(self, crash_dir: Path) -> None:
        self.crash_dir = crash_dir
        self.seen: dict[str, int] = {}
        self.executions = 0

    def wrap(self, target: Target, deadline: float) -> Callable[[bytes], None]:
        def run(data: bytes) -> None:
            self.executions += 1
            if self.executions % 1024 == 0 and time.monotonic() > deadline:
                self.report()
                sys.stdout.flush()
                os._exit(0)  # libFuzzer's own exit skips Python's; report first
            try:
                target(data)
            except Exception as exc:
                self.record(exc, data)

        return run

    def record(self, exc: Exception, data: bytes) -> None:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "mqcore" in f.filename]
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "harness"
        key = f"{type(exc).__name__} at {where}"
        self.seen[key] = self.seen.get(key, 0) + 1
        if self.seen[key] == 1:
            self.crash_dir.mkdir(parents=True, exist_ok=True)
            path = self.crash_dir / f"crash-{hashlib.sha1(data).hexdigest()[:16]}"
            path.write_bytes(data)
            print(f"FINDING {key}: {exc!r} (input {path})", flush=True)

    def report(self) -> None:
        elapsed = time.monotonic() - self.started
        print(
            f"RESULT target={self.name} executions={self.executions} "
            f"seconds={elapsed:.0f} exec_per_s={self.executions / elapsed:.0f} "
            f"findings={len(self.seen)}"
        )
        for key, count in self.seen.items():
            print(f"  {count:>6} x {key}")

    name = ""
    started = 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=sorted(TARGETS))
    parser.add_argument("--seconds", type=float, default=150)
    parser.add_argument("--crash-dir", type=Path, default=Path("fuzz-findings"))
    parser.add_argument("--list", action="store_true", help="print the target names")
    args, libfuzzer_args = parser.parse_known_args()
    if args.list or not args.target:
        print("\n".join(sorted(TARGETS)))
        return
    corpus = Path(tempfile.mkdtemp(prefix=f"mq-fuzz-{args.target}-"))
    for i, seed in enumerate(seeds(args.target)):
        (corpus / f"seed-{i}").write_bytes(seed)
    findings = Findings(args.crash_dir / args.target)
    findings.name = args.target
    findings.started = time.monotonic()
    run = findings.wrap(TARGETS[args.target], findings.started + args.seconds)
    argv = [
        sys.argv[0],
        "-timeout=10",
        "-rss_limit_mb=2048",
        "-max_len=4096",
        f"-max_total_time={int(args.seconds) + 30}",
        *libfuzzer_args,
        str(corpus),
    ]
    atheris.Setup(argv, run)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
