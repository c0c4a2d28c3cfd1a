"""`mq group clone-offsets SRC DEST`: give a group another group's offsets (mqadmin
cloneGroupOffset), e.g. before moving consumers to a new group name."""

from __future__ import annotations

import typer
from rich.markup import escape

from mqcli.commands.admin_util import admin_session, check_group, complete_group, topic_option
from mqcli.connect import NamesrvOpt, run_async
from mqcli.output import console

__all__ = ["register"]


def clone_offsets(
    src: str = typer.Argument(
        ..., metavar="SRC", help="Group whose offsets are copied.", autocompletion=complete_group
    ),
    dest: str = typer.Argument(..., metavar="DEST", help="Group that gets them."),
    topic: str | None = topic_option(False, "Only this topic (default: every topic of SRC)."),
    offline: bool = typer.Option(
        False,
        "--offline",
        help="Also topics an online SRC no longer subscribes to (mqadmin -o).",
    ),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Copy SRC's committed offsets to DEST on every master (CLONE_GROUP_OFFSET). DEST's
    offsets of those topics are replaced; its consumers online keep their own until they
    restart.

    Examples:
      mq group clone-offsets billing billing-v2
      mq group clone-offsets billing billing-v2 -t Orders
    """
    check_group(src)
    check_group(dest)

    async def go() -> list[str]:
        async with admin_session(namesrv) as admin:
            return await admin.clone_group_offset(src, dest, topic, offline=offline)

    addrs = run_async(go())
    where = f"topic {escape(topic)}" if topic else "every topic"
    console.print(
        f"cloned offsets of {escape(src)} to {escape(dest)} ({where}) on {len(addrs)} broker(s)"
    )


def register(group_app: typer.Typer) -> None:
    group_app.command("clone-offsets")(clone_offsets)
