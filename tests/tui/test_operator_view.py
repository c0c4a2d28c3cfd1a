"""What an operator meets first: an 80x24 terminal, keys that follow one rule, a name
server that goes away, lag trends, readable panel titles, a screenshot for a bug report."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from pilot_support import (
    poll,
    record_notifications,
    screen_lines,
    screen_segments,
    wait_until,
)
from rich.color import Color
from textual.widgets import Input, ProgressBar
from tui_fakes import FakePoller, SequencePoller, sample_snapshot

from mqcli.tui.app import SCREENSHOT_DIR_ENV, VIEWS, MQApp
from mqcli.tui.dialogs.help import HELP_TEXT, HelpScreen
from mqcli.tui.model import UNKNOWN_STATE, BrokerRow, GroupRow, Snapshot, trend_direction
from mqcli.tui.poller import ClusterPoller, Poller
from mqcli.tui.widgets.delay_levels import DelayLevel, DelayLevels
from mqcli.tui.widgets.live_table import LiveTable
from mqcli.tui.widgets.message_detail import MessageDetail
from mqcli.tui.widgets.status_bar import SEPARATOR, StatusBar

from make_snapshots import sample_messages  # isort: skip

SMALL = (80, 24)


def make_app(view: str = "cluster", poller: Poller | None = None) -> MQApp:
    return MQApp("10.0.0.1:9876", refresh=0, poller=poller or FakePoller(), view=view)


async def goto(pilot: object, app: MQApp, index: int) -> None:
    name = VIEWS[index - 1]
    await pilot.press(f"f{index}")  # type: ignore[attr-defined]
    await wait_until(pilot, lambda: app.current_mode == name, 5, name)  # type: ignore[arg-type]
    await pilot.pause()  # type: ignore[attr-defined]


# -- 80x24 ---------------------------------------------------------------------------------


async def test_every_tab_and_the_header_are_whole_at_80x24() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await poll(pilot)
        for i in range(1, len(VIEWS) + 1):
            await goto(pilot, app, i)
            header, tabs = screen_lines(app)[:2]
            for n, mode in enumerate(VIEWS, start=1):
                screen = app.MODES[mode]
                assert re.search(rf" {n} ({screen.TITLE}|{screen.TAB or screen.TITLE}) ", tabs), (
                    f"tab {n} cut at 80 columns: {tabs!r}"
                )
            # the parts of the top bar never run together and are never cut
            assert f"● connected{SEPARATOR}namesrv 10.0.0.1:9876{SEPARATOR}" in header
            bar = app.screen.query_one(StatusBar)
            assert bar.render().cell_len <= bar.size.width
            assert "polled" not in header or re.search(r"polled \d\d:\d\d:\d\d in 12 ms", header)


async def test_a_wide_header_shows_every_part() -> None:
    app = make_app()
    async with app.run_test(size=(160, 30)) as pilot:
        await poll(pilot)
        header, tabs = screen_lines(app)[:2]
        assert re.search(r"brokers 3 \(1 down\) │ polled \d\d:\d\d:\d\d in 12 ms", header)
        assert " 4 Delay levels " in tabs and " 6 Dead letters " in tabs


TABLES = {
    "cluster": (["#brokers"], ["STATE", "TPS IN/OUT", "DISK", "HA"]),
    "topics": (["#topics", "#queues"], ["DEPTH", "PUT TPS", "TPS TREND"]),
    "groups": (["#groups", "#group-queues"], ["TOTAL LAG", "TREND", "LAG HISTORY", "LAG"]),
    "messages": (["#results"], ["MSG ID", "STORED"]),
    "dlq": (["#dlq-groups", "#dlq-messages"], ["DEAD LETTERS", "ORIGIN TOPIC"]),
}


@pytest.mark.parametrize("view", list(TABLES))
async def test_tables_fit_80_columns_with_their_rate_and_trend(view: str) -> None:
    app = make_app(view)
    async with app.run_test(size=SMALL) as pilot:
        await poll(pilot)
        ids, labels = TABLES[view]
        for table_id in ids:  # before any lookup, too
            table = app.screen.query_one(table_id, LiveTable)
            assert table.virtual_size.width <= table.scrollable_content_region.width, table_id
        if view == "messages":
            app.screen.show_results(sample_messages()[:1], "key order-40")  # type: ignore[attr-defined]
        if view == "dlq":
            app.screen.show_messages("billing", sample_messages()[1:])  # type: ignore[attr-defined]
        await pilot.pause()
        for table_id in ids:
            table = app.screen.query_one(table_id, LiveTable)
            assert table.virtual_size.width <= table.scrollable_content_region.width, table_id
        text = "\n".join(screen_lines(app))
        for label in labels:
            assert re.search(rf"(^|\s){re.escape(label)}(\s|$)", text, re.M), label
        if view == "messages":  # an id is never cut
            assert sample_messages()[0].msg_id in text


async def test_narrow_columns_come_and_go_with_the_width() -> None:
    app = make_app("topics")
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(pilot)
        table = app.screen.query_one("#topics", LiveTable)
        assert "MAX OFFSET" in [str(c.label) for c in table.columns.values()]
        await pilot.resize_terminal(80, 24)
        await wait_until(pilot, lambda: len(table.columns) == 6, 5, "narrow columns")
        await pilot.resize_terminal(160, 40)
        await wait_until(pilot, lambda: len(table.columns) == 9, 5, "all columns")


async def test_delay_levels_fit_80x24_and_keep_off_the_border() -> None:
    app = make_app("delay")
    async with app.run_test(size=SMALL) as pilot:
        await poll(pilot)
        levels = app.screen.query_one(DelayLevels)
        row = levels.query_one("#level-broker-a-3", DelayLevel)
        assert row.region.x >= levels.region.x + 2, "a row touches the border"
        assert row.region.right <= levels.region.right - 2, "a row touches the border"
        line = next(x for x in screen_lines(app) if "L3 " in x)
        assert "in 0m04s" in line and "2.5/s" in line and "83%" in line, line


async def test_a_level_nothing_was_scheduled_at_shows_no_full_bar() -> None:
    app = make_app("delay")
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(pilot)
        levels = app.screen.query_one(DelayLevels)
        idle = levels.query_one("#level-broker-a-1", DelayLevel)  # 0 / 0
        done = levels.query_one("#level-broker-a-18", DelayLevel)  # 50 / 50
        assert not idle.query_one(ProgressBar).visible
        assert done.query_one(ProgressBar).percentage == 1.0
        lines = screen_lines(app)
        l1 = next(x for x in lines if "L1 " in x)
        l18 = next(x for x in lines if "L18 " in x)
        assert "%" not in l1 and "━" not in l1, l1
        assert "100%" in l18


# -- contrast ------------------------------------------------------------------------------


def _luminance(color: Color) -> float:
    triplet = color.get_truecolor()

    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in triplet)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg: Color, bg: Color) -> float:
    """WCAG 2 contrast ratio (4.5 is the minimum for normal text)."""
    hi, lo = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("view", VIEWS)
async def test_panel_titles_are_readable(view: str) -> None:
    """Every bordered panel's title, focused or not, contrasts with its background."""
    app = make_app(view)
    async with app.run_test(size=(140, 40)) as pilot:
        await poll(pilot)
        await pilot.pause()
        panels = [
            *app.screen.query(LiveTable),
            *app.screen.query(DelayLevels),
            *app.screen.query(MessageDetail),
        ]
        assert panels
        rows = screen_segments(app)
        for panel in panels:
            title = str(panel.border_title).split(" (")[0]
            segs = [s for s in rows[panel.region.y] if title in s.text]
            assert segs, f"{title!r} not on its border"
            for seg in segs:
                assert seg.style is not None and seg.style.color and seg.style.bgcolor
                ratio = contrast(seg.style.color, seg.style.bgcolor)
                assert ratio >= 4.5, f"{title!r}: contrast {ratio:.1f}"


