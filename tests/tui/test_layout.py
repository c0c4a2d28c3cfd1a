"""Views, keys, filtering and dialogs from a fixed snapshot (no cluster, no clock)."""

from __future__ import annotations

import pytest
from pilot_support import poll, screen_lines, wait_until
from rich.text import Text
from textual.widgets import Input, Label
from tui_fakes import FakePoller, sample_snapshot

from mqcli.ha import HAState, ha_state
from mqcli.tui.app import VIEWS, MQApp
from mqcli.tui.dialogs.confirm_name import ConfirmByName
from mqcli.tui.dialogs.help import HelpScreen
from mqcli.tui.model import Snapshot
from mqcli.tui.widgets.delay_levels import DelayLevels
from mqcli.tui.widgets.live_table import LiveTable


def keys(table: LiveTable) -> list[str | None]:
    """Row keys in display order."""
    return [row.key.value for row in table.ordered_rows]


def make_app(view: str = "cluster") -> MQApp:
    return MQApp("10.0.0.1:9876", refresh=0, poller=FakePoller(), view=view)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_every_view_renders_at_small_and_large_sizes(size: tuple[int, int]) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await poll(pilot)
        for i, name in enumerate(VIEWS, start=1):
            await pilot.press(str(i))
            await wait_until(pilot, lambda name=name: app.current_mode == name, 5, name)
            await pilot.pause()
            assert app.export_screenshot()  # renders without raising
            await pilot.press("escape")  # out of the messages view's lookup box


async def test_number_keys_and_tab_switch_views() -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(pilot)
        await pilot.press("3")
        assert app.current_mode == "groups"
        await pilot.press("tab")
        assert app.current_mode == "delay"
        await pilot.press("shift+tab", "shift+tab")
        assert app.current_mode == "topics"
        await pilot.press("5", "escape", "1")  # esc leaves the search boxes
        assert app.current_mode == "cluster"


async def test_messages_view_typed_digits_go_into_the_lookup_box() -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(pilot)
        await pilot.press("5")
        await wait_until(pilot, lambda: app.current_mode == "messages", 5)
        topic = app.screen.query_one("#topic", Input)
        await wait_until(pilot, lambda: app.focused is topic, 5, "topic box focused")
        await pilot.press("O", "r", "d", "1", "2", "3", "enter")
        assert app.current_mode == "messages" and topic.value == "Ord123"
        query = app.screen.query_one("#query", Input)
        assert app.focused is query
        await pilot.press("k", "e", "y", ":", "4", "2")
        assert app.current_mode == "messages" and query.value == "key:42"
        # esc gives the number keys back; coming back focuses the query box again
        await pilot.press("escape", "2")
        assert app.current_mode == "topics"
        await pilot.press("5")
        await wait_until(pilot, lambda: app.focused is query, 5, "query box focused")


@pytest.mark.parametrize("width", [120, 200])
async def test_cluster_view_fits_the_screen(width: int) -> None:
    """Every broker column is on screen: at 120 columns the compact set (no cluster,
    id folded into ROLE, in/out pairs, sizes in binary units)."""
    app = make_app()
    async with app.run_test(size=(width, 40)) as pilot:
        await poll(pilot)
        table = app.screen.query_one("#brokers", LiveTable)
        await pilot.pause()
        assert table.virtual_size.width <= table.scrollable_content_region.width
        labels = [str(c.label) for c in table.columns.values()]
        for label in ("DISK", "LAG", "STATE"):
            assert any(label in x for x in labels), labels
        if width == 120:
            row = table.get_row("broker-a/1")
            assert row[1] == "slave 1" and row[-1] == "10.1K" and row[-3] != "-"
            assert str(row[-2]) == "connected"
            assert table.get_row("broker-a/0")[1] == "sync master"


async def test_cluster_view_shows_roles_slave_lag_and_down_brokers() -> None:
    app = make_app()
    async with app.run_test(size=(200, 40)) as pilot:
        await poll(pilot)
        table = app.screen.query_one("#brokers", LiveTable)
        assert table.row_count == 3
        slave = table.get_row("broker-a/1")
        assert slave[3] == "slave" and slave[-1] == "10,320 B" and str(slave[-2]) == "connected"
        master = table.get_row("broker-a/0")
        assert master[3] == "sync master" and str(master[-2]) == "1 slave" and master[-1] == "-"
        down = table.get_row("broker-b/0")
        assert str(down[5]) == "DOWN" and str(down[-2]) == "-"
        assert table.get_row("broker-a/0")[7] == "3h00m"  # uptime from the poll's time


