"""The dashboard App: one mode per view, the keys, and the refresh loop.

Refreshing follows dolphie's live dashboard rather than kaskade's manual refresh: a
``set_interval`` tick starts an async worker that takes one :class:`Snapshot` from its
:class:`~mqcli.tui.poller.Poller` (a protocol: a
:class:`~mqcli.tui.poller.ClusterPoller` by default, a fake in tests); a tick is skipped
while a poll is still running (a slow broker never piles polls up) and while a dialog is
open (so a confirmation is not redrawn under the operator's fingers). Errors become
toasts, only when something changes state (a broker goes down or comes back), never
exceptions.

Views do not act on the cluster themselves: they post a message (``DeleteTopic``,
``SkipBacklog``, ``Resend``, ``RefreshNow``) and the app acts, as frogmouth's omnibox
does, through the poller's Admin, so a view is tested with a fake poller and its Admin.
"""

from __future__ import annotations

import os
import time
from typing import ClassVar

from textual import on, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen

from mqcli.credentials import client_config
from mqcli.tui.dialogs.help import HelpScreen
from mqcli.tui.lookup import resend
from mqcli.tui.model import UNKNOWN_STATE, Snapshot
from mqcli.tui.poller import ClusterPoller, Poller
from mqcli.tui.screens.base import ViewScreen
from mqcli.tui.screens.cluster import ClusterScreen
from mqcli.tui.screens.delay import DelayScreen
from mqcli.tui.screens.dlq import DeadLettersScreen
from mqcli.tui.screens.groups import GroupsScreen
from mqcli.tui.screens.messages import MessagesScreen
from mqcli.tui.screens.topics import TopicsScreen
from mqcore.client import Producer
from mqcore.message import MessageExt

__all__ = ["RESEND_GROUP", "SCREENSHOT_DIR_ENV", "VIEWS", "MQApp"]

VIEWS = ("cluster", "topics", "groups", "delay", "messages", "dlq")
"""Mode names, in number-key order."""

RESEND_GROUP = "MQ_TUI_RESEND"
"""Producer group of resent dead letters."""

SCREENSHOT_DIR_ENV = "MQ_SCREENSHOT_DIR"
"""Where ``ctrl+s`` saves its SVG (default: the current directory)."""


