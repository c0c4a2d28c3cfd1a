"""The connection options and how every command that connects gets them.

:mod:`mqcli.connection` says why they may stand anywhere and where their values go. Here
are the options (one "Connection" help panel) and :func:`add_connection_options`, which
adds them to the command tree once it is built: to every command taking the shared ``-n``
option (:data:`mqcli.connect.NamesrvOpt`) and to the groups above such commands, so no
command module repeats them. The root command declares the same options itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from typer._click import Command
from typer._click.globals import get_current_context
from typer.core import TyperGroup as Group

from mqcli.connect import CONNECTION_PANEL, NamesrvOpt
from mqcli.connection import Connection, current, enter_scope, scope

__all__ = [
    "AccessKeyOpt",
    "ContextOpt",
    "SecretKeyOpt",
    "TlsCaOpt",
    "TlsCertOpt",
    "TlsKeyOpt",
    "TlsOpt",
    "add_connection_options",
    "check_pem_pair",
]


def complete_context(incomplete: str) -> list[str]:
    """Names of the saved contexts (for ``--context``)."""
    from mqcli.connect import ContextStore

    try:
        names = ContextStore.load().contexts
    except SystemExit:  # an unreadable contexts.json completes nothing
        return []
    return sorted(n for n in names if n.startswith(incomplete))


def _pem_option(flag: str, env: str, text: str) -> Any:
    return typer.Option(
        None,
        flag,
        envvar=env,
        show_envvar=False,  # the help text names the variable
        metavar="PATH",
        exists=True,
        dir_okay=False,
        help=f"{text} (env {env}).",
        show_default=False,
        rich_help_panel=CONNECTION_PANEL,
    )


ContextOpt: Any = typer.Option(
    None,
    "--context",
    metavar="NAME",
    help="Connect as the saved context NAME says (`mq context ls`), not the current one.",
    show_default=False,
    autocompletion=complete_context,
    rich_help_panel=CONNECTION_PANEL,
)
AccessKeyOpt: Any = typer.Option(
    None,
    "--access-key",
    help="ACL access key to sign requests with (env MQ_ACCESS_KEY).",
    show_default=False,
    rich_help_panel=CONNECTION_PANEL,
)
SecretKeyOpt: Any = typer.Option(
    None,
    "--secret-key",
    help="ACL secret key (env MQ_SECRET_KEY).",
    show_default=False,
    rich_help_panel=CONNECTION_PANEL,
)
TlsOpt: Any = typer.Option(
    False,
    "--tls",
    envvar="MQ_TLS",
    show_envvar=False,
    help="Talk to the servers over TLS (env MQ_TLS=1).",
    show_default=False,
    rich_help_panel=CONNECTION_PANEL,
)
TlsCaOpt: Any = _pem_option(
    "--tls-ca",
    "MQ_TLS_CA",
    "CA certificate (PEM) the servers' certificates chain to; implies --tls "
    "(default: the system's CAs)",
)
TlsCertOpt: Any = _pem_option(
    "--tls-cert",
    "MQ_TLS_CERT",
    "Client certificate (PEM) for servers that verify clients "
    "(tls.server.need.client.auth); implies --tls; needs --tls-key",
)
TlsKeyOpt: Any = _pem_option("--tls-key", "MQ_TLS_KEY", "Private key (PEM) of --tls-cert")

_PREFIX = "mq_connection_"
"""Parameter names of the added options (no command has parameters of these names)."""


def _options_holder(
    mq_connection_context: str | None = ContextOpt,
    mq_connection_access_key: str | None = AccessKeyOpt,
    mq_connection_secret_key: str | None = SecretKeyOpt,
    mq_connection_tls: bool = TlsOpt,
    mq_connection_tls_ca: Path | None = TlsCaOpt,
    mq_connection_tls_cert: Path | None = TlsCertOpt,
    mq_connection_tls_key: Path | None = TlsKeyOpt,
) -> None:
    """Never run: its parameters are the options added to commands (typer builds them)."""


def _namesrv_holder(mq_connection_namesrv: str | None = NamesrvOpt) -> None:
    """Never run: the ``-n`` option added to groups."""


def _params(*holders: Callable[..., None]) -> list[Any]:
    """Fresh click parameters of ``holders``' options (a parameter object belongs to one
    command)."""
    app = typer.Typer()
    for holder in holders:
        app.command(holder.__name__)(holder)
    group = typer.main.get_group(app)
    return [p for holder in holders for p in group.commands[holder.__name__].params]


def pop_connection(values: dict[str, Any], namesrv: str | None = None) -> Connection:
    """The added options' values taken out of a callback's ``values``."""
    added = [name for name in values if name.startswith(_PREFIX)]
    given = {name.removeprefix(_PREFIX): values.pop(name) for name in added}
    if namesrv is not None:
        given["namesrv"] = namesrv
    return Connection(**given)


def _takes_namesrv(command: Command) -> bool:
    """Whether ``command`` takes the shared ``-n`` (not an ``-n`` of its own meaning, as
    `mq context add`'s address to save)."""
    return any(
        p.name == "namesrv" and getattr(p, "rich_help_panel", None) == CONNECTION_PANEL
        for p in command.params
    )


def _added(command: Command) -> bool:
    return any(p.name and p.name.startswith(_PREFIX) for p in command.params)


def _wrap_command(command: Command) -> None:
    """Give ``command`` the options it lacks; its callback runs inside their scope."""
    command.params.extend(_params(_options_holder))
    callback = command.callback
    assert callback is not None

    def run(**values: Any) -> Any:
        with scope(pop_connection(values, values.get("namesrv"))):
            check_pem_pair()
            return callback(**values)

    command.callback = run


def _wrap_group(group: Group) -> None:
    """Give a group the options (``-n`` too); they stay in force while its command runs."""
    group.params.extend(_params(_namesrv_holder, _options_holder))
    callback = group.callback

    def run(**values: Any) -> Any:
        enter_scope(get_current_context(), pop_connection(values))
        return callback(**values) if callback is not None else None

    group.callback = run


def check_pem_pair() -> None:
    """A client certificate needs its key and a key its certificate, wherever each was
    given (a usage error otherwise)."""
    conn = current()
    if (conn.tls_cert is None) != (conn.tls_key is None):
        raise typer.BadParameter("--tls-cert and --tls-key go together")


def add_connection_options(command: Command) -> bool:
    """Add the connection options to ``command`` and its subcommands that connect: those
    taking ``-n/--namesrv``, and the groups holding such commands (a group with an ``-n``
    of its own, as `mq broker`'s, is left as it is). True when something below connects."""
    if isinstance(command, Group):
        below = [add_connection_options(sub) for sub in command.commands.values()]
        connects = any(below)
        own_namesrv = any(p.name == "namesrv" for p in command.params)
        if connects and not _added(command) and not own_namesrv:
            _wrap_group(command)
        return connects
    if not _takes_namesrv(command):
        return False
    if not _added(command):
        _wrap_command(command)
    return True