@pytest.mark.parametrize("width", [80, 120, 200])
async def test_cluster_view_shows_the_largest_loop_stall(width: int) -> None:
    """The full columns have LOOP LAG (yellow from 50 ms, red past the broker's 200 ms
    warning threshold, "-" for a broker that does not say); narrower screens have no
    room for it, so a stall past the threshold is said in STATE, in red."""
    snap = sample_snapshot()
    master, slave, _ = snap.brokers
    master.loop_lag_ms, slave.loop_lag_ms = 3.0, 340.0
    app = MQApp("10.0.0.1:9876", refresh=0, poller=FakePoller(snap), view="cluster")
    async with app.run_test(size=(width, 40)) as pilot:
        await poll(pilot)
        table = app.screen.query_one("#brokers", LiveTable)
        labels = [str(c.label) for c in table.columns.values()]
        state = labels.index("STATE")
        stalled = table.get_row("broker-a/1")[state]
        if width < 160:
            assert "LOOP LAG" not in labels
            assert isinstance(stalled, Text) and stalled.plain == "up, 340 ms stall"
            assert "red" in str(stalled.style)
            assert str(table.get_row("broker-a/0")[state]) == "up"
            return
        assert str(stalled) == "up"
        loop = labels.index("LOOP LAG")
        assert table.get_row("broker-a/0")[loop] == "3 ms"
        cell = table.get_row("broker-a/1")[loop]
        assert isinstance(cell, Text) and cell.plain == "340 ms" and "red" in str(cell.style)
        assert str(table.get_row("broker-b/0")[loop]) == "-"  # down


async def test_cluster_view_marks_broken_replication_red() -> None:
    """A slave cut off from its master and a SYNC_MASTER without a slave (whose sends
    fail) are red; a broker that reports no HA keys (RocketMQ) shows "-"."""
    snap = sample_snapshot()
    master, slave, other = snap.brokers
    master.ha = HAState("SYNC_MASTER", 1000, connections=0, acked_offset=0)
    slave.ha = HAState("SLAVE", 900, master_connected=False, lag_bytes=100)
    other.up, other.ha = True, ha_state({"commitLogMaxOffset": "5"}, 0)
    app = MQApp("10.0.0.1:9876", refresh=0, poller=FakePoller(snap), view="cluster")
    async with app.run_test(size=(200, 40)) as pilot:
        await poll(pilot)
        table = app.screen.query_one("#brokers", LiveTable)
        for key, text in (("broker-a/0", "no slave"), ("broker-a/1", "disconnected")):
            cell = table.get_row(key)[-2]
            assert isinstance(cell, Text) and cell.plain == text and "red" in str(cell.style)
        assert table.get_row("broker-b/0")[3] == "master"
        assert table.get_row("broker-b/0")[-2] == "-"


async def test_topics_filter_as_you_type_and_system_toggle() -> None:
    app = make_app("topics")
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(pilot)
        topics = app.screen.query_one("#topics", LiveTable)
        assert keys(topics) == ["Orders", "Payments"]
        await pilot.press("s")
        assert set(keys(topics)) == {
            "Orders",
            "Payments",
            "%RETRY%billing",
            "%DLQ%billing",
        }
        await pilot.press("s", "slash", "p", "a", "y")
        assert keys(topics) == ["Payments"]
        assert "filter: pay" in str(topics.border_title)
        assert "1 of 2" in str(topics.border_title)
        await pilot.press("escape")
        assert topics.row_count == 2 and "filter" not in str(topics.border_title)
        # the highlighted topic's queues, keyed by broker/queue
        await pilot.press("down")
        queues = app.screen.query_one("#queues", LiveTable)
        await wait_until(pilot, lambda: queues.row_count == 1, 5)
        assert queues.get_row("broker-a/0")[4] == "50"


async def test_groups_highlight_growing_lag_and_show_detail() -> None:
    app = make_app("groups")
    async with app.run_test(size=(200, 50)) as pilot:
        await poll(pilot)
        groups = app.screen.query_one("#groups", LiveTable)
        billing = groups.get_row("billing")
        assert billing[4].plain == "40" and "red" in str(billing[4].style)
        # the model the live consumers report, not "broadcast allowed" from the config
        assert groups.get_row("shipping")[1] == "broadcasting"
        assert groups.get_row("billing")[1] == "clustering"
        queues = app.screen.query_one("#group-queues", LiveTable)
        assert queues.row_count == 4
        assert queues.get_row("Orders/broker-a/2")[5].plain == "10"
        assert app.screen.query_one("#members", LiveTable).row_count == 1


async def test_delay_view_counts_waiting_per_level() -> None:
    app = make_app("delay")
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(pilot)
        levels = app.screen.query_one(DelayLevels)
        assert levels.waiting("broker-a", 3) == 10
        assert levels.waiting("broker-a", 18) == 0
        assert "10 waiting in 1 level" in str(levels.border_title)
        # the broker's scheduleMessageDeliverTps_<n>, or "-" when it has none
        assert str(levels.query_one("#level-broker-a-3 .rate", Label).render()) == "2.5/s"
        assert str(levels.query_one("#level-broker-a-18 .rate", Label).render()) == "-"
        await pilot.press("w")
        assert len(levels.query("DelayLevel")) == 1


