"""`mq broker config get|set`: a running broker's configuration (mqadmin getBrokerConfig and
updateBrokerConfig).

``get`` reads GET_BROKER_CONFIG, every key the broker has (4.9.8's ``Configuration``:
broker, netty and store keys), optionally only the keys named or matching a pattern.
``set`` sends UPDATE_BROKER_CONFIG after checking each key against what the broker
reported, so a typo is one error line, not a key the broker quietly ignores, and says
which keys take effect now and which at the broker's next start: 4.9.8 writes every key
into its in-memory configuration and its config file, but most of its components read
theirs once, at start (:mod:`mqcore.common.runtime_keys` names those read at run time;
mq's broker applies exactly these). A command works on one broker (``-b NAME`` or
``--addr``), the masters of one cluster (``-c``), or every master.
"""

from __future__ import annotations

import difflib
import fnmatch
from typing import Any

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
from mqcli.output import fail, print_json
from mqcli.tables import FormatOpt, make_table, note, print_table, resolve_format
from mqcore.common.runtime_keys import BROKER_CONFIG_BLACK_LIST, RUNTIME_KEYS

__all__ = ["register"]

config_app = typer.Typer(
    help="Read or change a running broker's configuration (GET/UPDATE_BROKER_CONFIG).",
    no_args_is_help=True,
)

AddrOpt = typer.Option(
    None, "--addr", metavar="HOST:PORT", help="One broker by address (a master or a slave)."
)

NOW = "now"
AT_RESTART = "at restart"


def effect(key: str) -> str:
    """When a changed key counts: ``now`` (read where it is used) or ``at restart``."""
    return NOW if key in RUNTIME_KEYS else AT_RESTART


def select_keys(config: dict[str, str], patterns: list[str]) -> dict[str, str]:
    """The keys of ``config`` named by ``patterns`` (exact names, or shell patterns such as
    ``flush*``, case-insensitive), all of them for none; one error line for a name that
    matches nothing."""
    if not patterns:
        return dict(sorted(config.items()))
    chosen: dict[str, str] = {}
    for pattern in patterns:
        found = [k for k in config if fnmatch.fnmatchcase(k.lower(), pattern.lower())]
        if not found:
            fail(f"no config key {pattern!r}", hint=_suggest(pattern, config))
        chosen.update((k, config[k]) for k in found)
    return dict(sorted(chosen.items()))


def _suggest(key: str, config: dict[str, str]) -> str:
    lowered = {k.lower(): k for k in config}
    close = difflib.get_close_matches(key.lower(), list(lowered), n=3, cutoff=0.6)
    known = " or ".join(lowered[c] for c in close)
    listing = "`mq broker config get` lists the keys; `get '*word*'` searches them"
    return f"did you mean {known}? {listing}" if known else listing


