"""`mq context add|use|ls|rm`: named name-server addresses, like natscli's contexts."""

from __future__ import annotations

import typer

from mqcli.connect import Context, ContextStore, contexts_path, resolve_namesrv
from mqcli.output import console, fail, print_json
from mqcli.tables import FormatOpt, make_table, note, print_table, resolve_format

context_app = typer.Typer(
    help="Save name server addresses under names and pick one.", no_args_is_help=True
)


@context_app.command("add")
def add(
    name: str = typer.Argument(..., help="Context name."),
    namesrv: str = typer.Option(..., "--namesrv", "-n", help="host:port[;host:port...]"),
    description: str = typer.Option("", "--description", "-d"),
    select: bool = typer.Option(False, "--select", help="Make it the current context."),
    access_key: str = typer.Option("", "--access-key", help="ACL access key to sign with."),
    secret_key: str = typer.Option("", "--secret-key", help="ACL secret key to sign with."),
) -> None:
    """Save a context (replacing one of the same name).

    Examples:
      mq context add prod -n 10.0.0.1:9876;10.0.0.2:9876 -d "production" --select
      mq context add local -n 127.0.0.1:9876
    """
    if not all(":" in part for part in namesrv.split(";") if part):
        fail(f"bad name server list {namesrv!r}", hint="use host:port, several joined by ';'")
    if bool(access_key) != bool(secret_key):
        fail("give both --access-key and --secret-key, or neither")
    store = ContextStore.load()
    store.contexts[name] = Context(name, namesrv, description, access_key, secret_key)
    if select or store.current is None:
        store.current = name
    store.save()
    console.print(
        f"saved context [bold]{name}[/] -> {namesrv}"
        + (" (current)" if store.current == name else "")
    )


@context_app.command("use")
def use(name: str = typer.Argument(..., help="Context to select.")) -> None:
    """Select the context used when -n and the environment give no address.

    Examples:
      mq context use prod
    """
    store = ContextStore.load()
    if name not in store.contexts:
        fail(f"no context named {name!r}", hint="`mq context ls` lists them")
    store.current = name
    store.save()
    console.print(f"using context [bold]{name}[/] -> {store.contexts[name].namesrv}")


@context_app.command("ls")
def ls(
    fmt: str | None = FormatOpt,
    as_json: bool = typer.Option(False, "--json", "-j", help="JSON output."),
) -> None:
    """List contexts; the current one is marked.

    Examples:
      mq context ls
      mq context ls --json
    """
    fmt = resolve_format(fmt, as_json)
    store = ContextStore.load()
    if fmt == "json":
        print_json(
            {
                "current": store.current,
                "effective": resolve_namesrv(None),
                "contexts": [
                    {
                        "name": c.name,
                        "namesrv": c.namesrv,
                        "description": c.description,
                        "accessKey": c.access_key or None,
                    }
                    for c in store.contexts.values()
                ],
            }
        )
        return
    table = make_table(
        f"Contexts ({contexts_path()})",
        "CURRENT",
        "NAME",
        "NAMESRV",
        "DESCRIPTION",
        count=len(store.contexts),
    )
    for c in sorted(store.contexts.values(), key=lambda c: c.name):
        table.add_row("*" if c.name == store.current else "-", c.name, c.namesrv, c.description)
    print_table(table, fmt)
    note(f"effective name server: {resolve_namesrv(None)}")


@context_app.command("rm")
def rm(name: str = typer.Argument(..., help="Context to delete.")) -> None:
    """Delete a context.

    Examples:
      mq context rm staging
    """
    store = ContextStore.load()
    if store.contexts.pop(name, None) is None:
        fail(f"no context named {name!r}")
    if store.current == name:
        store.current = None
    store.save()
    console.print(f"deleted context {name}")


def register(app: typer.Typer) -> None:
    app.add_typer(context_app, name="context")