async def test_refresh_pauses_while_a_dialog_is_open() -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(pilot)
        poller = app.poller
        assert isinstance(poller, FakePoller)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        before = poller.polls
        app._tick()
        await pilot.pause()
        assert poller.polls == before
        await pilot.press("escape")
        app._tick()
        await wait_until(pilot, lambda: poller.polls == before + 1, 5)


async def test_delete_needs_the_topic_name_typed() -> None:
    app = make_app("topics")
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(pilot)
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmByName)
        assert app.screen.expected == "Orders"
        await pilot.press("O", "r", "d", "enter")  # wrong: stays open
        assert isinstance(app.screen, ConfirmByName)
        await pilot.press("escape")
        assert not isinstance(app.screen, ConfirmByName)


async def test_rows_are_patched_in_place_and_keep_the_cursor() -> None:
    snap = sample_snapshot()
    app = MQApp("x:1", refresh=0, poller=FakePoller(snap), view="topics")
    async with app.run_test(size=(160, 40)) as pilot:
        await poll(pilot)
        topics = app.screen.query_one("#topics", LiveTable)
        await pilot.press("down")
        assert topics.highlighted_key == "Payments"
        # a new topic sorts before the cursor row, and Payments grows
        snap.topics["Apples"] = snap.topics.pop("Payments").__class__("Apples", "normal")
        snap.topics["Payments"] = sample_snapshot().topics["Payments"]
        snap.topics["Payments"].queues[0].max_offset = 99
        await poll(pilot)
        assert keys(topics) == ["Apples", "Orders", "Payments"]
        assert topics.highlighted_key == "Payments"
        assert topics.cursor_row == 2
        assert topics.get_row("Payments")[4] == "89"


