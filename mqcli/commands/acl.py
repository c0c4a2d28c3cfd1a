"""`mq acl list|check`: read a plain_acl.yml as a broker with ``aclEnable=true`` would.

Offline: the file is read here, nothing is asked of a server. ``list`` shows the accounts
(secrets masked); ``check`` answers what one key may do, with the broker's own decision
code (mqcore.acl), so the answer is the broker's answer.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.table import Table

from mqcli.output import console, fail, print_json
from mqcore.acl import Perm, check_resources, load_acl_file
from mqcore.acl.config import Account, PlainAclConfig
from mqcore.acl.permission import format_perm
from mqcore.errors import ConfigError
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX
from mqcore.protocol import RequestCode

acl_app = typer.Typer(
    help="Inspect a plain_acl.yml (RocketMQ 4.x plain ACL).", no_args_is_help=True
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
    as_json: bool = typer.Option(False, "--json", "-j", help="JSON output."),
) -> None:
    """List the accounts (secrets masked) and the trusted addresses."""
    config = _load(path)
    white = [p.text for p in config.global_white_addresses]
    docs = [_account_doc(a) for a in config.accounts.values()]
    if as_json:
        print_json({"file": config.source, "globalWhiteRemoteAddresses": white, "accounts": docs})
        return
    table = Table(title=f"ACL accounts ({config.source})", title_justify="left")
    for col in ("ACCESS KEY", "SECRET", "ADMIN", "WHITE ADDRESS", "TOPIC DEFAULT",
                "GROUP DEFAULT", "TOPICS", "GROUPS"):  # fmt: skip
        table.add_column(col)
    for d in docs:
        table.add_row(
            str(d["accessKey"]),
            str(d["secretKey"]),
            "yes" if d["admin"] else "",
            str(d["whiteRemoteAddress"] or ""),
            str(d["defaultTopicPerm"]),
            str(d["defaultGroupPerm"]),
            " ".join(d["topicPerms"]),  # type: ignore[arg-type]
            " ".join(d["groupPerms"]),  # type: ignore[arg-type]
        )
    console.print(table)
    console.print(f"trusted addresses (no key needed): {', '.join(white) or 'none'}")


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
    group, or send admin requests. Exit code 1 when refused."""
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


def register(app: typer.Typer) -> None:
    app.add_typer(acl_app, name="acl")