def parse_changes(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` arguments; one error line for anything else."""
    changes: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            fail(f"{pair!r} is not KEY=VALUE", code=2, hint="e.g. fileReservedTime=48")
        if "\n" in value:
            fail(f"the value of {key} spans lines", code=2)
        changes[key] = value.strip()
    return changes


# -- get --------------------------------------------------------------------------------------


@config_app.command("get")
def get(
    keys: list[str] = typer.Argument(
        None,
        metavar="[KEY]...",
        help="Keys or patterns (flush*, *Port); default: all.",
        show_default=False,
    ),
    name: str | None = BrokerNameOpt,
    addr: str | None = AddrOpt,
    cluster: str | None = MastersOfClusterOpt,
    fmt: str | None = FormatOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """A running broker's configuration, as it reports it (mqadmin getBrokerConfig).

    Every key of 4.9.8's broker, netty and store configuration, with the values the broker
    runs with; KEY arguments keep only those keys (exact names or patterns, any case).
    Without -b, --addr or -c: every master.

    Examples:
      mq broker config get -b broker-a
      mq broker config get 'flush*' brokerRole
      mq broker config get fileReservedTime -c DefaultCluster --json
    """
    fmt = resolve_format(fmt, as_json)
    patterns = list(keys or [])

    async def go() -> list[dict[str, Any]]:
        async with admin_session(namesrv) as admin:
            targets = await broker_targets(admin, addr, name, cluster, addr_label="--addr")
            docs = []
            for broker, where in sorted(targets.items()):
                config = await admin.broker_config(where)
                docs.append({"broker": broker, "addr": where, "config": config})
            return docs

    docs = run_async(go())
    for doc in docs:
        doc["config"] = select_keys(doc["config"], patterns)
    if fmt == "json":
        print_json(docs)
        return
    for doc in docs:
        title = f"Config of {escape(doc['broker'])}"
        if doc["addr"] != doc["broker"]:
            title += f" ({doc['addr']})"
        table = make_table(title, "KEY", "VALUE", count=len(doc["config"]), drop=())
        for key, value in doc["config"].items():
            table.add_row(escape(key), escape(value) or "-")
        print_table(table, fmt, section=len(docs) > 1)


# -- set --------------------------------------------------------------------------------------


@config_app.command("set")
def set_(
    pairs: list[str] = typer.Argument(..., metavar="KEY=VALUE...", help="Keys to change."),
    name: str | None = BrokerNameOpt,
    addr: str | None = AddrOpt,
    cluster: str | None = MastersOfClusterOpt,
    as_json: bool = JsonOpt,
    namesrv: str | None = NamesrvOpt,
) -> None:
    """Change keys of running brokers (mqadmin updateBrokerConfig).

    Each key is checked against the broker's own configuration first: an unknown key is
    refused and nothing is sent. The broker saves the keys in its config file; those it
    reads at run time (fileReservedTime, brokerPermission, maxMessageSize, logLevel, ...)
    take effect now, the others (ports, paths, names, brokerRole, ...) when it restarts.
    Without -b, --addr or -c: every master.

    Examples:
      mq broker config set fileReservedTime=48 -b broker-a
      mq broker config set maxMessageSize=8388608 deleteWhen=03 -c DefaultCluster
      mq broker config set brokerPermission=4 --addr 10.0.0.5:10911 --json
    """
    changes = parse_changes(pairs)
    refused = sorted(k for k in changes if k in BROKER_CONFIG_BLACK_LIST)
    if refused:
        fail(
            f"{', '.join(refused)} cannot be changed on a running broker (its configBlackList)",
            code=2,
            hint="edit the broker's config file and restart it",
        )

    async def go() -> list[dict[str, Any]]:
        async with admin_session(namesrv) as admin:
            targets = await broker_targets(admin, addr, name, cluster, addr_label="--addr")
            before = {b: await admin.broker_config(a) for b, a in sorted(targets.items())}
            for broker, config in before.items():
                unknown = sorted(k for k in changes if k not in config)
                if unknown:
                    fail(
                        f"unknown broker config key {unknown[0]!r}: broker {broker} has no such"
                        " key, nothing was changed",
                        code=2,
                        hint=_suggest(unknown[0], config),
                    )
            rows = []
            for broker, where in sorted(targets.items()):
                remark = await admin.update_broker_config(where, changes)
                for key, value in changes.items():
                    rows.append(
                        {
                            "broker": broker,
                            "addr": where,
                            "key": key,
                            "old": before[broker].get(key),
                            "new": value,
                            "effect": effect(key),
                            "remark": remark,
                        }
                    )
            return rows

    rows = run_async(go())
    if as_json:
        print_json(rows)
        return
    _print_changes(rows)


def _print_changes(rows: list[dict[str, Any]]) -> None:
    table = make_table(
        "Broker config changed",
        "BROKER",
        "KEY",
        "OLD-VALUE",
        "NEW-VALUE",
        "EFFECT",
        count=len(rows),
        drop=(),
    )
    for r in rows:
        table.add_row(
            escape(r["broker"]),
            escape(r["key"]),
            escape(r["old"] or "-"),
            escape(r["new"] or "-"),
            "[green]now[/]" if r["effect"] == NOW else "[yellow]at restart[/]",
        )
    print_table(table)
    remarks = sorted({r["remark"] for r in rows if r["remark"]})
    for remark in remarks:  # mq's broker says itself which keys wait, and where it saved them
        note(f"broker: {remark}")
    later = sorted({r["key"] for r in rows if r["effect"] == AT_RESTART})
    if later and not remarks:  # 4.9.8 says nothing
        note(
            f"{', '.join(later)}: saved in the broker's config file; takes effect when the "
            "broker restarts"
        )


def register(broker_app: typer.Typer) -> None:
    broker_app.add_typer(config_app, name="config")
