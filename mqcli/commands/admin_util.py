"""What the admin commands (`mq topic|group|cluster|broker status`) share: the options,
an :class:`Admin` per command, the ``--watch`` loop, time arguments, and shell
completion of topic and group names asked of the name server."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from mqcli.connect import resolve_namesrv
from mqcli.credentials import client_config
from mqcli.output import console, err_console, fail

if TYPE_CHECKING:  # the admin client loads when a command uses it, not to build the CLI
    from mqcore.client import Admin
    from mqcore.protocol.bodies import ConsumerConnection

JsonOpt = typer.Option(False, "--json", "-j", help="JSON output (one document per sample).")
WatchOpt = typer.Option(
    None,
    "--watch",
    min=0.2,
    metavar="SECONDS",
    help="Refresh every SECONDS until Ctrl-C (like mqadmin clusterList -i).",
)
YesOpt = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")
BrokerNameOpt = typer.Option(None, "--name", "-b", help="Broker name (brokerName).")
MastersOfClusterOpt = typer.Option(
    None, "--cluster", "-c", help="Only the masters of this cluster."
)

# Topics and groups the system owns; list commands hide them unless asked.
SYSTEM_TOPIC_PREFIXES = ("RMQ_SYS_", "rmq_sys_", "SCHEDULE_TOPIC_XXXX", "TBW102", "BenchmarkTest")
SYSTEM_TOPICS = frozenset({"OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC"})
SYSTEM_GROUPS = frozenset(
    {
        "TOOLS_CONSUMER",
        "FILTERSRV_CONSUMER",
        "__MONITOR_CONSUMER",
        "CLIENT_INNER_PRODUCER",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
        "CID_RMQ_SYS_TRANS",
    }
)
TOOLS_GROUP = "TOOLS_CONSUMER"  # RocketMQ's MixAll.TOOLS_CONSUMER_GROUP, for admin pulls


_GROUP_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")
GROUP_NAME_MAX = 255


def check_group(name: str, what: str = "group") -> str:
    """``name`` if it is a valid group name (RocketMQ's rule: ``^[%|a-zA-Z0-9_-]+$``,
    at most 255 characters); otherwise one error line and exit."""
    if not _GROUP_NAME.match(name):
        fail(
            f"bad {what} name {name!r}: only letters, digits, %, |, _ and - are allowed",
            hint="e.g. order-service_v2",
        )
    if len(name) > GROUP_NAME_MAX:
        fail(f"bad {what} name: {len(name)} characters, at most {GROUP_NAME_MAX} are allowed")
    return name


@asynccontextmanager
async def admin_session(namesrv: str | None, timeout: float = 5.0) -> AsyncIterator[Admin]:
    """An :class:`Admin` on the resolved name server(s) for one command."""
    from mqcore.client import Admin

    async with Admin(
        namesrv=resolve_namesrv(namesrv), timeout=timeout, client_config=client_config()
    ) as admin:
        yield admin


async def broker_targets(
    admin: Admin,
    addr: str | None,
    name: str | None,
    cluster: str | None,
    *,
    addr_label: str = "BROKER_ADDR",
) -> dict[str, str]:
    """The brokers a broker-level command acts on, as broker name (or the address given)
    -> address: one address, one broker by name, a cluster's masters, or every master."""
    if sum(x is not None for x in (addr, name, cluster)) > 1:
        raise typer.BadParameter(f"give one of {addr_label}, --name and --cluster")
    if addr is not None:
        return {addr: addr}
    return await admin.masters_of(cluster=cluster, broker_name=name)


async def watch(
    interval: float | None, sample: Callable[[int], Awaitable[None]], *, as_json: bool = False
) -> None:
    """Run ``sample(0)`` once, or every ``interval`` seconds until Ctrl-C (clearing the
    screen on a terminal, a time line before each table); ``sample`` gets the round."""
    if interval is None:
        await sample(0)
        return
    round_no = 0
    while True:
        started = time.monotonic()
        if not as_json:
            if console.is_terminal:
                console.clear()
            console.print(
                f"[dim]{datetime.now():%H:%M:%S} · every {interval:g}s · Ctrl-C to stop[/]"
            )
        await sample(round_no)
        round_no += 1
        await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))


