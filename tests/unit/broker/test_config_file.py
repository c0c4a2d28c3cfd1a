"""Saving updated keys in a broker's properties file as 4.9.8 persists (tmp, .bak), and
the disk ratio of runtime info."""

from __future__ import annotations

from pathlib import Path

from mqcore.broker.config_file import save_properties, updated_properties_text


def test_changed_keys_are_replaced_in_place_and_new_ones_appended() -> None:
    old = "# flushDiskType=SYNC_FLUSH\nbrokerName = a\nflushDiskType=ASYNC_FLUSH\nx: 1\nx=2"
    text = updated_properties_text(old, {"flushDiskType": "SYNC_FLUSH", "x": "3", "new": "v"})
    assert text == (
        "# flushDiskType=SYNC_FLUSH\nbrokerName = a\nflushDiskType=SYNC_FLUSH\nx: 1\nx=3\nnew=v\n"
    )


def test_the_previous_content_is_kept_in_bak(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    save_properties(conf, {"a": "1"})  # no file yet: created, nothing to back up
    assert conf.read_text() == "a=1\n" and not conf.with_name("broker.conf.bak").exists()
    save_properties(conf, {"a": "2"})
    assert conf.read_text() == "a=2\n"
    assert conf.with_name("broker.conf.bak").read_text() == "a=1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broker.conf", "broker.conf.bak"]


def test_disk_ratio_is_rounded_up_and_measured_where_a_directory_will_be(tmp_path: Path) -> None:
    import os

    from mqcore.store.cleanup import disk_used_ratio

    st = os.statvfs(tmp_path)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    expected = -(-used * 100 // entire) / 100.0
    assert disk_used_ratio(str(tmp_path)) == expected
    assert disk_used_ratio(str(tmp_path / "store" / "commitlog")) == expected  # not made yet