# -- trends --------------------------------------------------------------------------------


def test_trend_follows_the_window_not_the_last_step() -> None:
    # consumers commit offsets every few seconds: lag climbs in steps
    assert trend_direction([30_000, 30_000, 33_000, 33_000, 36_000, 36_000]) == 1
    assert trend_direction([36_000, 36_000, 33_000, 33_000, 30_000, 30_000]) == -1
    # a wobble that is small against the lag is flat; the same step on a small lag is not
    assert trend_direction([36_000, 36_010, 36_000, 35_990, 36_005]) == 0
    assert trend_direction([10, 20, 10, 20, 30]) == 1
    assert trend_direction([5]) == 0 and trend_direction([]) == 0
    # only the window counts: an old climb followed by a long plateau is flat
    assert trend_direction([0, 50_000] + [50_000] * 8) == 0


async def test_groups_view_shows_a_stepwise_climb_as_rising() -> None:
    snap = sample_snapshot()
    snap.groups["billing"] = GroupRow(
        "billing", topics=["Orders"], queues=4, total_lag=36_000,
        lag_history=[30_000, 30_000, 33_000, 33_000, 36_000, 36_000],
    )  # fmt: skip
    snap.groups["shipping"].lag_history = [36_000, 36_010, 36_000, 35_990, 36_005]
    app = make_app("groups", FakePoller(snap))
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(pilot)
        table = app.screen.query_one("#groups", LiveTable)
        billing = table.get_row("billing")
        assert billing[5].plain == "↑" and "red" in str(billing[0].style)
        shipping = table.get_row("shipping")
        assert shipping[5].plain == "→" and "red" not in str(shipping[0].style)


