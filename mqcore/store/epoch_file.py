"""`EpochFileCache`: which master epoch wrote which part of the commit log, kept as
RocketMQ 5 keeps it in controller mode (``<storePathRootDir>/epochFileCheckpoint``).

Each time a broker becomes master it starts a new epoch at its commit log end; the entries
``(epoch, startOffset)`` say where each epoch's writes begin, and each ends where the next
begins (the last one at the log's end). When an old master returns as a slave, the last
epoch both logs agree on (same epoch, same start) gives the offset up to which they hold
the same bytes (:meth:`EpochFileCache.find_consistent_point`); the slave truncates there
and copies on from the new master, so no record of a dead epoch survives on one replica
and not the other.

The file, byte for byte as RocketMQ 5's ``CheckpointFile`` writes it (UTF-8 text)::

    <number of entries>
    <CRC32 of the entry lines, as Java's int & 0x7FFFFFFF; 0: not checked>
    <epoch>-<startOffset>
    ...

A rewrite keeps the previous file as ``.bak`` and is atomic; a missing, empty or damaged
file is read from ``.bak``.
"""

from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass
from pathlib import Path

from mqcore.common.files import write_atomically
from mqcore.errors import StoreError

__all__ = ["EPOCH_FILE_NAME", "EpochEntry", "EpochFileCache", "decode_epoch_file"]

EPOCH_FILE_NAME = "epochFileCheckpoint"
"""RocketMQ 5's default ``storePathEpochFile``, under the store root."""

_NO_END = (1 << 63) - 1
"""Java's Long.MAX_VALUE: the last epoch's end until the caller says where the log ends."""
_NOT_CHECKED = 0


@dataclass(slots=True)
class EpochEntry:
    epoch: int
    start_offset: int
    end_offset: int = _NO_END
    """Where the next epoch starts (the last entry's: the log's end, or "open")."""


def decode_epoch_file(text: str) -> list[EpochEntry]:
    """The entries of a checkpoint file's text; StoreError when its count or CRC does not
    match what it holds (a torn or edited file)."""
    lines = text.splitlines()
    if len(lines) < 2:
        raise StoreError("epoch file: missing its count and checksum lines")
    try:
        expected, crc = int(lines[0]), int(lines[1])
    except ValueError:
        raise StoreError("epoch file: count or checksum is not a number") from None
    body = "".join(f"{line}\n" for line in lines[2:])
    entries: list[EpochEntry] = []
    for line in lines[2:]:
        epoch, sep, start = line.partition("-")
        if not sep:
            continue  # as RocketMQ: a line that is no entry is skipped (and then counted)
        try:
            entries.append(EpochEntry(int(epoch), int(start)))
        except ValueError:
            raise StoreError(f"epoch file: bad entry {line!r}") from None
    if len(entries) != expected:
        raise StoreError(f"epoch file: {expected} entries expected, {len(entries)} found")
    if crc != _NOT_CHECKED and crc != _crc(body):
        raise StoreError("epoch file: checksum does not match its entries")
    return entries


def _crc(text: str) -> int:
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def _encode(entries: list[EpochEntry]) -> bytes:
    body = "".join(f"{e.epoch}-{e.start_offset}\n" for e in entries)
    return f"{len(entries)}\n{_crc(body)}\n{body}".encode()


