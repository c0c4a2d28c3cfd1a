"""`mq broker wipe-write-perm|add-write-perm NAME`: take a broker out of the send routes
and put it back (mqadmin wipeWritePerm / addWritePerm), on every name server.

The usual maintenance: wipe the write permission, wait until `mq broker consume-stats`
shows the groups caught up, stop the broker. The broker's next registration (every 30 s,
or its restart) brings its own permission back, as in RocketMQ 4.9.8.
"""

from __future__ import annotations

import typer
from rich.markup import escape

from mqcli.commands.admin_util import YesOpt, admin_session, confirm
from mqcli.connect import NamesrvOpt, run_async
from mqcli.output import console, fail

__all__ = ["register"]

BrokerNameArg = typer.Argument(..., metavar="BROKER_NAME", help="Broker name (brokerName).")


def _report(verb: str, broker_name: str, counts: dict[str, int]) -> None:
    for addr, count in sorted(counts.items()):
        console.print(
            f"{verb} write perm of broker {escape(broker_name)} on name server {addr}: "
            f"{count} topic(s)"
        )
    if not any(counts.values()):
        fail(
            f"no name server knows a broker named {broker_name}",
            hint="`mq cluster list` shows the broker names",
        )


def wipe_write_perm(
    broker_name: str = BrokerNameArg,
    yes: bool = YesOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Stop sends to a broker: its topics lose the write bit in every name server's
    routes, so producers pick other brokers while consumers drain this one.

    Examples:
      mq broker wipe-write-perm broker-a
      mq broker wipe-write-perm broker-a -y
    """
    if not yes and not confirm(f"Stop sends to broker {broker_name}?"):
        fail("nothing done")

    async def go() -> dict[str, int]:
        async with admin_session(namesrv) as admin:
            return await admin.wipe_write_perm(broker_name)

    _report("wiped", broker_name, run_async(go()))


def add_write_perm(
    broker_name: str = BrokerNameArg,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Give a broker back its write permission in every name server's routes.

    Examples:
      mq broker add-write-perm broker-a
    """

    async def go() -> dict[str, int]:
        async with admin_session(namesrv) as admin:
            return await admin.add_write_perm(broker_name)

    _report("added", broker_name, run_async(go()))


def register(broker_app: typer.Typer) -> None:
    broker_app.command("wipe-write-perm")(wipe_write_perm)
    broker_app.command("add-write-perm")(add_write_perm)