# -- name server down ----------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def unreachable_snapshot(last_seen: Snapshot) -> Snapshot:
    """What the real poller returns once its name server is gone, after a good poll
    that saw ``last_seen``'s brokers."""
    poller = ClusterPoller(f"127.0.0.1:{closed_port()}", timeout=2.0)
    for b in last_seen.brokers:
        poller._known[b.key] = b
    try:
        return await poller.poll()
    finally:
        await poller.close()


async def test_poller_without_a_name_server_marks_brokers_unknown_not_down() -> None:
    good = sample_snapshot()
    snap = await unreachable_snapshot(good)
    assert not snap.connected and snap.brokers_unknown
    assert [b.key for b in snap.brokers] == ["broker-a/0", "broker-a/1", "broker-b/0"]
    assert all(b.unknown for b in snap.brokers)
    assert snap.brokers_down == []
    up = {b.key: b.up for b in snap.brokers}
    assert up == {"broker-a/0": True, "broker-a/1": True, "broker-b/0": False}


async def test_name_server_down_says_broker_state_unknown() -> None:
    good = sample_snapshot()
    lost = await unreachable_snapshot(good)
    app = make_app("cluster", SequencePoller(good, lost, sample_snapshot()))
    toasts = record_notifications(app)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: app.polls == 1, 5, "the first poll")
        assert toasts == ["down: broker-b/0"]
        await poll(pilot)  # the name server is gone
        header = screen_lines(app)[0]
        assert UNKNOWN_STATE in header and "down)" not in header
        table = app.screen.query_one("#brokers", LiveTable)
        states = {k: str(table.get_row(k)[5]) for k in ("broker-a/0", "broker-a/1", "broker-b/0")}
        assert states == dict.fromkeys(states, "unknown"), states
        assert toasts[1:] == [UNKNOWN_STATE]
        # back: no broker "is back" or "is down" news, since none changed state
        await poll(pilot)
        assert "● connected" in screen_lines(app)[0]
        assert str(table.get_row("broker-a/0")[5]) == "up"
        assert str(table.get_row("broker-b/0")[5]) == "DOWN"
        assert toasts[1:] == [UNKNOWN_STATE, "a name server answers again"]


async def test_a_broker_that_goes_down_is_still_news() -> None:
    good = sample_snapshot()
    worse = sample_snapshot()
    worse.brokers[0] = BrokerRow(
        "DefaultCluster", "broker-a", 0, "10.0.0.1:10911", up=False, error="refused"
    )
    app = make_app("cluster", SequencePoller(good, worse))
    toasts = record_notifications(app)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: app.polls == 1, 5, "the first poll")
        await poll(pilot)
        assert toasts == ["down: broker-b/0", "broker broker-a/0 is down: refused"]


# -- keys ----------------------------------------------------------------------------------


async def test_function_and_alt_keys_switch_views_while_typing() -> None:
    app = make_app("messages")
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(pilot)
        topic = app.screen.query_one("#topic", Input)
        await wait_until(pilot, lambda: app.focused is topic, 5, "topic box focused")
        await pilot.press("4", "2")
        assert topic.value == "42" and app.current_mode == "messages"  # digits are text
        await pilot.press("f2")
        assert app.current_mode == "topics"
        await pilot.press("slash", "3")  # the filter box takes the digit too
        assert app.screen.query_one("#filter", Input).value == "3"
        assert app.current_mode == "topics"
        await pilot.press("alt+3")
        assert app.current_mode == "groups"
        await pilot.press("f5")
        await wait_until(pilot, lambda: app.current_mode == "messages", 5)
        await pilot.press("escape", "1")  # esc leaves the box: digits switch again
        assert app.current_mode == "cluster"


