"""`mq message view|resend`: one message by id; send it again.

``view`` is mqadmin's ``queryMsgById`` (an offset msg id names its broker and commit log
offset; with ``-t`` a unique key is looked up through the index instead). ``resend`` does
one of two things. With ``--group`` it is the dashboard's "resend message" and mqadmin's
``queryMsgById -g -d``: the message's broker hands it to one consumer of the group
(CONSUME_MESSAGE_DIRECTLY), whose listener consumes it while the command waits and
answers how that went; nothing is stored again. Without, it is the dashboard's DLQ
resend: a new message with the same body, tags, keys and user properties goes to the
original topic, which RocketMQ keeps in the ``RETRY_TOPIC`` property when it moves a
message to ``%RETRY%``/``%DLQ%`` (or ``REAL_TOPIC`` for a scheduled one).
"""

from __future__ import annotations

import typer

from mqcli.commands.admin_util import check_group, complete_topic
from mqcli.commands.produce_output import Printer
from mqcli.commands.produce_spec import DEFAULT_GROUP
from mqcli.commands.query import check_output, find_message, print_messages
from mqcli.connect import NamesrvOpt, resolve_namesrv, run_async
from mqcli.credentials import client_config
from mqcli.output import console, err_console, fail, print_json
from mqcli.render import fmt_host
from mqcore.client import Admin, Producer, SendResult, make_message
from mqcore.errors import MQBrokerError, MQClientError
from mqcore.message import Message, MessageExt
from mqcore.message.const import (
    DLQ_GROUP_TOPIC_PREFIX,
    PROPERTY_REAL_TOPIC,
    PROPERTY_RETRY_TOPIC,
    RETRY_GROUP_TOPIC_PREFIX,
)
from mqcore.protocol import ResponseCode
from mqcore.protocol.bodies.running_info import ConsumeMessageDirectlyResult

message_app = typer.Typer(
    help="Look at one message; send it again (to a consumer of a group, or to its topic); "
    "recall a timer message.",
    no_args_is_help=True,
)

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
    group: str | None = typer.Option(
        None,
        "--group",
        "-g",
        help="Hand the message to a consumer of this group, whose listener consumes it now "
        "(CONSUME_MESSAGE_DIRECTLY), instead of sending a copy.",
    ),
    client: str | None = typer.Option(
        None,
        "--client",
        metavar="CLIENT_ID",
        help="With --group: this consumer (default: the first online, see `mq group clients`).",
    ),
    to: str | None = typer.Option(
        None, "--to", help="Send the copy here, not to the original topic."
    ),
    producer_group: str = typer.Option(
        DEFAULT_GROUP, "--producer-group", help="Producer group of the copy."
    ),
    as_json: bool = typer.Option(False, "--json", "-j", help="The result as JSON."),
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Send a message again: to a consumer of a group, or as a copy to its topic.

    With --group, the broker that stores the message hands it to one online consumer of
    the group; its listener runs on it at once and the command prints what it answered
    (CR_SUCCESS, CR_LATER, CR_THROW_EXCEPTION with the error, ...) and how long it took;
    the exit status is 1 unless it succeeded. Offsets do not move and nothing is stored.
    Without --group, a copy of a message (typically a dead letter) goes to its original
    topic: body, tags, keys and user properties kept, a new msg id.

    Examples:
      mq message resend 7F00000100002A9F0000000000000A1B --group billing
      mq message resend 7F00000100002A9F0000000000000A1B -g billing --client 10.0.0.7@4711
      mq query -t %DLQ%billing --from @-1d
      mq message resend C0A8011E00002A9F... -t %DLQ%billing
    """
    if group is not None:
        check_group(group)
        if to is not None:
            fail("--to sends a copy; --group hands the message to a consumer: give one")
        result = run_async(
            _consume_directly(resolve_namesrv(namesrv), msg_id, topic, group, client)
        )
        _print_direct(*result, as_json=as_json)
        return
    if client is not None:
        fail("--client picks a consumer of --group", hint="add --group GROUP")
    check_group(producer_group, "producer group")
    if to is not None and not to.strip():
        fail("--to needs a topic name")
    old, copy, sent = run_async(
        _resend(resolve_namesrv(namesrv), msg_id, topic, to, producer_group)
    )
    Printer(as_json=as_json, quiet=False).result(1, copy, sent, None)
    err_console.print(
        f"resent {old.unique_key or old.msg_id} from {old.topic} to {copy.topic}",
        highlight=False,
    )
    if not sent.ok:
        raise typer.Exit(1)


async def _consume_directly(
    namesrv: str, msg_id: str, topic: str | None, group: str, client: str | None
) -> tuple[MessageExt, str, str, ConsumeMessageDirectlyResult]:
    """Find the message, pick the consumer, have the message's broker hand it over."""
    async with Admin(namesrv, client_config=client_config()) as admin:
        msg = await find_message(admin, msg_id, topic)
        if client is None:
            try:
                members = [
                    c.client_id for c in (await admin.consumer_connections(group)).connection_set
                ]
            except MQBrokerError as exc:
                if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
                    raise
                members = []
            if not members:
                fail(
                    f"group {group} has no consumer online to hand the message to",
                    hint="start a consumer of the group, or resend a copy without --group",
                )
            client = sorted(members)[0]
        addr = fmt_host(msg.store_host)
        try:
            answer = await admin.consume_message_directly(addr, group, client, msg.msg_id)
        except MQBrokerError as exc:
            if "not online" not in exc.remark:
                raise
            fail(
                f"consumer {client} of group {group} is not online",
                hint=f"`mq group clients {group}` lists the members",
            )
    return msg, group, client, ConsumeMessageDirectlyResult.from_json(answer)


def _print_direct(
    msg: MessageExt,
    group: str,
    client: str,
    result: ConsumeMessageDirectlyResult,
    *,
    as_json: bool,
) -> None:
    if as_json:
        doc = {"msgId": msg.msg_id, "topic": msg.topic, "group": group, "clientId": client}
        print_json({**doc, **result.to_json()})
    else:
        line = (
            f"{result.consume_result}  {msg.msg_id} consumed by {client} (group {group}) "
            f"in {result.spent_time_mills} ms"
        )
        console.print(line, highlight=False, markup=False, style=None if result.ok else "red")
        if result.remark:
            console.print(f"remark: {result.remark}", highlight=False, markup=False)
    if not result.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(message_app, name="message")
    from mqcli.commands.message_recall import add_recall_command
    from mqcli.commands.message_trace import add_trace_command

    add_trace_command(message_app)
    add_recall_command(message_app)
