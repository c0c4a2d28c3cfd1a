"""Writing big config tables: only changed entries are re-rendered (new objects, or those
a mutator names), the text kept in segments stays byte-identical to a full rendering after
any sequence of changes, and the previous file becomes ``.bak`` without a copy."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.common import fastjson
from mqcore.store.metadata import (
    SubscriptionGroupConfig,
    SubscriptionGroupManager,
    TopicConfig,
    TopicConfigManager,
    config_file,
)


def full_text(manager: TopicConfigManager | SubscriptionGroupManager) -> str:
    return fastjson.dumps_pretty(manager.to_json())


def test_render_after_changes_equals_a_full_rendering(tmp_path: Path) -> None:
    topics = TopicConfigManager(tmp_path)
    assert topics.render() == full_text(topics)  # empty table: "{}"
    for i in range(50):
        topics.update(TopicConfig(f"T{i}", 4, 4))
    topics.update(TopicConfig('odd"name\t', 1, 1))  # escaped the slow way
    assert topics.render() == full_text(topics)
    topics.update(TopicConfig("T3", 8, 8, perm=4))  # replaced
    topics.delete("T7")
    changed = topics.table["T9"]
    changed.perm = 2  # changed in place, then put back: the mutator names it
    topics.update(changed)
    assert topics.render() == full_text(topics)
    topics.load()  # a new table of new objects
    assert topics.render() == full_text(topics)
    groups = SubscriptionGroupManager(tmp_path)
    groups.ensure_system_groups()
    groups.update(SubscriptionGroupConfig("G", retry_max_times=3))
    assert groups.render() == full_text(groups)


def test_only_changed_entries_are_rendered_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    topics = TopicConfigManager(tmp_path)
    for i in range(100):
        topics.update(TopicConfig(f"T{i}", 4, 4))
    topics.persist()
    rendered: list[object] = []
    original = TopicConfig.to_json

    def counting(self: TopicConfig) -> dict[str, object]:
        rendered.append(self.topic_name)
        return original(self)

    monkeypatch.setattr(TopicConfig, "to_json", counting)
    topics.update(TopicConfig("New", 1, 1))
    topics.persist()
    assert rendered == ["New"]


@contextlib.contextmanager
def segments_of(size: int) -> Iterator[None]:
    """Tables cut into segments of ``size`` entries, so small tables have many."""
    saved = config_file.SEGMENT_ENTRIES
    config_file.SEGMENT_ENTRIES = size
    try:
        yield
    finally:
        config_file.SEGMENT_ENTRIES = saved


NAMES = [f"T{i}" for i in range(24)] + ['odd"name', "t\u00e9"]

change = st.one_of(
    st.tuples(st.just("update"), st.sampled_from(NAMES), st.integers(1, 3)),
    st.tuples(st.just("update"), st.sampled_from(NAMES), st.integers(1, 3)),  # twice as often
    st.tuples(st.just("in place"), st.integers(0, 99), st.integers(0, 7)),
    st.tuples(st.just("delete"), st.integers(0, 99), st.just(0)),
    st.tuples(st.just("ensure"), st.sampled_from(NAMES), st.just(0)),
    st.tuples(st.just("assign"), st.integers(0, 99), st.integers(1, 3)),  # no mutator
    st.tuples(st.just("touch only"), st.integers(0, 99), st.integers(0, 7)),
    st.tuples(st.just("pop"), st.integers(0, 99), st.just(0)),  # no mutator
    st.tuples(st.just("move to end"), st.integers(0, 99), st.just(0)),
    st.tuples(st.just("move to end, no mutator"), st.integers(0, 99), st.just(0)),
    st.tuples(st.just("del"), st.integers(0, 99), st.just(0)),  # no mutator
    st.tuples(st.just("popitem"), st.just(0), st.just(0)),  # no mutator
    st.tuples(st.just("setdefault"), st.sampled_from(NAMES), st.just(0)),  # no mutator
    st.tuples(st.just("plain dict"), st.just(0), st.just(0)),  # not a TrackedTable
    st.tuples(st.just("copy back"), st.integers(0, 99), st.just(0)),  # equal objects
    st.tuples(st.just("shuffle"), st.integers(0, 99), st.just(0)),  # slave-sync style
    st.tuples(st.just("reload"), st.just(0), st.just(0)),
    st.tuples(st.just("write"), st.just(0), st.just(0)),
)


def apply(topics: TopicConfigManager, op: str, arg: str | int, value: int) -> None:
    """One change; ``arg`` is a name, or picks one of the table's entries."""
    if op == "update":
        assert isinstance(arg, str)
        topics.update(TopicConfig(arg, value, value))
        return
    if op == "ensure":
        assert isinstance(arg, str)
        topics.ensure_topics([TopicConfig(arg, 2, 2)])
        return
    if op == "setdefault":
        assert isinstance(arg, str)
        topics.table.setdefault(arg, TopicConfig(arg, 3, 3))
        return
    assert isinstance(arg, int)
    names = list(topics.table)
    name = names[arg % len(names)] if names else None
    if op == "in place" and name is not None:
        config = topics.table[name]
        config.perm = value
        topics.update(config)
    elif op == "touch only" and name is not None:  # a mutator that changes in place
        with topics._lock:
            topics.table[name].write_queue_nums = value
            topics._touch(name)
    elif op == "delete" and name is not None:
        topics.delete(name)
    elif op == "pop" and name is not None:
        topics.table.pop(name)
    elif op == "move to end" and name is not None:
        topics.update(topics.delete(name) or TopicConfig(name))
    elif op == "move to end, no mutator" and name is not None:
        topics.table[name] = topics.table.pop(name)
    elif op == "del" and name is not None:
        del topics.table[name]
    elif op == "popitem" and name is not None:
        topics.table.popitem()
    elif op == "plain dict":
        topics.table = dict(topics.table)
    elif op == "assign" and name is not None:
        topics.table[name] = dataclasses.replace(topics.table[name], read_queue_nums=value)
    elif op == "copy back":
        copies = {n: dataclasses.replace(c) for n, c in topics.table.items()}
        topics.table.clear()
        topics.table.update(copies)
    elif op == "shuffle":
        items = list(topics.table.items())
        random.Random(arg).shuffle(items)
        topics.table.clear()
        topics.table.update(items)
    elif op == "reload":
        topics.load()
    elif op == "write":
        topics.persist()


