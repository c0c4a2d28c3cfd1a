"""Entry point of the `mq` command: a typer app whose subcommands load on demand.

Each subcommand lives in its own module under :mod:`mqcli.commands` and exposes
``register(app)``. Importing all of them (and through them the client, the broker,
rich tables, Textual) cost a second before any command ran, so :data:`COMMANDS` names
each command's module, help panel and one-line help: `mq --help` and shell completion of
the command word are served from that table, and a command's module is imported only
when the command line (or a completion request) reaches it.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from types import ModuleType
from typing import Any

import typer
from typer._click import Command, Context  # typer vendors click from 0.2x on
from typer._click.exceptions import ClickException
from typer._click.shell_completion import CompletionItem
from typer.core import TyperCommand, TyperGroup

from mqcli import coerce, helpfmt
from mqcli.credentials import set_cli_credentials
from mqcore import __version__
from mqcore.errors import MQError

helpfmt.install()  # MSG_ID, not {msg_id}; no <bool> after a flag
coerce.install()  # plain values without importing pydantic

COMMANDS: dict[str, tuple[str, str, str]] = {
    "namesrv": (
        "mqcli.commands.namesrv",
        "Servers",
        "Run a name server: brokers register here, clients look up topic routes.",
    ),
    "broker": (
        "mqcli.commands.broker",
        "Servers",
        "Run a broker: stores messages, serves producers and consumers, registers routes.",
    ),
    "controller": (
        "mqcli.commands.controller",
        "Servers",
        "Run a controller (RocketMQ 5's controller mode), or ask the running ones.",
    ),
    "up": (
        "mqcli.commands.up",
        "Servers",
        "Run a name server and a broker in one process (Ctrl-C stops both).",
    ),
    "produce": ("mqcli.commands.produce", "Messages", "Send messages to TOPIC."),
    "consume": ("mqcli.commands.consume", "Messages", "Print messages of TOPIC as they arrive."),
    "query": (
        "mqcli.commands.query",
        "Messages",
        "Find messages by key, msg id, unique key, or store time.",
    ),
    "message": (
        "mqcli.commands.message",
        "Messages",
        "Look at one message; resend a dead letter.",
    ),
    "topic": (
        "mqcli.commands.topic",
        "Administration",
        "Create, change, delete and look at topics (queues, routes, depth).",
    ),
    "group": (
        "mqcli.commands.group",
        "Administration",
        "Consumer groups: lag, members, offset resets, dead letters.",
    ),
    "cluster": ("mqcli.commands.cluster", "Administration", "Clusters and their brokers."),
    "kv": (
        "mqcli.commands.kv",
        "Administration",
        "The name servers' KV config (namespace, key, value).",
    ),
    "tui": ("mqcli.commands.tui", "Tools", "Live dashboard of a cluster (Textual)."),
    "bench": (
        "mqcli.commands.bench",
        "Tools",
        "Load generators: `produce` sends a fixed load, `consume` drains a topic, `e2e` does "
        "both at once; each reports rate and latency.",
    ),
    "store": (
        "mqcli.commands.store",
        "Tools",
        "Read and check store files offline (never writes to them).",
    ),
    "context": (
        "mqcli.commands.context",
        "Tools",
        "Save name server addresses under names and pick one.",
    ),
    "acl": (
        "mqcli.commands.acl",
        "Tools",
        "Inspect a plain_acl.yml, or change the ACL of running brokers (RocketMQ 4.x plain ACL).",
    ),
    "exporter": ("mqcli.commands.exporter", "Tools", "Serve Prometheus metrics of any cluster."),
    "completion": ("mqcli.commands.completion", "Tools", "Print the completion script for SHELL."),
}
"""Command name -> (module exposing ``register``, help panel, one-line help), in the
order `mq --help` lists them. tests/cli/test_startup.py checks the help against each
module's own."""

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
        from mqcli.tls_options import add_tls_options

        add_tls_options(holder)  # --tls and --tls-ca wherever -n/--namesrv is
        command = typer.main.get_group(holder).commands[name]
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


def _load_help_renderer() -> None:
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

    def format_help(self, ctx: Context, formatter: Any) -> None:
        _load_help_renderer()
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
        typer.echo(f"mq {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        callback=_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
    access_key: str | None = typer.Option(
        None, "--access-key", help="ACL access key to sign requests with (env MQ_ACCESS_KEY)."
    ),
    secret_key: str | None = typer.Option(
        None, "--secret-key", help="ACL secret key (env MQ_SECRET_KEY).", show_default=False
    ),
) -> None:
    from mqcli import output  # rich's console: not needed to list or complete commands

    set_cli_credentials(access_key, secret_key)
    output.set_debug(debug)
    output.quiet_library_logs(debug)


def main() -> None:
    """Console-script entry: a usage mistake or an MQError becomes one line on stderr
    (plus a hint) and a non-zero exit code; `--debug` shows the traceback instead."""
    zsh_or_fish = os.environ.get("_MQ_COMPLETE") in ("complete_zsh", "complete_fish")
    if "--help" in sys.argv or "-h" in sys.argv or zsh_or_fish:
        _load_help_renderer()  # a command's own help, and completions with help texts
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
        output.fail(str(exc))
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
