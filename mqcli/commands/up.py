"""`mq up`: a name server and a broker in one process, on one event loop.

The quickest way to a working cluster on one machine (``make run`` uses it): the
broker registers with the name server beside it; Ctrl-C (or SIGTERM) stops the broker
cleanly first, then the name server.

``--brokers N`` names the first broker ``broker-a`` and adds ``broker-b``... of the same
cluster, each in its own process
(one event loop uses one core; N brokers use N), each with its own store beside the first
(``<store>-broker-b``) and, with a fixed ``--broker-port``, port ``+10`` per broker.
Producers spread their sends over every broker's queues, as over a RocketMQ cluster.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import string
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
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

_MAX_BROKERS = 26
_PORT_STEP = 10
_CHILD_START_TIMEOUT = 60.0


@dataclass(frozen=True)
class _ExtraBroker:
    """A broker process of ``--brokers N`` beyond the first."""

    process: BaseProcess
    conn: Connection


def _extra_configs(
    first: BrokerConfig, store: Path, count: int
) -> list[tuple[BrokerConfig, MessageStoreConfig]]:
    """Configs of brokers b, c, ... : own name, own store beside the first, next ports."""
    out = []
    for k in range(1, count):
        name = f"broker-{string.ascii_lowercase[k]}"
        port = first.listen_port + _PORT_STEP * k if first.listen_port else 0
        config = BrokerConfig(
            broker_name=name,
            listen_port=port,
            bind_address=first.bind_address,
            broker_ip1=first.broker_ip1,
            namesrv_addr=first.namesrv_addr,
            broker_cluster_name=first.broker_cluster_name,
        )
        store_config = MessageStoreConfig(store_path_root_dir=f"{store}-{name}")
        store_config.validate()
        out.append((config, store_config))
    return out


def _child_main(
    broker_config: BrokerConfig, store_config: MessageStoreConfig, conn: Connection
) -> None:
    """Entry of an extra broker process: report the address (or the error), then serve."""
    setup_logging(
        broker_config.log_dir, broker_config.log_level, f"up-{broker_config.broker_name}.log"
    )

    async def serve() -> None:
        controller = BrokerController(broker_config, store_config)
        try:
            await controller.start()
        except (MQError, OSError) as exc:
            conn.send(("error", f"{broker_config.broker_name}: {exc}"))
            return
        conn.send(("ok", f"{controller.broker_addr} ({describe(controller)})"))
        await serve_until_signal(controller.shutdown)

    run(serve())


async def _start_extra(
    configs: list[tuple[BrokerConfig, MessageStoreConfig]],
) -> list[_ExtraBroker]:
    """Start the extra broker processes and wait until each listens (or fails)."""
    ctx = multiprocessing.get_context("spawn")  # never fork a process with a running loop
    started: list[_ExtraBroker] = []
    loop = asyncio.get_running_loop()
    try:
        for broker_config, store_config in configs:
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=_child_main,
                args=(broker_config, store_config, child),
                name=f"mq-{broker_config.broker_name}",
            )
            proc.start()
            child.close()
            started.append(_ExtraBroker(proc, parent))
        for extra, (broker_config, _) in zip(started, configs, strict=True):
            ready = await loop.run_in_executor(None, extra.conn.poll, _CHILD_START_TIMEOUT)
            status, text = extra.conn.recv() if ready else ("error", "did not start in time")
            if status != "ok":
                raise MQError(f"{broker_config.broker_name}: {text}")
            print(f"mq broker listening on {text}", flush=True)
    except BaseException:
        await _stop_extra(started)
        raise
    return started


async def _stop_extra(extras: list[_ExtraBroker]) -> None:
    """SIGTERM each extra broker (a clean shutdown), wait, kill what hangs."""
    loop = asyncio.get_running_loop()
    for extra in extras:
        if extra.process.is_alive():
            extra.process.terminate()
    for extra in extras:
        await loop.run_in_executor(None, extra.process.join, 30)
        if extra.process.is_alive():
            extra.process.kill()
            await loop.run_in_executor(None, extra.process.join, 5)
        extra.conn.close()


async def _serve(
    namesrv_config: NamesrvConfig,
    broker_config: BrokerConfig,
    store_config: MessageStoreConfig,
    log_file: Path,
    brokers: int = 1,
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
    extras: list[_ExtraBroker] = []
    if brokers > 1:
        store = store_config.root
        try:
            extras = await _start_extra(_extra_configs(broker_config, store, brokers))
        except MQError as exc:
            await controller.shutdown()
            await namesrv.shutdown()
            output.fail(str(exc))
    what = "both" if brokers == 1 else "all"
    print(f"export NAMESRV_ADDR={host}:{namesrv.port}   # Ctrl-C stops {what}", flush=True)

    async def stop_all() -> None:
        try:
            await _stop_extra(extras)
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
    brokers: int = typer.Option(
        1,
        "--brokers",
        metavar="N",
        help="Brokers of the cluster, one process (one core) each; stores <store>-broker-b...",
    ),
) -> None:
    """Run a name server and a broker in one process (Ctrl-C stops both)."""
    for name, port in (("--namesrv-port", namesrv_port), ("--broker-port", broker_port)):
        if not 0 <= port <= 65535:
            raise typer.BadParameter(f"must be 0..65535, got {port}", param_hint=name)
    if not 1 <= brokers <= _MAX_BROKERS:
        raise typer.BadParameter(
            f"must be 1..{_MAX_BROKERS}, got {brokers}", param_hint="--brokers"
        )
    if broker_port and broker_port + _PORT_STEP * (brokers - 1) > 65535:
        raise typer.BadParameter("the last broker's port would pass 65535", param_hint="--brokers")
    bind = host or "0.0.0.0"
    try:
        namesrv_config = NamesrvConfig(listen_port=namesrv_port, bind_address=bind)
        broker_config = BrokerConfig(
            listen_port=broker_port,
            bind_address=bind,
            broker_ip1=host or local_ip(),
            namesrv_addr=None,
        )
        if brokers > 1:
            broker_config.broker_name = "broker-a"
        store_config = MessageStoreConfig(store_path_root_dir=str(store))
        store_config.validate()
        log_file = setup_logging(broker_config.log_dir, broker_config.log_level, "up.log")
    except (MQError, OSError) as exc:
        output.fail(str(exc))
    run(_serve(namesrv_config, broker_config, store_config, log_file, brokers))


def register(app: typer.Typer) -> None:
    app.command("up")(up)
