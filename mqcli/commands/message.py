"""`mq message view|resend`: one message by id; send a dead letter back to its topic.

``view`` is mqadmin's ``queryMsgById`` (an offset msg id names its broker and commit log
offset; with ``-t`` a unique key is looked up through the index instead). ``resend`` is
the dashboard's DLQ "resend": a new message with the same body, tags, keys and user
properties goes to the original topic, which RocketMQ keeps in the ``RETRY_TOPIC``
property when it moves a message to ``%RETRY%``/``%DLQ%`` (or ``REAL_TOPIC`` for a
scheduled one).
"""

from __future__ import annotations

import typer

from mqcli.commands.admin_util import check_group, complete_topic
from mqcli.commands.produce_output import Printer
from mqcli.commands.produce_spec import DEFAULT_GROUP
from mqcli.commands.query import check_output, find_message, print_messages
from mqcli.connect import NamesrvOpt, resolve_namesrv, run_async
from mqcli.credentials import client_config
from mqcli.output import err_console, fail
from mqcore.client import Admin, Producer, SendResult, make_message
from mqcore.errors import MQClientError
from mqcore.message import Message, MessageExt
from mqcore.message.const import (
    DLQ_GROUP_TOPIC_PREFIX,
    PROPERTY_REAL_TOPIC,
    PROPERTY_RETRY_TOPIC,
    RETRY_GROUP_TOPIC_PREFIX,
)

message_app = typer.Typer(help="Look at one message; resend a dead letter.", no_args_is_help=True)

TopicOpt = typer.Option(
    None,
    "--topic",
    "-t",
    help="Topic to look a unique key up in (e.g. %DLQ%group).",
    autocompletion=complete_topic,
)


async def _find(
    namesrv: str, msg_id: str, topic: str | None
) -> tuple[MessageExt, dict[str, dict[int, str]]]:
    async with Admin(namesrv, client_config=client_config()) as admin:
        msg = await find_message(admin, msg_id, topic)
        return msg, admin.broker_addrs()


@message_app.command("view")
def view(
    msg_id: str = typer.Argument(..., help="Offset msg id, or a unique key with -t."),
    topic: str | None = TopicOpt,
    fmt: str = typer.Option(
        "detail", "--format", "-o", metavar="FORMAT", help="detail | table | wide | json."
    ),
    as_json: bool = typer.Option(False, "--json", "-j", help="Same as --format json."),
    charset: str = typer.Option("utf-8", "--charset", help="Decode the body with this charset."),
    track: bool | None = typer.Option(
        None,
        "--track/--no-track",
        help="Show the track per consumer group (default: yes; with --json only when asked, "
        "as messageTrack).",
        show_default=False,
    ),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Show every field, property and the body of one message, then its track per
    consumer group (CONSUMED, NOT_CONSUME_YET, NOT_ONLINE, ... as mqadmin queryMsgById).

    Examples:
      mq message view 7F00000100002A9F0000000000000A1B
      mq message view AC110001B2F018B4AAC27A6B38520000 -t Orders
      mq message view 7F00000100002A9F0000000000000A1B --json | jq .properties
      mq message view 7F00000100002A9F0000000000000A1B --json --track | jq .messageTrack
    """
    if as_json:
        fmt = "json"
    tmpl = check_output(fmt, as_json, charset, None)
    from mqcli.commands.message_trace import print_tracks, print_view_json, view_tracks

    addr = resolve_namesrv(namesrv)
    msg, brokers = run_async(_find(addr, msg_id, topic))
    if track is None:
        track = fmt != "json"
    tracks = run_async(view_tracks(addr, msg)) if track else None
    if fmt == "json":
        print_view_json(msg, brokers, tracks, charset)
        return
    print_messages([msg], brokers, fmt=fmt, charset=charset, template=tmpl)
    if tracks is not None:
        print_tracks(msg, tracks, fmt)


def original_topic(msg: MessageExt) -> str | None:
    """Where a retry/dead/scheduled message came from (None if it cannot be told)."""
    if not msg.topic.startswith((DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX)):
        return msg.properties.get(PROPERTY_REAL_TOPIC) or msg.topic
    return msg.properties.get(PROPERTY_RETRY_TOPIC) or msg.properties.get(PROPERTY_REAL_TOPIC)


def copy_for_resend(msg: MessageExt, topic: str) -> Message:
    return make_message(
        topic, msg.body, tags=msg.tags, keys=msg.keys, properties=msg.user_properties
    )


async def _resend(
    namesrv: str, msg_id: str, topic: str | None, target: str | None, group: str
) -> tuple[MessageExt, Message, SendResult]:
    async with Admin(namesrv, client_config=client_config()) as admin:
        msg = await find_message(admin, msg_id, topic)
    dest = target or original_topic(msg)
    if dest is None:
        raise MQClientError(
            f"cannot tell the original topic of {msg_id} (in {msg.topic}, no RETRY_TOPIC"
            " property): pass --to TOPIC"
        )
    copy = copy_for_resend(msg, dest)
    async with Producer(group, namesrv, client_config=client_config()) as producer:
        result = await producer.send(copy)
    return msg, copy, result


@message_app.command("resend")
def resend(
    msg_id: str = typer.Argument(..., help="Offset msg id, or a unique key with -t."),
    topic: str | None = TopicOpt,
    to: str | None = typer.Option(None, "--to", help="Send here instead of the original topic."),
    group: str = typer.Option(DEFAULT_GROUP, "--group", "-g", help="Producer group."),
    as_json: bool = typer.Option(False, "--json", "-j", help="The send result as JSON."),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Send a copy of a message (typically a dead letter) to its original topic.

    Body, tags, keys and user properties are kept; the copy gets a new msg id.

    Examples:
      mq query -t %DLQ%billing --from @-1d
      mq message resend C0A8011E00002A9F... -t %DLQ%billing
    """
    check_group(group, "producer group")
    if to is not None and not to.strip():
        fail("--to needs a topic name")
    old, copy, result = run_async(_resend(resolve_namesrv(namesrv), msg_id, topic, to, group))
    Printer(as_json=as_json, quiet=False).result(1, copy, result, None)
    err_console.print(
        f"resent {old.unique_key or old.msg_id} from {old.topic} to {copy.topic}",
        highlight=False,
    )
    if not result.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(message_app, name="message")
    from mqcli.commands.message_trace import add_trace_command

    add_trace_command(message_app)
