"""`mq acl list|check|update|delete|trust|version`: the plain ACL of RocketMQ 4.x.

``list`` and ``check`` are offline: they read a plain_acl.yml as a broker with
``aclEnable=true`` would, with the broker's own decision code (mqcore.acl), so the answer
is the broker's answer. ``update``, ``delete``, ``trust`` and ``version`` change or read
the ACL file of running brokers (mqadmin's updateAclConfig, deleteAclConfig,
updateGlobalWhiteAddr and clusterAclConfigVersion): one broker (``BROKER_ADDR`` or
``-b NAME``), the masters of a cluster (``-c``), or every master. They need an admin
account (``mq --access-key ... --secret-key ...``) unless the address is trusted.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.markup import escape

from mqcli.commands.admin_util import (
    BrokerNameOpt,
    JsonOpt,
    MastersOfClusterOpt,
    admin_session,
    broker_targets,
)
from mqcli.connect import NamesrvOpt, run_async
from mqcli.output import console, fail, print_json
from mqcli.tables import FormatOpt, make_table, note, print_table, resolve_format
from mqcore.acl import Perm, check_resources, load_acl_file
from mqcore.acl.config import Account, PlainAclConfig
from mqcore.acl.permission import format_perm
from mqcore.acl.updates import AccountUpdate, check_resource_perms
from mqcore.errors import ConfigError
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX
from mqcore.protocol import RequestCode

acl_app = typer.Typer(
    help="Inspect a plain_acl.yml, or change the ACL of running brokers (RocketMQ 4.x plain ACL).",
    no_args_is_help=True,
)

FileArg = typer.Argument(
    None,
    help="The ACL file (default: $ROCKETMQ_HOME/conf/plain_acl.yml).",
    show_default=False,
)


def _load(path: Path | None) -> PlainAclConfig:
    if path is None:
        home = os.environ.get("ROCKETMQ_HOME")
        if not home:
            fail("no ACL file given", hint="pass FILE or set ROCKETMQ_HOME")
        path = Path(home) / "conf" / "plain_acl.yml"
    if not path.is_file():
        fail(f"no such file: {path}")
    try:
        return load_acl_file(path)
    except ConfigError as exc:
        fail(str(exc))


def _mask(secret: str) -> str:
    return secret[:2] + "*" * 6


def _perms(perms: dict[str, Perm]) -> list[str]:
    return [f"{name}={format_perm(perm)}" for name, perm in sorted(perms.items())]


def _account_doc(a: Account) -> dict[str, object]:
    return {
        "accessKey": a.access_key,
        "secretKey": _mask(a.secret_key),
        "whiteRemoteAddress": a.white_remote_address.text or None,
        "admin": a.admin,
        "defaultTopicPerm": format_perm(a.default_topic_perm),
        "defaultGroupPerm": format_perm(a.default_group_perm),
        "topicPerms": _perms(a.topic_perms),
        "groupPerms": _perms(a.group_perms),
    }


@acl_app.command("list")
def list_accounts(
    path: Path | None = FileArg,
    fmt: str | None = FormatOpt,
    as_json: bool = typer.Option(False, "--json", "-j", help="JSON output."),
) -> None:
    """List the accounts (secrets masked) and the trusted addresses.

    Examples:
      mq acl list
      mq acl list /opt/rocketmq/conf/plain_acl.yml -o wide
      mq acl list --json | jq '.accounts[].accessKey'
    """
    fmt = resolve_format(fmt, as_json)
    config = _load(path)
    white = [p.text for p in config.global_white_addresses]
    docs = [_account_doc(a) for a in config.accounts.values()]
    if fmt == "json":
        print_json({"file": config.source, "globalWhiteRemoteAddresses": white, "accounts": docs})
        return
    table = make_table(
        f"ACL accounts ({config.source})",
        "ACCESS-KEY", "SECRET", "ADMIN", "WHITE-ADDRESS", "TOPIC-DEFAULT", "GROUP-DEFAULT",
        "TOPICS", "GROUPS",
        count=len(docs),
    )  # fmt: skip
    for d in docs:
        table.add_row(
            str(d["accessKey"]),
            str(d["secretKey"]),
            "yes" if d["admin"] else "no",
            str(d["whiteRemoteAddress"] or "-"),
            str(d["defaultTopicPerm"]),
            str(d["defaultGroupPerm"]),
            " ".join(d["topicPerms"]),  # type: ignore[arg-type]
            " ".join(d["groupPerms"]) or "-",  # type: ignore[arg-type]
        )
    print_table(table, fmt)
    note(f"trusted addresses (no key needed): {', '.join(white) or 'none'}")


@acl_app.command("check")
def check(
    path: Path | None = FileArg,
    access_key: str = typer.Option(..., "--access-key", help="The account to check."),
    topic: str | None = typer.Option(None, "--topic", "-t", help="A topic to use."),
    op: str = typer.Option("PUB", "--op", help="What to do with the topic: PUB or SUB."),
    group: str | None = typer.Option(None, "--group", "-g", help="A consumer group (SUB)."),
    admin: bool = typer.Option(False, "--admin", help="Also ask for admin requests."),
    as_json: bool = typer.Option(False, "--json", "-j", help="JSON output."),
) -> None:
    """Whether a signed request of this key may publish to or subscribe to a topic, use a
    group, or send admin requests. Exit code 1 when refused.

    Examples:
      mq acl check --access-key RocketMQ -t Orders --op PUB
      mq acl check conf/plain_acl.yml --access-key rocketmq2 -g billing --admin
    """
    config = _load(path)
    account = config.accounts.get(access_key)
    op = op.upper()
    if op not in ("PUB", "SUB"):
        fail(f"--op must be PUB or SUB, not {op!r}")
    if topic is None and group is None and not admin:
        fail("nothing to check", hint="give --topic, --group or --admin")
    needs: dict[str, Perm] = {}
    if topic:
        needs[topic] = Perm[op]
    if group:
        needs[RETRY_GROUP_TOPIC_PREFIX + group] = Perm.SUB
    if account is None:
        reason: str | None = f"no ACL config for accessKey={access_key}"
    else:
        code = RequestCode.UPDATE_AND_CREATE_TOPIC if admin else RequestCode.PULL_MESSAGE
        denied = check_resources(account, code, needs)
        reason = None if denied is None else denied.reason
    if as_json:
        print_json({"accessKey": access_key, "allowed": reason is None, "reason": reason})
    elif reason is None:
        console.print(f"[green]allowed[/]: {access_key}")
    else:
        console.print(f"[red]refused[/]: {reason}")
    if reason is not None:
        raise typer.Exit(1)


# -- remote: the ACL files of running brokers -------------------------------------------------

BrokerAddrArg = typer.Option(
    None, "--broker-addr", metavar="HOST:PORT", help="One broker (default: every master)."
)
NameOpt = BrokerNameOpt
ClusterOpt = MastersOfClusterOpt
_PERMS = "DENY, PUB, SUB or PUB|SUB"


def _done(what: str, targets: dict[str, str]) -> None:
    console.print(f"{what} on {len(targets)} broker(s): {escape(', '.join(sorted(targets)))}")


@acl_app.command("update")
def update(
    access_key: str = typer.Argument(..., metavar="ACCESS_KEY", help="The account."),
    secret_key: str | None = typer.Option(None, "--secret", help="Its secret key (new: needed)."),
    white_address: str | None = typer.Option(
        None, "--white-address", metavar="PATTERN", help="Requests from here need no signature."
    ),
    admin_flag: bool | None = typer.Option(
        None,
        "--admin/--no-admin",
        help="May send admin requests (default: unchanged).",
        show_default=False,
    ),
    topic_default: str | None = typer.Option(None, "--topic-default", help=_PERMS),
    group_default: str | None = typer.Option(None, "--group-default", help=_PERMS),
    topic_perm: list[str] | None = typer.Option(
        None, "--topic-perm", metavar="TOPIC=PERM", help="Replaces the topic list (repeat)."
    ),
    group_perm: list[str] | None = typer.Option(
        None, "--group-perm", metavar="GROUP=PERM", help="Replaces the group list (repeat)."
    ),
    broker_addr: str | None = BrokerAddrArg,
    name: str | None = NameOpt,
    cluster: str | None = ClusterOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Create an account, or change the fields given, in the brokers' ACL files.

    The change applies at once; fields not given keep their values.

    Examples:
      mq acl update appKey01 --secret appSecret1 --topic-perm orders=PUB
      mq acl update appKey01 --admin -c DefaultCluster
    """
    try:
        check_resource_perms(topic_perm)
        check_resource_perms(group_perm)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc)) from None
    change = AccountUpdate(
        access_key=access_key,
        secret_key=secret_key,
        white_remote_address=white_address,
        admin=admin_flag,
        default_topic_perm=topic_default,
        default_group_perm=group_default,
        topic_perms=topic_perm,
        group_perms=group_perm,
    )

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            targets = await broker_targets(
                admin, broker_addr, name, cluster, addr_label="--broker-addr"
            )
            await admin.update_acl_account(targets.values(), change)
        _done(f"account {access_key} updated", targets)

    run_async(go())


