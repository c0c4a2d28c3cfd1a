"""`mq controller`: run a controller of RocketMQ 5's controller mode, or ask the running
ones (`status`: mqadmin getControllerMetaData; `sync-state`: getSyncStateSet;
`elect`: electMaster).

A controller keeps, per broker name, the replicas, the master, its epoch and the in-sync
set, agreed by its Raft group (``controllerDLegerPeers``; one node is a group of one),
and elects a new master from the in-sync set when one goes silent.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import typer

from mqcli import output
from mqcli.commands.admin_util import JsonOpt
from mqcli.connect import run_async
from mqcli.output import print_json
from mqcli.serving import (
    PrintConfigOpt,
    config_option,
    listen_option,
    log_dir_option,
    parse_listen,
    serve_until_signal,
    setup_logging,
)
from mqcli.tables import cell, print_table, rows_table
from mqcore.errors import ConfigError, MQError
from mqcore.remoting import run, uvloop_available

__all__ = ["register"]

controller_app = typer.Typer(
    help="Run a controller (RocketMQ 5's controller mode), or ask the running ones.",
    invoke_without_command=True,
)

ControllersOpt = typer.Option(
    "127.0.0.1:19876",
    "--controller",
    "-a",
    metavar="ADDRS",
    help="Controller addresses, host:port separated by ';' (their remoting ports).",
)


async def _serve(config: Any, log_file: Path) -> None:
    from mqcore.controller.server import ControllerManager

    manager = ControllerManager(config)
    try:
        await manager.start()
    except (OSError, MQError) as exc:
        output.fail(
            f"cannot start the controller: {exc}",
            hint="is another controller using the port? choose others with --listen / --peers",
        )
    loop_name = "uvloop" if uvloop_available() else "asyncio"
    print(
        f"mq controller {config.controller_d_leger_self_id} listening on "
        f"{config.bind_address}:{manager.server.port} (Raft {manager.raft.self_address}, "
        f"loop={loop_name}, log={log_file})",
        flush=True,
    )
    logging.getLogger("mq.controller").info("controller started on %s", manager.addr)
    await serve_until_signal(manager.shutdown)
    print("mq controller stopped", flush=True)


@controller_app.callback()
def controller(
    ctx: typer.Context,
    config_file: Path | None = config_option(
        "Properties file with RocketMQ 5's controller keys (controllerDLegerPeers, ...)."
    ),
    print_config: bool = PrintConfigOpt,
    listen: str | None = listen_option("default 0.0.0.0:19876; port 0 picks a free one"),
    peers: str | None = typer.Option(
        None,
        "--peers",
        metavar="PEERS",
        help="The Raft group, id-host:port separated by ';' (controllerDLegerPeers).",
    ),
    self_id: str | None = typer.Option(
        None, "--self-id", metavar="ID", help="This node's id in --peers (controllerDLegerSelfId)."
    ),
    store: Path | None = typer.Option(
        None,
        "--store",
        metavar="DIR",
        help="Raft log and snapshots (controllerStorePath); without it they are in memory.",
    ),
    log_dir: Path | None = log_dir_option("Directory of controller-<id>.log."),
) -> None:
    """Run a controller, or (with a subcommand) ask the running ones.

    Examples:
      mq controller --store ~/controller
      mq controller --peers 'n0-10.0.0.1:9877;n1-10.0.0.2:9877;n2-10.0.0.3:9877' --self-id n1
      mq controller status -a 127.0.0.1:19876
    """
    if ctx.invoked_subcommand is not None:
        return
    from mqcore.controller.server import controller_config_from

    bind = port = None
    if listen is not None:
        bind, port = parse_listen(listen)
    try:
        config = controller_config_from(
            config_file,
            controller_d_leger_peers=peers,
            controller_d_leger_self_id=self_id,
            controller_store_path=str(store) if store is not None else None,
            bind_address=bind,
            listen_port=port,
        )
        config.raft_config()  # the peer list and id, checked before anything starts
    except MQError as exc:
        output.fail(str(exc), hint="see `mq controller -p` for the known keys")
    if print_config:
        sys.stdout.write(config.to_properties_text())
        return
    directory = str(log_dir) if log_dir is not None else str(Path("~/logs/mqlogs").expanduser())
    try:
        log_file = setup_logging(
            directory, "INFO", f"controller-{config.controller_d_leger_self_id}.log"
        )
    except (ConfigError, OSError) as exc:
        output.fail(str(exc))
    run(_serve(config, log_file))


@controller_app.command("status")
def status(controllers: str = ControllersOpt, as_json: bool = JsonOpt) -> None:
    """Each controller's view: its Raft group, the leader, whether it leads (mqadmin
    getControllerMetaData).

    Examples:
      mq controller status -a '127.0.0.1:19876;127.0.0.1:19877'
    """
    from mqcore.client.controller_admin import ControllerAdmin

    async def go() -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        async with ControllerAdmin(controllers) as admin:
            for addr in admin.controllers:
                try:
                    m = await admin.metadata(addr)
                except (OSError, MQError) as exc:
                    rows.append({"controller": addr, "error": str(exc)})
                    continue
                rows.append(
                    {
                        "controller": addr,
                        "group": m.group,
                        "leader": m.leader_address,
                        "isLeader": m.is_leader,
                        "peers": m.peers,
                    }
                )
        return rows

    rows = run_async(go())
    if as_json:
        print_json(rows)
        return
    columns = {
        "CONTROLLER": lambda r: str(r["controller"]),
        "GROUP": lambda r: cell(r.get("group")),
        "LEADER": lambda r: cell(r.get("leader")),
        "IS-LEADER": lambda r: "yes" if r.get("isLeader") else cell(r.get("error") and "down"),
        "PEERS": lambda r: cell(r.get("peers") or r.get("error")),
    }
    print_table(rows_table("Controllers", columns, rows))


@controller_app.command("sync-state")
def sync_state(
    broker_names: list[str] = typer.Argument(..., metavar="BROKER_NAME..."),
    controllers: str = ControllersOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Master, epochs and in-sync replicas of broker names (mqadmin getSyncStateSet).

    Examples:
      mq controller sync-state broker-a broker-b
    """
    from mqcore.client.controller_admin import ControllerAdmin

    async def go() -> Any:
        async with ControllerAdmin(controllers) as admin:
            return await admin.sync_state_data(broker_names)

    try:
        info = run_async(go())
    except MQError as exc:
        output.fail(str(exc), hint="`mq controller status -a ADDRS` shows which one leads")
    if as_json:
        print_json(info.to_json())
        return
    rows: list[dict[str, Any]] = []
    for name, replicas in sorted(info.replicas_info_table.items()):
        for r in [*replicas.in_sync_replicas, *replicas.not_in_sync_replicas]:
            rows.append(
                {
                    "brokerName": name,
                    "brokerId": r.broker_id,
                    "address": r.broker_address,
                    "role": "master" if r.broker_id == replicas.master_broker_id else "slave",
                    "inSync": r in replicas.in_sync_replicas,
                    "alive": r.alive,
                    "masterEpoch": replicas.master_epoch,
                    "syncStateSetEpoch": replicas.sync_state_set_epoch,
                }
            )
    columns = {
        "BROKER": lambda r: str(r["brokerName"]),
        "ID": lambda r: str(r["brokerId"]),
        "ADDRESS": lambda r: cell(r["address"]),
        "ROLE": lambda r: str(r["role"]),
        "IN-SYNC": lambda r: "yes" if r["inSync"] else "no",
        "ALIVE": lambda r: "yes" if r["alive"] else "no",
        "EPOCH": lambda r: str(r["masterEpoch"]),
        "SET-EPOCH": lambda r: str(r["syncStateSetEpoch"]),
    }
    print_table(rows_table("Replicas", columns, rows))


