"""Entry point of the `mq` command: builds the typer app from one module per subcommand."""

from __future__ import annotations

import sys

import typer

from mqcli import output
from mqcore import __version__
from mqcore.errors import MQError

app = typer.Typer(
    name="mq",
    help="A RocketMQ 4.x-shaped messaging system and terminal toolkit.",
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
) -> None:
    output.set_debug(debug)


def _register() -> None:
    # Each subcommand lives in its own module under mqcli.commands and exposes `register`.
    from mqcli.commands import broker, completion, context, namesrv, store, up

    store.register(app)
    namesrv.register(app)
    broker.register(app)
    up.register(app)
    context.register(app)
    completion.register(app)

    from mqcli.commands import consume, message, produce, query

    produce.register(app)
    consume.register(app)
    query.register(app)
    message.register(app)

    from mqcli.commands import cluster, group, topic

    topic.register(app)
    group.register(app)
    cluster.register(app)

    from mqcli.commands import tui

    tui.register(app)


_register()


def main() -> None:
    """Console-script entry: MQError becomes one line on stderr and exit code 1."""
    try:
        app()
    except MQError as exc:
        if output.debug_enabled():
            raise
        output.fail(str(exc))
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