async def test_help_states_the_one_rule_and_dialogs_keep_the_view() -> None:
    assert "`F1`-`F6`, `alt+1`-`alt+6`" in HELP_TEXT
    assert "| `1`-`6`, `tab`, `shift+tab` | outside text boxes |" in HELP_TEXT
    assert "`ctrl+s`" in HELP_TEXT and SCREENSHOT_DIR_ENV in HELP_TEXT
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await wait_until(pilot, lambda: "alt+1-alt+6" in "\n".join(screen_lines(app)), 5)
        await pilot.press("f2")
        assert isinstance(app.screen, HelpScreen) and app.current_mode == "cluster"


# -- screenshot ----------------------------------------------------------------------------


async def test_ctrl_s_saves_an_svg_and_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shots = tmp_path / "shots"
    shots.mkdir()
    monkeypatch.setenv(SCREENSHOT_DIR_ENV, str(shots))
    app = make_app("topics")
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(pilot)
        toasts = record_notifications(app)
        await pilot.press("slash")  # works while typing, too
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: len(list(shots.glob("*.svg"))) == 1, 5, "an SVG")
        (svg,) = shots.glob("*.svg")
        assert svg.name.startswith("mq-tui-topics-")
        assert svg.read_text().startswith("<svg") and "Orders" in svg.read_text()
        assert toasts == [f"saved {svg}"]
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: len(list(shots.glob("*.svg"))) == 2, 5, "a second")


async def test_screenshot_goes_to_the_current_directory_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SCREENSHOT_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(pilot)
        toasts = record_notifications(app)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: any(tmp_path.glob("mq-tui-cluster-*.svg")), 5)
        monkeypatch.setenv(SCREENSHOT_DIR_ENV, str(tmp_path / "missing"))
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: len(toasts) == 2, 5)
        assert toasts[1].startswith("screenshot not saved:")


# -- actions: the views ask, the app acts --------------------------------------------------


async def test_the_app_runs_on_any_poller_without_a_cluster() -> None:
    """The app depends on the Poller protocol alone: a fake drives it (no cluster, no
    socket) and is closed with the app; the real poller implements the same protocol."""
    poller = FakePoller()
    implementations: list[object] = [poller, ClusterPoller("127.0.0.1:1")]
    assert all(isinstance(p, Poller) for p in implementations)
    app = make_app("cluster", poller)
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(pilot)
        assert app.snapshot is poller.snapshot
        assert "broker-a" in "\n".join(screen_lines(app))
    assert poller.closed


async def test_confirmed_delete_reaches_the_admin_and_refreshes() -> None:
    poller = FakePoller()
    app = make_app("topics", poller)
    toasts = record_notifications(app)
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(pilot)
        before = poller.polls
        await pilot.press("d", *"Orders", "enter")
        await wait_until(pilot, lambda: poller.polls > before, 5, "a refresh after the delete")
        assert poller.admin.calls == [("delete_topic", "Orders")]
        assert "deleted topic Orders" in toasts
        poller.admin.fail = "no route"
        await pilot.press("d", *"Orders", "enter")
        await wait_until(pilot, lambda: "delete Orders: no route" in toasts, 5)
        assert app.is_running


async def test_confirmed_skip_backlog_moves_every_topic_but_retry() -> None:
    poller = FakePoller()
    app = make_app("groups", poller)
    toasts = record_notifications(app)
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(pilot)
        assert app.screen.query_one("#groups", LiveTable).highlighted_key == "billing"
        await pilot.press("x", *"billin", "enter")  # a wrong name does nothing
        await pilot.press("escape")
        assert poller.admin.calls == []
        await pilot.press("x", *"billing", "enter")
        await wait_until(pilot, lambda: bool(poller.admin.calls), 5, "the reset")
        assert poller.admin.calls == [("reset_offset_by_time", "billing", "Orders", "-1")]
        await wait_until(pilot, lambda: any("offsets moved to the end" in t for t in toasts), 5)


async def test_highlighting_another_group_polls_its_detail_at_once() -> None:
    poller = FakePoller()
    app = make_app("groups", poller)
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(pilot)
        assert poller.groups[-1] == "billing"
        await pilot.press("down")
        await wait_until(pilot, lambda: poller.groups[-1] == "shipping", 5, "a poll for shipping")
