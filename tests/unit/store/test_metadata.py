"""config/*.json managers: real 4.9.8 files byte-identical, fall-back to .bak, safe writes."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqcore.common.fastjson import FastjsonError
from mqcore.errors import ConfigError
from mqcore.store.metadata import (
    MANAGERS,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    BloomFilterData,
    ConsumerFilterData,
    ConsumerFilterManager,
    ConsumerOffsetManager,
    DelayOffsetManager,
    SubscriptionGroupConfig,
    SubscriptionGroupManager,
    TopicConfig,
    TopicConfigManager,
    TopicFilterType,
    TopicNameError,
    is_not_allowed_send_topic,
    is_system_topic,
    perm_to_string,
    system_topic_configs,
    validate_topic_name,
)


@pytest.fixture
def store(tmp_path: Path, fixture_store: Path) -> Path:
    """A writable copy of the fixture's config directory."""
    shutil.copytree(fixture_store / "config", tmp_path / "config")
    for p in (tmp_path / "config").iterdir():
        p.chmod(0o644)
    return tmp_path


@pytest.mark.parametrize("name", sorted(MANAGERS))
def test_fixture_files_reserialize_byte_identical(fixture_store: Path, name: str) -> None:
    manager = MANAGERS[name](fixture_store, readonly=True)
    manager.load()
    assert manager.encode() == (fixture_store / "config" / name).read_text()


def test_fixture_values(fixture_store: Path) -> None:
    offsets = ConsumerOffsetManager(fixture_store, readonly=True)
    offsets.load()
    assert offsets.query("FixtureGroup", "FixtureTopic", 0) == 5
    assert offsets.query("FixtureGroup", "FixtureTopic", 1) is None
    assert offsets.query("Nobody", "FixtureTopic", 0) is None
    assert offsets.groups_by_topic("FixtureTopic") == {"FixtureGroup"}
    assert offsets.topics_by_group("FixtureGroup") == {"FixtureTopic"}

    delay = DelayOffsetManager(fixture_store, readonly=True)
    delay.load()
    assert delay.get(3) == 10 and delay.get(1) == 0

    topics = TopicConfigManager(fixture_store, readonly=True)
    topics.load()
    assert topics.data_version.counter == 3
    fixture = topics.select("FixtureTopic")
    assert fixture == TopicConfig("FixtureTopic", 4, 4, PERM_READ | PERM_WRITE)
    assert fixture.readable and fixture.writeable and not fixture.inherited
    assert perm_to_string(topics.table["TBW102"].perm) == "RWX"

    groups = SubscriptionGroupManager(fixture_store, readonly=True)
    groups.load()
    assert groups.find("FixtureGroup") == SubscriptionGroupConfig("FixtureGroup")
    assert groups.find("missing") is None


def test_system_topics_match_a_real_broker(fixture_store: Path) -> None:
    topics = TopicConfigManager(fixture_store, readonly=True)
    topics.load()
    for tc in system_topic_configs("DefaultCluster", "broker-a"):
        assert topics.table[tc.topic_name] == tc
    fresh = TopicConfigManager(fixture_store, readonly=True)
    fresh.ensure_topics(system_topic_configs("C", "b"))
    assert fresh.data_version.counter == 0 and "C_REPLY_TOPIC" in fresh.table


def test_readonly_never_writes(fixture_store: Path) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in (fixture_store / "config").iterdir()}
    for cls in MANAGERS.values():
        m = cls(fixture_store, readonly=True)
        m.load()
        with pytest.raises(ConfigError, match="read-only"):
            m.persist()
    after = {p.name: p.stat().st_mtime_ns for p in (fixture_store / "config").iterdir()}
    assert before == after


def test_persist_round_trip_and_bak(store: Path) -> None:
    offsets = ConsumerOffsetManager(store)
    offsets.load()
    old = offsets.path.read_bytes()
    offsets.commit("G2", "FixtureTopic", 3, 77)
    offsets.commit("FixtureGroup", "FixtureTopic", 0, 6)
    offsets.persist()
    assert offsets.bak_path.read_bytes() == old
    assert not offsets.tmp_path.exists()
    text = offsets.path.read_text()
    assert '"FixtureTopic@G2":{3:77\n\t\t}' in text and "{0:6\n" in text
    again = ConsumerOffsetManager(store)
    again.load()
    assert again.table == {"FixtureTopic@FixtureGroup": {0: 6}, "FixtureTopic@G2": {3: 77}}
    again.remove_group("G2")
    assert again.groups_by_topic("FixtureTopic") == {"FixtureGroup"}


