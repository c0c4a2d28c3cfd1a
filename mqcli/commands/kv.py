"""`mq kv set|get|delete|list`: the name servers' KV config (mqadmin updateKvConfig,
deleteKvConfig, updateOrderConf): values by namespace and key, e.g. namespace
ORDER_TOPIC_CONFIG holds the ordered-topic configs routes carry.
"""

from __future__ import annotations

import typer
from rich.markup import escape

from mqcli.commands.admin_util import JsonOpt, YesOpt, admin_session, confirm
from mqcli.connect import NamesrvOpt, run_async
from mqcli.output import console, fail, print_json
from mqcli.tables import FormatOpt, make_table, print_table, resolve_format

__all__ = ["register"]

kv_app = typer.Typer(
    help="The name servers' KV config (namespace, key, value).", no_args_is_help=True
)

NamespaceArg = typer.Argument(..., metavar="NAMESPACE", help="e.g. ORDER_TOPIC_CONFIG.")
KeyArg = typer.Argument(..., metavar="KEY")


@kv_app.command("set")
def set_value(
    namespace: str = NamespaceArg,
    key: str = KeyArg,
    value: str = typer.Argument(..., metavar="VALUE"),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Create or update a value on every name server (mqadmin updateKvConfig).

    Examples:
      mq kv set ORDER_TOPIC_CONFIG Orders broker-a:4
    """

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            await admin.put_kv_config(namespace, key, value)

    run_async(go())
    console.print(f"set {escape(namespace)} {escape(key)} = {escape(value)}")


@kv_app.command("get")
def get_value(
    namespace: str = NamespaceArg,
    key: str = KeyArg,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """One value (exit code 1 when no name server has it).

    Examples:
      mq kv get ORDER_TOPIC_CONFIG Orders
    """

    async def go() -> str | None:
        async with admin_session(namesrv) as admin:
            return await admin.get_kv_config(namespace, key)

    value = run_async(go())
    if value is None:
        fail(f"no value for {namespace} {key}", hint=f"`mq kv list {namespace}` shows the keys")
    if as_json:
        print_json({"namespace": namespace, "key": key, "value": value})
    else:
        typer.echo(value)


@kv_app.command("delete")
def delete_value(
    namespace: str = NamespaceArg,
    key: str = KeyArg,
    yes: bool = YesOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Delete a value on every name server (mqadmin deleteKvConfig).

    Examples:
      mq kv delete ORDER_TOPIC_CONFIG Orders
    """
    if not yes and not confirm(f"Delete {namespace} {key}?"):
        fail("nothing done")

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            await admin.delete_kv_config(namespace, key)

    run_async(go())
    console.print(f"deleted {escape(namespace)} {escape(key)}")


@kv_app.command("list")
def list_values(
    namespace: str = NamespaceArg,
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Every key and value of a namespace.

    Examples:
      mq kv list ORDER_TOPIC_CONFIG
      mq kv list ORDER_TOPIC_CONFIG -o json
    """
    fmt = resolve_format(fmt, as_json)

    async def go() -> dict[str, str]:
        async with admin_session(namesrv) as admin:
            return await admin.kv_list(namespace)

    table = run_async(go())
    if fmt == "json":
        print_json(dict(sorted(table.items())))
        return
    out = make_table(f"KV config {escape(namespace)}", "KEY", "VALUE", count=len(table))
    for key, value in sorted(table.items()):
        out.add_row(escape(key), escape(value))
    print_table(out, fmt)


def register(app: typer.Typer) -> None:
    app.add_typer(kv_app, name="kv")
