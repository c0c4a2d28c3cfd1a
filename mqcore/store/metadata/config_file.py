"""Safe load/persist of the broker's ``config/*.json`` files (RocketMQ ``ConfigManager``).

Files are UTF-8 text in fastjson's pretty dialect (spec §10.1), read with
:func:`mqcore.common.fastjson.loads` and written with :func:`dumps_pretty`, so a file we
write is byte-identical to what a 4.x broker writes for the same content.

Persisting is crash-safe: the new text goes to ``<file>.tmp`` and is fsynced; the previous
``<file>`` becomes ``<file>.bak`` (a hard link, else a copy); ``.tmp`` is renamed over
``<file>`` (atomic) and the directory fsynced. A crash at any point leaves a complete old or new
``<file>``, and a failed write never replaces it.

Every write goes to a new ``.tmp`` (a crash's leftover is removed first), never over the
blocks of an older file: a reader that opened ``<file>`` (a broker loading it, ``mq store``,
a backup's copy of a live store) reads that version whole however many writes happen while
it reads. Writing over the outgoing ``.bak`` instead saved half of the kernel's work per
write at 10,000 topics, but let a reader holding the file across two writes see it
rewritten under it (a torn ``<file>`` and a fall-back to an older ``.bak``); whole
versions come first.

Loading (what a corrupt or missing file does):

============================  ==================================================
``<file>``                    result
============================  ==================================================
parses                        loaded
missing or empty              ``.bak`` loaded (warning); both missing/empty: empty
                              defaults (a fresh broker)
corrupt (not the JSON shape)  ``.bak`` loaded (warning); ``.bak`` missing, empty or
                              corrupt too: :class:`ConfigError` naming both files —
                              never silently empty, since the next persist would
                              overwrite the only copy of the data
============================  ==================================================

After a fall-back to ``.bak`` the next persist leaves ``.bak`` alone instead of copying a
broken ``<file>`` over it. Read-only managers (offline tools) never write anything.

:meth:`ConfigFileManager.persist` may run on any thread (the broker writes from
:class:`~mqcore.store.metadata.persister.ConfigPersister`'s): writes of one file are
serialised by a write lock, and the state lock is held only while the table is copied
(:meth:`~ConfigFileManager.snapshot`), never while a large table is encoded or fsynced,
so the event loop that mutates the table is not held up by a write in progress.
"""

from __future__ import annotations

import logging
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from operator import attrgetter
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from mqcore.common.fastjson import (
    FastjsonError,
    Rendered,
    dumps_pretty,
    loads,
    pretty_member,
)
from mqcore.common.files import fsync_dir, write_synced
from mqcore.common.jsonfields import (
    get_bool,
    get_int,
    get_mapping,
    get_str,
    now_ms,
)
from mqcore.common.metadata import DataVersion
from mqcore.errors import ConfigError
from mqcore.store.metadata.tracked_table import TrackedTable

__all__ = [
    "ConfigFileManager",
    "DataVersion",
    "get_bool",
    "get_int",
    "get_mapping",
    "get_str",
    "now_ms",
]

log = logging.getLogger(__name__)