@acl_app.command("delete")
def delete(
    access_key: str = typer.Argument(..., metavar="ACCESS_KEY", help="The account."),
    broker_addr: str | None = BrokerAddrArg,
    name: str | None = NameOpt,
    cluster: str | None = ClusterOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Remove an account from the brokers' ACL files; it is refused at once.

    Examples:
      mq acl delete appKey01 -c DefaultCluster
    """

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            targets = await broker_targets(
                admin, broker_addr, name, cluster, addr_label="--broker-addr"
            )
            await admin.delete_acl_account(targets.values(), access_key)
        _done(f"account {access_key} deleted", targets)

    run_async(go())


@acl_app.command("trust")
def trust(
    addresses: list[str] = typer.Argument(
        ..., metavar="PATTERN...", help="Addresses whose requests need no signature."
    ),
    broker_addr: str | None = BrokerAddrArg,
    name: str | None = NameOpt,
    cluster: str | None = ClusterOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Replace the brokers' trusted addresses (globalWhiteRemoteAddresses).

    Examples:
      mq acl trust '10.0.0.*' 192.168.1.10
    """

    async def go() -> None:
        async with admin_session(namesrv) as admin:
            targets = await broker_targets(
                admin, broker_addr, name, cluster, addr_label="--broker-addr"
            )
            await admin.update_global_white_addresses(targets.values(), addresses)
        _done("trusted addresses replaced", targets)

    run_async(go())


@acl_app.command("version")
def version(
    broker_addr: str | None = BrokerAddrArg,
    name: str | None = NameOpt,
    cluster: str | None = ClusterOpt,
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Each broker's ACL file version, to see that a change reached every broker.

    The counter grows by one per change; the timestamp is the last change's.

    Examples:
      mq acl version -c DefaultCluster -o wide
    """

    async def go() -> list[dict[str, object]]:
        async with admin_session(namesrv) as admin:
            targets = await broker_targets(
                admin, broker_addr, name, cluster, addr_label="--broker-addr"
            )
            versions = [await admin.acl_version(a) for a in targets.values()]
        return [
            {"cluster": v.cluster_name, "broker": v.broker_name, "addr": v.broker_addr,
             "file": path, "counter": dv.counter, "timestamp": dv.timestamp}
            for v in versions for path, dv in v.files.items()
        ]  # fmt: skip

    fmt = resolve_format(fmt, as_json)
    rows = run_async(go())
    if fmt == "json":
        print_json(rows)
        return
    table = make_table("ACL file versions", "CLUSTER", "BROKER", "ADDR", "FILE", "COUNTER",
                       "TIMESTAMP", count=len(rows))  # fmt: skip
    for r in rows:
        table.add_row(*(str(r[k]) for k in ("cluster", "broker", "addr", "file", "counter",
                                            "timestamp")))  # fmt: skip
    print_table(table, fmt)


def register(app: typer.Typer) -> None:
    app.add_typer(acl_app, name="acl")
