"""Offline consistency check of a store (`mq store verify`).

The commit log is the truth; everything derived from it must agree:

1. every record parses, its BODYCRC matches and PHYSICALOFFSET is where it lies;
2. every dispatchable record (NOT/COMMIT) has its consume queue entry at its QUEUEOFFSET;
3. every consume queue entry points at a record of its topic and queue with the same
   queue offset, size and tag slot (tag hash, or deliver time for delayed messages);
4. every index entry points at a record carrying a key with that hash;
5. the checkpoint is not ahead of the data;
6. the config files parse.

Records and entries that point below the commit log's first file were cleaned up and are
skipped, as the broker does.

A store a broker is using (it holds the store's lock) keeps changing while it is read:
the last records are half written, their queue and index entries not dispatched yet, the
checkpoint moves. There :func:`verify_scope` limits the check to what is stable, the
records up to the checkpoint's flush times, and everything pointing past them is left
alone rather than reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mqcore.common import fastjson
from mqcore.common.javahash import index_key_hash
from mqcore.errors import CorruptRecordError
from mqcore.message.const import SysFlag
from mqcore.message.record import DispatchRequest
from mqcore.store.consume_queue import is_filler
from mqcore.store.index_file import IndexFile
from mqcore.store.offline import OfflineStore

CONFIG_FILES = (
    "topics.json",
    "consumerOffset.json",
    "delayOffset.json",
    "subscriptionGroup.json",
    "consumerFilter.json",
)


@dataclass(frozen=True, slots=True)
class Problem:
    """One inconsistency, located precisely enough to look at with `mq store dump`."""

    kind: str
    path: str
    offset: int | None
    message: str

    def __str__(self) -> str:
        where = self.path + (f" at offset {self.offset}" if self.offset is not None else "")
        return f"{where}: {self.message}"


Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``; totals are bytes or entries of the stage."""


def _dispatchable(req: DispatchRequest) -> bool:
    return req.sys_flag & SysFlag.TRANSACTION_MASK in (
        SysFlag.TRANSACTION_NOT_TYPE,
        SysFlag.TRANSACTION_COMMIT_TYPE,
    )


def _corrupt(kind: str, exc: CorruptRecordError) -> Problem:
    return Problem(kind, exc.path or "?", exc.offset, exc.detail)


@dataclass(frozen=True, slots=True)
class VerifyScope:
    """What a verify covers: the whole store, or on a store in use the stable part."""

    in_use_by: int | None
    """Pid of the process holding the store's lock (None: nobody, the store is at rest)."""
    end: int | None
    """Commit log offset the check stops at (None: the end of the data)."""


def verify_scope(store: OfflineStore) -> VerifyScope:
    """The whole store at rest; in use, the records stored before both the
    checkpoint's commit log and consume queue flush times (so they lie whole on disk and
    their queue entries exist)."""
    holder = store.lock_holder()
    if holder is None:
        return VerifyScope(None, None)
    try:
        cp = store.checkpoint()
    except CorruptRecordError:
        cp = None
    limit = min(cp.physic_msg_timestamp, cp.logics_msg_timestamp) if cp is not None else 0
    end = store.min_offset
    for offset, res in store.walk_commit_log():
        if isinstance(res, CorruptRecordError) or res.store_timestamp >= limit:
            break
        end = offset + res.size
    return VerifyScope(holder, end)


_PROGRESS_STEP = 4 << 20
"""Bytes of commit log between two progress reports."""


def verify_store(
    store: OfflineStore, progress: Progress | None = None, scope: VerifyScope | None = None
) -> Iterator[Problem]:
    """Yield every problem found; nothing means the store is consistent.

    ``scope`` (see :func:`verify_scope`) limits the check on a store in use."""
    end = scope.end if scope is not None else None
    yield from _verify_commit_log(store, progress, end)
    yield from _verify_consume_queues(store, progress, end)
    yield from _verify_index(store, progress, end)
    if end is None:  # a broker moves its checkpoint while it runs
        yield from _verify_checkpoint(store)
    yield from _verify_config(store)


