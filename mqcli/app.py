"""The `mq` command as a typer app whose subcommands load on demand.

Each subcommand lives in its own module under :mod:`mqcli.commands` and exposes
``register(app)``. Importing all of them (and through them the client, the broker,
rich tables, Textual) cost a second before any command ran, so
:data:`mqcli.command_table.COMMANDS` names each command's module, help panel and one-line
help: the help and shell completion of the command word are served from that table, and
a command's module is imported only when the command line (or a completion request)
reaches it. The entry point, :func:`mqcli.main.main`, loads this module only when it
cannot answer without it (`mq --help` it draws itself, see :mod:`mqcli.roothelp`).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from pathlib import Path
from types import ModuleType
from typing import Any

import typer
from typer._click import Command, Context  # typer vendors click from 0.2x on
from typer._click.exceptions import ClickException
from typer._click.shell_completion import CompletionItem
from typer.core import TyperCommand, TyperGroup

from mqcli import coerce, helpfmt
from mqcli.command_table import COMMANDS
from mqcli.connect import NamesrvOpt
from mqcli.connection import Connection, enter_scope
from mqcli.connection_options import (
    AccessKeyOpt,
    ContextOpt,
    SecretKeyOpt,
    TlsCaOpt,
    TlsCertOpt,
    TlsKeyOpt,
    TlsOpt,
)
from mqcore import __version__
from mqcore.errors import MQError

helpfmt.install()  # MSG_ID, not {msg_id}; no <bool> after a flag
coerce.install()  # plain values without importing pydantic

__all__ = ["COMMANDS", "LazyGroup", "app", "load_command", "run"]

_loaded: dict[str, Command] = {}
"""Commands built in this process (a module registers its typer objects once)."""


def load_command(name: str) -> Command:
    """The click command ``name``, built from its module (with the TLS options)."""
    command = _loaded.get(name)
    if command is None:
        module_name, panel, _ = COMMANDS[name]
        holder = typer.Typer()
        holder.callback()(_no_options)  # always a group, whatever the module registers
        importlib.import_module(module_name).register(holder)
        command = typer.main.get_group(holder).commands[name]
        from mqcli.connection_options import add_connection_options

        add_connection_options(command)  # -n, --context, keys, TLS wherever -n/--namesrv is
        command.rich_help_panel = panel  # type: ignore[attr-defined]
        _loaded[name] = command
    return command


def _no_options() -> None:
    """The holder group's callback; never run."""


class _CommandTable(MutableMapping[str, Command]):
    """A group's ``commands``: every name of :data:`COMMANDS` is listed, a command is
    built when looked up (so walking the whole tree, as the man page generator does,
    still sees every command)."""

    def __init__(self, built: Mapping[str, Command]) -> None:
        self._built = dict(built)

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            if name not in COMMANDS:
                raise KeyError(name)
            self._built[name] = load_command(name)
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (name for name in self._built if name not in COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS.keys() | self._built.keys())

    def is_built(self, name: str) -> bool:
        return name in self._built


def _listing_entry(name: str) -> Command:
    """What the help and the completion of the command word show for ``name``."""
    _, panel, summary = COMMANDS[name]
    return TyperCommand(name, help=summary, rich_help_panel=panel)


def load_help_renderer() -> None:
    """Import typer's rich help renderer without rich.markdown and rich.traceback.

    It imports both at its top for two things mq never does (Markdown help text,
    typer's pretty tracebacks): a third of `mq --help`'s time. Stand-ins take their
    place while it loads; each imports the real class if it is ever called, and the real
    modules stay importable by anyone else."""
    if "typer.rich_utils" in sys.modules:
        return
    stand_ins = {
        name: _stand_in(name, cls)
        for name, cls in (("rich.markdown", "Markdown"), ("rich.traceback", "Traceback"))
        if name not in sys.modules
    }
    sys.modules.update(stand_ins)
    try:
        importlib.import_module("typer.rich_utils")
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


def _stand_in(module_name: str, class_name: str) -> ModuleType:
    def real() -> Any:
        return getattr(importlib.import_module(module_name), class_name)

    class StandIn:
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return real()(*args, **kwargs)

        @classmethod
        def from_exception(cls, *args: Any, **kwargs: Any) -> Any:
            return real().from_exception(*args, **kwargs)

    StandIn.__name__ = StandIn.__qualname__ = class_name
    module = ModuleType(module_name)
    setattr(module, class_name, StandIn)
    return module


class LazyGroup(TyperGroup):
    """The root group: lists :data:`COMMANDS` without importing them."""

    def __init__(self, *, commands: Any = None, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _CommandTable(commands or {})
        self._listing = False

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        table = self.commands
        assert isinstance(table, _CommandTable)
        if self._listing and cmd_name in COMMANDS and not table.is_built(cmd_name):
            return _listing_entry(cmd_name)
        return table.get(cmd_name)

    def listing(self, ctx: Context) -> list[Command]:
        """The commands as the help lists them (built from :data:`COMMANDS` alone)."""
        self._listing = True
        try:
            found = (self.get_command(ctx, name) for name in self.list_commands(ctx))
            return [command for command in found if command is not None]
        finally:
            self._listing = False

    def format_help(self, ctx: Context, formatter: Any) -> None:
        load_help_renderer()
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def shell_complete(self, ctx: Context, incomplete: str) -> list[CompletionItem]:
        self._listing = True
        try:
            return super().shell_complete(ctx, incomplete)
        finally:
            self._listing = False


app = typer.Typer(
    name="mq",
    cls=LazyGroup,
    help="A RocketMQ 4.x-shaped messaging system and terminal toolkit.",
    epilog=helpfmt.EXIT_STATUS_EPILOG,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    add_completion=True,
)


def _version(value: bool) -> None:
    if value:
        from mqcore.common.core import summary

        # The version alone on the first line, for scripts; then which core runs (the
        # compiled twins, or the pure ones and why), the first question on a slow broker.
        typer.echo(f"mq {__version__}\ncore: {summary()}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        callback=_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
    namesrv: str | None = NamesrvOpt,
    context: str | None = ContextOpt,
    access_key: str | None = AccessKeyOpt,
    secret_key: str | None = SecretKeyOpt,
    tls: bool = TlsOpt,
    tls_ca: Path | None = TlsCaOpt,
    tls_cert: Path | None = TlsCertOpt,
    tls_key: Path | None = TlsKeyOpt,
) -> None:
    """The root options; the connection ones hold for whatever command follows."""
    from mqcli import output  # rich's console: not needed to list or complete commands

    given = Connection(namesrv, context, access_key, secret_key, tls, tls_ca, tls_cert, tls_key)
    enter_scope(ctx, given)
    output.set_debug(debug)
    output.quiet_library_logs(debug)


def run() -> None:
    """Run the command line: a usage mistake or an MQError becomes one line on stderr
    (plus a hint) and a non-zero exit code; `--debug` shows the traceback instead."""
    zsh_or_fish = os.environ.get("_MQ_COMPLETE") in ("complete_zsh", "complete_fish")
    if "--help" in sys.argv or "-h" in sys.argv or zsh_or_fish:
        load_help_renderer()  # a command's own help, and completions with help texts
    try:
        code = app(standalone_mode=False)
    except ClickException as exc:
        from mqcli import output

        if not exc.format_message():  # e.g. a group run without a command: help was shown
            sys.exit(exc.exit_code)
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else "mq"
        output.fail(exc.format_message(), code=exc.exit_code, hint=f"see '{where} --help'")
    except MQError as exc:
        from mqcli import output

        if output.debug_enabled():
            raise
        output.fail(str(exc), hint=exc.hint)
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