def test_offsets_are_written_from_the_live_table_as_encode_writes_them(tmp_path: Path) -> None:
    """The periodic write reads the live table (no copy of it, no lock held) and must
    still write exactly what ``encode`` does; pairs changed or removed while it runs are
    written as they are found, or left out, never an error."""
    from mqcore.store.metadata.consumer_offset import _LiveOffsetTable

    offsets = ConsumerOffsetManager(tmp_path)
    for i in range(300):
        for q in range(4):
            offsets.commit(f"G{i}", f"T{i}", q, 1000 * i + q)
    offsets.persist()
    assert offsets.path.read_text() == offsets.encode()

    live = _LiveOffsetTable(offsets.table)
    seen = []
    for n, (key, queues) in enumerate(live.items()):
        seen.append((key, queues))
        if n == 10:  # the loop changes the table while the writer is half-way
            offsets.remove_group("G200")
            offsets.commit("G250", "T250", 0, -1)
            offsets.commit("New", "T0", 0, 5)
    written = dict(seen)
    assert "T200@G200" not in written and written["T250@G250"][0] == -1
    assert "T0@New" not in written  # born after the writer listed the pairs: next time
    assert len(written) == 299 and len(live) == 300


def test_round_trip_every_manager(tmp_path: Path) -> None:
    topics = TopicConfigManager(tmp_path)
    topics.load()
    topics.update(TopicConfig("T1", 2, 3, PERM_READ | PERM_INHERIT, TopicFilterType.MULTI_TAG, 1))
    topics.persist()
    groups = SubscriptionGroupManager(tmp_path)
    groups.load()
    groups.find("G", auto_create=True)
    groups.update(SubscriptionGroupConfig("H", consume_enable=False, retry_max_times=3))
    groups.persist()
    delay = DelayOffsetManager(tmp_path)
    delay.load()
    delay.update(1, 5)
    delay.update(3, 0)
    delay.persist()
    filters = ConsumerFilterManager(tmp_path)
    filters.load()
    filters.register(
        ConsumerFilterData("G", "T1", "a > 1", "SQL92", 10, 5, 400, BloomFilterData(64, [1, 9]))
    )
    filters.persist()
    assert delay.path.read_text() == '{\n\t"offsetTable":{1:5,3:0\n\t}\n}'  # spec §10.4
    for m in (topics, groups, delay, filters):
        other = type(m)(tmp_path)
        other.load()
        assert other.to_json() == m.to_json()
        assert other.encode() == m.path.read_text()
    assert topics.data_version.counter == 1 and groups.data_version.counter == 2


def test_corrupt_main_falls_back_to_bak(store: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = store / "config" / "consumerOffset.json"
    path.write_text('{"offsetTable":{"x@y":{0:')
    m = ConsumerOffsetManager(store)
    with caplog.at_level(logging.WARNING):
        m.load()
    assert m.query("FixtureGroup", "FixtureTopic", 0) == 5
    assert "corrupt" in caplog.text
    # the next persist must not copy the broken file over the good backup
    good_bak = m.bak_path.read_bytes()
    m.persist()
    assert m.bak_path.read_bytes() == good_bak
    m.persist()  # now the main file is good again and becomes the backup
    assert m.bak_path.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("content", [None, b"", b"  \n"])
def test_missing_or_empty_main_uses_bak(store: Path, content: bytes | None) -> None:
    path = store / "config" / "topics.json"
    if content is None:
        path.unlink()
    else:
        path.write_bytes(content)
    m = TopicConfigManager(store)
    m.load()
    assert m.data_version.counter == 2  # the .bak holds the previous version


def test_both_corrupt_or_missing(store: Path) -> None:
    path = store / "config" / "delayOffset.json"
    path.write_text("{nope")
    (store / "config" / "delayOffset.json.bak").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match=r"delayOffset\.json"):
        DelayOffsetManager(store).load()
    (store / "config" / "delayOffset.json.bak").unlink()
    with pytest.raises(ConfigError, match="no backup"):
        DelayOffsetManager(store).load()
    path.unlink()
    m = DelayOffsetManager(store)
    m.load()  # nothing at all: a fresh broker
    assert m.table == {}


