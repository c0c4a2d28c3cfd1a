"""Entry point of the `mq` command.

The command line is a typer app (:mod:`mqcli.app`) whose subcommands load on demand;
:data:`mqcli.command_table.COMMANDS` names each one's module, help panel and one-line
help, so listing and completing command words imports no command module. `mq --help`
(and a bare `mq`) needs not even typer and rich, most of the command's start-up:
:mod:`mqcli.roothelp` draws that page as typer would, from a description of it that
``make docs`` writes, and the app is loaded only when that is not enough. This module
imports nothing else at its top.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself costs a bare start-up's worth of CPU
if TYPE_CHECKING:
    from typing import Any

    from mqcli.app import LazyGroup, app, load_command
    from mqcli.command_table import COMMANDS

__all__ = ["COMMANDS", "LazyGroup", "app", "load_command", "main"]


def main() -> None:
    """Console-script entry: `mq --help`, `mq -h` and a bare `mq` are drawn without the
    app when :mod:`mqcli.roothelp` can; everything else runs the app."""
    args = sys.argv[1:]
    if args in ([], ["--help"], ["-h"]) and _root_help(usage_error=not args):
        return
    from mqcli.app import run

    run()


def _root_help(*, usage_error: bool) -> bool:
    """Print the root help page without typer; False when the page needs typer here (an
    environment or terminal the quick renderer does not model)."""
    from mqcli import roothelp

    page = roothelp.page()
    if page is None:
        return False
    sys.stdout.write(page if usage_error else page + "\n")
    sys.stdout.flush()
    if usage_error:  # as click does: the help, and the exit status of a usage error
        raise SystemExit(2)
    return True


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