class EpochFileCache:
    """The epochs of one store, in memory and (with a ``path``) on disk after each
    change. Not thread-safe: the broker changes it on its event loop."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._entries: list[EpochEntry] = []

    # -- the file ---------------------------------------------------------------------------
    @property
    def backup_path(self) -> Path | None:
        return self.path.with_name(self.path.name + ".bak") if self.path is not None else None

    def load(self) -> None:
        """Read the file (or its ``.bak`` when the file is missing, empty or damaged)."""
        self._entries = []
        if self.path is None:
            return
        entries = self._read(self.path)
        if not entries and self.backup_path is not None:
            entries = self._read(self.backup_path)
        self._set(entries)

    @staticmethod
    def _read(path: Path) -> list[EpochEntry]:
        try:
            return decode_epoch_file(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, StoreError):
            return []

    def _flush(self) -> None:
        if self.path is None:
            return
        backup = self.backup_path
        if not self._entries:
            # No epoch left: remove both files. RocketMQ writes nothing for an empty list,
            # which would bring the forgotten epochs back at the next start.
            self.path.unlink(missing_ok=True)
            if backup is not None:
                backup.unlink(missing_ok=True)
            return
        if backup is not None and self.path.exists():
            write_atomically(backup, self.path.read_bytes())
        write_atomically(self.path, _encode(self._entries))

    def _set(self, entries: list[EpochEntry]) -> None:
        entries = sorted(entries, key=lambda e: e.epoch)
        for before, after in itertools.pairwise(entries):
            before.end_offset = after.start_offset
        if entries:
            entries[-1].end_offset = _NO_END
        self._entries = entries

    # -- reading ----------------------------------------------------------------------------
    @property
    def entries(self) -> list[EpochEntry]:
        """Copies, oldest epoch first."""
        return [EpochEntry(e.epoch, e.start_offset, e.end_offset) for e in self._entries]

    @property
    def last_epoch(self) -> int:
        """The newest epoch, -1 when there is none."""
        return self._entries[-1].epoch if self._entries else -1

    def last_entry(self) -> EpochEntry | None:
        return self.entries[-1] if self._entries else None

    def entry(self, epoch: int) -> EpochEntry | None:
        for e in self._entries:
            if e.epoch == epoch:
                return EpochEntry(e.epoch, e.start_offset, e.end_offset)
        return None

    def entry_at(self, offset: int) -> EpochEntry | None:
        """The epoch that wrote commit log ``offset``."""
        for e in self._entries:
            if e.start_offset <= offset < e.end_offset:
                return EpochEntry(e.epoch, e.start_offset, e.end_offset)
        return None

    def find_consistent_point(self, other: EpochFileCache) -> int:
        """The offset up to which this log and ``other``'s hold the same records: the end
        of the newest epoch both have with the same start (the smaller of the two ends);
        -1 when they share none."""
        theirs = {e.epoch: e for e in other._entries}
        for mine in reversed(self._entries):
            match = theirs.get(mine.epoch)
            if match is not None and match.start_offset == mine.start_offset:
                return min(mine.end_offset, match.end_offset)
        return -1

    # -- changing ---------------------------------------------------------------------------
    def append(self, epoch: int, start_offset: int) -> bool:
        """A new epoch starting at ``start_offset``; False (nothing changed) unless both
        are beyond the last entry's."""
        last = self._entries[-1] if self._entries else None
        if last is not None and (last.epoch >= epoch or last.start_offset >= start_offset):
            return False
        if last is not None:
            last.end_offset = start_offset
        self._entries.append(EpochEntry(epoch, start_offset))
        self._flush()
        return True

    def set_last_end(self, end_offset: int) -> None:
        """The log ends at ``end_offset``: the last epoch ends there (in memory only)."""
        if self._entries and self._entries[-1].start_offset <= end_offset:
            self._entries[-1].end_offset = end_offset

    def truncate_from_offset(self, offset: int) -> None:
        """Forget the epochs that start at or after ``offset`` (the log was cut there)."""
        self._truncate([e for e in self._entries if e.start_offset < offset])

    def truncate_from_epoch(self, epoch: int) -> None:
        """Forget ``epoch`` and every later one."""
        self._truncate([e for e in self._entries if e.epoch < epoch])

    def _truncate(self, kept: list[EpochEntry]) -> None:
        self._entries = kept
        if kept:
            kept[-1].end_offset = _NO_END
        self._flush()

    def replace(self, entries: list[EpochEntry]) -> None:
        """Take ``entries`` (a slave copies its master's) and write them."""
        self._set([EpochEntry(e.epoch, e.start_offset) for e in entries])
        self._flush()