class MQApp(App[None]):
    """``mq tui``: see the module docstring. ``refresh`` <= 0 disables the timer (tests
    and snapshot scripts drive :meth:`refresh_now` themselves)."""

    CSS_PATH = "mq.tcss"
    TITLE = "mq"
    ENABLE_COMMAND_PALETTE = False

    MODES: ClassVar[dict[str, type[ViewScreen]]] = {  # type: ignore[assignment]
        "cluster": ClusterScreen,
        "topics": TopicsScreen,
        "groups": GroupsScreen,
        "delay": DelayScreen,
        "messages": MessagesScreen,
        "dlq": DeadLettersScreen,
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("r", "refresh", "Refresh"),
        Binding("question_mark", "help", "Help"),
        Binding("ctrl+s", "screenshot", "Screenshot", show=False, priority=True),
        # one rule for views: a digit switches unless a text box has the focus (esc
        # leaves it); F1-F6 and alt+digit switch from anywhere, typing or not
        *(
            Binding(str(i), f"view('{name}')", name.capitalize(), show=False)
            for i, name in enumerate(VIEWS, start=1)
        ),
        *(
            Binding(f"f{i},alt+{i}", f"view('{n}')", n.capitalize(), show=False, priority=True)
            for i, n in enumerate(VIEWS, start=1)
        ),
    ]

    def __init__(
        self,
        namesrv: str,
        *,
        refresh: float = 2.0,
        poller: Poller | None = None,
        view: str = "cluster",
    ) -> None:
        super().__init__()
        self.namesrv = namesrv
        self.refresh_seconds = refresh
        self.poller: Poller = poller if poller is not None else ClusterPoller(namesrv)
        self.initial_view = view
        self.snapshot: Snapshot | None = None
        """The last poll's snapshot (the views render it)."""
        self.last_good_ms: int | None = None
        self.polls = 0
        """Polls applied so far (tests wait on it)."""
        self._polling = False
        self._shots = 0

    def on_mount(self) -> None:
        self.switch_mode(self.initial_view)
        if self.refresh_seconds > 0:
            self.set_interval(self.refresh_seconds, self._tick, name="poll")
        self.refresh_now()

    async def on_unmount(self) -> None:
        await self.poller.close()

    # -- refreshing -----------------------------------------------------------------------

    @property
    def view(self) -> ViewScreen | None:
        screen = self.screen
        return screen if isinstance(screen, ViewScreen) else None

    @property
    def dialog_open(self) -> bool:
        return isinstance(self.screen, ModalScreen)

    def _tick(self) -> None:
        view = self._view_under_dialog()
        if view is not None:
            view.set_paused(self.dialog_open)
        if self.dialog_open or self._polling:
            return
        self.refresh_now()

    def _view_under_dialog(self) -> ViewScreen | None:
        for screen in reversed(self.screen_stack):
            if isinstance(screen, ViewScreen):
                return screen
        return None

    def refresh_now(self) -> None:
        """Start a poll now (unless one is running)."""
        if not self._polling:
            self._polling = True
            self._poll()

    @work(exclusive=True, group="poll")
    async def _poll(self) -> None:
        view = self.view
        group = view.selected_group if isinstance(view, GroupsScreen) else None
        try:
            snap = await self.poller.poll(group=group, delay_heads=isinstance(view, DelayScreen))
        except Exception as exc:  # a poll never takes the app down: it is a toast
            self.notify(str(exc), severity="error", title="Poll failed")
            return
        finally:
            self._polling = False
        self.apply_snapshot(snap)

    def apply_snapshot(self, snap: Snapshot) -> None:
        """Toast what changed state, keep the snapshot, and show it in the active view."""
        self._toast_changes(self.snapshot, snap)
        if snap.connected:
            self.last_good_ms = snap.taken_ms
        self.snapshot = snap
        self.polls += 1
        view = self.view
        if view is not None:
            view.set_paused(False)
            view.show(snap)

    def _toast_changes(self, old: Snapshot | None, snap: Snapshot) -> None:
        """A broker going down or coming back, the name servers going away. Brokers
        whose state is unknown (no name server answers) are neither down nor back."""
        if snap.brokers_unknown and (old is None or not old.brokers_unknown):
            self.notify(UNKNOWN_STATE, severity="error", title="Name server")
        if old is None:
            if snap.brokers_down:
                names = ", ".join(b.key for b in snap.brokers_down)
                self.notify(f"down: {names}", severity="error", title="Broker")
            return
        was_up = {b.key: b.up for b in old.brokers}  # an unknown row keeps its last state
        for b in snap.brokers:
            if b.unknown:
                continue
            if not b.up and was_up.get(b.key, True):
                self.notify(f"broker {b.key} is down: {b.error}", severity="error", title="Broker")
            elif b.up and was_up.get(b.key) is False:
                self.notify(f"broker {b.key} is back", title="Broker")
        if old.brokers_unknown and snap.connected:
            self.notify("a name server answers again", title="Name server")

    def mode_of(self, screen: ViewScreen) -> str:
        """The mode a view screen belongs to."""
        for mode, cls in self.MODES.items():
            if type(screen) is cls:
                return mode
        return ""

    # -- actions --------------------------------------------------------------------------

    def action_view(self, name: str) -> None:
        if name in self.MODES and self.current_mode != name and not self.dialog_open:
            self.switch_mode(name)

    def _step_view(self, step: int) -> None:
        index = VIEWS.index(self.current_mode) if self.current_mode in VIEWS else 0
        self.switch_mode(VIEWS[(index + step) % len(VIEWS)])

    def action_next_view(self) -> None:
        self._step_view(1)

    def action_prev_view(self) -> None:
        self._step_view(-1)

    def action_refresh(self) -> None:
        self.refresh_now()

    # -- what the views ask for ------------------------------------------------------------

    @on(ViewScreen.RefreshNow)
    def _on_refresh_now(self) -> None:
        self.refresh_now()

    @on(TopicsScreen.DeleteTopic)
    def _on_delete_topic(self, event: TopicsScreen.DeleteTopic) -> None:
        self._delete_topic(event.topic)

    @work(group="topic-admin")
    async def _delete_topic(self, topic: str) -> None:
        try:
            await self.poller.admin.delete_topic(topic)
        except Exception as exc:  # errors are toasts, never crashes
            self.notify(f"delete {topic}: {exc}", severity="error", title="Error")
            return
        self.notify(f"deleted topic {topic}")
        self.refresh_now()

    @on(GroupsScreen.SkipBacklog)
    def _on_skip_backlog(self, event: GroupsScreen.SkipBacklog) -> None:
        self._skip_backlog(event.group, event.topics)

    @work(group="group-admin")
    async def _skip_backlog(self, group: str, topics: list[str]) -> None:
        try:
            for topic in topics:
                await self.poller.admin.reset_offset_by_time(group, topic, -1)
        except Exception as exc:  # errors are toasts, never crashes
            self.notify(f"skip backlog of {group}: {exc}", severity="error", title="Error")
            return
        self.notify(f"{group}: offsets moved to the end of {', '.join(topics)}")
        self.refresh_now()

    @on(DeadLettersScreen.Resend)
    def _on_resend(self, event: DeadLettersScreen.Resend) -> None:
        self._resend(event.messages)

    @work(group="dlq-resend")
    async def _resend(self, messages: list[MessageExt]) -> None:
        producer = Producer(
            RESEND_GROUP, self.namesrv, instance_name="mq-tui-resend", client_config=client_config()
        )
        try:
            await producer.start()
            sent = await resend(producer, messages)
        except Exception as exc:  # errors are toasts, never crashes
            self.notify(f"resend: {exc}", severity="error", title="Error")
            return
        finally:
            await producer.shutdown()
        self.notify(f"resent {sent} of {len(messages)} dead letter(s)")
        self.refresh_now()

    def action_help(self) -> None:
        if not self.dialog_open:
            self.push_screen(HelpScreen())

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Save the screen as SVG (for a bug report) and say where it went."""
        folder = path or os.environ.get(SCREENSHOT_DIR_ENV) or os.getcwd()
        if filename is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            filename = f"mq-tui-{self.current_mode or 'view'}-{stamp}-{self._shots:03d}.svg"
        self._shots += 1
        try:
            saved = self.save_screenshot(filename, folder)
        except OSError as exc:
            self.notify(f"screenshot not saved: {exc}", severity="error", title="Screenshot")
            return
        self.notify(f"saved {saved}", title="Screenshot")
