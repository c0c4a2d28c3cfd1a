"""`mq message recall HANDLE -t TOPIC`: take a timer message back before its time.

RocketMQ 5's recall: the handle is what the send of a timer message answered
(``recallHandle`` in `mq produce --json`); the broker that parked the message puts a
delete marker into its slot, and the message is never delivered. Brokers serve it only
with ``recallMessageEnable=true`` (RocketMQ 5's default is false).
"""

from __future__ import annotations

import typer

from mqcli.commands.admin_util import check_group, complete_topic
from mqcli.commands.produce_spec import DEFAULT_GROUP
from mqcli.connect import NamesrvOpt, resolve_namesrv, run_async
from mqcli.credentials import client_config
from mqcli.output import console, print_json
from mqcore.client import Admin
from mqcore.client.recall import recall_message

__all__ = ["add_recall_command"]


async def _recall(namesrv: str, topic: str, handle: str, group: str) -> str:
    async with Admin(namesrv, client_config=client_config()) as admin:
        return await recall_message(admin, topic, handle, producer_group=group)


def recall(
    handle: str = typer.Argument(..., help="The recallHandle a timer message's send answered."),
    topic: str = typer.Option(
        ..., "--topic", "-t", help="The message's topic.", autocompletion=complete_topic
    ),
    group: str = typer.Option(DEFAULT_GROUP, "--group", "-g", help="Producer group."),
    as_json: bool = typer.Option(False, "--json", "-j", help="One JSON object."),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Recall a timer message (RocketMQ 5): it will not be delivered.

    HANDLE is the recallHandle of the send (mq produce --deliver-at/--delay-for --json
    prints it). The broker must run with recallMessageEnable=true; a message whose time
    has come can no longer be recalled.

    Examples:
      mq produce -t Orders --body later --delay-for 10m --json | jq -r .recallHandle
      mq message recall djEgT3JkZXJzIGJyb2tlci1h... -t Orders
    """
    check_group(group, "producer group")
    msg_id = run_async(_recall(resolve_namesrv(namesrv), topic, handle, group))
    if as_json:
        print_json({"topic": topic, "msgId": msg_id, "recalled": True})
    else:
        console.print(f"recalled {msg_id} from {topic}", highlight=False, markup=False)


def add_recall_command(app: typer.Typer) -> None:
    app.command("recall")(recall)
