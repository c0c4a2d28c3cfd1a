"""Entry point of the `mq` command.

The command line is a typer app (:mod:`mqcli.app`) whose subcommands load on demand;
:data:`mqcli.command_table.COMMANDS` names each one's module, help panel and one-line
help, so listing and completing command words imports no command module. This module
imports nothing else at its top, so what runs before the app can stay small.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs a bare start-up's worth of CPU
if TYPE_CHECKING:
    from typing import Any

    from mqcli.app import LazyGroup, app, load_command
    from mqcli.command_table import COMMANDS

__all__ = ["COMMANDS", "LazyGroup", "app", "load_command", "main"]


def main() -> None:
    """Console-script entry: runs the app (:func:`mqcli.app.run`)."""
    from mqcli.app import run

    run()


def __getattr__(name: str) -> Any:
    """The app's objects, loaded on first use (``from mqcli.main import app``)."""
    if name == "COMMANDS":
        from mqcli.command_table import COMMANDS

        return COMMANDS
    if name in ("app", "load_command", "LazyGroup"):
        from mqcli import app as app_module

        return getattr(app_module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
