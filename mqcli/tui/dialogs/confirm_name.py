"""Confirm a destructive action by typing the name of what it acts on."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

__all__ = ["ConfirmByName"]


class ConfirmByName(ModalScreen[bool]):
    """Dismisses with ``True`` only when the typed text equals ``expected`` (kaskade's
    delete dialog): a stray Enter never deletes a topic or resends a DLQ."""

    DEFAULT_CSS = """
    ConfirmByName {
        align: center middle;
    }
    ConfirmByName > Vertical {
        width: 70;
        max-width: 90%;
        height: auto;
        border: thick $error;
        background: $surface;
        padding: 1 2;
    }
    ConfirmByName Label { width: 100%; }
    ConfirmByName #hint { color: $text-muted; }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, action: str, expected: str) -> None:
        """``action`` says what happens (``"Delete topic Orders"``)."""
        super().__init__()
        self.action_text = action
        self.expected = expected

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"[b]{self.action_text}[/b]", markup=True)
            yield Label(f"Type [b]{self.expected}[/b] and press Enter to confirm.", markup=True)
            yield Input(placeholder=self.expected, id="confirm")
            yield Label("Esc cancels.", id="hint")

    def on_mount(self) -> None:
        self.query_one(Vertical).border_title = "Confirm"
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip() == self.expected:
            self.dismiss(True)
        else:
            self.notify(f"that is not {self.expected!r}", severity="warning")

    def action_cancel(self) -> None:
        self.dismiss(False)