def _verify_commit_log(
    store: OfflineStore, progress: Progress | None, end: int | None
) -> Iterator[Problem]:
    min_offset = store.min_offset
    total = (end if end is not None else store.scan().end_offset) - min_offset
    reported = min_offset
    for offset, res in store.walk_commit_log(check_crc=True):
        if end is not None and offset >= end:
            break
        mf = store.commitlog.queue.find_by_offset(offset)
        path = str(mf.path) if mf else str(store.commit_log_path)
        if isinstance(res, CorruptRecordError):
            yield _corrupt("commitlog", res)
            continue
        if progress and offset - reported >= _PROGRESS_STEP:
            reported = offset
            progress("commitlog", offset - min_offset, total)
        if res.commit_log_offset != offset:
            yield Problem(
                "commitlog",
                path,
                offset,
                f"PHYSICALOFFSET field says {res.commit_log_offset}, record lies at {offset}",
            )
        if not _dispatchable(res):
            continue
        try:
            cq = store.consume_queue(res.topic, res.queue_id)
        except CorruptRecordError as exc:
            yield _corrupt("consumequeue", exc)
            continue
        if res.queue_offset < cq.min_offset:
            continue
        entry = cq.entry(res.queue_offset)
        if entry is None:
            yield Problem(
                "commitlog",
                path,
                offset,
                f"record of {res.topic}:{res.queue_id} at queue offset {res.queue_offset} "
                f"has no consume queue entry (queue ends at {cq.max_offset})",
            )
        elif entry[0] != offset:
            yield Problem(
                "commitlog",
                path,
                offset,
                f"consume queue {res.topic}:{res.queue_id} entry {res.queue_offset} points at "
                f"{entry[0]}, not at this record",
            )
    if progress:
        progress("commitlog", total, total)


def _verify_consume_queues(
    store: OfflineStore, progress: Progress | None, horizon: int | None
) -> Iterator[Problem]:
    end = store.scan().end_offset if horizon is None else horizon
    min_offset = store.min_offset
    for topic, ids in store.queue_ids().items():
        for queue_id in ids:
            try:
                cq = store.consume_queue(topic, queue_id)
                entries = list(cq.iter_entries())
            except CorruptRecordError as exc:
                yield _corrupt("consumequeue", exc)
                continue
            if progress:
                progress(f"consumequeue {topic}:{queue_id}", 0, len(entries))
            for index, phy, size, tags in entries:
                if is_filler(phy, size) or phy < min_offset:
                    continue
                mf = cq.queue.find_by_offset(index * 20)
                path = str(mf.path) if mf else str(cq.path)
                at = index * 20 - (mf.file_from_offset if mf else 0)
                where = f"entry {index}"
                if phy + size > end:
                    if horizon is not None:
                        continue  # written after the stable part: not checked
                    yield Problem(
                        "consumequeue",
                        path,
                        at,
                        f"{where} points at {phy}+{size}, past the commit log end {end}",
                    )
                    continue
                try:
                    rec = store.check_at(phy)
                except CorruptRecordError as exc:
                    yield Problem("consumequeue", path, at, f"{where}: {exc}")
                    continue
                if rec is None:
                    yield Problem("consumequeue", path, at, f"{where}: no record at {phy}")
                    continue
                wrong = []
                if (rec.topic, rec.queue_id) != (topic, queue_id):
                    wrong.append(f"record belongs to {rec.topic}:{rec.queue_id}")
                if rec.queue_offset != index:
                    wrong.append(f"record's queue offset is {rec.queue_offset}")
                if rec.size != size:
                    wrong.append(f"size {size} but record is {rec.size} bytes")
                if rec.tags_code != tags:
                    wrong.append(f"tag slot {tags} but the record's is {rec.tags_code}")
                if wrong:
                    yield Problem("consumequeue", path, at, f"{where}: " + "; ".join(wrong))


def _verify_index(
    store: OfflineStore, progress: Progress | None, horizon: int | None
) -> Iterator[Problem]:
    end = store.scan().end_offset if horizon is None else horizon
    min_offset = store.min_offset
    if horizon is not None:
        try:
            files = _settled_index_files(store)
        except CorruptRecordError as exc:
            yield _corrupt("index", exc)
            return
        try:
            yield from _verify_index_files(store, files, progress, end, min_offset, horizon)
        finally:
            for f in files:
                f.close()
        return
    try:
        files = store.index_files()
    except CorruptRecordError as exc:
        yield _corrupt("index", exc)
        return
    yield from _verify_index_files(store, files, progress, end, min_offset, horizon)


