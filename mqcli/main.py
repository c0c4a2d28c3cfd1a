"""Entry point of the `mq` command: builds the typer app from one module per subcommand."""

from __future__ import annotations

import sys

import typer

try:  # typer vendors click from 0.2x on
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover
    from click.exceptions import ClickException  # type: ignore[no-redef]

from mqcli import helpfmt, output
from mqcli.credentials import set_cli_credentials
from mqcore import __version__
from mqcore.errors import MQError

helpfmt.install()  # MSG_ID, not {msg_id}; no <bool> after a flag

app = typer.Typer(
    name="mq",
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
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
    access_key: str | None = typer.Option(
        None, "--access-key", help="ACL access key to sign requests with (env MQ_ACCESS_KEY)."
    ),
    secret_key: str | None = typer.Option(
        None, "--secret-key", help="ACL secret key (env MQ_SECRET_KEY).", show_default=False
    ),
) -> None:
    set_cli_credentials(access_key, secret_key)
    output.set_debug(debug)
    output.quiet_library_logs(debug)


PANELS = {
    "Servers": ("namesrv", "broker", "up"),
    "Messages": ("produce", "consume", "query", "message"),
    "Administration": ("topic", "group", "cluster", "kv"),
    "Tools": ("tui", "bench", "store", "context", "acl", "completion"),
}


def _register() -> None:
    # Each subcommand lives in its own module under mqcli.commands and exposes `register`;
    # the help lists them by panel, in this order.
    from mqcli.commands import (
        acl,
        bench,
        broker,
        cluster,
        completion,
        consume,
        context,
        group,
        kv,
        message,
        namesrv,
        produce,
        query,
        store,
        topic,
        tui,
        up,
    )

    for module in (namesrv, broker, up, produce, consume, query, message, topic, group,
                   cluster, kv, tui, bench, store, context, acl, completion):  # fmt: skip
        module.register(app)
    from mqcli.tls_options import add_tls_options

    add_tls_options(app)  # --tls and --tls-ca wherever -n/--namesrv is
    panel_of = {name: panel for panel, names in PANELS.items() for name in names}
    for command in app.registered_commands:
        command.rich_help_panel = panel_of.get(command.name or "", "Tools")
    for sub in app.registered_groups:
        sub.rich_help_panel = panel_of.get(str(sub.name or ""), "Tools")


_register()


def main() -> None:
    """Console-script entry: a usage mistake or an MQError becomes one line on stderr
    (plus a hint) and a non-zero exit code; `--debug` shows the traceback instead."""
    try:
        code = app(standalone_mode=False)
    except ClickException as exc:
        if not exc.format_message():  # e.g. a group run without a command: help was shown
            sys.exit(exc.exit_code)
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else "mq"
        output.fail(exc.format_message(), code=exc.exit_code, hint=f"see '{where} --help'")
    except MQError as exc:
        if output.debug_enabled():
            raise
        output.fail(str(exc))
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
