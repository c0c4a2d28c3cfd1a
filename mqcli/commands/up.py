"""`mq up`: a name server and a broker in one process, on one event loop.

The quickest way to a working cluster on one machine (``make run`` uses it): the
broker registers with the name server beside it; Ctrl-C (or SIGTERM) stops the broker
cleanly first, then the name server.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from mqcli import output
from mqcli.commands.broker import describe, start_broker
from mqcli.serving import serve_until_signal, setup_logging
from mqcore.broker.config import BrokerConfig, local_ip
from mqcore.broker.controller import BrokerController
from mqcore.errors import MQError
from mqcore.namesrv import NamesrvConfig, NamesrvController
from mqcore.remoting import run
from mqcore.store.store_config import MessageStoreConfig


async def _serve(
    namesrv_config: NamesrvConfig,
    broker_config: BrokerConfig,
    store_config: MessageStoreConfig,
    log_file: Path,
) -> None:
    namesrv = NamesrvController(namesrv_config)
    try:
        await namesrv.start()
    except OSError as exc:
        output.fail(
            f"cannot listen on {namesrv_config.bind_address}:{namesrv_config.listen_port}: "
            f"{exc.strerror or exc}",
            hint="is a name server already running? choose another --namesrv-port",
        )
    host = broker_config.broker_ip1
    broker_config.namesrv_addr = f"{host}:{namesrv.port}"
    controller = BrokerController(broker_config, store_config)
    try:
        await start_broker(controller)
    except SystemExit:
        await namesrv.shutdown()
        raise
    print(f"mq namesrv listening on {host}:{namesrv.port}", flush=True)
    print(
        f"mq broker listening on {controller.broker_addr} ({describe(controller)}, log={log_file})",
        flush=True,
    )
    print(f"export NAMESRV_ADDR={host}:{namesrv.port}   # Ctrl-C stops both", flush=True)

    async def stop_all() -> None:
        try:
            await controller.shutdown()
        finally:
            await namesrv.shutdown()

    await serve_until_signal(stop_all)
    print("mq up stopped", flush=True)


def up(
    store: Path = typer.Option(
        Path(os.path.expanduser("~")) / "store", "--store", metavar="DIR", help="Store root."
    ),
    namesrv_port: int = typer.Option(9876, "--namesrv-port", help="Name server port (0: any)."),
    broker_port: int = typer.Option(
        10911, "--broker-port", help="Broker port; the fast port is this - 2 (0: any pair)."
    ),
    host: str | None = typer.Option(
        None,
        "--host",
        help="Interface to listen on and address to advertise (default: all, this host's IP).",
    ),
) -> None:
    """Run a name server and a broker in one process (Ctrl-C stops both)."""
    for name, port in (("--namesrv-port", namesrv_port), ("--broker-port", broker_port)):
        if not 0 <= port <= 65535:
            raise typer.BadParameter(f"must be 0..65535, got {port}", param_hint=name)
    bind = host or "0.0.0.0"
    try:
        namesrv_config = NamesrvConfig(listen_port=namesrv_port, bind_address=bind)
        broker_config = BrokerConfig(
            listen_port=broker_port,
            bind_address=bind,
            broker_ip1=host or local_ip(),
            namesrv_addr=None,
        )
        store_config = MessageStoreConfig(store_path_root_dir=str(store))
        store_config.validate()
        log_file = setup_logging(broker_config.log_dir, broker_config.log_level, "up.log")
    except (MQError, OSError) as exc:
        output.fail(str(exc))
    run(_serve(namesrv_config, broker_config, store_config, log_file))


def register(app: typer.Typer) -> None:
    app.command("up")(up)