def _settled_index_files(store: OfflineStore) -> list[IndexFile]:
    """The index files of a store in use, without the newest while the broker is still
    creating it (it does not parse yet)."""
    paths = (
        sorted(p for p in store.index_path.iterdir() if p.is_file())
        if store.index_path.is_dir()
        else []
    )
    files: list[IndexFile] = []
    for i, path in enumerate(paths):
        try:
            files.append(IndexFile.open(path, readonly=True))
        except CorruptRecordError:
            if i != len(paths) - 1:
                for f in files:
                    f.close()
                raise
    return files


def _verify_index_files(
    store: OfflineStore,
    files: list[IndexFile],
    progress: Progress | None,
    end: int,
    min_offset: int,
    horizon: int | None,
) -> Iterator[Problem]:
    for f in files:
        if progress:
            progress(f"index {f.name}", 0, f.index_count)
        base = f.max_hash_slot_num * 4 + 40
        for entry in f.iter_entries():
            phy = entry.phy_offset
            at = base + entry.index_no * 20
            if phy < min_offset:
                continue
            if phy >= end:
                if horizon is not None:
                    continue  # written after the stable part: not checked
                yield Problem(
                    "index",
                    str(f.path),
                    at,
                    f"entry {entry.index_no} points at {phy}, past the commit log end {end}",
                )
                continue
            try:
                rec = store.check_at(phy)
            except CorruptRecordError as exc:
                yield Problem("index", str(f.path), at, f"entry {entry.index_no}: {exc}")
                continue
            if rec is None:
                yield Problem(
                    "index", str(f.path), at, f"entry {entry.index_no}: no record at {phy}"
                )
                continue
            keys = [k for k in (rec.keys or "").split(" ") if k]
            if rec.uniq_key:
                keys.append(rec.uniq_key)
            hashes = {index_key_hash(f"{rec.topic}#{k}") for k in keys}
            if entry.key_hash not in hashes:
                yield Problem(
                    "index",
                    str(f.path),
                    at,
                    f"entry {entry.index_no} (hash {entry.key_hash}) points at {phy}, a record "
                    f"of {rec.topic} with no key of that hash",
                )


def _verify_checkpoint(store: OfflineStore) -> Iterator[Problem]:
    try:
        cp = store.checkpoint()
    except CorruptRecordError as exc:
        yield _corrupt("checkpoint", exc)
        return
    if cp is None:
        return
    scan = store.scan()
    last = scan.last_store_timestamp
    path = str(cp.path)
    if scan.records and cp.physic_msg_timestamp > last:
        yield Problem(
            "checkpoint",
            path,
            0,
            f"physicMsgTimestamp {cp.physic_msg_timestamp} is "
            f"ahead of the last record's store time {last}",
        )
    if scan.records and cp.logics_msg_timestamp > last:
        yield Problem(
            "checkpoint",
            path,
            8,
            f"logicsMsgTimestamp {cp.logics_msg_timestamp} is "
            f"ahead of the last record's store time {last}",
        )
    # mq writes the time up to which records are indexed, which may pass the newest
    # index file's end when the last records carry no key: the records bound it.
    if scan.records and cp.index_msg_timestamp > last:
        yield Problem(
            "checkpoint",
            path,
            16,
            f"indexMsgTimestamp {cp.index_msg_timestamp} is "
            f"ahead of the last record's store time {last}",
        )


def _verify_config(store: OfflineStore) -> Iterator[Problem]:
    cfg = store.root / "config"
    for name in CONFIG_FILES:
        path = cfg / name
        if not path.exists():
            continue
        try:
            text = path.read_bytes()
            if text.strip():
                fastjson.loads(text)
        except (OSError, fastjson.FastjsonError) as exc:
            yield Problem("config", str(path), None, f"does not parse: {exc}")