class ConfigFileManager(ABC):
    """Base of the five managers: one JSON file, the table it holds, safe persistence.

    Subclasses implement :meth:`to_json`, :meth:`_decode` (build the whole state from a
    parsed document, raising :class:`ConfigError` on a wrong shape, and only then assign
    it) and :meth:`_reset` (empty defaults). Mutations and :meth:`persist` share ``_lock``.
    """

    FILE_NAME: ClassVar[str]

    def __init__(
        self, store_path_root: Path, *, readonly: bool = False, path: Path | None = None
    ) -> None:
        self.path = (
            Path(path) if path is not None else Path(store_path_root) / "config" / self.FILE_NAME
        )
        self.readonly = readonly
        self._bak_path = self.path.with_name(self.path.name + ".bak")
        self._tmp_path = self.path.with_name(self.path.name + ".tmp")
        self._bak_tmp_path = self.path.with_name(self.path.name + ".bak.tmp")
        self._lock = threading.RLock()
        self._write_lock = threading.Lock()
        self._keep_bak = False
        self.writes = 0
        """Files written by :meth:`persist` so far (tests count them, no timing needed)."""
        self._reset()

    @property
    def bak_path(self) -> Path:
        return self._bak_path

    @property
    def tmp_path(self) -> Path:
        return self._tmp_path

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """The document, shaped exactly as RocketMQ writes it (bean fields alphabetical)."""

    @abstractmethod
    def _decode(self, obj: Any) -> None: ...

    @abstractmethod
    def _reset(self) -> None: ...

    def encode(self) -> str:
        """The file's text: fastjson's pretty form, no trailing newline."""
        with self._lock:
            return dumps_pretty(self.to_json())

    def snapshot(self) -> Callable[[], dict[str, Any]]:
        """Capture the state under the lock; the returned call builds the document later.

        The default builds the document at once (small tables); table managers override it
        with a shallow copy so that encoding a big table holds no lock."""
        with self._lock:
            doc = self.to_json()
        return lambda: doc

    def decode(self, text: str | bytes) -> None:
        """Replace the state with a parsed document; :class:`ConfigError` if it is not one."""
        try:
            obj = loads(text)
        except FastjsonError as exc:
            raise ConfigError(f"not JSON: {exc}") from None
        with self._lock:
            self._decode(obj)

    # -- load ---------------------------------------------------------------------------

    def load(self) -> None:
        """Load ``<file>``, falling back to ``.bak`` as the module docstring's table says."""
        with self._lock:
            self._keep_bak = False
            main_error: ConfigError | None = None
            main = self._read(self.path)
            if main:
                try:
                    self.decode(main)
                    return
                except ConfigError as exc:
                    main_error = exc
                    log.warning("%s is corrupt (%s); trying %s", self.path, exc, self.bak_path)
            bak = self._read(self.bak_path)
            if bak:
                try:
                    self.decode(bak)
                except ConfigError as exc:
                    why = f"corrupt ({main_error})" if main_error else "missing or empty"
                    raise ConfigError(
                        f"{self.path} is {why} and its backup {self.bak_path} is corrupt too: {exc}"
                    ) from None
                if main_error is None:
                    log.warning("%s is missing or empty; loaded %s", self.path, self.bak_path)
                self._keep_bak = True
                return
            if main_error is not None:
                raise ConfigError(
                    f"{self.path} is corrupt ({main_error}) and there is no backup {self.bak_path}"
                )
            self._reset()

    @staticmethod
    def _read(path: Path) -> bytes:
        """The file's bytes; b'' when missing or blank (bad UTF-8 is left to decode)."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return b""
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        return data if data.strip() else b""

    # -- persist ------------------------------------------------------------------------

    def render(self) -> str:
        """The text :meth:`persist` writes."""
        return dumps_pretty(self.snapshot()())

    def render_chunks(self) -> list[bytes]:
        """:meth:`render`'s UTF-8 bytes, in pieces written one after the other (called
        under the write lock)."""
        return [self.render().encode("utf-8")]

    def persist(self) -> None:
        """Write the current state safely (module docstring); :class:`ConfigError` on failure
        or when read-only. The previous ``<file>`` is left untouched if anything fails."""
        if self.readonly:
            raise ConfigError(f"{self.path}: opened read-only, not writing")
        with self._write_lock:
            data = self.render_chunks()
            tmp = self.tmp_path
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp.unlink(missing_ok=True)  # a crash's leftover, possibly linked elsewhere
                write_synced(tmp, data)
                if not self._keep_bak:
                    self._keep_previous()
                os.replace(tmp, self.path)
                fsync_dir(self.path.parent)
            except OSError as exc:
                try:
                    tmp.unlink(missing_ok=True)
                except OSError:
                    pass
                raise ConfigError(f"cannot write {self.path}: {exc}") from exc
            self._keep_bak = False
            self.writes += 1

    def _keep_previous(self) -> None:
        """Make the current ``<file>`` the ``.bak``: a hard link (no copy, however big
        the file: no file here is ever written in place, so the link keeps the old
        content), or a synced copy where links fail. The directory fsync after the
        rename makes it durable with the new file."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0:
            return
        link = self._bak_tmp_path
        try:
            link.unlink(missing_ok=True)
            os.link(self.path, link)
            os.replace(link, self.bak_path)
            return
        except OSError:
            link.unlink(missing_ok=True)
        previous = self.path.read_bytes()
        if previous.strip():
            write_synced(self.bak_path, previous)