def confirm(question: str) -> bool:
    """Ask on the terminal (or read y/n from stdin); end of input counts as no."""
    try:
        return typer.confirm(question, default=False, err=True)
    except (typer.Abort, EOFError):
        err_console.print("")
        return False


_DURATION = re.compile(r"^@?([+-])?(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _names(ctx: typer.Context, fetch: Callable[[Admin], Awaitable[list[str]]]) -> list[str]:
    """Ask the name server with a short timeout; any failure completes nothing."""
    params = ctx.params if ctx is not None else {}
    namesrv = params.get("namesrv")

    async def go() -> list[str]:
        async with admin_session(namesrv if isinstance(namesrv, str) else None, 1.0) as admin:
            return await asyncio.wait_for(fetch(admin), 1.5)

    try:
        return asyncio.run(go())
    except BaseException:  # completion must never print a traceback into the shell
        return []


def complete_topic(ctx: typer.Context, incomplete: str) -> list[str]:
    async def fetch(admin: Admin) -> list[str]:
        return sorted(await admin.topic_list())

    names = [t for t in _names(ctx, fetch) if t.startswith(incomplete)]
    # System topics only when the user has started typing one.
    return names if incomplete else [t for t in names if topic_kind(t) != "system"]


def complete_group(ctx: typer.Context, incomplete: str) -> list[str]:
    async def fetch(admin: Admin) -> list[str]:
        return sorted(await admin.subscription_groups())

    names = [g for g in _names(ctx, fetch) if g.startswith(incomplete)]
    return names if incomplete else [g for g in names if g not in SYSTEM_GROUPS]


def topic_option(required: bool = True, help_text: str = "Topic name.") -> Any:
    """``-t/--topic`` with completion of topic names."""
    return typer.Option(
        ... if required else None,
        "--topic",
        "-t",
        help=help_text,
        autocompletion=complete_topic,
    )


def group_option(required: bool = True, help_text: str = "Consumer group.") -> Any:
    """``-g/--group`` with completion of group names."""
    return typer.Option(
        ... if required else None,
        "--group",
        "-g",
        help=help_text,
        autocompletion=complete_group,
    )


GroupArg = typer.Argument(
    None,
    metavar="GROUP",
    help="Consumer group (or -g).",
    autocompletion=complete_group,
    show_default=False,
)
"""A group command's GROUP, which may be given as ``-g`` instead (see resolve_group)."""


def resolve_group(positional: str | None, option: str | None) -> str:
    """The group of ``GROUP`` or ``-g GROUP`` (the same one if both are given)."""
    if positional and option and positional != option:
        raise typer.BadParameter(f"two groups given: {positional!r} and -g {option!r}")
    group = positional or option
    if not group:
        raise typer.BadParameter("give the consumer group as GROUP or -g GROUP")
    return check_group(group)


def topic_kind(topic: str, cluster_and_broker_names: frozenset[str] = frozenset()) -> str:
    """normal, retry, dlq or system (RocketMQ's TopicValidator system set: RMQ_SYS_*,
    SCHEDULE_TOPIC_XXXX, TBW102, ..., ``<cluster>_REPLY_TOPIC`` and the cluster and broker
    names the name server lists as topics)."""
    if topic.startswith("%RETRY%"):
        return "retry"
    if topic.startswith("%DLQ%"):
        return "dlq"
    if (
        topic.startswith(SYSTEM_TOPIC_PREFIXES)
        or topic in SYSTEM_TOPICS
        or topic.endswith("_REPLY_TOPIC")
        or topic in cluster_and_broker_names
    ):
        return "system"
    return "normal"


async def online_connections(admin: Admin, group: str) -> ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST of ``group``; a group with no consumer online ends
    the command with one line and a hint."""
    from mqcore.errors import MQBrokerError
    from mqcore.protocol import ResponseCode

    try:
        return await admin.consumer_connections(group)
    except MQBrokerError as exc:
        if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
            raise
        fail(
            f"group {group} has no consumer online",
            hint="`mq group list` shows the known groups; start a consumer first",
        )