@given(
    st.integers(0, len(NAMES)),
    st.lists(st.tuples(change, st.booleans()), max_size=40),
    st.integers(1, 5),
)
@settings(max_examples=150, deadline=None)
def test_kept_segments_render_as_a_full_rendering_after_any_changes(
    tmp_path_factory: pytest.TempPathFactory,
    initial: int,
    ops: list[tuple[tuple[str, str | int, int], bool]],
    size: int,
) -> None:
    root = tmp_path_factory.mktemp("store")
    with segments_of(size):
        topics = TopicConfigManager(root)
        for name in NAMES[:initial]:
            topics.update(TopicConfig(name, 4, 4))
        topics.persist()
        for (op, arg, value), render in ops:
            apply(topics, op, arg, value)
            if render:  # else several changes before the next rendering
                assert topics.render() == full_text(topics)
        assert topics.render() == full_text(topics)
        topics.persist()
        assert topics.path.read_bytes() == full_text(topics).encode()
        assert len(topics._rendered) == len(topics.table)  # nothing kept for deleted ones
        assert topics._where.keys() == topics.table.keys()


def test_creates_one_by_one_grow_the_last_segment(tmp_path: Path) -> None:
    with segments_of(8):
        topics = TopicConfigManager(tmp_path)
        for i in range(100):
            topics.update(TopicConfig(f"T{i}", 4, 4))
            topics.persist()
        assert [len(s.names) for s in topics._segments] == [8] * 12 + [4]
        topics.delete("T13")
        topics.update(TopicConfig("T50", 1, 1))
        topics.persist()
        assert topics.path.read_bytes() == full_text(topics).encode()
        assert sum(len(s.names) for s in topics._segments) == 99
        assert len(topics._segments) <= 14


def test_deletions_one_by_one_leave_few_segments(tmp_path: Path) -> None:
    with segments_of(4):
        topics = TopicConfigManager(tmp_path)
        for i in range(400):
            topics.update(TopicConfig(f"T{i}", 4, 4))
        topics.persist()
        # each segment keeps one entry; from the end, so that a segment made shorter is
        # never joined again with the one before it, still full then
        doomed = [f"T{i}" for i in reversed(range(400)) if i % 4]
        for name in doomed:
            topics.table.pop(name)  # behind the manager's back: no mutator names it
            topics.persist()
            assert len(topics._segments) <= 2 * len(topics.table) // 4 + 9
        assert topics.path.read_bytes() == full_text(topics).encode()
        assert len(topics._rendered) == len(topics.table) == 100
        assert len(topics._segments) < 50  # joined again after the deletions


def test_a_failed_rendering_starts_afresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    topics = TopicConfigManager(tmp_path)
    for i in range(10):
        topics.update(TopicConfig(f"T{i}", 4, 4))
    topics.persist()

    def broken(self: TopicConfig) -> dict[str, object]:
        raise RuntimeError("boom")

    with monkeypatch.context() as patched:
        patched.setattr(TopicConfig, "to_json", broken)
        topics.update(TopicConfig("New", 1, 1))
        with pytest.raises(RuntimeError):
            topics.persist()
    config = topics.table["T3"]
    config.perm = 2  # in place, named after the failure
    topics.update(config)
    topics.persist()
    assert topics.path.read_bytes() == full_text(topics).encode()