class _Entry(Protocol):
    def to_json(self) -> dict[str, Any]: ...


E = TypeVar("E", bound=_Entry)

SEGMENT_ENTRIES = 64
"""Entries per kept piece of a big table's text (:class:`_Segment`): a change re-joins
one piece of about this many entries; a write of 10,000 topics is some 160 pieces."""


class _Segment(Generic[E]):
    """A run of consecutive table entries and their text as written (the members joined
    by a comma and a newline, UTF-8). Compared by identity: a set of them marks the
    dirty ones."""

    __slots__ = ("entries", "names", "text")

    def __init__(self, names: list[str], entries: list[E], text: bytes) -> None:
        self.names = names
        self.entries = entries
        self.text = text


@dataclass(frozen=True, slots=True)
class _Increment(Generic[E]):
    """What a rendering changes in the kept segments (see :meth:`VersionedTableManager._plan`)."""

    dirty: dict[_Segment[E], list[tuple[str, E]]]
    """Segments with a changed entry -> the (name, entry) pairs they hold now."""
    appended: list[tuple[str, E]]
    """The entries now at the table's end that no segment holds."""
    deleted: set[str]
    touched: set[str]


_TEXT = attrgetter("text")


class VersionedTableManager(ConfigFileManager, Generic[E]):
    """A file of ``{"dataVersion": ..., TABLE_KEY: {name: entry}}`` (topics, groups):
    entries are ``ENTRY.from_json(obj, name)``; mutators bump the version."""

    TABLE_KEY: ClassVar[str]
    ENTRY: ClassVar[type[Any]]

    data_version: DataVersion
    table: dict[str, E]

    _rendered: dict[str, tuple[E, bytes]]
    """Entry name -> (the entry, its member text) as last written (under the write lock)."""
    _segments: list[_Segment[E]]
    """The table's text as last written, in table order (under the write lock)."""
    _where: dict[str, _Segment[E]]
    """Entry name -> the segment of :attr:`_segments` holding it (under the write lock)."""
    _layout_of: dict[str, E] | None
    """The table :attr:`_segments` were made from (a new one is compared in full)."""
    _touched: set[str]
    """Names of entries changed since the last rendering (under ``_lock``)."""

    def _reset(self) -> None:
        self.data_version = DataVersion()
        self.table = TrackedTable()
        self._forget()
        self._touched = set()

    def _forget(self) -> None:
        """Drop the kept text: the next rendering starts afresh."""
        self._rendered, self._segments, self._where, self._layout_of = {}, [], {}, None

    def _decode(self, obj: Any) -> None:
        doc = get_mapping(obj)
        version = DataVersion.from_json(get_mapping(doc, "dataVersion"))
        table: dict[str, E] = {}
        for name, entry in get_mapping(doc, self.TABLE_KEY).items():
            if not isinstance(name, str):
                raise ConfigError(f"{self.TABLE_KEY}: name {name!r} is not a string")
            table[name] = self.ENTRY.from_json(entry, name)
        self.data_version, self.table = version, TrackedTable(table)

    def to_json(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_json(),
            self.TABLE_KEY: {name: e.to_json() for name, e in self.table.items()},
        }

    def snapshot(self) -> Callable[[], dict[str, Any]]:
        """A copy of the version and of the table's entries list (microseconds even for
        10,000 groups); the entries are encoded outside the lock."""
        with self._lock:
            version = self.data_version.to_json()
            entries = list(self.table.items())
        return lambda: {
            "dataVersion": version,
            self.TABLE_KEY: {name: e.to_json() for name, e in entries},
        }

    def render(self) -> str:
        """The file's text (:meth:`render_chunks` joined, under the write lock)."""
        with self._write_lock:
            return b"".join(self.render_chunks()).decode("utf-8")

    def render_chunks(self) -> list[bytes]:
        """The file's bytes in pieces, to be written one after the other; most of them
        are kept from the previous call.

        The table's text is kept in segments of up to :data:`SEGMENT_ENTRIES` entries,
        and each entry's text on its own. An entry is rendered again when it is a new
        object or a mutator named it (:meth:`_touch`: the same object put back after a
        change in place); a segment is joined again when one of its entries changed.
        The table (a :class:`TrackedTable`) says which entries were set or deleted
        since the last call, so a create costs the same at 10 or 10,000 entries: one
        entry rendered, the last segment joined again, the pieces listed; and the file
        is written from the pieces (:func:`~mqcore.common.files.write_chunks`) without
        joining 2 MB while holding the GIL. Only a table replaced or changed in bulk
        (a load, a slave's sync) is compared in full, segment by segment. Rendering
        10,000 topics from scratch costs about 150 ms."""
        with self._lock:
            version = self.data_version.to_json()
            touched, self._touched = self._touched, set()
            table = self.table
            plan = self._plan(table, touched)
        head, tail = self._frame(version)
        try:
            if isinstance(plan, _Increment):
                segments = self._apply(plan)
            else:
                segments = self._align(*plan, touched)
        except BaseException:
            self._forget()
            raise
        self._layout_of = table
        if not segments:
            return [head + b"{}" + tail]
        # head {, text, separator, text, ..., text, } tail: list operations in C
        out = [b",\n"] * (2 * len(segments) + 1)
        out[1::2] = map(_TEXT, segments)
        out[0], out[-1] = head + b"{\n", b"\n\t}" + tail
        return out

    def _plan(
        self, table: dict[str, E], touched: set[str]
    ) -> _Increment[E] | tuple[list[str], list[E]]:
        """Under ``_lock``: what changed since the last rendering, with the entries the
        changed segments and the end of the table hold now; or, when that cannot be
        told, the whole table (names, entries) to compare."""
        changes = table.take_changes() if isinstance(table, TrackedTable) else None
        if changes is None or changes.reset or table is not self._layout_of:
            return list(table), list(table.values())
        where, deleted = self._where, changes.deleted
        gone = sum(1 for name in deleted if name in where)
        # entries set for the first time since, or deleted and set again: the table's end
        count = len(table) - len(where) + gone
        if count < 0:
            return list(table), list(table.values())  # changed behind the tracking's back
        appended = list(islice(reversed(table.items()), count))
        appended.reverse()
        dirty: dict[_Segment[E], list[tuple[str, E]]] = {}
        for names in (changes.changed, touched):
            for name in names:
                segment = where.get(name)
                if segment is not None and segment not in dirty:
                    try:
                        dirty[segment] = [(n, table[n]) for n in segment.names if n not in deleted]
                    except KeyError:
                        return list(table), list(table.values())
        return _Increment(dirty, appended, deleted, touched)

    def _apply(self, plan: _Increment[E]) -> list[_Segment[E]]:
        """The segments after ``plan``: the dirty ones joined again (shorter after
        deletions), the appended entries added at the end."""
        cache, where = self._rendered, self._where
        for name in plan.touched:
            cache.pop(name, None)
        if not plan.dirty:  # creates: only entries appended
            kept = self._segments[:]
            if plan.appended:
                self._build([n for n, _ in plan.appended], [e for _, e in plan.appended], kept)
            self._segments = kept
            return kept
        out: list[_Segment[E]] = []
        for segment in self._segments:
            items = plan.dirty.get(segment)
            if items is None:
                out.append(segment)
                continue
            for name in segment.names:
                if where.get(name) is segment:
                    del where[name]
            if items:
                self._build([n for n, _ in items], [e for _, e in items], out)
        if plan.appended:
            self._build([n for n, _ in plan.appended], [e for _, e in plan.appended], out)
        for name in plan.deleted:
            if name not in where:
                cache.pop(name, None)
        if len(out) > 2 * (len(where) // SEGMENT_ENTRIES) + 8:  # many shrunk by deletions
            names = [name for segment in out for name in segment.names]
            entries = [entry for segment in out for entry in segment.entries]
            out = []
            self._build(names, entries, out)
        self._segments = out
        return out

    def _frame(self, version: dict[str, Any]) -> tuple[bytes, bytes]:
        """The text before and after the table's object."""
        text = dumps_pretty({"dataVersion": version, self.TABLE_KEY: Rendered("\0")})
        head, tail = text.split("\0")
        return head.encode("utf-8"), tail.encode("utf-8")

    def _align(self, names: list[str], entries: list[E], touched: set[str]) -> list[_Segment[E]]:
        """Segments covering ``names`` / ``entries`` (the table, in order): the kept ones
        that still match where they now stand, new ones for the rest."""
        cache, where = self._rendered, self._where
        for name in touched:
            cache.pop(name, None)
        dirty = {where[name] for name in touched if name in where}
        out: list[_Segment[E]] = []
        dropped: list[_Segment[E]] = []
        pos, end = 0, len(names)
        index: dict[str, int] | None = None
        for segment in self._segments:
            count = len(segment.names)
            at: int | None = pos
            if segment in dirty or not self._fits(segment, names, entries, pos):
                at = None
                if segment not in dirty:
                    # entries deleted or added before it: look for it a little further
                    # on, else anywhere
                    first = segment.names[0]
                    try:
                        at = names.index(first, pos, pos + 2 * SEGMENT_ENTRIES)
                    except ValueError:
                        if index is None:
                            index = dict(zip(names, range(end), strict=True))
                        at = index.get(first)
                    if at is not None and (at < pos or not self._fits(segment, names, entries, at)):
                        at = None
            if at is None:
                dropped.append(segment)
                continue
            if at > pos:
                self._build(names[pos:at], entries[pos:at], out)
            out.append(segment)
            pos = at + count
        if pos < end:
            self._build(names[pos:end], entries[pos:end], out)
        for segment in dropped:  # names no segment holds now: deleted from the table
            for name in segment.names:
                if where.get(name) is segment:
                    del where[name]
                    cache.pop(name, None)
        self._segments = out
        return out

    @staticmethod
    def _fits(segment: _Segment[E], names: list[str], entries: list[E], at: int) -> bool:
        """``segment`` is what the table holds from position ``at`` (C-level compares:
        the same names, and entries that are the same objects or equal ones)."""
        stop = at + len(segment.names)
        return names[at:stop] == segment.names and entries[at:stop] == segment.entries

    def _build(self, names: list[str], entries: list[E], out: list[_Segment[E]]) -> None:
        """New segments for ``names`` / ``entries``, appended to ``out``; a short segment
        at the end of ``out`` is joined again with them, so that creates one by one grow
        the last segment instead of adding a segment each."""
        if out and len(out[-1].names) < SEGMENT_ENTRIES:
            last = out.pop()
            names, entries = last.names + names, last.entries + entries
        cache, where = self._rendered, self._where
        for lo in range(0, len(names), SEGMENT_ENTRIES):
            seg_names = names[lo : lo + SEGMENT_ENTRIES]
            seg_entries = entries[lo : lo + SEGMENT_ENTRIES]
            texts = []
            for name, entry in zip(seg_names, seg_entries, strict=True):
                kept = cache.get(name)
                if kept is None or kept[0] is not entry:
                    member = pretty_member(name, entry.to_json(), 1).encode("utf-8")
                    kept = cache[name] = (entry, member)
                texts.append(kept[1])
            segment = _Segment(seg_names, seg_entries, b",\n".join(texts))
            for name in seg_names:
                where[name] = segment
            out.append(segment)

    def _touch(self, name: str) -> None:
        """Mutators (under ``_lock``): ``name``'s entry changed, whatever its identity."""
        self._touched.add(name)