@pytest.mark.parametrize("view", VIEWS)
async def test_every_view_matches_its_committed_svg_snapshot(
    view: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-render the view from the fixed sample (UTC, fixed size) and compare with the
    committed SVG, so a layout change cannot go in without its snapshot."""
    import time
    from pathlib import Path

    from make_snapshots import render

    svg = Path(__file__).parent / "snapshots" / f"{VIEWS.index(view) + 1}-{view}.svg"
    assert svg.is_file(), f"{svg.name} missing: run .venv/bin/python tests/tui/make_snapshots.py"
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        rendered = await render(view)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert rendered == svg.read_text(), (
        f"the {view} view no longer renders as {svg.name}: if the change is intended, "
        "run .venv/bin/python tests/tui/make_snapshots.py and commit the SVGs"
    )


def controller_mode_snapshot() -> Snapshot:
    """The sample cluster with broker-a in controller mode: master (controller id 1) at
    epoch 3, in-sync set {1, 2}; its slave 2 is in it."""
    snap = sample_snapshot()
    master, slave, _ = snap.brokers
    keys = {"masterEpoch": "3", "masterBrokerId": "1", "syncStateSetEpoch": "2"}
    master_rt = {"brokerRole": "SYNC_MASTER", "haConnectionCount": "1", **keys,
                 "controllerBrokerId": "1", "syncStateSet": "1,2"}  # fmt: skip
    master.ha = ha_state(master_rt, 0)
    slave.ha = ha_state(
        {"brokerRole": "SLAVE", "haMasterConnected": "true", **keys, "controllerBrokerId": "2"},
        1,
        master_max=None,
        master_runtime=master_rt,
    )
    return snap


@pytest.mark.parametrize("width", [80, 120, 200])
async def test_cluster_view_shows_epoch_and_in_sync_set_in_controller_mode(width: int) -> None:
    """Brokers in controller mode add EPOCH and IN-SYNC (at 80 columns IN-SYNC alone,
    in HA's place); the table still fits the screen."""
    app = MQApp(
        "10.0.0.1:9876", refresh=0, poller=FakePoller(controller_mode_snapshot()), view="cluster"
    )
    async with app.run_test(size=(width, 40)) as pilot:
        await poll(pilot)
        table = app.screen.query_one("#brokers", LiveTable)
        await pilot.pause()
        labels = [str(c.label) for c in table.columns.values()]
        assert table.virtual_size.width <= table.scrollable_content_region.width
        master, slave = table.get_row("broker-a/0"), table.get_row("broker-a/1")
        down = table.get_row("broker-b/0")
        sync = labels.index("IN-SYNC")
        assert master[sync] == "1,2" and str(down[sync]) == "-"
        assert isinstance(slave[sync], Text) and slave[sync].plain == "yes"
        if width == 80:  # IN-SYNC in HA's place, no room for the epoch
            assert "HA" not in labels and "EPOCH" not in labels and "DISK" in labels
            return
        assert labels[-2:] == ["EPOCH", "IN-SYNC"], labels
        assert master[-2] == slave[-2] == "3" and str(down[-2]) == "-"
        assert "HA" in labels and str(slave[labels.index("HA")]) == "connected"


async def test_a_slave_out_of_the_in_sync_set_is_red() -> None:
    snap = controller_mode_snapshot()
    slave = snap.brokers[1]
    assert slave.ha is not None and slave.ha.replica is not None
    slave.ha = ha_state(
        {"brokerRole": "SLAVE", "masterEpoch": "3", "masterBrokerId": "1",
         "controllerBrokerId": "3"},
        1,
        master_runtime={"masterEpoch": "3", "controllerBrokerId": "1", "masterBrokerId": "1",
                        "syncStateSet": "1"},
    )  # fmt: skip
    app = MQApp("10.0.0.1:9876", refresh=0, poller=FakePoller(snap), view="cluster")
    async with app.run_test(size=(200, 40)) as pilot:
        await poll(pilot)
        cell = app.screen.query_one("#brokers", LiveTable).get_row("broker-a/1")[-1]
        assert isinstance(cell, Text) and cell.plain == "no" and "red" in str(cell.style)


async def test_without_controller_mode_there_are_no_replica_columns() -> None:
    app = make_app()
    async with app.run_test(size=(200, 40)) as pilot:
        await poll(pilot)
        table = app.screen.query_one("#brokers", LiveTable)
        labels = [str(c.label) for c in table.columns.values()]
        assert "EPOCH" not in labels and "IN-SYNC" not in labels


async def test_slash_in_the_topic_box_goes_on_to_the_query_box() -> None:
    """The topic box has the focus on entering Messages: `/` (search) is not typed into
    it (no topic name holds one); with a topic given it moves on to the query box, whose
    text may hold a `/`."""
    app = make_app("messages")
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(pilot)
        topic = app.screen.query_one("#topic", Input)
        query = app.screen.query_one("#query", Input)
        await wait_until(pilot, lambda: app.focused is topic, 5, "topic box focused")
        await pilot.press("slash")
        assert topic.value == "" and app.focused is topic
        await pilot.press("O", "r", "d", "slash")
        assert topic.value == "Ord" and app.focused is query
        await pilot.press("a", "slash", "b")
        assert query.value == "a/b"


async def test_tab_in_a_text_box_moves_to_the_next_field_not_the_next_view() -> None:
    app = make_app("messages")
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(pilot)
        topic = app.screen.query_one("#topic", Input)
        await wait_until(pilot, lambda: app.focused is topic, 5, "topic box focused")
        await pilot.press("tab")
        assert app.current_mode == "messages"
        assert app.focused is app.screen.query_one("#query", Input)
        await pilot.press("shift+tab")
        assert app.current_mode == "messages" and app.focused is topic
        await pilot.press("escape", "tab")  # outside the boxes: the next view, as the help says
        assert app.current_mode == "dlq"


async def test_groups_at_80_columns_show_total_lag_whatever_the_topics() -> None:
    """A group on topics with long names still shows its total lag at 80x24: the lag
    comes right after the name, the topics last."""
    from mqcli.tui.model import GroupRow

    snap = sample_snapshot()
    topics = ["OrderEventsFromTheWebShopCheckout", "PaymentSettlementNotifications"]
    snap.groups["order-settlement-service"] = GroupRow(
        "order-settlement-service", model="CLUSTERING", topics=topics, queues=16,
        total_lag=12345, lag_history=[1, 5, 12345],
    )  # fmt: skip
    app = MQApp("10.0.0.1:9876", refresh=0, poller=FakePoller(snap), view="groups")
    async with app.run_test(size=(80, 24)) as pilot:
        await poll(pilot)
        groups = app.screen.query_one("#groups", LiveTable)
        await pilot.pause()
        labels = [str(c.label) for c in groups.columns.values()]
        assert labels[:2] == ["GROUP", "TOTAL LAG"], labels
        row = next(ln for ln in screen_lines(app) if "order-settlement-service" in ln)
        assert "12,345" in row or "12345" in row, row


def test_lag_sparklines_share_one_scale() -> None:
    """A lag of 1 is a low bar beside a lag of 168 in the same table, not a full one."""
    from mqcli.tui.widgets.lag_sparkline import spark

    assert spark([1, 1, 1], top=168) == "▁▁▁"
    assert spark([168, 168, 168], top=168) == "███"
    assert spark([1, 1, 1]) == "███"  # alone, a series is scaled to itself