@controller_app.command("elect")
def elect(
    broker_name: str = typer.Argument(..., metavar="BROKER_NAME"),
    broker_id: int = typer.Option(..., "--broker-id", "-i", help="The replica to make master."),
    cluster: str = typer.Option("DefaultCluster", "--cluster", "-c", help="Its cluster."),
    controllers: str = ControllersOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Make a replica the master of its broker name (mqadmin electMaster): refused
    unless it is alive and in sync.

    Examples:
      mq controller elect broker-a --broker-id 2
    """
    from mqcore.client.controller_admin import ControllerAdmin

    async def go() -> Any:
        async with ControllerAdmin(controllers) as admin:
            return await admin.elect_master(cluster, broker_name, broker_id)

    try:
        header, _body = run_async(go())
    except MQError as exc:
        output.fail(str(exc))
    row = {
        "brokerName": broker_name,
        "masterBrokerId": header.master_broker_id,
        "masterAddress": header.master_address,
        "masterEpoch": header.master_epoch,
        "syncStateSetEpoch": header.sync_state_set_epoch,
    }
    if as_json:
        print_json(row)
    else:
        typer.echo(
            f"{broker_name}: master is broker {header.master_broker_id} "
            f"({header.master_address}), epoch {header.master_epoch}"
        )


def register(app: typer.Typer) -> None:
    app.add_typer(controller_app, name="controller")