def test_wrong_shape_is_config_error(store: Path) -> None:
    for text in ('{"topicConfigTable":{"T":{"perm":"6"}}}', '{"topicConfigTable":[1]}', "[]"):
        m = TopicConfigManager(store)
        with pytest.raises(ConfigError):
            m.decode(text)
    m = TopicConfigManager(store)
    m.decode('{"topicConfigTable":{"T":{"perm":6,"attributes":{},"extra":1}}}')  # 5.x fields
    assert m.table["T"] == TopicConfig("T", perm=6)


def test_failed_write_never_replaces_main(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = SubscriptionGroupManager(store)
    m.load()
    before = m.path.read_bytes()
    m.update(SubscriptionGroupConfig("NEW"))

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(ConfigError, match="cannot write"):
        m.persist()
    monkeypatch.undo()
    assert m.path.read_bytes() == before
    assert not m.tmp_path.exists()
    m.persist()
    assert "NEW" in m.path.read_text()


def test_crash_between_steps_leaves_a_loadable_file(store: Path) -> None:
    """A stale .tmp (crash before the rename) is ignored and overwritten next time."""
    m = DelayOffsetManager(store)
    m.load()
    m.tmp_path.write_text('{"offsetTable":{3:')
    again = DelayOffsetManager(store)
    again.load()
    assert again.get(3) == 10
    again.update(3, 11)
    again.persist()
    assert not again.tmp_path.exists() and "3:11" in again.path.read_text()


def test_validate_topic_name() -> None:
    for ok in ("FixtureTopic", "%RETRY%g", "a|b", "x-y_z", "t" * 127):
        validate_topic_name(ok)
    for bad in ("", "   ", "a.b", "a b", "tópico", "t" * 128):
        with pytest.raises(TopicNameError):
            validate_topic_name(bad)
    assert issubclass(TopicNameError, ConfigError)
    assert is_system_topic("TBW102") and is_system_topic("rmq_sys_x")
    assert not is_system_topic("FixtureTopic")
    assert is_not_allowed_send_topic("SCHEDULE_TOPIC_XXXX")
    assert not is_not_allowed_send_topic("TBW102")


_json_like = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=12), st.integers(0, 9)), inner, max_size=3),
    ),
    max_leaves=12,
)
_names = st.sampled_from(
    [
        "offsetTable",
        "topicConfigTable",
        "dataVersion",
        "subscriptionGroupTable",
        "filterDataByTopic",
        "groupFilterData",
        "bloomFilterData",
        "perm",
        "x@y",
    ]
)


def _docs() -> st.SearchStrategy[str]:
    from mqcore.common.fastjson import dumps_pretty

    shaped = st.dictionaries(_names, _json_like, max_size=3).map(dumps_pretty)
    return st.one_of(st.text(max_size=60), shaped, shaped.map(lambda s: s[: len(s) // 2]))


@settings(max_examples=300, deadline=None)
@given(text=_docs(), which=st.sampled_from(sorted(MANAGERS)))
def test_random_text_only_raises_config_errors(text: str, which: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        m = MANAGERS[which](Path(d))
        try:
            m.decode(text)
        except (ConfigError, FastjsonError):
            return
        m.encode()  # whatever loaded can be written back


def test_a_fifo_group_keeps_rocketmq_5_s_flag_and_a_4x_group_has_none() -> None:
    """consumeMessageOrderly (5.x) is read and written back, and only when set: a 4.x
    group's JSON stays byte for byte what 4.x writes."""
    fifo = SubscriptionGroupConfig.from_json({"groupName": "g", "consumeMessageOrderly": True})
    assert fifo.consume_message_orderly
    assert fifo.to_json()["consumeMessageOrderly"] is True
    assert SubscriptionGroupConfig.from_json(fifo.to_json()) == fifo
    plain = SubscriptionGroupConfig("g")
    assert not plain.consume_message_orderly and "consumeMessageOrderly" not in plain.to_json()
