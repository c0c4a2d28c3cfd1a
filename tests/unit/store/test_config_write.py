"""Writing big config tables: only changed entries are re-rendered (new objects, or those
a mutator names), the text stays byte-identical to a full rendering, and the previous file
becomes ``.bak`` without a copy."""

from __future__ import annotations

import os
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