@given(
    st.dictionaries(
        st.text(max_size=6),
        st.none() | st.booleans() | st.integers() | st.text(max_size=6),
        max_size=4,
    ),
    st.integers(0, 3),
)
@settings(max_examples=200, deadline=None)
def test_members_join_to_the_object(value: dict[str, object], level: int) -> None:
    members = [fastjson.pretty_member(k, v, level) for k, v in value.items()]
    assert fastjson.pretty_object(members, level) == fastjson.dumps_pretty_at(value, level)


def test_bak_is_the_previous_file_without_a_copy(tmp_path: Path) -> None:
    topics = TopicConfigManager(tmp_path)
    topics.update(TopicConfig("A", 1, 1))
    topics.persist()
    first = topics.path.read_bytes()
    first_inode = topics.path.stat().st_ino
    topics.update(TopicConfig("B", 1, 1))
    topics.persist()
    assert topics.bak_path.read_bytes() == first
    assert topics.bak_path.stat().st_ino == first_inode  # the old file itself, linked
    second = topics.path.read_bytes()
    topics.update(TopicConfig("C", 1, 1))
    topics.persist()
    assert topics.bak_path.read_bytes() == second  # the link moves on, content intact
    assert not topics.bak_path.with_name(topics.bak_path.name + ".tmp").exists()


def test_a_reader_of_the_file_reads_one_whole_version_across_writes(tmp_path: Path) -> None:
    """A reader that opened ``<file>`` (a backup copying a live store, a slow ``mq store``)
    reads the version it opened, however many writes happen meanwhile: no write goes over
    the blocks of a file that was once ``<file>``."""
    topics = TopicConfigManager(tmp_path)
    for i in range(200):
        topics.update(TopicConfig(f"T{i}", 1, 1))
    topics.persist()
    opened = topics.path.read_bytes()
    with open(topics.path, "rb") as reader:
        for name in "ABCD":
            topics.update(TopicConfig(name, 1, 1))
            topics.persist()
        assert reader.read() == opened
    assert topics.path.read_bytes() == full_text(topics).encode()
    assert not topics.tmp_path.exists()


def test_a_leftover_tmp_linked_elsewhere_is_left_whole(tmp_path: Path) -> None:
    topics = TopicConfigManager(tmp_path)
    topics.update(TopicConfig("A", 1, 1))
    topics.tmp_path.parent.mkdir(parents=True)
    topics.tmp_path.write_bytes(b"kept by hand")
    saved = tmp_path / "saved-by-hand"
    os.link(topics.tmp_path, saved)
    topics.persist()
    assert saved.read_bytes() == b"kept by hand"
    assert topics.path.read_bytes() == full_text(topics).encode()


def test_a_bak_that_is_the_file_itself_is_not_written_over(tmp_path: Path) -> None:
    """A crash between linking ``<file>`` as ``.bak.tmp`` and renaming that over ``.bak``
    cannot leave them one file (the rename is atomic), but one made by hand can be."""
    topics = TopicConfigManager(tmp_path)
    topics.update(TopicConfig("A", 1, 1))
    topics.persist()
    first = topics.path.read_bytes()
    os.link(topics.path, topics.bak_path)
    topics.update(TopicConfig("B", 1, 1))
    topics.persist()
    assert topics.bak_path.read_bytes() == first
    assert topics.path.read_bytes() == full_text(topics).encode()


def test_a_bak_with_other_links_is_not_written_over(tmp_path: Path) -> None:
    topics = TopicConfigManager(tmp_path)
    for name in "AB":
        topics.update(TopicConfig(name, 1, 1))
        topics.persist()
    saved = tmp_path / "saved-by-hand.json"
    os.link(topics.bak_path, saved)
    kept = saved.read_bytes()
    for name in "CD":
        topics.update(TopicConfig(name, 1, 1))
        topics.persist()
    assert saved.read_bytes() == kept
    assert topics.path.read_bytes() == full_text(topics).encode()


def test_a_leftover_tmp_is_written_over(tmp_path: Path) -> None:
    topics = TopicConfigManager(tmp_path)
    topics.update(TopicConfig("A", 1, 1))
    topics.tmp_path.parent.mkdir(parents=True)
    topics.tmp_path.write_bytes(b"x" * 100_000)  # a crash's leftover, longer than the file
    topics.persist()
    assert topics.path.read_bytes() == full_text(topics).encode()


def test_bak_is_copied_where_links_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    topics = TopicConfigManager(tmp_path)
    topics.update(TopicConfig("A", 1, 1))
    topics.persist()
    first = topics.path.read_bytes()

    def no_links(src: object, dst: object) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    topics.update(TopicConfig("B", 1, 1))
    topics.persist()
    assert topics.bak_path.read_bytes() == first
    assert topics.bak_path.stat().st_ino != topics.path.stat().st_ino
