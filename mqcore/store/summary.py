"""What `mq store inspect` reports about a store, as plain data (rendered by the CLI)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from mqcore.common import fastjson
from mqcore.errors import CorruptRecordError
from mqcore.message.const import SCHEDULE_TOPIC
from mqcore.store.offline import OfflineStore
from mqcore.store.timer.offline import TimerFilesState, read_timer_files


@dataclass(slots=True)
class FileInfo:
    name: str
    size: int
    start_offset: int
    used: int


@dataclass(slots=True)
class QueueInfo:
    topic: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_store_timestamp: int = 0


@dataclass(slots=True)
class IndexInfo:
    name: str
    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int
    hash_slot_count: int
    index_count: int


@dataclass(slots=True)
class GroupOffset:
    group: str
    topic: str
    queue_id: int
    consumer_offset: int
    max_offset: int | None
    lag: int | None


@dataclass(slots=True)
class DelayLevel:
    level: int
    delay_ms: int
    delivered: int
    max_offset: int
    waiting: int
    head_due_timestamp: int | None
    delivery_rate: float | None = None
    """Always None: a rate needs a running broker (``mq broker status`` has it)."""


@dataclass(slots=True)
class StoreSummary:
    root: str
    commit_log_files: list[FileInfo] = field(default_factory=list)
    commit_log_min_offset: int = 0
    commit_log_max_offset: int = 0
    records: int = 0
    first_store_timestamp: int = 0
    last_store_timestamp: int = 0
    records_per_topic: dict[str, int] = field(default_factory=dict)
    queues: list[QueueInfo] = field(default_factory=list)
    index_files: list[IndexInfo] = field(default_factory=list)
    checkpoint: dict[str, int] | None = None
    abnormal_stop: bool = False
    lock_holder_pid: int | None = None
    group_offsets: list[GroupOffset] = field(default_factory=list)
    delay_levels: list[DelayLevel] = field(default_factory=list)
    topic_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    timer: TimerFilesState | None = None
    """RocketMQ 5's timer wheel (``store/timer/offline.py``), None without timer files."""
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def load_config(store: OfflineStore, name: str) -> Any:
    """A config JSON file as RocketMQ writes it, falling back to ``.bak`` like the broker.

    Returns None when neither exists; raises :class:`CorruptRecordError` when neither parses.
    """
    path = store.root / "config" / name
    errors = []
    for candidate in (path, path.with_name(name + ".bak")):
        try:
            raw = candidate.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            errors.append(f"{candidate.name}: {exc.strerror}")
            continue
        if not raw.strip():
            continue
        try:
            return fastjson.loads(raw)
        except fastjson.FastjsonError as exc:
            errors.append(f"{candidate.name}: {exc}")
    if errors:
        raise CorruptRecordError("; ".join(errors), path=str(path))
    return None


def summarize(store: OfflineStore) -> StoreSummary:
    s = StoreSummary(root=str(store.root))
    scan = store.scan()
    for mf in store.commit_log_files:
        used = max(0, min(scan.end_offset, mf.file_end_offset) - mf.file_from_offset)
        s.commit_log_files.append(FileInfo(mf.path.name, mf.file_size, mf.file_from_offset, used))
    s.commit_log_min_offset = store.min_offset if store.commit_log_files else 0
    s.commit_log_max_offset = scan.end_offset
    s.records = scan.records
    s.first_store_timestamp = scan.first_store_timestamp
    s.last_store_timestamp = scan.last_store_timestamp
    s.records_per_topic = dict(sorted(scan.per_topic.items()))
    if scan.corruption is not None:
        s.problems.append(f"commit log: {scan.corruption} (run `mq store verify`)")

    max_offsets: dict[tuple[str, int], int] = {}
    for topic, ids in store.queue_ids().items():
        for queue_id in ids:
            try:
                cq = store.consume_queue(topic, queue_id)
            except CorruptRecordError as exc:
                s.problems.append(f"consume queue {topic}:{queue_id}: {exc}")
                continue
            info = QueueInfo(topic, queue_id, cq.min_offset, cq.max_offset)
            last = cq.entry(cq.max_offset - 1) if cq.max_offset > cq.min_offset else None
            if last is not None:
                try:
                    rec = store.check_at(last[0])
                    info.last_store_timestamp = rec.store_timestamp if rec else 0
                except CorruptRecordError:
                    pass
            s.queues.append(info)
            max_offsets[(topic, queue_id)] = cq.max_offset

    try:
        for f in store.index_files():
            s.index_files.append(
                IndexInfo(
                    f.name,
                    f.begin_timestamp,
                    f.end_timestamp,
                    f.begin_phy_offset,
                    f.end_phy_offset,
                    f.hash_slot_count,
                    f.index_count - 1,
                )
            )
    except CorruptRecordError as exc:
        s.problems.append(f"index: {exc}")

    try:
        cp = store.checkpoint()
        s.checkpoint = cp.as_dict() if cp else None
    except CorruptRecordError as exc:
        s.problems.append(f"checkpoint: {exc}")
    s.abnormal_stop = store.abort_exists
    s.lock_holder_pid = store.lock_holder()

    _group_offsets(store, s, max_offsets)
    _delay_levels(store, s, max_offsets)
    try:
        s.timer = read_timer_files(store.root)
    except OSError as exc:
        s.problems.append(f"timer files: {exc}")
    try:
        topics = load_config(store, "topics.json") or {}
        s.topic_configs = dict(sorted(topics.get("topicConfigTable", {}).items()))
    except CorruptRecordError as exc:
        s.problems.append(f"config: {exc}")
    return s


def _group_offsets(
    store: OfflineStore, s: StoreSummary, max_offsets: dict[tuple[str, int], int]
) -> None:
    try:
        doc = load_config(store, "consumerOffset.json") or {}
    except CorruptRecordError as exc:
        s.problems.append(f"config: {exc}")
        return
    for key, table in sorted(doc.get("offsetTable", {}).items()):
        topic, _, group = str(key).partition("@")
        for queue_id, offset in sorted((int(q), int(o)) for q, o in table.items()):
            max_offset = max_offsets.get((topic, queue_id))
            lag = max(0, max_offset - offset) if max_offset is not None else None
            s.group_offsets.append(GroupOffset(group, topic, queue_id, offset, max_offset, lag))


def _delay_levels(
    store: OfflineStore, s: StoreSummary, max_offsets: dict[tuple[str, int], int]
) -> None:
    try:
        doc = load_config(store, "delayOffset.json") or {}
    except CorruptRecordError as exc:
        s.problems.append(f"config: {exc}")
        return
    delivered = {int(k): int(v) for k, v in doc.get("offsetTable", {}).items()}
    for level, delay in sorted(store.delay_table.items()):
        max_offset = max_offsets.get((SCHEDULE_TOPIC, level - 1), 0)
        done = delivered.get(level, 0)
        if max_offset == 0 and level not in delivered:
            continue
        head = None
        if done < max_offset:
            try:
                entry = store.consume_queue(SCHEDULE_TOPIC, level - 1).entry(done)
                head = entry[2] if entry else None
            except CorruptRecordError:
                head = None
        s.delay_levels.append(
            DelayLevel(level, delay, done, max_offset, max(0, max_offset - done), head)
        )
